//! `muster-cli` (the user commands alone) is linked statically where the C
//! library's static archives are installed (glibc's `libc.a`, Debian's
//! libc6-dev), else as a position-dependent executable. Either way its
//! code is still compiled position-independent.
//!
//! Why: a command is a process per call, and its start is most of what a
//! loop of `sbatch` costs. Linked dynamically, `sbatch --version` took
//! 0.82 ms of CPU and 93 page faults here; statically, 0.45 ms and 52, the
//! same as a dynamically linked `/bin/true` (docs/performance-history.md). No
//! loader maps libc and libgcc_s, resolves symbols or runs their CPU
//! probes (each `cpuid` a trap to the hypervisor on a VM).
//!
//! How: rustc cannot be told to link one binary of a package with
//! `crt-static`, so the link is made static by the linker's arguments for
//! that binary alone: `-static`, and a directory searched first in which
//! the shared libraries rustc asks for (`-lc`, `-lgcc_s`, `-lm`, ...) are
//! linker scripts naming the static archives (`GROUP(.../libc.a ...)`).
//! Built for musl (`cargo xtask cli-musl`), the binary is static by the
//! target's default, with no glibc start-up at all.
//!
//! `cfg(static_cli)` tells `muster-cli` that it was linked so: it hands
//! itself over to the dynamic `muster` where a static C library cannot do
//! what the command needs (src/bin/muster-cli.rs, `needs_dynamic`).
//!
//! The daemons' `muster` stays a dynamically linked PIE: it needs the
//! site's name services for every user (initgroups), dlopens libmunge,
//! links OpenPMIx, and is started once, so its start does not matter.
//!
//! Also: `MUSTER_GIT_COMMIT`, the commit this was built from, for
//! `muster --version` (see `git_commit`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(static_cli)");
    println!("cargo:rustc-env=MUSTER_GIT_COMMIT={}", git_commit());
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "musl" {
        // musl (`cargo xtask cli-musl`; static unless `-crt-static`) loads
        // no name service modules at all: the same hand-over as a static
        // glibc.
        println!("cargo:rustc-cfg=static_cli");
        return;
    }
    if os != "linux" || env != "gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bin=muster-cli=-no-pie");
    println!("cargo:rerun-if-env-changed=MUSTER_CLI_DYNAMIC");
    // MUSTER_CLI_DYNAMIC=1 keeps the dynamic link; so do cross builds (the
    // host's C compiler would name the host's archives).
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok()
        || std::env::var_os("MUSTER_CLI_DYNAMIC").is_some()
    {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let dir = PathBuf::from(out).join("static-cli");
    match shadow_libraries(&dir) {
        Ok(true) => {
            println!("cargo:rustc-link-arg-bin=muster-cli=-static");
            println!("cargo:rustc-link-arg-bin=muster-cli=-L{}", dir.display());
            println!("cargo:rustc-cfg=static_cli");
        }
        Ok(false) => {
            println!("cargo:warning=no static C library (libc.a): muster-cli is linked dynamically")
        }
        Err(e) => println!("cargo:warning=muster-cli is linked dynamically: {e}"),
    }
}

/// Writes into `dir` a linker script for each shared library rustc links
/// a binary with, naming the static archive instead. Ok(false) when the C
/// compiler knows no `libc.a`.
fn shadow_libraries(dir: &Path) -> std::io::Result<bool> {
    let Some(libc) = archive("c") else {
        return Ok(false);
    };
    let (Some(gcc), Some(gcc_eh)) = (archive("gcc"), archive("gcc_eh")) else {
        return Ok(false);
    };
    std::fs::create_dir_all(dir)?;
    let group = |first: &[&Path]| -> String {
        let names: Vec<String> = first
            .iter()
            .chain([libc.as_path(), gcc.as_path(), gcc_eh.as_path()].iter())
            .map(|p| p.display().to_string())
            .collect();
        format!("GROUP({})\n", names.join(" "))
    };
    std::fs::write(dir.join("libc.so"), group(&[]))?;
    std::fs::write(dir.join("libgcc_s.so"), group(&[]))?;
    // glibc 2.34 and later keep libdl, librt, libpthread and libutil as
    // empty archives (their code moved into libc); libm is its own.
    for name in ["m", "dl", "rt", "pthread", "util"] {
        let text = match archive(name) {
            Some(a) => group(&[a.as_path()]),
            None => group(&[]),
        };
        std::fs::write(dir.join(format!("lib{name}.so")), text)?;
    }
    Ok(true)
}

/// The path of `lib<name>.a` as the C compiler finds it, if it does
/// (`cc -print-file-name` echoes the bare name when it does not).
fn archive(name: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .arg(format!("-print-file-name=lib{name}.a"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}

/// The short hash of the commit checked out, or `unknown` outside a git
/// checkout (a source tarball) or without git; `MUSTER_GIT_COMMIT` in the
/// build's environment wins (packagers). The script reruns when HEAD or
/// the branch it names moves, so a commit rebuilds this package alone,
/// not the workspace.
fn git_commit() -> String {
    println!("cargo:rerun-if-env-changed=MUSTER_GIT_COMMIT");
    if let Ok(given) = std::env::var("MUSTER_GIT_COMMIT") {
        return given;
    }
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".to_string();
    };
    // In a worktree HEAD is the worktree's own, the branch in the shared
    // directory; `--git-path` resolves both. A path that does not exist
    // (a packed ref) would make cargo rerun every build: watch
    // packed-refs instead.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if let Ok(path) = PathBuf::from(path).canonicalize() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    commit
}
