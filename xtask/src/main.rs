//! Repository automation. `cargo xtask verify` runs exactly what CI runs and
//! never modifies the source tree: as root, the set-up of what the tests
//! need (`xtask/setup.sh`: munged, PostgreSQL, MPI); formatting, lints, the
//! documentation (`cargo doc`, warnings as errors: no broken links), the
//! whole test suite (unit, golden, property and end-to-end tests with real
//! daemons), the dependency rules of ARCHITECTURE.md, and the README's own
//! first command (`readme`: a local cluster up, a job run on it, down).
//!
//! `cargo xtask tidy` fails on:
//! - a dependency edge between workspace crates that is not in the allowed
//!   table (`deps::ALLOWED_EDGES`), or a pure crate (`PURE_CRATES`) that
//!   reaches tokio, rpc, journal, accounting, auth, client, a daemon or an
//!   async runtime (`deps::PURE_FORBIDDEN`), directly or through others;
//! - a pure crate without the shared `clippy.toml` (the same file in each)
//!   whose `disallowed-methods`/`disallowed-types` make clippy refuse clock,
//!   environment, file, socket and process calls there (`verify` runs
//!   clippy with `-D warnings`);
//! - a switched-off test (`#[ignore]`, `#[should_panic]`).
//!
//! `cargo xtask cli-musl` builds `muster-cli` (the user commands) against
//! musl, statically and position-dependent (`cli_musl`), and puts it at
//! `target/release/muster-cli`, where `muster up` and `muster
//! install-links` find it: a command then starts without glibc's
//! start-up, whose CPU probes (`cpuid`, a trap to the hypervisor on a VM)
//! were half of `/bin/true`'s time. `verify` builds it too, where the musl
//! target and C compiler are installed, for the end-to-end test that runs
//! the commands through it (`MUSTER_TEST_MUSL_CLI`).

mod deps;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// Pure crates: no async runtime, sockets or clock may enter their graph.
const PURE_CRATES: &[&str] = &["hostlist", "model", "conf", "sched", "engine", "charts"];

fn run(desc: &str, program: &str, args: &[&str]) -> bool {
    eprintln!("==> {desc}: {program} {}", args.join(" "));
    match Command::new(program).args(args).status() {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("xtask: {desc} failed ({s})");
            false
        }
        Err(e) => {
            eprintln!("xtask: cannot run {program}: {e}");
            false
        }
    }
}

/// The rules of the module doc. `cargo tree -i tokio` fails when tokio is
/// not in the crate's graph, which is what a pure crate must show (the
/// rust-analyzer idiom): it also sees tokio behind an outside crate.
fn tidy() -> bool {
    let mut ok = dependency_edges();
    ok &= pure_clippy_configs();
    for krate in PURE_CRATES {
        let out = Command::new("cargo")
            .args(["tree", "-p", krate, "-e", "normal", "-i", "tokio"])
            .output();
        match out {
            Ok(o) if o.status.success() => {
                eprintln!(
                    "xtask: pure crate {krate} depends on tokio:\n{}",
                    String::from_utf8_lossy(&o.stdout)
                );
                ok = false;
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("xtask: cannot run cargo tree: {e}");
                ok = false;
            }
        }
    }
    // No test may be switched off: assert the current behaviour instead.
    let banned = Command::new("grep")
        .args([
            "-rn",
            "--include=*.rs",
            "-e",
            "#\\[ignore",
            "-e",
            "#\\[should_panic",
            "crates",
        ])
        .output();
    if let Ok(o) = banned {
        if o.status.success() {
            eprintln!(
                "xtask: banned test attributes:\n{}",
                String::from_utf8_lossy(&o.stdout)
            );
            ok = false;
        }
    }
    if ok {
        eprintln!("==> tidy: ok");
    }
    ok
}

/// Every edge between workspace crates is allowed (`deps::ALLOWED_EDGES`)
/// and no pure crate reaches a forbidden one (`deps::PURE_FORBIDDEN`).
fn dependency_edges() -> bool {
    let manifests = match deps::read_manifests(&workspace_root()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("xtask: cannot read the manifests: {e}");
            return false;
        }
    };
    let problems = deps::check(
        &manifests,
        deps::ALLOWED_EDGES,
        PURE_CRATES,
        deps::PURE_FORBIDDEN,
    );
    for p in &problems {
        eprintln!("xtask: {p}");
    }
    problems.is_empty()
}

/// Each pure crate carries the same `clippy.toml` (a crate's own file
/// replaces any other, so each needs the whole of it).
fn pure_clippy_configs() -> bool {
    let root = workspace_root();
    let mut first: Option<(String, String)> = None;
    let mut ok = true;
    for krate in PURE_CRATES {
        let path = root.join("crates").join(krate).join("clippy.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!(
                    "xtask: pure crate {krate} needs its clippy.toml ({}: {e})",
                    path.display()
                );
                ok = false;
                continue;
            }
        };
        match &first {
            None => first = Some((krate.to_string(), text)),
            Some((other, t)) if *t != text => {
                eprintln!(
                    "xtask: crates/{krate}/clippy.toml differs from crates/{other}/clippy.toml"
                );
                ok = false;
            }
            Some(_) => {}
        }
    }
    ok
}

/// `cargo doc` of every crate with warnings as errors, so that a broken
/// intra-doc link (a renamed item, a link to a private one) fails here.
fn docs() -> bool {
    let args = ["doc", "--workspace", "--no-deps", "--locked"];
    eprintln!(
        "==> docs: RUSTDOCFLAGS='-D warnings' cargo {}",
        args.join(" ")
    );
    match Command::new("cargo")
        .args(args)
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
    {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("xtask: docs failed ({s})");
            false
        }
        Err(e) => {
            eprintln!("xtask: cannot run cargo: {e}");
            false
        }
    }
}

/// Whether to build with `--features muster/pmix` (`srun --mpi=pmix`,
/// linking the system OpenPMIx): where pkg-config finds `pmix`, and always
/// under `MUSTER_REQUIRE_MPI=1` (CI), where a missing libpmix-dev must fail
/// the build, not leave the PMIx tests out.
fn with_pmix() -> bool {
    let required = std::env::var("MUSTER_REQUIRE_MPI").as_deref() == Ok("1");
    let found = Command::new("pkg-config")
        .args(["--exists", "pmix"])
        .status()
        .is_ok_and(|s| s.success());
    if !found && !required {
        eprintln!("xtask: no OpenPMIx (pkg-config pmix): building without --mpi=pmix");
    }
    found || required
}

/// Installs and starts what the tests need (`xtask/setup.sh`) where that
/// is possible, as root, and hands the tests the variables it reports
/// (`MUSTER_TEST_PG`, `MUSTER_REQUIRE_MPI`, ...). As another user the
/// tests that need those services say why they do not run.
fn setup() -> bool {
    if !is_root() {
        eprintln!(
            "==> setup: not root: munged, PostgreSQL and MPI are not installed or started \
             (the tests that need them say so and do not run)"
        );
        return true;
    }
    let vars = std::env::temp_dir().join(format!("muster-xtask-setup-{}", std::process::id()));
    let script = workspace_root().join("xtask/setup.sh");
    let ok = run(
        "setup",
        "sh",
        &[&script.to_string_lossy(), &vars.to_string_lossy()],
    );
    let text = std::fs::read_to_string(&vars).unwrap_or_default();
    let _ = std::fs::remove_file(&vars);
    for line in text.lines() {
        if let Some((key, value)) = line.split_once('=') {
            eprintln!("==> setup: {key}={value}");
            std::env::set_var(key, value);
        }
    }
    ok
}

fn is_root() -> bool {
    // No libc in xtask: `id -u` says it.
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lies in the workspace")
        .to_path_buf()
}

/// The README's first command (the first line of its first `sh` block),
/// split into words: what a newcomer types first.
fn readme_up_command() -> Result<Vec<String>, String> {
    let path = workspace_root().join("README.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let block = text
        .split("```sh\n")
        .nth(1)
        .ok_or("README.md has no ```sh block")?;
    let line = block.lines().next().unwrap_or("");
    let command = line.split('#').next().unwrap_or("").trim();
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    if words.last().map(String::as_str) != Some("up") {
        return Err(format!(
            "README.md's first command is {command:?}: expected one ending in `up`"
        ));
    }
    Ok(words)
}

/// Runs the README's first command exactly as written, with `--detach`
/// (in a state directory of its own, `MUSTER_STATE_DIR`), runs a job on the
/// cluster it started through the links it made, and stops it with
/// `muster down`: a README command can never break unnoticed.
fn readme() -> bool {
    let words = match readme_up_command() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("xtask: readme: {e}");
            return false;
        }
    };
    let state = std::env::temp_dir().join(format!("muster-xtask-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let with_state = |program: &str, args: &[String]| {
        let mut c = Command::new(program);
        c.args(args).env("MUSTER_STATE_DIR", &state);
        c
    };
    let mut up_args = words[1..].to_vec();
    up_args.push("--detach".into());
    eprintln!(
        "==> readme: {} (MUSTER_STATE_DIR={})",
        up_args.join(" "),
        state.display()
    );
    let up_ok = with_state(&words[0], &up_args)
        .status()
        .is_ok_and(|s| s.success());
    let job_ok = up_ok && readme_job(&state);
    // `muster down` whatever happened, the same way `up` was run.
    let mut down_args = words[1..words.len() - 1].to_vec();
    down_args.push("down".into());
    let down_ok = with_state(&words[0], &down_args)
        .status()
        .is_ok_and(|s| s.success());
    if !up_ok {
        eprintln!("xtask: readme: `{} --detach` failed", words.join(" "));
    } else if !down_ok {
        eprintln!("xtask: readme: `muster down` failed");
    }
    if up_ok && job_ok && down_ok {
        let _ = std::fs::remove_dir_all(&state);
        eprintln!("==> readme: ok");
        true
    } else {
        eprintln!(
            "xtask: readme: the cluster's logs are in {}/log",
            state.display()
        );
        false
    }
}

/// `sbatch --wrap` through the links `muster up` made, waited for; its
/// output file must hold what the job printed.
fn readme_job(state: &Path) -> bool {
    let bin = state.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(bin.join("sbatch"))
        .args([
            "--parsable",
            "--wait",
            "-t",
            "1",
            "--wrap",
            "echo readme-ok",
        ])
        .env("PATH", &path)
        .env("SLURM_CONF", state.join("slurm.conf"))
        .current_dir(state)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("xtask: readme: cannot run sbatch: {e}");
            return false;
        }
    };
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        eprintln!(
            "xtask: readme: sbatch --wait failed ({}): {id} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        return false;
    }
    let file = state.join(format!("slurm-{id}.out"));
    // The node daemon closes the file as the job ends; allow it a moment.
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text == "readme-ok\n" {
            eprintln!("==> readme: job {id} ran");
            return true;
        }
        if start.elapsed() > Duration::from_secs(10) {
            eprintln!("xtask: readme: {} holds {text:?}", file.display());
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn verify() -> bool {
    if !setup() {
        return false;
    }
    // The musl commands for their end-to-end test, where the toolchain
    // is here (setup installs it as root, and then requires the test).
    match cli_musl() {
        Ok(p) => std::env::set_var("MUSTER_TEST_MUSL_CLI", p),
        Err(e) => eprintln!("==> cli-musl: not built, its test does not run: {e}"),
    }
    let pmix = with_pmix();
    let features: &[&str] = if pmix {
        &["--features", "muster/pmix"]
    } else {
        &[]
    };
    let with = |args: &[&'static str]| -> Vec<&'static str> {
        let mut v = args.to_vec();
        v.extend_from_slice(features);
        v
    };
    run("format", "cargo", &["fmt", "--all", "--", "--check"])
        && run(
            "lints",
            "cargo",
            &with(&["clippy", "--workspace", "--all-targets", "--locked"])
                .into_iter()
                .chain(["--", "-D", "warnings"])
                .collect::<Vec<_>>(),
        )
        // The default build (no PMIx) of the crates the feature changes.
        && (!pmix
            || run(
                "lints without pmix",
                "cargo",
                &[
                    "clippy",
                    "-p",
                    "noded",
                    "-p",
                    "cli",
                    "--all-targets",
                    "--locked",
                    "--",
                    "-D",
                    "warnings",
                ],
            ))
        && tidy()
        && docs()
        && run("tests", "cargo", &with(&["test", "--workspace", "--locked", "--no-fail-fast"]))
        && readme()
}

/// The target the musl build of `muster-cli` is for.
const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// Builds `muster-cli` for [`MUSL_TARGET`] (release), statically linked and
/// position-dependent (`-C relocation-model=static`: a static PIE spent
/// its start relocating itself, a page fault per page it wrote), its C
/// code (ring, SQLite, mimalloc) compiled by `musl-gcc`. Returns the
/// binary, or why it could not be built: the target not installed
/// (`rustup target add x86_64-unknown-linux-musl`) or no musl C compiler
/// (Debian's musl-tools).
fn cli_musl() -> Result<PathBuf, String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("rustup: {e}"))?;
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == MUSL_TARGET)
    {
        return Err(format!(
            "the {MUSL_TARGET} target is not installed (rustup target add {MUSL_TARGET})"
        ));
    }
    let cc = ["x86_64-linux-musl-gcc", "musl-gcc"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
        .ok_or("no musl C compiler (musl-gcc: Debian's musl-tools)")?;
    let args = [
        "build",
        "--release",
        "--locked",
        "--target",
        MUSL_TARGET,
        "-p",
        "muster",
        "--bin",
        "muster-cli",
    ];
    eprintln!("==> cli-musl: cargo {}", args.join(" "));
    let ok = Command::new("cargo")
        .args(args)
        .env("CC_x86_64_unknown_linux_musl", cc)
        .env(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS",
            "-C relocation-model=static",
        )
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err("cargo build failed".into());
    }
    Ok(target_dir().join(MUSL_TARGET).join("release/muster-cli"))
}

/// Cargo's target directory (`CARGO_TARGET_DIR`, else `target/`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// `cargo xtask cli-musl`: [`cli_musl`], then the binary in place of
/// `target/release/muster-cli` (a later build that relinks that one puts
/// the glibc one back).
fn cli_musl_installed() -> bool {
    let built = match cli_musl() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("==> cli-musl: {e}");
            return false;
        }
    };
    let dest = target_dir().join("release/muster-cli");
    let tmp = dest.with_extension("musl-tmp");
    let copied = std::fs::create_dir_all(target_dir().join("release"))
        .and_then(|()| std::fs::copy(&built, &tmp))
        .and_then(|_| std::fs::rename(&tmp, &dest));
    match copied {
        Ok(()) => {
            eprintln!(
                "==> cli-musl: {} (from {})",
                dest.display(),
                built.display()
            );
            true
        }
        Err(e) => {
            eprintln!("==> cli-musl: copying to {}: {e}", dest.display());
            false
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ok = match args.first().map(String::as_str) {
        Some("verify") => verify(),
        Some("tidy") => tidy(),
        Some("setup") => setup(),
        Some("readme") => readme(),
        Some("cli-musl") => cli_musl_installed(),
        _ => {
            eprintln!("usage: cargo xtask verify | tidy | setup | readme | cli-musl");
            false
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
