//! What the commands share: the command skeleton ([`run`]: parse, ask,
//! show), Slurm's timestamp form, error and `--help`/`--helpformat` output.

use model::Timestamp;

/// The Slurm release whose behaviour the commands reproduce, as `--version`
/// prints it (`slurm 22.05.8`) and as JSON output reports it.
pub const SLURM_VERSION: &str = "22.05.8";

/// The line `--version` prints.
pub fn version_line() -> String {
    format!("slurm {SLURM_VERSION}\n")
}

/// Slurm's timestamp form in local time: `2026-12-02T10:24:00`.
pub fn fmt_time(ts: Timestamp) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_opt(ts, 0) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%dT%H:%M:%S").to_string()
        }
        chrono::LocalResult::None => "Unknown".to_string(),
    }
}

/// The banner line `squeue -l` and `sinfo -l` print first: `Wed Dec 02 10:24:12 2026`.
pub fn fmt_banner(ts: Timestamp) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_opt(ts, 0) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%a %b %d %H:%M:%S %Y").to_string()
        }
        chrono::LocalResult::None => String::new(),
    }
}

/// The current time, for the few commands that need it locally (`squeue -l` banner
/// uses the controller's time instead when it has one).
pub fn now() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as Timestamp)
        .unwrap_or(0)
}

/// Writes `text` to stdout; a closed pipe (`squeue | head`) is not an error.
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `--help`, `--usage` and `--version`: prints the first that was asked for
/// and returns the exit status; `None` when none was.
pub fn info_flags(
    help: bool,
    usage: bool,
    version: bool,
    help_text: &str,
    usage_text: &str,
) -> Option<i32> {
    if help {
        print_stdout(help_text);
    } else if usage {
        print_stdout(usage_text);
    } else if version {
        print_stdout(&version_line());
    } else {
        return None;
    }
    Some(0)
}

/// Why a command ends before its last step.
#[derive(Debug)]
pub enum Stop {
    /// Exit with this status; what there was to say is already printed
    /// (`--help`'s text, or messages written as they came).
    Exit(i32),
    /// Print this complete text (newline included) to stderr and exit 1.
    Fail(String),
}

impl Stop {
    /// Prints what is left to print and gives the exit status.
    pub fn exit_status(self) -> i32 {
        match self {
            Stop::Exit(code) => code,
            Stop::Fail(text) => {
                eprint!("{text}");
                1
            }
        }
    }
}

/// The skeleton every query command follows:
///
/// ```text
/// argv --parse--> A --ask (controller, accounting)--> T --show--> stdout, exit status
///         |                    |
///         +-------- Stop ------+--> stderr, exit status
/// ```
///
/// `parse` reads the command line (and answers `--help`, `--usage`,
/// `--version` with [`Stop::Exit`]); `ask` gets the answer from the daemons;
/// `show` prints it and gives the exit status, most often through
/// [`finish`].
pub fn run<A, T>(
    parse: impl FnOnce() -> Result<A, Stop>,
    ask: impl FnOnce(&A) -> Result<T, Stop>,
    show: impl FnOnce(&A, T) -> i32,
) -> i32 {
    let args = match parse() {
        Ok(args) => args,
        Err(stop) => return stop.exit_status(),
    };
    match ask(&args) {
        Ok(answer) => show(&args, answer),
        Err(stop) => stop.exit_status(),
    }
}

/// The parse step for a parser whose error is the complete stderr text:
/// then `info` answers `--help`, `--usage` and `--version` (see
/// [`info_flags`]) when one was given.
pub fn parsed<A>(
    parsed: Result<A, String>,
    info: impl FnOnce(&A) -> Option<i32>,
) -> Result<A, Stop> {
    let args = parsed.map_err(Stop::Fail)?;
    match info(&args) {
        Some(code) => Err(Stop::Exit(code)),
        None => Ok(args),
    }
}

/// A comma list as Slurm's commands take it (`-u a,b`), empty items dropped.
pub fn split_list(v: &str) -> impl Iterator<Item = String> + '_ {
    v.split(',').filter(|s| !s.is_empty()).map(str::to_string)
}

/// The text a command prints for a bad option: the message, then the
/// "Try ... --help" line.
pub fn usage_error(cmd: &str, msg: &str) -> String {
    format!("{cmd}: {msg}\nTry \"{cmd} --help\" for more information\n")
}

/// Sends `req` for command `cmd` through a client found from the
/// environment: an ask step of [`run`]. A failure (no slurm.conf, no
/// controller, a refusal, an answer of another kind than `want` accepts)
/// stops the command with `cmd: error: ...`.
pub fn ask_controller<T>(
    cmd: &str,
    req: proto::CtldRequest,
    want: impl FnOnce(proto::CtldResponse) -> Option<T>,
) -> Result<(client::Client, T), Stop> {
    let fail = |e: &dyn std::fmt::Display| Stop::Fail(format!("{cmd}: error: {e}\n"));
    let client = client::Client::from_env().map_err(|e| fail(&e))?;
    let answer = client.call(req).map_err(|e| fail(&e))?;
    match want(answer) {
        Some(t) => Ok((client, t)),
        None => Err(fail(&"unexpected answer from the controller")),
    }
}

/// Prints a rendered output (exit 0) or its error text (exit 1): the
/// usual last step of [`run`].
pub fn finish(rendered: Result<String, String>) -> i32 {
    match rendered {
        Ok(text) => {
            print_stdout(&text);
            0
        }
        Err(text) => Stop::Fail(text).exit_status(),
    }
}

/// A `--helpformat` text (sacct, sstat): the field names in columns 20
/// wide, four to a line, without trailing blanks.
pub fn helpformat<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut n_names = 0;
    for (i, name) in names.into_iter().enumerate() {
        out.push_str(&format!("{name:<20}"));
        if i % 4 == 3 {
            out.truncate(out.trim_end().len());
            out.push('\n');
        }
        n_names = i + 1;
    }
    if !n_names.is_multiple_of(4) {
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    out
}

/// One `--format` item: (item, name, (width, left-justified) when given).
pub type FormatItem<'a> = (&'a str, &'a str, Option<(usize, bool)>);

/// The items of a `--format` list (`name[%[-]width]`, comma separated), as
/// sacct and sstat take them: (item, name, width and left-justified when
/// given). `%30` is right-justified, `%-30` left-justified.
pub fn format_items(spec: &str) -> Vec<FormatItem<'_>> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('%') {
            Some((name, w)) => {
                let (left, digits) = match w.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, w),
                };
                (item, name, digits.parse::<usize>().ok().map(|n| (n, left)))
            }
            None => (item, item, None),
        })
        .collect()
}

/// Whether `user` names a user of this host, as Slurm's `uid_from_string`
/// reads it: a name, else a number that is some user's uid.
pub fn user_exists(user: &str) -> bool {
    if let Ok(Some(_)) = nix::unistd::User::from_name(user) {
        return true;
    }
    match user.parse::<u32>() {
        Ok(uid) => matches!(nix::unistd::User::from_uid(uid.into()), Ok(Some(_))),
        Err(_) => false,
    }
}
