//! Usage rollups (Slurm's hourly, daily and monthly usage tables): how many
//! CPU-seconds each association (cluster, account, user) was allocated in
//! each hour, day and month, and the cluster's capacity in each hour. They
//! feed `sreport` and the decayed usage that fair-share reads.
//!
//! Rolling up is idempotent: an hour's rows are computed from the job
//! records that overlap it and replace whatever was stored, so the last
//! hours are simply rolled again when late records arrive. Periods are UTC
//! (hours are the same in every whole-hour time zone; reports sum hours).
//!
//! ```text
//!  jobs (start, end, CPUs) --hour_rows--> usage(kind=hour) --sum--> day, month
//!                                               |
//!                          decayed_usage(half-life, now) --> fair-share
//! ```

use std::collections::BTreeMap;

use model::Timestamp;
use proto::AcctJob;

use crate::{AccountingStore, AcctError, JobQuery};

/// Seconds in an hour.
pub const HOUR: i64 = 3600;
/// Seconds in a day.
pub const DAY: i64 = 86_400;

/// Which rollup a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Period {
    /// One hour.
    Hour,
    /// One UTC day.
    Day,
    /// One UTC month.
    Month,
}

impl Period {
    /// How the store spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Month => "month",
        }
    }
}

/// One rollup row. The cluster's own row has an empty account and user and
/// carries the capacity; association rows have `capacity_secs` 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    /// Cluster.
    pub cluster: String,
    /// Hour, day or month.
    pub period: Period,
    /// Its start (seconds since the epoch, UTC).
    pub start: Timestamp,
    /// Account (empty: the cluster row).
    pub account: String,
    /// User (empty: the cluster or an account's jobs without a user).
    pub user: String,
    /// Allocated CPU-seconds.
    pub alloc_secs: i64,
    /// CPU-seconds the cluster could give (cluster row only).
    pub capacity_secs: i64,
}

/// The start of the UTC month holding `t`, and of the next one.
pub fn month_bounds(t: Timestamp) -> (Timestamp, Timestamp) {
    use chrono::{Datelike, TimeZone, Utc};
    let d = Utc.timestamp_opt(t, 0).single().unwrap_or_default();
    let first = Utc
        .with_ymd_and_hms(d.year(), d.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    let (y, m) = if d.month() == 12 {
        (d.year() + 1, 1)
    } else {
        (d.year(), d.month() + 1)
    };
    let next = Utc
        .with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    (first.timestamp(), next.timestamp())
}

/// The hourly rows of `cluster` for the hours in `[from, to)` (both on hour
/// boundaries) from the job records that overlap them; jobs still running
/// count until `now`. `cpus` is the cluster's CPU count (its capacity).
pub fn hour_rows(
    jobs: &[AcctJob],
    cluster: &str,
    cpus: u32,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
) -> Vec<UsageRow> {
    let mut by: BTreeMap<(Timestamp, String, String), i64> = BTreeMap::new();
    let mut total: BTreeMap<Timestamp, i64> = BTreeMap::new();
    for j in jobs.iter().filter(|j| j.cluster == cluster) {
        let Some(start) = j.start_time else { continue };
        let end = j.end_time.unwrap_or(now).min(now);
        let (lo, hi) = (start.max(from), end.min(to));
        let mut h = lo - lo.rem_euclid(HOUR);
        while h < hi {
            let secs = (hi.min(h + HOUR) - lo.max(h)).max(0);
            if secs > 0 {
                let cpu_secs = secs * i64::from(j.n_cpus);
                *by.entry((h, j.account.clone(), j.user.clone()))
                    .or_default() += cpu_secs;
                *total.entry(h).or_default() += cpu_secs;
            }
            h += HOUR;
        }
    }
    let mut out = Vec::new();
    let mut h = from;
    while h < to {
        // The hour in progress counts what has passed of it. Allocated
        // time never exceeds what the cluster had (records of jobs on
        // nodes since removed, clock steps).
        let cap = i64::from(cpus) * (now - h).clamp(0, HOUR);
        out.push(UsageRow {
            cluster: cluster.to_owned(),
            period: Period::Hour,
            start: h,
            account: String::new(),
            user: String::new(),
            alloc_secs: total.get(&h).copied().unwrap_or(0).min(cap.max(0)),
            capacity_secs: cap,
        });
        h += HOUR;
    }
    for ((h, account, user), secs) in by {
        out.push(UsageRow {
            cluster: cluster.to_owned(),
            period: Period::Hour,
            start: h,
            account,
            user,
            alloc_secs: secs,
            capacity_secs: 0,
        });
    }
    out
}

/// Sums hourly rows into rows of `period` starting at `start`.
pub fn sum_rows(hours: &[UsageRow], period: Period, start: Timestamp) -> Vec<UsageRow> {
    let mut by: BTreeMap<(String, String, String), (i64, i64)> = BTreeMap::new();
    for r in hours {
        let e = by
            .entry((r.cluster.clone(), r.account.clone(), r.user.clone()))
            .or_default();
        e.0 += r.alloc_secs;
        e.1 += r.capacity_secs;
    }
    by.into_iter()
        .map(|((cluster, account, user), (alloc, cap))| UsageRow {
            cluster,
            period,
            start,
            account,
            user,
            alloc_secs: alloc,
            capacity_secs: cap,
        })
        .collect()
}

/// How far back the first rollup of a store goes.
pub const FIRST_ROLLUP_DAYS: i64 = 62;

/// Rolls `cluster` up to `now`: the hours since the last rollup (the last
/// two again, for records that arrived late) and the hour in progress (so
/// far), then the days and months they touch. Returns the start of the hour
/// in progress: the next rollup starts there.
pub fn roll_up(
    store: &mut dyn AccountingStore,
    cluster: &str,
    cpus: u32,
    now: Timestamp,
) -> Result<Timestamp, AcctError> {
    let current = now - now.rem_euclid(HOUR);
    let to = current + HOUR;
    let from = match store.rolled_to(cluster)? {
        Some(t) => (t - 2 * HOUR).min(current),
        None => current - FIRST_ROLLUP_DAYS * DAY,
    };
    // A day of jobs at a time bounds what is held in memory.
    let mut day = from;
    while day < to {
        let end = (day - day.rem_euclid(DAY) + DAY).min(to);
        let q = JobQuery {
            cluster: Some(cluster.to_owned()),
            start: Some(day),
            end: Some(end),
            ..JobQuery::default()
        };
        let jobs = store.query(&q)?;
        let mut rows = hour_rows(&jobs, cluster, cpus, day, end, now);
        let d0 = day - day.rem_euclid(DAY);
        let day_hours = store.usage(cluster, Period::Hour, d0, d0 + DAY)?;
        let merged = merge(day_hours, &rows);
        rows.extend(sum_rows(&merged, Period::Day, d0));
        let (m0, m1) = month_bounds(d0);
        let mut month_days = store.usage(cluster, Period::Day, m0, m1)?;
        month_days.retain(|r| r.start != d0);
        month_days.extend(rows.iter().filter(|r| r.period == Period::Day).cloned());
        rows.extend(sum_rows(&month_days, Period::Month, m0));
        store.put_usage(&rows, cluster, end.min(current))?;
        day = end;
    }
    Ok(current)
}

/// Stored hourly rows with `fresh` ones replacing those of the same hour.
fn merge(stored: Vec<UsageRow>, fresh: &[UsageRow]) -> Vec<UsageRow> {
    let hours: Vec<Timestamp> = fresh
        .iter()
        .filter(|r| r.period == Period::Hour)
        .map(|r| r.start)
        .collect();
    let mut out: Vec<UsageRow> = stored
        .into_iter()
        .filter(|r| !hours.contains(&r.start))
        .collect();
    out.extend(fresh.iter().filter(|r| r.period == Period::Hour).cloned());
    out
}

/// Each association's (account, user) usage decayed to `now` with
/// PriorityDecayHalfLife `half_life` seconds: an hour's CPU-seconds weigh
/// `2^-(age / half_life)`, age measured from the end of the hour. A
/// half-life of 0 means no decay. Read by the controller for fair-share.
pub fn decayed(
    rows: &[UsageRow],
    half_life: i64,
    now: Timestamp,
) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.period == Period::Hour && !r.account.is_empty())
    {
        let age = (now - (r.start + HOUR)).max(0) as f64;
        let w = if half_life > 0 {
            (-(age / half_life as f64) * std::f64::consts::LN_2).exp()
        } else {
            1.0
        };
        *out.entry((r.account.clone(), r.user.clone()))
            .or_insert(0.0) += r.alloc_secs as f64 * w;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::sample_job;

    #[test]
    fn jobs_are_split_over_the_hours_they_ran() {
        // 2 CPUs from 00:30 to 02:15 on day 0.
        let mut j = sample_job("c", 1, 0);
        j.start_time = Some(1800);
        j.end_time = Some(2 * HOUR + 900);
        j.n_cpus = 2;
        let rows = hour_rows(&[j], "c", 4, 0, 3 * HOUR, 10 * HOUR);
        let user: Vec<(i64, i64)> = rows
            .iter()
            .filter(|r| !r.account.is_empty())
            .map(|r| (r.start, r.alloc_secs))
            .collect();
        assert_eq!(user, vec![(0, 3600), (HOUR, 7200), (2 * HOUR, 1800)]);
        let cluster: Vec<(i64, i64, i64)> = rows
            .iter()
            .filter(|r| r.account.is_empty())
            .map(|r| (r.start, r.alloc_secs, r.capacity_secs))
            .collect();
        assert_eq!(
            cluster,
            vec![
                (0, 3600, 4 * HOUR),
                (HOUR, 7200, 4 * HOUR),
                (2 * HOUR, 1800, 4 * HOUR)
            ]
        );
    }

    #[test]
    fn a_running_job_counts_until_now() {
        let mut j = sample_job("c", 1, 0);
        j.start_time = Some(0);
        j.end_time = None;
        j.n_cpus = 1;
        let rows = hour_rows(&[j], "c", 1, 0, HOUR, 600);
        assert_eq!(
            rows.iter()
                .find(|r| !r.account.is_empty())
                .unwrap()
                .alloc_secs,
            600
        );
        let cluster = rows.iter().find(|r| r.account.is_empty()).unwrap();
        assert_eq!(cluster.capacity_secs, 600, "the hour in progress, so far");
    }

    #[test]
    fn decay_halves_per_half_life() {
        let row = |start, secs| UsageRow {
            cluster: "c".into(),
            period: Period::Hour,
            start,
            account: "a".into(),
            user: "u".into(),
            alloc_secs: secs,
            capacity_secs: 0,
        };
        let rows = vec![row(0, 1000), row(HOUR, 1000)];
        let d = decayed(&rows, HOUR, 2 * HOUR);
        let v = d[&("a".to_string(), "u".to_string())];
        assert!((v - 1500.0).abs() < 1e-6, "{v}");
        assert_eq!(
            decayed(&rows, 0, 99 * HOUR)[&("a".into(), "u".into())],
            2000.0
        );
    }

    #[test]
    fn months_are_calendar_months() {
        // 2026-02-10 UTC.
        let (a, b) = month_bounds(1_770_681_600);
        assert_eq!((b - a) / DAY, 28);
    }
}
