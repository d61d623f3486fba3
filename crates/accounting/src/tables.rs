//! The association database (`sacctmgr`'s clusters, accounts, users,
//! associations and QOS) in the store: one table per kind, keyed as Slurm
//! keys them, each row's whole record as JSON (as for jobs, so a new field
//! needs no migration). [`crate::AccountingStore::save_tables`] replaces
//! the whole database in one transaction: these tables are small (one row
//! per user and account), changed by hand, and read whole by the controller.

use proto::acctdb::{AcctTables, Assoc};

use crate::filter::Param;
use crate::AcctError;

/// Deletes every row, table by table (run before the inserts).
pub(crate) const CLEAR: &[&str] = &[
    "DELETE FROM acct_clusters",
    "DELETE FROM acct_accounts",
    "DELETE FROM acct_users",
    "DELETE FROM acct_assocs",
    "DELETE FROM acct_qos",
];

/// The reads, each returning one JSON record per row, in key order.
pub(crate) const SELECT_CLUSTERS: &str = "SELECT record FROM acct_clusters ORDER BY name";
pub(crate) const SELECT_ACCOUNTS: &str = "SELECT record FROM acct_accounts ORDER BY name";
pub(crate) const SELECT_USERS: &str = "SELECT record FROM acct_users ORDER BY name";
pub(crate) const SELECT_ASSOCS: &str = "SELECT record FROM acct_assocs ORDER BY id";
pub(crate) const SELECT_QOS: &str = "SELECT record FROM acct_qos ORDER BY name";

/// One insert: its SQL (with `ph` placeholders) and parameters.
pub(crate) fn inserts(
    t: &AcctTables,
    ph: crate::filter::Placeholder,
) -> Result<Vec<(String, Vec<Param>)>, AcctError> {
    let enc = |v: &dyn erased::Json| v.json();
    let named = |table: &str, name: &str, rec: String| {
        (
            format!(
                "INSERT INTO {table} (name, record) VALUES ({}, {})",
                ph(1),
                ph(2)
            ),
            vec![Param::Text(name.to_owned()), Param::Text(rec)],
        )
    };
    let mut out = Vec::new();
    for c in &t.clusters {
        out.push(named("acct_clusters", &c.name, enc(c)?));
    }
    for a in &t.accounts {
        out.push(named("acct_accounts", &a.name, enc(a)?));
    }
    for u in &t.users {
        out.push(named("acct_users", &u.name, enc(u)?));
    }
    for q in &t.qos {
        out.push(named("acct_qos", &q.name, enc(q)?));
    }
    for a in &t.assocs {
        out.push(assoc_insert(a, enc(a)?, ph));
    }
    Ok(out)
}

fn assoc_insert(a: &Assoc, rec: String, ph: crate::filter::Placeholder) -> (String, Vec<Param>) {
    let values: Vec<String> = (1..=6).map(ph).collect();
    (
        format!(
            "INSERT INTO acct_assocs (id, cluster, account, user_name, partition_name, record) \
             VALUES ({})",
            values.join(", ")
        ),
        vec![
            Param::Int(i64::from(a.id)),
            Param::Text(a.cluster.clone()),
            Param::Text(a.account.clone()),
            Param::Text(a.user.clone()),
            Param::Text(a.partition.clone()),
            Param::Text(rec),
        ],
    )
}

/// Builds the tables from the five reads' records (in [`CLEAR`]'s order:
/// clusters, accounts, users, associations, QOS).
pub(crate) fn decode(rows: [Vec<String>; 5]) -> Result<AcctTables, AcctError> {
    let [clusters, accounts, users, assocs, qos] = rows;
    fn all<T: serde::de::DeserializeOwned>(
        rows: Vec<String>,
        what: &str,
    ) -> Result<Vec<T>, AcctError> {
        rows.iter()
            .map(|r| {
                serde_json::from_str(r).map_err(|source| AcctError::CorruptTable {
                    table: what.to_owned(),
                    source,
                })
            })
            .collect()
    }
    Ok(AcctTables {
        clusters: all(clusters, "acct_clusters")?,
        accounts: all(accounts, "acct_accounts")?,
        users: all(users, "acct_users")?,
        assocs: all(assocs, "acct_assocs")?,
        qos: all(qos, "acct_qos")?,
    })
}

/// JSON encoding of any table row, with the store's error.
mod erased {
    use crate::AcctError;

    pub(crate) trait Json {
        fn json(&self) -> Result<String, AcctError>;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> Result<String, AcctError> {
            serde_json::to_string(self).map_err(|source| AcctError::Encode { job_id: 0, source })
        }
    }
}
