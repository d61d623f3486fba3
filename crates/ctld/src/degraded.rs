//! What the controller does while it cannot write its state (a full disk,
//! an I/O error, a read-only or immutable file in StateSaveLocation): it
//! stays up, answers queries, refuses changes, and tries the journal again
//! until it can write.
//!
//! ```text
//!  batch applied -> commit fails -> Degraded { the batch's answers held;
//!                                              its node commands left in the engine }
//!  while degraded:  queries                          answered
//!                   users' changes                   refused, not applied (StateSaveFailed)
//!                   daemons' reports, launch
//!                   failures, pings, associations    deferred
//!                   timers, scheduling passes        not run
//!  every RETRY (longer for a large engine, whose snapshot takes long):
//!                   Store::resume (the whole engine as a snapshot, then a new log segment)
//!                   ok -> held answers and commands leave, deferred messages are handled
//! ```
//!
//! Invariant: no answer to a change and no command for a node leaves the
//! process before the change is on disk. Queries do show the failed
//! batch's changes (they are in the engine, and on disk once it can write).

use crate::durable::Store;
use crate::Msg;
use engine::Engine;
use journal::JournalError;
use proto::{CtldRequest, CtldResponse, SaveFailure, SlurmError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tracing::{error, info, warn};

/// How often the journal is tried again, at most.
const RETRY: Duration = Duration::from_secs(1);

/// A try writes the whole engine (seconds of work with a hundred thousand
/// jobs), so the pause after a failed one is at least this many times as
/// long as the try took: the engine task spends most of its time answering.
const PAUSE_PER_TRY: u32 = 10;

/// The longest pause between tries.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// A failed try is logged the first time and then every this many.
const LOG_EVERY: u32 = 60;

/// An answer the engine task owes, with where it goes.
pub(crate) type Reply = (oneshot::Sender<CtldResponse>, CtldResponse);

/// The controller's state while the journal cannot be written.
pub(crate) struct Degraded {
    cause: SaveFailure,
    /// The first failure, naming the file, for the log at recovery.
    first_error: String,
    since: Instant,
    last_try: Instant,
    /// The pause after `last_try`.
    pause: Duration,
    tries: u32,
    /// The answers of the batch whose write failed.
    held: Vec<Reply>,
    /// Messages to handle once the state is on disk, in arrival order.
    deferred: Vec<Msg>,
}

/// What a successful retry gives back to the engine task.
pub(crate) struct Resumed {
    /// The held answers, to send now.
    pub held: Vec<Reply>,
    /// The deferred messages, to handle first in the next batch.
    pub deferred: Vec<Msg>,
}

impl Degraded {
    /// Enters degraded mode after the commit of a batch failed with `err`;
    /// `held` are that batch's answers.
    pub(crate) fn new(err: &JournalError, held: Vec<Reply>) -> Degraded {
        let cause = save_failure(err);
        error!(
            "cannot write the controller state: {err}; refusing changes ({}), answering \
             queries, and trying again every {} s or so; the last batch's answers ({}) and \
             node commands wait until the state is saved",
            SlurmError::StateSaveFailed(cause).as_slurm_str(),
            RETRY.as_secs(),
            held.len()
        );
        let now = Instant::now();
        Degraded {
            cause,
            first_error: err.to_string(),
            since: now,
            last_try: now,
            pause: RETRY,
            tries: 0,
            held,
            deferred: Vec::new(),
        }
    }

    /// The answer to a change asked for meanwhile.
    pub(crate) fn refusal(&self) -> CtldResponse {
        CtldResponse::Error(SlurmError::StateSaveFailed(self.cause))
    }

    /// Whether a request is one of the node daemons' reports, which are
    /// deferred (a refusal would make a daemon drop or misread a report)
    /// rather than refused.
    pub(crate) fn defers(req: &CtldRequest) -> bool {
        matches!(
            req,
            CtldRequest::RegisterNode(_)
                | CtldRequest::JobExited { .. }
                | CtldRequest::StepExited(_)
                | CtldRequest::ExternEnded { .. }
        )
    }

    /// Keeps `msg` for when the state can be written. Of a node's pings
    /// only the last is kept.
    pub(crate) fn defer(&mut self, msg: Msg) {
        if let Msg::Ping { node, .. } = &msg {
            self.deferred
                .retain(|m| !matches!(m, Msg::Ping { node: n, .. } if n == node));
        }
        self.deferred.push(msg);
    }

    /// How long until the next try.
    pub(crate) fn until_next_try(&self) -> Duration {
        self.pause.saturating_sub(self.last_try.elapsed())
    }

    /// Tries the journal again when a try is due: on success, what was
    /// held back.
    pub(crate) fn try_resume(&mut self, store: &mut Store, engine: &Engine) -> Option<Resumed> {
        if !self.until_next_try().is_zero() {
            return None;
        }
        self.resume_now(store, engine).ok()
    }

    /// Tries the journal again at once.
    pub(crate) fn resume_now(
        &mut self,
        store: &mut Store,
        engine: &Engine,
    ) -> Result<Resumed, JournalError> {
        self.tries += 1;
        let start = Instant::now();
        let resumed = tokio::task::block_in_place(|| store.resume(engine));
        self.last_try = Instant::now();
        self.pause = (self.last_try - start)
            .saturating_mul(PAUSE_PER_TRY)
            .clamp(RETRY, MAX_PAUSE);
        match resumed {
            Ok(seq) => {
                info!(
                    "the controller state is saved again in {} (a snapshot as of journal \
                     record {seq}) after {:.1} s and {} {}; it had failed with: {}; \
                     accepting changes again, {} held answers sent, {} deferred messages \
                     handled next",
                    store.dir().display(),
                    self.since.elapsed().as_secs_f64(),
                    self.tries,
                    if self.tries == 1 { "try" } else { "tries" },
                    self.first_error,
                    self.held.len(),
                    self.deferred.len()
                );
                Ok(Resumed {
                    held: std::mem::take(&mut self.held),
                    deferred: std::mem::take(&mut self.deferred),
                })
            }
            Err(e) => {
                self.cause = save_failure(&e);
                if self.tries % LOG_EVERY == 1 {
                    warn!(
                        "the controller state still cannot be saved ({} tries over {:.0} s, \
                         the next in {:.1} s): {e}",
                        self.tries,
                        self.since.elapsed().as_secs_f64(),
                        self.pause.as_secs_f64()
                    );
                }
                Err(e)
            }
        }
    }
}

/// The operating system's reason for a failed journal write.
pub(crate) fn save_failure(err: &JournalError) -> SaveFailure {
    use nix::errno::Errno;
    let JournalError::Io { source, .. } = err else {
        return SaveFailure::Other;
    };
    match source.raw_os_error().map(Errno::from_raw) {
        Some(Errno::ENOSPC) => SaveFailure::NoSpace,
        Some(Errno::EDQUOT) => SaveFailure::QuotaExceeded,
        Some(Errno::EROFS) => SaveFailure::ReadOnlyFileSystem,
        Some(Errno::EPERM) => SaveFailure::NotPermitted,
        Some(Errno::EACCES) => SaveFailure::PermissionDenied,
        Some(Errno::EIO) => SaveFailure::Io,
        Some(Errno::EFBIG) => SaveFailure::FileTooLarge,
        Some(Errno::ENOENT) => SaveFailure::NotFound,
        _ => SaveFailure::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_come_from_the_errno() {
        let io = |errno: i32| JournalError::Io {
            path: "/s/log".into(),
            source: std::io::Error::from_raw_os_error(errno),
        };
        assert_eq!(save_failure(&io(nix::libc::ENOSPC)), SaveFailure::NoSpace);
        assert_eq!(
            save_failure(&io(nix::libc::EPERM)),
            SaveFailure::NotPermitted
        );
        assert_eq!(save_failure(&io(nix::libc::EBADF)), SaveFailure::Other);
        assert_eq!(
            save_failure(&JournalError::Poisoned {
                path: "/s/log".into()
            }),
            SaveFailure::Other
        );
    }
}
