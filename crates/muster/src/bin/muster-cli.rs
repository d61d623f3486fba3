//! The Slurm user commands alone (`sbatch`, `squeue`, ...), without the
//! daemons, the local cluster and the simulator: a much smaller program, so
//! a command starts in a fraction of the time the whole `muster` binary
//! takes (fewer pages to map and relocate). `muster install-links DIR`
//! points the command names here when it lies beside `muster`.
//!
//! Called by a command name (a link), or as `muster-cli <command> ...`.
//!
//! Where the C library's static archives were installed at build time it
//! is linked statically (build.rs), which makes a command start as fast as
//! `/bin/true`; built against musl (`cargo xtask cli-musl`), in half that
//! time, without glibc's start-up and its CPU probes. A static C library resolves users, groups and host names
//! only from files and DNS, and cannot load libmunge: where the system or
//! the cluster needs more (`needs_dynamic`), the command is handed over
//! to the dynamically linked `muster` beside this binary, which runs every
//! command the same way.

use std::path::Path;

fn main() {
    // Listing commands exit quietly when their reader goes away (`squeue | head`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut args: Vec<String> = std::env::args().collect();
    let argv0 = if args.is_empty() {
        String::new()
    } else {
        args.remove(0)
    };
    let name = Path::new(&argv0)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string();
    #[cfg(static_cli)]
    if let Some(why) = needs_dynamic() {
        hand_over(&argv0, &args, why);
    }
    if let Some(code) = cli::dispatch(&name, args.clone()) {
        std::process::exit(code);
    }
    let code = cli::dispatch_by_word(&args);
    std::process::exit(code);
}

/// Name services a static glibc has built in (`files`, `dns`), and the
/// local ones (systemd's dynamic users, the own host name, resolved,
/// containers, and nss-mdns's `_minimal` modules, which answer only for
/// `.local` names and link-local addresses: Debian's and Ubuntu's hosts
/// line with libnss-mdns installed is `files mdns4_minimal
/// [NOTFOUND=return] dns`) that it may still load from the same glibc's
/// shared modules and that only answer for names no HPC user or
/// controller has. Where a static program cannot load one, the lookup
/// goes on to the next source as it would with the module's daemon
/// down. Any other source (sss, ldap, winbind, nis, compat, the full
/// mdns modules, ...) needs the dynamic loader.
#[cfg(any(static_cli, test))]
const STATIC_SOURCES: &[&str] = &[
    "files",
    "dns",
    "systemd",
    "myhostname",
    "resolve",
    "mymachines",
    "mdns_minimal",
    "mdns4_minimal",
    "mdns6_minimal",
];

/// Why this statically linked command cannot do its work itself, if so:
/// `/etc/nsswitch.conf` names a source for users, groups or hosts beyond
/// [`STATIC_SOURCES`], or the cluster's slurm.conf says `AuthType=auth/munge`
/// (Slurm's default), whose libmunge is loaded at run time.
#[cfg(static_cli)]
fn needs_dynamic() -> Option<String> {
    if let Ok(text) = std::fs::read_to_string("/etc/nsswitch.conf") {
        if let Some(source) = foreign_source(&text) {
            return Some(format!("name service {source:?}"));
        }
    }
    let path = client::find_config()?;
    let text = std::fs::read_to_string(&path).ok()?;
    // From the main file alone where it can tell: the whole parse costs
    // more than the rest of `sbatch --version`.
    let auth_type = match conf::main_file_value(&text, "AuthType") {
        Some(value) => value.unwrap_or_else(|| auth::AUTH_MUNGE.to_string()),
        None => {
            // An included file may set it: the whole configuration, as the
            // command reads it. A broken slurm.conf is the command's to report.
            let mut read = |p: &Path| std::fs::read_to_string(p);
            conf::parse_str(&text, &path, &mut read)
                .ok()?
                .config
                .auth_type
        }
    };
    auth_type
        .eq_ignore_ascii_case(auth::AUTH_MUNGE)
        .then(|| "AuthType=auth/munge".to_string())
}

/// The first source of the `passwd`, `group`, `initgroups` or `hosts` lines
/// of an nsswitch.conf that is not in [`STATIC_SOURCES`]. Actions in
/// brackets (`[NOTFOUND=return]`) are not sources.
#[cfg(any(static_cli, test))]
fn foreign_source(nsswitch: &str) -> Option<String> {
    for line in nsswitch.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((db, sources)) = line.split_once(':') else {
            continue;
        };
        if !matches!(db.trim(), "passwd" | "group" | "initgroups" | "hosts") {
            continue;
        }
        let mut in_action = false;
        for word in sources.split_whitespace() {
            if word.starts_with('[') {
                in_action = true;
            }
            if in_action {
                in_action = !word.ends_with(']');
                continue;
            }
            if !STATIC_SOURCES.contains(&word) {
                return Some(word.to_string());
            }
        }
    }
    None
}

/// Runs the same command line with the dynamically linked `muster` beside
/// this binary (same `argv[0]`, so it dispatches the same way). Returns only
/// where there is none or it cannot be executed, with a warning; the
/// command then runs here as well as a static C library lets it.
#[cfg(static_cli)]
fn hand_over(argv0: &str, args: &[String], why: String) {
    use std::os::unix::process::CommandExt;
    let dynamic = match std::env::current_exe() {
        Ok(me) => me.with_file_name("muster"),
        Err(e) => {
            eprintln!("muster-cli: warning: {why} needs the dynamically linked muster: {e}");
            return;
        }
    };
    let err = std::process::Command::new(&dynamic)
        .arg0(argv0)
        .args(args)
        .exec();
    eprintln!(
        "muster-cli: warning: {why} needs the dynamically linked {}: {err}",
        dynamic.display()
    );
}

#[cfg(test)]
mod tests {
    use super::foreign_source;

    #[test]
    fn name_services_a_static_libc_can_serve() {
        let debian = "# comment: sss\npasswd:         files systemd\ngroup:          files systemd\nshadow:         files systemd\nhosts:          files dns\nnetgroup:       nis\n";
        assert_eq!(foreign_source(debian), None);
        // Debian's and Ubuntu's with libnss-mdns: `.local` names only.
        let ubuntu = "hosts: files mdns4_minimal [NOTFOUND=return] dns\n";
        assert_eq!(foreign_source(ubuntu), None);
        let full_mdns = "hosts: files mdns4 dns\n";
        assert_eq!(foreign_source(full_mdns).as_deref(), Some("mdns4"));
        let fedora =
            "hosts: files myhostname resolve [!UNAVAIL=return] dns\npasswd: files sss systemd\n";
        assert_eq!(foreign_source(fedora).as_deref(), Some("sss"));
        let actions =
            "group: files [SUCCESS=merge] systemd\ninitgroups: files [ NOTFOUND=return ] ldap\n";
        assert_eq!(foreign_source(actions).as_deref(), Some("ldap"));
        assert_eq!(
            foreign_source("passwd: compat\n").as_deref(),
            Some("compat")
        );
        assert_eq!(foreign_source(""), None);
    }
}
