//! The conformance suite and schema upgrades on SQLite.

use accounting::suite::{conformance_suite, sample_job};
use accounting::{AccountingStore, AcctError, JobQuery, SqliteStore, SCHEMA_VERSION};

#[test]
fn sqlite_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    conformance_suite(&mut || {
        n += 1;
        let path = dir.path().join(format!("acct-{n}.db"));
        Box::new(SqliteStore::open(path).unwrap()) as Box<dyn AccountingStore>
    });
}

/// Schema version 1 exactly as released. Frozen on purpose: this is what
/// databases in the field look like, whatever the migrations become.
const V1_SQL: &str = include_str!("fixtures/schema_v1.sql");

fn versions(conn: &rusqlite::Connection) -> Vec<i64> {
    let mut st = conn
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_version_1_database_is_upgraded_on_open() {
    assert_eq!(
        SCHEMA_VERSION, 8,
        "update this test when adding a migration"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let job = sample_job("c1", 5, 1000);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(V1_SQL).unwrap();
        conn.execute(
            "INSERT INTO jobs VALUES ('c1', 5, 1000, 'alice', 'physics', 'COMPLETED', \
             'debug', 'job', 1000, 1010, 1110, ?1)",
            [serde_json::to_string(&job).unwrap()],
        )
        .unwrap();
    }

    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version(), 8);
    // The old record is still there and still found, through the new index.
    let q = JobQuery {
        users: vec!["alice".into()],
        ..JobQuery::default()
    };
    assert_eq!(store.query(&q).unwrap(), vec![job.clone()]);
    // And writes still replace it.
    let mut newer = job.clone();
    newer.reason = "replayed".into();
    store.put_job(&newer).unwrap();
    assert_eq!(store.query(&q).unwrap(), vec![newer]);
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(versions(&conn), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let index: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'jobs_user_submit'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 1, "migration 2 created the index");
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT record FROM jobs WHERE user_name = 'alice' \
             ORDER BY submit_time",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("jobs_user_submit"), "plan: {plan}");
    drop(conn);

    // Opening an up-to-date database runs nothing again.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version(), 8);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(versions(&conn), vec![1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn a_newer_database_is_refused_with_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("INSERT INTO schema_version (version) VALUES (99)", [])
        .unwrap();
    drop(conn);

    let err = SqliteStore::open(&path).unwrap_err();
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

#[test]
fn open_creates_parent_directories_and_uses_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/acct.db");
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.path(), path);
    assert!(path.exists());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode.to_ascii_lowercase(), "wal");
}

#[test]
fn a_damaged_record_is_an_error_naming_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acct.db");
    let mut store = SqliteStore::open(&path).unwrap();
    store.put_job(&sample_job("c1", 77, 10)).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE jobs SET record = '{' WHERE job_id = 77", [])
        .unwrap();
    let err = store.query(&JobQuery::default()).unwrap_err();
    assert!(
        matches!(err, AcctError::Corrupt { job_id: 77, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("job 77"), "{err}");
}

#[test]
fn a_bulk_load_is_stored_and_durable_settings_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulk.db");
    let mut store = SqliteStore::open(&path).unwrap();
    store.set_bulk_load(true).unwrap();
    let jobs: Vec<_> = (1..=500)
        .map(|i| sample_job("c1", i, 1000 + i64::from(i)))
        .collect();
    store.put_jobs(&jobs).unwrap();
    store.set_bulk_load(false).unwrap();
    assert_eq!(store.job_count().unwrap(), 500);
    // Switching back checkpointed the unsynced writes into the main file.
    let wal = dir.path().join("bulk.db-wal");
    assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0);
    drop(store);
    // A reopened store finds them.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.job_count().unwrap(), 500);
    let q = JobQuery {
        cluster: Some("c1".into()),
        ..JobQuery::default()
    };
    assert_eq!(store.query(&q).unwrap().len(), 500);
}

/// Schema version 6 as released: the last one without `job_span`.
const V6_SQL: &str = include_str!("fixtures/schema_v6.sql");

/// A row of the jobs table as the version 6 writer stored it.
fn insert_v6(conn: &rusqlite::Connection, j: &proto::AcctJob) {
    conn.execute(
        "INSERT INTO jobs (cluster, job_id, submit_time, user_name, account, state, \
         partition_name, job_name, eligible_time, start_time, end_time, record, array_job_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL)",
        rusqlite::params![
            j.cluster,
            j.job_id.0,
            j.submit_time,
            j.user,
            j.account,
            j.state.as_slurm_str(),
            j.partition,
            j.name,
            j.eligible_time,
            j.start_time,
            j.end_time,
            serde_json::to_string(j).unwrap()
        ],
    )
    .unwrap();
}

#[test]
fn a_version_6_database_gets_the_span_of_its_jobs_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.db");
    let (long, short) = accounting::suite::span_jobs();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(V6_SQL).unwrap();
        for j in short.iter().chain([&long]) {
            insert_v6(&conn, j);
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    // The long job, stored before the upgrade, is found near its end.
    assert_eq!(
        store
            .query(&accounting::suite::late_window())
            .unwrap()
            .iter()
            .map(|j| j.job_id.0)
            .collect::<Vec<_>>(),
        accounting::suite::LATE_WINDOW_IDS
    );
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(versions(&conn), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let span: i64 = conn
        .query_row(
            "SELECT max_span FROM job_span WHERE cluster = 'c1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(span, long.end_time.unwrap() - long.submit_time);

    // The fixture is version 6 as the migrations make it: once upgraded,
    // the database has exactly the schema of a new one.
    let fresh = dir.path().join("fresh.db");
    drop(SqliteStore::open(&fresh).unwrap());
    assert_eq!(
        schema(&conn),
        schema(&rusqlite::Connection::open(&fresh).unwrap())
    );
}

/// Every table and index definition, normalized, in name order.
fn schema(conn: &rusqlite::Connection) -> Vec<String> {
    let mut st = conn
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
        .unwrap();
    st.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|s| s.unwrap().split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_window_query_walks_a_bounded_index_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("plan.db")).unwrap();
    let plan = store.explain(&accounting::suite::late_window()).unwrap();
    assert!(
        plan.contains("jobs_user_window (user_name=? AND submit_time>? AND submit_time<?)"),
        "the ended jobs' range has both bounds:\n{plan}"
    );
    assert!(
        plan.contains("jobs_open (user_name=? AND submit_time<?)"),
        "jobs with no end have their own index:\n{plan}"
    );
}
