//! A filtered `scancel` (`-u`, `-n`, `-p`, `-A`, `-q`, `-t`, `-w`, `--me`)
//! as one request: the controller picks the jobs and cancels (or signals)
//! them in one engine input, one journal record and one commit, instead of
//! the command listing every job and sending a request per match.
//!
//! ```text
//! scancel -u U -n N --CancelJobs(JobSelect)--> ctld --Cancelled(outcomes)--> scancel
//! ```
//!
//! [`JobSelect::selects`] is the one definition of which jobs match: the
//! engine applies it to its jobs, and scancel to a job list where it still
//! lists (`-i`, or a controller without `CancelJobs`).

use model::{JobId, JobState};
use serde::{Deserialize, Serialize};

/// The jobs a filtered `scancel` acts on (scancel(1)): every filter given
/// must match (AND), the values of one filter are alternatives (OR), and
/// a finished job never matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSelect {
    /// Job ids typed beside the filters: with `by_id`, only these jobs and
    /// the tasks of these arrays match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_ids: Vec<JobId>,
    /// Whether ids were typed at all: ids that name only array tasks
    /// (`12_3`) or steps (`12.0`) then select nothing, as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_id: bool,
    /// `--me`: the caller's own jobs (by the identity the request proves).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub me: bool,
    /// `-u`: a user name, or a numeric uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// `-n`/`--jobname`: job names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// `-p`: partitions (a pending job with several matches by any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    /// `-A`: accounts, any case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
    /// `-q`: QOS names, any case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qos: Vec<String>,
    /// `-t`: states (PENDING, RUNNING, SUSPENDED).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<JobState>,
    /// `-w`: node names (a job on any of them matches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

/// What [`JobSelect::selects`] reads of one job, as `squeue` shows it.
#[derive(Clone, Copy, Debug)]
pub struct SelectFacts<'a> {
    /// The job.
    pub job_id: JobId,
    /// The array it is a task of.
    pub array_job_id: Option<u32>,
    /// Its state.
    pub state: JobState,
    /// Its owner's name.
    pub user: &'a str,
    /// Its owner's uid.
    pub uid: u32,
    /// Its name.
    pub name: &'a str,
    /// Its account (`(null)` without one).
    pub account: &'a str,
    /// Its QOS (`normal` without one).
    pub qos: &'a str,
}

impl JobSelect {
    /// Whether the job matches, for a request from the user named
    /// `caller`. `partitions` (where it is or may run) and `nodes` (where
    /// it runs) are read only where those filters are given.
    pub fn selects<'p>(
        &self,
        job: &SelectFacts<'_>,
        caller: &str,
        mut partitions: impl Iterator<Item = &'p str>,
        mut nodes: impl Iterator<Item = &'p str>,
    ) -> bool {
        if job.state.is_finished() {
            return false;
        }
        if self.by_id
            && !self.job_ids.contains(&job.job_id)
            && !job
                .array_job_id
                .is_some_and(|a| self.job_ids.contains(&JobId(a)))
        {
            return false;
        }
        if self.me && job.user != caller {
            return false;
        }
        if let Some(u) = &self.user {
            if *u != job.user && !u.parse::<u32>().is_ok_and(|n| n == job.uid) {
                return false;
            }
        }
        if !self.names.is_empty() && !self.names.iter().any(|n| n == job.name) {
            return false;
        }
        if !self.accounts.is_empty()
            && !self
                .accounts
                .iter()
                .any(|a| a.eq_ignore_ascii_case(job.account))
        {
            return false;
        }
        if !self.qos.is_empty() && !self.qos.iter().any(|q| q.eq_ignore_ascii_case(job.qos)) {
            return false;
        }
        if !self.states.is_empty() && !self.states.contains(&job.state) {
            return false;
        }
        if !self.partitions.is_empty()
            && !partitions.any(|p| self.partitions.iter().any(|q| q == p))
        {
            return false;
        }
        if !self.nodes.is_empty() && !nodes.any(|n| self.nodes.iter().any(|m| m == n)) {
            return false;
        }
        true
    }
}

/// One selected job's answer to [`crate::CtldRequest::CancelJobs`], in the
/// controller's job order: what a `Cancel` of that job alone would have
/// answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelOutcome {
    /// The job.
    pub job_id: JobId,
    /// The refusal (`None`: done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::SlurmError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(
        id: u32,
        user: &'static str,
        name: &'static str,
        state: JobState,
    ) -> SelectFacts<'static> {
        SelectFacts {
            job_id: JobId(id),
            array_job_id: None,
            state,
            user,
            uid: 1000 + id,
            name,
            account: "(null)",
            qos: "normal",
        }
    }

    fn sel(s: &JobSelect, f: &SelectFacts<'_>) -> bool {
        s.selects(f, "me", ["p1", "p2"].into_iter(), ["n1"].into_iter())
    }

    #[test]
    fn every_filter_given_must_match_and_finished_jobs_never_do() {
        let s = JobSelect {
            user: Some("alice".into()),
            names: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert!(sel(&s, &facts(1, "alice", "a", JobState::Pending)));
        assert!(sel(&s, &facts(2, "alice", "b", JobState::Running)));
        assert!(!sel(&s, &facts(3, "alice", "c", JobState::Pending)));
        assert!(!sel(&s, &facts(4, "bob", "a", JobState::Pending)));
        assert!(!sel(&s, &facts(5, "alice", "a", JobState::Cancelled)));
        let by_uid = JobSelect {
            user: Some("1006".into()),
            ..Default::default()
        };
        assert!(sel(&by_uid, &facts(6, "carol", "x", JobState::Pending)));
    }

    #[test]
    fn ids_restrict_and_array_ids_take_their_tasks() {
        let s = JobSelect {
            job_ids: vec![JobId(7)],
            by_id: true,
            names: vec!["a".into()],
            ..Default::default()
        };
        assert!(sel(&s, &facts(7, "x", "a", JobState::Pending)));
        assert!(!sel(&s, &facts(8, "x", "a", JobState::Pending)));
        let mut task = facts(9, "x", "a", JobState::Pending);
        task.array_job_id = Some(7);
        assert!(sel(&s, &task));
        // Ids typed that are none of these (a step, an array task): nothing.
        let none = JobSelect {
            by_id: true,
            ..Default::default()
        };
        assert!(!sel(&none, &facts(7, "x", "a", JobState::Pending)));
    }

    #[test]
    fn partitions_nodes_accounts_qos_states_and_me() {
        let f = facts(1, "me", "a", JobState::Running);
        let yes = [
            JobSelect {
                partitions: vec!["p2".into()],
                ..Default::default()
            },
            JobSelect {
                nodes: vec!["n1".into()],
                ..Default::default()
            },
            JobSelect {
                accounts: vec!["(NULL)".into()],
                ..Default::default()
            },
            JobSelect {
                qos: vec!["Normal".into()],
                ..Default::default()
            },
            JobSelect {
                states: vec![JobState::Running],
                ..Default::default()
            },
            JobSelect {
                me: true,
                ..Default::default()
            },
        ];
        for s in &yes {
            assert!(sel(s, &f), "{s:?}");
        }
        let no = [
            JobSelect {
                partitions: vec!["p3".into()],
                ..Default::default()
            },
            JobSelect {
                nodes: vec!["n2".into()],
                ..Default::default()
            },
            JobSelect {
                accounts: vec!["physics".into()],
                ..Default::default()
            },
            JobSelect {
                qos: vec!["high".into()],
                ..Default::default()
            },
            JobSelect {
                states: vec![JobState::Pending],
                ..Default::default()
            },
        ];
        for s in &no {
            assert!(!sel(s, &f), "{s:?}");
        }
        let other = facts(2, "you", "a", JobState::Pending);
        let me = JobSelect {
            me: true,
            ..Default::default()
        };
        assert!(!sel(&me, &other));
    }
}
