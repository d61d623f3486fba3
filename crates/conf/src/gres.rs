//! gres.conf: one line per device group (`NodeName=node[3-4] Name=gpu
//! Type=a100 File=/dev/nvidia[0-1] Cores=0-1`) plus global lines such as
//! `AutoDetect=off`, in the same syntax as slurm.conf.

use std::path::Path;

use crate::lex::{self, Pair};
use crate::parse::{expand, At, AtLike};
use crate::{ConfError, GresConf, Warning};

/// Keys of gres.conf(5) that muster reads but does not model.
const OTHER_KEYS: &[&str] = &["MultipleFiles"];

/// The values gres.conf(5) allows in `Flags`.
const FLAGS: &[&str] = &[
    "countonly",
    "env_uuid",
    "explicit",
    "one_sharing",
    "all_sharing",
    "nvidia_gpu_env",
    "amd_gpu_env",
    "intel_gpu_env",
    "opencl_env",
    "no_gpu_env",
];

/// The values gres.conf(5) allows for `AutoDetect`.
const AUTODETECT: &[&str] = &["off", "nvml", "nvidia", "rsmi", "oneapi"];

/// Parses gres.conf text; `origin` names the file in messages. A line
/// without `Name=` is only allowed to set `AutoDetect`, which then applies
/// to every line of the file that does not set its own.
pub fn parse_gres_conf(
    text: &str,
    origin: &Path,
) -> Result<(Vec<GresConf>, Vec<Warning>), ConfError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut global_autodetect: Option<String> = None;
    for logical in lex::logical_lines(text) {
        let at = At {
            file: origin,
            line: logical.line,
        };
        let pairs = lex::tokenize(&logical.text).map_err(|reason| ConfError::Syntax {
            file: origin.to_path_buf(),
            line: logical.line,
            reason,
        })?;
        let mut gres = GresConf {
            node_names: Vec::new(),
            name: String::new(),
            type_: None,
            files: Vec::new(),
            count: 0,
            cores: None,
            links: None,
            flags: Vec::new(),
            autodetect: None,
            line: logical.line,
        };
        let mut count = None;
        for Pair { key, value } in &pairs {
            match key.to_ascii_lowercase().as_str() {
                "nodename" => gres.node_names = expand(value, key, &at)?,
                "name" => {
                    if !valid_word(value) {
                        return Err(at.invalid_at(
                            key,
                            value,
                            "expected a GRES name such as gpu".to_string(),
                        ));
                    }
                    gres.name = value.clone();
                }
                "type" => {
                    if !valid_word(value) {
                        return Err(at.invalid_at(
                            key,
                            value,
                            "expected a GRES type such as a100".to_string(),
                        ));
                    }
                    gres.type_ = Some(value.clone());
                }
                "file" | "files" => gres.files = expand(value, key, &at)?,
                "count" => {
                    count = Some(parse_count(value).ok_or_else(|| {
                        at.invalid_at(
                            key,
                            value,
                            "expected a count, optionally with a K, M, G, T or P suffix"
                                .to_string(),
                        )
                    })?)
                }
                "cores" | "cpus" => {
                    if parse_id_list(value).is_none() {
                        return Err(at.invalid_at(
                            key,
                            value,
                            "expected core indexes such as 0-15,32".to_string(),
                        ));
                    }
                    gres.cores = Some(value.clone());
                }
                "links" => {
                    if value.split(',').any(|l| l.trim().parse::<i32>().is_err()) {
                        return Err(at.invalid_at(
                            key,
                            value,
                            "expected link counts such as -1,2,0,0".to_string(),
                        ));
                    }
                    gres.links = Some(value.clone());
                }
                "flags" => {
                    for flag in value.split(',').map(|f| f.trim().to_ascii_lowercase()) {
                        if !FLAGS.contains(&flag.as_str()) {
                            return Err(at.invalid_at(key, value, format!("unknown flag {flag}")));
                        }
                        if !gres.flags.contains(&flag) {
                            gres.flags.push(flag);
                        }
                    }
                }
                "autodetect" => {
                    let lower = value.to_ascii_lowercase();
                    if !AUTODETECT.contains(&lower.as_str()) {
                        return Err(at.invalid_at(
                            key,
                            value,
                            "expected off, nvml, nvidia, rsmi or oneapi".to_string(),
                        ));
                    }
                    gres.autodetect = Some(lower);
                }
                _ if OTHER_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) => {}
                _ => warnings.push(Warning {
                    file: origin.to_path_buf(),
                    line: logical.line,
                    message: format!("unknown key {key}"),
                }),
            }
        }
        if gres.name.is_empty() {
            if gres.autodetect.is_some() {
                global_autodetect = gres.autodetect;
                continue;
            }
            return Err(at.invalid_at("Name", "", "every gres.conf line needs Name=".to_string()));
        }
        gres.count = count.unwrap_or(if gres.files.is_empty() {
            1
        } else {
            gres.files.len() as u64
        });
        out.push(gres);
    }
    for gres in &mut out {
        if gres.autodetect.is_none() {
            gres.autodetect = global_autodetect.clone();
        }
    }
    Ok((out, warnings))
}

/// Warnings for gres.conf lines whose name `GresTypes` does not list
/// (slurmd ignores them).
pub fn check_against_types(gres: &[GresConf], gres_types: &[String], file: &Path) -> Vec<Warning> {
    gres.iter()
        .filter(|g| !gres_types.iter().any(|t| t.eq_ignore_ascii_case(&g.name)))
        .map(|g| Warning {
            file: file.to_path_buf(),
            line: g.line,
            message: format!("GRES {} is not listed in GresTypes, ignored", g.name),
        })
        .collect()
}

fn valid_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// A list of indexes with ranges, as `Cores=` takes them: `0-3,8,10-11`
/// (Slurm also accepts the brackets of a hostlist: `[0-3]`). None when
/// malformed or descending.
pub fn parse_id_list(text: &str) -> Option<Vec<u32>> {
    let text = text.trim();
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(item.parse().ok()?),
        }
    }
    Some(out)
}

/// A count with an optional binary suffix (gres.conf(5): K, M, G, T, P
/// multiply by 1024 each).
fn parse_count(value: &str) -> Option<u64> {
    let value = value.trim();
    let (digits, shift) = match value.chars().last()?.to_ascii_uppercase() {
        'K' => (&value[..value.len() - 1], 10),
        'M' => (&value[..value.len() - 1], 20),
        'G' => (&value[..value.len() - 1], 30),
        'T' => (&value[..value.len() - 1], 40),
        'P' => (&value[..value.len() - 1], 50),
        _ => (value, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1u64 << shift)
}
