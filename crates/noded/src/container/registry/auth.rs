//! Registry authentication as enroot does it: a `401` names a scheme in
//! `WWW-Authenticate`; `Bearer realm=...,service=...,scope=...` means a
//! token from the realm (anonymous, or with the credentials the user keeps
//! for the realm's host), `Basic` means the credentials themselves.
//! Credentials come from enroot's file, `$ENROOT_CONFIG_PATH/.credentials`
//! (netrc: `machine HOST login USER password PASS`).

use std::path::Path;

/// What a `401` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Challenge {
    /// A token from `realm` for `service` and `scope`.
    Bearer {
        /// Where tokens come from.
        realm: String,
        /// The registry's name for itself.
        service: Option<String>,
        /// What the token must allow.
        scope: Option<String>,
    },
    /// The credentials on every request.
    Basic,
}

/// Parses a `WWW-Authenticate` value.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    Some(Challenge::Bearer {
        realm: get("realm")?,
        service: get("service"),
        scope: get("scope"),
    })
}

/// `k="v",k2=v2` (values quoted or not; a quoted one may hold commas).
fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.next().is_none() {
            break;
        }
        let mut val = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            val.push(n);
                        }
                    }
                    '"' => break,
                    _ => val.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                val.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), val.trim().to_string()));
    }
    out
}

/// One `machine` entry of a netrc file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetrcEntry {
    /// The host (None: `default`).
    pub machine: Option<String>,
    /// The login.
    pub login: String,
    /// The password.
    pub password: String,
}

/// Parses netrc text (`machine`, `default`, `login`, `password`; `macdef`
/// and `account` are skipped).
pub fn parse_netrc(text: &str) -> Vec<NetrcEntry> {
    let mut out: Vec<NetrcEntry> = Vec::new();
    let mut words = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(str::split_whitespace);
    let mut current: Option<NetrcEntry> = None;
    while let Some(w) = words.next() {
        match w {
            "machine" | "default" => {
                out.extend(current.take());
                let machine = if w == "machine" {
                    words.next().map(str::to_string)
                } else {
                    None
                };
                current = Some(NetrcEntry {
                    machine,
                    login: String::new(),
                    password: String::new(),
                });
            }
            "login" => {
                if let (Some(c), Some(v)) = (current.as_mut(), words.next()) {
                    c.login = v.to_string();
                }
            }
            "password" => {
                if let (Some(c), Some(v)) = (current.as_mut(), words.next()) {
                    c.password = v.to_string();
                }
            }
            "account" => {
                words.next();
            }
            _ => {}
        }
    }
    out.extend(current);
    out
}

/// The credentials for `host` (`host:port` matches the entry for either
/// form, as curl's netrc does by host name), limited to `login` when the
/// image reference named a user.
pub fn lookup<'a>(
    entries: &'a [NetrcEntry],
    authority: &str,
    login: Option<&str>,
) -> Option<&'a NetrcEntry> {
    let host = match authority.strip_prefix('[').and_then(|a| a.find(']')) {
        // `[::1]:5000`: the bracketed address.
        Some(end) => &authority[..end + 2],
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let fits = |e: &&NetrcEntry| login.map_or(true, |l| e.login == l);
    entries
        .iter()
        .filter(fits)
        .find(|e| e.machine.as_deref() == Some(authority))
        .or_else(|| {
            entries
                .iter()
                .filter(fits)
                .find(|e| e.machine.as_deref() == Some(host))
        })
        .or_else(|| entries.iter().filter(fits).find(|e| e.machine.is_none()))
}

/// Reads the user's credentials file as the user would: the node runs as
/// root, so for another user the file is read by a `/bin/cat` run as that user
/// (its uid and primary group, no other groups), and the kernel decides,
/// links and directories included. A path that is only a link of the
/// user's to another user's file gives nothing, as it would to the user.
pub fn read_credentials(path: &Path, (uid, gid): (u32, u32)) -> Vec<NetrcEntry> {
    let me = nix::unistd::geteuid().as_raw();
    let text = if uid == 0 || uid == me {
        std::fs::read_to_string(path).ok()
    } else {
        read_as(path, uid, gid)
    };
    text.map(|t| parse_netrc(&t)).unwrap_or_default()
}

/// The text of `path` as `(uid, gid)` may read it, or None.
fn read_as(path: &Path, uid: u32, gid: u32) -> Option<String> {
    use std::os::unix::process::CommandExt;
    let out = std::process::Command::new("/bin/cat")
        .arg("--")
        .arg(path)
        .uid(uid)
        .gid(gid)
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
