//! `sacctmgr show reservation`: the reservation windows accounting keeps
//! (`proto::resv::AcctResv`), with Slurm 22.05's columns: by default
//! `Cluster,Name%15,TRES%30,TimeStart,TimeEnd,UnusedWall`.
//!
//! Conditions: `Names=`, `Clusters=` (only this cluster's are stored),
//! `Nodes=` (a window holding any of them), `Start=`/`End=` (windows that
//! meet the interval; without them, the windows not over yet).

use super::fields::Layout;
use super::{abbrev, split_kv};
use crate::common::fmt_time;
use model::Timestamp;
use proto::resv::AcctResv;

/// The columns sacctmgr knows for reservations: (name, shortest
/// abbreviation, header, default width).
const FIELDS: &[(&str, usize, &str, i32)] = &[
    ("cluster", 1, "Cluster", 10),
    ("flags", 1, "Flags", 20),
    ("name", 2, "Name", 9),
    ("nodenames", 2, "Nodes", -15),
    ("nodes", 5, "Nodes", -15),
    ("timeend", 5, "TimeEnd", 19),
    ("end", 1, "TimeEnd", 19),
    ("timestart", 5, "TimeStart", 19),
    ("start", 1, "TimeStart", 19),
    ("tres", 2, "TRES", -20),
    ("unusedwall", 2, "UnusedWall", 10),
];

/// Slurm 22.05's default columns.
pub const DEFAULT_FORMAT: &str = "Cluster,Name%15,TRES%30,TimeStart,TimeEnd,UnusedWall";

/// A parsed `sacctmgr show reservation`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResvShow {
    /// Columns: (field name, header, width).
    pub columns: Vec<(&'static str, &'static str, i32)>,
    /// `Names=`.
    pub names: Vec<String>,
    /// `Clusters=`.
    pub clusters: Vec<String>,
    /// `Nodes=` (expanded).
    pub nodes: Vec<String>,
    /// `Start=`.
    pub start: Option<Timestamp>,
    /// `End=`.
    pub end: Option<Timestamp>,
}

/// Whether `word` names reservations (`show reservation`, `show resv`).
pub fn is_reservation(word: &str) -> bool {
    abbrev(word, "reservations", 3) || abbrev(word, "resv", 4)
}

fn parse_columns(spec: &str) -> Result<Vec<(&'static str, &'static str, i32)>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, w.parse::<i32>().ok().filter(|w| *w != 0)),
            None => (item, None),
        };
        let l = name.to_ascii_lowercase();
        let Some((full, _, header, w)) = FIELDS
            .iter()
            .find(|(full, min, ..)| l.len() >= (*min).min(full.len()) && full.starts_with(&l))
        else {
            return Err(format!("Unknown field '{name}'\n"));
        };
        out.push((*full, *header, width.unwrap_or(*w)));
    }
    Ok(out)
}

/// Parses the words after `show reservation`; `now` resolves times.
pub fn parse(words: &[String], now: Timestamp) -> Result<ResvShow, String> {
    let mut s = ResvShow::default();
    let mut format = String::new();
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    for w in words {
        let (k, _, v) = split_kv(w);
        let Some(v) = v else {
            if abbrev(&k, "where", 5) {
                continue;
            }
            s.names.extend(list(w));
            continue;
        };
        // sacct's forms: `now-1hour`, dates, `today`, ...
        let time = |v: &str| {
            crate::timespec::parse_time(v, now, &chrono::Local)
                .ok_or_else(|| format!("Invalid time specification: {v}\n"))
        };
        if abbrev(&k, "format", 1) {
            if !format.is_empty() {
                format.push(',');
            }
            format.push_str(&v);
        } else if abbrev(&k, "names", 1) || abbrev(&k, "reservations", 3) {
            s.names.extend(list(&v));
        } else if abbrev(&k, "clusters", 1) {
            s.clusters.extend(list(&v));
        } else if abbrev(&k, "nodes", 1) {
            s.nodes
                .extend(hostlist::expand(&v).map_err(|_| format!("Invalid node list {v}\n"))?);
        } else if abbrev(&k, "start", 1) || abbrev(&k, "timestart", 5) {
            s.start = Some(time(&v)?);
        } else if abbrev(&k, "end", 1) || abbrev(&k, "timeend", 5) {
            s.end = Some(time(&v)?);
        } else {
            return Err(format!(" Unknown condition: {w}\n"));
        }
    }
    if format.is_empty() {
        format = DEFAULT_FORMAT.to_owned();
    }
    s.columns = parse_columns(&format)?;
    if s.start.is_none() && s.end.is_none() {
        s.start = Some(now);
    }
    Ok(s)
}

/// A double as Slurm prints one in a column of `width`: `%*f`, or
/// `%*.*e` with `width - 7` digits where that would not fit.
fn double(v: f64, width: usize) -> String {
    let plain = format!("{v:width$.6}");
    if plain.len() <= width {
        return plain;
    }
    let prec = width.saturating_sub(7);
    let text = format!("{v:.prec$e}");
    // Rust writes `3.6e3`; C writes `3.6e+03`.
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{:>width$}", format!("{mantissa}e{sign}{:02}", exp.abs()))
}

fn value(field: &str, r: &AcctResv, layout: Layout, width: usize) -> String {
    match field {
        "cluster" => r.cluster.clone(),
        "flags" => r.flags.clone(),
        "name" => r.name.clone(),
        "nodenames" | "nodes" => r.nodes.clone(),
        "timeend" | "end" => fmt_time(r.end),
        "timestart" | "start" => fmt_time(r.start),
        "tres" => r.tres.clone(),
        "unusedwall" if layout == Layout::Columns => double(r.unused_wall, width),
        "unusedwall" => format!("{:.6}", r.unused_wall),
        _ => String::new(),
    }
}

/// The windows `s` selects, in the order given (by start, then name).
pub fn select<'a>(s: &ResvShow, all: &'a [AcctResv]) -> Vec<&'a AcctResv> {
    let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
    all.iter()
        .filter(|r| any(&s.names, &r.name) && any(&s.clusters, &r.cluster))
        .filter(|r| {
            s.nodes.is_empty()
                || hostlist::expand(&r.nodes).is_ok_and(|ns| ns.iter().any(|n| s.nodes.contains(n)))
        })
        .collect()
}

/// Prints the windows as sacctmgr does.
pub fn render(s: &ResvShow, rows: &[&AcctResv], layout: Layout, header: bool) -> String {
    let mut out = String::new();
    let line = |out: &mut String, cells: Vec<String>| match layout {
        Layout::Columns => {
            for ((_, _, w), text) in s.columns.iter().zip(cells) {
                out.push_str(&super::fields::cell_text(&text, *w));
                out.push(' ');
            }
            out.push('\n');
        }
        Layout::Parsable => {
            for text in cells {
                out.push_str(&text);
                out.push('|');
            }
            out.push('\n');
        }
        Layout::Parsable2 => {
            out.push_str(&cells.join("|"));
            out.push('\n');
        }
    };
    if header {
        line(&mut out, s.columns.iter().map(|c| c.1.to_owned()).collect());
        if layout == Layout::Columns {
            for (_, _, w) in &s.columns {
                out.push_str(&"-".repeat(w.unsigned_abs() as usize));
                out.push(' ');
            }
            out.push('\n');
        }
    }
    for r in rows {
        let cells = s
            .columns
            .iter()
            .map(|(f, _, w)| value(f, r, layout, w.unsigned_abs() as usize))
            .collect();
        line(&mut out, cells);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_as_c_prints_them() {
        assert_eq!(double(0.0, 10), "  0.000000");
        assert_eq!(double(599.5, 10), "599.500000");
        assert_eq!(double(3600.0, 10), " 3.600e+03");
        assert_eq!(double(0.25, 12), "    0.250000");
    }
}
