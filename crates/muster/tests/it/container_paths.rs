//! Issue 42's paths the first container tests left out, each end to end
//! on a real cluster with images built here (see `containers.rs`) and,
//! where a registry is involved, a real `docker-registry` on loopback (see
//! `container_registry.rs`): the kernel refusing an image (squashfuse
//! takes over), Basic auth with enroot's credentials file, a second Unix
//! user's pull and cache, token auth through a mirror, the cache's size
//! limit, salloc, pyxis.conf's defaults against the options, OCI tarballs,
//! opaque whiteouts and a corrupted docker-archive, a container step killed
//! for memory in sacct.
//!
//! Also the leftover check every container test ends with
//! ([`assert_nothing_left`]): the test process's own mount table cannot
//! see inside the containers' mount namespaces, so it reads every
//! process's, and looks for anchors, squashfuse and fuse-overlayfs
//! processes by their arguments.

use crate::auth::{set_mode, TestUser};
use crate::container_registry::{
    layer, make_certs, push_image, registry_tools, Registry, TokenServer,
};
use crate::containers::{
    can_run, rootfs, settle_clean, sh, sha256, squash, tar_dir, write_oci_layout, Scratch,
};
use crate::secs;
use e2e::Cluster;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------
// Leftovers.

fn cmdline(pid: &str) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Whether a command line is one of the container runtime's processes.
fn is_container_process(cmd: &str) -> bool {
    let first = cmd.split(' ').next().unwrap_or("");
    cmd.contains(" --container-anchor")
        || first.ends_with("squashfuse")
        || first.ends_with("squashfuse_ll")
        || first.ends_with("fuse-overlayfs")
}

/// Every process, its command line and its mount table (once per mount
/// namespace), and every loop device's backing file, whose text passes
/// `pick`; as lines for an assertion message.
fn scan(pick: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut namespaces = BTreeSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in procs.flatten() {
        let pid = e.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmd = cmdline(&pid);
        if is_container_process(&cmd) && pick(&cmd) {
            out.push(format!("process {pid}: {cmd}"));
        }
        let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/mnt")) else {
            continue;
        };
        if !namespaces.insert(ns) {
            continue;
        }
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        for l in mounts.lines().filter(|l| pick(l)) {
            out.push(format!("mount seen by {pid} ({cmd}): {l}"));
        }
    }
    if let Ok(list) = std::fs::read_dir("/sys/block") {
        for e in list.flatten() {
            let f = e.path().join("loop/backing_file");
            if let Ok(text) = std::fs::read_to_string(&f) {
                if pick(&text) {
                    out.push(format!("loop device {}: {}", f.display(), text.trim()));
                }
            }
        }
    }
    out
}

/// What is left of the test whose scratch directory is `base`: mounts of
/// its paths in any mount namespace, loop devices on its files, and
/// anchors, squashfuse or fuse-overlayfs processes that name it.
pub(crate) fn leftovers(base: &Path) -> Vec<String> {
    let base = format!("{}/", base.display());
    scan(&|text: &str| text.contains(&base))
}

/// The `muster-ctr-*` scratch directories a text names.
fn scratch_dirs(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("/muster-ctr-") {
        let start = rest[..i]
            .rfind(|c: char| c.is_whitespace() || c == '=' || c == ',' || c == ':')
            .map_or(0, |s| s + 1);
        let tail = &rest[i + 1..];
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == ',')
            .unwrap_or(tail.len());
        out.push(PathBuf::from(&rest[start..i + 1 + end]));
        rest = &tail[end..];
    }
    out
}

/// What is left of container tests that already ended (their scratch
/// directory is gone): the same scan, for any `muster-ctr-` path whose
/// directory no longer exists. Safe while other tests run: a live test's
/// directory exists.
pub(crate) fn leftovers_of_ended_tests() -> Vec<String> {
    scan(&names_an_ended_test)
}

/// Whether a text names a `muster-ctr-` directory that is gone.
fn names_an_ended_test(text: &str) -> bool {
    scratch_dirs(text)
        .iter()
        .any(|d| d.is_absolute() && !d.exists())
}

/// The check every container test ends with.
pub(crate) fn assert_nothing_left(base: &Path) {
    let left = leftovers(base);
    assert!(left.is_empty(), "left behind:\n{}", left.join("\n"));
    let stale = leftovers_of_ended_tests();
    assert!(
        stale.is_empty(),
        "left behind by an ended container test:\n{}",
        stale.join("\n")
    );
}

// ---------------------------------------------------------------------
// Helpers.

/// The command lines of every process in the mount namespace of `pid`.
fn namespace_cmdlines(pid: u32) -> Vec<String> {
    let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/mnt")) else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .filter(|p| {
            std::fs::read_link(format!("/proc/{p}/ns/mnt"))
                .ok()
                .as_ref()
                == Some(&ns)
        })
        .map(|p| cmdline(&p))
        .collect()
}

/// Runs `srun args...` in the background; its task writes its pid to
/// `data/pid` (bound at `/data`) and sleeps 3 s. Returns the child and the
/// command lines of the processes in the task's mount namespace, and the
/// loop devices' backing files while it ran.
fn while_a_step_runs(c: &Cluster, img_arg: &str, data: &Path) -> (Vec<String>, Vec<String>) {
    let _ = std::fs::remove_file(data.join("pid"));
    let mounts = format!("--container-mounts={}:/data", data.display());
    let mut srun = c.command("srun");
    srun.args([
        img_arg,
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
    let inside = namespace_cmdlines(pid.trim().parse().unwrap());
    // The leftover check sees a running container: its anchor (named by
    // its run directory) and the mounts in its namespace.
    let seen = leftovers(data.parent().unwrap());
    assert!(
        seen.iter()
            .any(|l| l.starts_with("process ") && l.contains(" --container-anchor ")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|l| l.starts_with("mount seen by ")),
        "{seen:?}"
    );
    let loops = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("loop/backing_file")).ok())
        .map(|t| t.trim().to_string())
        .collect();
    assert!(child.wait().unwrap().success());
    (inside, loops)
}

fn uid_of(user: &TestUser) -> u32 {
    nix::unistd::User::from_name(&user.name)
        .unwrap()
        .unwrap()
        .uid
        .as_raw()
}

fn chown_tree(p: &Path, user: &TestUser) {
    sh(Command::new("chown")
        .arg("-R")
        .arg(format!("{0}:{0}", user.name))
        .arg(p));
}

/// A registry that asks for Basic auth (`htpasswd`, bcrypt, as
/// distribution requires), its access log on, over `storage`.
fn basic_registry(s: &Scratch, name: &str, storage: &Path, users: &[(&str, &str)]) -> Registry {
    let htpasswd = s.path(&format!("{name}.htpasswd"));
    for (i, (user, pass)) in users.iter().enumerate() {
        let mut cmd = Command::new("htpasswd");
        cmd.arg("-bB");
        if i == 0 {
            cmd.arg("-c");
        }
        sh(cmd.arg(&htpasswd).args([user, pass]));
    }
    let port = e2e::free_port();
    let conf = format!(
        "version: 0.1\nlog:\n  level: warn\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: muster-test-secret\n\
         auth:\n  htpasswd:\n    realm: muster-test\n    path: {}\n",
        storage.display(),
        htpasswd.display()
    );
    Registry::spawn(s.dir.path(), name, port, &conf)
}

/// The requests in a registry's access log (`GET /v2/...`), from line
/// `from` on.
fn requests(r: &Registry, from: usize) -> Vec<String> {
    std::fs::read_to_string(&r.log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let q = l.split('"').nth(1)?;
            q.starts_with("GET ").then(|| q.to_string())
        })
        .skip(from)
        .collect()
}

/// Whether `htpasswd` is here (apache2-utils; xtask/setup.sh installs it).
fn htpasswd_tool(test: &str) -> bool {
    if Command::new("htpasswd").arg("-h").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "{test}: CI must run it; missing htpasswd (apache2-utils; xtask/setup.sh installs it)"
    );
    eprintln!("{test}: not run: it needs htpasswd (apache2-utils)");
    false
}

/// Pushes the busybox image (with `/etc/marker`) through an open
/// registry on `storage` as `repo:1`; returns its manifest's digest.
fn push_busybox(s: &Scratch, storage: &Path, repos: &[&str]) -> Vec<String> {
    let plain = Registry::start(s.dir.path(), "push", storage, None);
    let root = s.path("rootfs");
    if !root.exists() {
        rootfs(&root);
        std::fs::remove_file(root.join("etc/environment")).unwrap();
        std::fs::write(root.join("etc/marker"), "pulled from the registry\n").unwrap();
    }
    let base = layer(s, "base", &root);
    let digests = repos
        .iter()
        .map(|r| push_image(plain.port, r, "1", std::slice::from_ref(&base), s).0)
        .collect();
    drop(plain);
    digests
}

const PULL_FAILED: &str = "slurmstepd: error: pyxis: failed to import docker image\n\
slurmstepd: error: pyxis: printing enroot log file:\n";

// ---------------------------------------------------------------------
// a. The kernel refuses, squashfuse serves.

/// Item 2's fallback: with `kernel_squashfs=1` (the default) an image the
/// kernel refuses is served by squashfuse, and the kernel's reason goes to
/// the node's log. The kernel really refuses it: packed with `-nopad` to a
/// size that is not a multiple of 512 bytes, the squashfs is longer than
/// the loop device (whole sectors) it would sit on, which the kernel's
/// squashfs rejects, while squashfuse reads the file itself. A padded
/// image is mounted through a loop device, with no squashfuse.
#[test]
fn squashfuse_serves_an_image_the_kernel_refuses() {
    let test = "squashfuse_serves_an_image_the_kernel_refuses";
    if !can_run(test) {
        return;
    }
    if Command::new("squashfuse").arg("--help").output().is_err() {
        assert!(std::env::var("CI").is_err(), "CI must have squashfuse");
        eprintln!("{test}: not run: no squashfuse");
        return;
    }
    let s = Scratch::new();
    let padded = s.image();
    let root = s.path("rootfs");
    let unpadded = s.path("unpadded.sqsh");
    for n in 0..64 {
        std::fs::write(root.join("etc/pad"), "x".repeat(n)).unwrap();
        sh(Command::new("mksquashfs").arg(&root).arg(&unpadded).args([
            "-nopad",
            "-noappend",
            "-quiet",
            "-no-progress",
        ]));
        if !std::fs::metadata(&unpadded)
            .unwrap()
            .len()
            .is_multiple_of(512)
        {
            break;
        }
    }
    assert!(!std::fs::metadata(&unpadded)
        .unwrap()
        .len()
        .is_multiple_of(512));
    set_mode(&unpadded, 0o644);
    let c = s.cluster("");
    let data = s.path("data");
    std::fs::create_dir_all(&data).unwrap();

    // The padded image: the kernel's, through a loop device.
    let arg = format!("--container-image={}", padded.display());
    let (inside, loops) = while_a_step_runs(&c, &arg, &data);
    assert!(
        !inside.iter().any(|p| p.starts_with("squashfuse")),
        "{inside:?}"
    );
    assert!(
        loops.iter().any(|l| l == &padded.display().to_string()),
        "no loop device on {}: {loops:?}",
        padded.display()
    );

    // The unpadded one: the kernel refuses, squashfuse serves it.
    let arg = format!("--container-image={}", unpadded.display());
    let out = c.ok("srun", &[&arg, "cat", "/etc/os-release", "/etc/pad"]);
    assert!(out.stdout.contains("muster tiny image 1.0"), "{out}");
    let (inside, loops) = while_a_step_runs(&c, &arg, &data);
    let image = unpadded.display().to_string();
    assert!(
        inside
            .iter()
            .any(|p| p.starts_with("squashfuse") && p.contains(&image)),
        "no squashfuse serves the step: {inside:?}"
    );
    assert!(!loops.contains(&image), "{loops:?}");
    let log = c.log("noded-node1");
    let reason = format!("pyxis: failed to mount the image {image}: ");
    let line = log
        .lines()
        .find(|l| l.contains(&reason))
        .unwrap_or_else(|| panic!("the kernel's reason is not in the node's log:\n{log}"));
    assert!(line.ends_with("; served by squashfuse instead"), "{line}");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// b, c. Basic auth; a second user's credentials and cache.

/// A registry with Basic auth (distribution's `htpasswd`): refused
/// without credentials and with a wrong password (pyxis's and enroot's
/// lines), pulled with the right ones from enroot's `.credentials`.
#[test]
fn basic_auth_with_enroot_credentials() {
    let test = "basic_auth_with_enroot_credentials";
    if !can_run(test) || !registry_tools(test) || !htpasswd_tool(test) {
        return;
    }
    let s = Scratch::new();
    let storage = s.path("storage");
    push_busybox(&s, &storage, &["test/basic"]);
    let reg = basic_registry(&s, "basic", &storage, &[("bob", "hunter2")]);
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(s.dir.path()));
    let c = s.cluster(&format!("registry_http=127.0.0.1:{}\n", reg.port));
    let image = format!("--container-image=127.0.0.1:{}#test/basic:1", reg.port);
    let manifest_url = format!(
        "URL http://127.0.0.1:{}/v2/test/basic/manifests/1 returned error code: 401 Unauthorized",
        reg.port
    );
    let refused = format!("{PULL_FAILED}slurmstepd: error: pyxis:     [ERROR] {manifest_url}\n");

    // No credentials.
    let out = c.run("srun", &[&image, "true"]);
    assert!(!out.ok(), "{out}");
    assert!(out.stderr.contains(&refused), "{out}");

    // A wrong password.
    let enroot = s.path("enroot");
    std::fs::create_dir_all(&enroot).unwrap();
    let creds = enroot.join(".credentials");
    std::fs::write(&creds, "machine 127.0.0.1 login bob password wrong\n").unwrap();
    let env = [("ENROOT_CONFIG_PATH", enroot.to_str().unwrap())];
    let out = c.run_env("srun", &[&image, "true"], &env);
    assert!(!out.ok(), "{out}");
    assert!(out.stderr.contains(&refused), "{out}");

    // The right one (for `host:port`, as enroot's netrc may say).
    std::fs::write(
        &creds,
        format!(
            "machine 127.0.0.1:{} login bob password hunter2\n",
            reg.port
        ),
    )
    .unwrap();
    let out = c.run_env("srun", &[&image, "cat", "/etc/marker"], &env);
    assert!(out.ok(), "{out}\n{}", c.logs());
    assert_eq!(out.stdout, "pulled from the registry\n");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

/// A second real Unix user pulls with the credentials in their home
/// (`$HOME/.config/enroot/.credentials`, enroot's default place); a second
/// pull of the image only asks for the manifest; a third user cannot use
/// the first one's credentials, neither by naming their directory nor
/// through a link to the file.
#[test]
fn another_user_pulls_with_credentials_in_their_home() {
    let test = "another_user_pulls_with_credentials_in_their_home";
    if !can_run(test) || !registry_tools(test) || !htpasswd_tool(test) {
        return;
    }
    let s = Scratch::new();
    let storage = s.path("storage");
    push_busybox(&s, &storage, &["test/private"]);
    let reg = basic_registry(&s, "basic", &storage, &[("carol", "s3cret")]);
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(s.dir.path()));
    let owner = TestUser::create("cpa", s.dir.path());
    let other = TestUser::create("cpb", s.dir.path());
    let home = s.path(&owner.name);
    let config = home.join(".config");
    std::fs::create_dir_all(config.join("enroot")).unwrap();
    let creds = config.join("enroot/.credentials");
    std::fs::write(&creds, "machine 127.0.0.1 login carol password s3cret\n").unwrap();
    chown_tree(&config, &owner);
    // The file itself is readable by all; the directory above it is not.
    set_mode(&config, 0o700);
    set_mode(&creds, 0o644);
    let c = s.cluster_for_users(&format!("registry_http=127.0.0.1:{}\n", reg.port));
    let image = format!("--container-image=127.0.0.1:{}#test/private:1", reg.port);

    let out = owner.run(&c, "srun", &[&image, "sh", "-c", "id -u; cat /etc/marker"]);
    assert!(out.ok(), "{out}\n{}", c.logs());
    assert_eq!(
        out.stdout,
        format!("{}\npulled from the registry\n", uid_of(&owner))
    );
    let first = requests(&reg, 0);
    assert!(
        first.iter().any(|r| r.contains("/blobs/sha256:")),
        "the first pull fetched no blob: {first:?}"
    );
    // Again: only the manifest is asked for; the cached image runs.
    let out = owner.run(&c, "srun", &[&image, "cat", "/etc/marker"]);
    assert!(out.ok(), "{out}");
    let second = requests(&reg, first.len());
    assert!(
        !second.is_empty(),
        "the second pull asked nothing: {first:?}"
    );
    assert!(
        second
            .iter()
            .all(|r| r.starts_with("GET /v2/test/private/manifests/1 ")),
        "the second pull asked for more than the manifest: {second:?}"
    );
    let images = std::fs::read_dir(s.path("cache/images")).unwrap().count();
    assert_eq!(images, 1);

    // Another user: not with the owner's file, even though the image is
    // in the node's cache.
    let refused = format!(
        "URL http://127.0.0.1:{}/v2/test/private/manifests/1 returned error code: 401 Unauthorized",
        reg.port
    );
    let enroot_dir = config.join("enroot");
    let mut srun = other.command(c.binary());
    srun.args(["srun", &image, "cat", "/etc/marker"])
        .env("SLURM_CONF", c.conf())
        .env_remove("SLURM_JOB_ID")
        .env("ENROOT_CONFIG_PATH", &enroot_dir);
    let out = srun.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(&refused), "{stderr}");
    // Through a link of their own to the owner's file.
    let link_dir = s.path(&other.name).join("enroot");
    std::fs::create_dir_all(&link_dir).unwrap();
    std::os::unix::fs::symlink(&creds, link_dir.join(".credentials")).unwrap();
    chown_tree(&link_dir, &other);
    let mut srun = other.command(c.binary());
    srun.args(["srun", &image, "cat", "/etc/marker"])
        .env("SLURM_CONF", c.conf())
        .env_remove("SLURM_JOB_ID")
        .env("ENROOT_CONFIG_PATH", &link_dir);
    let out = srun.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the owner's credentials served another user through a link: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains(&refused), "{stderr}");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// d. Token auth through a mirror.

/// `registry_mirror=nvcr.io=https://...`: an `nvcr.io#...` image is pulled
/// from the mirror (which answers 401 with a Bearer challenge), with a
/// token from its token server (anonymous, or with the user's credentials
/// for the token server's host for a private repository); it runs.
#[test]
fn token_auth_through_a_mirror() {
    let test = "token_auth_through_a_mirror";
    if !can_run(test) || !registry_tools(test) {
        return;
    }
    let s = Scratch::new();
    let storage = s.path("storage");
    push_busybox(&s, &storage, &["test/busybox", "test/private"]);
    let certs = s.path("certs");
    make_certs(&certs);
    let tokens = TokenServer::start(&certs);
    let port = e2e::free_port();
    let conf = format!(
        "version: 0.1\nlog:\n  level: warn\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: muster-test-secret\n\
         \x20 tls:\n    certificate: {c}/tls.crt\n    key: {c}/tls.key\n\
         auth:\n  token:\n    realm: http://127.0.0.1:{t}/token\n\
         \x20   service: muster-test\n    issuer: muster-test\n    rootcertbundle: {c}/token.crt\n",
        storage.display(),
        c = certs.display(),
        t = tokens.port
    );
    let mirror = Registry::spawn(s.dir.path(), "mirror", port, &conf);
    sh(Command::new("chmod").args(["-R", "a+rX"]).arg(s.dir.path()));
    let c = s.cluster(&format!(
        "registry_ca={}\nregistry_mirror=nvcr.io=https://127.0.0.1:{}\n",
        certs.join("ca.crt").display(),
        mirror.port
    ));
    // The mirror really asks for a token.
    let probe = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{}", mirror.port))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut ch| {
            use std::io::Write;
            ch.stdin.take().unwrap().write_all(
                b"GET /v2/test/busybox/manifests/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )?;
            ch.wait_with_output()
        })
        .unwrap();
    let answer = String::from_utf8_lossy(&probe.stdout);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.contains(&format!(
            "Www-Authenticate: Bearer realm=\"http://127.0.0.1:{}/token\"",
            tokens.port
        )),
        "{answer}"
    );

    let before = tokens.issued.load(Ordering::SeqCst);
    let out = c.ok(
        "srun",
        &[
            "--container-image=nvcr.io#test/busybox:1",
            "cat",
            "/etc/marker",
        ],
    );
    assert_eq!(out.stdout, "pulled from the registry\n", "{out}");
    assert!(tokens.issued.load(Ordering::SeqCst) > before);
    assert_eq!(
        std::fs::read_dir(s.path("cache/images")).unwrap().count(),
        1
    );

    // A private repository on the mirror: its token needs the user's
    // credentials for the token server's host.
    let private = "--container-image=nvcr.io#test/private:1";
    let out = c.run("srun", &[private, "true"]);
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "{PULL_FAILED}slurmstepd: error: pyxis:     [ERROR] URL http://127.0.0.1:{}/token returned error code: 401 Unauthorized\n",
            tokens.port
        )),
        "{out}"
    );
    let enroot = s.path("enroot");
    std::fs::create_dir_all(&enroot).unwrap();
    std::fs::write(
        enroot.join(".credentials"),
        "machine 127.0.0.1 login alice password secret\n",
    )
    .unwrap();
    let out = c.run_env(
        "srun",
        &[private, "cat", "/etc/marker"],
        &[("ENROOT_CONFIG_PATH", enroot.to_str().unwrap())],
    );
    assert!(out.ok(), "{out}");
    assert_eq!(out.stdout, "pulled from the registry\n");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// e. The cache's size limit.

/// A docker-archive of busybox plus `size` random bytes in `/payload`
/// (so that each image is different and weighs what the test needs).
fn archive_with_payload(s: &Scratch, name: &str, size: usize) -> PathBuf {
    let root = s.path(&format!("rootfs-{name}"));
    rootfs(&root);
    std::fs::remove_file(root.join("etc/environment")).unwrap();
    sh(Command::new("head")
        .arg("-c")
        .arg(size.to_string())
        .arg("/dev/urandom")
        .stdout(std::fs::File::create(root.join("payload")).unwrap()));
    std::fs::write(root.join("etc/name"), format!("{name}\n")).unwrap();
    let dir = s.path(&format!("archive-{name}"));
    std::fs::create_dir_all(dir.join("l1")).unwrap();
    let tar = dir.join("l1/layer.tar");
    tar_dir(&root, &tar);
    let d = sha256(&tar);
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{"Env":["PATH=/bin"]}},"rootfs":{{"type":"layers","diff_ids":["sha256:{d}"]}}}}"#
    );
    let config_path = dir.join("config.tmp");
    std::fs::write(&config_path, &config).unwrap();
    let dc = sha256(&config_path);
    std::fs::rename(&config_path, dir.join(format!("{dc}.json"))).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        format!(r#"[{{"Config":"{dc}.json","RepoTags":["{name}:1"],"Layers":["l1/layer.tar"]}}]"#),
    )
    .unwrap();
    let out = s.path(&format!("{name}.tar"));
    tar_dir(&dir, &out);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    set_mode(&out, 0o644);
    out
}

/// `cache_max_mb`: the cache keeps what fits; importing one image too
/// many drops the least recently used (not the oldest imported: an image
/// used from the cache counts as used then). pyxis.conf is read for each
/// step, so the limit is set once two images' sizes are known.
#[test]
fn the_image_cache_drops_the_least_recently_used_image() {
    let test = "the_image_cache_drops_the_least_recently_used_image";
    if !can_run(test) {
        return;
    }
    let s = Scratch::new();
    let mib = 1 << 20;
    let [a, b, third] = ["a", "b", "c"].map(|n| archive_with_payload(&s, n, 2 * mib));
    let c = s.cluster("");
    let cached = || -> BTreeSet<String> {
        std::fs::read_dir(s.path("cache/images"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let name_of = |img: &Path| {
        let out = c.ok(
            "srun",
            &[
                &format!("--container-image={}", img.display()),
                "cat",
                "/etc/name",
            ],
        );
        out.stdout
    };
    assert_eq!(name_of(&a), "a\n");
    let after_a = cached();
    assert_eq!(after_a.len(), 1);
    std::thread::sleep(secs(1));
    assert_eq!(name_of(&b), "b\n");
    let both = cached();
    assert_eq!(both.len(), 2);
    let b_file = both.difference(&after_a).next().unwrap().clone();
    let total: u64 = both
        .iter()
        .map(|f| {
            std::fs::metadata(s.path("cache/images").join(f))
                .unwrap()
                .len()
        })
        .sum();
    // Room for the two (rounded up to whole MiB), not for a third image
    // of 2 MiB of random bytes.
    let limit = total.div_ceil(mib as u64);
    let pyxis = c.conf().parent().unwrap().join("pyxis.conf");
    let text = std::fs::read_to_string(&pyxis).unwrap();
    std::fs::write(&pyxis, format!("{text}cache_max_mb={limit}\n")).unwrap();
    // a is used again (from the cache): now b is the least recently used.
    std::thread::sleep(secs(1));
    assert_eq!(name_of(&a), "a\n");
    assert_eq!(cached(), both, "using a cached image imported it again");
    std::thread::sleep(secs(1));
    assert_eq!(name_of(&third), "c\n");
    let now = cached();
    assert_eq!(now.len(), 2, "{now:?} (limit {limit} MiB)");
    assert!(!now.contains(&b_file), "b was kept: {now:?}");
    assert!(now.is_superset(&after_a), "a was dropped: {now:?}");
    // b imports again when used.
    assert_eq!(name_of(&b), "b\n");
    assert!(cached().contains(&b_file));
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// f. salloc.

/// `salloc --container-image=IMG CMD`: the command runs on the host (as
/// with pyxis), every srun in the allocation runs in the container,
/// with salloc's other options (here `--container-readonly`, carried in
/// Slurm's `SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_*` variables), unless the
/// srun says otherwise.
#[test]
fn salloc_steps_run_in_its_container() {
    let test = "salloc_steps_run_in_its_container";
    if !can_run(test) {
        return;
    }
    let s = Scratch::new();
    let img = s.image();
    let c = s.cluster("");
    let out = c.ok(
        "salloc",
        &[
            &format!("--container-image={}", img.display()),
            "--container-readonly",
            "sh",
            "-c",
            "grep -c 'muster tiny image' /etc/os-release; \
             echo image=$SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image \
             readonly=${SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_readonly+set}; \
             srun cat /etc/os-release; \
             srun touch /etc/x 2>/dev/null || echo read-only; \
             srun --container-writable sh -c 'touch /etc/x && echo writable'",
        ],
    );
    assert_eq!(
        out.stdout,
        format!(
            "0\nimage={} readonly=set\nNAME=\"Muster Busybox\"\nPRETTY_NAME=\"muster tiny image 1.0\"\nread-only\nwritable\n",
            img.display()
        ),
        "{out}"
    );
    // The allocation's record shows its container.
    let id = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("no allocation line: {out}"))
        .to_string();
    let shown = c.ok("scontrol", &["show", "job", &id]).stdout;
    assert!(
        shown.contains(&format!("   Container={}\n", img.display())),
        "{shown}"
    );
    c.wait_until("the allocation's container in sacct", secs(10), || {
        let o = c.run("sacct", &["-j", &id, "-X", "-P", "-n", "-o", "Container"]);
        (o.stdout.trim() == img.display().to_string()).then_some(())
    });
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// g. pyxis.conf's defaults and the options that override them.

/// `mount_home=1 container_writable=0 remap_root=1 execute_entrypoint=1`
/// in pyxis.conf: each takes effect for a second real user's step, and
/// `--no-container-mount-home`, `--container-writable`,
/// `--no-container-remap-root` and `--no-container-entrypoint` override
/// them, one at a time; the `PYXIS_CONTAINER_*` forms do too.
#[test]
fn pyxis_conf_defaults_apply_and_options_override_them() {
    let test = "pyxis_conf_defaults_apply_and_options_override_them";
    if !can_run(test) {
        return;
    }
    let s = Scratch::new();
    let root = s.path("rootfs-rc");
    rootfs(&root);
    std::fs::write(root.join("etc/rc"), "export FROM_RC=yes\nexec \"$@\"\n").unwrap();
    // A directory anyone may write to where the root is writable: the
    // image's other files are root's, which a user (remapped or not)
    // cannot change.
    std::fs::create_dir_all(root.join("wr")).unwrap();
    set_mode(&root.join("wr"), 0o1777);
    let img = s.path("rc.sqsh");
    squash(&root, &img);
    set_mode(&img, 0o644);
    let user = TestUser::create("cpg", s.dir.path());
    let home = s.path(&user.name);
    std::fs::write(home.join("marker"), "in the home\n").unwrap();
    chown_tree(&home, &user);
    let c = s
        .cluster_for_users("mount_home=1 container_writable=0 remap_root=1 execute_entrypoint=1\n");
    let probe = format!(
        "id -u; cat {}/marker 2>/dev/null || echo no-home; echo rc=${{FROM_RC:-none}}; \
         touch /wr/x 2>/dev/null && echo writable || echo read-only",
        home.display()
    );
    let image = format!("--container-image={}", img.display());
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut cmd = user.command(c.binary());
        cmd.arg("srun")
            .arg(&image)
            .args(extra)
            .args(["sh", "-c", &probe])
            .env("SLURM_CONF", c.conf())
            .env_remove("SLURM_JOB_ID");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{extra:?} {env:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            c.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let uid = uid_of(&user);
    assert_eq!(
        run(&[], &[]),
        "0\nin the home\nrc=yes\nread-only\n",
        "the site's defaults"
    );
    assert_eq!(
        run(&["--no-container-mount-home"], &[]),
        "0\nno-home\nrc=yes\nread-only\n"
    );
    assert_eq!(
        run(&["--container-writable"], &[]),
        "0\nin the home\nrc=yes\nwritable\n"
    );
    assert_eq!(
        run(&["--no-container-remap-root"], &[]),
        format!("{uid}\nin the home\nrc=yes\nread-only\n")
    );
    assert_eq!(
        run(&["--no-container-entrypoint"], &[]),
        "0\nin the home\nrc=none\nread-only\n"
    );
    // The variables' forms.
    assert_eq!(
        run(
            &[],
            &[
                ("PYXIS_CONTAINER_MOUNT_HOME", "0"),
                ("PYXIS_CONTAINER_WRITABLE", "1"),
                ("PYXIS_CONTAINER_REMAP_ROOT", "0"),
                ("PYXIS_CONTAINER_ENTRYPOINT", "0"),
            ]
        ),
        format!("{uid}\nno-home\nrc=none\nwritable\n")
    );
    // The options' positive forms against a site that says no (the
    // shipped defaults).
    let pyxis = c.conf().parent().unwrap().join("pyxis.conf");
    std::fs::write(&pyxis, format!("cache_dir={}\n", s.path("cache").display())).unwrap();
    assert_eq!(
        run(&[], &[]),
        format!("{uid}\nno-home\nrc=none\nwritable\n"),
        "the shipped defaults"
    );
    assert_eq!(
        run(
            &[
                "--container-mount-home",
                "--container-readonly",
                "--container-remap-root",
                "--container-entrypoint"
            ],
            &[]
        ),
        "0\nin the home\nrc=yes\nread-only\n"
    );
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// h. An OCI tarball, an opaque whiteout, a corrupted docker-archive.

/// An OCI layout packed in a tar imports; its upper layer's opaque
/// whiteout (`.wh..wh..opq`) empties the lower layer's directory (the
/// upper layer's own entries stay); a docker-archive whose layer had bytes
/// flipped is refused with pyxis's line, and nothing of it is left (no
/// cached image, no work directory, no mount).
#[test]
fn oci_tarballs_opaque_whiteouts_and_corrupted_archives() {
    let test = "oci_tarballs_opaque_whiteouts_and_corrupted_archives";
    if !can_run(test) {
        return;
    }
    let s = Scratch::new();
    let root = s.path("rootfs");
    rootfs(&root);
    std::fs::remove_file(root.join("etc/environment")).unwrap();
    std::fs::create_dir_all(root.join("opt/app/sub")).unwrap();
    std::fs::write(root.join("opt/app/old1"), "old\n").unwrap();
    std::fs::write(root.join("opt/app/sub/old2"), "old\n").unwrap();
    std::fs::write(root.join("opt/keep"), "kept\n").unwrap();
    let layer1 = s.path("layer1.tar");
    tar_dir(&root, &layer1);
    let l2 = s.path("l2");
    std::fs::create_dir_all(l2.join("opt/app")).unwrap();
    std::fs::write(l2.join("opt/app/.wh..wh..opq"), "").unwrap();
    std::fs::write(l2.join("opt/app/new"), "new\n").unwrap();
    let layer2 = s.path("layer2.tar");
    tar_dir(&l2, &layer2);
    let (d1, d2) = (sha256(&layer1), sha256(&layer2));
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{"Env":["PATH=/bin"],"WorkingDir":"/opt"}},"rootfs":{{"type":"layers","diff_ids":["sha256:{d1}","sha256:{d2}"]}}}}"#
    );
    let config_path = s.path("config.json");
    std::fs::write(&config_path, &config).unwrap();
    let dc = sha256(&config_path);

    // The OCI layout, as a tar.
    let layout = s.path("layout");
    write_oci_layout(
        &layout,
        &config_path,
        &[
            (&layer1, "application/vnd.oci.image.layer.v1.tar"),
            (&layer2, "application/vnd.oci.image.layer.v1.tar"),
        ],
    );
    let oci_tar = s.path("oci.tar");
    tar_dir(&layout, &oci_tar);
    std::fs::remove_dir_all(&layout).unwrap();
    set_mode(&oci_tar, 0o644);

    let c = s.cluster("");
    let out = c.ok(
        "srun",
        &[
            &format!("--container-image={}", oci_tar.display()),
            "sh",
            "-c",
            "pwd; ls -A /opt/app; cat /opt/keep /opt/app/new",
        ],
    );
    assert_eq!(out.stdout, "/opt\nnew\nkept\nnew\n", "{out}");
    let images = || std::fs::read_dir(s.path("cache/images")).unwrap().count();
    assert_eq!(images(), 1);

    // The same image as a docker-archive, the first layer's bytes flipped.
    let archive_dir = s.path("archive");
    std::fs::create_dir_all(archive_dir.join("l1")).unwrap();
    std::fs::create_dir_all(archive_dir.join("l2")).unwrap();
    let mut bytes = std::fs::read(&layer1).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    bytes[mid + 1] ^= 0xff;
    std::fs::write(archive_dir.join("l1/layer.tar"), bytes).unwrap();
    std::fs::copy(&layer2, archive_dir.join("l2/layer.tar")).unwrap();
    std::fs::copy(&config_path, archive_dir.join(format!("{dc}.json"))).unwrap();
    std::fs::write(
        archive_dir.join("manifest.json"),
        format!(r#"[{{"Config":"{dc}.json","RepoTags":["tiny:1.0"],"Layers":["l1/layer.tar","l2/layer.tar"]}}]"#),
    )
    .unwrap();
    let archive = s.path("corrupted.tar");
    tar_dir(&archive_dir, &archive);
    set_mode(&archive, 0o644);
    let out = c.run(
        "srun",
        &[&format!("--container-image={}", archive.display()), "true"],
    );
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "slurmstepd: error: pyxis: image blob sha256:{d1} is corrupted (its sha256 is sha256:"
        )),
        "{out}"
    );
    assert_eq!(images(), 1, "the corrupted archive left an image");
    let work: Vec<_> = std::fs::read_dir(s.path("cache/tmp"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(work.is_empty(), "work directories left: {work:?}");
    assert_eq!(c.node_state("node1"), "idle");
    settle_clean(&s, &c);
    drop(c);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// i. Out of memory in a container, in sacct.

/// A container step over its `--mem` (cgroup.conf's ConstrainRAMSpace)
/// ends OUT_OF_MEMORY in sacct, as a step without a container does
/// (`0:125`); so does a batch script run in a container.
#[test]
fn a_container_step_over_its_memory_is_out_of_memory_in_sacct() {
    let test = "a_container_step_over_its_memory_is_out_of_memory_in_sacct";
    if !can_run(test) || !crate::oom::memory_cgroups_writable() {
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
    let hog = "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo survived";
    let out = c.run("srun", &["--mem=40M", &image, "sh", "-c", hog]);
    assert!(!out.ok(), "{out}");
    assert!(!out.stdout.contains("survived"), "{out}");
    let step = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("slurmstepd: error: Detected 1 oom_kill event in StepId="))
        .and_then(|r| r.split(". ").next())
        .unwrap_or_else(|| panic!("no OOM line: {out}"))
        .to_string();
    let sacct = |what: &str| {
        c.wait_until("the record in sacct", secs(15), || {
            let o = c.run(
                "sacct",
                &[
                    "-n",
                    "-P",
                    "-o",
                    "JobID,State,ExitCode,Container",
                    "-j",
                    what,
                ],
            );
            (!o.stdout.trim().is_empty() && !o.stdout.contains("RUNNING")).then_some(o.stdout)
        })
    };
    assert_eq!(
        sacct(&step),
        format!("{step}|OUT_OF_MEMORY|0:125|{}\n", img.display())
    );
    // A batch script in a container.
    let id = c.submit(&["--mem=40M", &image, "-o", "oom.out", "--wrap", hog]);
    assert_eq!(c.wait_done(id, secs(60)), "OUT_OF_MEMORY", "{}", c.logs());
    assert_eq!(
        sacct(&id.to_string()),
        format!(
            "{id}|OUT_OF_MEMORY|0:125|{img}\n{id}.batch|OUT_OF_MEMORY|0:125|{img}\n",
            img = img.display()
        )
    );
    settle_clean(&s, c);
    drop(g);
    s.assert_clean();
}

// ---------------------------------------------------------------------
// j. The leftover check itself.

/// The leftover scan sees what the test process's own mount table does
/// not: a mount made inside another mount namespace (here by a process
/// this test starts with `unshare`), and a squashfuse process named by its
/// arguments; once they are gone it sees nothing. It also names scratch
/// directories in the kernel's words (`lowerdir=/tmp/muster-ctr-X/...`).
#[test]
fn the_leftover_check_sees_into_other_mount_namespaces() {
    let test = "the_leftover_check_sees_into_other_mount_namespaces";
    if !can_run(test) {
        return;
    }
    assert_eq!(
        scratch_dirs("x lowerdir=/tmp/muster-ctr-ab12/cache/run/1.0.9/lower,upperdir=/tmp/muster-ctr-ab12/x y"),
        vec![PathBuf::from("/tmp/muster-ctr-ab12"), PathBuf::from("/tmp/muster-ctr-ab12")]
    );
    let s = Scratch::new();
    let live = format!("squashfuse -f {}/img.sqsh /x", s.dir.path().display());
    assert!(!names_an_ended_test(&live));
    assert!(names_an_ended_test(&format!(
        "{}-gone/img.sqsh",
        s.dir.path().display()
    )));
    let img = s.image();
    let point = s.path("point");
    std::fs::create_dir_all(&point).unwrap();
    // A tmpfs in a private mount namespace, held by a sleeping process.
    let mut held = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs none {} && echo up && exec sleep 30",
            point.display()
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(held.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "up\n");
    }
    let own = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!own.contains(&point.display().to_string()));
    let left = leftovers(s.dir.path());
    assert!(
        left.iter()
            .any(|l| l.contains("mount seen by") && l.contains(&point.display().to_string())),
        "{left:?}"
    );
    let _ = held.kill();
    let _ = held.wait();
    // A squashfuse process (it mounts in this namespace; the check sees
    // the process and the mount).
    let fuse_point = s.path("fuse");
    std::fs::create_dir_all(&fuse_point).unwrap();
    if Command::new("squashfuse").arg("--help").output().is_ok() {
        let mut fuse = Command::new("squashfuse")
            .arg("-f")
            .arg(&img)
            .arg(&fuse_point)
            .spawn()
            .unwrap();
        let c = std::time::Instant::now();
        while !leftovers(s.dir.path())
            .iter()
            .any(|l| l.starts_with("process "))
        {
            assert!(c.elapsed() < secs(10), "{:?}", leftovers(s.dir.path()));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = Command::new("umount").arg(&fuse_point).output();
        let _ = fuse.kill();
        let _ = fuse.wait();
    }
    let c = std::time::Instant::now();
    while !leftovers(s.dir.path()).is_empty() {
        assert!(c.elapsed() < secs(10), "{:?}", leftovers(s.dir.path()));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    s.assert_clean();
}
