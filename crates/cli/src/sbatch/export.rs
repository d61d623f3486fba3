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

/// Whether `--export=SPEC` leaves the submitting environment out (`NONE`,
/// or a list without `ALL`): the job then starts from the user's login
/// environment (`login_env`) and gets `SLURM_EXPORT_ENV=SPEC`, as Slurm's
/// does.
pub fn leaves_out_environment(spec: &str) -> bool {
    !split_list(spec)
        .iter()
        .any(|item| item.eq_ignore_ascii_case("ALL"))
}

/// The search path a login shell starts with: Debian's `/etc/profile`
/// (root's, with the `sbin` directories, and everyone else's).
const ROOT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const USER_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games";

/// The user's basic login environment (what `su - USER` starts with):
/// what a job exported with `NONE` or a list without `ALL` starts from,
/// before its listed variables and the `SLURM_*` ones. Slurm runs the
/// user's login shell for it (`--get-user-env`); muster takes the passwd
/// entry's values and the system's default path, not the user's dot files.
pub fn login_env(user: &str, uid: u32, home: &str, shell: &str) -> Vec<(String, String)> {
    let path = if uid == 0 { ROOT_PATH } else { USER_PATH };
    [
        ("HOME", home.to_string()),
        ("LOGNAME", user.to_string()),
        ("MAIL", format!("/var/mail/{user}")),
        ("PATH", path.to_string()),
        ("SHELL", shell.to_string()),
        ("USER", user.to_string()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The job's environment for `--export=SPEC` that leaves the submitting
/// one out: `login` first, then what `resolve` kept (which wins), then
/// `SLURM_EXPORT_ENV` and `SLURM_GET_USER_ENV`.
pub fn from_login(
    spec: &str,
    login: Vec<(String, String)>,
    resolved: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut out = login;
    for (k, v) in &resolved {
        set(&mut out, k, v);
    }
    set(&mut out, "SLURM_EXPORT_ENV", spec);
    set(&mut out, "SLURM_GET_USER_ENV", "1");
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
