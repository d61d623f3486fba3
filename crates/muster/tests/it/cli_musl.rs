//! The user commands built against musl (`cargo xtask cli-musl`, issue 44
//! item 4): a static, position-dependent `muster-cli` that starts without
//! glibc's start-up. `cargo xtask verify` builds it where the musl target
//! and C compiler are installed and names it in `MUSTER_TEST_MUSL_CLI`;
//! `xtask/setup.sh` sets `MUSTER_REQUIRE_MUSL=1` where it could install
//! them, and the test then fails rather than skips without the binary.
//!
//! The binary lies beside a copy of this build's `muster`, as `cargo xtask
//! cli-musl` puts it, so the cluster's command links run it, and where it
//! cannot do the work itself (`AuthType=auth/munge`) it hands the command
//! over to that `muster`.

use crate::secs;
use std::path::{Path, PathBuf};

fn musl_cli() -> Option<PathBuf> {
    match std::env::var_os("MUSTER_TEST_MUSL_CLI").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            assert!(
                std::env::var("MUSTER_REQUIRE_MUSL").as_deref() != Ok("1"),
                "the musl target is installed (MUSTER_REQUIRE_MUSL=1) but MUSTER_TEST_MUSL_CLI \
                 names no binary: `cargo xtask verify` builds it (`cargo xtask cli-musl`)"
            );
            None
        }
    }
}

/// ELF header fields: (e_type, whether a program header asks for an
/// interpreter, i.e. a dynamic loader).
fn elf_kind(path: &Path) -> (u16, bool) {
    let b = std::fs::read(path).expect("reading the binary");
    assert_eq!(&b[..4], b"\x7fELF", "{} is not ELF", path.display());
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36) as usize, u16_at(0x38) as usize);
    let interp = (0..phnum).any(|i| u32_at(phoff + i * phentsize) == 3);
    (u16_at(0x10), interp)
}

/// A directory with this build's `muster` and the musl `muster-cli`.
fn binaries(cli: &Path) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_muster"), dir.path().join("muster")).unwrap();
    let dest = dir.path().join("muster-cli");
    std::fs::copy(cli, &dest).unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn musl_commands_answer_as_the_others_do() {
    let Some(cli) = musl_cli() else {
        eprintln!("skipped: no musl muster-cli (cargo xtask cli-musl builds one)");
        return;
    };
    // Static and position-dependent: no loader, no relocation at start.
    assert_eq!(elf_kind(&cli), (2, false), "{}", cli.display());
    let dir = binaries(&cli);
    let c = e2e::Cluster::builder()
        .binary(dir.path().join("muster"))
        .nodes(2)
        .start();
    assert_eq!(
        std::fs::read_link(c.root().join("bin/sbatch")).unwrap(),
        dir.path().join("muster-cli")
    );
    let sub = c.run_linked(
        "sbatch",
        &["--parsable", "-J", "musl", "--wrap", "echo from-musl"],
    );
    assert_eq!(sub.code, 0, "{sub}");
    let id: u32 = sub.stdout.trim().parse().expect("a job id");
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.read(&format!("slurm-{id}.out")), "from-musl\n");
    let held = c.run_linked("sbatch", &["--parsable", "-H", "--wrap", "true"]);
    assert_eq!(held.code, 0, "{held}");
    let held = held.stdout.trim().to_string();
    let id = id.to_string();
    // The same answers, byte for byte, as the same commands through
    // `muster` itself (user names from /etc/passwd, times in local time).
    for (cmd, args) in [
        ("squeue", vec!["-h", "-o", "%i %j %u %T %r"]),
        ("sinfo", vec![]),
        ("scontrol", vec!["show", "job", held.as_str()]),
        ("scontrol", vec!["show", "partition"]),
        (
            "sacct",
            vec![
                "-j",
                id.as_str(),
                "-X",
                "-n",
                "-o",
                "JobID,JobName,User,State,ExitCode",
            ],
        ),
        ("scontrol", vec!["show", "job", "99999"]),
        ("squeue", vec!["--bogus-option"]),
    ] {
        let musl = c.run_linked(cmd, &args);
        let other = c.run(cmd, &args);
        assert_eq!(
            (musl.code, &musl.stdout, &musl.stderr),
            (other.code, &other.stdout, &other.stderr),
            "{cmd} {args:?}"
        );
    }
    let user = e2e::user_name();
    let row = c.run_linked("squeue", &["-h", "-o", "%u %T", "-j", &held]);
    assert_eq!(row.stdout.trim(), format!("{user} PENDING"), "{row}");
    let cancel = c.run_linked("scancel", &[&held]);
    assert_eq!(cancel.code, 0, "{cancel}");
    c.wait_state(held.parse().unwrap(), "CANCELLED", secs(10));
}

/// Where a static C library cannot do the work (`AuthType=auth/munge`:
/// libmunge is loaded at run time), the musl command hands itself over to
/// the `muster` beside it, which submits with a MUNGE credential.
#[test]
fn musl_commands_hand_over_under_auth_munge() {
    let Some(cli) = musl_cli() else {
        eprintln!("skipped: no musl muster-cli (cargo xtask cli-musl builds one)");
        return;
    };
    let socket = Path::new("/var/run/munge/munge.socket.2");
    if let Err(e) = auth::munge::Munge::load(socket).and_then(|m| m.encode(b"probe")) {
        // auth::auth_munge_runs_jobs_with_a_real_munged fails where munged must answer.
        eprintln!(
            "skipped: munged does not answer on {}: {e}",
            socket.display()
        );
        return;
    }
    let dir = binaries(&cli);
    let c = e2e::Cluster::builder()
        .binary(dir.path().join("muster"))
        .nodes(1)
        .conf_extra(&format!(
            "AuthType=auth/munge\nAuthInfo=socket={}\n",
            socket.display()
        ))
        .start();
    let sub = c.run_linked("sbatch", &["--parsable", "--wrap", "echo munge-musl"]);
    assert_eq!(sub.code, 0, "{sub}");
    let id: u32 = sub.stdout.trim().parse().expect("a job id");
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.read(&format!("slurm-{id}.out")), "munge-musl\n");
}
