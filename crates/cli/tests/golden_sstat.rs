//! Golden tests: sstat's rendering.
//!
//! No capture of Slurm's sstat exists in the reference set; these files pin
//! our output in sstat's layout (its default columns, field widths,
//! `-p`/`-P`/`-n`, `-i`), and the values share sacct's formatting, which is
//! pinned against Slurm 22.05 (`golden_sacct.rs`).

use cli::sstat;
use model::JobId;
use proto::{LiveStepStat, StepId, StepUsage};

fn batch() -> LiveStepStat {
    LiveStepStat {
        job_id: JobId(66787),
        step: StepId::Batch,
        nodes: vec!["node1".into()],
        ntasks: 1,
        usage: StepUsage {
            user_cpu_usec: Some(0),
            sys_cpu_usec: Some(0),
            max_rss_kib: Some(3596),
            max_rss_node: Some("node1".into()),
            max_rss_task: Some(0),
            ave_rss_kib: Some(3596),
            max_vmsize_kib: Some(79012),
            max_vmsize_node: Some("node1".into()),
            max_vmsize_task: Some(0),
            ave_vmsize_kib: Some(79012),
            max_pages: Some(0),
            max_pages_node: Some("node1".into()),
            max_pages_task: Some(0),
            ave_pages: Some(0),
            min_cpu_usec: Some(1_200_000),
            min_cpu_node: Some("node1".into()),
            min_cpu_task: Some(0),
            ave_cpu_usec: Some(1_200_000),
            n_tasks: Some(1),
            container_start_usec: None,
        },
        pids: vec![("node1".into(), vec![4242])],
    }
}

fn step0() -> LiveStepStat {
    LiveStepStat {
        job_id: JobId(66787),
        step: StepId::Numbered(0),
        nodes: vec!["node1".into(), "node2".into()],
        ntasks: 4,
        usage: StepUsage {
            user_cpu_usec: Some(0),
            sys_cpu_usec: Some(0),
            max_rss_kib: Some(2 * 1024 * 1024),
            max_rss_node: Some("node2".into()),
            max_rss_task: Some(3),
            ave_rss_kib: Some(1_049_600),
            max_vmsize_kib: Some(2_200_000),
            max_vmsize_node: Some("node2".into()),
            max_vmsize_task: Some(3),
            ave_vmsize_kib: Some(1_150_000),
            max_pages: Some(12),
            max_pages_node: Some("node1".into()),
            max_pages_task: Some(1),
            ave_pages: Some(3),
            min_cpu_usec: Some(61_000_000),
            min_cpu_node: Some("node1".into()),
            min_cpu_task: Some(0),
            ave_cpu_usec: Some(3_725_000_000),
            n_tasks: Some(4),
            container_start_usec: None,
        },
        pids: vec![
            ("node1".into(), vec![101, 102]),
            ("node2".into(), vec![201, 202]),
        ],
    }
}

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// sstat's whole output for `argv` over the running steps `steps`.
fn render(argv: &[&str], steps: &[LiveStepStat]) -> String {
    let v: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let a = sstat::parse_args(&v).unwrap();
    let mut out = sstat::render_header(&a);
    for sel in &a.jobs {
        let rows = sstat::select(sel, a.allsteps, steps).unwrap();
        out.push_str(&sstat::render_rows(&a, &rows));
    }
    out
}

fn check(argv: &[&str], file: &str) {
    assert_eq!(render(argv, &[batch(), step0()]), golden(file), "{argv:?}");
}

#[test]
fn default_columns_for_the_first_numbered_step() {
    check(&["-j", "66787"], "sstat_default.txt");
}

#[test]
fn all_steps_parsable2() {
    check(&["-a", "-j", "66787", "-P"], "sstat_allsteps_P.txt");
}

#[test]
fn format_with_widths_parsable_noheader_noconvert() {
    check(
        &[
            "-j",
            "66787.batch,66787.0",
            "-o",
            "jobid%-14,maxrss%12,maxrssnode,averss,ntasks",
        ],
        "sstat_format_widths.txt",
    );
    check(
        &[
            "-j",
            "66787.0",
            "-p",
            "-n",
            "--noconvert",
            "--format=JobID,MaxRSS,AveVMSize",
        ],
        "sstat_noheader_p_noconvert.txt",
    );
}

#[test]
fn pidformat() {
    // One row per node of each step, with that node's pids.
    check(&["-a", "-j", "66787", "-i"], "sstat_pidformat.txt");
    // -i adds its three fields where it stands among -o's.
    assert_eq!(
        render(&["-j", "66787.0", "-o", "maxrss", "-i", "-P"], &[step0()]),
        "MaxRSS|JobID|Nodelist|Pids\n2G|66787.0|node1|101,102\n2G|66787.0|node2|201,202\n"
    );
}

#[test]
fn a_job_the_controller_does_not_know() {
    let sel = |s: &str| sstat::parse_step_sel(s).unwrap();
    // A numbered step of an ended job: nothing (Slurm: debug level only).
    assert_eq!(sstat::unknown_job(&sel("66787.0")), "");
    assert_eq!(
        sstat::unknown_job(&sel("66787.batch")),
        "sstat: error: couldn't get info for job 66787\n"
    );
    assert_eq!(
        sstat::unknown_job(&sel("66787.extern")),
        "sstat: error: couldn't get info for job 66787\n"
    );
    assert_eq!(
        sstat::unknown_job(&sel("66787")),
        "sstat: error: couldn't get steps for job 66787\n"
    );
}

/// `ContainerStart`, not Slurm's: a container step's start-up as the CPU
/// times print, empty without a container; `--helpformat` stays Slurm's
/// list (it is pinned above), the field is accepted besides it.
#[test]
fn container_start_is_accepted_besides_slurms_fields() {
    let argv = [
        "-a",
        "-j",
        "66787",
        "-P",
        "-n",
        "-o",
        "JobID,ContainerStart",
    ];
    let mut s = step0();
    s.usage.container_start_usec = Some(2_345_678);
    assert_eq!(
        render(&argv, &[batch(), s.clone()]),
        "66787.batch|\n66787.0|00:02.345\n"
    );
    s.usage.container_start_usec = Some(3_725_000_000);
    assert_eq!(render(&argv[1..], &[s]), "66787.0|01:02:05\n");
    assert!(!sstat::helpformat().contains("ContainerStart"));
}

#[test]
fn helpformat_lists_every_field() {
    assert_eq!(sstat::helpformat(), golden("sstat_helpformat.txt"));
}

#[test]
fn errors() {
    // A step that is not running prints nothing; a job with none running
    // gets sstat's error line.
    let a = sstat::parse_args(&["-j".into(), "66787.7".into()]).unwrap();
    assert!(sstat::select(&a.jobs[0], false, &[batch()])
        .unwrap()
        .is_empty());
    let a = sstat::parse_args(&["-j".into(), "5".into()]).unwrap();
    assert_eq!(
        sstat::select(&a.jobs[0], false, &[]),
        Err("sstat: error: no steps running for job 5\n".into())
    );
    // Only the batch step runs: it is the default.
    let only_batch = [batch()];
    let rows = sstat::select(&a.jobs[0], false, &only_batch).unwrap();
    assert_eq!(rows[0].step, StepId::Batch);
    assert_eq!(
        sstat::parse_args(&["-j".into(), "12.x".into()]),
        Err("sstat: fatal: Bad job/step specified: 12.x\n".into())
    );
    assert_eq!(
        sstat::parse_args(&["-j".into(), "1".into(), "-o".into(), "bogus".into()]),
        Err("sstat: error: Invalid field requested: \"bogus\"\n".into())
    );
}
