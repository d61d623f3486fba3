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
/// `TIME_LIMIT`: the job reached its time limit.
pub const TIME_LIMIT: u16 = 1 << 7;
/// `TIME_LIMIT_90`: the job reached 90% of its time limit.
pub const TIME_LIMIT_90: u16 = 1 << 8;
/// `TIME_LIMIT_80`: the job reached 80% of its time limit.
pub const TIME_LIMIT_80: u16 = 1 << 9;
/// `TIME_LIMIT_50`: the job reached 50% of its time limit.
pub const TIME_LIMIT_50: u16 = 1 << 10;
/// The shares of the time limit mailed about before it: (bit, percent),
/// in the order they come.
pub const LIMIT_SHARES: [(u16, u8); 3] = [
    (TIME_LIMIT_50, 50),
    (TIME_LIMIT_80, 80),
    (TIME_LIMIT_90, 90),
];
/// `ALL`: BEGIN, END, FAIL, INVALID_DEPEND, REQUEUE and STAGE_OUT.
pub const ALL: u16 = BEGIN | END | FAIL | REQUEUE | INVALID_DEPEND | STAGE_OUT;

/// In the order `scontrol show job` lists them (`MailType=`).
const NAMES: [(&str, u16); 11] = [
    ("INVALID_DEPEND", INVALID_DEPEND),
    ("BEGIN", BEGIN),
    ("END", END),
    ("FAIL", FAIL),
    ("REQUEUE", REQUEUE),
    ("TIME_LIMIT", TIME_LIMIT),
    ("TIME_LIMIT_90", TIME_LIMIT_90),
    ("TIME_LIMIT_80", TIME_LIMIT_80),
    ("TIME_LIMIT_50", TIME_LIMIT_50),
    ("STAGE_OUT", STAGE_OUT),
    ("ARRAY_TASKS", ARRAY_TASKS),
];

/// A `--mail-type` value that is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailTypeError {
    /// Not a Slurm mail type: `--mail-type=X invalid`.
    Invalid(String),
    /// A Slurm mail type muster does not send (none today; kept for the
    /// callers' error paths).
    Unsupported(String),
}

impl std::fmt::Display for MailTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailTypeError::Invalid(w) => write!(f, "--mail-type={w} invalid"),
            MailTypeError::Unsupported(w) => {
                write!(f, "--mail-type={w} is not supported here")
            }
        }
    }
}

/// Parses a `--mail-type` value (comma separated, any case). `NONE` clears.
pub fn parse(s: &str) -> Result<u16, MailTypeError> {
    let mut bits = 0;
    for word in s.split(',') {
        let w = word.trim().to_ascii_uppercase();
        match w.as_str() {
            "NONE" => bits = 0,
            "ALL" => bits |= ALL,
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
    /// Reached `percent` (50, 80, 90 or 100) of its time limit after
    /// `run` seconds.
    ReachedLimit {
        /// The share of the limit, percent.
        percent: u8,
        /// Run time in seconds.
        run: i64,
    },
}

/// Exit codes of an array's tasks, for the one mail about the whole array
/// (without `ARRAY_TASKS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayExits {
    /// Every task exited: the lowest and highest code.
    Codes {
        /// Lowest exit code.
        min: i32,
        /// Highest exit code.
        max: i32,
    },
    /// Some task was killed by a signal: the highest signal.
    MaxSignal(i32),
}

/// The subject of the one mail about a whole array (without
/// `ARRAY_TASKS`): `Slurm Array Summary Job_id=10_* (10) Name=w Began`, or
/// at its end `... Ended, COMPLETED, ExitCode [0-0]` (`Mixed` where some
/// task exited 0 and some not; `Mixed, MaxSignal [9]` where one was
/// killed). `ended`: the array's end as (state, exits), for END and FAIL.
pub fn array_subject(
    array_id: u32,
    name: &str,
    what: &str,
    ended: Option<(crate::JobState, ArrayExits)>,
) -> String {
    let head = format!("Slurm Array Summary Job_id={array_id}_* ({array_id}) Name={name} {what}");
    match ended {
        None => head,
        Some((state, ArrayExits::Codes { min, max })) => {
            let state = if min == 0 && max > 0 {
                "Mixed"
            } else {
                state.as_slurm_str()
            };
            format!("{head}, {state}, ExitCode [{min}-{max}]")
        }
        Some((_, ArrayExits::MaxSignal(sig))) => format!("{head}, Mixed, MaxSignal [{sig}]"),
    }
}

/// The word of an event in a subject (`Began`, `Ended`, `Reached time
/// limit`, ...).
pub fn event_word(ev: Event) -> String {
    match ev {
        Event::Began { .. } => "Began".into(),
        Event::Ended { .. } => "Ended".into(),
        Event::Failed { .. } => "Failed".into(),
        Event::Requeued => "Requeued".into(),
        Event::ReachedLimit { percent: 100, .. } => "Reached time limit".into(),
        Event::ReachedLimit { percent, .. } => format!("Reached {percent}% of time limit"),
    }
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
        Event::ReachedLimit { run, .. } => {
            format!("{head} {}, Run time {}", event_word(ev), duration(run))
        }
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
            parse("BEGIN,TIME_LIMIT_90,time_limit").unwrap(),
            BEGIN | TIME_LIMIT_90 | TIME_LIMIT
        );
        assert_eq!(
            names(parse("TIME_LIMIT_50,ARRAY_TASKS,END,TIME_LIMIT_80").unwrap()),
            "END,TIME_LIMIT_80,TIME_LIMIT_50,ARRAY_TASKS"
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
        assert_eq!(
            subject(
                &who(4242, None),
                "j",
                Event::ReachedLimit {
                    percent: 90,
                    run: 3240
                }
            ),
            "Slurm Job_id=4242 Name=j Reached 90% of time limit, Run time 00:54:00"
        );
        assert_eq!(
            subject(
                &who(4242, None),
                "j",
                Event::ReachedLimit {
                    percent: 100,
                    run: 3600
                }
            ),
            "Slurm Job_id=4242 Name=j Reached time limit, Run time 01:00:00"
        );
        assert_eq!(
            array_subject(10, "w", "Began", None),
            "Slurm Array Summary Job_id=10_* (10) Name=w Began"
        );
        let done = |min, max| Some((JobState::Completed, ArrayExits::Codes { min, max }));
        assert_eq!(
            array_subject(10, "w", "Ended", done(0, 0)),
            "Slurm Array Summary Job_id=10_* (10) Name=w Ended, COMPLETED, ExitCode [0-0]"
        );
        assert_eq!(
            array_subject(10, "w", "Failed", done(0, 3)),
            "Slurm Array Summary Job_id=10_* (10) Name=w Failed, Mixed, ExitCode [0-3]"
        );
        assert_eq!(
            array_subject(
                10,
                "w",
                "Failed",
                Some((JobState::Failed, ArrayExits::MaxSignal(9)))
            ),
            "Slurm Array Summary Job_id=10_* (10) Name=w Failed, Mixed, MaxSignal [9]"
        );
    }
}
