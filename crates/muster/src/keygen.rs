//! `muster keygen`: a new cluster key for `AuthType=auth/muster`.
//!
//! Where: the path given, else `AuthInfo=key=` of slurm.conf (`-f`,
//! `$SLURM_CONF` or /etc/slurm/slurm.conf, where one can be read), else
//! `auth::DEFAULT_KEY_PATH`. The key is 32 random bytes, mode 0600, owned
//! by `--owner`, else by slurm.conf's `SlurmUser` (the controller runs as
//! that user and must read it; the node daemons run as root). An existing
//! key is kept unless `--force`: replacing it cuts every daemon that still
//! holds the old one off the cluster until restarted with the new one.

use crate::args::KeygenArgs;
use std::path::{Path, PathBuf};

/// Where the key goes and who owns it, from the arguments and slurm.conf.
fn resolve(a: &KeygenArgs) -> Result<(PathBuf, Option<String>), String> {
    let conf_path = a.conf.clone().or_else(|| {
        let p = crate::logs::default_conf();
        p.exists().then_some(p)
    });
    let cfg = match &conf_path {
        Some(p) => Some(conf::load(p).map_err(|e| format!("{e}"))?.config),
        None => None,
    };
    let path = match (&a.path, &cfg) {
        (Some(p), _) => p.clone(),
        (None, Some(cfg)) => {
            let s = auth::AuthSettings::from_config(cfg).map_err(|e| e.to_string())?;
            if s.scheme == auth::Scheme::Munge {
                eprintln!(
                    "muster keygen: note: {} has AuthType={}; the key is used only with \
                     AuthType=auth/muster",
                    conf_path.as_deref().unwrap_or(Path::new("")).display(),
                    cfg.auth_type
                );
            }
            s.key_path
        }
        (None, None) => PathBuf::from(auth::DEFAULT_KEY_PATH),
    };
    let owner = a
        .owner
        .clone()
        .or_else(|| cfg.map(|c| c.slurm_user).filter(|u| !u.is_empty()));
    Ok((path, owner))
}

/// `muster keygen`; the exit status.
pub fn main(a: &KeygenArgs) -> i32 {
    match run(a) {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("muster keygen: error: {e}");
            1
        }
    }
}

fn run(a: &KeygenArgs) -> Result<String, String> {
    let (path, owner) = resolve(a)?;
    // The owner is resolved first: nothing is written for a user who does
    // not exist.
    let owner = match owner.as_deref() {
        None => None,
        Some(name) => Some(lookup(name)?),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let exists = path.symlink_metadata().is_ok();
    if exists && !a.force {
        return Err(format!(
            "{} exists; not overwritten (--force replaces it: every daemon must then be \
             restarted with the new key)",
            path.display()
        ));
    }
    let written = if exists {
        auth::replace_key(&path)
    } else {
        auth::create_key(&path)
    };
    written.map_err(|e| e.to_string())?;
    if let Some((name, uid, gid)) = &owner {
        nix::unistd::chown(
            &path,
            Some(nix::unistd::Uid::from_raw(*uid)),
            Some(nix::unistd::Gid::from_raw(*gid)),
        )
        .map_err(|e| format!("chown {name} {}: {e}", path.display()))?;
    }
    auth::load_key(&path).map_err(|e| e.to_string())?;
    Ok(format!(
        "wrote a new cluster key to {} (mode 0600{}); copy it to every host that runs \
         muster ctld or muster noded",
        path.display(),
        owner
            .map(|(n, _, _)| format!(", owner {n}"))
            .unwrap_or_default()
    ))
}

/// A user's name, uid and primary gid, by name or number.
fn lookup(name: &str) -> Result<(String, u32, u32), String> {
    let user = match name.parse::<u32>() {
        Ok(uid) => nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)),
        Err(_) => nix::unistd::User::from_name(name),
    };
    match user {
        Ok(Some(u)) => Ok((u.name, u.uid.as_raw(), u.gid.as_raw())),
        Ok(None) => Err(format!(
            "user {name:?} does not exist (create SlurmUser first, or pass --owner)"
        )),
        Err(e) => Err(format!("looking up user {name:?}: {e}")),
    }
}
