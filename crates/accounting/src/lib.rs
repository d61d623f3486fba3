//! Job accounting storage (Slurm's slurmdbd job tables): where finished and
//! running jobs are kept for `sacct`, in an embedded SQLite file
//! ([`SqliteStore`], the default: nothing to install) or in PostgreSQL
//! ([`PgStore`], for production and for several clusters sharing one history).
//!
//! It stores and finds [`proto::AcctJob`] records; it does not decide what to
//! write or when (the controller's accounting writer does), and it does not
//! apply sacct's defaults such as "since midnight" (the command does).
//!
//! Invariant: a record is keyed by (cluster, job id, submit time), and every
//! write for a key replaces the stored record whole, steps included. Writes
//! are therefore idempotent and can be replayed after a crash (design.md,
//! principle 2) without ever duplicating a job.
//!
//! ```text
//!  accounting writer --put_job/put_jobs--> AccountingStore --query--> sacct
//!                                           |  jobs: key + indexed query
//!                                           |        columns + JSON record
//!                                           |  schema_version: migrations
//!                                          SQLite file | PostgreSQL
//! ```
//!
//! Every backend passes the same [`suite::conformance_suite`].
//!
//! # Performance notes: the sacct window query
//!
//! sacct's window query without states is two index ranges: ended jobs between
//! the window's start less the cluster's longest submit-to-end span
//! (`job_span`, raised in the same transaction as each write, never lowered)
//! and its end, and jobs with no end through a partial index (`jobs_open`), so
//! its cost follows the answer, not the user's history.
//! `SqliteStore::set_bulk_load` turns fsync off for benchmarks and imports.
#![warn(missing_docs)]

pub mod admin;
mod filter;
mod migrations;
mod pg;
pub mod pg_tls;
mod sqlite;
pub mod suite;
mod tables;
pub mod usage;
mod usage_sql;

use std::path::PathBuf;

use model::{JobState, Timestamp};
use proto::acctdb::AcctTables;
use proto::resv::AcctResv;
use proto::AcctJob;

pub use migrations::SCHEMA_VERSION;
pub use pg::PgStore;

pub use sqlite::SqliteStore;

/// A place where accounting records are kept. Implemented by [`SqliteStore`]
/// and [`PgStore`]; both pass [`suite::conformance_suite`].
pub trait AccountingStore: Send {
    /// Writes one job: inserts it, or replaces the record with the same
    /// (cluster, job id, submit time), steps included. Replaying a write is
    /// harmless. On return the write is durable.
    fn put_job(&mut self, job: &AcctJob) -> Result<(), AcctError>;

    /// Writes several jobs in one transaction (all or none), with the same
    /// meaning as [`AccountingStore::put_job`] for each, in order: when a key
    /// appears twice, the later record wins. This is the batched path: one
    /// commit (one fsync) for the whole slice.
    fn put_jobs(&mut self, jobs: &[AcctJob]) -> Result<(), AcctError>;

    /// The jobs matching `q`, ordered by submit time, then job id, then
    /// cluster.
    fn query(&self, q: &JobQuery) -> Result<Vec<AcctJob>, AcctError>;

    /// The association database (sacctmgr's tables); empty on a new store.
    fn load_tables(&self) -> Result<AcctTables, AcctError>;

    /// Replaces the association database with `tables`, in one
    /// transaction (all or nothing). On return the write is durable.
    fn save_tables(&mut self, tables: &AcctTables) -> Result<(), AcctError>;

    /// How far `cluster`'s usage has been rolled up (`None`: never).
    fn rolled_to(&self, cluster: &str) -> Result<Option<Timestamp>, AcctError>;

    /// The usage rows of `cluster` of one kind whose period starts in
    /// `[from, to)`, ordered by start, account, user.
    fn usage(
        &self,
        cluster: &str,
        period: usage::Period,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<usage::UsageRow>, AcctError>;

    /// Stores rollup rows (each period they cover replaces what was stored
    /// for it) and moves the cluster's rollup mark to `rolled_to`, in one
    /// transaction.
    fn put_usage(
        &mut self,
        rows: &[usage::UsageRow],
        cluster: &str,
        rolled_to: Timestamp,
    ) -> Result<(), AcctError>;

    /// Writes one reservation window: inserts it or replaces the record
    /// with the same (cluster, name, start). On return it is durable.
    fn put_resv(&mut self, r: &AcctResv) -> Result<(), AcctError>;

    /// The reservation windows of `cluster` that meet `[start, end)` (open
    /// where `None`), by start then name.
    fn resvs(
        &self,
        cluster: &str,
        start: Option<Timestamp>,
        end: Option<Timestamp>,
    ) -> Result<Vec<AcctResv>, AcctError>;

    /// The schema version of the open database (always [`SCHEMA_VERSION`]
    /// once opened: older databases are upgraded on open).
    fn schema_version(&self) -> u32;
}

/// Which jobs [`AccountingStore::query`] returns. Fields are ANDed; within a
/// list the values are ORed; an empty list or `None` does not filter.
///
/// The time window follows sacct(1) `--starttime`/`--endtime`:
/// - without `states`, a job is returned when it was eligible or running at
///   some time in `[start, end]`: it became eligible (or started) at or
///   before `end` and had not ended before `start`. A job that never became
///   eligible (held, no `eligible_time` and no `start_time`) is in no window,
///   as in Slurm.
/// - with `states`, a job is returned when its state is one of them and it
///   was in that state during the window: PENDING from submission until its
///   start; RUNNING and SUSPENDED from start until end; a final state when
///   its end time lies in the window.
///
/// A missing bound is open (`start: None` is "since ever", `end: None` is
/// "until now"). Defaults such as sacct's "midnight today" are the caller's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobQuery {
    /// ClusterName (`sacct -M`); `None` is every cluster.
    pub cluster: Option<String>,
    /// Job ids (`sacct -j`).
    pub job_ids: Vec<u32>,
    /// User names (`sacct -u`).
    pub users: Vec<String>,
    /// Accounts (`sacct -A`).
    pub accounts: Vec<String>,
    /// States (`sacct -s`); changes the meaning of the time window, see above.
    pub states: Vec<JobState>,
    /// Job names (`sacct --name`).
    pub names: Vec<String>,
    /// Partitions (`sacct -r`).
    pub partitions: Vec<String>,
    /// Window start (`sacct -S`), inclusive.
    pub start: Option<Timestamp>,
    /// Window end (`sacct -E`), inclusive.
    pub end: Option<Timestamp>,
}

/// Why an accounting operation failed. Every variant means the store could
/// not do what was asked; nothing was half-written (writes are transactions).
#[derive(Debug, thiserror::Error)]
pub enum AcctError {
    /// The SQLite file's directory could not be created.
    #[error("accounting database {path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// SQLite refused or failed (file unreadable, disk full, locked too long).
    #[error("accounting database (sqlite): {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL refused or failed (connection, permissions, SQL).
    #[error("accounting database (postgresql): {0}")]
    Postgres(#[from] postgres::Error),
    /// The TLS settings of the PostgreSQL connection string are wrong, or
    /// a certificate or key they name cannot be read.
    #[error("accounting database (postgresql): TLS: {0}")]
    Tls(String),
    /// The database was created or upgraded by a newer muster: this build
    /// must not write to it. Upgrade muster, or point it at another database.
    #[error(
        "accounting database schema version {found} is newer than this build supports \
         (version {supported}): upgrade muster"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: u32,
        /// The newest version this build knows ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// A stored record could not be decoded (edited by hand, or damaged).
    #[error("accounting record of job {job_id} on cluster {cluster:?} cannot be read: {source}")]
    Corrupt {
        /// Its cluster.
        cluster: String,
        /// Its job id.
        job_id: u32,
        /// The decoding error.
        source: serde_json::Error,
    },
    /// A row of the association database could not be decoded.
    #[error("accounting table {table} has a record that cannot be read: {source}")]
    CorruptTable {
        /// The table.
        table: String,
        /// The decoding error.
        source: serde_json::Error,
    },
    /// A record could not be encoded as JSON (should not happen for
    /// [`AcctJob`]; kept as an error rather than a panic).
    #[error("accounting record of job {job_id} cannot be encoded: {source}")]
    Encode {
        /// Its job id.
        job_id: u32,
        /// The encoding error.
        source: serde_json::Error,
    },
}

/// The reservation windows' SQL, shared by both backends (`$n` or `?n`
/// placeholders from `ph`).
pub(crate) mod resv_sql {
    /// Inserts or replaces one window: cluster, name, start, end, record.
    pub(crate) fn upsert(ph: crate::filter::Placeholder) -> String {
        format!(
            "INSERT INTO reservations (cluster, name, time_start, time_end, record) \
             VALUES ({}, {}, {}, {}, {}) \
             ON CONFLICT (cluster, name, time_start) \
             DO UPDATE SET time_end = excluded.time_end, record = excluded.record",
            ph(1),
            ph(2),
            ph(3),
            ph(4),
            ph(5)
        )
    }

    /// The windows of a cluster ending after ?2 and starting before ?3
    /// (a window deleted before it began, of no length, is left out).
    pub(crate) fn select(ph: crate::filter::Placeholder) -> String {
        format!(
            "SELECT record FROM reservations WHERE cluster = {} AND time_end > {} \
             AND time_start < {} AND time_end > time_start ORDER BY time_start, name",
            ph(1),
            ph(2),
            ph(3)
        )
    }

    /// The record as stored.
    pub(crate) fn encode(r: &proto::resv::AcctResv) -> Result<String, crate::AcctError> {
        serde_json::to_string(r).map_err(|source| crate::AcctError::Encode { job_id: 0, source })
    }

    /// A stored record.
    pub(crate) fn decode(text: &str) -> Result<proto::resv::AcctResv, crate::AcctError> {
        serde_json::from_str(text).map_err(|source| crate::AcctError::CorruptTable {
            table: "reservations".into(),
            source,
        })
    }
}

/// Decodes a stored record; `cluster` and `job_id` only name it in errors.
fn decode(cluster: &str, job_id: i64, record: impl AsRef<[u8]>) -> Result<AcctJob, AcctError> {
    serde_json::from_slice(record.as_ref()).map_err(|source| AcctError::Corrupt {
        cluster: cluster.to_owned(),
        job_id: u32::try_from(job_id).unwrap_or(u32::MAX),
        source,
    })
}
