//! The schema, as an ordered list of migrations shared by both backends.
//!
//! Migration N (1-based) takes a database from version N-1 to N. A database
//! records the versions applied in `schema_version`; opening one runs the
//! missing migrations in one transaction. Released migrations are never
//! edited: a change is a new migration at the end.
//!
//! The SQL is the common subset of SQLite and PostgreSQL: `BIGINT` columns
//! (integer affinity in SQLite), `TEXT`, `ON CONFLICT` upserts. Column names
//! avoid SQL keywords (`user_name`, `partition_name`).

use crate::AcctError;

/// Creates the version table where it does not exist yet.
pub(crate) const CREATE_VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL PRIMARY KEY)";

/// The current version: `SELECT` returns NULL on a new database.
pub(crate) const SELECT_VERSION: &str = "SELECT MAX(version) FROM schema_version";

/// The migrations, in order; `MIGRATIONS[i]` creates version `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the jobs table. The key makes writes idempotent; the indexed
    // columns are what sacct filters on; `record` is the whole AcctJob as
    // JSON, steps included, so new fields need no migration.
    "CREATE TABLE jobs (
        cluster TEXT NOT NULL,
        job_id BIGINT NOT NULL,
        submit_time BIGINT NOT NULL,
        user_name TEXT NOT NULL,
        account TEXT NOT NULL,
        state TEXT NOT NULL,
        partition_name TEXT NOT NULL,
        job_name TEXT NOT NULL,
        eligible_time BIGINT,
        start_time BIGINT,
        end_time BIGINT,
        record TEXT NOT NULL,
        PRIMARY KEY (cluster, job_id, submit_time)
    );
    CREATE INDEX jobs_job_id ON jobs (job_id);
    CREATE INDEX jobs_account ON jobs (account);
    CREATE INDEX jobs_state ON jobs (state);
    CREATE INDEX jobs_partition ON jobs (partition_name);
    CREATE INDEX jobs_name ON jobs (job_name);
    CREATE INDEX jobs_submit ON jobs (submit_time);
    CREATE INDEX jobs_eligible ON jobs (eligible_time);
    CREATE INDEX jobs_start ON jobs (start_time);
    CREATE INDEX jobs_end ON jobs (end_time);",
    // 2: sacct's commonest query is one user's jobs in submit order.
    "CREATE INDEX jobs_user_submit ON jobs (user_name, submit_time);",
    // 3: the association database (sacctmgr): one table per kind, keyed as
    // Slurm keys them, with the whole record as JSON.
    "CREATE TABLE acct_clusters (name TEXT NOT NULL PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE acct_accounts (name TEXT NOT NULL PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE acct_users (name TEXT NOT NULL PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE acct_qos (name TEXT NOT NULL PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE acct_assocs (
        id BIGINT NOT NULL PRIMARY KEY,
        cluster TEXT NOT NULL,
        account TEXT NOT NULL,
        user_name TEXT NOT NULL,
        partition_name TEXT NOT NULL,
        record TEXT NOT NULL,
        UNIQUE (cluster, account, user_name, partition_name)
    );",
    // 4: `sacct -j 123` also selects the tasks of array 123, whose own job
    // ids differ.
    "ALTER TABLE jobs ADD COLUMN array_job_id BIGINT;
    CREATE INDEX jobs_array ON jobs (array_job_id);",
    // 5: usage rollups (sreport, fair-share): allocated CPU-seconds per
    // association and per hour, day and month; the cluster's own row
    // (empty account and user) also carries its capacity. `usage_rolled`
    // is how far each cluster has been rolled up.
    "CREATE TABLE usage_rollup (
        cluster TEXT NOT NULL,
        period TEXT NOT NULL,
        period_start BIGINT NOT NULL,
        account TEXT NOT NULL,
        user_name TEXT NOT NULL,
        alloc_secs BIGINT NOT NULL,
        capacity_secs BIGINT NOT NULL,
        PRIMARY KEY (cluster, period, period_start, account, user_name)
    );
    CREATE TABLE usage_rolled (cluster TEXT NOT NULL PRIMARY KEY, rolled_to BIGINT NOT NULL);",
    // 6: sacct's one-user window query filtered inside the index: the
    // times it tests ride along, so only matching rows are read.
    "CREATE INDEX jobs_user_window ON jobs (user_name, submit_time, eligible_time, start_time, end_time);",
    // 7: a lower bound for the window query's index walk. `job_span` keeps,
    // per cluster, the longest (end - submit) of any ended job written
    // (raised on every write, never lowered), so a job that ended at or
    // after the window's start was submitted at or after start - max_span.
    // Jobs with no end yet are found through `jobs_open`, which holds only
    // them. Existing jobs set the first values.
    "CREATE TABLE job_span (cluster TEXT NOT NULL PRIMARY KEY, max_span BIGINT NOT NULL);
    INSERT INTO job_span (cluster, max_span)
        SELECT cluster, MAX(end_time - submit_time) FROM jobs
        WHERE end_time IS NOT NULL GROUP BY cluster;
    CREATE INDEX jobs_open ON jobs (user_name, submit_time) WHERE end_time IS NULL;",
    // 8: reservation windows (sacctmgr show reservation, sreport
    // reservation utilization): one row per (cluster, name, window start),
    // the whole record as JSON.
    "CREATE TABLE reservations (
        cluster TEXT NOT NULL,
        name TEXT NOT NULL,
        time_start BIGINT NOT NULL,
        time_end BIGINT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (cluster, name, time_start)
    );
    CREATE INDEX reservations_end ON reservations (cluster, time_end);",
];

/// The schema version this build creates and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The migrations to run on a database at version `found` (0: new), as
/// (version they create, SQL), or an error when the database is newer than
/// this build.
pub(crate) fn pending(found: u32) -> Result<Vec<(u32, &'static str)>, AcctError> {
    if found > SCHEMA_VERSION {
        return Err(AcctError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(MIGRATIONS
        .iter()
        .enumerate()
        .map(|(i, sql)| (i as u32 + 1, *sql))
        .filter(|(v, _)| *v > found)
        .collect())
}

/// Converts the stored version (NULL on a new database) to a number.
pub(crate) fn found_version(v: Option<i64>) -> u32 {
    // A negative or huge value can only come from a hand edit; treating it
    // as "too new" refuses to touch the database, which is the safe side.
    v.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// The `INSERT` that records a version as applied.
pub(crate) fn record_version_sql(version: u32) -> String {
    format!("INSERT INTO schema_version (version) VALUES ({version})")
}
