//! Advance reservations (Slurm's `scontrol create reservation`): a set of
//! nodes held for some users or accounts over a window of time.
//!
//! ```text
//!   CreateReservation/UpdateReservation/DeleteReservation --> Resvs (journaled)
//!   scheduling pass: every window laid on the backfill timeline
//!     (`resv_blocks` -> `sched::Blocks`); the jobs in a reservation
//!     decided first, held to its nodes (`resv_restrict`), waiting
//!     (Reservation) until it begins
//!   every input (`resv_tick`): windows over are recorded and purged, or
//!     moved on (DAILY, ...); PURGE_COMP ones idle long enough go;
//!     REPLACE ones swap lost nodes; `resv_wake` says when the next is due
//! ```
//!
//! Jobs are kept off a reservation's nodes by the scheduler itself: each
//! window is a plan on the timeline that holds its nodes whole, laid
//! before the pass decides any job outside it, so such a job starts now
//! only where its run ends before the window or lies on other nodes, and
//! otherwise gets a planned start after the window (StartTime, `squeue
//! --start`, `muster explain`). Where no timeline is at hand (preemption,
//! `--test-only`) the nodes of the reservations its run would meet are
//! taken out of its request instead (`resv_exclude_others`). A pass over
//! every job runs while any reservation exists (the shortcuts assume a
//! job's request changes only with the job).
//!
//! Flags: MAINT (waiting jobs read `ReqNodeNotAvail, Reserved for
//! maintenance`), OVERLAP, IGNORE_JOBS, FLEX (its jobs start early, run
//! past it, use other nodes), HOURLY/DAILY/WEEKLY/WEEKDAY/WEEKEND (the
//! window moves on once over; days in the controller's time zone),
//! MAGNETIC (the jobs it admits are decided with its own), ANY_NODES (its
//! jobs may use any node), REPLACE/REPLACE_DOWN, PURGE_COMP[=time].
//! Accounting gets each window (`Command::AcctResv`) when made, changed,
//! deleted or over, with Slurm's UnusedWall.

use crate::{Engine, Job};
use model::{JobState, PendingReason, TimeLimit, Timestamp};
use proto::resv::{ResvInfo, ResvSpec};
use proto::{Identity, SlurmError};
use sched::NodeIdx;
use std::collections::BTreeMap;

/// The reservation flags muster knows, with Slurm's names, in the order
/// `scontrol show reservation` prints them.
pub(crate) const FLAG_NAMES: &[(u32, &str)] = &[
    (MAINT, "MAINT"),
    (FLEX, "FLEX"),
    (OVERLAP, "OVERLAP"),
    (IGNORE_JOBS, "IGNORE_JOBS"),
    (HOURLY, "HOURLY"),
    (DAILY, "DAILY"),
    (WEEKDAY, "WEEKDAY"),
    (WEEKEND, "WEEKEND"),
    (WEEKLY, "WEEKLY"),
    (SPEC_NODES, "SPEC_NODES"),
    (ALL_NODES, "ALL_NODES"),
    (ANY_NODES, "ANY_NODES"),
    (REPLACE, "REPLACE"),
    (REPLACE_DOWN, "REPLACE_DOWN"),
    (PURGE_COMP, "PURGE_COMP"),
    (MAGNETIC, "MAGNETIC"),
];

/// `MAINT`: maintenance; may overlap other reservations; waiting jobs
/// read `ReqNodeNotAvail, Reserved for maintenance`.
pub(crate) const MAINT: u32 = 1;
/// `OVERLAP`: may share nodes with other reservations.
pub(crate) const OVERLAP: u32 = 1 << 1;
/// `IGNORE_JOBS`: created even where jobs run on its nodes in its window.
pub(crate) const IGNORE_JOBS: u32 = 1 << 2;
/// `SPEC_NODES` (set by the controller): its nodes were named.
pub(crate) const SPEC_NODES: u32 = 1 << 3;
/// `ALL_NODES` (set by the controller): `Nodes=ALL`.
pub(crate) const ALL_NODES: u32 = 1 << 4;
/// `FLEX`: its jobs may start before it, run past its end, and use nodes
/// outside it.
pub(crate) const FLEX: u32 = 1 << 5;
/// `DAILY`: once over, it comes back a day later.
pub(crate) const DAILY: u32 = 1 << 6;
/// `WEEKLY`: once over, it comes back a week later.
pub(crate) const WEEKLY: u32 = 1 << 7;
/// `WEEKDAY`: comes back the next day from Monday to Friday (UTC).
pub(crate) const WEEKDAY: u32 = 1 << 8;
/// `WEEKEND`: comes back the next Saturday or Sunday (UTC).
pub(crate) const WEEKEND: u32 = 1 << 9;
/// `MAGNETIC`: jobs it admits use it without asking for it.
pub(crate) const MAGNETIC: u32 = 1 << 10;
/// `ANY_NODES`: its jobs may use any node as well as its own.
pub(crate) const ANY_NODES: u32 = 1 << 11;
/// `REPLACE`: a node of it that is down, drained or given to a job is
/// replaced by an idle one.
pub(crate) const REPLACE: u32 = 1 << 12;
/// `REPLACE_DOWN`: a node of it that is down or drained is replaced by an
/// idle one.
pub(crate) const REPLACE_DOWN: u32 = 1 << 13;
/// `PURGE_COMP[=time]`: deleted once it has been active and without jobs
/// for that long (5 minutes by default).
pub(crate) const PURGE_COMP: u32 = 1 << 14;
/// `HOURLY`: once over, it comes back an hour later.
pub(crate) const HOURLY: u32 = 1 << 15;

/// The flags an administrator may give (the others the controller sets).
const GIVEN: u32 = MAINT
    | OVERLAP
    | IGNORE_JOBS
    | FLEX
    | DAILY
    | WEEKLY
    | WEEKDAY
    | WEEKEND
    | MAGNETIC
    | ANY_NODES
    | REPLACE
    | REPLACE_DOWN
    | PURGE_COMP
    | HOURLY;

/// The flags that make a reservation come back.
const RECURRING: u32 = HOURLY | DAILY | WEEKLY | WEEKDAY | WEEKEND;

/// `PURGE_COMP` without a time: 5 minutes, as Slurm.
const PURGE_COMP_DEFAULT: i64 = 300;

/// Parsed `Flags=`: bits to set and to clear, and `PURGE_COMP=`'s time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlagWords {
    pub(crate) set: u32,
    pub(crate) clear: u32,
    pub(crate) purge_secs: Option<i64>,
}

/// One reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resv {
    /// Its name.
    pub name: String,
    /// When it starts.
    pub start: Timestamp,
    /// When it ends (purged then).
    pub end: Timestamp,
    /// Its nodes, in index order.
    pub nodes: Vec<NodeIdx>,
    /// `PartitionName=`.
    pub partition: Option<String>,
    /// Flag bits (`MAINT`, ...).
    pub flags: u32,
    /// Users allowed (with `users_except`: refused).
    pub users: Vec<String>,
    /// `Users=-a,b`.
    pub users_except: bool,
    /// Accounts allowed (with `accounts_except`: refused).
    pub accounts: Vec<String>,
    /// `Accounts=-a,b`.
    pub accounts_except: bool,
    /// `PURGE_COMP=`: seconds without jobs after which it is deleted.
    pub purge_secs: i64,
    /// The last time a job named it (or its start): `PURGE_COMP` counts
    /// from here.
    pub last_job: Timestamp,
}

impl Resv {
    /// Its window meets `[from, to)`.
    pub(crate) fn meets(&self, from: Timestamp, to: Timestamp) -> bool {
        self.start < to && from < self.end
    }

    /// In its window at `now`.
    pub(crate) fn active(&self, now: Timestamp) -> bool {
        self.start <= now && now < self.end
    }

    /// May a job of `user` under `account` run in it: each list given
    /// must let it in.
    pub(crate) fn admits(&self, user: &str, account: Option<&str>) -> bool {
        let within = |list: &[String], except: bool, who: Option<&str>| {
            if list.is_empty() {
                return true;
            }
            let listed = who.is_some_and(|w| list.iter().any(|x| x == w));
            listed != except
        };
        (!self.users.is_empty() || !self.accounts.is_empty())
            && within(&self.users, self.users_except, Some(user))
            && within(&self.accounts, self.accounts_except, account)
    }

    /// Its flags by Slurm's names, comma-separated (`PURGE_COMP=` with
    /// its time, as Slurm prints it).
    pub(crate) fn flags_text(&self) -> String {
        FLAG_NAMES
            .iter()
            .filter(|(bit, _)| self.flags & bit != 0)
            .map(|&(bit, name)| {
                if bit == PURGE_COMP {
                    let secs = self.purge_secs.max(0) as u64;
                    format!("{name}={}", model::units::format_duration_hms(secs))
                } else {
                    name.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether jobs in it are held to its nodes (not with FLEX or
    /// ANY_NODES).
    pub(crate) fn confines(&self) -> bool {
        self.flags & (FLEX | ANY_NODES) == 0
    }

    /// Moves a recurring reservation that ended by `now` to its next
    /// window (a day, a week, the next weekday ...); false where it does
    /// not recur.
    pub(crate) fn recur(&mut self, now: Timestamp, utc_offset: i64) -> bool {
        let flags = self.flags & RECURRING;
        if flags == 0 || self.end > now {
            return flags != 0;
        }
        let step = if flags & HOURLY != 0 {
            3600
        } else if flags & WEEKLY != 0 {
            7 * DAY
        } else {
            DAY
        };
        // Whole steps past `now` at once, then day by day to an allowed one.
        let behind = (now - self.end) / step + 1;
        self.start += behind * step;
        self.end += behind * step;
        while !self.day_allowed(utc_offset) {
            self.start += DAY;
            self.end += DAY;
        }
        self.last_job = self.start;
        true
    }

    /// A WEEKDAY reservation starts Monday to Friday, a WEEKEND one on
    /// Saturday or Sunday, in local time (`utc_offset`: the controller's
    /// time zone, `Engine::set_utc_offset`).
    fn day_allowed(&self, utc_offset: i64) -> bool {
        // 1970-01-01 was a Thursday: 0 = Sunday.
        let weekday = ((self.start + utc_offset).div_euclid(DAY) + 4).rem_euclid(7);
        let weekend = weekday == 0 || weekday == 6;
        if self.flags & WEEKDAY != 0 {
            !weekend
        } else if self.flags & WEEKEND != 0 {
            weekend
        } else {
            true
        }
    }

    /// The longest window a recurring reservation may have (its period).
    fn period(&self) -> Option<i64> {
        let f = self.flags & RECURRING;
        if f == 0 {
            None
        } else if f & HOURLY != 0 {
            Some(3600)
        } else if f & WEEKLY != 0 {
            Some(7 * DAY)
        } else {
            Some(DAY)
        }
    }
}

/// Seconds in a day.
const DAY: i64 = 86_400;

/// Every reservation, by name.
#[derive(Clone, Debug, Default)]
pub struct Resvs {
    pub(crate) by_name: BTreeMap<String, Resv>,
    /// The number the next unnamed reservation gets (`user_N`).
    pub(crate) next_id: u32,
    /// A reservation was made (or a job names one): passes look for jobs
    /// whose reservation has not begun, or is gone.
    pub(crate) ever: bool,
}

impl Resvs {
    /// No reservation at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Parses a `Flags=` value: the bits to set and the bits to clear
/// (`-FLAG`, on update), and `PURGE_COMP=time` (Slurm's time forms:
/// minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes
/// [:seconds]]; 5 minutes where none is given).
pub(crate) fn parse_flags(text: &str) -> Result<FlagWords, SlurmError> {
    let mut out = FlagWords::default();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let (remove, word) = match word.strip_prefix('-') {
            Some(w) => (true, w),
            None => (false, word.strip_prefix('+').unwrap_or(word)),
        };
        let (word, time) = match word.split_once('=') {
            Some((w, t)) => (w, Some(t)),
            None => (word, None),
        };
        let bit = FLAG_NAMES
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(word))
            .map(|(bit, _)| *bit)
            .filter(|bit| bit & GIVEN != 0)
            .ok_or(SlurmError::InvalidRequest)?;
        match (bit, time) {
            (PURGE_COMP, Some(t)) if !remove => {
                out.purge_secs = Some(purge_secs(t).ok_or(SlurmError::InvalidTimeValue)?);
            }
            (PURGE_COMP, None) if !remove => out.purge_secs = Some(PURGE_COMP_DEFAULT),
            (_, Some(_)) => return Err(SlurmError::InvalidRequest),
            _ => {}
        }
        if remove {
            out.clear |= bit;
        } else {
            out.set |= bit;
        }
    }
    if (out.set & RECURRING).count_ones() > 1 {
        return Err(SlurmError::InvalidRequest);
    }
    Ok(out)
}

/// A `PURGE_COMP=` time in seconds: a bare number is minutes, `m:s`,
/// `h:m:s`, `d-h`, `d-h:m`, `d-h:m:s`.
fn purge_secs(text: &str) -> Option<i64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().ok()?, Some(r)),
        None => (0, None),
    };
    let parts: Vec<i64> = rest
        .unwrap_or(text)
        .split(':')
        .map(|p| p.parse::<i64>().ok().filter(|v| *v >= 0))
        .collect::<Option<_>>()?;
    let secs = match (rest.is_some(), parts.as_slice()) {
        (false, [m]) => m * 60,
        (false, [m, s]) => m * 60 + s,
        (false, [h, m, s]) | (true, [h, m, s]) => h * 3600 + m * 60 + s,
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        _ => return None,
    };
    (days >= 0).then_some(days * DAY + secs)
}

/// Applies a `Users=`/`Accounts=` value to a list: `a,b` sets it, `-a,b`
/// (on create) refuses those, `+a`/`-a` (on update, with a list already)
/// adds or removes.
fn apply_names(list: &mut Vec<String>, except: &mut bool, text: &str, update: bool) {
    let names = |t: &str| -> Vec<String> {
        t.split(',')
            .map(|s| s.trim().trim_start_matches(['+', '-']).to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if update && text.starts_with('+') {
        for n in names(text) {
            if !list.contains(&n) {
                list.push(n);
            }
        }
    } else if update && text.starts_with('-') && !list.is_empty() && !*except {
        let gone = names(text);
        list.retain(|n| !gone.contains(n));
    } else {
        *except = text.starts_with('-');
        *list = names(text);
    }
}

/// Refuses a recurring window longer than its period, and moves a
/// WEEKDAY or WEEKEND one to its first allowed day.
fn check_window(resv: &mut Resv, utc_offset: i64) -> Result<(), SlurmError> {
    if resv.period().is_some_and(|p| resv.end - resv.start > p) {
        return Err(SlurmError::InvalidTimeValue);
    }
    while !resv.day_allowed(utc_offset) {
        resv.start += DAY;
        resv.end += DAY;
    }
    Ok(())
}

/// A time limit in seconds (`None`: unlimited).
fn limit_secs(limit: TimeLimit) -> Option<i64> {
    match limit {
        TimeLimit::Minutes(m) => Some(i64::from(m) * 60),
        TimeLimit::Unlimited => None,
    }
}

impl Engine {
    /// `scontrol create reservation`: its name, or Slurm's refusal.
    pub(crate) fn on_create_resv(
        &mut self,
        spec: ResvSpec,
        who: &Identity,
        now: Timestamp,
    ) -> Result<String, SlurmError> {
        if !self.is_operator(who) {
            return Err(SlurmError::AccessDenied);
        }
        let name = if spec.name.is_empty() {
            self.resvs.next_id += 1;
            format!("{}_{}", who.user, self.resvs.next_id)
        } else {
            spec.name.clone()
        };
        if self.resvs.by_name.contains_key(&name) {
            return Err(SlurmError::ReservationNameDup);
        }
        let start = match (spec.start_now, spec.start) {
            (true, _) | (false, None) => now,
            (false, Some(t)) => t.max(now),
        };
        let end = match (spec.end, spec.duration_mins) {
            (Some(e), _) => e,
            (None, Some(d)) => start.saturating_add(d.min(i64::MAX as u64 / 120) as i64 * 60),
            (None, None) => return Err(SlurmError::InvalidTimeValue),
        };
        if end <= start {
            return Err(SlurmError::InvalidTimeValue);
        }
        let words = parse_flags(spec.flags.as_deref().unwrap_or(""))?;
        let flags = words.set;
        let mut resv = Resv {
            name: name.clone(),
            start,
            end,
            nodes: Vec::new(),
            partition: spec.partition.clone(),
            flags,
            users: Vec::new(),
            users_except: false,
            accounts: Vec::new(),
            accounts_except: false,
            purge_secs: words.purge_secs.unwrap_or(0),
            last_job: start,
        };
        check_window(&mut resv, self.utc_offset)?;
        if let Some(u) = &spec.users {
            apply_names(&mut resv.users, &mut resv.users_except, u, false);
        }
        if let Some(a) = &spec.accounts {
            apply_names(&mut resv.accounts, &mut resv.accounts_except, a, false);
        }
        if resv.users.is_empty() && resv.accounts.is_empty() {
            return Err(SlurmError::ReservationEmpty);
        }
        self.resv_nodes(&mut resv, spec.nodes.as_deref(), spec.node_cnt)?;
        self.check_resv_room(&resv, None)?;
        self.resvs.by_name.insert(name.clone(), resv);
        self.resvs.ever = true;
        self.record_resv(&name, None, now);
        self.touch();
        Ok(name)
    }

    /// `scontrol update ReservationName=...`.
    pub(crate) fn on_update_resv(
        &mut self,
        spec: ResvSpec,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        if !self.is_operator(who) {
            return Err(SlurmError::AccessDenied);
        }
        let mut resv = self
            .resvs
            .by_name
            .get(&spec.name)
            .cloned()
            .ok_or(SlurmError::ReservationInvalid)?;
        let length = resv.end - resv.start;
        if spec.start_now {
            resv.start = now;
            resv.end = now + length;
        } else if let Some(t) = spec.start {
            resv.start = t.max(now);
            resv.end = resv.start + length;
        }
        if let Some(e) = spec.end {
            resv.end = e;
        } else if let Some(d) = spec.duration_mins {
            resv.end = resv
                .start
                .saturating_add(d.min(i64::MAX as u64 / 120) as i64 * 60);
        }
        if resv.end <= resv.start {
            return Err(SlurmError::InvalidTimeValue);
        }
        if let Some(f) = &spec.flags {
            let words = parse_flags(f)?;
            if words.set & RECURRING != 0 {
                resv.flags &= !RECURRING;
            }
            resv.flags = (resv.flags | words.set) & !words.clear;
            if let Some(p) = words.purge_secs {
                resv.purge_secs = p;
            }
        }
        check_window(&mut resv, self.utc_offset)?;
        if let Some(u) = &spec.users {
            apply_names(&mut resv.users, &mut resv.users_except, u, true);
        }
        if let Some(a) = &spec.accounts {
            apply_names(&mut resv.accounts, &mut resv.accounts_except, a, true);
        }
        if resv.users.is_empty() && resv.accounts.is_empty() {
            return Err(SlurmError::ReservationEmpty);
        }
        if spec.partition.is_some() {
            resv.partition = spec.partition.clone();
        }
        if spec.nodes.is_some() || spec.node_cnt.is_some() {
            resv.flags &= !(SPEC_NODES | ALL_NODES);
            self.resv_nodes(&mut resv, spec.nodes.as_deref(), spec.node_cnt)?;
        }
        self.check_resv_room(&resv, Some(&spec.name))?;
        let old_start = self.resvs.by_name.get(&spec.name).map(|r| r.start);
        if old_start.is_some_and(|s| s != resv.start) {
            // Moved: the old window's record ends now (or never began).
            self.record_resv(&spec.name, Some(now), now);
        }
        let name = spec.name.clone();
        self.resvs.by_name.insert(spec.name, resv);
        self.record_resv(&name, None, now);
        self.touch();
        Ok(())
    }

    /// `scontrol delete ReservationName=...`: refused while jobs run in it.
    pub(crate) fn on_delete_resv(
        &mut self,
        name: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        if !self.is_operator(who) {
            return Err(SlurmError::AccessDenied);
        }
        if !self.resvs.by_name.contains_key(name) {
            return Err(SlurmError::ReservationInvalid);
        }
        let busy = self.jobs.values().any(|j| {
            matches!(
                j.state,
                JobState::Pending | JobState::Running | JobState::Suspended
            ) && j.desc.reservation.as_deref() == Some(name)
        });
        if busy {
            return Err(SlurmError::ReservationBusy);
        }
        // Accounting keeps what was used of it: its window ends now (one
        // that had not begun, none of it).
        self.record_resv(name, Some(now), now);
        self.resvs.by_name.remove(name);
        self.settle_resv_ever();
        self.touch();
        Ok(())
    }

    /// Fills a reservation's nodes from `Nodes=` or `NodeCnt=` (within its
    /// partition, or the default one, else every node).
    fn resv_nodes(
        &self,
        resv: &mut Resv,
        nodes: Option<&str>,
        count: Option<u32>,
    ) -> Result<(), SlurmError> {
        let part_nodes: Vec<NodeIdx> = match &resv.partition {
            Some(p) => {
                let part = self
                    .parts
                    .iter()
                    .find(|x| &x.conf.name == p)
                    .ok_or(SlurmError::InvalidPartitionName)?;
                part.nodes.clone()
            }
            None => (0..self.nodes.len() as u32).map(NodeIdx).collect(),
        };
        match (nodes, count) {
            (Some(list), _) if list.eq_ignore_ascii_case("ALL") => {
                resv.nodes = part_nodes;
                resv.flags |= SPEC_NODES | ALL_NODES;
            }
            (Some(list), _) => {
                let names = hostlist::expand(list).map_err(|_| SlurmError::InvalidNodeName)?;
                let mut idx = self.resolve_nodes(&names)?;
                idx.sort_unstable();
                idx.dedup();
                resv.nodes = idx;
                resv.flags |= SPEC_NODES;
            }
            (None, Some(n)) if n > 0 => {
                // Nodes free of jobs (unless IGNORE_JOBS) and of other
                // reservations in the window: the first ones, or under a
                // topology the ones an exclusive job of `n` nodes would
                // get (one leaf switch or block where one holds them), so
                // the jobs run in it are placed as they would be outside.
                let free: Vec<NodeIdx> = part_nodes
                    .into_iter()
                    .filter(|&i| self.nodes[i.0 as usize].takes_jobs())
                    .filter(|&i| resv.flags & IGNORE_JOBS != 0 || !self.node_busy_in(i, resv))
                    .filter(|&i| {
                        resv.flags & (OVERLAP | MAINT) != 0
                            || !self.resvs.by_name.values().any(|o| {
                                o.name != resv.name
                                    && o.meets(resv.start, resv.end)
                                    && o.nodes.contains(&i)
                            })
                    })
                    .collect();
                if free.len() < n as usize {
                    return Err(SlurmError::NodesBusy);
                }
                // A tree with no one switch over `n` free nodes: the first
                // ones still (jobs in it then use what one switch holds).
                let mut picked = self
                    .topology()
                    .and_then(|t| sched::topology::pick_whole_nodes(t, &free, n))
                    .unwrap_or_else(|| free[..n as usize].to_vec());
                picked.sort_unstable();
                resv.nodes = picked;
            }
            _ => return Err(SlurmError::RequestedNodeConfigUnavailable),
        }
        if resv.nodes.is_empty() {
            return Err(SlurmError::RequestedNodeConfigUnavailable);
        }
        Ok(())
    }

    /// A job runs on node `i` into `resv`'s window, outside it.
    fn node_busy_in(&self, i: NodeIdx, resv: &Resv) -> bool {
        self.nodes[i.0 as usize].jobs.iter().any(|id| {
            self.jobs.get(id).is_some_and(|j| {
                j.desc.reservation.as_deref() != Some(resv.name.as_str())
                    && j.limit_end().is_none_or(|e| e > resv.start)
            })
        })
    }

    /// Refuses a reservation whose nodes are busy in its window (without
    /// IGNORE_JOBS) or held by another one (without OVERLAP or MAINT on
    /// either).
    fn check_resv_room(&self, resv: &Resv, replacing: Option<&str>) -> Result<(), SlurmError> {
        if resv.flags & IGNORE_JOBS == 0 && resv.nodes.iter().any(|&i| self.node_busy_in(i, resv)) {
            return Err(SlurmError::NodesBusy);
        }
        let clash = self.resvs.by_name.values().any(|o| {
            Some(o.name.as_str()) != replacing
                && resv.flags & (OVERLAP | MAINT) == 0
                && o.meets(resv.start, resv.end)
                && o.nodes.iter().any(|n| resv.nodes.contains(n))
        });
        if clash {
            return Err(SlurmError::ReservationOverlap);
        }
        Ok(())
    }

    /// The submission check of `--reservation`: it must exist and let the
    /// job's user and account in.
    pub(crate) fn check_job_resv(
        &self,
        desc: &proto::JobDesc,
        user: &str,
    ) -> Result<(), SlurmError> {
        let Some(name) = &desc.reservation else {
            return Ok(());
        };
        let resv = self
            .resvs
            .by_name
            .get(name)
            .ok_or(SlurmError::ReservationInvalid)?;
        if !resv.admits(user, desc.account.as_deref()) {
            return Err(SlurmError::ReservationAccess);
        }
        Ok(())
    }

    /// Narrows a job's request to what the reservations leave it in a
    /// pass: a job in one gets its nodes only, and loses the nodes of every
    /// other reservation whose window its run (now to now plus its limit)
    /// would meet. A job in none is kept off reserved nodes by the pass's
    /// windows (`resv_blocks`), which also plan it after them.
    pub(crate) fn resv_restrict(&self, job: &Job, req: &mut sched::JobRequest) {
        if !self.resvs.ever {
            return;
        }
        let Some(name) = job.desc.reservation.as_deref() else {
            // Drawn into MAGNETIC ones, it is decided before the windows are
            // laid: the others its run would meet are taken out here.
            if self.drawn_in(job, self.resv_now) {
                for r in self.resvs_meeting(job, self.resv_now) {
                    if !self.draws(r, job, self.resv_now) {
                        req.excluded_nodes.extend(r.nodes.iter().copied());
                    }
                }
                req.excluded_nodes.sort_unstable();
                req.excluded_nodes.dedup();
            }
            return;
        };
        let resv = self.resvs.by_name.get(name);
        if resv.is_some_and(|r| !r.confines()) {
            // FLEX, ANY_NODES: its nodes and any others.
            self.resv_exclude_others(job, req);
            return;
        }
        let keep: &[NodeIdx] = resv.map_or(&[], |r| r.nodes.as_slice());
        req.excluded_nodes.extend(
            (0..self.nodes.len() as u32)
                .map(NodeIdx)
                .filter(|i| !keep.contains(i)),
        );
        self.resv_exclude_others(job, req);
    }

    /// Takes out of a request the nodes of every reservation but the job's
    /// own whose window its run from now would meet (where no pass lays
    /// the windows: preemption, `--test-only`).
    pub(crate) fn resv_exclude_others(&self, job: &Job, req: &mut sched::JobRequest) {
        if !self.resvs.ever {
            return;
        }
        let own = job.desc.reservation.as_deref();
        for r in self.resvs_meeting(job, self.resv_now) {
            if Some(r.name.as_str()) != own {
                req.excluded_nodes.extend(r.nodes.iter().copied());
            }
        }
        req.excluded_nodes.sort_unstable();
        req.excluded_nodes.dedup();
    }

    /// Whether `r` is MAGNETIC, active at `now`, and admits `job` (which
    /// names no reservation).
    fn draws(&self, r: &Resv, job: &Job, now: Timestamp) -> bool {
        r.flags & MAGNETIC != 0
            && r.active(now)
            && job.desc.reservation.is_none()
            && r.admits(&job.desc.user, job.desc.account.as_deref())
    }

    /// Whether some MAGNETIC reservation draws `job` in at `now`.
    fn drawn_in(&self, job: &Job, now: Timestamp) -> bool {
        job.desc.reservation.is_none()
            && self.resvs.by_name.values().any(|r| self.draws(r, job, now))
    }

    /// The reservations other than the job's own whose window its run
    /// from `now` for its limit would meet, on nodes of its partitions.
    fn resvs_meeting<'a>(&'a self, job: &'a Job, now: Timestamp) -> impl Iterator<Item = &'a Resv> {
        let until = limit_secs(job.time_limit).map_or(Timestamp::MAX, |s| now.saturating_add(s));
        let own = job.desc.reservation.as_deref();
        self.resvs.by_name.values().filter(move |r| {
            Some(r.name.as_str()) != own
                && r.meets(now, until)
                && job
                    .partitions
                    .iter()
                    .any(|&p| self.parts[p].nodes.iter().any(|n| r.nodes.contains(n)))
        })
    }

    /// The windows a pass lays on its timeline (`sched::Blocks`): every
    /// reservation not over, with the pending jobs that name one decided
    /// before them.
    pub(crate) fn resv_blocks(&self, now: Timestamp) -> sched::Blocks {
        if !self.resvs.ever || self.resvs.is_empty() {
            return sched::Blocks::default();
        }
        let windows = self
            .resvs
            .by_name
            .values()
            .filter(|r| r.end > now)
            .map(|r| sched::Block {
                nodes: r.nodes.clone(),
                from: r.start,
                until: r.end,
            })
            .collect();
        // MAGNETIC: the jobs an active one admits are its own too.
        let magnetic = self
            .resvs
            .by_name
            .values()
            .any(|r| r.flags & MAGNETIC != 0 && r.active(now));
        let first = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Pending)
            .filter(|j| j.desc.reservation.is_some() || (magnetic && self.drawn_in(j, now)))
            .map(|j| j.id)
            .collect();
        sched::Blocks { windows, first }
    }

    /// Pending jobs whose reservation has not begun (or is gone) wait with
    /// reason `Reservation`.
    pub(crate) fn resv_blocked(&self, blocked: &mut BTreeMap<model::JobId, PendingReason>) {
        if !self.resvs.ever {
            return;
        }
        let now = self.resv_now;
        for j in self.jobs.values() {
            if j.state != JobState::Pending {
                continue;
            }
            let Some(name) = &j.desc.reservation else {
                continue;
            };
            let waits = self
                .resvs
                .by_name
                .get(name)
                .is_none_or(|r| !r.active(now) && r.flags & FLEX == 0);
            if waits {
                blocked.entry(j.id).or_insert(PendingReason::Reservation);
            }
        }
    }

    /// The reason a job the pass left waiting gives, where reservations
    /// are why: a MAINT reservation whose window its run would meet reads
    /// `ReqNodeNotAvail, Reserved for maintenance` (Slurm's
    /// ESLURM_RESERVATION_MAINT); another reservation leaves the job
    /// waiting for `Resources` as busy nodes would (Slurm's
    /// ESLURM_NODES_BUSY), or, where no node of its partitions is left,
    /// `ReqNodeNotAvail`.
    pub(crate) fn resv_reason(&self, job: &Job, reason: PendingReason) -> PendingReason {
        if self.resvs.is_empty()
            || !matches!(
                reason,
                PendingReason::Resources
                    | PendingReason::Priority
                    | PendingReason::ReqNodeNotAvail
                    | PendingReason::NodesDown
                    | PendingReason::PartitionConfig
            )
        {
            return reason;
        }
        let mut any = false;
        for r in self.resvs_meeting(job, self.resv_now) {
            if r.flags & MAINT != 0 && reason != PendingReason::Priority {
                return PendingReason::ReservedForMaint;
            }
            any = true;
        }
        match reason {
            PendingReason::PartitionConfig if any => PendingReason::ReqNodeNotAvail,
            _ => reason,
        }
    }

    /// The reservations that keep `job` off nodes now, by name, for
    /// `muster explain`.
    pub fn resvs_in_way(&self, job: &Job, now: Timestamp) -> Vec<String> {
        self.resvs_meeting(job, now)
            .map(|r| r.name.clone())
            .collect()
    }

    /// When the next reservation starts or ends (a pass is due then).
    pub(crate) fn resv_wake(&self) -> Option<Timestamp> {
        let now = self.resv_now;
        self.resvs
            .by_name
            .values()
            .flat_map(|r| {
                let purge = (r.flags & PURGE_COMP != 0)
                    .then(|| r.last_job.max(r.start).saturating_add(r.purge_secs));
                [Some(r.start), Some(r.end), purge]
            })
            .flatten()
            .filter(|&t| t > now)
            .min()
    }

    /// At every input: notes `now`; moves the recurring reservations that
    /// ended to their next window and purges the others that ended, and
    /// those PURGE_COMP ones idle long enough; replaces the nodes REPLACE
    /// and REPLACE_DOWN ones lost; marks the state changed where one began,
    /// ended or changed.
    pub(crate) fn resv_tick(&mut self, now: Timestamp) {
        let before = self.resv_now;
        self.resv_now = now;
        if self.resvs.is_empty() {
            return;
        }
        let mut changed = self
            .resvs
            .by_name
            .values()
            .any(|r| (before < r.start && r.start <= now) || r.end <= now);
        let ended: Vec<String> = self
            .resvs
            .by_name
            .values()
            .filter(|r| r.end <= now)
            .map(|r| r.name.clone())
            .collect();
        // Each window that ended is recorded whole; a recurring one's next
        // window is recorded as it is made.
        for name in &ended {
            self.record_resv(name, None, now);
        }
        let offset = self.utc_offset;
        for r in self.resvs.by_name.values_mut() {
            r.recur(now, offset);
        }
        for name in &ended {
            if self.resvs.by_name.get(name).is_some_and(|r| r.end > now) {
                self.record_resv(name, None, now);
            }
        }
        self.resvs.by_name.retain(|_, r| r.end > now);
        changed |= self.resv_purge_idle(now);
        changed |= self.resv_replace(now);
        if changed {
            self.settle_resv_ever();
            self.touch();
        }
    }

    /// PURGE_COMP: notes when an active one last had a job, and deletes
    /// those without one for their time. True where one went.
    fn resv_purge_idle(&mut self, now: Timestamp) -> bool {
        let purging: Vec<String> = self
            .resvs
            .by_name
            .values()
            .filter(|r| r.flags & PURGE_COMP != 0 && r.active(now))
            .map(|r| r.name.clone())
            .collect();
        let mut gone = false;
        for name in purging {
            let mut busy = false;
            let mut ended = None;
            for j in self.jobs.values() {
                if j.desc.reservation.as_deref() == Some(name.as_str()) {
                    busy |= !j.state.is_finished();
                    ended = ended.max(j.end_time);
                }
            }
            let Some(r) = self.resvs.by_name.get_mut(&name) else {
                continue;
            };
            if busy {
                r.last_job = now;
            } else if let Some(t) = ended.filter(|t| *t > r.last_job) {
                // Idle since its last job ended.
                r.last_job = t;
            }
            if !busy && now >= r.last_job.max(r.start).saturating_add(r.purge_secs) {
                self.record_resv(&name, Some(now), now);
                self.resvs.by_name.remove(&name);
                gone = true;
            }
        }
        gone
    }

    /// REPLACE / REPLACE_DOWN: each node of the reservation that is down
    /// or drained (REPLACE: or runs a job) gives its place to an idle node
    /// of the same partition (or of any, without one) held by no other
    /// reservation in the window. True where one was replaced.
    fn resv_replace(&mut self, now: Timestamp) -> bool {
        let names: Vec<String> = self
            .resvs
            .by_name
            .values()
            .filter(|r| r.flags & (REPLACE | REPLACE_DOWN) != 0 && r.end > now)
            .map(|r| r.name.clone())
            .collect();
        let mut any = false;
        for name in names {
            let Some(r) = self.resvs.by_name.get(&name) else {
                continue;
            };
            let also_busy = r.flags & REPLACE != 0;
            let lost = |i: NodeIdx| {
                let n = &self.nodes[i.0 as usize];
                !n.takes_jobs() || (also_busy && !n.jobs.is_empty())
            };
            let gone: Vec<NodeIdx> = r.nodes.iter().copied().filter(|&i| lost(i)).collect();
            if gone.is_empty() {
                continue;
            }
            let pool: Vec<NodeIdx> = match r
                .partition
                .as_ref()
                .and_then(|p| self.parts.iter().find(|x| &x.conf.name == p))
            {
                Some(part) => part.nodes.clone(),
                None => (0..self.nodes.len() as u32).map(NodeIdx).collect(),
            };
            let spare: Vec<NodeIdx> =
                pool.into_iter()
                    .filter(|i| !r.nodes.contains(i))
                    .filter(|&i| self.nodes[i.0 as usize].takes_jobs())
                    .filter(|&i| self.nodes[i.0 as usize].jobs.is_empty())
                    .filter(|&i| {
                        !self.resvs.by_name.values().any(|o| {
                            o.name != name && o.meets(r.start, r.end) && o.nodes.contains(&i)
                        })
                    })
                    .take(gone.len())
                    .collect();
            if spare.is_empty() {
                continue;
            }
            let r = self.resvs.by_name.get_mut(&name).expect("looked up above");
            for (old, new) in gone.into_iter().zip(spare) {
                if let Some(slot) = r.nodes.iter_mut().find(|n| **n == old) {
                    *slot = new;
                }
            }
            r.nodes.sort_unstable();
            any = true;
        }
        any
    }

    /// Once no reservation is left and no job names one, passes take
    /// their shortcuts again.
    fn settle_resv_ever(&mut self) {
        if self.resvs.by_name.is_empty()
            && !self
                .jobs
                .values()
                .any(|j| j.desc.reservation.is_some() && !j.state.is_finished())
        {
            self.resvs.ever = false;
        }
    }

    /// `scontrol show reservation`: every reservation, by start then name.
    pub(crate) fn resv_infos(&self, now: Timestamp) -> Vec<ResvInfo> {
        let mut list: Vec<&Resv> = self
            .resvs
            .by_name
            .values()
            .filter(|r| r.end > now)
            .collect();
        list.sort_by(|a, b| (a.start, &a.name).cmp(&(b.start, &b.name)));
        list.into_iter()
            .map(|r| {
                let names: Vec<String> = r
                    .nodes
                    .iter()
                    .map(|i| self.nodes[i.0 as usize].conf.name.clone())
                    .collect();
                let conf = |i: &NodeIdx| &self.nodes[i.0 as usize].conf;
                let cpus: u32 = r.nodes.iter().map(|i| conf(i).cpus).sum();
                let cores: u32 = r
                    .nodes
                    .iter()
                    .map(|i| {
                        let c = conf(i);
                        let cores = c.boards.max(1) * c.sockets.max(1) * c.cores_per_socket.max(1);
                        // A node given only CPUs= counts them as cores.
                        if cores * c.threads_per_core.max(1) == c.cpus {
                            cores
                        } else {
                            c.cpus
                        }
                    })
                    .sum();
                let shown = |list: &[String], except: bool| {
                    let text = list.join(",");
                    if except {
                        format!("-{text}")
                    } else {
                        text
                    }
                };
                ResvInfo {
                    name: r.name.clone(),
                    start: r.start,
                    end: r.end,
                    nodes: hostlist::compress(&names),
                    node_cnt: r.nodes.len() as u32,
                    core_cnt: cores,
                    cpu_cnt: cpus,
                    partition: r.partition.clone(),
                    flags: r.flags_text(),
                    users: shown(&r.users, r.users_except),
                    accounts: shown(&r.accounts, r.accounts_except),
                    active: r.active(now),
                }
            })
            .collect()
    }

    /// The reservation a node is in now, with whether it is MAINT
    /// (sinfo's `resv` and `maint` states).
    pub fn node_resv(&self, node: NodeIdx, now: Timestamp) -> Option<(&str, bool)> {
        self.resvs
            .by_name
            .values()
            .filter(|r| r.active(now) && r.nodes.contains(&node))
            .map(|r| (r.name.as_str(), r.flags & MAINT != 0))
            .max_by_key(|(_, m)| *m)
    }
}

impl Engine {
    /// Queues the accounting record of reservation `name`'s window as of
    /// `now`, ending at `end` (its own end where `None`; a window cut
    /// before it began records none of it). UnusedWall is Slurm's: the
    /// window so far less its jobs' run time there, each weighed by its
    /// share of the reservation's CPUs.
    fn record_resv(&mut self, name: &str, end: Option<Timestamp>, now: Timestamp) {
        if self.simulated {
            return;
        }
        let Some(r) = self.resvs.by_name.get(name) else {
            return;
        };
        let end = end.map_or(r.end, |e| e.clamp(r.start, r.end));
        let to = end.min(now).max(r.start);
        let cpus: u32 = r
            .nodes
            .iter()
            .map(|i| self.nodes[i.0 as usize].conf.cpus)
            .sum();
        let mut used: u64 = 0;
        for j in self.jobs.values() {
            if j.desc.reservation.as_deref() != Some(name) {
                continue;
            }
            let Some(s) = j.start_time else {
                continue;
            };
            let e = j.end_time.unwrap_or(now).min(to);
            let secs = (e - s.max(r.start)).max(0) as u64;
            let job_cpus: u64 = j.ran_cpus.iter().map(|&c| u64::from(c)).sum();
            used = used.saturating_add(secs.saturating_mul(job_cpus));
        }
        let wall = (to - r.start) as f64;
        let unused = (wall - used as f64 / f64::from(cpus.max(1))).max(0.0);
        let names: Vec<String> = r
            .nodes
            .iter()
            .map(|i| self.nodes[i.0 as usize].conf.name.clone())
            .collect();
        let rec = proto::resv::AcctResv {
            cluster: self.settings.cluster_name.clone(),
            name: name.to_string(),
            start: r.start,
            end,
            nodes: hostlist::compress(&names),
            tres: format!("cpu={cpus}"),
            flags: r.flags_text(),
            cpus,
            used_cpu_secs: used,
            unused_wall: unused,
        };
        self.outbox.push(crate::Command::AcctResv(Box::new(rec)));
    }

    /// The reservations as a snapshot keeps them.
    pub(crate) fn saved_resvs(&self) -> Vec<crate::persist::resv_v1::Resv> {
        self.resvs
            .by_name
            .values()
            .map(|r| crate::persist::resv_v1::Resv {
                name: r.name.clone(),
                start: r.start,
                end: r.end,
                nodes: r
                    .nodes
                    .iter()
                    .map(|i| self.nodes[i.0 as usize].conf.name.clone())
                    .collect(),
                partition: r.partition.clone(),
                flags: r.flags,
                users: r.users.clone(),
                users_except: r.users_except,
                accounts: r.accounts.clone(),
                accounts_except: r.accounts_except,
                purge_secs: r.purge_secs,
                last_job: r.last_job,
            })
            .collect()
    }

    /// Takes a snapshot's reservations back (nodes gone from slurm.conf
    /// are left out of them).
    pub(crate) fn restore_resvs(
        &mut self,
        saved: Vec<crate::persist::resv_v1::Resv>,
        next_id: u32,
    ) {
        self.resvs.next_id = next_id;
        for r in saved {
            let nodes = r.nodes.iter().filter_map(|n| self.node_idx(n)).collect();
            self.resvs.by_name.insert(
                r.name.clone(),
                Resv {
                    name: r.name,
                    start: r.start,
                    end: r.end,
                    nodes,
                    partition: r.partition,
                    flags: r.flags,
                    users: r.users,
                    users_except: r.users_except,
                    accounts: r.accounts,
                    accounts_except: r.accounts_except,
                    purge_secs: r.purge_secs,
                    last_job: r.last_job,
                },
            );
        }
        self.resvs.ever = !self.resvs.by_name.is_empty();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resv(users: &[&str], except: bool, accounts: &[&str]) -> Resv {
        Resv {
            name: "r".into(),
            start: 100,
            end: 200,
            nodes: vec![NodeIdx(0)],
            partition: None,
            flags: 0,
            users: users.iter().map(|s| s.to_string()).collect(),
            users_except: except,
            accounts: accounts.iter().map(|s| s.to_string()).collect(),
            accounts_except: false,
            purge_secs: 0,
            last_job: 100,
        }
    }

    #[test]
    fn admits_users_and_accounts() {
        assert!(resv(&["alice"], false, &[]).admits("alice", None));
        assert!(!resv(&["alice"], false, &[]).admits("bob", None));
        assert!(resv(&["alice"], true, &[]).admits("bob", None));
        assert!(!resv(&["alice"], true, &[]).admits("alice", None));
        assert!(resv(&[], false, &["phys"]).admits("bob", Some("phys")));
        assert!(!resv(&[], false, &["phys"]).admits("bob", Some("chem")));
        assert!(!resv(&["bob"], false, &["phys"]).admits("bob", Some("chem")));
    }

    #[test]
    fn windows_meet() {
        let r = resv(&["a"], false, &[]);
        assert!(r.meets(50, 101));
        assert!(!r.meets(50, 100));
        assert!(!r.meets(200, 300));
        assert!(r.active(100) && !r.active(200));
    }

    #[test]
    fn flags_parse_and_print() {
        let words = |set, clear, purge_secs| {
            Ok(FlagWords {
                set,
                clear,
                purge_secs,
            })
        };
        assert_eq!(
            parse_flags("maint,IGNORE_JOBS"),
            words(MAINT | IGNORE_JOBS, 0, None)
        );
        assert_eq!(parse_flags("-MAINT"), words(0, MAINT, None));
        assert_eq!(parse_flags("DAILY,FLEX"), words(DAILY | FLEX, 0, None));
        assert_eq!(parse_flags("PURGE_COMP"), words(PURGE_COMP, 0, Some(300)));
        assert_eq!(
            parse_flags("PURGE_COMP=1-2:03:04"),
            words(PURGE_COMP, 0, Some(86_400 + 7384))
        );
        assert_eq!(
            parse_flags("purge_comp=10"),
            words(PURGE_COMP, 0, Some(600))
        );
        assert!(parse_flags("PURGE_COMP=x").is_err());
        assert!(parse_flags("DAILY,WEEKLY").is_err());
        assert!(parse_flags("MAINT=3").is_err());
        assert!(parse_flags("SPEC_NODES").is_err());
        assert!(parse_flags("NO_SUCH").is_err());
        let mut r = resv(&["a"], false, &[]);
        r.flags = MAINT | SPEC_NODES | IGNORE_JOBS;
        assert_eq!(r.flags_text(), "MAINT,IGNORE_JOBS,SPEC_NODES");
        r.flags = PURGE_COMP | MAGNETIC | WEEKDAY | FLEX;
        r.purge_secs = 300;
        assert_eq!(r.flags_text(), "FLEX,WEEKDAY,PURGE_COMP=00:05:00,MAGNETIC");
    }

    #[test]
    fn recurring_windows_move_on() {
        // 1970-01-05 was a Monday; a window 10:00-11:00 on it.
        let monday = 4 * DAY + 10 * 3600;
        let mut r = resv(&["a"], false, &[]);
        (r.start, r.end) = (monday, monday + 3600);
        r.flags = DAILY;
        assert!(r.recur(monday + 10, 0));
        assert_eq!(r.start, monday, "not over yet");
        assert!(r.recur(monday + 3600, 0));
        assert_eq!((r.start, r.end), (monday + DAY, monday + DAY + 3600));
        // Days later: the next one after now.
        assert!(r.recur(monday + 3 * DAY + 3600 + 5, 0));
        assert_eq!(r.start, monday + 4 * DAY);
        // WEEKDAY: Friday's comes back on Monday.
        r.flags = WEEKDAY;
        (r.start, r.end) = (monday + 4 * DAY, monday + 4 * DAY + 3600);
        r.recur(monday + 4 * DAY + 3600, 0);
        assert_eq!(r.start, monday + 7 * DAY);
        // WEEKEND: Saturday's comes back on Sunday, Sunday's on Saturday.
        r.flags = WEEKEND;
        (r.start, r.end) = (monday + 5 * DAY, monday + 5 * DAY + 3600);
        r.recur(monday + 5 * DAY + 3600, 0);
        assert_eq!(r.start, monday + 6 * DAY);
        r.recur(monday + 6 * DAY + 3600, 0);
        assert_eq!(r.start, monday + 12 * DAY);
        r.flags = WEEKLY;
        r.recur(monday + 12 * DAY + 3600, 0);
        assert_eq!(r.start, monday + 19 * DAY);
        r.flags = 0;
        assert!(!r.recur(monday + 30 * DAY, 0));
    }

    #[test]
    fn names_lists() {
        let (mut l, mut e) = (Vec::new(), false);
        apply_names(&mut l, &mut e, "a,b", false);
        assert_eq!(
            (l.clone(), e),
            (vec!["a".to_string(), "b".to_string()], false)
        );
        apply_names(&mut l, &mut e, "+c", true);
        assert_eq!(l.len(), 3);
        apply_names(&mut l, &mut e, "-a", true);
        assert_eq!(l, vec!["b".to_string(), "c".to_string()]);
        apply_names(&mut l, &mut e, "-x", false);
        assert_eq!((l, e), (vec!["x".to_string()], true));
    }
}
