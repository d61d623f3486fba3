//! Submission tokens: which job each recent submission made, so that a
//! client whose answer was lost (the controller journaled the job, then the
//! connection failed) sends the same submission again, with the same
//! token, and gets the same job instead of a second one.
//!
//! ```text
//! Submit{token T} ──on_submit──▶ T seen? ──yes──▶ the same SubmitReply, nothing made
//!                                   │no
//!                                   ▼
//!                      a new job ──▶ remember T -> (job, uid, time, partition)
//! ```
//!
//! Part of the engine's state, so it is durable the way jobs are: a
//! submission's token travels in its journaled request (a replay remembers
//! it again) and snapshots keep the table (`PersistentState::submit_tokens`).
//! Bounded: a token is kept [`TOKEN_WINDOW`] seconds from its submission and
//! at most [`MAX_TOKENS`] at once, the oldest forgotten first; both are far
//! beyond the minute a client retries for (`client::TIMEOUT`).

use model::{JobId, Timestamp};
use proto::SubmitToken;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// How long (seconds from its submission) a token is remembered.
pub const TOKEN_WINDOW: i64 = 3600;

/// How many tokens are remembered at most (about 100 bytes each).
pub const MAX_TOKENS: usize = 1 << 20;

/// What a token's submission made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The job (for an array, the array's id).
    pub job_id: JobId,
    /// Who submitted it: the token is worth nothing to anyone else.
    pub uid: u32,
    /// When.
    pub submit_time: Timestamp,
    /// The partition the answer named.
    pub partition: Arc<str>,
}

/// The tokens of the recent submissions.
#[derive(Clone, Debug, Default)]
pub(crate) struct SubmitTokens {
    by_token: BTreeMap<SubmitToken, Seen>,
    /// The tokens in the order they were remembered (and so, clock steps
    /// aside, by submit time): the oldest are forgotten first.
    order: VecDeque<SubmitToken>,
    /// Partition names, shared by every token of one partition.
    names: Vec<Arc<str>>,
}

/// A remembered token as a snapshot stores it (its own type: the engine's
/// may change, what is on disk stays readable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedToken {
    /// The token's text (`SubmitToken::text`).
    pub token: String,
    /// The job it made.
    pub job_id: JobId,
    /// Its submitter.
    pub uid: u32,
    /// When.
    pub submit_time: Timestamp,
    /// The partition the answer named.
    pub partition: String,
}

impl SubmitTokens {
    /// What `token`'s submission made, if it is remembered.
    pub fn get(&self, token: SubmitToken) -> Option<&Seen> {
        self.by_token.get(&token)
    }

    /// Forgets the tokens older than [`TOKEN_WINDOW`] at `now`.
    pub fn forget_expired(&mut self, now: Timestamp) {
        while let Some(oldest) = self.order.front() {
            let expired = self
                .by_token
                .get(oldest)
                .is_none_or(|s| s.submit_time + TOKEN_WINDOW <= now);
            if !expired {
                break;
            }
            self.by_token.remove(oldest);
            self.order.pop_front();
        }
    }

    /// Remembers `token` for the job it made (forgetting the oldest beyond
    /// [`MAX_TOKENS`]).
    pub fn remember(
        &mut self,
        token: SubmitToken,
        job_id: JobId,
        uid: u32,
        submit_time: Timestamp,
        partition: &str,
    ) {
        let partition = self.name(partition);
        let seen = Seen {
            job_id,
            uid,
            submit_time,
            partition,
        };
        if self.by_token.insert(token, seen).is_none() {
            self.order.push_back(token);
        }
        while self.order.len() > MAX_TOKENS {
            if let Some(oldest) = self.order.pop_front() {
                self.by_token.remove(&oldest);
            }
        }
    }

    /// `partition` as a shared name.
    fn name(&mut self, partition: &str) -> Arc<str> {
        if let Some(n) = self.names.iter().find(|n| &***n == partition) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(partition);
        self.names.push(n.clone());
        n
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// Whether the table and its order agree (`Engine::check_invariants`).
    pub fn consistent(&self) -> bool {
        self.order.len() == self.by_token.len()
            && self.order.iter().all(|t| self.by_token.contains_key(t))
    }

    /// The table for a snapshot, oldest first.
    pub fn saved(&self) -> Vec<SavedToken> {
        self.order
            .iter()
            .filter_map(|t| {
                let s = self.by_token.get(t)?;
                Some(SavedToken {
                    token: t.text(),
                    job_id: s.job_id,
                    uid: s.uid,
                    submit_time: s.submit_time,
                    partition: s.partition.to_string(),
                })
            })
            .collect()
    }

    /// The table a snapshot stored (entries whose token does not parse
    /// are skipped: this build never writes one).
    pub fn restored(saved: Vec<SavedToken>) -> SubmitTokens {
        let mut t = SubmitTokens::default();
        for s in saved {
            if let Some(token) = SubmitToken::parse(&s.token) {
                t.remember(token, s.job_id, s.uid, s.submit_time, &s.partition);
            }
        }
        t
    }
}
