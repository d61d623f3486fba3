//! Containers the pyxis way (issue 42; isolation notes §5, tests 18-28):
//! `srun --container-image=...` on a small image built here (Debian's
//! busybox-static in a root file system, packed with mksquashfs, and as an
//! OCI layout and a docker-archive), run by the node daemon itself. They
//! need root (mount namespaces, loop devices), `mksquashfs` and
//! `/bin/busybox` (xtask/setup.sh installs squashfs-tools and
//! busybox-static); CI runs them as root. Each checks that nothing stays
//! mounted and no loop device still holds an image afterwards.

use crate::auth::{is_root, set_mode, TestUser};
use crate::{builder, secs};
use e2e::Cluster;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether this host can run the tests; says why not where it cannot.
pub(crate) fn can_run(test: &str) -> bool {
    let missing: Vec<&str> = [
        (!is_root()).then_some("root"),
        (!Path::new("/bin/busybox").is_file()).then_some("/bin/busybox (busybox-static)"),
        Command::new("mksquashfs")
            .arg("-version")
            .output()
            .is_err()
            .then_some("mksquashfs (squashfs-tools)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "{test}: CI must run it; missing {missing:?}"
    );
    eprintln!("{test}: not run: it needs {missing:?}");
    false
}

pub(crate) fn sh(cmd: &mut Command) {
    let out = cmd.output().expect("running a command");
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

/// A busybox root file system at `dir`: `/etc/os-release` names the
/// image, `/etc/environment` sets `IMAGE_VAR` and `FOO`.
pub(crate) fn rootfs(dir: &Path) {
    for d in [
        "bin", "etc", "proc", "sys", "dev", "tmp", "root", "data", "usr/bin",
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    // Copied by cp, not by this process: a copy's open file, inherited by
    // a child another test forks meanwhile, would make the exec below
    // fail with "Text file busy".
    sh(Command::new("cp")
        .arg("/bin/busybox")
        .arg(dir.join("bin/busybox")));
    sh(Command::new("chroot")
        .arg(dir)
        .args(["/bin/busybox", "--install", "-s", "/bin"]));
    std::fs::write(
        dir.join("etc/os-release"),
        "NAME=\"Muster Busybox\"\nPRETTY_NAME=\"muster tiny image 1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("etc/environment"),
        "PATH=/bin:/usr/bin\nIMAGE_VAR=from-image\nFOO=image\n",
    )
    .unwrap();
    std::fs::write(dir.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::write(dir.join("etc/passwd"), "root:x:0:0::/root:/bin/sh\n").unwrap();
}

/// The image as squashfs at `out`.
pub(crate) fn squash(rootfs: &Path, out: &Path) {
    sh(Command::new("mksquashfs").arg(rootfs).arg(out).args([
        "-noappend",
        "-quiet",
        "-no-progress",
    ]));
}

/// A directory the test owns: images, data, the node's cache.
pub(crate) struct Scratch {
    pub(crate) dir: tempfile::TempDir,
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("muster-ctr-")
            .tempdir()
            .unwrap();
        set_mode(dir.path(), 0o755);
        Scratch { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The squashfs image (built once per test).
    pub(crate) fn image(&self) -> PathBuf {
        let img = self.path("img.sqsh");
        if !img.exists() {
            let root = self.path("rootfs");
            rootfs(&root);
            squash(&root, &img);
            set_mode(&img, 0o644);
        }
        img
    }

    pub(crate) fn cluster(&self, extra: &str) -> Cluster {
        let conf = format!(
            "required /usr/lib/spank_pyxis.so cache_dir={}\n{extra}",
            self.path("cache").display()
        );
        builder().nodes(1).file("pyxis.conf", &conf).start()
    }

    /// A cluster whose binary a second Unix user may run (a copy in the
    /// scratch directory, by cp: see `rootfs` ("Text file busy")), the
    /// cluster's root open to all, with `pyxis.conf` (`cache_dir` and
    /// `extra`).
    pub(crate) fn cluster_for_users(&self, extra: &str) -> Cluster {
        self.cluster_for_users_with(extra, |b| b)
    }

    /// `cluster_for_users`, with more of the cluster's set-up (`more`).
    pub(crate) fn cluster_for_users_with(
        &self,
        extra: &str,
        more: impl FnOnce(e2e::Builder) -> e2e::Builder,
    ) -> Cluster {
        let muster_bin = self.path("muster");
        if !muster_bin.exists() {
            sh(Command::new("cp")
                .arg(env!("CARGO_BIN_EXE_muster"))
                .arg(&muster_bin));
        }
        let conf = format!("cache_dir={}\n{extra}", self.path("cache").display());
        let c = more(
            builder()
                .binary(&muster_bin)
                .nodes(1)
                .file("pyxis.conf", &conf),
        )
        .start();
        set_mode(c.root(), 0o755);
        c
    }

    /// Nothing of the test's is left: no mount of its paths in any
    /// process's mount namespace, no loop device on one of its images, no
    /// anchor, squashfuse or fuse-overlayfs process naming its directory;
    /// and nothing of a test that already ended (`container_paths`).
    pub(crate) fn assert_clean(&self) {
        crate::container_paths::assert_nothing_left(self.dir.path());
    }
}

/// Waits a moment for the containers to go (a step's anchor exits after
/// srun heard its end), then checks.
pub(crate) fn settle_clean(s: &Scratch, c: &Cluster) {
    let base = s.dir.path();
    c.wait_until("no container left", secs(10), || {
        crate::container_paths::leftovers(base)
            .is_empty()
            .then_some(())
    });
    s.assert_clean();
}

/// Tests 18-21, 25, 28 and the errors of item 5: the image's files, binds
/// (`:ro` too), the working directory, read-only and writable roots, the
/// image's environment against `--container-env`, one mount namespace for
/// all the tasks of a step, pyxis's messages; nothing left mounted.
#[test]
fn steps_run_in_squashfs_containers() {
    if !can_run("steps_run_in_squashfs_containers") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let img_arg = format!("--container-image={}", img.display());
    let c = s.cluster("");
    let data = s.path("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("hello"), "hello from the host\n").unwrap();

    // 18: the image's file, not the host's.
    let out = c.ok("srun", &[&img_arg, "cat", "/etc/os-release"]);
    assert!(out.stdout.contains("muster tiny image 1.0"), "{out}");

    // 19: a bind, written through; `:ro` refuses writes.
    let mounts = format!("--container-mounts={}:/data", data.display());
    let out = c.ok(
        "srun",
        &[
            &img_arg,
            &mounts,
            "sh",
            "-c",
            "cat /data/hello; echo written > /data/out",
        ],
    );
    assert_eq!(out.stdout, "hello from the host\n", "{out}");
    assert_eq!(
        std::fs::read_to_string(data.join("out")).unwrap(),
        "written\n"
    );
    let ro = format!("--container-mounts={}:/data:ro", data.display());
    let out = c.run("srun", &[&img_arg, &ro, "sh", "-c", "echo x > /data/ro"]);
    assert!(!out.ok(), "{out}");
    assert!(out.stderr.contains("Read-only file system"), "{out}");

    // 20: --container-workdir, else the image's (none: /).
    let out = c.ok(
        "srun",
        &[&img_arg, &mounts, "--container-workdir=/data", "pwd"],
    );
    assert_eq!(out.stdout, "/data\n");
    let out = c.ok("srun", &[&img_arg, "pwd"]);
    assert_eq!(out.stdout, "/\n");

    // 21: read-only root, binds still writable; a writable root's changes
    // go with the step.
    let out = c.run(
        "srun",
        &[
            &img_arg,
            &mounts,
            "--container-readonly",
            "sh",
            "-c",
            "echo ok > /data/rw; touch /etc/x",
        ],
    );
    assert!(!out.ok(), "{out}");
    assert!(out.stderr.contains("Read-only file system"), "{out}");
    assert_eq!(std::fs::read_to_string(data.join("rw")).unwrap(), "ok\n");
    c.ok(
        "srun",
        &[&img_arg, "--container-writable", "touch", "/etc/x"],
    );
    let out = c.run("srun", &[&img_arg, "ls", "/etc/x"]);
    assert!(!out.ok(), "an unnamed container kept a change: {out}");

    // 25: the image's FOO wins, unless --container-env names it; the
    // image's own variables are there.
    let out = c.run_env(
        "srun",
        &[&img_arg, "sh", "-c", "echo $FOO $IMAGE_VAR"],
        &[("FOO", "host")],
    );
    assert_eq!(out.stdout, "image from-image\n", "{out}");
    let out = c.run_env(
        "srun",
        &[&img_arg, "--container-env=FOO", "sh", "-c", "echo $FOO"],
        &[("FOO", "host")],
    );
    assert_eq!(out.stdout, "host\n", "{out}");

    // 28: the tasks of a step share the container (task 0 writes /tmp,
    // task 1 reads it) and have Slurm's variables.
    let out = c.ok(
        "srun",
        &[
            "-n2",
            &img_arg,
            "sh",
            "-c",
            "if [ $SLURM_PROCID = 0 ]; then echo shared > /tmp/f; else \
             i=0; while [ ! -s /tmp/f ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
             cat /tmp/f; echo $SLURM_NTASKS $SLURM_JOB_ID; fi",
        ],
    );
    assert!(out.stdout.starts_with("shared\n2 "), "{out}");

    // The environment forms (PYXIS_CONTAINER_*) stand for the options.
    let out = c.run_env(
        "srun",
        &["cat", "/etc/os-release"],
        &[("PYXIS_CONTAINER_IMAGE", &img.display().to_string())],
    );
    assert!(out.stdout.contains("muster tiny image"), "{out}");

    // Errors: pyxis's words, the node stays up.
    let out = c.run("srun", &["--container-image=/no/such.sqsh", "true"]);
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr
            .contains("pyxis: cannot use image /no/such.sqsh: No such file or directory"),
        "{out}"
    );
    let out = c.run("srun", &[&img_arg, "--container-mounts=data:/data", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "srun: error: pyxis: mount source must be an absolute or relative path, or \"tmpfs\": data:/data\n"
    );
    // A registry that is not there (loopback: the tests reach nothing
    // else; container_registry.rs pulls from real ones).
    let out = c.run(
        "srun",
        &[
            "--container-image=127.0.0.1:1#nvidia/pytorch:24.01-py3",
            "true",
        ],
    );
    assert!(
        out.stderr.contains("pyxis: failed to import docker image"),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("pyxis:     [ERROR] cannot connect to 127.0.0.1:1: Connection refused"),
        "{out}"
    );
    assert_eq!(c.ok("srun", &["echo", "healthy"]).stdout, "healthy\n");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// `--container-name` while a step runs the container (pyxis's flags):
/// `:exec` and the default (`auto`) join that step's mount namespace (its
/// private `/tmp` included), `:no_exec` gets a fresh namespace over the same
/// files, `:create` is refused, and `:exec` once no step runs it fails with
/// pyxis's message.
#[test]
fn named_containers_are_joined_while_a_step_runs_them() {
    if !can_run("named_containers_are_joined_while_a_step_runs_them") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let c = s.cluster("");
    let shared = s.path("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         srun --overlap --container-image={img} --container-name=c --container-mounts={shared}:/shared \
           sh -c 'echo x > /tmp/mark; echo fs > /etc/fsmark; echo first: $(readlink /proc/self/ns/mnt); \
           touch /shared/ready; i=0; while [ ! -f /shared/done ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done' &\n\
         i=0; while [ ! -f {shared}/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n\
         srun --overlap --container-name=c:exec sh -c 'echo exec: $(cat /tmp/mark) $(readlink /proc/self/ns/mnt)'\n\
         srun --overlap --container-name=c sh -c 'echo auto: $(cat /tmp/mark) $(readlink /proc/self/ns/mnt)'\n\
         srun --overlap --container-name=c:no_exec sh -c 'echo no_exec: $(cat /tmp/mark 2>/dev/null || echo none) $(cat /etc/fsmark) $(readlink /proc/self/ns/mnt)'\n\
         srun --overlap --container-name=c:create true || echo create-refused\n\
         touch {shared}/done\n\
         wait\n\
         srun --container-name=c:exec true || echo exec-refused\n",
        img = img.display(),
        shared = shared.display()
    );
    c.write("join.sh", &script);
    let id = c.submit(&["-o", "join.out", "join.sh"]);
    assert_eq!(c.wait_done(id, secs(90)), "COMPLETED", "{}", c.logs());
    let out = c.read("join.out");
    let field = |tag: &str| -> Vec<String> {
        out.lines()
            .find_map(|l| l.strip_prefix(tag))
            .unwrap_or_else(|| panic!("no {tag} line: {out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let first = field("first: ");
    assert_eq!(
        field("exec: "),
        ["x".to_string(), first[0].clone()],
        "{out}"
    );
    assert_eq!(
        field("auto: "),
        ["x".to_string(), first[0].clone()],
        "{out}"
    );
    let no_exec = field("no_exec: ");
    assert_eq!(no_exec[..2], ["none", "fs"], "{out}");
    assert_ne!(no_exec[2], first[0], "{out}");
    assert!(
        out.contains("pyxis: reusing existing container namespaces"),
        "{out}"
    );
    assert!(
        out.contains(
            "pyxis: error: \"create\" flag was passed to --container-name but the container already exists"
        ),
        "{out}"
    );
    assert!(out.contains("create-refused\n"), "{out}");
    assert!(
        out.contains(
            "pyxis: error: \"exec\" flag was passed to --container-name but the container is not running"
        ),
        "{out}"
    );
    assert!(out.contains("exec-refused\n"), "{out}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// Tests 22 and 23: a named container keeps its changes for the job's
/// later steps, not for another job; `:create` on an existing name fails;
/// `--container-save` writes a squashfs that holds the change. Also the
/// `Container` field of `scontrol show job`.
#[test]
fn named_containers_persist_for_the_job_and_save() {
    if !can_run("named_containers_persist_for_the_job_and_save") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let c = s.cluster("");
    let saved = s.path("saved.sqsh");
    let script = format!(
        "#!/bin/sh\n\
         srun --container-image={img} --container-name=foo sh -c 'echo pkg-v1 > /etc/installed'\n\
         srun --container-name=foo cat /etc/installed\n\
         srun --container-name=foo:create true || echo create-refused\n\
         srun --container-name=foo --container-save={saved} sh -c 'echo saved > /etc/marker'\n",
        img = img.display(),
        saved = saved.display()
    );
    c.write("named.sh", &script);
    let id = c.submit(&["-o", "named.out", "named.sh"]);
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    let out = c.read("named.out");
    assert!(out.contains("pkg-v1\n"), "{out}");
    assert!(
        out.contains(
            "pyxis: error: \"create\" flag was passed to --container-name but the container already exists"
        ),
        "{out}"
    );
    assert!(out.contains("create-refused\n"), "{out}");
    // Item 4: sacct's Container for a step is the image it ran (or the
    // named container it used); the job itself had none.
    let want = format!("{id}|\n{id}.batch|\n{id}.0|{}\n{id}.1|foo\n", img.display());
    let job = id.to_string();
    c.wait_until("the steps' containers in sacct", secs(10), || {
        let o = c.run("sacct", &["-j", &job, "-P", "-n", "-o", "JobID,Container"]);
        o.stdout.starts_with(&want).then_some(())
    });
    // Another job does not see it.
    let out = c.run(
        "srun",
        &[
            &format!("--container-image={}", img.display()),
            "--container-name=foo",
            "cat",
            "/etc/installed",
        ],
    );
    assert!(!out.ok(), "{out}");
    // The saved image holds the change.
    let out = c.ok(
        "srun",
        &[
            &format!("--container-image={}", saved.display()),
            "cat",
            "/etc/marker",
            "/etc/installed",
        ],
    );
    assert_eq!(out.stdout, "saved\npkg-v1\n");
    let out = c.ok(
        "sbatch",
        &[
            "--parsable",
            "--hold",
            &format!("--container-image={}", img.display()),
            "--wrap",
            "true",
        ],
    );
    let held: u32 = out.stdout.trim().parse().unwrap();
    let shown = c.ok("scontrol", &["show", "job", &held.to_string()]).stdout;
    assert!(
        shown.contains(&format!("   Container={}\n", img.display())),
        "{shown}"
    );
    c.ok("scancel", &[&held.to_string()]);
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
    assert!(
        !s.path("cache/named").join(format!("job_{id}")).exists(),
        "the job's named container outlived it"
    );
}

/// The batch script runs in the container given to sbatch, its output
/// on the host; the container is gone when the job ends.
#[test]
fn batch_scripts_run_in_the_container() {
    if !can_run("batch_scripts_run_in_the_container") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let c = s.cluster("");
    c.write(
        "b.sh",
        "#!/bin/sh\ncat /etc/os-release\necho $IMAGE_VAR\nls /data 2>&1 | head -1\n",
    );
    let id = c.submit(&[
        &format!("--container-image={}", img.display()),
        "--container-mounts=tmpfs:/data",
        "-o",
        "b.out",
        "b.sh",
    ]);
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    let out = c.read("b.out");
    assert!(out.contains("muster tiny image 1.0"), "{out}");
    assert!(out.contains("from-image\n"), "{out}");
    // Item 4: sacct's Container, on the job and its batch step.
    let want = format!("{id}|{img}\n{id}.batch|{img}\n", img = img.display());
    let job = id.to_string();
    c.wait_until("the job's container in sacct", secs(10), || {
        let o = c.run("sacct", &["-j", &job, "-P", "-n", "-o", "JobID,Container"]);
        (o.stdout == want).then_some(())
    });
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// Slurm's SPANK forms of pyxis's options: srun reads
/// `SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_<option>` (the command line wins,
/// and it wins over `PYXIS_CONTAINER_*`); sbatch and salloc set them for
/// the options they were given, so the batch script and salloc's command
/// see them and the sruns of an allocation run in its container.
#[test]
fn slurms_spank_environment_forms_carry_the_options() {
    if !can_run("slurms_spank_environment_forms_carry_the_options") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let img = img.display().to_string();
    let c = s.cluster("");
    let image_var = "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image";
    let out = c.run_env("srun", &["cat", "/etc/os-release"], &[(image_var, &img)]);
    assert!(out.stdout.contains("muster tiny image"), "{out}");
    // The command line wins over the SPANK form, which wins over pyxis's.
    let out = c.run_env(
        "srun",
        &[
            &format!("--container-image={img}"),
            "cat",
            "/etc/os-release",
        ],
        &[(image_var, "/no/such.sqsh")],
    );
    assert!(out.stdout.contains("muster tiny image"), "{out}");
    let out = c.run_env(
        "srun",
        &["cat", "/etc/os-release"],
        &[
            (image_var, &img),
            ("PYXIS_CONTAINER_IMAGE", "/no/such.sqsh"),
        ],
    );
    assert!(out.stdout.contains("muster tiny image"), "{out}");
    // A flag is given by its variable's presence.
    let out = c.run_env(
        "srun",
        &["touch", "/x"],
        &[
            (image_var, &img),
            (
                "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_readonly",
                "",
            ),
        ],
    );
    assert!(out.stderr.contains("Read-only file system"), "{out}");
    // sbatch: the batch script sees the forms of the options it was given.
    c.write(
        "spank.sh",
        "#!/bin/sh
echo image=$SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image
         env | grep -c '^SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_writable='
",
    );
    let id = c.submit(&[
        &format!("--container-image={img}"),
        "--container-writable",
        "-o",
        "spank.out",
        "spank.sh",
    ]);
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    assert_eq!(
        c.read("spank.out"),
        format!(
            "image={img}
1
"
        )
    );
    // salloc: its command sees them, and its sruns run in the container.
    let out = c.run(
        "salloc",
        &[
            &format!("--container-image={img}"),
            "sh",
            "-c",
            &format!("echo image=${image_var}; srun cat /etc/os-release"),
        ],
    );
    assert!(out.stdout.contains(&format!("image={img}\n")), "{out}");
    assert!(out.stdout.contains("muster tiny image"), "{out}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// Item 4: a container's start-up is the step's `ContainerStart` in sstat
/// (while it runs) and sacct (no more than its `Elapsed`); a step without
/// a container has none.
#[test]
fn container_start_up_is_in_sstat_and_sacct() {
    if !can_run("container_start_up_is_in_sstat_and_sacct") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let c = s.cluster("");
    c.write(
        "cs.sh",
        &format!(
            "#!/bin/sh\nsrun --container-image={} sleep 4\nsrun true\n",
            img.display()
        ),
    );
    let id = c.submit(&["-o", "cs.out", "cs.sh"]);
    let step0 = format!("{id}.0");
    let live = c.wait_until("sstat's ContainerStart", secs(30), || {
        let o = c.run(
            "sstat",
            &["-n", "-P", "-j", &step0, "-o", "JobID,ContainerStart"],
        );
        let line = o.stdout.lines().next()?.to_string();
        let (_, v) = line.split_once('|')?;
        (!v.is_empty()).then(|| v.to_string())
    });
    // `MM:SS.mmm` as sacct prints CPU times.
    let secs_of = |v: &str| -> f64 {
        let (m, s) = v.split_once(':').unwrap_or_else(|| panic!("{v}"));
        m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap()
    };
    assert!(live.contains('.'), "{live}");
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    let job = id.to_string();
    let rows = c.wait_until("sacct's steps", secs(10), || {
        let o = c.run(
            "sacct",
            &["-j", &job, "-P", "-n", "-o", "JobID,ContainerStart,Elapsed"],
        );
        let rows: Vec<Vec<String>> = o
            .stdout
            .lines()
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect();
        (rows.len() >= 4 && rows.iter().all(|r| r.len() == 3)).then_some(rows)
    });
    let row = |suffix: &str| {
        let want = format!("{id}{suffix}");
        rows.iter()
            .find(|r| r[0] == want)
            .unwrap_or_else(|| panic!("no {want}: {rows:?}"))
            .clone()
    };
    let r0 = row(".0");
    assert!(!r0[1].is_empty(), "{rows:?}");
    assert_eq!(r0[1], live, "sacct and sstat differ: {rows:?}");
    let elapsed: Vec<f64> = r0[2].split(':').map(|x| x.parse().unwrap()).collect();
    let elapsed = elapsed[0] * 3600.0 + elapsed[1] * 60.0 + elapsed[2];
    assert!(
        secs_of(&r0[1]).floor() <= elapsed,
        "ContainerStart over Elapsed: {rows:?}"
    );
    assert_eq!(row(".1")[1], "", "{rows:?}");
    assert_eq!(row(".batch")[1], "", "{rows:?}");
    assert_eq!(row("")[1], "", "{rows:?}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// Test 26: a container's processes are the step's: in its cgroup, under
/// its memory limit (an OOM kill ends it OUT_OF_MEMORY, with slurmstepd's
/// line), stopped while their job is suspended.
#[test]
fn container_tasks_stay_in_the_steps_cgroup() {
    if !can_run("container_tasks_stay_in_the_steps_cgroup")
        || !crate::oom::memory_cgroups_writable()
    {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let conf = format!("cache_dir={}\n", s.path("cache").display());
    let g = crate::oom::start_files(
        "ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n",
        &[("pyxis.conf", &conf)],
    );
    let c = g.c();
    let image = format!("--container-image={}", img.display());
    let out = c.ok("srun", &[&image, "cat", "/proc/self/cgroup"]);
    assert!(out.stdout.contains("/step_0"), "{out}");
    let out = c.run(
        "srun",
        &[
            "--mem=40M",
            &image,
            "sh",
            "-c",
            "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo survived",
        ],
    );
    assert!(!out.stdout.contains("survived"), "{out}");
    assert!(
        out.stderr
            .contains("slurmstepd: error: Detected 1 oom_kill event in StepId="),
        "{out}"
    );
    // Test 26's suspend half: a busy task in a container stops while its
    // job is suspended and runs again once it is resumed.
    let work = c.work().display().to_string();
    let id = c.submit(&[
        "-o",
        "susp.out",
        "--wrap",
        &format!(
            "srun {image} --container-mounts={work}:{work} \
             sh -c 'echo $$ > {work}/ctask.pid; while :; do :; done'"
        ),
    ]);
    let pid: u32 = c.wait_until("the container task's pid", secs(30), || {
        c.read("ctask.pid").trim().parse().ok()
    });
    assert_ne!(
        std::fs::read_link(format!("/proc/{pid}/ns/mnt")).unwrap(),
        std::fs::read_link("/proc/self/ns/mnt").unwrap(),
        "the task is in the container"
    );
    c.ok("scontrol", &["suspend", &id.to_string()]);
    c.wait_until("the task to stop", secs(10), || {
        let a = cpu_ticks(pid);
        std::thread::sleep(std::time::Duration::from_millis(500));
        (cpu_ticks(pid) == a).then_some(())
    });
    let frozen = cpu_ticks(pid);
    std::thread::sleep(secs(2));
    assert_eq!(cpu_ticks(pid), frozen, "CPU ticks moved while suspended");
    c.ok("scontrol", &["resume", &id.to_string()]);
    c.wait_until("the task to run again", secs(10), || {
        (cpu_ticks(pid) > frozen).then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(30)), "CANCELLED");
    settle_clean(&s, c);
    drop(g);
    s.assert_clean();
}

/// Item 2 (PMIx in a container): `srun --mpi=pmix --container-image=...`
/// runs an Open MPI program inside the container. The PMIx server's
/// directory (its rendezvous files and the shared-memory store that
/// clients map) is bound at its host path; the image is busybox with the
/// host's /usr bound read-only for Open MPI and its libraries. Without
/// the `pmix` feature or Open MPI it says so and stops.
#[test]
fn pmix_reaches_mpi_ranks_in_a_container() {
    if !can_run("pmix_reaches_mpi_ranks_in_a_container") {
        return;
    }
    if !cfg!(feature = "pmix") || !Path::new(crate::mpi::MPICC_OMPI).exists() {
        eprintln!(
            "pmix_reaches_mpi_ranks_in_a_container: not run: needs the `pmix` feature and {}",
            crate::mpi::MPICC_OMPI
        );
        return;
    }
    // Root's container (built as root) and a second user's (built as that
    // user, in the user's namespaces, with the step's PMIx directory bound
    // by the user's anchor).
    for as_user in [false, true] {
        pmix_ranks_in_a_container(as_user);
    }
}

fn pmix_ranks_in_a_container(as_user: bool) {
    let s = Scratch::new();
    let root = s.path("rootfs-usr");
    rootfs(&root);
    // The host's libraries through a bound /usr (Debian's merged /usr).
    std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
    std::os::unix::fs::symlink("usr/lib64", root.join("lib64")).unwrap();
    let img = s.path("usr.sqsh");
    squash(&root, &img);
    set_mode(&img, 0o644);
    let user = as_user.then(|| TestUser::create("cm", s.dir.path()));
    let c = if as_user {
        s.cluster_for_users("")
    } else {
        s.cluster("")
    };
    crate::mpi::compile(&c, crate::mpi::MPICC_OMPI, "allreduce-ompi");
    set_mode(c.work(), 0o755);
    let work = c.work().display().to_string();
    let args = [
        "-n2".to_string(),
        "--mpi=pmix".into(),
        format!("--container-image={}", img.display()),
        format!("--container-mounts=/usr:/usr:ro,{work}:{work}"),
        format!("--container-workdir={work}"),
        "sh".into(),
        "-c".into(),
        "id -u >&2; ls -A \"$PMIX_SERVER_TMPDIR\" | head -1 | grep -q . && ./allreduce-ompi".into(),
    ];
    let env = [
        ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ("OMPI_MCA_pml", "ob1"),
        ("OMPI_MCA_btl", "self,tcp"),
        ("OMPI_MCA_osc", "^ucx"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = match &user {
        None => c.run_env("srun", &args, &env),
        Some(u) => {
            let mut cmd = u.command(c.binary());
            cmd.arg("srun")
                .args(&args)
                .envs(env)
                .env("SLURM_CONF", c.conf())
                .env_remove("SLURM_JOB_ID");
            crate::auth::output(cmd)
        }
    };
    assert!(out.ok(), "as a user {as_user}: {out}\n{}", c.logs());
    let ranks: Vec<(u32, u32, u32)> = crate::mpi::ranks(&out.stdout)
        .into_iter()
        .map(|(r, n, _, sum)| (r, n, sum))
        .collect();
    assert_eq!(ranks, vec![(0, 2, 3), (1, 2, 3)], "{out}");
    let uid = user.as_ref().map_or(0, |u| {
        nix::unistd::User::from_name(&u.name)
            .unwrap()
            .unwrap()
            .uid
            .as_raw()
    });
    assert_eq!(out.stderr, format!("{uid}\n{uid}\n"), "{out}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// A process as `/proc` shows it.
#[derive(Debug)]
pub(crate) struct Proc {
    pub(crate) uid: u32,
    /// Its user namespace (`user:[INODE]`).
    pub(crate) user_ns: String,
    pub(crate) cap_eff: String,
    pub(crate) cmdline: String,
}

/// Every process in the mount namespace of `pid` (root reads them all).
pub(crate) fn processes_sharing_mounts_with(pid: u32) -> Vec<Proc> {
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{p}/ns/mnt"))
            .ok()
            .as_ref()
            != Some(&ns)
        {
            continue;
        }
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
                .unwrap_or_default()
        };
        let cmdline = std::fs::read(format!("/proc/{p}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.push(Proc {
            user_ns: std::fs::read_link(format!("/proc/{p}/ns/user"))
                .map(|l| l.display().to_string())
                .unwrap_or_default(),
            uid: field("Uid:").parse().unwrap_or(u32::MAX),
            cap_eff: field("CapEff:"),
            cmdline,
        });
    }
    out
}

/// Item 3 of the runtime: with `kernel_squashfs=0` (and where the kernel
/// refuses the image) squashfuse serves it, as a child of the anchor in
/// the container's mount namespace; the tasks read the image through it
/// and write through the overlay; when the step ends no squashfuse is
/// left running and nothing stays mounted.
#[test]
fn squashfuse_serves_images_and_leaves_no_daemon() {
    if !can_run("squashfuse_serves_images_and_leaves_no_daemon") {
        return;
    }
    if Command::new("squashfuse").arg("--help").output().is_err() {
        assert!(std::env::var("CI").is_err(), "CI must have squashfuse");
        eprintln!("squashfuse_serves_images_and_leaves_no_daemon: not run: no squashfuse");
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let img_arg = format!("--container-image={}", img.display());
    let c = s.cluster("kernel_squashfs=0");
    let data = s.path("data");
    std::fs::create_dir_all(&data).unwrap();
    let mounts = format!("--container-mounts={}:/data", data.display());
    let out = c.ok(
        "srun",
        &[
            "-n2",
            &img_arg,
            "sh",
            "-c",
            "if [ $SLURM_PROCID = 0 ]; then cat /etc/os-release; echo shared > /tmp/f; \
             touch /etc/written; else \
             i=0; while [ ! -s /tmp/f ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
             cat /tmp/f; fi",
        ],
    );
    assert!(out.stdout.contains("muster tiny image 1.0"), "{out}");
    assert!(out.stdout.contains("shared\n"), "{out}");
    // While a step runs, its image is a squashfuse mount held by a
    // squashfuse in the step's namespace.
    let mut srun = c.command("srun");
    srun.args([
        &img_arg,
        &mounts,
        "sh",
        "-c",
        "echo $$ > /data/pid.part && mv /data/pid.part /data/pid; sleep 3",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = srun.spawn().unwrap();
    let pid = c.wait_until("the task's pid", secs(30), || {
        std::fs::read_to_string(data.join("pid")).ok()
    });
    let inside = processes_sharing_mounts_with(pid.trim().parse().unwrap());
    let image = img.display().to_string();
    assert!(
        inside
            .iter()
            .any(|p| p.cmdline.starts_with("squashfuse") && p.cmdline.contains(&image)),
        "no squashfuse serves the step: {inside:?}"
    );
    assert!(child.wait().unwrap().success());
    settle_clean(&s, &c);
    let base = s.dir.path().display().to_string();
    c.wait_until("no squashfuse left", secs(10), || {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .filter(|l| l.starts_with("squashfuse") && l.contains(&base))
            .collect();
        left.is_empty().then_some(())
    });
    assert_eq!(c.node_state("node1"), "idle");
    drop(c);
    s.assert_clean();
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

/// sha256 of a file, hex.
/// The tree at `dir` as a tar file at `out` (an image layer, a layout).
pub(crate) fn tar_dir(dir: &Path, out: &Path) {
    sh(Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-cf")
        .arg(out)
        .arg("."));
}

pub(crate) fn sha256(p: &Path) -> String {
    let out = Command::new("sha256sum").arg(p).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Writes an OCI image layout at `layout`: the config (the JSON file at
/// `config_path`) and the layers (each a file and its media type, bottom
/// first) as blobs named by their sha256, a manifest naming them, an index
/// naming the manifest, and `oci-layout`.
pub(crate) fn write_oci_layout(layout: &Path, config_path: &Path, layers: &[(&Path, &str)]) {
    let blobs = layout.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let blob = |p: &Path| {
        let d = sha256(p);
        std::fs::copy(p, blobs.join(&d)).unwrap();
        (d, std::fs::metadata(p).unwrap().len())
    };
    let (dc, config_size) = blob(config_path);
    let layers: Vec<String> = layers
        .iter()
        .map(|(p, media)| {
            let (d, size) = blob(p);
            format!(r#"{{"mediaType":"{media}","digest":"sha256:{d}","size":{size}}}"#)
        })
        .collect();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:{dc}","size":{config_size}}},"layers":[{}]}}"#,
        layers.join(",")
    );
    let manifest_path = layout.with_extension("manifest.json");
    std::fs::write(&manifest_path, &manifest).unwrap();
    let (dm, manifest_size) = blob(&manifest_path);
    std::fs::write(
        layout.join("index.json"),
        format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{dm}","size":{manifest_size}}}]}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
}

/// Test 27: an OCI image layout (two layers, the second gzip'd with a
/// whiteout) and the same image as a docker-archive run as imported
/// squashfs; the whiteout removed the file, the config's Env and
/// WorkingDir apply; a corrupted blob is refused.
#[test]
fn oci_layouts_and_docker_archives_are_imported() {
    if !can_run("oci_layouts_and_docker_archives_are_imported") {
        return;
    }
    let s = Scratch::new();
    let root = s.path("rootfs");
    rootfs(&root);
    std::fs::remove_file(root.join("etc/environment")).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let layer1 = s.path("layer1.tar");
    tar_dir(&root, &layer1);
    let l2 = s.path("l2");
    std::fs::create_dir_all(l2.join("etc")).unwrap();
    std::fs::write(l2.join("etc/motd"), "added by layer 2\n").unwrap();
    std::fs::write(l2.join("etc/.wh.group"), "").unwrap();
    let layer2 = s.path("layer2.tar");
    tar_dir(&l2, &layer2);
    let layer2_gz = s.path("layer2.tar.gz");
    sh(Command::new("sh").arg("-c").arg(format!(
        "gzip -c {} > {}",
        layer2.display(),
        layer2_gz.display()
    )));
    let (d1, d2) = (sha256(&layer1), sha256(&layer2));
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{"Env":["PATH=/bin:/usr/bin","IMAGE_VAR=from-oci"],"WorkingDir":"/work"}},"rootfs":{{"type":"layers","diff_ids":["sha256:{d1}","sha256:{d2}"]}}}}"#
    );
    // The OCI layout.
    let layout = s.path("layout");
    let config_path = s.path("config.json");
    std::fs::write(&config_path, &config).unwrap();
    let dc = sha256(&config_path);
    write_oci_layout(
        &layout,
        &config_path,
        &[
            (&layer1, "application/vnd.oci.image.layer.v1.tar"),
            (&layer2_gz, "application/vnd.oci.image.layer.v1.tar+gzip"),
        ],
    );
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(s.dir.path()));

    let c = s.cluster("");
    let probe = "cat /etc/motd; ls /etc; echo $IMAGE_VAR; pwd";
    let out = c.ok(
        "srun",
        &[
            &format!("--container-image={}", layout.display()),
            "sh",
            "-c",
            probe,
        ],
    );
    let want = "added by layer 2\nmotd\nos-release\npasswd\nfrom-oci\n/work\n";
    assert!(out.stdout.starts_with("added by layer 2\n"), "{out}");
    assert!(
        !out.stdout.contains("group"),
        "the whiteout was not applied: {out}"
    );
    assert!(out.stdout.ends_with("from-oci\n/work\n"), "{out}");
    let cached = std::fs::read_dir(s.path("cache/images")).unwrap().count();
    assert_eq!(cached, 1);
    // Again: from the cache.
    let again = c.ok(
        "srun",
        &[
            &format!("--container-image={}", layout.display()),
            "sh",
            "-c",
            probe,
        ],
    );
    assert_eq!(again.stdout, out.stdout);

    // The same image as `docker save` writes it.
    let archive_dir = s.path("archive");
    std::fs::create_dir_all(archive_dir.join("l1")).unwrap();
    std::fs::create_dir_all(archive_dir.join("l2")).unwrap();
    std::fs::copy(&layer1, archive_dir.join("l1/layer.tar")).unwrap();
    std::fs::copy(&layer2, archive_dir.join("l2/layer.tar")).unwrap();
    std::fs::copy(&config_path, archive_dir.join(format!("{dc}.json"))).unwrap();
    std::fs::write(
        archive_dir.join("manifest.json"),
        format!(r#"[{{"Config":"{dc}.json","RepoTags":["tiny:1.0"],"Layers":["l1/layer.tar","l2/layer.tar"]}}]"#),
    )
    .unwrap();
    let archive = s.path("tiny.tar");
    tar_dir(&archive_dir, &archive);
    set_mode(&archive, 0o644);
    let out2 = c.ok(
        "srun",
        &[
            &format!("--container-image={}", archive.display()),
            "sh",
            "-c",
            probe,
        ],
    );
    assert_eq!(out2.stdout, out.stdout);
    assert!(want.starts_with("added"));

    // A corrupted layer is refused.
    let bad = s.path("bad");
    sh(Command::new("cp").arg("-a").arg(&layout).arg(&bad));
    let blob = bad.join("blobs/sha256").join(&d1);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[600] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    std::fs::remove_dir_all(s.path("cache/images")).unwrap();
    let out = c.run(
        "srun",
        &[&format!("--container-image={}", bad.display()), "true"],
    );
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr
            .contains(&format!("pyxis: image blob sha256:{d1} is corrupted")),
        "{out}"
    );
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// Test 24 (its unprivileged half) and 19's ownership: a second real Unix
/// user's step runs as that user inside, with no capabilities, and what it
/// writes through a bind is the user's on the host; an image the user
/// cannot read is refused.
#[test]
fn another_users_container_runs_as_that_user() {
    if !can_run("another_users_container_runs_as_that_user") {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let user = TestUser::create("ct", s.dir.path());
    let c = s.cluster_for_users("");
    let home = s.path(&user.name);
    let mounts = format!("--container-mounts={}:/data", home.display());
    let out = user.run(
        &c,
        "srun",
        &[
            &format!("--container-image={}", img.display()),
            &mounts,
            "sh",
            "-c",
            "id -u; grep CapEff /proc/self/status; echo mine > /data/owned",
        ],
    );
    assert!(out.ok(), "{out}\n{}", c.logs());
    let uid = nix::unistd::User::from_name(&user.name)
        .unwrap()
        .unwrap()
        .uid;
    assert_eq!(
        out.stdout,
        format!("{uid}\nCapEff:\t0000000000000000\n"),
        "{out}"
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(home.join("owned")).unwrap().uid(),
        uid.as_raw()
    );
    // 24: --container-remap-root: 0 inside, the user outside.
    let out = user.run(
        &c,
        "srun",
        &[
            &format!("--container-image={}", img.display()),
            &mounts,
            "--container-remap-root",
            "sh",
            "-c",
            "id -u; echo remapped > /data/remapped",
        ],
    );
    assert_eq!(out.stdout, "0\n", "{out}\n{}", c.logs());
    assert_eq!(
        std::fs::metadata(home.join("remapped")).unwrap().uid(),
        uid.as_raw()
    );
    // 24 for the batch step: sbatch --container-remap-root.
    let out = user.run(
        &c,
        "sbatch",
        &[
            "--parsable",
            &format!("--container-image={}", img.display()),
            "--container-remap-root",
            "-o",
            &home.join("remap.out").display().to_string(),
            "--wrap",
            "id -u; cat /etc/os-release | head -1",
        ],
    );
    assert!(out.ok(), "{out}");
    let id: u32 = out.stdout.trim().parse().unwrap();
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    let text = std::fs::read_to_string(home.join("remap.out")).unwrap();
    assert_eq!(text, "0\nNAME=\"Muster Busybox\"\n");
    assert_eq!(
        std::fs::metadata(home.join("remap.out")).unwrap().uid(),
        uid.as_raw()
    );
    // 24, end to end: every process in the container's mount namespace
    // (the tasks, the anchor that holds it, the squashfuse that serves
    // the image: the container is built as the user) is the user's; none
    // but squashfuse has capabilities, remapped too, and squashfuse's are
    // in the user's own namespace only (the host's root is not in it).
    let host_userns = std::fs::read_link("/proc/self/ns/user")
        .unwrap()
        .display()
        .to_string();
    for remap in [false, true] {
        let _ = std::fs::remove_file(home.join("pid"));
        let mut srun = user.command(c.binary());
        srun.arg("srun")
            .arg(format!("--container-image={}", img.display()))
            .arg(&mounts)
            .args(remap.then_some("--container-remap-root"))
            .args([
                "-n2",
                "sh",
                "-c",
                "[ $SLURM_PROCID = 0 ] && echo $$ > /data/pid.part && mv /data/pid.part /data/pid; sleep 4",
            ])
            .env("SLURM_CONF", c.conf())
            .env_remove("SLURM_JOB_ID")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = srun.spawn().unwrap();
        let pid = c.wait_until("the task's pid", secs(30), || {
            std::fs::read_to_string(home.join("pid")).ok()
        });
        let inside = processes_sharing_mounts_with(pid.trim().parse().unwrap());
        assert!(child.wait().unwrap().success());
        assert!(
            inside
                .iter()
                .any(|p| p.cmdline.contains("--container-anchor")),
            "the anchor holds the namespace: {inside:?}"
        );
        assert!(
            inside.iter().any(|p| p.cmdline.starts_with("squashfuse")),
            "squashfuse serves the user's image: {inside:?}"
        );
        assert!(
            inside.len() >= 4,
            "two tasks, the anchor and squashfuse: {inside:?}"
        );
        for p in &inside {
            assert_eq!(p.uid, uid.as_raw(), "remap {remap}: {p:?}");
            if p.cmdline.starts_with("squashfuse") {
                assert!(
                    !p.user_ns.is_empty() && p.user_ns != host_userns,
                    "squashfuse in the host's user namespace: {p:?}"
                );
            } else {
                // Remapped tasks are 0 in the user's namespace without any
                // capability there either (enroot's fake root, less).
                assert_eq!(p.cap_eff, "0000000000000000", "remap {remap}: {p:?}");
            }
        }
    }
    // An image only root may read is not the user's to run.
    let secret = s.path("secret.sqsh");
    std::fs::copy(&img, &secret).unwrap();
    set_mode(&secret, 0o600);
    let out = user.run(
        &c,
        "srun",
        &[&format!("--container-image={}", secret.display()), "true"],
    );
    assert!(
        out.stderr.contains("pyxis: cannot use image") && out.stderr.contains("Permission denied"),
        "{out}"
    );
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// A user's container under a root node daemon is built as the user, in
/// the user's namespaces (isolation notes §2.3, point 3): in a writable
/// container the user changes the image's files, as itself and remapped
/// (0 inside, without capabilities); the change stays in the step's
/// overlay (the image file is unchanged, the next step does not see it),
/// a named container keeps it for the job's next step, and
/// `--container-save` writes the user's file with it (the files root's in
/// the saved image, as enroot exports). While a step runs, no process in
/// its mount namespace is root's; nothing is left afterwards.
#[test]
fn a_users_container_is_the_users_to_change() {
    if !can_run("a_users_container_is_the_users_to_change") {
        return;
    }
    if Command::new("squashfuse").arg("--help").output().is_err() {
        assert!(std::env::var("CI").is_err(), "CI must have squashfuse");
        eprintln!("a_users_container_is_the_users_to_change: not run: no squashfuse");
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let before = sha256(&img);
    let user = TestUser::create("cw", s.dir.path());
    let uid = nix::unistd::User::from_name(&user.name)
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    let c = s.cluster_for_users("");
    let home = s.path(&user.name);
    let img_arg = format!("--container-image={}", img.display());
    let host_userns = std::fs::read_link("/proc/self/ns/user")
        .unwrap()
        .display()
        .to_string();
    // As the user: the image's files are the user's inside.
    let out = user.run(
        &c,
        "srun",
        &[
            &img_arg,
            "sh",
            "-c",
            "id -u; stat -c %u /etc/os-release; echo x >> /etc/os-release && \
             touch /bin/newfile && tail -n1 /etc/os-release",
        ],
    );
    assert!(out.ok(), "{out}\n{}", c.logs());
    assert_eq!(out.stdout, format!("{uid}\n{uid}\nx\n"), "{out}");
    // Remapped: 0 inside, the files 0's, no capabilities; the same write.
    let out = user.run(
        &c,
        "srun",
        &[
            &img_arg,
            "--container-remap-root",
            "sh",
            "-c",
            "id -u; stat -c %u /etc/os-release; grep CapEff /proc/self/status; \
             echo y >> /etc/os-release && touch /bin/newfile && tail -n1 /etc/os-release",
        ],
    );
    assert!(out.ok(), "{out}\n{}", c.logs());
    assert_eq!(out.stdout, "0\n0\nCapEff:\t0000000000000000\ny\n", "{out}");
    // Neither change reached the image, nor the next step's container.
    let out = user.run(
        &c,
        "srun",
        &[
            &img_arg,
            "sh",
            "-c",
            "grep -c '^[xy]$' /etc/os-release; test -e /bin/newfile && echo leaked; true",
        ],
    );
    assert_eq!(out.stdout, "0\n", "{out}\n{}", c.logs());
    assert_eq!(sha256(&img), before, "the image file changed");
    // An image root imported into the cache (an OCI layout) is the
    // user's to read and change too.
    let layout = crate::containers_unpriv::oci_layout(&s, &s.path("rootfs"));
    let out = user.run(
        &c,
        "srun",
        &[
            &format!("--container-image={}", layout.display()),
            "sh",
            "-c",
            "echo $IMAGE_VAR; echo z >> /etc/os-release && tail -n1 /etc/os-release",
        ],
    );
    assert_eq!(out.stdout, "from-oci\nz\n", "{out}\n{}", c.logs());
    // While a step runs (remapped, writable), nothing in its mount
    // namespace is root's: tasks, anchor, squashfuse are the user's.
    let _ = std::fs::remove_file(home.join("pid"));
    let mounts = format!("--container-mounts={}:/data", home.display());
    let mut srun = user.command(c.binary());
    srun.args(["srun", &img_arg, &mounts, "--container-remap-root"])
        .args([
            "sh",
            "-c",
            "echo $$ > /data/pid.part && mv /data/pid.part /data/pid; sleep 3",
        ])
        .env("SLURM_CONF", c.conf())
        .env_remove("SLURM_JOB_ID")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = srun.spawn().unwrap();
    let pid = c.wait_until("the task's pid", secs(30), || {
        std::fs::read_to_string(home.join("pid")).ok()
    });
    let inside = processes_sharing_mounts_with(pid.trim().parse().unwrap());
    assert!(child.wait().unwrap().success());
    for name in ["--container-anchor", "squashfuse"] {
        assert!(
            inside.iter().any(|p| p.cmdline.contains(name)),
            "no {name} in the container: {inside:?}"
        );
    }
    for p in &inside {
        assert_eq!(p.uid, uid, "a process of another user's: {p:?}");
    }
    // A named container keeps the change for the job's next step; while
    // a step runs it, `:exec` and `auto` join it (as the user); saved, it
    // is the user's file, with the change.
    let saved = home.join("saved.sqsh");
    let script = format!(
        "#!/bin/sh\n\
         srun {img_arg} --container-name=mine sh -c 'echo kept >> /etc/os-release; touch /bin/newfile'\n\
         srun --container-name=mine sh -c 'id -u; tail -n1 /etc/os-release; ls /bin/newfile'\n\
         srun --overlap --container-name=mine --container-mounts={home}:/h sh -c 'echo x > /tmp/mark; \
           echo first: $(readlink /proc/self/ns/user); touch /h/ready; i=0; while [ ! -f /h/done ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done' &\n\
         i=0; while [ ! -f {home}/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n\
         srun --overlap --container-name=mine:exec sh -c 'echo exec: $(id -u) $(cat /tmp/mark) $(readlink /proc/self/ns/user)'\n\
         srun --overlap --container-name=mine sh -c 'echo auto: $(cat /tmp/mark) $(tail -n1 /etc/os-release)'\n\
         touch {home}/done\n\
         wait\n\
         srun --container-name=mine --container-save={saved} sh -c 'echo saved > /etc/marker'\n",
        saved = saved.display(),
        home = home.display()
    );
    let script_path = home.join("named.sh");
    std::fs::write(&script_path, script).unwrap();
    set_mode(&script_path, 0o755);
    // (The cluster's command links on PATH, for the script's srun.)
    let out = user
        .command(c.binary())
        .arg("sbatch")
        .arg("--parsable")
        .arg("-o")
        .arg(home.join("named.out"))
        .arg(&script_path)
        .env("SLURM_CONF", c.conf())
        .env("PATH", c.path_env())
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    let text = std::fs::read_to_string(home.join("named.out")).unwrap();
    // The joining task is in the step's own (the user's) user namespace.
    let first = text
        .lines()
        .find_map(|l| l.strip_prefix("first: "))
        .unwrap_or_else(|| panic!("no first line: {text}"));
    assert!(
        first.starts_with("user:[") && first != host_userns,
        "{text}"
    );
    for want in [
        format!("{uid}\nkept\n/bin/newfile\n"),
        format!("exec: {uid} x {first}\n"),
        "auto: x kept\n".to_string(),
        "pyxis: reusing existing container namespaces\n".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} not in {text}\n{}", c.logs());
    }
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&saved).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (uid, user_gid(&user.name)));
    // The saved image: the user's changes, its files root's (run as root,
    // by the kernel's squashfs).
    let out = c.ok(
        "srun",
        &[
            &format!("--container-image={}", saved.display()),
            "sh",
            "-c",
            "cat /etc/marker; tail -n1 /etc/os-release; ls /bin/newfile; stat -c %u /etc/marker",
        ],
    );
    assert_eq!(out.stdout, "saved\nkept\n/bin/newfile\n0\n", "{out}");
    assert_eq!(sha256(&img), before, "the image file changed");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
    assert!(
        !s.path("cache/named").join(format!("job_{id}")).exists(),
        "the job's named container outlived it"
    );
    // `user_namespaces=0`: the site's old way, built as root (the kernel's
    // squashfs, the image's files root's): the user may not change them.
    let c = s.cluster_for_users("user_namespaces=0\n");
    let out = user.run(
        &c,
        "srun",
        &[
            &img_arg,
            "sh",
            "-c",
            "id -u; stat -c %u /etc/os-release; echo x >> /etc/os-release || echo refused",
        ],
    );
    assert!(out.ok(), "{out}\n{}", c.logs());
    assert_eq!(out.stdout, format!("{uid}\n0\nrefused\n"), "{out}");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

fn user_gid(name: &str) -> u32 {
    nix::unistd::User::from_name(name)
        .unwrap()
        .unwrap()
        .gid
        .as_raw()
}

/// `--container-entrypoint` runs each task through the image's `/etc/rc`,
/// whose own output pyxis hides unless `--container-entrypoint-log` asks
/// for it, or the entrypoint fails before starting the command (then its
/// exit code and output come with pyxis's lines); the command's exit code
/// passes through; a batch script runs through it as well.
#[test]
fn the_entrypoint_runs_and_its_output_is_shown_as_pyxis_shows_it() {
    if !can_run("the_entrypoint_runs_and_its_output_is_shown_as_pyxis_shows_it") {
        return;
    }
    let s = Scratch::new();
    let root = s.path("rootfs-rc");
    rootfs(&root);
    std::fs::write(
        root.join("etc/rc"),
        "echo rc says hello\necho rc warns >&2\n\
         if [ -n \"$RC_FAIL\" ]; then echo rc broke; exit 3; fi\n\
         export FROM_RC=yes\nexec \"$@\"\n",
    )
    .unwrap();
    let img = s.path("rc.sqsh");
    squash(&root, &img);
    set_mode(&img, 0o644);
    let img_arg = format!("--container-image={}", img.display());
    let c = s.cluster("");

    // Hidden by default; the command runs under it (its variable set).
    let out = c.ok(
        "srun",
        &[
            &img_arg,
            "--container-entrypoint",
            "sh",
            "-c",
            "echo cmd $FROM_RC",
        ],
    );
    assert_eq!(out.stdout, "cmd yes\n", "{out}");
    assert!(!out.stderr.contains("rc warns"), "{out}");

    // Shown with --container-entrypoint-log.
    let out = c.ok(
        "srun",
        &[
            &img_arg,
            "--container-entrypoint",
            "--container-entrypoint-log",
            "echo",
            "cmd",
        ],
    );
    assert_eq!(out.stdout, "rc says hello\ncmd\n", "{out}");
    assert!(out.stderr.contains("rc warns"), "{out}");

    // Not run without --container-entrypoint (the site's default here).
    let out = c.ok("srun", &[&img_arg, "sh", "-c", "echo cmd ${FROM_RC:-none}"]);
    assert_eq!(out.stdout, "cmd none\n", "{out}");

    // The command's exit code passes through.
    let out = c.run(
        "srun",
        &[&img_arg, "--container-entrypoint", "sh", "-c", "exit 7"],
    );
    assert_eq!(out.code, 7, "{out}");
    assert!(!out.stderr.contains("pyxis"), "{out}");

    // An entrypoint that fails: its output, with pyxis's lines.
    let out = c.run(
        "srun",
        &[
            "--export=ALL,RC_FAIL=1",
            &img_arg,
            "--container-entrypoint",
            "echo",
            "never",
        ],
    );
    assert_eq!(out.code, 3, "{out}");
    assert!(!out.stdout.contains("never"), "{out}");
    for line in [
        "pyxis: container start failed with error code: 3",
        "pyxis: printing contents of log file ...",
        "pyxis:     rc says hello",
        "pyxis:     rc broke",
        "pyxis: couldn't start container",
    ] {
        assert!(out.stderr.contains(line), "{line:?} in {out}");
    }

    // The batch script runs through it too.
    c.write("rc.sh", "#!/bin/sh\necho script $FROM_RC\n");
    let id = c.submit(&[&img_arg, "--container-entrypoint", "-o", "rc.out", "rc.sh"]);
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.read("rc.out"), "script yes\n");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// The job's GPUs in its container (isolation notes §2.3, point 5, the
/// device half): a step with `--gres=gpu:1` finds its GPU's device file
/// at its own path in the container, and not the node's other GPUs';
/// `CUDA_VISIBLE_DEVICES` names it. Fake GPUs (gres.conf `File=` naming
/// plain files, as `it::gpus` does: nothing opens them), for root's
/// container and for a second user's (built as the user). The NVIDIA
/// driver's libraries are not injected (no GPU here to check them on).
#[test]
fn a_steps_gpus_are_in_its_container() {
    if !can_run("a_steps_gpus_are_in_its_container") {
        return;
    }
    for as_user in [false, true] {
        let s = Scratch::new();
        let img = s.image();
        let dev = s.path("gpudev");
        std::fs::create_dir_all(&dev).unwrap();
        for i in 0..2 {
            std::fs::write(dev.join(format!("nvidia{i}")), "").unwrap();
        }
        let gpus = |b: e2e::Builder| {
            b.node_extra(1, "Gres=gpu:fake:2").file(
                "gres.conf",
                &format!("Name=gpu Type=fake File={}/nvidia[0-1]\n", dev.display()),
            )
        };
        let user = as_user.then(|| TestUser::create("cg", s.dir.path()));
        let c = s.cluster_for_users_with("", gpus);
        let probe = format!(
            "ls {}; echo cuda=$CUDA_VISIBLE_DEVICES; id -u",
            dev.display()
        );
        let args = [
            "--gres=gpu:1",
            &format!("--container-image={}", img.display()),
            "sh",
            "-c",
            &probe,
        ];
        let (out, uid) = match &user {
            None => (c.run("srun", &args), 0),
            Some(u) => (
                u.run(&c, "srun", &args),
                nix::unistd::User::from_name(&u.name)
                    .unwrap()
                    .unwrap()
                    .uid
                    .as_raw(),
            ),
        };
        assert!(out.ok(), "as a user {as_user}: {out}\n{}", c.logs());
        assert_eq!(out.stdout, format!("nvidia0\ncuda=0\n{uid}\n"), "{out}");
        // Without a GPU the step's container has no GPU file at all.
        let args = [
            &format!("--container-image={}", img.display()),
            "sh",
            "-c",
            &format!("ls {} 2>/dev/null | wc -l", dev.display()),
        ];
        let out = match &user {
            None => c.run("srun", &args),
            Some(u) => u.run(&c, "srun", &args),
        };
        assert!(out.ok(), "{out}");
        assert_eq!(out.stdout.trim(), "0", "{out}");
        settle_clean(&s, &c);
        drop(c);
        s.assert_clean();
    }
}
