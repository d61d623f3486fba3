//! GNU getopt_long as Slurm's commands use it: `--long=value`, `--long value`,
//! unique prefixes of long names (`--part=debug`), `-s value`, `-svalue`,
//! bundled flags (`-hl`), `--` to end options, and permutation (options
//! after positional arguments) unless the command stops at the first one
//! (sbatch: what follows the script are the script's arguments).
//!
//! Options are defined once per command as a table of [`OptSpec`].

use std::fmt;

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A flag.
    None,
    /// A value is required (`--time=5`, `--time 5`, `-t5`, `-t 5`).
    Required,
    /// A value may follow after `=` only (`--exclusive[=user]`).
    Optional,
}

/// One option of a command.
#[derive(Clone, Copy, Debug)]
pub struct OptSpec {
    /// The long name without dashes (`"time"`).
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    /// Whether it takes a value.
    pub arg: Arg,
}

/// Shorthand to build an [`OptSpec`].
pub const fn opt(long: &'static str, short: Option<char>, arg: Arg) -> OptSpec {
    OptSpec { long, short, arg }
}

/// One parsed item, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// An option, named by its long name, with its value.
    Opt(&'static str, Option<String>),
    /// A positional argument.
    Positional(String),
}

/// A command-line error, printed as GNU getopt prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptError {
    /// `--bogus`.
    UnknownLong(String),
    /// `-Z`.
    UnknownShort(char),
    /// `--time` with no value.
    MissingLong(String),
    /// `-t` with no value.
    MissingShort(char),
    /// `--hold=x` for a flag.
    UnexpectedValue(String),
    /// `--par` matches several long options.
    Ambiguous(String),
}

impl OptError {
    /// The line getopt prints, without the program name prefix.
    pub fn message(&self) -> String {
        match self {
            OptError::UnknownLong(o) => format!("unrecognized option '--{o}'"),
            OptError::UnknownShort(c) => format!("invalid option -- '{c}'"),
            OptError::MissingLong(o) => format!("option '--{o}' requires an argument"),
            OptError::MissingShort(c) => format!("option requires an argument -- '{c}'"),
            OptError::UnexpectedValue(o) => format!("option '--{o}' doesn't allow an argument"),
            OptError::Ambiguous(o) => format!("option '--{o}' is ambiguous"),
        }
    }
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

fn find_long<'a>(specs: &'a [OptSpec], name: &str) -> Result<&'a OptSpec, OptError> {
    if let Some(s) = specs.iter().find(|s| s.long == name) {
        return Ok(s);
    }
    let matches: Vec<&OptSpec> = specs.iter().filter(|s| s.long.starts_with(name)).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(OptError::UnknownLong(name.to_string())),
        many => {
            // Abbreviations that name the same option twice are not ambiguous.
            if many.iter().all(|s| s.long == many[0].long) {
                Ok(many[0])
            } else {
                Err(OptError::Ambiguous(name.to_string()))
            }
        }
    }
}

/// Parses `args` (without the program name).
pub fn parse(
    specs: &[OptSpec],
    args: &[String],
    stop_at_positional: bool,
) -> Result<Vec<Item>, OptError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.extend(args[i..].iter().cloned().map(Item::Positional));
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let spec = find_long(specs, name)?;
            let value = match spec.arg {
                Arg::None => {
                    if inline.is_some() {
                        return Err(OptError::UnexpectedValue(spec.long.to_string()));
                    }
                    None
                }
                Arg::Optional => inline,
                Arg::Required => match inline {
                    Some(v) => Some(v),
                    None if i < args.len() => {
                        i += 1;
                        Some(args[i - 1].clone())
                    }
                    None => return Err(OptError::MissingLong(spec.long.to_string())),
                },
            };
            out.push(Item::Opt(spec.long, value));
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let spec = specs
                    .iter()
                    .find(|s| s.short == Some(c))
                    .ok_or(OptError::UnknownShort(c))?;
                match spec.arg {
                    Arg::None => out.push(Item::Opt(spec.long, None)),
                    Arg::Optional => {
                        let rest: String = chars[j..].iter().collect();
                        out.push(Item::Opt(spec.long, (!rest.is_empty()).then_some(rest)));
                        break;
                    }
                    Arg::Required => {
                        let rest: String = chars[j..].iter().collect();
                        let value = if !rest.is_empty() {
                            rest
                        } else if i < args.len() {
                            i += 1;
                            args[i - 1].clone()
                        } else {
                            return Err(OptError::MissingShort(c));
                        };
                        out.push(Item::Opt(spec.long, Some(value)));
                        break;
                    }
                }
            }
            continue;
        }
        out.push(Item::Positional(a.clone()));
        if stop_at_positional {
            out.extend(args[i..].iter().cloned().map(Item::Positional));
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptSpec] = &[
        opt("time", Some('t'), Arg::Required),
        opt("hold", Some('H'), Arg::None),
        opt("partition", Some('p'), Arg::Required),
        opt("parsable", None, Arg::None),
        opt("exclusive", None, Arg::Optional),
        opt("long", Some('l'), Arg::None),
    ];

    fn p(args: &[&str], stop: bool) -> Result<Vec<Item>, OptError> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(SPECS, &v, stop)
    }

    #[test]
    fn long_forms_and_prefixes() {
        assert_eq!(
            p(&["--time=5", "--time", "6", "--parti=debug"], false).unwrap(),
            vec![
                Item::Opt("time", Some("5".into())),
                Item::Opt("time", Some("6".into())),
                Item::Opt("partition", Some("debug".into())),
            ]
        );
        assert_eq!(p(&["--par"], false), Err(OptError::Ambiguous("par".into())));
        assert_eq!(
            p(&["--bogus"], false),
            Err(OptError::UnknownLong("bogus".into()))
        );
    }

    #[test]
    fn short_forms_bundles_and_permutation() {
        assert_eq!(
            p(&["-t5", "x", "-Hl", "-p", "gpu"], false).unwrap(),
            vec![
                Item::Opt("time", Some("5".into())),
                Item::Positional("x".into()),
                Item::Opt("hold", None),
                Item::Opt("long", None),
                Item::Opt("partition", Some("gpu".into())),
            ]
        );
        assert_eq!(p(&["-t"], false), Err(OptError::MissingShort('t')));
        assert_eq!(
            p(&["-Z"], false).unwrap_err().message(),
            "invalid option -- 'Z'"
        );
    }

    #[test]
    fn stops_at_first_positional_when_asked() {
        assert_eq!(
            p(&["-H", "script.sh", "-t", "5"], true).unwrap(),
            vec![
                Item::Opt("hold", None),
                Item::Positional("script.sh".into()),
                Item::Positional("-t".into()),
                Item::Positional("5".into()),
            ]
        );
    }

    #[test]
    fn optional_values_only_inline() {
        assert_eq!(
            p(&["--exclusive", "--exclusive=user"], false).unwrap(),
            vec![
                Item::Opt("exclusive", None),
                Item::Opt("exclusive", Some("user".into()))
            ]
        );
    }
}
