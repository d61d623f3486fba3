//! `sprio`: the multifactor priority of pending jobs, factor by factor, as
//! Slurm 22.05 prints it.
//!
//! ```text
//! args --parse_args--> SprioArgs --+
//!                                  +--render()--> text (pure)
//! controller --Priorities--> PriorityList -+
//! ```

use crate::common::{self, split_list};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use proto::{JobPriority, PriorityFactors, PriorityList};

/// `sprio`'s default format.
pub const DEFAULT_FORMAT: &str = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q";
/// `sprio -l`.
pub const LONG_FORMAT: &str =
    "%.15i %9r %.8u %.10Y %.10S %.10A %.10a %.10F %.10J %.10P %.10Q %.11N %.20T";

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("help", None, Arg::None),
    opt("jobs", Some('j'), Arg::Required),
    opt("long", Some('l'), Arg::None),
    opt("noheader", Some('h'), Arg::None),
    opt("norm", Some('n'), Arg::None),
    opt("format", Some('o'), Arg::Required),
    opt("partition", Some('p'), Arg::Required),
    opt("user", Some('u'), Arg::Required),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("weights", Some('w'), Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("sort", Some('S'), Arg::Required),
];

const USAGE: &str = "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n     [--usage] [-h] [-l] [-n] [-v] [-w]\n";

const HELP: &str = "\
Usage: sprio [OPTIONS]
  -h, --noheader                  no headers on output
  -j, --jobs                      comma separated list of jobs
                                  to view, default is all
  -l, --long                      long report
  -M, --cluster=cluster_name      cluster to issue commands to (accepted)
  -n, --norm                      display normalized values
  -o, --format=format             format specification
  -p, --partition=partition_name  comma separated list of partitions
  -u, --user=user_name            comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --weights                   show the weights for each priority factor

Help options:
  --help                          show this help message
  --usage                         display a brief summary of sprio options
";

/// sprio's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SprioArgs {
    /// `-j`: only these jobs.
    pub jobs: Vec<u32>,
    /// `-u`: only these users (names or uids).
    pub users: Vec<String>,
    /// `-p`: only these partitions.
    pub partitions: Vec<String>,
    /// `-l`.
    pub long: bool,
    /// `-n`.
    pub norm: bool,
    /// `-w`.
    pub weights: bool,
    /// `-h`.
    pub noheader: bool,
    /// `-o`.
    pub format: Option<String>,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// Parses sprio's command line.
pub fn parse_args(args: &[String]) -> Result<SprioArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("sprio", &e.message()))?;
    let mut a = SprioArgs::default();
    for item in items {
        match item {
            Item::Opt(name, value) => {
                let v = value.unwrap_or_default();
                match name {
                    "help" => a.help = true,
                    "usage" => a.usage = true,
                    "version" => a.version = true,
                    "long" => a.long = true,
                    "norm" => a.norm = true,
                    "weights" => a.weights = true,
                    "noheader" => a.noheader = true,
                    "format" => a.format = Some(v),
                    "user" => a.users.extend(split_list(&v)),
                    "partition" => a.partitions.extend(split_list(&v)),
                    "jobs" => {
                        for id in split_list(&v) {
                            match id.parse::<u32>() {
                                Ok(n) => a.jobs.push(n),
                                Err(_) => return Err(format!("Invalid job id: {id}\n")),
                            }
                        }
                    }
                    _ => {}
                }
            }
            Item::Positional(p) => {
                return Err(crate::common::usage_error(
                    "sprio",
                    &format!("unrecognized argument '{p}'"),
                ))
            }
        }
    }
    Ok(a)
}

/// One field of a format: its letter, width and side.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    code: char,
    width: usize,
    right: bool,
    suffix: String,
}

fn parse_format(spec: &str) -> (String, Vec<Field>) {
    let mut prefix = String::new();
    let mut fields: Vec<Field> = Vec::new();
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            match fields.last_mut() {
                Some(f) => f.suffix.push(c),
                None => prefix.push(c),
            }
            continue;
        }
        let right = chars.peek() == Some(&'.');
        if right {
            chars.next();
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        if let Some(code) = chars.next() {
            fields.push(Field {
                code,
                width: width.parse().unwrap_or(0),
                right,
                suffix: String::new(),
            });
        }
    }
    (prefix, fields)
}

fn header(code: char) -> &'static str {
    match code {
        'a' => "ASSOC",
        'A' => "AGE",
        'b' => "AGE",
        'c' => "CLUSTER",
        'F' => "FAIRSHARE",
        'f' => "FAIRSHARE",
        'i' => "JOBID",
        'j' => "JOBSIZE",
        'J' => "JOBSIZE",
        'N' => "NICE",
        'p' => "PARTITION",
        'P' => "PARTITION",
        'q' => "QOS",
        'Q' => "QOS",
        'r' => "PARTITION",
        'S' => "SITE",
        't' => "TRES",
        'T' => "TRES",
        'u' => "USER",
        'Y' => "PRIORITY",
        'y' => "PRIORITY",
        _ => "",
    }
}

fn put(out: &mut String, s: &str, f: &Field) {
    let n = s.chars().count();
    if f.width == 0 {
        out.push_str(s);
    } else if f.right {
        out.extend(std::iter::repeat_n(' ', f.width.saturating_sub(n)));
        out.push_str(s);
    } else {
        let shown: String = s.chars().take(f.width).collect();
        out.push_str(&shown);
        out.extend(std::iter::repeat_n(' ', f.width.saturating_sub(n)));
    }
    out.push_str(&f.suffix);
}

/// A factor as sprio prints it: the weighted value rounded (`-n`: the
/// normalized factor, 0..1, with seven decimals).
fn factor(weighted: f64, weight: f64, norm: bool) -> String {
    if norm {
        let v = if weight > 0.0 { weighted / weight } else { 0.0 };
        format!("{v:.7}")
    } else {
        format!("{weighted:.0}")
    }
}

fn value(code: char, j: &JobPriority, w: &PriorityFactors, norm: bool) -> String {
    let f = &j.factors;
    match code {
        'i' => j.job_id.0.to_string(),
        'r' => j.partition.clone(),
        'u' => j.user.clone(),
        'Y' | 'y' => {
            if norm || code == 'y' {
                format!("{:.7}", f64::from(j.priority) / f64::from(u32::MAX))
            } else {
                j.priority.to_string()
            }
        }
        'S' => format!("{:.0}", f.site),
        'A' => factor(f.age, w.age, norm),
        'a' => factor(f.assoc, w.assoc, norm),
        'F' | 'f' => factor(f.fairshare, w.fairshare, norm || code == 'f'),
        'J' | 'j' => factor(f.jobsize, w.jobsize, norm || code == 'j'),
        'P' | 'p' => factor(f.partition, w.partition, norm || code == 'p'),
        'Q' | 'q' => factor(f.qos, w.qos, norm || code == 'q'),
        'N' => f.nice.to_string(),
        'T' | 't' => f
            .tres
            .iter()
            .map(|(n, v)| format!("{n}={v:.0}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn weight_value(code: char, w: &PriorityFactors) -> String {
    match code {
        'i' => "Weights".into(),
        'S' => "1".into(),
        'A' => format!("{:.0}", w.age),
        'a' => format!("{:.0}", w.assoc),
        'F' => format!("{:.0}", w.fairshare),
        'J' => format!("{:.0}", w.jobsize),
        'P' => format!("{:.0}", w.partition),
        'Q' => format!("{:.0}", w.qos),
        'T' => w
            .tres
            .iter()
            .map(|(n, v)| format!("{n}={v:.0}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

/// Renders sprio's output for `list`.
pub fn render(args: &SprioArgs, list: &PriorityList) -> Result<String, String> {
    if !list.multifactor {
        return Err("You are not running a supported priority plugin\n(priority/basic).\nOnly 'priority/multifactor' is supported.\n".into());
    }
    let spec = match &args.format {
        Some(f) => f.as_str(),
        None if args.long => LONG_FORMAT,
        None => DEFAULT_FORMAT,
    };
    let (prefix, fields) = parse_format(spec);
    let mut out = String::new();
    if !args.noheader {
        out.push_str(&prefix);
        for f in &fields {
            put(&mut out, header(f.code), f);
        }
        out.push('\n');
    }
    if args.weights {
        out.push_str(&prefix);
        for f in &fields {
            put(&mut out, &weight_value(f.code, &list.weights), f);
        }
        out.push('\n');
        return Ok(out);
    }
    for j in &list.jobs {
        if !args.jobs.is_empty() && !args.jobs.contains(&j.job_id.0) {
            continue;
        }
        if !args.users.is_empty()
            && !args
                .users
                .iter()
                .any(|u| *u == j.user || u.parse::<u32>().is_ok_and(|n| n == j.uid))
        {
            continue;
        }
        if !args.partitions.is_empty() && !args.partitions.contains(&j.partition) {
            continue;
        }
        out.push_str(&prefix);
        for f in &fields {
            put(&mut out, &value(f.code, j, &list.weights, args.norm), f);
        }
        out.push('\n');
    }
    Ok(out)
}

/// Runs `sprio`.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || {
            common::parsed(parse_args(&args), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })
        },
        |_| {
            common::ask_controller("sprio", proto::CtldRequest::Priorities, |r| match r {
                proto::CtldResponse::Priorities(l) => Some(l),
                _ => None,
            })
        },
        |args, (_, list)| common::finish(render(args, &list)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::JobId;

    /// The jobs and weights of ../shared/reference/slurm-22.05/sprio.out.
    fn reference() -> PriorityList {
        let job = |id: u32, part: &str, jobsize: f64| JobPriority {
            job_id: JobId(id),
            partition: part.into(),
            user: "sauser".into(),
            uid: 1000,
            priority: (10_000.0 / 6.0 + jobsize + 1000.0) as u32,
            factors: PriorityFactors {
                fairshare: 10_000.0 / 6.0,
                jobsize,
                partition: 1000.0,
                ..Default::default()
            },
        };
        PriorityList {
            multifactor: true,
            weights: PriorityFactors {
                age: 1000.0,
                fairshare: 10_000.0,
                jobsize: 1000.0,
                partition: 1000.0,
                qos: 1000.0,
                ..Default::default()
            },
            jobs: vec![
                job(66792, "debug", 187.5),
                job(66793, "debug", 750.0),
                job(66797, "gpu", 187.5),
            ],
        }
    }

    fn golden(name: &str) -> String {
        // Copies of ../shared/reference/slurm-22.05/*.out, byte for byte.
        let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn run(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        render(&parse_args(&args).unwrap(), &reference()).unwrap()
    }

    #[test]
    fn default_and_long_match_the_reference() {
        assert_eq!(run(&[]), golden("sprio.txt"));
        assert_eq!(run(&["-l"]), golden("sprio_l.txt"));
    }

    #[test]
    fn filters_weights_and_norm() {
        let only = run(&["-h", "-j", "66793"]);
        assert_eq!(only.lines().count(), 1);
        assert!(only.contains("66793") && only.contains("3416"));
        assert_eq!(run(&["-h", "-p", "gpu"]).lines().count(), 1);
        assert_eq!(run(&["-h", "-u", "nobody"]), "");
        let w = run(&["-w"]);
        assert_eq!(
            w.lines().nth(1).unwrap(),
            "        Weights                               1       1000      10000       1000       1000       1000"
        );
        let n = run(&["-n", "-h", "-j", "66793", "-o", "%i %F %J"]);
        assert_eq!(n, "66793 0.1666667 0.7500000\n");
        assert!(render(
            &SprioArgs::default(),
            &PriorityList {
                multifactor: false,
                ..reference()
            }
        )
        .is_err());
    }
}
