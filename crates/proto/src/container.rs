//! pyxis's container options (`--container-image`, `--container-mounts`,
//! ...) as they travel: a list of `(option, value)` pairs in the job's
//! description and the step's launch (append-only on the wire, and a new
//! pyxis option needs no new field), parsed here into [`ContainerOptions`]
//! by the commands (to refuse a bad spec before submitting) and by the node
//! (to run it). Errors read as pyxis's do: `pyxis: ...`.
//!
//! The meanings are pyxis's (its README and `args.c`, summarised in
//! docs/containers.md): options left out take the site's defaults (the
//! node's `pyxis.conf`), not these.

/// The options, long names without `--`, as sbatch, srun and salloc
/// accept them; each also reads Slurm's SPANK form
/// (`SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image`) and pyxis's
/// `PYXIS_CONTAINER_<NAME>` (upper case, `-` as `_`) from the environment
/// where the option is not given ([`env_pairs`]).
pub const OPTIONS: &[&str] = &[
    "container-image",
    "container-mounts",
    "container-workdir",
    "container-name",
    "container-save",
    "container-mount-home",
    "no-container-mount-home",
    "container-remap-root",
    "no-container-remap-root",
    "container-writable",
    "container-readonly",
    "container-env",
    "container-entrypoint",
    "no-container-entrypoint",
    "container-entrypoint-log",
];

/// The options that take no value (the others need one).
pub const FLAGS: &[&str] = &[
    "container-mount-home",
    "no-container-mount-home",
    "container-remap-root",
    "no-container-remap-root",
    "container-writable",
    "container-readonly",
    "container-entrypoint",
    "no-container-entrypoint",
    "container-entrypoint-log",
];

/// The environment variable pyxis reads for `option` where the flag is
/// absent: `PYXIS_CONTAINER_IMAGE` for `container-image`.
pub fn env_name(option: &str) -> String {
    let base = match option.trim_start_matches("no-") {
        "container-readonly" => "container-writable",
        other => other,
    };
    let mut name = String::from("PYXIS_");
    name.push_str(&base.replace('-', "_").to_ascii_uppercase());
    name
}

/// Checks one option's value alone (`pyxis: ...` where it is bad).
pub fn check(option: &str, value: &str) -> Result<(), String> {
    ContainerOptions::from_pairs(&[
        ("container-image".to_string(), "-".to_string()),
        (option.to_string(), value.to_string()),
    ])
    .map(|_| ())
}

/// The name Slurm gives a SPANK option of pyxis's in the environment:
/// `_SLURM_SPANK_OPTION_pyxis_container_image` for `container-image`
/// (Slurm's `_opt_env_name`: the plugin's name and the option's, every
/// character other than a letter or digit as `_`).
pub fn spank_option_name(option: &str) -> String {
    let mut name = String::from("_SLURM_SPANK_OPTION_pyxis_");
    name.extend(
        option
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
    );
    name
}

/// The variable sbatch, salloc and srun read a SPANK option from, and the
/// one sbatch and salloc set for the options they were given (Slurm's
/// `SLURM_SPANK_` before [`spank_option_name`]):
/// `SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image`. The batch
/// script and salloc's command see it, and so every srun they start reads
/// it: the allocation's container options reach its steps.
pub fn spank_env_name(option: &str) -> String {
    format!("SLURM_SPANK_{}", spank_option_name(option))
}

/// The `SLURM_SPANK_*` variables for the options `pairs` (the job's, as
/// sbatch and salloc were given them): a flag's value is empty.
pub fn spank_env(pairs: &[(String, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter(|(k, _)| OPTIONS.contains(&k.as_str()))
        .map(|(k, v)| (spank_env_name(k), v.clone()))
        .collect()
}

/// The options the environment gives (through `get`), for those not in
/// `given`: pairs to put before the command line's. As in Slurm and
/// pyxis, the command line wins over Slurm's SPANK form
/// ([`spank_env_name`]: a value option's value; a flag is given where its
/// variable is set at all, whatever its value), and that wins over
/// pyxis's `PYXIS_CONTAINER_*` (a yes/no variable,
/// `PYXIS_CONTAINER_WRITABLE=1`, picks the option or its `no-` form:
/// `--container-readonly` for `WRITABLE=0`; `PYXIS_CONTAINER_READONLY=1`
/// is `--container-readonly`).
pub fn env_pairs(given: &[&str], get: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let opposite = |o: &str| -> Option<&'static str> {
        match o {
            "container-writable" => Some("container-readonly"),
            "container-readonly" => Some("container-writable"),
            // `no-X` for X and X for `no-X`, compared without building
            // either (sbatch calls this for every submission).
            _ => OPTIONS
                .iter()
                .copied()
                .find(|n| n.strip_prefix("no-") == Some(o) || o.strip_prefix("no-") == Some(*n)),
        }
    };
    let taken = |o: &str, given: &[&str], out: &[(String, String)]| {
        let other = opposite(o);
        let has = |n: &str| given.contains(&n) || out.iter().any(|(k, _)| k == n);
        has(o) || other.is_some_and(has)
    };
    // Slurm's SPANK forms: every option, the `no-` ones included.
    let mut spank: Vec<(String, String)> = Vec::new();
    for option in OPTIONS {
        if taken(option, given, &[]) {
            continue;
        }
        let Some(value) = get(&spank_env_name(option)) else {
            continue;
        };
        if FLAGS.contains(option) {
            spank.push((option.to_string(), String::new()));
        } else if !value.is_empty() {
            spank.push((option.to_string(), value));
        }
    }
    out.extend(spank);
    // pyxis's own variables, for what is still not given.
    for option in OPTIONS {
        if option.starts_with("no-") || *option == "container-readonly" {
            continue;
        }
        if taken(option, given, &out) {
            continue;
        }
        let other = opposite(option);
        let mut var = get(&env_name(option)).filter(|v| !v.is_empty());
        let mut yes_means = *option;
        let mut no_means = other;
        if var.is_none() && *option == "container-writable" {
            // PYXIS_CONTAINER_READONLY, read where WRITABLE is not set.
            var = get("PYXIS_CONTAINER_READONLY").filter(|v| !v.is_empty());
            yes_means = "container-readonly";
            no_means = Some("container-writable");
        }
        let Some(value) = var else {
            continue;
        };
        if FLAGS.contains(option) {
            let yes = !matches!(
                value.to_ascii_lowercase().as_str(),
                "0" | "no" | "n" | "false" | "off"
            );
            match (yes, no_means) {
                (true, _) => out.push((yes_means.to_string(), String::new())),
                (false, Some(o)) => out.push((o.to_string(), String::new())),
                (false, None) => {}
            }
        } else {
            out.push((option.to_string(), value));
        }
    }
    out
}

/// How `--container-name` reuses a container (pyxis's `NAME:FLAG`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameMode {
    /// Reuse the container if it exists, else create it.
    #[default]
    Auto,
    /// Create it; an error where it exists.
    Create,
    /// Join the running container's namespaces; an error where none runs.
    Exec,
    /// Reuse its file system but start fresh namespaces.
    NoExec,
}

/// One `--container-mounts` entry: `SRC[:DST[:FLAGS]]`, flags joined
/// with `+`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// A host path, or `tmpfs` for a fresh tmpfs at `dst`.
    pub src: String,
    /// The path inside the container (absolute; `src` where not given).
    pub dst: String,
    /// Read-only (`ro`).
    pub read_only: bool,
    /// The other flags (`rbind`, `rprivate`, ...), kept as given.
    pub flags: Vec<String>,
}

/// The mount flags pyxis passes to enroot that this runtime honours or
/// accepts as the default it already applies.
const MOUNT_FLAGS: &[&str] = &[
    "ro",
    "rw",
    "bind",
    "rbind",
    "private",
    "rprivate",
    "slave",
    "rslave",
    "shared",
    "rshared",
    "nosuid",
    "nodev",
    "noexec",
    "x-create=auto",
    "x-create=dir",
    "x-create=file",
];

impl Mount {
    /// `--container-mounts`' value: entries separated by commas.
    pub fn parse_list(text: &str) -> Result<Vec<Mount>, String> {
        let mut out = Vec::new();
        for entry in text.split(',') {
            if entry.trim().is_empty() {
                continue;
            }
            out.push(Mount::parse(entry.trim())?);
        }
        Ok(out)
    }

    /// One `SRC[:DST[:FLAGS]]` entry.
    pub fn parse(entry: &str) -> Result<Mount, String> {
        let bad = || {
            format!(
                "pyxis: mount source must be an absolute or relative path, or \"tmpfs\": {entry}"
            )
        };
        let parts: Vec<&str> = entry.split(':').collect();
        if parts.len() > 3 || parts[0].is_empty() {
            return Err(format!("pyxis: could not parse mount: {entry}"));
        }
        let src = parts[0].to_string();
        if src != "tmpfs" && !src.starts_with('/') && !src.starts_with('.') {
            return Err(bad());
        }
        let dst = match parts.get(1) {
            Some(d) if !d.is_empty() => d.to_string(),
            Some(_) => return Err(format!("pyxis: could not parse mount: {entry}")),
            None if src == "tmpfs" => return Err(format!("pyxis: could not parse mount: {entry}")),
            None => src.clone(),
        };
        if !dst.starts_with('/') {
            return Err(format!(
                "pyxis: mount destination must be an absolute path: {entry}"
            ));
        }
        let mut m = Mount {
            src,
            dst,
            ..Mount::default()
        };
        if let Some(flags) = parts.get(2) {
            for f in flags.split('+').filter(|f| !f.is_empty()) {
                if !MOUNT_FLAGS.contains(&f) {
                    return Err(format!("pyxis: invalid mount flag \"{f}\" in: {entry}"));
                }
                match f {
                    "ro" => m.read_only = true,
                    "rw" => m.read_only = false,
                    other => m.flags.push(other.to_string()),
                }
            }
        }
        Ok(m)
    }

    /// The source made absolute against `cwd` (relative sources are the
    /// job's working directory's, as pyxis resolves them on the node).
    pub fn absolute_src(&self, cwd: &str) -> String {
        if self.src.starts_with('/') || self.src == "tmpfs" {
            self.src.clone()
        } else {
            let rel = self.src.trim_start_matches("./");
            format!("{}/{}", cwd.trim_end_matches('/'), rel)
        }
    }
}

/// A step's (or a batch script's) container request, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerOptions {
    /// `--container-image`: a squashfs file, an OCI layout directory, a
    /// docker-archive tarball, or a registry reference
    /// `[USER@][REGISTRY#]IMAGE[:TAG]`.
    pub image: Option<String>,
    /// `--container-mounts`.
    pub mounts: Vec<Mount>,
    /// `--container-workdir`.
    pub workdir: Option<String>,
    /// `--container-name`: the name and how it is reused.
    pub name: Option<(String, NameMode)>,
    /// `--container-save`: where to write the container's file system as
    /// squashfs when the step ends.
    pub save: Option<String>,
    /// `--container-mount-home` / `--no-...`; None: the site's default.
    pub mount_home: Option<bool>,
    /// `--container-remap-root` / `--no-...`; None: the site's default.
    pub remap_root: Option<bool>,
    /// `--container-writable` (true) / `--container-readonly` (false);
    /// None: the site's default.
    pub writable: Option<bool>,
    /// `--container-env`: host variables that win over the image's.
    pub env: Vec<String>,
    /// `--container-entrypoint` / `--no-...`; None: the site's default.
    pub entrypoint: Option<bool>,
    /// `--container-entrypoint-log`: the entrypoint's output is shown.
    pub entrypoint_log: bool,
}

impl ContainerOptions {
    /// Parses the pairs a job or step carries (later pairs win).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<ContainerOptions, String> {
        let mut o = ContainerOptions::default();
        for (k, v) in pairs {
            match k.as_str() {
                "container-image" => {
                    if v.is_empty() {
                        return Err("pyxis: --container-image: empty image".into());
                    }
                    o.image = Some(v.clone());
                }
                "container-mounts" => o.mounts = Mount::parse_list(v)?,
                "container-workdir" => {
                    if !v.starts_with('/') {
                        return Err(format!(
                            "pyxis: --container-workdir must be an absolute path: {v}"
                        ));
                    }
                    o.workdir = Some(v.clone());
                }
                "container-name" => {
                    let (name, flag) = match v.split_once(':') {
                        Some((n, f)) => (n, Some(f)),
                        None => (v.as_str(), None),
                    };
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                    {
                        return Err(format!("pyxis: invalid container name: {v}"));
                    }
                    let mode = match flag {
                        None | Some("auto") => NameMode::Auto,
                        Some("create") => NameMode::Create,
                        Some("exec") => NameMode::Exec,
                        Some("no_exec") => NameMode::NoExec,
                        Some(f) => {
                            return Err(format!("pyxis: --container-name: unknown flag: {f}"))
                        }
                    };
                    o.name = Some((name.to_string(), mode));
                }
                "container-save" => {
                    if v.is_empty() {
                        return Err("pyxis: --container-save: empty path".into());
                    }
                    o.save = Some(v.clone());
                }
                "container-mount-home" => o.mount_home = Some(true),
                "no-container-mount-home" => o.mount_home = Some(false),
                "container-remap-root" => o.remap_root = Some(true),
                "no-container-remap-root" => o.remap_root = Some(false),
                "container-writable" => o.writable = Some(true),
                "container-readonly" => o.writable = Some(false),
                "container-env" => {
                    o.env = v
                        .split(',')
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .map(str::to_string)
                        .collect();
                }
                "container-entrypoint" => o.entrypoint = Some(true),
                "no-container-entrypoint" => o.entrypoint = Some(false),
                "container-entrypoint-log" => o.entrypoint_log = true,
                other => return Err(format!("pyxis: unknown option --{other}")),
            }
        }
        if o.image.is_none() && o.name.is_none() && !pairs.is_empty() {
            // pyxis: the other options mean nothing without an image or a
            // named container to run.
            return Err("pyxis: --container-image or --container-name is required".into());
        }
        Ok(o)
    }

    /// What `scontrol show job` and `sacct` show as `Container`: the
    /// image, else the container's name.
    pub fn shown(pairs: &[(String, String)]) -> Option<String> {
        let find = |k: &str| pairs.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v);
        find("container-image")
            .or_else(|| find("container-name"))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// An environment of these `(name, value)` pairs, as `env_pairs` reads one.
    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn environment_stands_for_options_not_given() {
        let all: &[(&str, &str)] = &[
            ("PYXIS_CONTAINER_IMAGE", "ubuntu"),
            ("PYXIS_CONTAINER_MOUNT_HOME", "1"),
            ("PYXIS_CONTAINER_WRITABLE", "0"),
            ("PYXIS_CONTAINER_ENTRYPOINT", "no"),
            ("PYXIS_CONTAINER_NAME", ""),
        ];
        assert_eq!(
            env_pairs(&[], env(all)),
            pairs(&[
                ("container-image", "ubuntu"),
                ("container-mount-home", ""),
                ("container-readonly", ""),
                ("no-container-entrypoint", ""),
            ])
        );
        // An option given, or its opposite, leaves its variable unread.
        let given = [
            "container-image",
            "no-container-mount-home",
            "container-writable",
        ];
        assert_eq!(
            env_pairs(&given, env(all)),
            pairs(&[("no-container-entrypoint", "")])
        );
        assert_eq!(
            env_pairs(&["container-readonly", "container-entrypoint"], env(all)),
            pairs(&[("container-image", "ubuntu"), ("container-mount-home", "")])
        );
    }

    #[test]
    fn slurms_spank_forms_stand_for_options_and_win_over_pyxis_variables() {
        assert_eq!(
            spank_env_name("container-image"),
            "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image"
        );
        assert_eq!(
            spank_option_name("no-container-mount-home"),
            "_SLURM_SPANK_OPTION_pyxis_no_container_mount_home"
        );
        let all: &[(&str, &str)] = &[
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
                "/a.sqsh",
            ),
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_mounts",
                "/d:/d",
            ),
            // A flag is given by its variable's presence (Slurm writes
            // "(null)" or nothing as its value).
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_readonly",
                "",
            ),
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_no_container_mount_home",
                "(null)",
            ),
            ("SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_name", ""),
            ("PYXIS_CONTAINER_IMAGE", "ubuntu"),
            ("PYXIS_CONTAINER_WRITABLE", "1"),
            ("PYXIS_CONTAINER_MOUNT_HOME", "1"),
            ("PYXIS_CONTAINER_WORKDIR", "/w"),
        ];
        assert_eq!(
            env_pairs(&[], env(all)),
            pairs(&[
                ("container-image", "/a.sqsh"),
                ("container-mounts", "/d:/d"),
                ("no-container-mount-home", ""),
                ("container-readonly", ""),
                ("container-workdir", "/w"),
            ])
        );
        // The command line wins over both forms.
        assert_eq!(
            env_pairs(
                &[
                    "container-image",
                    "container-writable",
                    "container-mount-home"
                ],
                env(all)
            ),
            pairs(&[("container-mounts", "/d:/d"), ("container-workdir", "/w")])
        );
        // PYXIS_CONTAINER_READONLY where WRITABLE is not set.
        let ro: &[(&str, &str)] = &[("PYXIS_CONTAINER_READONLY", "1")];
        assert_eq!(
            env_pairs(&[], env(ro)),
            pairs(&[("container-readonly", "")])
        );
        let rw: &[(&str, &str)] = &[("PYXIS_CONTAINER_READONLY", "0")];
        assert_eq!(
            env_pairs(&[], env(rw)),
            pairs(&[("container-writable", "")])
        );
        // What sbatch and salloc set reads back as the same options.
        let given = pairs(&[
            ("container-image", "/a.sqsh"),
            ("container-writable", ""),
            ("container-name", "c:exec"),
        ]);
        let set = spank_env(&given);
        assert_eq!(
            set[0],
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image".to_string(),
                "/a.sqsh".to_string()
            )
        );
        let back = env_pairs(&[], |k| {
            set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        });
        let mut want = given.clone();
        want.sort();
        let mut back = back;
        back.sort();
        assert_eq!(back, want);
    }

    #[test]
    fn mounts_parse_as_pyxis_writes_them() {
        let m = Mount::parse_list("/data:/data:ro,./out:/out,/scratch,tmpfs:/tmp:rbind").unwrap();
        assert_eq!(m.len(), 4);
        assert!(m[0].read_only);
        assert_eq!(m[1].absolute_src("/home/u/"), "/home/u/out");
        assert_eq!(m[2].dst, "/scratch");
        assert_eq!(m[3].src, "tmpfs");
        assert_eq!(
            Mount::parse("data:/data").unwrap_err(),
            "pyxis: mount source must be an absolute or relative path, or \"tmpfs\": data:/data"
        );
        assert_eq!(
            Mount::parse("/a:/b:bogus").unwrap_err(),
            "pyxis: invalid mount flag \"bogus\" in: /a:/b:bogus"
        );
        assert!(Mount::parse("/a:rel").is_err());
        assert!(Mount::parse("/a:/b:ro:x").is_err());
    }

    #[test]
    fn options_parse_with_names_and_flags() {
        let o = ContainerOptions::from_pairs(&pairs(&[
            ("container-image", "/img.sqsh"),
            ("container-name", "foo:exec"),
            ("container-readonly", ""),
            ("container-env", "FOO,BAR"),
            ("no-container-entrypoint", ""),
        ]))
        .unwrap();
        assert_eq!(o.image.as_deref(), Some("/img.sqsh"));
        assert_eq!(o.name, Some(("foo".into(), NameMode::Exec)));
        assert_eq!(o.writable, Some(false));
        assert_eq!(o.env, vec!["FOO", "BAR"]);
        assert_eq!(o.entrypoint, Some(false));
        assert!(ContainerOptions::from_pairs(&pairs(&[("container-workdir", "/x")])).is_err());
        assert!(ContainerOptions::from_pairs(&pairs(&[("container-name", "a:bad")])).is_err());
        assert_eq!(
            env_name("no-container-mount-home"),
            "PYXIS_CONTAINER_MOUNT_HOME"
        );
        assert_eq!(
            ContainerOptions::shown(&pairs(&[("container-image", "a.sqsh")])).as_deref(),
            Some("a.sqsh")
        );
    }
}
