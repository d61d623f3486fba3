//! Golden tests: restd's v0.0.38 answers against what slurmrestd 22.05.8
//! answered (`/work/shared/reference/slurm-22.05/rest_*`, copied into
//! `tests/golden/`). Each answer is rebuilt from the state the capture
//! shows; the bodies must be equal byte for byte where the answer holds
//! nothing muster does not keep, else equal as JSON with the fields that
//! vary or that muster does not keep masked, and always with the keys in
//! the reference's order.

use model::{JobId, JobState, NodeBase, NodeState, PendingReason, TimeLimit};
use proto::{JobInfo, NodeInfo, PartitionInfo, SlurmError};
use restd::json::J;
use restd::v0038;
use serde_json::Value;

fn golden(name: &str) -> (u16, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (head, body) = text.split_once("\r\n\r\n").expect("headers and a body");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// The keys of the objects at `indent` spaces, in order, of a body
/// written as slurmrestd writes (two spaces a level).
fn keys_at(body: &str, indent: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    body.lines()
        .filter_map(|l| l.strip_prefix(&pad))
        .filter(|l| l.starts_with('"'))
        .filter_map(|l| l[1..].split_once("\":").map(|(k, _)| k.to_string()))
        .collect()
}

fn mask(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(m) => {
            for k in keys {
                if let Some(x) = m.get_mut(*k) {
                    *x = Value::String("<masked>".into());
                }
            }
            for (_, x) in m.iter_mut() {
                mask(x, keys);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mask(x, keys)),
        _ => {}
    }
}

fn check(name: &str, status: u16, ours: &J, masked: &[&str]) {
    let (want_status, want) = golden(name);
    assert_eq!(status, want_status, "{name}: status");
    let got = ours.to_slurm_string();
    let (mut a, mut b): (Value, Value) = (
        serde_json::from_str(&got).unwrap(),
        serde_json::from_str(&want).unwrap(),
    );
    mask(&mut a, masked);
    mask(&mut b, masked);
    assert_eq!(
        a,
        b,
        "{name}: ours\n{}\nreference\n{}",
        serde_json::to_string_pretty(&a).unwrap(),
        serde_json::to_string_pretty(&b).unwrap()
    );
    assert!(!keys_at(&want, 2).is_empty(), "{name}: no keys read");
    for indent in [2, 4, 6] {
        assert_eq!(
            keys_at(&got, indent),
            keys_at(&want, indent),
            "{name}: key order at {indent}"
        );
    }
    if masked.is_empty() {
        assert_eq!(got, want, "{name}: bytes");
    }
}

#[test]
fn ping() {
    let v = v0038::answer(
        false,
        vec![],
        vec![("pings", J::Arr(vec![v0038::ping("ctl", true)]))],
    );
    check("rest_ping.response", 200, &v, &[]);
}

#[test]
fn cancel() {
    check(
        "rest_job_cancel.response",
        200,
        &v0038::answer(false, vec![], vec![]),
        &[],
    );
}

#[test]
fn submit() {
    let v = v0038::answer(
        false,
        vec![],
        vec![
            ("job_id", J::Int(66811)),
            ("step_id", J::from("BATCH")),
            ("job_submit_user_msg", J::from("")),
        ],
    );
    check("rest_job_submit.response", 200, &v, &[]);
}

#[test]
fn submit_to_a_missing_partition() {
    let v = v0038::answer(
        false,
        vec![v0038::submit_error(SlurmError::InvalidPartitionName)],
        vec![],
    );
    check("rest_job_submit_bad_partition.response", 500, &v, &[]);
}

#[test]
fn the_reference_submission_parses() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/rest_job_submit.request"),
    )
    .unwrap();
    let body = text
        .split_once("\n\n")
        .or_else(|| text.split_once("\r\n\r\n"))
        .unwrap()
        .1;
    let d = restd::submit::job_desc(&serde_json::from_str(body).unwrap()).unwrap();
    assert_eq!(d.name, "restjob");
    assert_eq!(d.partitions, vec!["debug"]);
}

#[test]
fn bad_token() {
    let r = restd::api::bad_token();
    let (status, want) = golden("rest_bad_token.response");
    assert_eq!(r.status, status);
    assert_eq!(r.body_text(), want);
}

/// Job 66811 as the capture shows it: pending, submitted over REST.
fn job_66811() -> JobInfo {
    JobInfo {
        job_id: JobId(66811),
        name: "restjob".into(),
        user: "sauser".into(),
        uid: 2001,
        group: "sauser".into(),
        gid: 2001,
        account: "research".into(),
        qos: "normal".into(),
        partition: "debug".into(),
        state: JobState::Pending,
        reason: PendingReason::Priority,
        priority: 2854,
        submit_time: 1796207070,
        eligible_time: 1796207070,
        last_sched_eval: Some(1796207072),
        time_limit: TimeLimit::Unlimited,
        num_nodes: 1,
        max_nodes: Some(1),
        num_cpus: 1,
        num_tasks: 1,
        cpus_per_task: 1,
        mem_per_cpu: Some(500),
        tres: "cpu=1,mem=500M,node=1,billing=1".into(),
        work_dir: "/home/sauser/capture".into(),
        stdout: "/home/sauser/capture/restjob-66811.out".into(),
        stdout_pattern: Some("/home/sauser/capture/restjob-%j.out".into()),
        stdin: String::new(),
        requeue: true,
        ..JobInfo::default()
    }
}

#[test]
fn job_query() {
    let v = v0038::answer(
        false,
        vec![],
        vec![(
            "jobs",
            J::Arr(vec![v0038::job(&job_66811(), "anchor", &[])]),
        )],
    );
    // Not kept by muster: the association's id.
    check("rest_job_query.response", 200, &v, &["association_id"]);
}

#[test]
fn job_query_nonexistent() {
    let v = v0038::answer(
        false,
        vec![v0038::error(
            "Unable to find JobId=999999",
            2017,
            SlurmError::InvalidJobId.as_slurm_str(),
            "slurm_load_job",
        )],
        vec![("jobs", J::Arr(vec![]))],
    );
    check("rest_job_query_nonexistent.response", 500, &v, &[]);
}

fn node(i: u32, gpus: u64, partitions: &[&str]) -> NodeInfo {
    let mut n = restd::openapi::example_node();
    n.name = format!("node{i}");
    n.hostname = n.name.clone();
    n.addr = format!("10.201.0.1{i}");
    n.partitions = partitions.iter().map(|s| s.to_string()).collect();
    n.boot_time = Some(1796200728);
    n.slurmd_start_time = Some(1796205814);
    n.os = Some("Linux 6.18.44-fc-v1098 #1 SMP PREEMPT_DYNAMIC @0".into());
    if gpus > 0 {
        n.gres = vec![model::Gres::parse(&format!("gpu:a100:{gpus}")).unwrap()];
        n.gres_used = vec![model::Gres::parse("gpu:a100:0").unwrap()];
    }
    n
}

#[test]
fn nodes() {
    let mut n1 = node(1, 0, &["debug"]);
    n1.state = NodeState::new(NodeBase::Allocated);
    n1.alloc_cpus = 2;
    n1.alloc_mem = 1000;
    let n2 = node(2, 0, &["debug"]);
    let n3 = node(3, 2, &["debug", "gpu"]);
    let mut n4 = node(4, 2, &["debug", "gpu"]);
    n4.state = NodeState {
        completing: true,
        ..NodeState::new(NodeBase::Mixed)
    };
    n4.alloc_cpus = 1;
    n4.alloc_mem = 500;
    n4.gres_used = vec![model::Gres::parse("gpu:a100:2").unwrap()];
    let v = v0038::answer(
        false,
        vec![],
        vec![(
            "nodes",
            J::Arr([n1, n2, n3, n4].iter().map(v0038::node).collect()),
        )],
    );
    // Vary, or muster does not keep them: load and free memory, last
    // busy, the GRES index detail, the used GRES of nodes without GPUs
    // (Slurm prints gres types of the cluster).
    check(
        "rest_nodes.response",
        200,
        &v,
        &["cpu_load", "free_memory", "last_busy", "gres_used"],
    );
}

#[test]
fn partitions() {
    let mut debug = restd::openapi::example_partition();
    debug.nodes = (1..=4).map(|i| format!("node{i}")).collect();
    debug.total_cpus = 8;
    debug.total_nodes = 4;
    debug.tres = "cpu=8,mem=16000M,node=4,billing=8,gres/gpu=4".into();
    let gpu = PartitionInfo {
        name: "gpu".into(),
        default: false,
        nodes: vec!["node3".into(), "node4".into()],
        total_cpus: 4,
        total_nodes: 2,
        tres: "cpu=4,mem=8000M,node=2,billing=4,gres/gpu=4".into(),
        ..debug.clone()
    };
    let v = v0038::answer(
        false,
        vec![],
        vec![(
            "partitions",
            J::Arr([debug, gpu].iter().map(v0038::partition).collect()),
        )],
    );
    check("rest_partitions.response", 200, &v, &[]);
}

#[test]
fn dbd_job() {
    let mut j = restd::openapi::example_acct_job();
    j.cluster = "anchor".into();
    j.job_id = JobId(66811);
    j.name = "restjob".into();
    j.user = "sauser".into();
    j.uid = 2001;
    j.gid = 2001;
    j.account = "research".into();
    j.state = JobState::Cancelled;
    j.cancelled_by = Some(2001);
    j.exit_code = model::ExitCode::default();
    j.priority = 2854;
    j.submit_time = 1796207070;
    j.eligible_time = Some(1796207070);
    j.start_time = Some(1796207072);
    j.end_time = Some(1796207072);
    j.time_limit = TimeLimit::Unlimited;
    j.nodes = "None assigned".into();
    j.alloc_tres = String::new();
    j.work_dir = "/home/sauser/capture".into();
    j.steps = vec![];
    // The reference job ran in no container: `null`.
    j.container = None;
    let v = v0038::answer(
        true,
        vec![],
        vec![(
            "jobs",
            J::Arr(vec![v0038::db_job(&j, "sauser", Some("sauser"))]),
        )],
    );
    check("rest_dbd_job.response", 200, &v, &[]);
}

/// slurmrestd's own answers fit the document restd serves: every key
/// they hold is in it, with the type it says.
#[test]
fn the_reference_answers_validate_against_the_served_document() {
    let doc = restd::openapi::document().to_value();
    for (file, schema) in [
        ("rest_ping.response", "v0.0.38_pings"),
        ("rest_job_query.response", "v0.0.38_jobs_response"),
        ("rest_jobs.response", "v0.0.38_jobs_response"),
        (
            "rest_job_query_nonexistent.response",
            "v0.0.38_jobs_response",
        ),
        ("rest_nodes.response", "v0.0.38_nodes_response"),
        ("rest_partitions.response", "v0.0.38_partitions_response"),
        (
            "rest_job_submit.response",
            "v0.0.38_job_submission_response",
        ),
        ("rest_job_cancel.response", "v0.0.38_errors"),
        ("rest_bad_token.response", "v0.0.38_errors"),
        ("rest_dbd_job.response", "dbv0.0.38_job_info"),
    ] {
        let (_, body) = golden(file);
        let v: Value = serde_json::from_str(&body).unwrap();
        restd::openapi::validate(&doc, schema, &v).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn a_submission_refusal_fits_the_errors_schema() {
    let doc = restd::openapi::document().to_value();
    let (_, body) = golden("rest_job_submit_bad_partition.response");
    let v: Value = serde_json::from_str(&body).unwrap();
    restd::openapi::validate(&doc, "v0.0.38_errors", &v).unwrap();
}
