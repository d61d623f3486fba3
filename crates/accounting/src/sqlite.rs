//! The embedded backend: one SQLite file.
//!
//! Durability: WAL journal with `synchronous=FULL`, so every committed write
//! is fsynced before `put_job`/`put_jobs` return ("durable before
//! acknowledged", design.md principle 2). `NORMAL` would be crash-safe for
//! the process but could lose the last commits on power loss; the cost of
//! FULL is one fsync per transaction, which `put_jobs` amortizes over a
//! batch. WAL lets `sacct` read while the controller writes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proto::AcctJob;
use rusqlite::types::{ToSqlOutput, Value};
use rusqlite::{Connection, ToSql, TransactionBehavior};

use crate::filter::{self, Param};
use crate::migrations;
use crate::tables;
use crate::usage::UsageRow;
use crate::usage_sql;
use crate::{AccountingStore, AcctError, JobQuery};

/// How long a writer or reader waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Accounting in a SQLite file (the default: nothing to install).
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    version: u32,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

fn placeholder(n: usize) -> String {
    format!("?{n}")
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
            Param::OptInt(Some(i)) => ToSqlOutput::Owned(Value::Integer(*i)),
            Param::OptInt(None) => ToSqlOutput::Owned(Value::Null),
            Param::Text(s) => ToSqlOutput::Borrowed(s.as_str().into()),
        })
    }
}

impl SqliteStore {
    /// Opens (creating it and its parent directories if needed) the database
    /// at `path`, and brings its schema to [`crate::SCHEMA_VERSION`].
    ///
    /// # Errors
    ///
    /// [`AcctError::SchemaTooNew`] for a database written by a newer muster;
    /// [`AcctError::Io`] or [`AcctError::Sqlite`] when the file cannot be
    /// created, opened or upgraded.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, AcctError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| AcctError::Io {
                path: path.clone(),
                source,
            })?;
        }
        let mut conn = Connection::open(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        debug_assert!(mode.eq_ignore_ascii_case("wal"), "journal_mode {mode}");
        conn.pragma_update(None, "synchronous", "FULL")?;
        let version = migrate(&mut conn)?;
        Ok(SqliteStore {
            conn,
            path,
            version,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bulk loading on or off: set-up for benchmarks and imports, never the
    /// controller's path. On, commits are not fsynced (`synchronous=OFF`)
    /// and the page cache is 1 GiB, so a loader that puts large batches
    /// (100,000 jobs a transaction) is bound by encoding and index upkeep,
    /// not by the disk; a crash while loading can lose or corrupt what was
    /// loaded. Off restores the durable settings [`SqliteStore::open`] sets.
    ///
    /// # Errors
    ///
    /// [`AcctError::Sqlite`] when a pragma is refused.
    pub fn set_bulk_load(&mut self, on: bool) -> Result<(), AcctError> {
        let (sync, cache) = if on {
            ("OFF", -1_048_576)
        } else {
            ("FULL", -2000)
        };
        self.conn.pragma_update(None, "synchronous", sync)?;
        self.conn.pragma_update(None, "cache_size", cache)?;
        if !on {
            // What was written unsynced reaches the disk before durable
            // writes resume.
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(())
    }

    /// SQLite's plan for the query of `q` (`EXPLAIN QUERY PLAN`, one
    /// line per step): which index ranges it walks.
    ///
    /// # Errors
    ///
    /// [`AcctError::Sqlite`] when the plan cannot be read.
    pub fn explain(&self, q: &JobQuery) -> Result<String, AcctError> {
        let sql = filter::select(q, placeholder);
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", sql.text))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(sql.params.iter()), |r| {
            r.get::<_, String>(3)
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?.join("\n"))
    }

    /// How many job records the database holds (all clusters).
    ///
    /// # Errors
    ///
    /// [`AcctError::Sqlite`] when the count cannot be read.
    pub fn job_count(&self) -> Result<u64, AcctError> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// Runs the missing migrations; returns the version the database is at.
fn migrate(conn: &mut Connection) -> Result<u32, AcctError> {
    // IMMEDIATE takes the write lock first, so two processes opening a new
    // database at once do not both try to create it.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(migrations::CREATE_VERSION_TABLE)?;
    let found: Option<i64> = tx.query_row(migrations::SELECT_VERSION, [], |r| r.get(0))?;
    for (version, sql) in migrations::pending(migrations::found_version(found))? {
        tx.execute_batch(sql)?;
        tx.execute_batch(&migrations::record_version_sql(version))?;
    }
    let now: Option<i64> = tx.query_row(migrations::SELECT_VERSION, [], |r| r.get(0))?;
    tx.commit()?;
    Ok(migrations::found_version(now))
}

/// A column that is not the text it should be, as rusqlite reports it.
fn conversion(col: usize) -> impl Fn(rusqlite::types::FromSqlError) -> rusqlite::Error {
    move |e| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, Box::new(e))
    }
}

impl AccountingStore for SqliteStore {
    fn put_job(&mut self, job: &AcctJob) -> Result<(), AcctError> {
        self.put_jobs(std::slice::from_ref(job))
    }

    fn put_jobs(&mut self, jobs: &[AcctJob]) -> Result<(), AcctError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            // One statement for the batch, its text built once.
            let mut stmt = tx.prepare_cached(&filter::upsert_text(placeholder))?;
            for job in jobs {
                let params = filter::upsert_params(job)?;
                stmt.execute(rusqlite::params_from_iter(params.iter()))?;
            }
        }
        for sql in filter::span_updates(jobs, placeholder) {
            let mut stmt = tx.prepare_cached(&sql.text)?;
            stmt.execute(rusqlite::params_from_iter(sql.params.iter()))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn query(&self, q: &JobQuery) -> Result<Vec<AcctJob>, AcctError> {
        let sql = filter::select(q, placeholder);
        let mut stmt = self.conn.prepare_cached(&sql.text)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(sql.params.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            // Borrowed from SQLite's row buffer: no copy of the record
            // before it is decoded.
            let cluster = row.get_ref(0)?.as_str().map_err(conversion(0))?;
            let job_id: i64 = row.get(1)?;
            let record = row.get_ref(2)?.as_bytes().map_err(conversion(2))?;
            out.push(crate::decode(cluster, job_id, record)?);
        }
        Ok(out)
    }

    fn load_tables(&self) -> Result<proto::acctdb::AcctTables, AcctError> {
        let read = |sql: &str| -> Result<Vec<String>, AcctError> {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<_, _>>()?)
        };
        tables::decode([
            read(tables::SELECT_CLUSTERS)?,
            read(tables::SELECT_ACCOUNTS)?,
            read(tables::SELECT_USERS)?,
            read(tables::SELECT_ASSOCS)?,
            read(tables::SELECT_QOS)?,
        ])
    }

    fn save_tables(&mut self, t: &proto::acctdb::AcctTables) -> Result<(), AcctError> {
        let inserts = tables::inserts(t, placeholder)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for sql in tables::CLEAR {
            tx.execute(sql, [])?;
        }
        for (sql, params) in &inserts {
            let mut stmt = tx.prepare_cached(sql)?;
            stmt.execute(rusqlite::params_from_iter(params.iter()))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn rolled_to(&self, cluster: &str) -> Result<Option<i64>, AcctError> {
        let mut stmt = self
            .conn
            .prepare_cached(&usage_sql::select_rolled(placeholder))?;
        let mut rows = stmt.query([cluster])?;
        Ok(match rows.next()? {
            Some(r) => Some(r.get(0)?),
            None => None,
        })
    }

    fn usage(
        &self,
        cluster: &str,
        period: crate::usage::Period,
        from: i64,
        to: i64,
    ) -> Result<Vec<UsageRow>, AcctError> {
        let mut stmt = self.conn.prepare_cached(&usage_sql::select(placeholder))?;
        let params = usage_sql::select_params(cluster, period, from, to);
        let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
            Ok(UsageRow {
                cluster: r.get(0)?,
                period: usage_sql::period(&r.get::<_, String>(1)?),
                start: r.get(2)?,
                account: r.get(3)?,
                user: r.get(4)?,
                alloc_secs: r.get(5)?,
                capacity_secs: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn put_usage(
        &mut self,
        rows: &[UsageRow],
        cluster: &str,
        rolled_to: i64,
    ) -> Result<(), AcctError> {
        let writes = usage_sql::writes(rows, cluster, rolled_to, placeholder);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (sql, params) in &writes {
            let mut stmt = tx.prepare_cached(sql)?;
            stmt.execute(rusqlite::params_from_iter(params.iter()))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn put_resv(&mut self, r: &proto::resv::AcctResv) -> Result<(), AcctError> {
        let rec = crate::resv_sql::encode(r)?;
        let mut stmt = self
            .conn
            .prepare_cached(&crate::resv_sql::upsert(placeholder))?;
        stmt.execute(rusqlite::params![r.cluster, r.name, r.start, r.end, rec])?;
        Ok(())
    }

    fn resvs(
        &self,
        cluster: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Vec<proto::resv::AcctResv>, AcctError> {
        let mut stmt = self
            .conn
            .prepare_cached(&crate::resv_sql::select(placeholder))?;
        let (from, to) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
        let rows = stmt.query_map(rusqlite::params![cluster, from, to], |r| {
            r.get::<_, String>(0)
        })?;
        rows.map(|t| crate::resv_sql::decode(&t?))
            .collect::<Result<_, _>>()
    }

    fn schema_version(&self) -> u32 {
        self.version
    }
}
