//! The PostgreSQL backend, through the synchronous `postgres` client.
//!
//! Durability is the server's: a commit returns once PostgreSQL has made it
//! durable under its own `synchronous_commit` setting (on by default).
//! Tables live in the connection's `search_path`, so one server can hold
//! several independent stores in separate schemas (the tests do this with
//! `options='-c search_path=...'` in the connection string).

use std::cell::RefCell;

use postgres::types::ToSql;
use postgres::Client;
use proto::AcctJob;

use crate::filter::{self, Param};
use crate::migrations;
use crate::tables;
use crate::usage::UsageRow;
use crate::usage_sql;
use crate::{AccountingStore, AcctError, JobQuery};

/// Serializes schema migrations between processes opening the same server
/// at once (an arbitrary constant key for `pg_advisory_xact_lock`).
const MIGRATION_LOCK: i64 = 0x6d75_7374_6572; // "muster"

/// Accounting in PostgreSQL (production, several clusters in one history).
pub struct PgStore {
    // `query` takes `&self` but the client needs `&mut`: the store is used
    // from one thread at a time (the trait is `Send`, not `Sync`).
    client: RefCell<Client>,
    version: u32,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

fn placeholder(n: usize) -> String {
    format!("${n}")
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| -> &(dyn ToSql + Sync) {
            match p {
                Param::Int(i) => i,
                Param::OptInt(o) => o,
                Param::Text(s) => s,
            }
        })
        .collect()
}

impl PgStore {
    /// Connects with a libpq-style connection string
    /// (`host=/var/run/postgresql user=muster dbname=muster`, or a
    /// `postgresql://` URL), with TLS as its `sslmode` and the files of
    /// `sslrootcert`, `sslcert` and `sslkey` say (libpq's meanings,
    /// [`crate::pg_tls`]), and brings the schema to
    /// [`crate::SCHEMA_VERSION`].
    ///
    /// # Errors
    ///
    /// [`AcctError::SchemaTooNew`] for a database written by a newer muster;
    /// [`AcctError::Postgres`] when the server cannot be reached, refuses
    /// the login or TLS (or its certificate), or the upgrade fails;
    /// [`AcctError::Tls`] for TLS settings that cannot be used.
    pub fn connect(conninfo: &str) -> Result<PgStore, AcctError> {
        let (rest, tls) = crate::pg_tls::split(conninfo)?;
        let mut config: postgres::Config = rest.parse()?;
        config.ssl_mode(crate::pg_tls::client_mode(&tls));
        let mut client = config.connect(crate::pg_tls::connector(&tls)?)?;
        let version = migrate(&mut client)?;
        Ok(PgStore {
            client: RefCell::new(client),
            version,
        })
    }
}

/// Runs the missing migrations; returns the version the database is at.
fn migrate(client: &mut Client) -> Result<u32, AcctError> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(migrations::CREATE_VERSION_TABLE)?;
    let found: Option<i64> = tx.query_one(migrations::SELECT_VERSION, &[])?.get(0);
    for (version, sql) in migrations::pending(migrations::found_version(found))? {
        tx.batch_execute(sql)?;
        tx.batch_execute(&migrations::record_version_sql(version))?;
    }
    let now: Option<i64> = tx.query_one(migrations::SELECT_VERSION, &[])?.get(0);
    tx.commit()?;
    Ok(migrations::found_version(now))
}

impl AccountingStore for PgStore {
    fn put_job(&mut self, job: &AcctJob) -> Result<(), AcctError> {
        self.put_jobs(std::slice::from_ref(job))
    }

    fn put_jobs(&mut self, jobs: &[AcctJob]) -> Result<(), AcctError> {
        let client = self.client.get_mut();
        let mut tx = client.transaction()?;
        let mut stmt = None;
        for job in jobs {
            let sql = filter::upsert(job, placeholder)?;
            // The upsert's text is the same for every job: prepare it once.
            let st = match &stmt {
                Some(st) => st,
                None => stmt.insert(tx.prepare(&sql.text)?),
            };
            tx.execute(st, &refs(&sql.params))?;
        }
        for sql in filter::span_updates(jobs, placeholder) {
            tx.execute(sql.text.as_str(), &refs(&sql.params))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn query(&self, q: &JobQuery) -> Result<Vec<AcctJob>, AcctError> {
        let sql = filter::select(q, placeholder);
        let rows = self
            .client
            .borrow_mut()
            .query(sql.text.as_str(), &refs(&sql.params))?;
        rows.iter()
            .map(|row| {
                let cluster: &str = row.try_get(0)?;
                let job_id: i64 = row.try_get(1)?;
                let record: &str = row.try_get(2)?;
                crate::decode(cluster, job_id, record)
            })
            .collect()
    }

    fn load_tables(&self) -> Result<proto::acctdb::AcctTables, AcctError> {
        let mut client = self.client.borrow_mut();
        let mut read = |sql: &str| -> Result<Vec<String>, AcctError> {
            let rows = client.query(sql, &[])?;
            rows.iter()
                .map(|r| r.try_get::<_, String>(0).map_err(AcctError::from))
                .collect()
        };
        let rows = [
            read(tables::SELECT_CLUSTERS)?,
            read(tables::SELECT_ACCOUNTS)?,
            read(tables::SELECT_USERS)?,
            read(tables::SELECT_ASSOCS)?,
            read(tables::SELECT_QOS)?,
        ];
        tables::decode(rows)
    }

    fn save_tables(&mut self, t: &proto::acctdb::AcctTables) -> Result<(), AcctError> {
        let inserts = tables::inserts(t, placeholder)?;
        let client = self.client.get_mut();
        let mut tx = client.transaction()?;
        for sql in tables::CLEAR {
            tx.execute(*sql, &[])?;
        }
        for (sql, params) in &inserts {
            tx.execute(sql.as_str(), &refs(params))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn rolled_to(&self, cluster: &str) -> Result<Option<i64>, AcctError> {
        let rows = self
            .client
            .borrow_mut()
            .query(usage_sql::select_rolled(placeholder).as_str(), &[&cluster])?;
        Ok(match rows.first() {
            Some(r) => Some(r.try_get(0)?),
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
        let params = usage_sql::select_params(cluster, period, from, to);
        let rows = self
            .client
            .borrow_mut()
            .query(usage_sql::select(placeholder).as_str(), &refs(&params))?;
        rows.iter()
            .map(|r| {
                Ok(UsageRow {
                    cluster: r.try_get(0)?,
                    period: usage_sql::period(r.try_get::<_, &str>(1)?),
                    start: r.try_get(2)?,
                    account: r.try_get(3)?,
                    user: r.try_get(4)?,
                    alloc_secs: r.try_get(5)?,
                    capacity_secs: r.try_get(6)?,
                })
            })
            .collect()
    }

    fn put_usage(
        &mut self,
        rows: &[UsageRow],
        cluster: &str,
        rolled_to: i64,
    ) -> Result<(), AcctError> {
        let writes = usage_sql::writes(rows, cluster, rolled_to, placeholder);
        let client = self.client.get_mut();
        let mut tx = client.transaction()?;
        for (sql, params) in &writes {
            tx.execute(sql.as_str(), &refs(params))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn put_resv(&mut self, r: &proto::resv::AcctResv) -> Result<(), AcctError> {
        let rec = crate::resv_sql::encode(r)?;
        self.client.get_mut().execute(
            crate::resv_sql::upsert(placeholder).as_str(),
            &[&r.cluster, &r.name, &r.start, &r.end, &rec],
        )?;
        Ok(())
    }

    fn resvs(
        &self,
        cluster: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Vec<proto::resv::AcctResv>, AcctError> {
        let (from, to) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
        let rows = self.client.borrow_mut().query(
            crate::resv_sql::select(placeholder).as_str(),
            &[&cluster, &from, &to],
        )?;
        rows.iter()
            .map(|r| crate::resv_sql::decode(r.try_get::<_, &str>(0)?))
            .collect()
    }

    fn schema_version(&self) -> u32 {
        self.version
    }
}
