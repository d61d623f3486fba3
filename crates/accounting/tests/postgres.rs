//! The conformance suite and schema upgrades on PostgreSQL.
//!
//! They run against the server named by `MUSTER_TEST_PG`, a libpq-style
//! `key=value` connection string (xtask/setup.sh sets one up). Each store lives in
//! a fresh schema of its own, dropped at the end, so tests run in parallel
//! without seeing each other. Without `MUSTER_TEST_PG` the tests say so and
//! pass, except under CI (`CI` set), where they fail: CI must not skip them.

use std::sync::atomic::{AtomicU32, Ordering};

use accounting::suite::{conformance_suite, sample_job};
use accounting::{AccountingStore, AcctError, JobQuery, PgStore, SCHEMA_VERSION};
use postgres::{Client, NoTls};

/// Schema version 1 as released (shared with the SQLite tests).
const V1_SQL: &str = include_str!("fixtures/schema_v1.sql");

fn conninfo(test: &str) -> Option<String> {
    match std::env::var("MUSTER_TEST_PG") {
        Ok(s) if !s.trim().is_empty() => Some(s),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
            assert!(
                !ci,
                "{test}: MUSTER_TEST_PG is not set but CI is: the PostgreSQL accounting \
                 tests must run in CI (xtask/setup.sh starts a server and sets it)"
            );
            eprintln!("{test}: did not run: set MUSTER_TEST_PG to a PostgreSQL connection string");
            None
        }
    }
}

/// Fresh schemas on the test server, dropped with this value (also when a
/// test fails).
struct Scratch {
    base: String,
    admin: Client,
    schemas: Vec<String>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Scratch {
    fn new(base: String) -> Scratch {
        let admin = Client::connect(&base, NoTls)
            .unwrap_or_else(|e| panic!("connecting to MUSTER_TEST_PG ({base}): {e}"));
        Scratch {
            base,
            admin,
            schemas: Vec::new(),
        }
    }

    /// Creates an empty schema; returns a connection string whose
    /// search_path is that schema.
    fn schema(&mut self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "muster_t_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            nanos
        );
        self.admin
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .unwrap();
        self.schemas.push(name.clone());
        format!("{} options='-c search_path={name}'", self.base)
    }

    fn store(&mut self) -> PgStore {
        PgStore::connect(&self.schema()).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for s in &self.schemas {
            if let Err(e) = self
                .admin
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"))
            {
                eprintln!("dropping test schema {s}: {e}");
            }
        }
    }
}

#[test]
fn postgres_passes_the_conformance_suite() {
    let Some(base) = conninfo("postgres_passes_the_conformance_suite") else {
        return;
    };
    let mut scratch = Scratch::new(base);
    conformance_suite(&mut || Box::new(scratch.store()) as Box<dyn AccountingStore>);
}

fn versions(c: &mut Client) -> Vec<i64> {
    c.query("SELECT version FROM schema_version ORDER BY version", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn a_version_1_database_is_upgraded_on_open() {
    let Some(base) = conninfo("a_version_1_database_is_upgraded_on_open") else {
        return;
    };
    assert_eq!(
        SCHEMA_VERSION, 8,
        "update this test when adding a migration"
    );
    let mut scratch = Scratch::new(base);
    let info = scratch.schema();
    let job = sample_job("c1", 5, 1000);
    let mut raw = Client::connect(&info, NoTls).unwrap();
    raw.batch_execute(V1_SQL).unwrap();
    raw.execute(
        "INSERT INTO jobs VALUES ('c1', 5, 1000, 'alice', 'physics', 'COMPLETED', \
         'debug', 'job', 1000, 1010, 1110, $1)",
        &[&serde_json::to_string(&job).unwrap()],
    )
    .unwrap();

    let mut store = PgStore::connect(&info).unwrap();
    assert_eq!(store.schema_version(), 8);
    let q = JobQuery {
        users: vec!["alice".into()],
        ..JobQuery::default()
    };
    assert_eq!(store.query(&q).unwrap(), vec![job.clone()]);
    let mut newer = job.clone();
    newer.reason = "replayed".into();
    store.put_job(&newer).unwrap();
    assert_eq!(store.query(&q).unwrap(), vec![newer]);
    drop(store);

    assert_eq!(versions(&mut raw), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let n: i64 = raw
        .query_one(
            "SELECT COUNT(*) FROM pg_indexes \
             WHERE schemaname = current_schema() AND indexname = 'jobs_user_submit'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "migration 2 created the index");

    // Opening an up-to-date database runs nothing again.
    assert_eq!(PgStore::connect(&info).unwrap().schema_version(), 8);
    assert_eq!(versions(&mut raw), vec![1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn a_newer_database_is_refused_with_both_versions() {
    let Some(base) = conninfo("a_newer_database_is_refused_with_both_versions") else {
        return;
    };
    let mut scratch = Scratch::new(base);
    let info = scratch.schema();
    drop(PgStore::connect(&info).unwrap());
    let mut raw = Client::connect(&info, NoTls).unwrap();
    raw.execute("INSERT INTO schema_version (version) VALUES (99)", &[])
        .unwrap();

    let err = PgStore::connect(&info).unwrap_err();
    assert!(
        matches!(
            err,
            AcctError::SchemaTooNew {
                found: 99,
                supported: 8
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("99") && text.contains("version 8"), "{text}");
}

/// Schema version 6 as released (shared with the SQLite tests).
const V6_SQL: &str = include_str!("fixtures/schema_v6.sql");

#[test]
fn a_version_6_database_gets_the_span_of_its_jobs_on_open() {
    let Some(base) = conninfo("a_version_6_database_gets_the_span_of_its_jobs_on_open") else {
        return;
    };
    let mut scratch = Scratch::new(base);
    let info = scratch.schema();
    let (long, short) = accounting::suite::span_jobs();
    let mut raw = Client::connect(&info, NoTls).unwrap();
    raw.batch_execute(V6_SQL).unwrap();
    for j in short.iter().chain([&long]) {
        raw.execute(
            "INSERT INTO jobs (cluster, job_id, submit_time, user_name, account, state, \
             partition_name, job_name, eligible_time, start_time, end_time, record) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &[
                &j.cluster,
                &i64::from(j.job_id.0),
                &j.submit_time,
                &j.user,
                &j.account,
                &j.state.as_slurm_str(),
                &j.partition,
                &j.name,
                &j.eligible_time,
                &j.start_time,
                &j.end_time,
                &serde_json::to_string(j).unwrap(),
            ],
        )
        .unwrap();
    }

    let store = PgStore::connect(&info).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    let found: Vec<u32> = store
        .query(&accounting::suite::late_window())
        .unwrap()
        .iter()
        .map(|j| j.job_id.0)
        .collect();
    assert_eq!(found, accounting::suite::LATE_WINDOW_IDS);
    drop(store);
    assert_eq!(versions(&mut raw), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let span: i64 = raw
        .query_one("SELECT max_span FROM job_span WHERE cluster = 'c1'", &[])
        .unwrap()
        .get(0);
    assert_eq!(span, long.end_time.unwrap() - long.submit_time);
}
