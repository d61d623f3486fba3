//! `sshare`: the fair-share tree (shares, decayed usage, fair-share factor)
//! as Slurm 22.05 prints it.
//!
//! ```text
//! args --parse_args--> SshareArgs --+
//!                                   +--render()--> text (pure)
//! controller --Shares--> Vec<ShareRow> -+
//! ```

use crate::common::{self, split_list};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use proto::ShareRow;

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("accounts", Some('A'), Arg::Required),
    opt("all", Some('a'), Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("help", None, Arg::None),
    opt("long", Some('l'), Arg::None),
    opt("noheader", Some('n'), Arg::None),
    opt("parsable", Some('p'), Arg::None),
    opt("parsable2", Some('P'), Arg::None),
    opt("users", Some('u'), Arg::Required),
    opt("Users", Some('U'), Arg::None),
    opt("format", Some('o'), Arg::Required),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

const USAGE: &str =
    "Usage: sshare [-A accounts] [-a] [-l] [-n] [-p] [-P] [-u users] [-U] [-v] [-V]\n";

const HELP: &str = "\
Usage: sshare [OPTIONS]
  -A or --accounts=      display specific accounts (comma separated list)
  -a or --all            display information for all users
  -l or --long           include normalized usage in output
  -M or --cluster=name   cluster to issue commands to (accepted)
  -n or --noheader       omit header from output
  -o or --format=        comma separated list of fields
  -p or --parsable       '|' delimited output with a trailing '|'
  -P or --parsable2      '|' delimited output without a trailing '|'
  -u or --users=         display specific users (comma separated list)
  -U or --Users          display only user information
  -v or --verbose        display more information
  -V or --version        display tool version number
      --help             display this usage description
      --usage            display this usage description
";

/// sshare's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshareArgs {
    /// `-A`.
    pub accounts: Vec<String>,
    /// `-a`.
    pub all: bool,
    /// `-l`.
    pub long: bool,
    /// `-n`.
    pub noheader: bool,
    /// `-p` (true) / `-P` (false).
    pub parsable: Option<bool>,
    /// `-u`.
    pub users: Vec<String>,
    /// `-U`.
    pub users_only: bool,
    /// `-o`: field names.
    pub format: Option<Vec<String>>,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`.
    pub version: bool,
}

/// Parses sshare's command line.
pub fn parse_args(args: &[String]) -> Result<SshareArgs, String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("sshare", &e.message()))?;
    let mut a = SshareArgs::default();
    for item in items {
        match item {
            Item::Opt(name, value) => {
                let v = value.unwrap_or_default();
                match name {
                    "accounts" => a.accounts.extend(split_list(&v)),
                    "all" => a.all = true,
                    "long" => a.long = true,
                    "noheader" => a.noheader = true,
                    "parsable" => a.parsable = Some(true),
                    "parsable2" => a.parsable = Some(false),
                    "users" => a.users.extend(split_list(&v)),
                    "Users" => a.users_only = true,
                    "format" => a.format = Some(split_list(&v).collect()),
                    "help" => a.help = true,
                    "usage" => a.usage = true,
                    "version" => a.version = true,
                    _ => {}
                }
            }
            Item::Positional(p) => {
                return Err(crate::common::usage_error(
                    "sshare",
                    &format!("unrecognized argument '{p}'"),
                ))
            }
        }
    }
    Ok(a)
}

/// A column: its name, header, width.
struct Column {
    name: &'static str,
    header: &'static str,
    width: usize,
}

const COLUMNS: &[Column] = &[
    Column {
        name: "account",
        header: "Account",
        width: 20,
    },
    Column {
        name: "user",
        header: "User",
        width: 10,
    },
    Column {
        name: "rawshares",
        header: "RawShares",
        width: 10,
    },
    Column {
        name: "normshares",
        header: "NormShares",
        width: 11,
    },
    Column {
        name: "rawusage",
        header: "RawUsage",
        width: 11,
    },
    Column {
        name: "normusage",
        header: "NormUsage",
        width: 11,
    },
    Column {
        name: "effectvusage",
        header: "EffectvUsage",
        width: 13,
    },
    Column {
        name: "fairshare",
        header: "FairShare",
        width: 10,
    },
    Column {
        name: "levelfs",
        header: "LevelFS",
        width: 10,
    },
];

const DEFAULT_FIELDS: &[&str] = &[
    "account",
    "user",
    "rawshares",
    "normshares",
    "rawusage",
    "effectvusage",
    "fairshare",
];
const LONG_FIELDS: &[&str] = &[
    "account",
    "user",
    "rawshares",
    "normshares",
    "rawusage",
    "normusage",
    "effectvusage",
    "fairshare",
    "levelfs",
];

fn cell(name: &str, row: &ShareRow, total_usage: f64, parsable: bool) -> String {
    let is_root = row.depth == 0;
    match name {
        "account" => {
            if parsable {
                row.account.clone()
            } else {
                format!("{}{}", " ".repeat(row.depth as usize), row.account)
            }
        }
        "user" => row.user.clone(),
        "rawshares" => row.raw_shares.map(|s| s.to_string()).unwrap_or_default(),
        "normshares" => format!("{:.6}", row.norm_shares),
        "rawusage" => format!("{:.0}", row.raw_usage.floor()),
        "normusage" => {
            let v = if total_usage > 0.0 {
                row.raw_usage / total_usage
            } else {
                0.0
            };
            format!("{v:.6}")
        }
        "effectvusage" => format!("{:.6}", row.effective_usage),
        "fairshare" => row.fairshare.map(|f| format!("{f:.6}")).unwrap_or_default(),
        "levelfs" if !is_root => {
            if row.effective_usage > 0.0 {
                format!("{:.6}", row.norm_shares / row.effective_usage)
            } else if row.norm_shares > 0.0 {
                "inf".into()
            } else {
                String::new()
            }
        }
        _ => String::new(),
    }
}

/// Renders sshare's output; `me` is the caller's user name.
pub fn render(args: &SshareArgs, rows: &[ShareRow], me: &str) -> Result<String, String> {
    let fields: Vec<String> = match &args.format {
        Some(f) => f.iter().map(|s| s.to_ascii_lowercase()).collect(),
        None if args.long => LONG_FIELDS.iter().map(|s| s.to_string()).collect(),
        None => DEFAULT_FIELDS.iter().map(|s| s.to_string()).collect(),
    };
    let mut columns = Vec::new();
    for f in &fields {
        match COLUMNS.iter().find(|c| c.name == f) {
            Some(c) => columns.push(c),
            None => return Err(format!("sshare: error: Invalid field requested: \"{f}\"\n")),
        }
    }
    let total = rows.first().map_or(0.0, |r| r.raw_usage);
    let shown: Vec<&ShareRow> = rows
        .iter()
        .filter(|r| {
            let is_user = !r.user.is_empty();
            if args.users_only && !is_user {
                return false;
            }
            if !args.accounts.is_empty() && r.depth > 0 && !args.accounts.contains(&r.account) {
                return false;
            }
            if !is_user {
                return true;
            }
            if !args.users.is_empty() {
                return args.users.contains(&r.user);
            }
            args.all || r.user == me
        })
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, cells: Vec<String>| match args.parsable {
        Some(trailing) => {
            out.push_str(&cells.join("|"));
            if trailing {
                out.push('|');
            }
            out.push('\n');
        }
        None => {
            for (i, (c, text)) in columns.iter().zip(cells).enumerate() {
                let n = text.chars().count();
                if i == 0 {
                    out.push_str(&text.chars().take(c.width).collect::<String>());
                    out.extend(std::iter::repeat_n(' ', c.width.saturating_sub(n)));
                } else {
                    out.extend(std::iter::repeat_n(' ', c.width.saturating_sub(n)));
                    out.push_str(&text);
                }
                out.push(' ');
            }
            out.push('\n');
        }
    };
    if !args.noheader {
        line(
            &mut out,
            columns.iter().map(|c| c.header.to_string()).collect(),
        );
        if args.parsable.is_none() {
            line(
                &mut out,
                columns.iter().map(|c| "-".repeat(c.width)).collect(),
            );
        }
    }
    let parsable = args.parsable.is_some();
    for r in shown {
        line(
            &mut out,
            columns
                .iter()
                .map(|c| cell(c.name, r, total, parsable))
                .collect(),
        );
    }
    Ok(out)
}

/// Runs `sshare`.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || {
            common::parsed(parse_args(&args), |a| {
                common::info_flags(a.help, a.usage, a.version, HELP, USAGE)
            })
        },
        |_| {
            common::ask_controller("sshare", proto::CtldRequest::Shares, |r| match r {
                proto::CtldResponse::Shares(rows) => Some(rows),
                _ => None,
            })
        },
        |args, (client, rows)| common::finish(render(args, &rows, &client.identity().user)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        depth: u32,
        account: &str,
        user: &str,
        norm: f64,
        usage: f64,
        eff: f64,
        fs: Option<f64>,
    ) -> ShareRow {
        ShareRow {
            account: account.into(),
            user: user.into(),
            depth,
            raw_shares: (depth > 0).then_some(1),
            norm_shares: norm,
            raw_usage: usage,
            effective_usage: eff,
            fairshare: fs,
        }
    }

    /// The tree of ../shared/reference/slurm-22.05/sshare_a.out.
    fn reference() -> Vec<ShareRow> {
        vec![
            row(0, "root", "", 0.0, 6288.0, 1.0, None),
            row(1, "root", "root", 1.0 / 3.0, 0.0, 0.0, Some(1.0)),
            row(1, "ml", "", 1.0 / 3.0, 38.0, 0.006207, None),
            row(2, "ml", "nobody", 1.0 / 3.0, 0.0, 0.0, Some(5.0 / 6.0)),
            row(2, "ml", "root", 1.0 / 3.0, 0.0, 0.0, Some(5.0 / 6.0)),
            row(2, "ml", "sauser", 1.0 / 3.0, 38.0, 1.0, Some(0.5)),
            row(1, "research", "", 1.0 / 3.0, 6249.0, 0.993793, None),
            row(2, "research", "root", 0.5, 984.0, 0.156940, Some(2.0 / 6.0)),
            row(
                2,
                "research",
                "sauser",
                0.5,
                5265.0,
                0.843060,
                Some(1.0 / 6.0),
            ),
        ]
    }

    fn golden(name: &str) -> String {
        // Copies of ../shared/reference/slurm-22.05/*.out, byte for byte.
        let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn run(args: &[&str], me: &str) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        render(&parse_args(&args).unwrap(), &reference(), me).unwrap()
    }

    #[test]
    fn default_and_all_match_the_reference() {
        assert_eq!(run(&[], "sauser"), golden("sshare.txt"));
        assert_eq!(run(&["-a"], "sauser"), golden("sshare_a.txt"));
    }

    #[test]
    fn parsable_users_accounts_and_errors() {
        let p = run(&["-P", "-n", "-U", "-u", "sauser"], "x");
        assert_eq!(
            p,
            "ml|sauser|1|0.333333|38|1.000000|0.500000\nresearch|sauser|1|0.500000|5265|0.843060|0.166667\n"
        );
        let a = run(&["-a", "-A", "ml", "-n"], "x");
        assert_eq!(a.lines().count(), 5, "{a}");
        let args = parse_args(&["-o".into(), "Account,Bogus".into()]).unwrap();
        assert_eq!(
            render(&args, &reference(), "x").unwrap_err(),
            "sshare: error: Invalid field requested: \"bogus\"\n"
        );
    }
}
