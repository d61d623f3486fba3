//! The job's environment, from `--export` (`sbatch(1)`):
//!
//! - not given, or `ALL`: the whole submitting environment;
//! - `NONE`: none of the user's variables, only the `SLURM_*` ones (the
//!   controller and the node add the job's own `SLURM_*` variables later);
//! - a list such as `ALL,FOO=1,BAR` or `FOO=1,BAR`: each item in order, where
//!   `ALL` adds the whole environment, `NAME=value` sets a value and `NAME`
//!   copies the submitting environment's value. Without `ALL` only the listed
//!   variables (and, as with `NONE`, the `SLURM_*` ones) reach the job.
//!
//! `--export-file` starts the environment from a file of `NAME=value` entries
//! separated by NULs or newlines; the submitting environment is then not used,
//! as in Slurm, where sbatch clears it once the file is read.

/// Resolves the job's environment. `env` is sbatch's own environment
/// (including the `SLURM_SUBMIT_*` variables sbatch sets);
/// `from_file` the entries of `--export-file`.
pub fn resolve(
    export: Option<&str>,
    env: &[(String, String)],
    from_file: Option<Vec<(String, String)>>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let base: Vec<(String, String)> = match &from_file {
        // The file replaces the submitting environment; only what sbatch set
        // itself (the `SLURM_*` bookkeeping variables) survives.
        Some(_) => env
            .iter()
            .filter(|(k, _)| is_sbatch_own(k))
            .cloned()
            .collect(),
        None => env.to_vec(),
    };
    if let Some(entries) = from_file {
        for (k, v) in entries {
            set(&mut out, &k, &v);
        }
    }
    match export {
        None => merge_all(&mut out, &base),
        Some(spec) if spec.eq_ignore_ascii_case("ALL") => merge_all(&mut out, &base),
        Some(spec) if spec.eq_ignore_ascii_case("NONE") => merge_slurm(&mut out, &base),
        Some(spec) => {
            for item in split_list(spec) {
                if item.eq_ignore_ascii_case("ALL") {
                    merge_all(&mut out, &base);
                } else if item.eq_ignore_ascii_case("NONE") {
                    // NONE in a list only means "not ALL".
                } else if let Some((name, value)) = item.split_once('=') {
                    set(&mut out, name, value);
                } else if let Some((_, value)) = base.iter().find(|(k, _)| *k == item) {
                    set(&mut out, &item, value);
                }
            }
            merge_slurm(&mut out, &base);
        }
    }
    out
}

/// Parses an `--export-file`: `NAME=value` entries separated by NUL bytes
/// (as `env -0` writes them) or, when there is no NUL, by newlines.
pub fn parse_export_file(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    let sep = if bytes.contains(&0) { '\0' } else { '\n' };
    text.split(sep)
        .filter_map(|entry| entry.split_once('='))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Variables sbatch itself puts into its environment before capturing it.
fn is_sbatch_own(name: &str) -> bool {
    matches!(
        name,
        "SLURM_SUBMIT_DIR" | "SLURM_SUBMIT_HOST" | "SLURM_PRIO_PROCESS" | "SLURM_UMASK"
    )
}

/// Splits a `--export` list at commas that are not inside quotes; quotes
/// around a value are removed (`FOO="a,b"`).
fn split_list(spec: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in spec.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, ',') => {
                if !cur.is_empty() {
                    items.push(std::mem::take(&mut cur));
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        items.push(cur);
    }
    items
}

fn set(out: &mut Vec<(String, String)>, name: &str, value: &str) {
    match out.iter_mut().find(|(k, _)| k == name) {
        Some(entry) => entry.1 = value.to_string(),
        None => out.push((name.to_string(), value.to_string())),
    }
}

fn merge_all(out: &mut Vec<(String, String)>, env: &[(String, String)]) {
    for (k, v) in env {
        set(out, k, v);
    }
}

fn merge_slurm(out: &mut Vec<(String, String)>, env: &[(String, String)]) {
    for (k, v) in env.iter().filter(|(k, _)| k.starts_with("SLURM_")) {
        set(out, k, v);
    }
}
