//! Golden tests of the answers that have no capture of slurmrestd in the
//! reference: the data parser v0.0.44 and slurmdbd's v0.0.38 accounts,
//! users, associations, QOS, TRES, config and diag. Each answer is built
//! from fixed state and compared with `tests/golden/<name>.json` (written
//! by `UPDATE_GOLDEN=1 cargo test -p restd --test golden_v0044`), with
//! the fields that vary from run to run or machine to machine masked;
//! slurmdbd's v0.0.38 answers are also checked against slurmrestd 22.05's
//! own document (`../shared/reference/slurm-22.05/rest_openapi_v3.json`):
//! every key they hold is in its schema, with its type.

use model::{JobId, JobState, PendingReason, TimeLimit};
use proto::{Identity, JobInfo};
use restd::json::J;
use restd::v0044::{db, render};
use restd::{dbv0038, v0038};
use serde_json::Value;

fn mask(v: &mut J, keys: &[&str]) {
    match v {
        J::Obj(pairs) => {
            for (k, x) in pairs.iter_mut() {
                if keys.contains(&k.as_str()) {
                    *x = J::from("<masked>");
                } else {
                    mask(x, keys);
                }
            }
        }
        J::Arr(items) => items.iter_mut().for_each(|x| mask(x, keys)),
        _ => {}
    }
}

/// Compares `ours` (masked, written as restd writes it: keys in order)
/// with the golden file `name`.
fn golden(name: &str, ours: &J, masked: &[&str]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let mut got = ours.clone();
    mask(&mut got, masked);
    let text = got.to_slurm_string() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    assert_eq!(text, want, "{name}: differs from {}", path.display());
}

fn caller() -> Identity {
    Identity {
        uid: 2001,
        gid: 2001,
        user: "sauser".into(),
        host: "login1".into(),
    }
}

/// `meta.client` names the caller's group as this machine knows it.
const VARYING: &[&str] = &["client"];

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
        requeue: true,
        ..JobInfo::default()
    }
}

fn answer(db: bool, result: Vec<(&str, J)>) -> J {
    render::answer(render::meta(db, "anchor", &caller()), result, vec![])
}

#[test]
fn v0044_jobs_pending_and_running() {
    let pending = job_66811();
    let running = JobInfo {
        job_id: JobId(66812),
        state: JobState::Running,
        reason: PendingReason::None,
        start_time: Some(1796207080),
        nodes: vec!["node1".into()],
        batch_host: Some("node1".into()),
        cpus_per_node: vec![2],
        cpu_ids_per_node: vec![vec![0, 1]],
        num_cpus: 2,
        time_limit: TimeLimit::Minutes(30),
        ..job_66811()
    };
    let topo = vec![("node1".to_string(), 2, 1, 1)];
    let v = answer(
        false,
        vec![
            (
                "jobs",
                J::Arr(vec![
                    render::job(&pending, "anchor", &topo),
                    render::job(&running, "anchor", &topo),
                ]),
            ),
            ("last_backfill", render::no_val(None)),
            ("last_update", render::time(Some(1796207090))),
        ],
    );
    golden("v0044_jobs", &v, &[VARYING, &["last_update"]].concat());
}

#[test]
fn v0044_nodes_partitions_ping_and_submit() {
    let node = restd::openapi::example_node();
    golden(
        "v0044_nodes",
        &answer(
            false,
            vec![("nodes", J::Arr(vec![render::node(&node, "anchor")]))],
        ),
        VARYING,
    );
    let part = restd::openapi::example_partition();
    golden(
        "v0044_partitions",
        &answer(
            false,
            vec![(
                "partitions",
                J::Arr(vec![render::partition(&part, "anchor")]),
            )],
        ),
        VARYING,
    );
    golden(
        "v0044_ping",
        &answer(
            false,
            vec![("pings", J::Arr(vec![render::ping("ctl", true, 120)]))],
        ),
        &[VARYING, &["latency"]].concat(),
    );
}

#[test]
fn v0044_accounting_answers() {
    let mut acct = restd::openapi::example_acct_job();
    acct.job_id = JobId(66811);
    let t = dbv0038::example_tables();
    golden(
        "v0044_db_jobs",
        &answer(
            true,
            vec![("jobs", J::Arr(vec![db::job(&acct, "sauser", None)]))],
        ),
        VARYING,
    );
    golden(
        "v0044_db_accounts_users_assocs_qos",
        &answer(
            true,
            vec![
                ("accounts", J::Arr(vec![db::account(&t, &t.accounts[0])])),
                ("users", J::Arr(vec![db::user(&t, &t.users[0])])),
                ("associations", J::Arr(vec![db::assoc(&t.assocs[0])])),
                ("qos", J::Arr(vec![db::qos(&t.qos[0])])),
            ],
        ),
        VARYING,
    );
}

/// slurmrestd 22.05's document (`shared/reference/slurm-22.05/
/// rest_openapi_v3.json`, copied into `tests/golden/` so that a clone on
/// its own runs this test).
fn reference_document() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/rest_openapi_v3.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn slurmdb_v0038_answers_fit_slurmrestds_own_document() {
    let reference = reference_document();
    for (schema, v) in dbv0038::examples() {
        // Not `meta`: slurmrestd 22.05 writes its version numbers as
        // integers (`rest_ping.response`) where its document says strings;
        // restd follows what it writes.
        let mut value = v.to_value();
        value.as_object_mut().unwrap().remove("meta");
        restd::openapi::validate(&reference, schema, &value)
            .unwrap_or_else(|e| panic!("{schema}: {e}"));
        golden(&schema.replace('.', "_"), &v, &[]);
    }
}

#[test]
fn a_heterogeneous_submission_is_refused_in_the_submission_error_shape() {
    // As `rest_job_submit_bad_partition.response`: status 500, errors of
    // `{error_code, error}`.
    let v = v0038::answer(
        false,
        vec![v0038::submit_error(proto::SlurmError::NotSupported)],
        vec![],
    );
    let errors = &v.to_value()["errors"];
    assert_eq!(
        errors,
        &serde_json::json!([{"error_code": 2036, "error": "Requested operation not supported on this system"}])
    );
}
