//! SQL for the usage rollups, shared by both backends.

use crate::filter::{Param, Placeholder};
use crate::usage::{Period, UsageRow};

/// The rows of one cluster and period kind starting in `[from, to)`.
pub(crate) fn select(ph: Placeholder) -> String {
    format!(
        "SELECT cluster, period, period_start, account, user_name, alloc_secs, capacity_secs \
         FROM usage_rollup WHERE cluster = {} AND period = {} AND period_start >= {} \
         AND period_start < {} ORDER BY period_start, account, user_name",
        ph(1),
        ph(2),
        ph(3),
        ph(4)
    )
}

/// Its parameters.
pub(crate) fn select_params(cluster: &str, period: Period, from: i64, to: i64) -> Vec<Param> {
    vec![
        Param::Text(cluster.to_owned()),
        Param::Text(period.as_str().to_owned()),
        Param::Int(from),
        Param::Int(to),
    ]
}

/// Decodes a period spelling.
pub(crate) fn period(s: &str) -> Period {
    match s {
        "day" => Period::Day,
        "month" => Period::Month,
        _ => Period::Hour,
    }
}

/// The statements that store `rows` (each period they cover is replaced
/// whole) and move the cluster's rollup mark to `rolled_to`.
pub(crate) fn writes(
    rows: &[UsageRow],
    cluster: &str,
    rolled_to: i64,
    ph: Placeholder,
) -> Vec<(String, Vec<Param>)> {
    let mut out = Vec::new();
    let mut periods: Vec<(Period, i64)> = rows.iter().map(|r| (r.period, r.start)).collect();
    periods.sort();
    periods.dedup();
    for (p, start) in periods {
        out.push((
            format!(
                "DELETE FROM usage_rollup WHERE cluster = {} AND period = {} AND period_start = {}",
                ph(1),
                ph(2),
                ph(3)
            ),
            vec![
                Param::Text(cluster.to_owned()),
                Param::Text(p.as_str().to_owned()),
                Param::Int(start),
            ],
        ));
    }
    let values: Vec<String> = (1..=7).map(ph).collect();
    let insert = format!(
        "INSERT INTO usage_rollup (cluster, period, period_start, account, user_name, \
         alloc_secs, capacity_secs) VALUES ({})",
        values.join(", ")
    );
    for r in rows {
        out.push((
            insert.clone(),
            vec![
                Param::Text(r.cluster.clone()),
                Param::Text(r.period.as_str().to_owned()),
                Param::Int(r.start),
                Param::Text(r.account.clone()),
                Param::Text(r.user.clone()),
                Param::Int(r.alloc_secs),
                Param::Int(r.capacity_secs),
            ],
        ));
    }
    out.push((
        format!(
            "INSERT INTO usage_rolled (cluster, rolled_to) VALUES ({}, {}) \
             ON CONFLICT (cluster) DO UPDATE SET rolled_to = excluded.rolled_to",
            ph(1),
            ph(2)
        ),
        vec![Param::Text(cluster.to_owned()), Param::Int(rolled_to)],
    ));
    out
}

/// The rollup mark of a cluster.
pub(crate) fn select_rolled(ph: Placeholder) -> String {
    format!(
        "SELECT rolled_to FROM usage_rolled WHERE cluster = {}",
        ph(1)
    )
}
