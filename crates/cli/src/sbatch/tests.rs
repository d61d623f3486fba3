use super::export::{parse_export_file, resolve};
use super::script::{check_script, directives, wrap_script};
use super::signal::{parse_signal, signal_number};
use super::too_large;
use proto::{JobDesc, SignalSpec};

#[test]
fn signal_forms() {
    let spec = |signal, secs, batch_only| {
        Some(SignalSpec {
            signal,
            secs,
            batch_only,
        })
    };
    assert_eq!(parse_signal("USR2@90"), spec(libc::SIGUSR2, 90, false));
    assert_eq!(parse_signal("B:USR2@30"), spec(libc::SIGUSR2, 30, true));
    assert_eq!(parse_signal("SIGUSR1"), spec(libc::SIGUSR1, 60, false));
    assert_eq!(parse_signal("10@5"), spec(10, 5, false));
    assert_eq!(parse_signal("R:TERM"), spec(libc::SIGTERM, 60, false));
    assert_eq!(parse_signal("RB:term@1"), spec(libc::SIGTERM, 1, true));
    assert_eq!(parse_signal("USR1@"), None);
    assert_eq!(parse_signal("USR1@x"), None);
    assert_eq!(parse_signal("X:USR1"), None);
    assert_eq!(parse_signal("NOPE"), None);
    assert_eq!(parse_signal("USR1@70000"), None);
    assert_eq!(signal_number("0"), None);
    assert_eq!(signal_number("kill"), Some(libc::SIGKILL));
}

#[test]
fn wrap_text_is_slurms() {
    assert_eq!(
        wrap_script("echo hi"),
        "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n"
    );
}

#[test]
fn script_checks() {
    let err = |b: &[u8]| check_script(b).unwrap_err().stderr;
    assert_eq!(err(b""), "sbatch: error: Batch script is empty!\n");
    assert_eq!(
        err(b"  \n\t\n"),
        "sbatch: error: Batch script contains only whitespace!\n"
    );
    assert!(err(b"echo hi\n").starts_with("sbatch: error: This does not look"));
    assert_eq!(
        err(b"#!/bin/sh\r\necho\r\n"),
        "sbatch: error: Batch script contains DOS line breaks (\\r\\n)\n\
         sbatch: error: instead of expected UNIX line breaks (\\n).\n"
    );
    assert_eq!(
        err(b"#!/bin/sh\necho \0\n"),
        "sbatch: error: The Slurm controller does not allow scripts that\n\
         sbatch: error: contain a NULL character '\\0'.\n"
    );
    assert_eq!(
        check_script(b"#!/bin/sh\ntrue\n").unwrap(),
        "#!/bin/sh\ntrue\n"
    );
}

fn words(script: &str) -> Vec<String> {
    directives(script, "job.sh").unwrap()
}

#[test]
fn directives_stop_at_the_first_command() {
    let s = "#!/bin/bash\n#SBATCH -J one\n\n# a comment\n   \n#SBATCH --time=5\necho hi\n#SBATCH -p late\n";
    assert_eq!(words(s), ["-J", "one", "--time=5"]);
}

#[test]
fn directives_split_quote_and_comment() {
    let s = "#!/bin/sh\n#SBATCH -J 'my job' --comment=\"a b\" -t 5 # five minutes\n#SBATCH --output=x\\ y\n#SBATCH -o a#b\n";
    assert_eq!(
        words(s),
        [
            "-J",
            "my job",
            "--comment=a b",
            "-t",
            "5",
            "--output=x y",
            "-o",
            "a"
        ]
    );
    // An indented #SBATCH is a comment, not a directive.
    assert_eq!(
        words("#!/bin/sh\n  #SBATCH -J x\n#SBATCH -J y\n"),
        ["-J", "y"]
    );
    // '#' inside quotes is kept.
    assert_eq!(
        words("#!/bin/sh\n#SBATCH --comment='#1'\n"),
        ["--comment=#1"]
    );
}

#[test]
fn directives_unmatched_quote_is_fatal() {
    let e = directives("#!/bin/sh\n#SBATCH -J 'oops\n", "job.sh").unwrap_err();
    assert_eq!(
        e.stderr,
        "sbatch: fatal: job.sh: line 2: Unmatched `'` in [#SBATCH -J 'oops]\n"
    );
    assert_eq!(e.code, 1);
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn export_forms() {
    let base = env(&[("PATH", "/bin"), ("HOME", "/h"), ("SLURM_CONF", "/c")]);
    assert_eq!(resolve(None, &base, None), base);
    assert_eq!(resolve(Some("ALL"), &base, None), base);
    assert_eq!(
        resolve(Some("none"), &base, None),
        env(&[("SLURM_CONF", "/c")])
    );
    assert_eq!(
        resolve(Some("ALL,HOME=/x,NEW=1"), &base, None),
        env(&[
            ("PATH", "/bin"),
            ("HOME", "/x"),
            ("SLURM_CONF", "/c"),
            ("NEW", "1")
        ])
    );
    assert_eq!(
        resolve(Some("PATH,NEW=1,MISSING"), &base, None),
        env(&[("PATH", "/bin"), ("NEW", "1"), ("SLURM_CONF", "/c")])
    );
    assert_eq!(
        resolve(Some("NONE,A=\"x,y\""), &base, None),
        env(&[("A", "x,y"), ("SLURM_CONF", "/c")])
    );
}

/// Issue 35: `sbatch --export=NONE` and `--export=X=1` under Slurm 22.05
/// give the job the user's login environment (HOME, USER, ...) with
/// `SLURM_EXPORT_ENV` and `SLURM_GET_USER_ENV=1`; `--export=ALL,X=1` neither.
#[test]
fn issue_35_export_without_all_starts_from_the_login_environment() {
    use super::export::{from_login, leaves_out_environment, login_env};
    assert!(leaves_out_environment("NONE"));
    assert!(leaves_out_environment("X=1"));
    assert!(leaves_out_environment("NONE,X=1"));
    assert!(!leaves_out_environment("ALL,X=1"));
    assert!(!leaves_out_environment("all"));
    let login = login_env("alice", 1000, "/home/alice", "/bin/bash");
    assert_eq!(
        login,
        env(&[
            ("HOME", "/home/alice"),
            ("LOGNAME", "alice"),
            ("MAIL", "/var/mail/alice"),
            (
                "PATH",
                "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
            ),
            ("SHELL", "/bin/bash"),
            ("USER", "alice"),
        ])
    );
    let base = env(&[("PATH", "/mine"), ("FOO", "bar"), ("SLURM_CONF", "/c")]);
    let job = from_login("X=1", login, resolve(Some("X=1"), &base, None));
    let get = |k: &str| job.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("X"), Some("1"));
    assert_eq!(get("FOO"), None);
    assert_eq!(get("HOME"), Some("/home/alice"));
    assert_eq!(
        get("PATH"),
        Some("/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games")
    );
    assert_eq!(get("SLURM_EXPORT_ENV"), Some("X=1"));
    assert_eq!(get("SLURM_GET_USER_ENV"), Some("1"));
    assert_eq!(get("SLURM_CONF"), Some("/c"));
}

#[test]
fn export_file_replaces_the_environment() {
    let base = env(&[("PATH", "/bin"), ("SLURM_SUBMIT_DIR", "/d")]);
    let file = parse_export_file(b"A=1\0B=x=y\0");
    assert_eq!(file, env(&[("A", "1"), ("B", "x=y")]));
    assert_eq!(
        resolve(None, &base, Some(file)),
        env(&[("A", "1"), ("B", "x=y"), ("SLURM_SUBMIT_DIR", "/d")])
    );
    assert_eq!(
        parse_export_file(b"A=1\nB=2\n"),
        env(&[("A", "1"), ("B", "2")])
    );
}

/// Issue 35: `-N3 -n2` comes down to two nodes, with the words real
/// Slurm 22.05 warned with; enough tasks leave the count alone.
#[test]
fn issue_35_fewer_tasks_than_nodes_sets_the_node_count() {
    let mut d = JobDesc {
        ntasks: Some(2),
        min_nodes: Some(3),
        max_nodes: Some(3),
        ..JobDesc::default()
    };
    assert_eq!(
        super::opts::fit_nodes_to_tasks(&mut d).as_deref(),
        Some("can't run 2 processes on 3 nodes, setting nnodes to 2")
    );
    assert_eq!((d.min_nodes, d.max_nodes), (Some(2), Some(2)));
    assert_eq!(super::opts::fit_nodes_to_tasks(&mut d), None);
    let mut d = JobDesc {
        min_nodes: Some(3),
        ..JobDesc::default()
    };
    assert_eq!(super::opts::fit_nodes_to_tasks(&mut d), None);
}

#[test]
fn issue_34_a_submission_over_the_request_limit_names_the_script_or_the_request() {
    let limit = u64::from(proto::MAX_REQUEST_BYTES);
    let big = JobDesc {
        script: "#".repeat(17 << 20),
        ..JobDesc::default()
    };
    let e = too_large(&big, (17 << 20) + 500, limit);
    assert_eq!(
        e.stderr,
        "sbatch: error: Batch job script is too large (17825792 bytes, limit 16 MiB)\n"
    );
    assert_eq!(e.code, 1);
    let mut env_heavy = JobDesc {
        script: "#!/bin/sh\n".into(),
        ..JobDesc::default()
    };
    env_heavy.env = std::sync::Arc::new(vec![("BIG".into(), "x".repeat(100))]);
    let e = too_large(&env_heavy, limit + 1, limit);
    assert_eq!(
        e.stderr,
        "sbatch: error: Batch job submission is too large (16777217 bytes, limit 16 MiB): \
         the script is 10 bytes, the environment 104 bytes\n"
    );
}
