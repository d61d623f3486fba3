//! Golden tests: sdiag's rendering against what Slurm 22.05 printed
//! (`/work/shared/reference/slurm-22.05/sdiag.out`, see its INDEX.md),
//! byte for byte in `tests/golden/sdiag.txt`.

use cli::sdiag::{self, RpcOrder};
use proto::diag::{BackfillStats, DiagStats, RpcTypeStat, RpcUserStat, SchedStats};

fn utc() {
    // Slurm printed the capture in UTC; the renderer uses local time.
    std::env::set_var("TZ", "UTC");
}

/// The capture's statistics. Slurm sends sums and counts; the means it
/// printed are reproduced by sums of mean × count.
fn captured() -> DiagStats {
    let types = [
        ("REQUEST_SUBMIT_BATCH_JOB", 4003, 18820, 34543129),
        ("REQUEST_KILL_JOB", 5032, 17852, 98860921),
        ("REQUEST_PARTITION_INFO", 2009, 1494, 541583),
        ("REQUEST_COMPLETE_BATCH_SCRIPT", 5018, 1078, 14234776),
        ("REQUEST_FED_INFO", 2049, 761, 212244),
        ("REQUEST_JOB_INFO_SINGLE", 2021, 737, 196182),
        ("REQUEST_JOB_INFO", 2003, 725, 36937926),
        ("REQUEST_UPDATE_JOB", 3001, 720, 1226569),
        ("MESSAGE_EPILOG_COMPLETE", 6012, 196, 613107),
        ("REQUEST_NODE_INFO", 2007, 80, 27667),
        ("REQUEST_STEP_COMPLETE", 5016, 58, 442566),
        ("REQUEST_JOB_STEP_CREATE", 5001, 48, 172804),
        ("REQUEST_PING", 1008, 37, 19295),
        ("REQUEST_BUILD_INFO", 2001, 36, 226453),
        ("REQUEST_HET_JOB_ALLOC_INFO", 4027, 29, 17163),
        ("REQUEST_COMPLETE_JOB_ALLOCATION", 5017, 25, 38033),
        ("REQUEST_RESOURCE_ALLOCATION", 4001, 24, 56543),
        ("REQUEST_UPDATE_NODE", 3002, 24, 16270),
        ("REQUEST_JOB_READY", 4019, 22, 11479),
        ("MESSAGE_NODE_REGISTRATION_STATUS", 1002, 10, 12532),
        ("REQUEST_CANCEL_JOB_STEP", 5005, 6, 6215),
        ("REQUEST_PRIORITY_FACTORS", 2026, 6, 6965),
        ("REQUEST_SHARE_INFO", 2022, 6, 1388),
        ("REQUEST_AUTH_TOKEN", 5039, 4, 3950),
        ("ACCOUNTING_UPDATE_MSG", 10001, 3, 1794),
        ("REQUEST_JOB_ALLOCATION_INFO", 4014, 2, 3012),
        ("REQUEST_STATS_INFO", 2035, 2, 526),
        ("REQUEST_JOB_REQUEUE", 5023, 1, 728),
        ("REQUEST_RECONFIGURE", 1003, 1, 120819),
        ("REQUEST_JOB_USER_INFO", 2039, 1, 340),
    ];
    DiagStats {
        req_time: 1796207053,
        req_time_start: 1796205814,
        server_thread_count: 3,
        agent_queue_size: 0,
        agent_count: 0,
        agent_thread_count: 0,
        dbd_agent_queue_size: 0,
        jobs_submitted: 18846,
        jobs_started: 1158,
        jobs_completed: 993,
        jobs_canceled: 17838,
        jobs_failed: 0,
        job_states_ts: 1796207045,
        jobs_pending: 10,
        jobs_running: 3,
        schedule: SchedStats {
            last_cycle: 690,
            max_cycle: 52861,
            total_cycles: 358,
            cycle_sum: 8877 * 358,
            depth_sum: 62 * 358,
            last_queue_length: 4,
        },
        backfill: BackfillStats {
            backfilled_jobs: 72,
            last_backfilled_jobs: 72,
            total_cycles: 34,
            last_cycle_when: 1796207043,
            last_cycle: 546,
            max_cycle: 421359,
            cycle_sum: 62632 * 34,
            last_depth: 1,
            depth_sum: 62 * 34,
            last_queue_length: 1,
            queue_length_sum: 124 * 34,
            table_size: 1,
        },
        rpc_by_type: types
            .iter()
            .map(|&(name, id, count, total_time)| RpcTypeStat {
                name: name.into(),
                id,
                count,
                total_time,
            })
            .collect(),
        rpc_by_user: vec![
            RpcUserStat {
                user: "root".into(),
                uid: 0,
                count: 42429,
                total_time: 187910781,
            },
            RpcUserStat {
                user: "sauser".into(),
                uid: 2001,
                count: 379,
                total_time: 642198,
            },
        ],
    }
}

#[test]
fn sdiag_matches_slurm() {
    utc();
    let text = sdiag::render(&captured(), 23, RpcOrder::Count);
    assert_eq!(text, include_str!("golden/sdiag.txt"));
}

#[test]
fn sdiag_fresh_controller_omits_the_means() {
    utc();
    let s = DiagStats {
        req_time: 1796205830,
        req_time_start: 1796205814,
        job_states_ts: 1796205830,
        ..DiagStats::default()
    };
    let text = sdiag::render(&s, 20, RpcOrder::Count);
    insta::assert_snapshot!(text);
}

#[test]
fn sdiag_sorts_rpcs_by_id_and_by_time() {
    let s = captured();
    let by_id = sdiag::render(&s, 23, RpcOrder::Id);
    let first = |t: &str, header: &str| {
        let at = t.find(header).unwrap() + header.len() + 1;
        t[at..]
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let types = "Remote Procedure Call statistics by message type";
    assert_eq!(first(&by_id, types), "MESSAGE_NODE_REGISTRATION_STATUS");
    let by_total = sdiag::render(&s, 23, RpcOrder::TotalTime);
    assert_eq!(first(&by_total, types), "REQUEST_KILL_JOB");
    let by_ave = sdiag::render(&s, 23, RpcOrder::AveTime);
    assert_eq!(first(&by_ave, types), "REQUEST_RECONFIGURE");
}

#[test]
fn sdiag_options() {
    let p = |a: &[&str]| sdiag::parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert!(p(&["-r"]).unwrap().reset);
    assert!(p(&["--reset"]).unwrap().reset);
    assert_eq!(p(&["-i"]).unwrap().order, RpcOrder::Id);
    assert_eq!(p(&["-t"]).unwrap().order, RpcOrder::TotalTime);
    assert_eq!(p(&["-T"]).unwrap().order, RpcOrder::AveTime);
    assert!(p(&["-a"]).is_ok());
    assert!(p(&["extra"]).is_err());
}
