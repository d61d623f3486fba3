//! Slurm hostlist expressions: `node[1-3,5]` <-> `node1,node2,node3,node5`.
//!
//! [`expand`] turns an expression into host names, [`compress`] turns names back into the
//! canonical compressed form, and [`count`] counts an expression without building the names.
//!
//! This crate is pure string code: no I/O, no DNS, and no knowledge of which nodes exist.
//! It deliberately does not implement Slurm's multi-dimensional (BlueGene/Cray) grid
//! names, nor step syntax inside brackets; `[1-8:2]` is an error here.
//!
//! Invariant: for any list of valid host names (no `[`, `]`, `,` or whitespace),
//! `expand(&compress(names))` returns the same set of names, each exactly once and byte
//! for byte (zero padding included), and `compress` of that result is the same string.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

#[cfg(test)]
mod tests;

/// The most names one expression may expand to.
///
/// Expressions such as `n[0-99999999999]` are almost certainly typos; refusing them keeps
/// one bad request from exhausting the controller's memory.
pub const MAX_HOSTS: usize = 1 << 20;

/// Why a hostlist expression was refused.
///
/// Every variant carries the whole expression so a caller can print it as-is, e.g.
/// `sbatch: error: invalid hostlist "n[1-": ...`. Callers should reject the request;
/// none of these is transient.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    /// A `[` was never closed, or a `]` has no matching `[`.
    #[error("invalid hostlist {expr:?}: unbalanced {bracket:?} at byte {position}")]
    UnbalancedBracket {
        /// The expression as given.
        expr: String,
        /// The offending bracket character.
        bracket: char,
        /// Byte offset of the offending bracket in `expr`.
        position: usize,
    },
    /// A `[` appeared inside another bracket group; Slurm does not nest ranges.
    #[error("invalid hostlist {expr:?}: nested '[' at byte {position}")]
    NestedBracket {
        /// The expression as given.
        expr: String,
        /// Byte offset of the inner `[` in `expr`.
        position: usize,
    },
    /// A range element is empty or not of the form `N` or `N-M` with decimal digits.
    #[error("invalid hostlist {expr:?}: range {element:?} is not N or N-M with decimal digits")]
    BadRange {
        /// The expression as given.
        expr: String,
        /// The element between commas inside the brackets, e.g. `a-3` or an empty string.
        element: String,
    },
    /// A range runs backwards, e.g. `[5-3]`.
    #[error("invalid hostlist {expr:?}: range {lo}-{hi} runs backwards")]
    ReversedRange {
        /// The expression as given.
        expr: String,
        /// The lower bound as written.
        lo: u64,
        /// The upper bound as written, smaller than `lo`.
        hi: u64,
    },
    /// A number in a range does not fit in 64 bits.
    #[error("invalid hostlist {expr:?}: number {number:?} is too large")]
    NumberTooLarge {
        /// The expression as given.
        expr: String,
        /// The digits as written.
        number: String,
    },
    /// The expression would expand to more than [`MAX_HOSTS`] names.
    #[error("invalid hostlist {expr:?}: expands to more than {limit} names")]
    TooManyHosts {
        /// The expression as given.
        expr: String,
        /// The limit that was exceeded ([`MAX_HOSTS`]).
        limit: usize,
    },
}

/// Expands a hostlist expression into host names, in the order written.
///
/// - Top-level items are separated by `,` or whitespace; empty items are skipped, so
///   `""` expands to no names.
/// - `[..]` holds comma-separated numbers `N` or ranges `N-M`; the width of `N` as written
///   sets the zero padding (`gpu[01-03]` -> `gpu01 gpu02 gpu03`, `n[8-10]` -> `n8 n9 n10`).
/// - Several bracket groups in one name expand to their cartesian product, the first
///   group varying slowest (`rack[1-2]-n[1-2]` -> `rack1-n1 rack1-n2 rack2-n1 rack2-n2`).
/// - Duplicates are kept, as Slurm's `hostlist_create` keeps them.
///
/// # Errors
///
/// See [`HostlistError`]: unbalanced or nested brackets, malformed or backwards ranges,
/// numbers beyond `u64`, and more than [`MAX_HOSTS`] names.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let patterns = parse(expr)?;
    let n_hosts = total_count(expr, &patterns)?;
    let mut names = Vec::with_capacity(n_hosts);
    for pattern in &patterns {
        expand_pattern(pattern, &mut names);
    }
    Ok(names)
}

/// Counts the names an expression expands to, without building them.
///
/// Equal to `expand(expr)?.len()`, and fails exactly when [`expand`] fails.
///
/// # Errors
///
/// The same as [`expand`].
pub fn count(expr: &str) -> Result<usize, HostlistError> {
    let patterns = parse(expr)?;
    total_count(expr, &patterns)
}

/// Compresses host names into Slurm's ranged form, e.g. `node[1-3,5],gpu01`.
///
/// Each name splits at its last run of digits into prefix, number and suffix
/// (`rack1-n7.ib` -> `rack1-n`, `7`, `.ib`); names without digits stay as they are.
/// Names with the same prefix, suffix and zero padding form one group.
///
/// - Duplicates and empty names are dropped.
/// - Groups appear in the order of their first name in `names` (Slurm's
///   `scontrol show hostlist` does not sort across groups either).
/// - Within a group numbers are sorted and consecutive ones merge: `node[1-3,5]`.
/// - A group of one name prints without brackets: `node4`.
/// - Zero padding is kept: `gpu01..gpu10` -> `gpu[01-10]`; a padded and an unpadded name
///   that cannot share a range stay in separate groups: `n9,n010`.
///
/// Names containing `[`, `]`, `,` or whitespace are not valid host names; they are passed
/// through unchanged and will not expand back to themselves.
pub fn compress(names: &[impl AsRef<str>]) -> String {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut split_names: Vec<SplitName<'_>> = Vec::new();
    for name in names {
        let name = name.as_ref();
        if name.is_empty() || !seen.insert(name) {
            continue;
        }
        split_names.push(SplitName::new(name));
    }

    // Zero-padded widths present per (prefix, suffix): an unpadded number joins the widest
    // of them that formats it unchanged, so `gpu09` and `gpu10` share `gpu[09-10]`.
    let mut padded_widths: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for split in &split_names {
        if let SplitName::Numbered {
            prefix,
            digits,
            suffix,
            ..
        } = *split
        {
            if has_leading_zero(digits) {
                padded_widths
                    .entry((prefix, suffix))
                    .or_default()
                    .push(digits.len());
            }
        }
    }

    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut group_of_key: HashMap<GroupKey<'_>, usize> = HashMap::new();
    for split in split_names {
        let (key, value) = match split {
            SplitName::Literal(name) => (GroupKey::Literal(name), None),
            SplitName::Numbered {
                prefix,
                digits,
                suffix,
                value,
            } => {
                let width = if has_leading_zero(digits) {
                    digits.len()
                } else {
                    padded_widths
                        .get(&(prefix, suffix))
                        .and_then(|widths| {
                            widths.iter().copied().filter(|w| *w <= digits.len()).max()
                        })
                        .unwrap_or(0)
                };
                (
                    GroupKey::Numbered {
                        prefix,
                        suffix,
                        width,
                    },
                    Some(value),
                )
            }
        };
        let group_idx = *group_of_key.entry(key).or_insert_with(|| {
            groups.push(Group {
                key,
                values: Vec::new(),
            });
            groups.len() - 1
        });
        if let Some(value) = value {
            groups[group_idx].values.push(value);
        }
    }

    let mut out = String::new();
    for group in &mut groups {
        if !out.is_empty() {
            out.push(',');
        }
        group.render(&mut out);
    }
    out
}

/// One top-level item of an expression: literal text and bracket groups, in order.
type Pattern<'a> = Vec<Segment<'a>>;

enum Segment<'a> {
    Literal(&'a str),
    Ranges(Vec<Range>),
}

/// `lo..=hi`, each number printed zero-padded to `width` digits.
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

impl Range {
    fn len(&self) -> u64 {
        // `hi >= lo` is checked when parsing; the +1 only overflows for 0..=u64::MAX,
        // which saturates and is then refused as too many hosts.
        (self.hi - self.lo).saturating_add(1)
    }
}

fn parse(expr: &str) -> Result<Vec<Pattern<'_>>, HostlistError> {
    let mut patterns = Vec::new();
    let mut pattern: Pattern<'_> = Vec::new();
    let mut literal_start = 0;
    let mut chars = expr.char_indices();
    while let Some((pos, c)) = chars.next() {
        match c {
            '[' => {
                if literal_start < pos {
                    pattern.push(Segment::Literal(&expr[literal_start..pos]));
                }
                let inner_start = pos + 1;
                let inner_end = loop {
                    match chars.next() {
                        Some((end, ']')) => break end,
                        Some((nested, '[')) => {
                            return Err(HostlistError::NestedBracket {
                                expr: expr.to_owned(),
                                position: nested,
                            });
                        }
                        Some(_) => {}
                        None => {
                            return Err(HostlistError::UnbalancedBracket {
                                expr: expr.to_owned(),
                                bracket: '[',
                                position: pos,
                            });
                        }
                    }
                };
                pattern.push(Segment::Ranges(parse_ranges(
                    expr,
                    &expr[inner_start..inner_end],
                )?));
                literal_start = inner_end + 1;
            }
            ']' => {
                return Err(HostlistError::UnbalancedBracket {
                    expr: expr.to_owned(),
                    bracket: ']',
                    position: pos,
                });
            }
            c if c == ',' || c.is_whitespace() => {
                if literal_start < pos {
                    pattern.push(Segment::Literal(&expr[literal_start..pos]));
                }
                if !pattern.is_empty() {
                    patterns.push(std::mem::take(&mut pattern));
                }
                literal_start = pos + c.len_utf8();
            }
            _ => {}
        }
    }
    if literal_start < expr.len() {
        pattern.push(Segment::Literal(&expr[literal_start..]));
    }
    if !pattern.is_empty() {
        patterns.push(pattern);
    }
    Ok(patterns)
}

fn parse_ranges(expr: &str, inner: &str) -> Result<Vec<Range>, HostlistError> {
    inner
        .split(',')
        .map(|element| {
            let bad_range = || HostlistError::BadRange {
                expr: expr.to_owned(),
                element: element.to_owned(),
            };
            let (lo_digits, hi_digits) = element.split_once('-').unwrap_or((element, element));
            let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !is_number(lo_digits) || !is_number(hi_digits) {
                return Err(bad_range());
            }
            let lo = parse_number(expr, lo_digits)?;
            let hi = parse_number(expr, hi_digits)?;
            if hi < lo {
                return Err(HostlistError::ReversedRange {
                    expr: expr.to_owned(),
                    lo,
                    hi,
                });
            }
            Ok(Range {
                lo,
                hi,
                width: lo_digits.len(),
            })
        })
        .collect()
}

fn parse_number(expr: &str, digits: &str) -> Result<u64, HostlistError> {
    digits.parse().map_err(|_| HostlistError::NumberTooLarge {
        expr: expr.to_owned(),
        number: digits.to_owned(),
    })
}

fn total_count(expr: &str, patterns: &[Pattern<'_>]) -> Result<usize, HostlistError> {
    let too_many = || HostlistError::TooManyHosts {
        expr: expr.to_owned(),
        limit: MAX_HOSTS,
    };
    let mut total: u64 = 0;
    for pattern in patterns {
        let mut n_names: u64 = 1;
        for segment in pattern {
            if let Segment::Ranges(ranges) = segment {
                let n_values = ranges
                    .iter()
                    .fold(0u64, |acc, range| acc.saturating_add(range.len()));
                n_names = n_names.saturating_mul(n_values);
            }
        }
        total = total.saturating_add(n_names);
        if total > MAX_HOSTS as u64 {
            return Err(too_many());
        }
    }
    usize::try_from(total).map_err(|_| too_many())
}

fn expand_pattern(pattern: &Pattern<'_>, out: &mut Vec<String>) {
    // Built left to right, so the first bracket group varies slowest.
    let mut partial = vec![String::new()];
    for segment in pattern {
        match segment {
            Segment::Literal(text) => partial.iter_mut().for_each(|name| name.push_str(text)),
            Segment::Ranges(ranges) => {
                let mut next = Vec::new();
                for head in &partial {
                    for range in ranges {
                        for value in range.lo..=range.hi {
                            let mut name = head.clone();
                            push_padded(&mut name, value, range.width);
                            next.push(name);
                        }
                    }
                }
                partial = next;
            }
        }
    }
    out.extend(partial);
}

fn push_padded(out: &mut String, value: u64, width: usize) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{value:0width$}");
}

/// "0" is a number, "07" is zero-padded.
fn has_leading_zero(digits: &str) -> bool {
    digits.len() > 1 && digits.starts_with('0')
}

#[derive(Clone, Copy)]
enum SplitName<'a> {
    /// No digits, or a number too large to range over: printed as-is.
    Literal(&'a str),
    Numbered {
        prefix: &'a str,
        digits: &'a str,
        suffix: &'a str,
        value: u64,
    },
}

impl<'a> SplitName<'a> {
    fn new(name: &'a str) -> Self {
        let bytes = name.as_bytes();
        let Some(last_digit) = bytes.iter().rposition(u8::is_ascii_digit) else {
            return SplitName::Literal(name);
        };
        let first_digit = bytes[..last_digit]
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |i| i + 1);
        let digits = &name[first_digit..=last_digit];
        match digits.parse() {
            Ok(value) => SplitName::Numbered {
                prefix: &name[..first_digit],
                digits,
                suffix: &name[last_digit + 1..],
                value,
            },
            Err(_) => SplitName::Literal(name),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum GroupKey<'a> {
    Literal(&'a str),
    /// `width` 0 means unpadded; otherwise every number prints with at least `width` digits.
    Numbered {
        prefix: &'a str,
        suffix: &'a str,
        width: usize,
    },
}

struct Group<'a> {
    key: GroupKey<'a>,
    values: Vec<u64>,
}

impl Group<'_> {
    fn render(&mut self, out: &mut String) {
        let (prefix, suffix, width) = match self.key {
            GroupKey::Literal(name) => {
                out.push_str(name);
                return;
            }
            GroupKey::Numbered {
                prefix,
                suffix,
                width,
            } => (prefix, suffix, width),
        };
        // Names were deduplicated and each (value, width) has one spelling, so the values
        // are already distinct.
        self.values.sort_unstable();
        out.push_str(prefix);
        if let [value] = self.values[..] {
            push_padded(out, value, width);
        } else {
            out.push('[');
            let mut idx = 0;
            while idx < self.values.len() {
                let lo = self.values[idx];
                let mut hi = lo;
                while idx + 1 < self.values.len() && Some(self.values[idx + 1]) == hi.checked_add(1)
                {
                    idx += 1;
                    hi = self.values[idx];
                }
                if lo != self.values[0] {
                    out.push(',');
                }
                push_padded(out, lo, width);
                if hi != lo {
                    out.push('-');
                    push_padded(out, hi, width);
                }
                idx += 1;
            }
            out.push(']');
        }
        out.push_str(suffix);
    }
}
