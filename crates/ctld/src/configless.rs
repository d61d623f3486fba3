//! Configless mode (`SlurmctldParameters=enable_configless`): the
//! controller serves slurm.conf and the files beside it to node daemons
//! started with `--conf-server` (Slurm's REQUEST_CONFIG), over the same
//! authenticated protocol as every request. Any authenticated user may
//! ask: these files are readable by all users on a Slurm cluster too.
//!
//! Served: slurm.conf, every file it `Include`s (by its path relative to
//! slurm.conf's directory; an included file outside that directory is
//! refused, as the node could not place it), and those of [`BESIDE`] that
//! exist. The files are read at each request, so an edited file is served
//! at once (a node daemon fetches at its start).

use proto::{ConfigFile, CtldResponse, SlurmError};
use std::path::{Component, Path, PathBuf};
use tracing::warn;

/// The files beside slurm.conf that Slurm's controller serves in
/// configless mode, where they exist.
pub const BESIDE: &[&str] = &[
    "acct_gather.conf",
    "cgroup.conf",
    "cgroup_allowed_devices_file.conf",
    "ext_sensors.conf",
    "gres.conf",
    "helpers.conf",
    "job_container.conf",
    "mpi.conf",
    "oci.conf",
    "plugstack.conf",
    "topology.conf",
];

/// Whether `SlurmctldParameters` has `enable_configless`.
pub fn enabled(cfg: &conf::Config) -> bool {
    cfg.other.get("slurmctldparameters").is_some_and(|(_, v)| {
        v.split(',')
            .any(|f| f.trim().eq_ignore_ascii_case("enable_configless"))
    })
}

/// The answer to `GetConfig`: the files, or the refusal (logged).
pub fn answer(conf_path: Option<&Path>) -> CtldResponse {
    let Some(path) = conf_path else {
        return CtldResponse::Error(SlurmError::ConfiglessDisabled);
    };
    match files(path) {
        Ok(files) => CtldResponse::ConfigFiles(files),
        Err(why) => {
            warn!("cannot serve the configuration files (configless mode): {why}");
            CtldResponse::Error(SlurmError::NotSupported)
        }
    }
}

/// slurm.conf at `path` (first, named `slurm.conf`), the files it
/// includes and those of [`BESIDE`] that exist.
pub fn files(path: &Path) -> Result<Vec<ConfigFile>, String> {
    let dir = path.parent().unwrap_or_else(|| Path::new("/"));
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let text = read(path)?;
    let mut out = vec![ConfigFile {
        name: "slurm.conf".to_string(),
        text: text.clone(),
    }];
    let mut included: Vec<PathBuf> = Vec::new();
    let mut record = |p: &Path| {
        included.push(p.to_path_buf());
        std::fs::read_to_string(p)
    };
    conf::parse_str(&text, path, &mut record).map_err(|e| e.to_string())?;
    for p in included {
        let name = relative_name(dir, &p).ok_or_else(|| {
            format!(
                "{} is included by {} but is not in its directory {}: a node in configless \
                 mode could not place it (Include it by a path relative to slurm.conf)",
                p.display(),
                path.display(),
                dir.display()
            )
        })?;
        if out.iter().any(|f| f.name == name) {
            continue;
        }
        out.push(ConfigFile {
            name,
            text: read(&p)?,
        });
    }
    for name in BESIDE {
        let p = dir.join(name);
        match std::fs::read_to_string(&p) {
            Ok(text) => {
                if !out.iter().any(|f| f.name == *name) {
                    out.push(ConfigFile {
                        name: name.to_string(),
                        text,
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Ok(out)
}

/// `p` relative to `dir`, when it lies below it (no `..`).
fn relative_name(dir: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(dir).ok()?;
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    rel.to_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const BASE: &str = "ClusterName=c\nSlurmctldHost=h\nNodeName=n1 CPUs=1\n\
                        PartitionName=p Nodes=n1\n";

    #[test]
    fn serves_slurm_conf_its_includes_and_the_files_beside_it() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "slurm.conf",
            &format!("{BASE}Include parts/extra.conf\n"),
        );
        write(d.path(), "parts/extra.conf", "MinJobAge=30\n");
        write(d.path(), "gres.conf", "");
        write(d.path(), "cgroup.conf", "ConstrainCores=yes\n");
        write(d.path(), "slurmdbd.conf", "secret\n");
        let got = files(&d.path().join("slurm.conf")).unwrap();
        let names: Vec<&str> = got.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["slurm.conf", "parts/extra.conf", "cgroup.conf", "gres.conf"]
        );
        assert_eq!(got[1].text, "MinJobAge=30\n");
    }

    #[test]
    fn an_include_outside_the_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        write(other.path(), "x.conf", "MinJobAge=30\n");
        write(
            d.path(),
            "slurm.conf",
            &format!("{BASE}Include {}/x.conf\n", other.path().display()),
        );
        let err = files(&d.path().join("slurm.conf")).unwrap_err();
        assert!(err.contains("not in its directory"), "{err}");
    }

    #[test]
    fn disabled_is_slurms_refusal() {
        assert!(matches!(
            answer(None),
            CtldResponse::Error(SlurmError::ConfiglessDisabled)
        ));
        let cfg = |v: &str| {
            conf::parse_str(
                &format!("{BASE}SlurmctldParameters={v}\n"),
                Path::new("/x/slurm.conf"),
                &mut |_| Err(std::io::ErrorKind::NotFound.into()),
            )
            .unwrap()
            .config
        };
        assert!(enabled(&cfg("enable_configless")));
        assert!(enabled(&cfg("idle_on_node_suspend,enable_configless")));
        assert!(!enabled(&cfg("idle_on_node_suspend")));
    }
}
