//! Configless mode (`muster noded --conf-server HOST[:PORT]`, slurmd's
//! option): at start the daemon asks the controller there for slurm.conf
//! and the files beside it (`CtldRequest::GetConfig`, signed as
//! `--authinfo` says, since slurm.conf's `AuthInfo` is not there yet),
//! writes them into `<SlurmdSpoolDir>/conf-cache` and runs on that copy:
//! its jobs get `SLURM_CONF` pointing there.
//!
//! So that the commands run on this node find the configuration even
//! where a workflow tool strips `SLURM_CONF` from a job's environment,
//! `proto::CONF_CACHE_LINK` (`/run/muster/conf`) is made a link to the
//! cache: the client library reads `/run/muster/conf/slurm.conf` when
//! neither `SLURM_CONF` nor `/etc/slurm/slurm.conf` is there (as Slurm's
//! clients read `/run/slurm/conf`).
//!
//! The files are fetched at start, and again when the controller
//! reconfigures (`scontrol reconfigure` or SIGHUP: it sends
//! `NodeRequest::Reconfigure` to every node daemon), as slurmd does: the
//! cache then holds the controller's new files. The daemon's own settings
//! (its log, its spool) stay as it started with them until a restart.
//!
//! ```text
//!  --conf-server ctl --GetConfig--> ctld (enable_configless)
//!      <-- ConfigFiles -- slurm.conf, Includes, gres.conf, cgroup.conf, ...
//!  <spool>/conf-cache/{slurm.conf,...}  <-- /run/muster/conf (link)
//! ```

use super::setup::{host_port, now, own_identity, short_hostname};
use crate::options::NodedOptions;
use anyhow::Context;
use proto::{ConfigFile, CtldRequest, CtldResponse, SlurmError};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;
use tracing::{info, warn};

/// slurmctld's port, when `--conf-server` names none.
pub const DEFAULT_PORT: u16 = 6817;

/// The cache directory's name in the spool.
pub const CACHE_DIR: &str = "conf-cache";

/// How long one fetch waits for the controller.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest wait between two tries while the controller does not answer.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// `HOST[:PORT]` as an address to connect to.
pub fn server_addr(server: &str) -> String {
    let server = server.trim();
    if let Some(rest) = server.strip_prefix('[') {
        // [v6]:port or [v6]
        return match rest.split_once(']') {
            Some((host, port)) if port.starts_with(':') => format!("[{host}]{port}"),
            Some((host, _)) => host_port(host, DEFAULT_PORT),
            None => host_port(rest, DEFAULT_PORT),
        };
    }
    match server.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.parse::<u16>().is_ok() => {
            server.to_string()
        }
        _ => host_port(server, DEFAULT_PORT),
    }
}

/// Fetches the files from `opts.conf_server`, caches them, and returns the
/// cached slurm.conf's path. Tries until the controller answers; a refusal
/// (configless mode disabled there, authentication failed) is an error.
pub fn fetch_and_cache(opts: &NodedOptions, server: &str) -> anyhow::Result<PathBuf> {
    let addr = server_addr(server);
    let node_name = match &opts.node_name {
        Some(n) => n.clone(),
        None => short_hostname()?,
    };
    let settings = auth::AuthSettings::bootstrap(opts.authinfo.as_deref());
    let signer = settings.signer().with_context(|| {
        format!(
            "configless mode: cannot sign the request for the configuration \
             ({}; pass --authinfo key=PATH for auth/muster, or socket=PATH for munged)",
            match settings.scheme {
                auth::Scheme::Key => "auth/muster",
                auth::Scheme::Munge => "auth/munge",
            }
        )
    })?;
    let identity = own_identity(&node_name);
    let mut delay = Duration::from_secs(1);
    let files = loop {
        let credential = signer
            .sign(&identity, now())
            .context("configless mode: making a credential")?;
        let answer: Result<CtldResponse, rpc::RpcError> = rpc::call_blocking(
            &addr,
            identity.clone(),
            Some(credential),
            CtldRequest::GetConfig,
            TIMEOUT,
        );
        match answer {
            Ok(CtldResponse::ConfigFiles(files)) => break files,
            Ok(CtldResponse::Error(e)) => {
                let hint = match e {
                    SlurmError::ConfiglessDisabled => {
                        " (set SlurmctldParameters=enable_configless in the controller's \
                         slurm.conf and restart it)"
                    }
                    SlurmError::ProtocolAuthentication => {
                        " (the controller could not check this node's credential: same \
                         AuthType and key or munge.key on both hosts? see --authinfo)"
                    }
                    _ => "",
                };
                anyhow::bail!(
                    "configless mode: the controller at {addr} refused to send the \
                     configuration: {}{hint}",
                    e.as_slurm_str()
                );
            }
            Ok(other) => anyhow::bail!(
                "configless mode: unexpected answer from the controller at {addr}: {other:?}"
            ),
            Err(e) => {
                warn!(
                    "configless mode: cannot fetch the configuration from {addr}: {e}; \
                     retrying in {}s",
                    delay.as_secs()
                );
                std::thread::sleep(delay);
                delay = (delay * 2).min(RETRY_MAX);
            }
        }
    };
    let conf_text = files
        .iter()
        .find(|f| f.name == "slurm.conf")
        .map(|f| f.text.clone())
        .context("configless mode: the controller sent no slurm.conf")?;
    // Where the cache goes: this node's SlurmdSpoolDir in the fetched file.
    let mut include = |p: &Path| {
        files
            .iter()
            .find(|f| Path::new("/conf-cache").join(&f.name) == p)
            .map(|f| f.text.clone())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    };
    let loaded = conf::parse_str(
        &conf_text,
        Path::new("/conf-cache/slurm.conf"),
        &mut include,
    )
    .map_err(|e| anyhow::anyhow!("configless mode: the controller's {e}"))?;
    let cache = PathBuf::from(loaded.config.spool_dir_for(&node_name)).join(CACHE_DIR);
    write_cache(&cache, &files)?;
    info!(
        "configless mode: {} file(s) from {addr} in {}",
        files.len(),
        cache.display()
    );
    link_cache(&cache, Path::new(proto::CONF_CACHE_LINK));
    Ok(cache.join("slurm.conf"))
}

/// Writes `files` into `dir` (created 0755: the commands of every user on
/// the node read slurm.conf there), each file written beside and renamed
/// into place; files of an earlier fetch that the controller no longer
/// sends are removed.
pub fn write_cache(dir: &Path, files: &[ConfigFile]) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    let mut wanted = Vec::new();
    for f in files {
        let rel = Path::new(&f.name);
        if rel.as_os_str().is_empty()
            || rel.components().any(|c| !matches!(c, Component::Normal(_)))
        {
            anyhow::bail!(
                "configless mode: the controller sent a file named {:?}, outside the cache",
                f.name
            );
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let tmp = path.with_extension("muster-new");
        std::fs::write(&tmp, &f.text)
            .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)))
            .and_then(|()| std::fs::rename(&tmp, &path))
            .with_context(|| format!("writing {}", path.display()))?;
        wanted.push(path);
    }
    // Top-level files only: an old include in a subdirectory is harmless.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_file() && !wanted.contains(&p) {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
    Ok(())
}

/// Makes `link` a symbolic link to `cache` (replacing an older link),
/// warning where it cannot (not root, no /run): commands on this node then
/// need `SLURM_CONF` or /etc/slurm/slurm.conf.
pub fn link_cache(cache: &Path, link: &Path) {
    let result = (|| -> std::io::Result<()> {
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let tmp = link.with_extension("muster-new");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(cache, &tmp)?;
        // A rename replaces a link (not a directory) atomically.
        if link.is_dir() && !link.is_symlink() {
            std::fs::remove_dir_all(link)?;
        }
        std::fs::rename(&tmp, link)
    })();
    if let Err(e) = result {
        warn!(
            "configless mode: cannot link {} to {}: {e}; commands on this node without \
             SLURM_CONF will not find slurm.conf",
            link.display(),
            cache.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_default_to_slurmctlds_port() {
        assert_eq!(server_addr("ctl"), "ctl:6817");
        assert_eq!(server_addr("ctl:7000"), "ctl:7000");
        assert_eq!(server_addr("10.0.0.1"), "10.0.0.1:6817");
        assert_eq!(server_addr("[fe80::1]:7000"), "[fe80::1]:7000");
        assert_eq!(server_addr("fe80::1"), "[fe80::1]:6817");
    }

    #[test]
    fn the_cache_holds_what_was_sent_and_nothing_else() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("spool/conf-cache");
        let f = |name: &str, text: &str| ConfigFile {
            name: name.into(),
            text: text.into(),
        };
        write_cache(&cache, &[f("slurm.conf", "A=1\n"), f("gres.conf", "")]).unwrap();
        write_cache(
            &cache,
            &[f("slurm.conf", "A=2\n"), f("parts/x.conf", "B=1\n")],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(cache.join("slurm.conf")).unwrap(),
            "A=2\n"
        );
        assert!(!cache.join("gres.conf").exists());
        assert_eq!(
            std::fs::read_to_string(cache.join("parts/x.conf")).unwrap(),
            "B=1\n"
        );
        let mode = std::fs::metadata(cache.join("slurm.conf"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        assert!(write_cache(&cache, &[f("../evil", "")]).is_err());
        assert!(write_cache(&cache, &[f("/etc/evil", "")]).is_err());
        // The link, made and then replaced.
        let link = d.path().join("run/conf");
        link_cache(&cache, &link);
        assert_eq!(std::fs::read_link(&link).unwrap(), cache);
        let other = d.path().join("other");
        link_cache(&other, &link);
        assert_eq!(std::fs::read_link(&link).unwrap(), other);
    }
}
