//! Hostile input for sbatch's pure core: random script bytes, random
//! `#SBATCH` lines with garbage values, random `SBATCH_*` variables and
//! random command lines. `build` must return `Ok` or an `SbatchError`,
//! never panic or hang.

use cli::sbatch::{build, needs_stdin, Built, SbatchError};
use proptest::prelude::*;
use proto::Identity;

const CWD: &str = "/nonexistent/muster-fuzz";

/// 2026-12-02T10:24:04Z.
const NOW: i64 = 1_796_207_044;

fn identity() -> Identity {
    Identity {
        uid: 2001,
        gid: 2001,
        user: "fuzz".into(),
        host: "ctl".into(),
    }
}

/// Every long option sbatch knows (`sbatch(1)`), plus a few it does not.
const OPTIONS: &[&str] = &[
    "account",
    "acctg-freq",
    "array",
    "batch",
    "bb",
    "bbf",
    "begin",
    "chdir",
    "cluster",
    "cluster-constraint",
    "clusters",
    "comment",
    "constraint",
    "container",
    "contiguous",
    "core-spec",
    "cores-per-socket",
    "cpu-freq",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "delay-boot",
    "dependency",
    "distribution",
    "error",
    "exclude",
    "exclusive",
    "export",
    "extra-node-info",
    "get-user-env",
    "gid",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "help",
    "hint",
    "hold",
    "ignore-pbs",
    "input",
    "job-name",
    "kill-on-invalid-dep",
    "licenses",
    "mail-type",
    "mail-user",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mincpus",
    "network",
    "nice",
    "no-kill",
    "no-requeue",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "open-mode",
    "output",
    "overcommit",
    "oversubscribe",
    "parsable",
    "partition",
    "power",
    "prefer",
    "priority",
    "profile",
    "propagate",
    "qos",
    "quiet",
    "reboot",
    "requeue",
    "reservation",
    "signal",
    "sockets-per-node",
    "spread-job",
    "switches",
    "test-only",
    "thread-spec",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "tres-per-task",
    "uid",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait",
    "wait-all-nodes",
    "wckey",
    "wrap",
    "no-such-option",
    "",
];

/// Values chosen to hit the edges of sbatch's value parsers. Nothing here
/// names a file, so `--export-file`, `--nodefile` and `-w path` are left
/// out of the option list above or fail to open.
fn garbage_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("4294967296".to_string()),
        Just("18446744073709551616".to_string()),
        Just("99999999999999999999999999".to_string()),
        Just("1-99999999".to_string()),
        Just("0-4294967295:4294967295%4294967295".to_string()),
        Just("1,2,,3-".to_string()),
        Just("n[1-99999999]".to_string()),
        Just("n[1-3".to_string()),
        Just("gpu:a100:99999999999999999999".to_string()),
        Just("gpu:0:0:0".to_string()),
        Just("99999999999:99:99:99".to_string()),
        Just("9999999-99:99:99".to_string()),
        Just("now+99999999999999weeks".to_string()),
        Just("9999-99-99T99:99:99".to_string()),
        Just("B:USR1@99999999999".to_string()),
        Just("SIGKILL@".to_string()),
        Just("99999999999E".to_string()),
        Just("1E".to_string()),
        Just("%".to_string()),
        Just("%j%x%u%N%A%a%%%".to_string()),
        Just("%99999999j".to_string()),
        Just("ALL,A=".to_string()),
        Just("NONE,=x".to_string()),
        Just("afterok:".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[0-9a-zA-Z:,%@+\\-\\[\\]=]{0,20}",
        "\\PC{0,12}",
    ]
}

fn option_word() -> impl Strategy<Value = Vec<String>> {
    (prop::sample::select(OPTIONS), garbage_value(), 0u8..4).prop_map(|(name, value, form)| {
        match form {
            0 => vec![format!("--{name}={value}")],
            1 => vec![format!("--{name}"), value],
            2 => vec![format!("--{name}")],
            _ => vec![format!("-{value}")],
        }
    })
}

/// One line of a script: mostly `#SBATCH` directives, some shell, some junk.
fn script_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => option_word().prop_map(|words| format!("#SBATCH {}", words.join(" "))),
        1 => garbage_value().prop_map(|v| format!("#SBATCH {v}")),
        1 => Just("#SBATCH".to_string()),
        1 => Just("#SBATCH --time=\"1:00".to_string()),
        1 => Just("#SBATCH -J 'unterminated".to_string()),
        1 => "\\PC{0,30}",
        1 => Just("echo hello".to_string()),
        1 => Just(String::new()),
    ]
}

fn script() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(script_line(), 0..10), any::<bool>()).prop_map(|(lines, shebang)| {
        let mut text = if shebang {
            "#!/bin/sh\n".to_string()
        } else {
            String::new()
        };
        text.push_str(&lines.join("\n"));
        text.into_bytes()
    })
}

fn env() -> impl Strategy<Value = Vec<(String, String)>> {
    let var = prop_oneof![
        (prop::sample::select(OPTIONS), garbage_value()).prop_map(|(name, v)| {
            (
                format!("SBATCH_{}", name.to_uppercase().replace('-', "_")),
                v,
            )
        }),
        garbage_value().prop_map(|v| ("SLURM_EXIT_ERROR".to_string(), v)),
        garbage_value().prop_map(|v| ("SBATCH_EXPORT".to_string(), v)),
        ("[A-Z_]{1,8}", garbage_value()),
    ];
    prop::collection::vec(var, 0..5)
}

fn run(
    args: &[String],
    env: &[(String, String)],
    stdin: Option<&[u8]>,
) -> Result<Built, SbatchError> {
    // Also the question `main` asks before reading stdin.
    let _ = needs_stdin(args);
    build(args, env, stdin, CWD, &identity(), NOW)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn arbitrary_script_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = run(&[], &[], Some(&bytes));
        let mut with_shebang = b"#!/bin/sh\n".to_vec();
        with_shebang.extend_from_slice(&bytes);
        let _ = run(&[], &[], Some(&with_shebang));
    }

    #[test]
    fn random_sbatch_directives_never_panic(script in script()) {
        let _ = run(&[], &[], Some(&script));
    }

    #[test]
    fn random_command_lines_never_panic(
        words in prop::collection::vec(option_word(), 0..6),
        env in env(),
        script in script(),
    ) {
        let args: Vec<String> = words.into_iter().flatten().collect();
        let _ = run(&args, &env, Some(&script));
        let mut wrapped = args.clone();
        wrapped.push("--wrap=true".to_string());
        let _ = run(&wrapped, &env, None);
    }

    #[test]
    fn random_argv_never_panics(args in prop::collection::vec("\\PC{0,16}", 0..6)) {
        let _ = run(&args, &[], Some(b"#!/bin/sh\ntrue\n"));
    }
}

#[test]
fn a_huge_script_is_handled_in_linear_time() {
    // Many directives, and one very long one.
    let start = std::time::Instant::now();
    let mut text = "#!/bin/sh\n".to_string();
    text.push_str(&"#SBATCH --comment=x\n".repeat(50_000));
    let _ = run(&[], &[], Some(text.as_bytes()));
    let long = format!(
        "#!/bin/sh\n#SBATCH --comment={}\ntrue\n",
        "y".repeat(1 << 20)
    );
    let _ = run(&[], &[], Some(long.as_bytes()));
    let quotes = format!("#!/bin/sh\n#SBATCH {}\ntrue\n", "\"a\" ".repeat(100_000));
    let _ = run(&[], &[], Some(quotes.as_bytes()));
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
}

#[test]
fn a_huge_nodelist_is_an_error_not_an_allocation() {
    let res = run(
        &["--nodelist=n[1-99999999]".into(), "--wrap=true".into()],
        &[],
        None,
    );
    assert!(res.is_err());
    let res = run(
        &[],
        &[],
        Some(b"#!/bin/sh\n#SBATCH -x n[1-99999999999999999999]\ntrue\n"),
    );
    assert!(res.is_err());
}
