//! `sattach JOBID.STEPID`: attach to a running step's standard input,
//! output and error, as Slurm's sattach does (sattach(1)).
//!
//! ```text
//! ListSteps --> the step's nodes and their daemons (older controllers: ListNodes)
//! listen; NodeRequest::Attach {addr, token} to each daemon
//!   --> each node's step supervisor (taskd) connects here, says Hello
//!       with the token, then copies its tasks' output here too
//! stdin --> SrunToStepd::Stdin to every node --> the tasks reading stdin
//! every node's Done (or its connection closed) --> exit 0
//! ```
//!
//! Only the step's owner (or root and SlurmUser) may attach: the node
//! daemons check who asks. Output is what the tasks write from then on.

use crate::getopt::{self, opt, Arg, Item, OptSpec};
use proto::{CtldRequest, CtldResponse, NodeRequest, NodeResponse, SrunToStepd, StepdToSrun};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

/// sattach's options (sattach(1)).
pub const OPTIONS: &[OptSpec] = &[
    opt("error-filter", None, Arg::Required),
    opt("help", Some('h'), Arg::None),
    opt("input-filter", None, Arg::Required),
    opt("label", Some('l'), Arg::None),
    opt("layout", None, Arg::None),
    opt("output-filter", None, Arg::Required),
    opt("pty", Some('u'), Arg::None),
    opt("quiet", Some('Q'), Arg::None),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

const USAGE: &str = "Usage: sattach [options] <jobid.stepid>\n";

const HELP: &str = "\
Usage: sattach [options] <jobid.stepid>
      --input-filter=taskid  send stdin to only the specified task
      --output-filter=taskid only print stdout from the specified task
      --error-filter=taskid  only print stderr from the specified task
  -l, --label                prepend task number to lines of stdout & stderr
      --layout               print task layout info and exit (does not attach)
  -Q, --quiet                quiet mode (suppress informational messages)
  -u, --pty                  attach to the step's pseudo terminal
  -v, --verbose              verbose mode (multiple -v's increase verbosity)

Help options:
  -h, --help                 show this help message
      --usage                display brief usage message
  -V, --version              output version information and exit
";

/// What sattach was asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opts {
    /// The job.
    pub job_id: u32,
    /// The step.
    pub step_id: u32,
    /// `-l`.
    pub label: bool,
    /// `--output-filter`.
    pub output_filter: Option<u32>,
    /// `--error-filter`.
    pub error_filter: Option<u32>,
    /// `-Q`.
    pub quiet: bool,
    /// `-v` count.
    pub verbose: u32,
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Attach.
    Run(Opts),
    /// Print this and exit with this status.
    Exit(String, i32),
}

fn task_id(opt: &str, v: &str) -> Result<u32, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("sattach: error: Invalid {opt} value: {v}\n"))
}

/// Parses sattach's command line (without the program name); errors are
/// the complete stderr text.
pub fn parse_args(args: &[String]) -> Result<Parsed, String> {
    let items =
        getopt::parse(OPTIONS, args, false).map_err(|e| format!("sattach: {e}\n{USAGE}"))?;
    let mut o = Opts::default();
    let mut ids: Vec<String> = Vec::new();
    let mut given: Vec<&'static str> = Vec::new();
    for item in items {
        match item {
            Item::Opt(long, value) => {
                given.push(long);
                let v = value.unwrap_or_default();
                match long {
                    "help" => return Ok(Parsed::Exit(HELP.to_string(), 0)),
                    "usage" => return Ok(Parsed::Exit(USAGE.to_string(), 0)),
                    "version" => return Ok(Parsed::Exit(crate::common::version_line(), 0)),
                    "label" => o.label = true,
                    "output-filter" => o.output_filter = Some(task_id("output-filter", &v)?),
                    "error-filter" => o.error_filter = Some(task_id("error-filter", &v)?),
                    "quiet" => o.quiet = true,
                    "verbose" => o.verbose += 1,
                    _ => {}
                }
            }
            Item::Positional(p) => ids.push(p),
        }
    }
    crate::compat::check("sattach", given.iter().copied())?;
    let [id] = ids.as_slice() else {
        return Err(format!(
            "sattach: error: too {} arguments\n{USAGE}",
            if ids.is_empty() { "few" } else { "many" }
        ));
    };
    let bad = || format!("sattach: error: Invalid job step id: {id}\n");
    let (job, step) = id.split_once('.').ok_or_else(bad)?;
    o.job_id = job.parse().map_err(|_| bad())?;
    o.step_id = step.parse().map_err(|_| bad())?;
    Ok(Parsed::Run(o))
}

/// One event from a node's supervisor connection.
enum Event {
    Msg(StepdToSrun),
    Closed,
}

/// Runs sattach.
pub fn main(args: Vec<String>) -> i32 {
    let o = match parse_args(&args) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Exit(text, code)) => {
            print!("{text}");
            return code;
        }
        Err(text) => {
            eprint!("{text}");
            return 1;
        }
    };
    match attach(&o) {
        Ok(code) => code,
        Err(text) => {
            eprintln!("sattach: error: {text}");
            1
        }
    }
}

fn attach(o: &Opts) -> Result<i32, String> {
    let client = client::Client::from_env().map_err(|e| e.to_string())?;
    let steps = match client.call(CtldRequest::ListSteps) {
        Ok(CtldResponse::Steps(list)) => list.steps,
        Ok(_) => return Err("Unexpected message received".into()),
        Err(e) => return Err(e.to_string()),
    };
    let step = steps
        .iter()
        .find(|s| s.job_id.0 == o.job_id && s.step == proto::StepId::Numbered(o.step_id))
        .ok_or_else(|| format!("Job step {}.{} not found", o.job_id, o.step_id))?;
    // The step's node daemons, as the controller gives them with the
    // step (an older one does not: then from the node listing).
    let addrs: Vec<String> = if step.node_addrs.len() == step.nodes.len()
        && step.node_addrs.iter().all(|a| !a.is_empty())
    {
        step.node_addrs.clone()
    } else {
        let nodes = client.nodes().map_err(|e| e.to_string())?;
        step.nodes
            .iter()
            .map(|name| {
                nodes
                    .iter()
                    .find(|n| &n.name == name)
                    .map(|n| format!("{}:{}", n.addr, n.port))
                    .ok_or_else(|| format!("unknown node {name}"))
            })
            .collect::<Result<_, _>>()?
    };
    let host = crate::srun::local_addr(&client);
    let listener = TcpListener::bind((host.as_str(), 0))
        .map_err(|e| format!("cannot listen on {host}: {e}"))?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let token = crate::srun::random_token();
    for (name, addr) in step.nodes.iter().zip(&addrs) {
        let req = NodeRequest::Attach {
            job_id: step.job_id,
            step_id: o.step_id,
            addr: format!("{host}:{port}"),
            token: token.clone(),
        };
        match client.node_call(addr, req) {
            Ok(NodeResponse::Ok) => {}
            Ok(NodeResponse::Failed(why)) => return Err(format!("{name}: {why}")),
            Ok(_) => return Err(format!("{name}: Unexpected message received")),
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }
    let n_nodes = addrs.len();
    let (tx, rx) = mpsc::channel::<Event>();
    let mut writers: Vec<TcpStream> = Vec::new();
    listener.set_nonblocking(false).map_err(|e| e.to_string())?;
    while writers.len() < n_nodes {
        let (mut s, _) = listener.accept().map_err(|e| e.to_string())?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        match client::stepio::recv(&mut s) {
            Ok(StepdToSrun::Hello { token: t, .. }) if t == token => {}
            _ => continue,
        }
        let _ = s.set_read_timeout(None);
        if let Ok(w) = s.try_clone() {
            writers.push(w);
        }
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut s = s;
            while let Ok(m) = client::stepio::recv(&mut s) {
                if tx.send(Event::Msg(m)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Event::Closed);
        });
    }
    drop(tx);
    forward_stdin(writers);
    let mut out = Output {
        label: o.label,
        partial: BTreeMap::new(),
    };
    let mut done = 0;
    while done < n_nodes {
        match rx.recv() {
            Ok(Event::Msg(StepdToSrun::Output { task, stderr, data })) => {
                let filter = if stderr {
                    o.error_filter
                } else {
                    o.output_filter
                };
                if filter.is_none_or(|t| t == task) {
                    out.add(task, stderr, &data);
                }
            }
            Ok(Event::Msg(StepdToSrun::TaskExited { task, .. })) => out.flush_task(task),
            Ok(Event::Msg(StepdToSrun::Done)) | Ok(Event::Closed) => done += 1,
            Ok(Event::Msg(_)) => {}
            Err(_) => break,
        }
    }
    out.flush_all();
    Ok(0)
}

/// Copies sattach's stdin to every node of the step (the tasks that read
/// stdin get it), then says it ended.
fn forward_stdin(mut writers: Vec<TcpStream>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        let mut stdin = std::io::stdin().lock();
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            writers.retain_mut(|w| {
                client::stepio::send(w, SrunToStepd::Stdin(buf[..n].to_vec())).is_ok()
            });
        }
        for w in &mut writers {
            let _ = client::stepio::send(w, SrunToStepd::StdinEof);
        }
    });
}

/// Line-buffered task output, with `N: ` labels under `-l`.
struct Output {
    label: bool,
    partial: BTreeMap<(u32, bool), Vec<u8>>,
}

impl Output {
    fn write(stderr: bool, bytes: &[u8]) {
        if stderr {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(bytes);
            let _ = e.flush();
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    fn add(&mut self, task: u32, stderr: bool, data: &[u8]) {
        let buf = self.partial.entry((task, stderr)).or_default();
        buf.extend_from_slice(data);
        let Some(last_nl) = buf.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let rest = buf.split_off(last_nl + 1);
        let whole = std::mem::replace(buf, rest);
        Output::write(stderr, &self.labelled(task, &whole));
    }

    fn labelled(&self, task: u32, whole: &[u8]) -> Vec<u8> {
        if !self.label {
            return whole.to_vec();
        }
        let mut t = Vec::with_capacity(whole.len() + 8);
        for line in whole.split_inclusive(|b| *b == b'\n') {
            t.extend_from_slice(format!("{task}: ").as_bytes());
            t.extend_from_slice(line);
        }
        t
    }

    fn flush_task(&mut self, task: u32) {
        for stderr in [false, true] {
            if let Some(mut rest) = self.partial.remove(&(task, stderr)) {
                if rest.is_empty() {
                    continue;
                }
                if self.label {
                    rest.push(b'\n');
                }
                Output::write(stderr, &self.labelled(task, &rest));
            }
        }
    }

    fn flush_all(&mut self) {
        let tasks: Vec<u32> = self.partial.keys().map(|(t, _)| *t).collect();
        for t in tasks {
            self.flush_task(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn takes_a_step_id_and_its_options() {
        let Ok(Parsed::Run(o)) = parse_args(&words("-l --output-filter=1 -Q 12.3")) else {
            panic!()
        };
        assert_eq!(
            o,
            Opts {
                job_id: 12,
                step_id: 3,
                label: true,
                output_filter: Some(1),
                quiet: true,
                ..Opts::default()
            }
        );
    }

    #[test]
    fn refuses_what_it_cannot_do() {
        assert_eq!(
            parse_args(&words("12")).unwrap_err(),
            "sattach: error: Invalid job step id: 12\n"
        );
        assert!(parse_args(&words("--layout 12.0"))
            .unwrap_err()
            .contains("--layout is not supported here"));
        assert!(parse_args(&words("-u 12.0"))
            .unwrap_err()
            .contains("-u/--pty is not supported here"));
    }

    #[test]
    fn labels_whole_lines() {
        let o = Output {
            label: true,
            partial: BTreeMap::new(),
        };
        assert_eq!(o.labelled(3, b"a\nb\n"), b"3: a\n3: b\n".to_vec());
    }
}
