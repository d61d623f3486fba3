//! `--mail-type`: the events a job's user is mailed about, and the
//! subject lines the controller gives `MailProg`.

/// `BEGIN`: the job started.
pub const BEGIN: u16 = 1 << 0;
/// `END`: the job ended (any way).
pub const END: u16 = 1 << 1;
/// `FAIL`: the job ended other than COMPLETED.
pub const FAIL: u16 = 1 << 2;
/// `REQUEUE`: the job was requeued.
pub const REQUEUE: u16 = 1 << 3;
/// `INVALID_DEPEND`: a dependency can never be satisfied (accepted; no mail yet).
pub const INVALID_DEPEND: u16 = 1 << 4;
/// `STAGE_OUT`: burst buffer stage out done (accepted; muster has no burst buffers).
pub const STAGE_OUT: u16 = 1 << 5;
/// `ARRAY_TASKS`: mail for each array task.
pub const ARRAY_TASKS: u16 = 1 << 6;
/// `ALL`: BEGIN, END, FAIL, INVALID_DEPEND, REQUEUE and STAGE_OUT.
pub const ALL: u16 = BEGIN | END | FAIL | REQUEUE | INVALID_DEPEND | STAGE_OUT;

/// In the order `scontrol show job` lists them (`MailType=`).
const NAMES: [(&str, u16); 7] = [
    ("INVALID_DEPEND", INVALID_DEPEND),
    ("BEGIN", BEGIN),
    ("END", END),
    ("FAIL", FAIL),
    ("REQUEUE", REQUEUE),
    ("STAGE_OUT", STAGE_OUT),
    ("ARRAY_TASKS", ARRAY_TASKS),
];

/// A `--mail-type` value that is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailTypeError {
    /// Not a Slurm mail type: `--mail-type=X invalid`.
    Invalid(String),
    /// A Slurm mail type muster does not send (the TIME_LIMIT kinds).
    Unsupported(String),
}

impl std::fmt::Display for MailTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailTypeError::Invalid(w) => write!(f, "--mail-type={w} invalid"),
            MailTypeError::Unsupported(w) => write!(
                f,
                "--mail-type={w} is not supported here: no mail is sent at a share of the time limit"
            ),
        }
    }
}

/// Parses a `--mail-type` value (comma separated, any case). `NONE` clears.
/// The TIME_LIMIT kinds are refused: muster sends no mail at a share of
/// the time limit yet.
pub fn parse(s: &str) -> Result<u16, MailTypeError> {
    let mut bits = 0;
    for word in s.split(',') {
        let w = word.trim().to_ascii_uppercase();
        match w.as_str() {
            "NONE" => bits = 0,
            "ALL" => bits |= ALL,
            "TIME_LIMIT" | "TIME_LIMIT_90" | "TIME_LIMIT_80" | "TIME_LIMIT_50" => {
                return Err(MailTypeError::Unsupported(word.trim().to_string()));
            }
            _ => match NAMES.iter().find(|(n, _)| *n == w) {
                Some((_, b)) => bits |= b,
                None => return Err(MailTypeError::Invalid(word.trim().to_string())),
            },
        }
    }
    Ok(bits)
}

/// The names of the set bits, comma separated (`BEGIN,END`); `NONE` when empty.
pub fn names(bits: u16) -> String {
    if bits == 0 {
        return "NONE".into();
    }
    let v: Vec<&str> = NAMES
        .iter()
        .filter(|(_, b)| bits & b != 0)
        .map(|(n, _)| *n)
        .collect();
    v.join(",")
}

/// Seconds as Slurm writes a duration: `HH:MM:SS`, `D-HH:MM:SS` from a day.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, s) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// What happened to the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Started after `queued` seconds in the queue.
    Began {
        /// Seconds from eligible to start.
        queued: i64,
    },
    /// Ended after `run` seconds in `state` with exit `code`.
    Ended {
        /// Run time in seconds.
        run: i64,
        /// End state.
        state: crate::JobState,
        /// Exit code.
        code: i32,
    },
    /// Like Ended, for a failure mailed under FAIL.
    Failed {
        /// Run time in seconds.
        run: i64,
        /// End state.
        state: crate::JobState,
        /// Exit code.
        code: i32,
    },
    /// Requeued.
    Requeued,
}

/// How a subject names the job: `Job_id=12`, or for an array task
/// `Array Task Job_id=10_3 (13)` (array id, task id, the task's own id).
pub fn who(job_id: u32, array: Option<(u32, u32)>) -> String {
    match array {
        Some((array_id, task)) => format!("Array Task Job_id={array_id}_{task} ({job_id})"),
        None => format!("Job_id={job_id}"),
    }
}

/// The subject line: `Slurm Job_id=12 Name=foo Began, Queued time 00:00:05`.
/// `who` names the job (`who`).
pub fn subject(who: &str, name: &str, ev: Event) -> String {
    let head = format!("Slurm {who} Name={name}");
    match ev {
        Event::Began { queued } => format!("{head} Began, Queued time {}", duration(queued)),
        Event::Ended { run, state, code } => format!(
            "{head} Ended, Run time {}, {}, ExitCode {code}",
            duration(run),
            state.as_slurm_str()
        ),
        Event::Failed { run, state, code } => format!(
            "{head} Failed, Run time {}, {}, ExitCode {code}",
            duration(run),
            state.as_slurm_str()
        ),
        Event::Requeued => format!("{head} Requeued"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobState;

    #[test]
    fn values_parse_and_print() {
        assert_eq!(parse("begin,END").unwrap(), BEGIN | END);
        assert_eq!(
            names(parse("ALL").unwrap()),
            "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"
        );
        assert_eq!(parse("END,NONE").unwrap(), 0);
        assert_eq!(names(0), "NONE");
        assert_eq!(parse("X").unwrap_err().to_string(), "--mail-type=X invalid");
        assert_eq!(
            parse("BEGIN,TIME_LIMIT_90").unwrap_err(),
            MailTypeError::Unsupported("TIME_LIMIT_90".into())
        );
    }

    #[test]
    fn subjects_read_as_slurm_writes_them() {
        assert_eq!(
            subject(&who(1234, None), "foo", Event::Began { queued: 5 }),
            "Slurm Job_id=1234 Name=foo Began, Queued time 00:00:05"
        );
        assert_eq!(
            subject(
                &who(1234, None),
                "foo",
                Event::Ended {
                    run: 60,
                    state: JobState::Completed,
                    code: 0
                }
            ),
            "Slurm Job_id=1234 Name=foo Ended, Run time 00:01:00, COMPLETED, ExitCode 0"
        );
        assert_eq!(
            subject(
                &who(9, Some((7, 2))),
                "w",
                Event::Failed {
                    run: 90061,
                    state: JobState::Failed,
                    code: 1
                }
            ),
            "Slurm Array Task Job_id=7_2 (9) Name=w Failed, Run time 1-01:01:01, FAILED, ExitCode 1"
        );
        assert_eq!(
            subject(&who(9, None), "r", Event::Requeued),
            "Slurm Job_id=9 Name=r Requeued"
        );
    }
}
