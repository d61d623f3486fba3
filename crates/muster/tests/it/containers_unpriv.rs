//! Containers under a node daemon that is not root (issue 42, the
//! unprivileged path, as enroot runs without root): a real Unix user made
//! for the test starts a whole cluster with `muster up --detach`, and its
//! steps and batch scripts run in containers built in user namespaces
//! (squashfuse, the kernel's overlay, binds). Root runs the suite (to make
//! the user); everything of the cluster runs as that user.

use crate::auth::{set_mode, TestUser};
use crate::containers::{
    can_run, processes_sharing_mounts_with, sh, sha256, write_oci_layout, Scratch,
};
use crate::secs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A cluster `muster up` started as `user`, stopped (`muster down`) on
/// drop whatever happens.
struct Up<'a> {
    user: &'a TestUser,
    muster: PathBuf,
    state: PathBuf,
}

impl Up<'_> {
    fn muster(&self, args: &[&str]) -> e2e::Output {
        let mut cmd = self.user.command(&self.muster);
        cmd.args(args)
            .env("SLURM_CONF", self.state.join("slurm.conf"))
            .env_remove("XDG_CACHE_HOME");
        for (k, _) in std::env::vars() {
            if k.starts_with("SLURM_") && k != "SLURM_CONF" {
                cmd.env_remove(k);
            }
        }
        let out = cmd.output().expect("running muster as the user");
        e2e::Output {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }

    fn down(&self) -> e2e::Output {
        self.muster(&["down", "--state-dir", &self.state.display().to_string()])
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.state.join("log/noded-node1.log")).unwrap_or_default()
    }

    /// Waits for a batch job's end; its state.
    fn wait_done(&self, id: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.muster(&["squeue", "-h", "-t", "all", "-j", id, "-o", "%T"]);
            let state = s.stdout.trim().to_string();
            if ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"].contains(&state.as_str()) {
                return state;
            }
            assert!(start.elapsed() < secs(60), "job {id}: {s}\n{}", self.log());
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Up<'_> {
    fn drop(&mut self) {
        let _ = self.down();
    }
}

/// Every process of `uid` whose command line has one of `names`.
fn processes_of(uid: u32, names: &[&str]) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .filter(|l| !l.is_empty() && (names.is_empty() || names.iter().any(|n| l.contains(n))))
        .collect()
}

/// A one-layer OCI image layout of `root` whose config sets `IMAGE_VAR`
/// and the working directory `/work`.
pub(crate) fn oci_layout(s: &Scratch, root: &Path) -> PathBuf {
    let layer = s.path("layer.tar.gz");
    sh(Command::new("sh").arg("-c").arg(format!(
        "tar -C {} -cf - . | gzip -c > {}",
        root.display(),
        layer.display()
    )));
    let diff = s.path("layer.tar");
    sh(Command::new("sh").arg("-c").arg(format!(
        "gzip -dc {} > {}",
        layer.display(),
        diff.display()
    )));
    let dd = sha256(&diff);
    let layout = s.path("layout");
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{"Env":["PATH=/bin:/usr/bin","IMAGE_VAR=from-oci"],"WorkingDir":"/work"}},"rootfs":{{"type":"layers","diff_ids":["sha256:{dd}"]}}}}"#
    );
    let config_path = s.path("config.json");
    std::fs::write(&config_path, &config).unwrap();
    write_oci_layout(
        &layout,
        &config_path,
        &[(&layer, "application/vnd.oci.image.layer.v1.tar+gzip")],
    );
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(&layout));
    layout
}

/// Whether `user` may make user namespaces and FUSE mounts here; says why
/// not where it may not.
fn user_may_mount(user: &TestUser) -> bool {
    let fuse = std::fs::metadata("/dev/fuse").is_ok_and(|m| m.mode() & 0o006 == 0o006);
    let userns = user
        .command(Path::new("/usr/bin/unshare"))
        .args(["--user", "--map-root-user", "--mount", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let squashfuse = Command::new("squashfuse").arg("--help").output().is_ok();
    if fuse && userns && squashfuse {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must run it: /dev/fuse for all {fuse}, user namespaces {userns}, squashfuse {squashfuse}"
    );
    eprintln!(
        "containers_run_under_a_node_daemon_that_is_not_root: not run: /dev/fuse for all {fuse}, user namespaces {userns}, squashfuse {squashfuse}"
    );
    false
}

/// The unprivileged path end to end: a user's own `muster up` cluster
/// runs `srun --container-image` (the image's files, the user's uid inside
/// without capabilities, binds whose files are the user's, writable
/// changes that stay out of the image, a read-only root), with
/// `--container-remap-root` (0 inside, still no capabilities), an OCI
/// layout imported into the user's own cache, and a batch script in the
/// container; the kernel_squashfs default falls back to squashfuse with
/// the reason in the node's log. After `muster down` no anchor, squashfuse
/// or fuse-overlayfs of the user is left, nor anything mounted.
#[test]
fn containers_run_under_a_node_daemon_that_is_not_root() {
    if !can_run("containers_run_under_a_node_daemon_that_is_not_root") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let root = s.path("rootfs");
    std::fs::create_dir_all(root.join("work")).unwrap();
    let layout = oci_layout(&s, &root);
    let user = TestUser::create("un", s.dir.path());
    if !user_may_mount(&user) {
        return;
    }
    let uid = nix::unistd::User::from_name(&user.name)
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    let muster = s.path("muster");
    std::fs::copy(env!("CARGO_BIN_EXE_muster"), &muster).unwrap();
    set_mode(&muster, 0o755);
    let home = s.path(&user.name);
    let data = home.join("data");
    std::fs::create_dir_all(&data).unwrap();
    nix::unistd::chown(&data, Some(uid.into()), None).unwrap();
    let up = Up {
        user: &user,
        muster,
        state: home.join("state"),
    };
    let started = up.muster(&[
        "up",
        "--detach",
        "--state-dir",
        &up.state.display().to_string(),
        "--nodes",
        "1",
    ]);
    assert!(started.ok(), "{started}");
    let img_arg = format!("--container-image={}", img.display());
    let mounts = format!("--container-mounts={}:/data", data.display());
    let image_sum = sha256(&img);

    // The image's files, the user inside with no capabilities, a bind.
    let out = up.muster(&["srun", &img_arg, "cat", "/etc/os-release"]);
    assert!(
        out.ok() && out.stdout.contains("muster tiny image 1.0"),
        "{out}\n{}",
        up.log()
    );
    assert!(
        up.log()
            .contains("kernel_squashfs: the node daemon is not root"),
        "{}",
        up.log()
    );
    let out = up.muster(&[
        "srun",
        &img_arg,
        &mounts,
        "sh",
        "-c",
        "id -u; grep CapEff /proc/self/status; echo mine > /data/owned; echo $IMAGE_VAR",
    ]);
    assert_eq!(
        out.stdout,
        format!("{uid}\nCapEff:\t0000000000000000\nfrom-image\n"),
        "{out}\n{}",
        up.log()
    );
    assert_eq!(std::fs::metadata(data.join("owned")).unwrap().uid(), uid);

    // Writable: the change is the step's only; read-only: refused.
    let out = up.muster(&[
        "srun",
        &img_arg,
        "--container-writable",
        "sh",
        "-c",
        "echo leak > /etc/leak && cat /etc/leak",
    ]);
    assert_eq!(out.stdout, "leak\n", "{out}");
    let out = up.muster(&["srun", &img_arg, "cat", "/etc/leak"]);
    assert!(!out.ok() && out.stderr.contains("No such file"), "{out}");
    let out = up.muster(&["srun", &img_arg, "--container-readonly", "touch", "/etc/ro"]);
    assert!(
        !out.ok() && out.stderr.contains("Read-only file system"),
        "{out}"
    );
    assert_eq!(sha256(&img), image_sum, "the image is unchanged");

    // --container-remap-root: 0 inside, no capabilities, the user outside.
    let out = up.muster(&[
        "srun",
        &img_arg,
        &mounts,
        "--container-remap-root",
        "sh",
        "-c",
        "id -u; grep CapEff /proc/self/status; echo remapped > /data/remapped",
    ]);
    assert_eq!(
        out.stdout,
        "0\nCapEff:\t0000000000000000\n",
        "{out}\n{}",
        up.log()
    );
    assert_eq!(std::fs::metadata(data.join("remapped")).unwrap().uid(), uid);

    // An OCI layout, imported into the user's own cache (the default
    // cache_dir of a daemon that is not root).
    let out = up.muster(&[
        "srun",
        &format!("--container-image={}", layout.display()),
        "sh",
        "-c",
        "echo $IMAGE_VAR; pwd; head -1 /etc/os-release",
    ]);
    assert_eq!(
        out.stdout,
        "from-oci\n/work\nNAME=\"Muster Busybox\"\n",
        "{out}\n{}",
        up.log()
    );
    let cached: Vec<PathBuf> = std::fs::read_dir(home.join(".cache/muster/containers/images"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert_eq!(std::fs::metadata(&cached[0]).unwrap().uid(), uid);

    // A batch script in the container.
    let b_out = home.join("batch.out");
    let out = up.muster(&[
        "sbatch",
        "--parsable",
        &img_arg,
        "-o",
        &b_out.display().to_string(),
        "--wrap",
        "id -u; head -1 /etc/os-release",
    ]);
    assert!(out.ok(), "{out}");
    assert_eq!(up.wait_done(out.stdout.trim()), "COMPLETED", "{}", up.log());
    assert_eq!(
        std::fs::read_to_string(&b_out).unwrap(),
        format!("{uid}\nNAME=\"Muster Busybox\"\n")
    );

    // A named container's changes last for the job's steps; one is saved
    // as squashfs, the user's; its directory goes with the job.
    let srun = up.state.join("bin/srun");
    let saved = home.join("saved.sqsh");
    let n_out = home.join("named.out");
    let out = up.muster(&[
        "sbatch",
        "--parsable",
        "-o",
        &n_out.display().to_string(),
        "--wrap",
        &format!(
            "{srun} --container-name=c {img_arg} sh -c 'echo v1 > /etc/installed' && \
             {srun} --container-name=c --container-save={saved} cat /etc/installed",
            srun = srun.display(),
            saved = saved.display()
        ),
    ]);
    assert!(out.ok(), "{out}");
    let id = out.stdout.trim().to_string();
    assert_eq!(up.wait_done(&id), "COMPLETED", "{}", up.log());
    assert_eq!(std::fs::read_to_string(&n_out).unwrap(), "v1\n");
    assert_eq!(std::fs::metadata(&saved).unwrap().uid(), uid);
    let cat = Command::new("unsquashfs")
        .arg("-cat")
        .arg(&saved)
        .arg("etc/installed")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&cat.stdout), "v1\n");
    let named = home.join(format!(".cache/muster/containers/named/job_{id}"));
    let start = Instant::now();
    while named.exists() {
        assert!(start.elapsed() < secs(10), "{} is left", named.display());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // While a step runs: the anchor and the tasks in the container's mount
    // namespace are the user's, without capabilities; squashfuse serves
    // the image there.
    for remap in [false, true] {
        let _ = std::fs::remove_file(data.join("pid"));
        let mut srun = up.user.command(&up.muster);
        srun.arg("srun")
            .arg(&img_arg)
            .arg(&mounts)
            .args(remap.then_some("--container-remap-root"))
            .args([
                "-n2",
                "sh",
                "-c",
                "[ $SLURM_PROCID = 0 ] && echo $$ > /data/pid.part && mv /data/pid.part /data/pid; sleep 3",
            ])
            .env("SLURM_CONF", up.state.join("slurm.conf"))
            .env_remove("SLURM_JOB_ID")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = srun.spawn().unwrap();
        let start = Instant::now();
        let pid: u32 = loop {
            if let Some(p) = std::fs::read_to_string(data.join("pid"))
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break p;
            }
            assert!(start.elapsed() < secs(30), "no task pid\n{}", up.log());
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let inside = processes_sharing_mounts_with(pid);
        assert!(child.wait().unwrap().success());
        assert!(
            inside.iter().any(|p| p.cmdline.starts_with("squashfuse")),
            "{inside:?}"
        );
        assert!(
            inside
                .iter()
                .filter(|p| !p.cmdline.starts_with("squashfuse"))
                .count()
                >= 3,
            "two tasks and the anchor: {inside:?}"
        );
        for p in &inside {
            assert_eq!(p.uid, uid, "remap {remap}: {p:?}");
            if !p.cmdline.starts_with("squashfuse") {
                assert_eq!(p.cap_eff, "0000000000000000", "remap {remap}: {p:?}");
            }
        }
    }

    // Nothing is left: no process of the user after `muster down`, no
    // mount of the test's anywhere this namespace sees.
    let down = up.down();
    assert!(down.ok(), "{down}");
    let start = Instant::now();
    loop {
        let left = processes_of(uid, &[]);
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < secs(10),
            "left running after down: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(processes_of(uid, &["squashfuse", "fuse-overlayfs", "--container-anchor"]).is_empty());
    s.assert_clean();
    drop(up);
}
