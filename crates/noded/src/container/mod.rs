//! Containers the pyxis and enroot way (`srun --container-image=...`): a
//! step's tasks run in one container the node sets up for the step, as
//! pyxis does with enroot, without setuid helpers or an OCI runtime.
//!
//! ```text
//!   taskd (root)                         anchor (`noded --container-anchor`)
//!   options + pyxis.conf --image--> squashfs (a file, or imported: `image`)
//!   spawn anchor, AnchorSpec on stdin -->  unshare(mount ns), / private
//!                                          tmpfs run dir; squashfs (loop or squashfuse)
//!                                          overlay (tmpfs or the named container's upper)
//!                                          binds (--container-mounts, home, GPUs, PMIx)
//!                                          /proc /sys /dev /tmp; ro remount; pivot_root
//!   <-- Ready{env, workdir} (one line) ---  waits on stdin
//!   open /proc/ANCHOR/ns/mnt
//!   each task: fork, setns(mnt), user switch, chdir, exec (stays in the step's cgroup)
//!   step ends: [--container-save: mksquashfs /proc/ANCHOR/root]; close stdin
//!                                          --> helpers killed, anchor exits: the
//!                                          namespace and every mount in it go away
//! ```
//!
//! Every task of the step joins the anchor's mount namespace (pyxis's
//! `setns` per task): tasks share `/tmp` and the overlay, and stay the
//! step's processes (its cgroups, signals, PMI). There is no PID
//! namespace, as in pyxis. Nothing is mounted in the host's namespace: when
//! the anchor and the tasks are gone, the kernel drops every mount, and a
//! loop device set up for the squashfs clears itself.
//!
//! The diagram is root's own container's. Every other user's container is
//! built as that user (`AnchorSpec::rootless`): a root supervisor starts
//! the anchor as the job's user, with the user's groups (a node daemon
//! that is not root, `muster up` as an ordinary user, is the user
//! already), and the anchor builds the same container in a user
//! namespace of its own (see `anchor`), so that the image's files are the
//! user's (0 there) and no image is parsed by the kernel for the user.
//! Each task becomes the job's user first, then joins that user
//! namespace, the mount namespace, then the nested one where it is itself
//! (remapped: it stays 0 in the first), and gives up every capability.
//! Root still imports the image into the cache and makes the named
//! container's directories (its `upper` and `work` given to the user).
//!
//! A named container (`--container-name`, job scope) keeps its overlay's
//! upper directory under the cache directory until its job ends; while a
//! step of it runs, `NAME` (pyxis's `auto`) and `NAME:exec` join that
//! step's namespace (its anchor's pid is kept in the container's
//! directory), and `NAME:no_exec` mounts its files in a fresh one.
//!
//! Site defaults live in `pyxis.conf` beside slurm.conf (`SiteConf`,
//! docs/containers.md).

pub mod anchor;
pub mod image;
pub mod registry;

use proto::container::{ContainerOptions, NameMode};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The site's defaults (`pyxis.conf` beside slurm.conf: `key=value`
/// words, on lines of their own or after a plugstack `required ...`
/// line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteConf {
    /// `container_writable`: containers are writable unless a step says
    /// `--container-readonly`.
    pub writable: bool,
    /// `mount_home`: the user's home is bound in.
    pub mount_home: bool,
    /// `remap_root`: the user is root inside.
    pub remap_root: bool,
    /// `execute_entrypoint`: the image's `/etc/rc` runs each task.
    pub entrypoint: bool,
    /// `cache_dir`: imported images (by digest) and named containers.
    pub cache_dir: PathBuf,
    /// `cache_max_mb`: the image cache's size limit.
    pub cache_max_mb: u64,
    /// `kernel_squashfs`: squashfs images are mounted by the kernel
    /// (loop); otherwise by squashfuse. Only root's own containers are
    /// built as root and may use it: every other user's is built in the
    /// user's namespace, by squashfuse (`user_namespaces`).
    pub kernel_squashfs: bool,
    /// `user_namespaces`: a root node daemon builds the containers of a
    /// job whose user is not root as that user, in user namespaces of
    /// the user's (as without root); off, as root (the kernel's squashfs,
    /// the image's files root's), then the job's user.
    pub user_namespaces: bool,
    /// `registry_mirror=[REGISTRY=]URL` (repeatable): pulls of that
    /// registry's images (without `REGISTRY=`: of every registry's) go to
    /// the mirror at URL, with the same repository paths.
    pub registry_mirrors: Vec<(Option<String>, String)>,
    /// `registry_http=HOST[:PORT],...`: registries spoken to over plain
    /// HTTP (a test's or a lab's); others by HTTPS.
    pub registry_http: Vec<String>,
    /// `registry_ca=PATH`: PEM certificates trusted for registries besides
    /// the system's bundle.
    pub registry_ca: Option<PathBuf>,
    /// pyxis's keys that are read and do nothing here, with their line
    /// and why (the node daemon warns at its start, `check-config` too).
    pub ignored: Vec<(usize, String)>,
}

impl Default for SiteConf {
    fn default() -> Self {
        SiteConf {
            writable: true,
            mount_home: false,
            remap_root: false,
            entrypoint: false,
            cache_dir: default_cache_dir(),
            cache_max_mb: 10 * 1024,
            kernel_squashfs: true,
            user_namespaces: true,
            registry_mirrors: Vec::new(),
            registry_http: Vec::new(),
            registry_ca: None,
            ignored: Vec::new(),
        }
    }
}

/// `cache_dir`'s default: the system's directory for a node daemon run
/// as root; for one run by an ordinary user (`muster up` without root),
/// the user's cache, `${XDG_CACHE_HOME:-$HOME/.cache}/muster/containers`.
fn default_cache_dir() -> PathBuf {
    let uid = nix::unistd::geteuid();
    if uid.is_root() {
        return PathBuf::from("/var/lib/muster/containers");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| Path::new(v).is_absolute())
                .map(|h| Path::new(&h).join(".cache"))
        });
    match cache {
        Some(c) => c.join("muster").join("containers"),
        None => std::env::temp_dir().join(format!("muster-containers-{uid}")),
    }
}

/// Removes a directory tree the node daemon made, even where it is not
/// root and an overlay left a directory it may not enter (the overlay's
/// `work/work`, mode 0).
pub(crate) fn remove_tree(dir: &Path) {
    if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return;
    }
    fn open_up(d: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700));
        if let Ok(list) = std::fs::read_dir(d) {
            for e in list.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&e.path());
                }
            }
        }
    }
    open_up(dir);
    let _ = std::fs::remove_dir_all(dir);
}

fn yes(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "1" | "yes" | "y" | "true" | "on"
    )
}

impl SiteConf {
    /// Parses the file's text; unknown keys are errors with their line.
    pub fn parse(text: &str) -> Result<SiteConf, String> {
        let mut c = SiteConf::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            for word in line.split_whitespace() {
                let Some((k, v)) = word.split_once('=') else {
                    // `required /usr/lib/.../spank_pyxis.so`: plugstack's words.
                    continue;
                };
                match k {
                    "container_writable" => c.writable = yes(v),
                    "mount_home" => c.mount_home = yes(v),
                    "remap_root" => c.remap_root = yes(v),
                    "execute_entrypoint" => c.entrypoint = yes(v),
                    "cache_dir" => c.cache_dir = PathBuf::from(v),
                    "cache_max_mb" => {
                        c.cache_max_mb = v
                            .parse()
                            .map_err(|_| format!("pyxis.conf:{}: bad cache_max_mb {v}", n + 1))?
                    }
                    "kernel_squashfs" => c.kernel_squashfs = yes(v),
                    "user_namespaces" => c.user_namespaces = yes(v),
                    "registry_mirror" => {
                        let (registry, url) = match v.split_once('=') {
                            Some((r, u)) if !r.contains('/') => (Some(r.to_string()), u),
                            _ => (None, v),
                        };
                        if !url.starts_with("http://") && !url.starts_with("https://") {
                            return Err(format!(
                                "pyxis.conf:{}: registry_mirror needs an http:// or https:// URL: {v}",
                                n + 1
                            ));
                        }
                        c.registry_mirrors.push((registry, url.to_string()));
                    }
                    "registry_http" => c
                        .registry_http
                        .extend(v.split(',').filter(|h| !h.is_empty()).map(str::to_string)),
                    "registry_ca" => c.registry_ca = Some(PathBuf::from(v)),
                    // pyxis's own keys with the one value this runtime has.
                    "container_scope" if v == "job" => {}
                    "container_scope" => {
                        return Err(format!(
                            "pyxis.conf:{}: container_scope={v} is not supported: containers are the job's (job)",
                            n + 1
                        ))
                    }
                    "sbatch_support" if yes(v) => {}
                    "use_enroot_load" if !yes(v) => {}
                    "sbatch_support" | "runtime_path" | "use_enroot_load" | "importer" => {
                        let why = match k {
                            "sbatch_support" => "sbatch always takes the container options",
                            "runtime_path" => "a step's container lives under cache_dir/run",
                            "use_enroot_load" => "no enroot is used: the node daemon imports images itself",
                            _ => "the node daemon imports images itself (OCI layouts, docker-archives, registries)",
                        };
                        c.ignored
                            .push((n + 1, format!("{k}={v} does nothing here: {why}")));
                    }
                    _ => return Err(format!("pyxis.conf:{}: unknown key {k}", n + 1)),
                }
            }
        }
        Ok(c)
    }

    /// The file beside `slurm_conf`, or the defaults where there is none.
    pub fn beside(slurm_conf: &str) -> Result<SiteConf, String> {
        let path = Path::new(slurm_conf)
            .parent()
            .unwrap_or(Path::new("/"))
            .join("pyxis.conf");
        match std::fs::read_to_string(&path) {
            Ok(text) => SiteConf::parse(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SiteConf::default()),
            Err(e) => Err(format!("pyxis: cannot read {}: {e}", path.display())),
        }
    }
}

/// One bind or tmpfs the anchor mounts in the container.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MountSpec {
    /// Host path; None: a tmpfs.
    pub src: Option<PathBuf>,
    /// Path inside the container.
    pub dst: String,
    /// Read-only.
    pub read_only: bool,
}

/// What the anchor is told to build (its stdin's first line).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnchorSpec {
    /// The image as squashfs.
    pub squashfs: PathBuf,
    /// Mount it with the kernel (loop) rather than squashfuse.
    pub kernel_squashfs: bool,
    /// An empty host directory the anchor mounts its tmpfs on.
    pub run_dir: PathBuf,
    /// A named container's overlay upper and work directories (on disk);
    /// None: a tmpfs, gone with the step.
    pub persist: Option<PathBuf>,
    /// The root stays writable.
    pub writable: bool,
    /// Binds and tmpfs, in order.
    pub mounts: Vec<MountSpec>,
    /// Device files to bind at the same path (the step's GPUs, their
    /// control files) and directories (`/dev/infiniband`).
    pub devices: Vec<PathBuf>,
    /// `--container-remap-root`: once built, the anchor makes a user
    /// namespace too, which the supervisor maps (the job's user as 0).
    #[serde(default)]
    pub user_ns: bool,
    /// The job's user and group: once the container is built, the anchor
    /// becomes them (remapped: after the supervisor's map, as 0 in the
    /// user namespace), so that no process in the container is root's
    /// (isolation test 24). None where the anchor is the job's user
    /// already (`rootless`).
    #[serde(default)]
    pub owner: Option<(u32, u32)>,
    /// The anchor runs as the job's user (a node daemon that is not root,
    /// or a root one building the container of a user who is not root):
    /// it builds the container in user namespaces of its own, by
    /// squashfuse (see `anchor`).
    #[serde(default)]
    pub rootless: bool,
}

/// What the anchor answers once the container is ready.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ready {
    /// The image's environment (`/etc/environment`).
    pub env: Vec<(String, String)>,
    /// The image's working directory (`/.muster-image.json`), if any.
    pub workdir: Option<String>,
    /// `/etc/rc` exists (the entrypoint, enroot's convention).
    pub has_rc: bool,
}

/// A step's running container: the tasks join `mnt`.
pub struct Container {
    /// The anchor's mount namespace.
    pub mnt: OwnedFd,
    /// `--container-remap-root`: the user namespace where the job's user
    /// is 0; tasks join it after the mount namespace and become 0 there.
    pub user_ns: Option<OwnedFd>,
    /// Built as the job's user (`AnchorSpec::rootless`): the anchor's
    /// user namespace (which owns `mnt`), joined before it, and, unless
    /// remapped, the nested one where the job's user is itself, joined
    /// after it.
    rootless: Option<(OwnedFd, Option<OwnedFd>)>,
    /// The anchor (None when joined with `NAME:exec`: another step's).
    anchor: Option<std::process::Child>,
    run_dir: Option<PathBuf>,
    /// Where a named container's anchor pid is kept while it runs.
    pid_file: Option<PathBuf>,
    /// The tasks' working directory inside.
    pub workdir: String,
    /// The environment the tasks get on top of theirs.
    pub image_env: Vec<(String, String)>,
    /// Run each task through the image's `/etc/rc`.
    pub entrypoint: bool,
    /// `--container-entrypoint-log`: the entrypoint's own output goes to
    /// the task's; without it, it is hidden unless the entrypoint fails.
    pub entrypoint_log: bool,
    /// `--container-save`: where the file system goes at the end, as the
    /// job's user (uid, gid, supplementary groups).
    save: Option<(PathBuf, u32, u32, Vec<u32>)>,
    /// What `--container-save` leaves out: the binds' places inside.
    binds: Vec<String>,
    /// pyxis's informational lines for the step's stderr (`pyxis: reusing
    /// existing container namespaces`).
    pub notices: Vec<String>,
    /// When it was ready (the step's `ContainerStart` ends here).
    pub ready_at: std::time::Instant,
}

/// The shell around `/etc/rc` that hides the entrypoint's output (the
/// command's arguments follow as `$@`). The entrypoint writes to a log in
/// the container's `/tmp`; the command it starts gets the task's own
/// stdout and stderr back (kept on fds 3 and 4) and removes the log
/// first, so a log still there afterwards means the entrypoint ended
/// without starting it: its exit code and output are printed as pyxis
/// prints a failed container start. The command's exit status passes
/// through, and a death by a signal is passed on by the same signal.
/// Where no log can be written (a read-only `/tmp`), the entrypoint runs
/// as with `--container-entrypoint-log`.
pub const ENTRYPOINT_QUIET: &str = r#"log=/tmp/.muster-entrypoint.$$
if ! : >"$log" 2>/dev/null; then exec /bin/sh /etc/rc "$@"; fi
/bin/sh /etc/rc /bin/sh -c 'rm -f "$0"; exec 1>&3 2>&4 3>&- 4>&-; exec "$@"' "$log" "$@" 3>&1 4>&2 >"$log" 2>&1
st=$?
if [ -f "$log" ]; then
  echo "pyxis: container start failed with error code: $st" >&2
  echo "pyxis: printing contents of log file ..." >&2
  while IFS= read -r line; do echo "pyxis:     $line" >&2; done <"$log"
  rm -f "$log"
  echo "pyxis: couldn't start container" >&2
  echo "pyxis: if the image has an unusual entrypoint, try using --no-container-entrypoint" >&2
  exit "$st"
fi
if [ "$st" -gt 128 ]; then kill -$((st - 128)) $$ 2>/dev/null; fi
exit "$st""#;

/// Who the step's tasks run as and where, for the container's set-up.
pub struct StepContext<'a> {
    /// slurm.conf's path (pyxis.conf lies beside it).
    pub conf_path: &'a str,
    /// The job and step (`J.S`, or `J.batch`).
    pub job_id: u32,
    /// The step's name for paths.
    pub step: String,
    /// The job's user.
    pub uid: u32,
    /// The job's group.
    pub gid: u32,
    /// The user's name (for the home directory).
    pub user: &'a str,
    /// The job's working directory (relative mount sources and save paths).
    pub cwd: &'a str,
    /// Device files of the step's GPUs.
    pub gpu_files: Vec<PathBuf>,
    /// More host paths to bind at the same place (PMIx's directory, the
    /// batch script).
    pub extra_binds: Vec<PathBuf>,
    /// The user's enroot credentials file for registry pulls
    /// (`registry::credentials_path`).
    pub credentials: Option<PathBuf>,
}

/// The named container's state directory (job scope).
fn named_dir(conf: &SiteConf, job_id: u32, name: &str) -> PathBuf {
    conf.cache_dir
        .join("named")
        .join(format!("job_{job_id}"))
        .join(name)
}

/// Removes the named containers of a job (its end).
pub fn remove_job_containers(conf_path: &str, job_id: u32) {
    if let Ok(conf) = SiteConf::beside(conf_path) {
        let dir = conf.cache_dir.join("named").join(format!("job_{job_id}"));
        if dir.exists() {
            remove_tree(&dir);
        }
    }
}

/// The anchor of a named container that a step runs now: the pid its
/// step wrote, where that process is still an anchor (a pid left by a
/// node daemon that died is not taken for one).
fn running_anchor(dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(dir.join("anchor.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    cmdline
        .split(|b| *b == 0)
        .any(|a| a == b"--container-anchor")
        .then_some(pid)
}

/// The control files of NVIDIA GPUs, bound where any GPU is.
const NVIDIA_CONTROL: &[&str] = &[
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
];

pub(crate) fn home_of(user: &str) -> Option<String> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[0] == user).then(|| f[5].to_string())
    })
}

impl Container {
    /// Sets the container up for a step (or joins a running named one).
    /// Errors are pyxis's lines (`pyxis: ...`).
    pub fn start(pairs: &[(String, String)], ctx: &StepContext<'_>) -> Result<Container, String> {
        let opts = ContainerOptions::from_pairs(pairs)?;
        let conf = SiteConf::beside(ctx.conf_path)?;
        let writable = opts.writable.unwrap_or(conf.writable);
        let entrypoint = opts.entrypoint.unwrap_or(conf.entrypoint);
        let remap = opts.remap_root.unwrap_or(conf.remap_root);
        // Who builds it: a root node daemon builds root's own containers
        // as root; every other user's is built by an anchor that is that
        // user (with the user's groups), in the user's namespaces, as a
        // node daemon that is not root builds all of them.
        let daemon_root = nix::unistd::geteuid().is_root();
        let rootless = !daemon_root || (ctx.uid != 0 && conf.user_namespaces);
        let as_user = if daemon_root && rootless {
            let groups =
                crate::exec::groups_of(ctx.user, ctx.gid).map_err(|e| format!("pyxis: {e}"))?;
            Some((ctx.uid, ctx.gid, groups))
        } else {
            None
        };
        let named = opts
            .name
            .as_ref()
            .map(|(n, mode)| (named_dir(&conf, ctx.job_id, n), *mode, n.clone()));
        let pid_file = named.as_ref().map(|(d, _, _)| d.join("anchor.pid"));
        if let Some((dir, mode, name)) = &named {
            let exists = dir.join("upper").exists();
            // pyxis's choice: a container that a step of the job runs now
            // is joined (`auto`, `exec`), one that exists is reused
            // (`auto`, `no_exec`: its files, fresh namespaces), else it is
            // made from the image.
            let running = running_anchor(dir);
            match (mode, running) {
                (NameMode::Create, _) if exists || running.is_some() => {
                    return Err("pyxis: error: \"create\" flag was passed to --container-name but the container already exists".into());
                }
                (NameMode::Exec, None) => {
                    return Err("pyxis: error: \"exec\" flag was passed to --container-name but the container is not running".into());
                }
                (NameMode::Exec | NameMode::Auto, Some(pid)) => {
                    return Container::join(pid, &opts, entrypoint);
                }
                _ => {}
            }
            if opts.image.is_none() && !exists {
                return Err(format!(
                    "pyxis: error: a container with name \"{name}\" does not exist, and --container-image is not set"
                ));
            }
        }
        let image_ref = match (&opts.image, &named) {
            (Some(i), _) => i.clone(),
            (None, Some((dir, _, _))) => std::fs::read_to_string(dir.join("image"))
                .map_err(|e| format!("pyxis: cannot read the container's image: {e}"))?,
            (None, None) => return Err("pyxis: no image given".into()),
        };
        let squashfs = image::resolve(
            &image_ref,
            ctx.cwd,
            &conf,
            (ctx.uid, ctx.gid),
            ctx.credentials.as_deref(),
        )?;
        let persist = match &named {
            Some((dir, _, _)) => {
                for d in ["upper", "work"] {
                    std::fs::create_dir_all(dir.join(d))
                        .map_err(|e| format!("pyxis: cannot make {}: {e}", dir.display()))?;
                    // Built as the user: the overlay's directories are the
                    // user's (the container's own directory, with its
                    // anchor pid and image, stays root's).
                    if let Some((uid, gid, _)) = &as_user {
                        std::os::unix::fs::chown(dir.join(d), Some(*uid), Some(*gid)).map_err(
                            |e| format!("pyxis: cannot give {} to the user: {e}", dir.display()),
                        )?;
                    }
                }
                let _ = std::fs::write(dir.join("image"), &image_ref);
                Some(dir.clone())
            }
            None => None,
        };
        let mut mounts = Vec::new();
        for m in &opts.mounts {
            let src = (m.src != "tmpfs").then(|| PathBuf::from(m.absolute_src(ctx.cwd)));
            if let Some(s) = &src {
                if !s.exists() {
                    return Err(format!(
                        "pyxis: mount source does not exist: {}",
                        s.display()
                    ));
                }
            }
            mounts.push(MountSpec {
                src,
                dst: m.dst.clone(),
                read_only: m.read_only,
            });
        }
        if opts.mount_home.unwrap_or(conf.mount_home) {
            if let Some(home) = home_of(ctx.user).filter(|h| Path::new(h).is_dir()) {
                mounts.push(MountSpec {
                    src: Some(PathBuf::from(&home)),
                    dst: home,
                    read_only: false,
                });
            }
        }
        for p in &ctx.extra_binds {
            if p.exists() {
                mounts.push(MountSpec {
                    src: Some(p.clone()),
                    dst: p.to_string_lossy().into_owned(),
                    read_only: false,
                });
            }
        }
        let mut devices: Vec<PathBuf> = ctx.gpu_files.clone();
        if !devices.is_empty() {
            devices.extend(
                NVIDIA_CONTROL
                    .iter()
                    .map(PathBuf::from)
                    .filter(|p| p.exists()),
            );
        }
        if Path::new("/dev/infiniband").is_dir() {
            devices.push(PathBuf::from("/dev/infiniband"));
        }
        let run_dir = conf.cache_dir.join("run").join(format!(
            "{}.{}.{}",
            ctx.job_id,
            ctx.step,
            std::process::id()
        ));
        std::fs::create_dir_all(&run_dir)
            .map_err(|e| format!("pyxis: cannot make {}: {e}", run_dir.display()))?;
        let spec = AnchorSpec {
            squashfs,
            // A root daemon mounts the kernel's squashfs for root's own
            // containers only (a user's is never the kernel's to parse).
            kernel_squashfs: conf.kernel_squashfs && !(daemon_root && rootless),
            run_dir: run_dir.clone(),
            persist,
            writable,
            mounts,
            devices,
            user_ns: remap,
            owner: (!rootless).then_some((ctx.uid, ctx.gid)),
            rootless,
        };
        let (mut child, ready) = match spawn_anchor(&spec, as_user.as_ref()) {
            Ok(x) => x,
            Err(mut e) => {
                let _ = std::fs::remove_dir(&run_dir);
                // A node whose kernel refuses users their own namespaces
                // (a sysctl, an AppArmor restriction): the site's way out.
                if as_user.is_some() && e.starts_with("pyxis: cannot make a mount namespace") {
                    e.push_str(concat!(
                        " (user namespaces are refused to the job's user here;",
                        " pyxis.conf's user_namespaces=0 builds users' containers as root)"
                    ));
                }
                return Err(e);
            }
        };
        let pid = child.id();
        let mnt = open_ns(pid)?;
        let rootless = if rootless {
            Some(rootless_ns(pid)?)
        } else {
            None
        };
        let user_ns = if remap && rootless.is_none() {
            let ns = map_user_ns(pid, ctx.uid, ctx.gid)?;
            // Mapped: the anchor may now become 0 there (the job's user).
            if let Some(stdin) = child.stdin.as_mut() {
                let _ = stdin.write_all(b"mapped\n");
                let _ = stdin.flush();
            }
            Some(ns)
        } else {
            None
        };
        if let Some(p) = &pid_file {
            let _ = std::fs::write(p, pid.to_string());
        }
        let binds: Vec<String> = spec.mounts.iter().map(|m| m.dst.clone()).collect();
        let notices = Vec::new();
        let save = opts.save.as_ref().map(|s| {
            let path = if s.starts_with('/') {
                PathBuf::from(s)
            } else {
                Path::new(ctx.cwd).join(s)
            };
            let groups = as_user.as_ref().map(|a| a.2.clone()).unwrap_or_default();
            (path, ctx.uid, ctx.gid, groups)
        });
        Ok(Container {
            mnt,
            user_ns,
            rootless,
            anchor: Some(child),
            run_dir: Some(run_dir),
            pid_file,
            workdir: opts
                .workdir
                .clone()
                .or(ready.workdir.clone())
                .unwrap_or_else(|| "/".into()),
            image_env: merge_image_env(&ready.env, &opts.env),
            entrypoint: entrypoint && ready.has_rc,
            entrypoint_log: opts.entrypoint_log,
            save,
            binds,
            notices,
            ready_at: std::time::Instant::now(),
        })
    }

    /// `NAME` or `NAME:exec` while a step runs the named container:
    /// joins that step's namespaces (its anchor `pid`), as pyxis reuses a
    /// running container's. The step's own `--container-mounts` are left
    /// out (the namespace is made), as pyxis says.
    fn join(pid: u32, opts: &ContainerOptions, entrypoint: bool) -> Result<Container, String> {
        let not_running = || {
            "pyxis: error: \"exec\" flag was passed to --container-name but the container is not running".to_string()
        };
        let mnt = open_ns(pid).map_err(|_| not_running())?;
        let mut notices = vec!["pyxis: reusing existing container namespaces".to_string()];
        if !opts.mounts.is_empty() {
            notices.push(
                "pyxis: ignoring --container-mounts when attaching to a running container".into(),
            );
        }
        let env_text = std::fs::read_to_string(format!("/proc/{pid}/root/etc/environment"))
            .unwrap_or_default();
        let env = anchor::parse_environment(&env_text);
        let has_rc = Path::new(&format!("/proc/{pid}/root/etc/rc")).exists();
        // A container built as its user (its mount namespace is owned by
        // a user namespace of the anchor's, not this daemon's) is joined
        // through the anchor's user namespaces around its mount namespace
        // (`rootless_ns`).
        let rootless = if owned_here(&mnt) {
            None
        } else {
            Some(rootless_ns(pid).map_err(|_| not_running())?)
        };
        let user_ns = if rootless.is_some() {
            None
        } else {
            std::fs::File::open(format!("/proc/{pid}/ns/user"))
                .ok()
                .map(OwnedFd::from)
                .filter(|_| {
                    // Only a remapped container has a namespace of its own.
                    std::fs::read_link(format!("/proc/{pid}/ns/user")).ok()
                        != std::fs::read_link("/proc/self/ns/user").ok()
                })
        };
        Ok(Container {
            mnt,
            rootless,
            user_ns,
            anchor: None,
            run_dir: None,
            pid_file: None,
            workdir: opts.workdir.clone().unwrap_or_else(|| "/".into()),
            image_env: merge_image_env(&env, &opts.env),
            entrypoint: entrypoint && has_rc,
            entrypoint_log: opts.entrypoint_log,
            save: None,
            binds: Vec::new(),
            notices,
            ready_at: std::time::Instant::now(),
        })
    }

    /// A task's environment: the host's (the task's own), with the
    /// image's values winning except for the `--container-env` names and
    /// Slurm's and PMI's variables (as pyxis does).
    pub fn task_env(&self, env: &mut Vec<(String, String)>) {
        for (k, v) in &self.image_env {
            match env.iter_mut().find(|(key, _)| key == k) {
                Some(slot) => slot.1 = v.clone(),
                None => env.push((k.clone(), v.clone())),
            }
        }
    }

    /// A task's command: through `/etc/rc` where the entrypoint runs.
    ///
    /// As pyxis does, the entrypoint's own output is hidden from the job
    /// unless `--container-entrypoint-log` asks for it, or the entrypoint
    /// fails before it starts the command: then its output follows
    /// pyxis's lines on the task's stderr ([`ENTRYPOINT_QUIET`]).
    pub fn task_argv(&self, argv: Vec<String>) -> Vec<String> {
        if !self.entrypoint {
            return argv;
        }
        let mut v = if self.entrypoint_log {
            vec!["/bin/sh".to_string(), "/etc/rc".to_string()]
        } else {
            vec![
                "/bin/sh".to_string(),
                "-c".to_string(),
                ENTRYPOINT_QUIET.to_string(),
                "sh".to_string(),
            ]
        };
        v.extend(argv);
        v
    }

    /// The anchor's root as the host sees it (resolving programs).
    pub fn root(&self) -> Option<PathBuf> {
        self.anchor
            .as_ref()
            .map(|c| PathBuf::from(format!("/proc/{}/root", c.id())))
    }

    /// Ends the container once the step's tasks are gone: saves it where
    /// asked (a line of error text for the step's stderr if that fails),
    /// then lets the anchor go, and with it every mount.
    pub fn finish(mut self) -> Option<String> {
        let mut err = None;
        if let (Some((path, uid, gid, groups)), Some(child)) = (&self.save, &self.anchor) {
            let outer = self.rootless.as_ref().map(|(o, _)| o.as_raw_fd());
            err = save(child.id(), path, (*uid, *gid, groups), &self.binds, outer).err();
        }
        if let Some(p) = &self.pid_file {
            let _ = std::fs::remove_file(p);
        }
        if let Some(mut child) = self.anchor.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
        if let Some(d) = &self.run_dir {
            let _ = std::fs::remove_dir(d);
        }
        err
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if let Some(mut child) = self.anchor.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

/// The image's variables less the names the step keeps from the host.
fn merge_image_env(image: &[(String, String)], keep: &[String]) -> Vec<(String, String)> {
    image
        .iter()
        .filter(|(k, _)| {
            !keep.contains(k)
                && !k.starts_with("SLURM_")
                && !k.starts_with("PMI_")
                && !k.starts_with("PMIX_")
        })
        .cloned()
        .collect()
}

/// Maps the job's user (and group) to 0 in the anchor's new user
/// namespace (no other id; setgroups denied), and opens it.
fn map_user_ns(pid: u32, uid: u32, gid: u32) -> Result<OwnedFd, String> {
    let write = |f: &str, text: String| {
        std::fs::write(format!("/proc/{pid}/{f}"), text)
            .map_err(|e| format!("pyxis: cannot map the user namespace ({f}): {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("0 {uid} 1\n"))?;
    write("gid_map", format!("0 {gid} 1\n"))?;
    std::fs::File::open(format!("/proc/{pid}/ns/user"))
        .map(OwnedFd::from)
        .map_err(|e| format!("pyxis: cannot open the container's user namespace: {e}"))
}

/// The user namespaces of a rootless anchor: the one that owns its mount
/// namespace (a child of this daemon's), and the nested one it sits in
/// where the job's user is itself (none when remapped).
fn rootless_ns(pid: u32) -> Result<(OwnedFd, Option<OwnedFd>), String> {
    use std::os::unix::fs::MetadataExt;
    let err = |e: std::io::Error| format!("pyxis: cannot open the container's user namespace: {e}");
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/user")).map_err(err)?;
    // NS_GET_PARENT (_IO(0xb7, 0x2)): its parent, as a new fd.
    // SAFETY: an ioctl on an open namespace fd; a new fd or -1.
    let parent = unsafe { libc::ioctl(ns.as_raw_fd(), 0xb702) };
    if parent < 0 {
        return Err(err(std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd the ioctl returned, owned here only.
    let parent = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(parent) };
    let parent = std::fs::File::from(parent);
    let mine = std::fs::metadata("/proc/self/ns/user").map_err(err)?;
    let p = parent.metadata().map_err(err)?;
    if (p.dev(), p.ino()) == (mine.dev(), mine.ino()) {
        Ok((ns.into(), None))
    } else {
        Ok((parent.into(), Some(ns.into())))
    }
}

/// Whether the mount namespace `mnt` is owned by this process's user
/// namespace (a container built as root), not by one of its anchor's (a
/// container built as its user).
fn owned_here(mnt: &OwnedFd) -> bool {
    use std::os::unix::fs::MetadataExt;
    // NS_GET_USERNS (_IO(0xb7, 0x1)): the owning user namespace, as a new fd.
    // SAFETY: an ioctl on an open namespace fd; a new fd or -1.
    let owner = unsafe { libc::ioctl(mnt.as_raw_fd(), 0xb701) };
    if owner < 0 {
        return true;
    }
    // SAFETY: a fresh fd the ioctl returned, owned here only.
    let owner =
        std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(owner) });
    match (owner.metadata(), std::fs::metadata("/proc/self/ns/user")) {
        (Ok(o), Ok(m)) => (o.dev(), o.ino()) == (m.dev(), m.ino()),
        _ => true,
    }
}

fn open_ns(pid: u32) -> Result<OwnedFd, String> {
    std::fs::File::open(format!("/proc/{pid}/ns/mnt"))
        .map(OwnedFd::from)
        .map_err(|e| format!("pyxis: cannot open the container's namespace: {e}"))
}

/// Starts the anchor and waits for its one answer line. `as_user`: a root
/// daemon's anchor for a user's container, started as that user (uid,
/// gid, supplementary groups).
fn spawn_anchor(
    spec: &AnchorSpec,
    as_user: Option<&(u32, u32, Vec<u32>)>,
) -> Result<(std::process::Child, Ready), String> {
    // This very program, even where its file was replaced since it
    // started (an upgrade): the kernel's link to it, not its path.
    // The run directory is named only for `ps` and the tests' leftover
    // checks: which step's container an anchor holds.
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.arg("noded")
        .arg(anchor::FLAG)
        .arg(&spec.run_dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    if let Some((uid, gid, groups)) = as_user {
        become_user(&mut cmd, (*uid, *gid, groups.clone()));
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("pyxis: cannot start the container: {e}"))?;
    let line = serde_json::to_string(spec).map_err(|e| format!("pyxis: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let _ = writeln!(stdin, "{line}");
    let _ = stdin.flush();
    child.stdin = Some(stdin);
    let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut answer = String::new();
    let _ = out.read_line(&mut answer);
    match serde_json::from_str::<Result<Ready, String>>(answer.trim()) {
        Ok(Ok(ready)) => Ok((child, ready)),
        Ok(Err(e)) => {
            drop(child.stdin.take());
            let _ = child.wait();
            Err(e)
        }
        Err(_) => {
            drop(child.stdin.take());
            let _ = child.kill();
            let _ = child.wait();
            Err("pyxis: the container did not start".into())
        }
    }
}

/// `--container-save`: the container's file system (less the kernel's
/// and the binds) as squashfs, owned by the job's user. Rootless
/// (`outer`: the anchor's user namespace), mksquashfs reads it from that
/// namespace, as a FUSE overlay (fuse-overlayfs) lets only its processes
/// in.
fn save(
    pid: u32,
    path: &Path,
    (uid, gid, groups): (u32, u32, &[u32]),
    binds: &[String],
    outer: Option<i32>,
) -> Result<(), String> {
    let root = format!("/proc/{pid}/root/.");
    let tmp = path.with_extension("sqsh.part");
    let mut cmd = std::process::Command::new("mksquashfs");
    let as_root = nix::unistd::geteuid().is_root();
    if let Some(fd) = outer {
        use std::os::unix::process::CommandExt;
        // A root daemon's mksquashfs for a container built as its user
        // is that user first (its FUSE mounts let only the user in; the
        // file is the user's), then joins the user's namespace.
        if as_root {
            become_user(&mut cmd, (uid, gid, groups.to_vec()));
        }
        // SAFETY: setns(2) between fork and exec, on an fd opened before.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWUSER) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd
        .arg(&root)
        .arg(&tmp)
        // Not -one-file-system: an overlay's files keep their layer's
        // device number.
        .args(["-noappend", "-quiet", "-no-progress"])
        // Built as the user, every file is the user's (0 in the
        // container's user namespace): root's in the image, as enroot
        // exports.
        .args(outer.is_some().then_some("-all-root"))
        .args(["-e", "proc", "sys", "dev", "tmp"])
        .args(binds.iter().map(|b| b.trim_start_matches('/')))
        .output()
        .map_err(|e| format!("pyxis: --container-save: cannot run mksquashfs: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "pyxis: --container-save: mksquashfs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if as_root && outer.is_none() {
        let _ = std::os::unix::fs::chown(&tmp, Some(uid), Some(gid));
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("pyxis: --container-save: {e}"))
}

/// Makes `cmd`'s process the user (groups, group, user: all three of
/// each id) between fork and exec, before any other `pre_exec` step.
fn become_user(cmd: &mut std::process::Command, (uid, gid, groups): (u32, u32, Vec<u32>)) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `exec::become_user` is async-signal-safe, on a list made
    // before the fork.
    unsafe {
        cmd.pre_exec(move || crate::exec::become_user(uid, gid, &groups));
    }
}

/// The namespaces a task's child joins, as raw fds opened before the fork.
#[derive(Clone, Copy, Debug)]
pub struct Join {
    /// Rootless: the user namespace that owns `mnt`, joined first.
    outer: Option<i32>,
    mnt: i32,
    /// Rootless, not remapped: where the job's user is itself, joined last.
    inner: Option<i32>,
}

/// In a task's child between fork and exec: joins the container's mount
/// namespace (built as root: before the user switch). A container built
/// as its user (`Join::user_first`) is joined by the job's user (a root
/// supervisor's child switches first, one that is not root's is the user
/// already): it joins the anchor's
/// user namespace first (which its user owns), the mount namespace, then
/// the nested namespace where it is itself (remapped: it stays 0 in the
/// first), and gives up every capability those gave it, the bounding set
/// too, so that not even a remapped root's exec gets any.
/// Async-signal-safe.
pub fn join_in_child(j: Join) -> std::io::Result<()> {
    // SAFETY: setns(2) and prctl(2) on fds opened before the fork.
    unsafe {
        if let Some(outer) = j.outer {
            if libc::setns(outer, libc::CLONE_NEWUSER) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if libc::setns(j.mnt, libc::CLONE_NEWNS) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(inner) = j.inner {
            if libc::setns(inner, libc::CLONE_NEWUSER) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if j.outer.is_some() {
            for cap in 0..64 {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            );
            if !anchor::drop_capabilities() {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

impl Join {
    /// A container built as its user: the task's child becomes the job's
    /// user before it joins (`join_in_child`), as the namespaces are the
    /// user's and no group list may be set inside them; otherwise it
    /// joins as root, then switches.
    pub fn user_first(&self) -> bool {
        self.outer.is_some()
    }
}

/// The fds the child joins.
pub fn raw(c: &Container) -> Join {
    Join {
        outer: c.rootless.as_ref().map(|(o, _)| o.as_raw_fd()),
        mnt: c.mnt.as_raw_fd(),
        inner: c
            .rootless
            .as_ref()
            .and_then(|(_, i)| i.as_ref())
            .map(|i| i.as_raw_fd()),
    }
}

/// In a task's child, `--container-remap-root`: after the mount namespace,
/// drops root's groups for the job's group, joins the user namespace and
/// becomes 0 there (the job's user outside). Async-signal-safe.
pub fn enter_user_ns(user_ns: i32, gid: libc::gid_t) -> std::io::Result<()> {
    // SAFETY: system calls on an fd opened before the fork.
    unsafe {
        if libc::setgroups(1, &gid) != 0
            || libc::setns(user_ns, libc::CLONE_NEWUSER) != 0
            || libc::setgid(0) != 0
            || libc::setuid(0) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
