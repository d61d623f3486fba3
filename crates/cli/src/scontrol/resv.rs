//! `scontrol create|update|delete reservation` and `scontrol show
//! reservation`, as Slurm 22.05's scontrol does them.
//!
//! ```text
//! words -> parse_resv (ResvSpec) -> Create/Update/DeleteReservation -> "Reservation created: X"
//! ListReservations -> render_resv (one record per reservation)
//! ```

use super::{fail, finish_record, CmdResult, Failure, Session, ShowOpts};
use crate::common::fmt_time;
use crate::timespec::parse_start_time;
use model::units::{format_duration_hms, parse_time_limit};
use model::{TimeLimit, Timestamp};
use proto::resv::{ResvInfo, ResvSpec};
use proto::{CtldRequest, CtldResponse};

/// Whether `words` (after `create`, `update` or `delete`) name a
/// reservation: a word `Reservation`/`Res...` or a `ReservationName=` key.
pub(super) fn names_reservation(words: &[String]) -> bool {
    words.iter().any(|w| {
        let key = w.split('=').next().unwrap_or("").to_ascii_lowercase();
        key.len() >= 3 && "reservationname".starts_with(&key)
    })
}

/// The reservation flags muster carries out. Slurm's others (`HOURLY`
/// aside: STATIC_ALLOC, PART_NODES, FIRST_CORES, TIME_FLOAT, NO_HOLD_JOBS_
/// AFTER_END, REPLACE with cores, the `NO_*` forms) are refused.
const SUPPORTED_FLAGS: &[&str] = &[
    "MAINT",
    "OVERLAP",
    "IGNORE_JOBS",
    "FLEX",
    "HOURLY",
    "DAILY",
    "WEEKDAY",
    "WEEKEND",
    "WEEKLY",
    "MAGNETIC",
    "ANY_NODES",
    "REPLACE",
    "REPLACE_DOWN",
    "PURGE_COMP",
];

/// Parses the words of `scontrol create|update reservation` into a spec;
/// on refusal the complete stderr text.
pub fn parse_resv(words: &[String], now: Timestamp, update: bool) -> Result<ResvSpec, String> {
    let mut s = ResvSpec::default();
    for w in words {
        let (key, value) = match w.split_once('=') {
            Some((k, v)) => (k.to_ascii_lowercase(), v.trim_matches('"').to_string()),
            None => (w.to_ascii_lowercase(), String::new()),
        };
        let bad = || format!("Invalid value for {key}: {value}\n");
        match key.as_str() {
            // The entity word itself (`create reservation ...`).
            k if value.is_empty() && k.len() >= 3 && "reservation".starts_with(k) => {}
            k if k.len() >= 3 && "reservationname".starts_with(k) => s.name = value,
            "starttime" => {
                if value.eq_ignore_ascii_case("now") {
                    s.start_now = true;
                } else {
                    s.start = Some(parse_start_time(&value, now).ok_or_else(bad)?);
                }
            }
            "endtime" => s.end = Some(parse_start_time(&value, now).ok_or_else(bad)?),
            "duration" => match parse_time_limit(&value) {
                Ok(TimeLimit::Minutes(m)) => s.duration_mins = Some(u64::from(m)),
                Ok(TimeLimit::Unlimited) => s.duration_mins = Some(u64::from(u32::MAX)),
                Err(_) => return Err(bad()),
            },
            "nodes" | "nodelist" => s.nodes = Some(value),
            "nodecnt" | "nodecount" => {
                s.node_cnt = Some(value.parse().map_err(|_| bad())?);
            }
            "partitionname" | "partition" => s.partition = Some(value),
            "users" | "user" => s.users = Some(value),
            "accounts" | "account" => s.accounts = Some(value),
            "flags" | "flag" => {
                // The flags muster carries out; the others are refused, not
                // ignored (they change where and when jobs run).
                for f in value.split(',').filter(|f| !f.is_empty()) {
                    let bare = f.trim_start_matches(['+', '-']).to_ascii_uppercase();
                    let word = bare.split('=').next().unwrap_or_default();
                    if !SUPPORTED_FLAGS.contains(&word) {
                        return Err(format!(
                            "Flags={bare} is not supported by muster (supported: {})\n",
                            SUPPORTED_FLAGS.join(", ")
                        ));
                    }
                }
                s.flags = Some(value);
            }
            _ => return Err(format!("Unknown parameter {w}.  Request aborted\n")),
        }
    }
    if update {
        if s.name.is_empty() {
            return Err("ReservationName must be given.  Request aborted\n".into());
        }
        return Ok(s);
    }
    if s.start.is_none() && !s.start_now {
        return Err("A start time must be given.  No reservation created.\n".into());
    }
    if s.end.is_none() && s.duration_mins.is_none() {
        return Err("An end time or duration must be given.  No reservation created.\n".into());
    }
    if s.nodes.is_none() && s.node_cnt.is_none() {
        return Err(
            "Nodes, NodeCnt, CoreCnt, TRES or Licenses must be specified.  No reservation created.\n"
                .into(),
        );
    }
    if s.users.is_none() && s.accounts.is_none() {
        return Err(
            "Either Users/Groups and/or Accounts must be specified.  No reservation created.\n"
                .into(),
        );
    }
    Ok(s)
}

/// `scontrol create reservation ...`.
pub(super) fn cmd_create(s: &mut Session, rest: &[String]) -> CmdResult {
    let spec = parse_resv(rest, crate::common::now(), false).map_err(Failure::stderr)?;
    let client = s.client("Error creating the reservation")?;
    match client.call(CtldRequest::CreateReservation(spec)) {
        Ok(CtldResponse::ReservationCreated(name)) => Ok(format!("Reservation created: {name}\n")),
        Ok(_) => Err(fail(
            "Error creating the reservation: Unexpected message received",
        )),
        Err(e) => Err(fail(format!("Error creating the reservation: {e}"))),
    }
}

/// `scontrol update ReservationName=X ...`.
pub(super) fn cmd_update(s: &mut Session, rest: &[String]) -> CmdResult {
    let spec = parse_resv(rest, crate::common::now(), true).map_err(Failure::stderr)?;
    let client = s.client("Error updating the reservation")?;
    client
        .call_ok(CtldRequest::UpdateReservation(spec))
        .map_err(|e| fail(format!("Error updating the reservation: {e}")))?;
    Ok("Reservation updated.\n".to_string())
}

/// `scontrol delete ReservationName=X`: prints nothing when done.
pub(super) fn cmd_delete(s: &mut Session, rest: &[String]) -> CmdResult {
    let name = rest
        .iter()
        .filter_map(|w| w.split_once('='))
        .find(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k.len() >= 3 && "reservationname".starts_with(&k)
        })
        .map(|(_, v)| v.to_string())
        .ok_or_else(|| fail("too few arguments for keyword:delete"))?;
    let client = s.client("Error deleting the reservation")?;
    client
        .call_ok(CtldRequest::DeleteReservation { name })
        .map_err(|e| fail(format!("Error deleting the reservation: {e}")))?;
    Ok(String::new())
}

/// `scontrol show reservation [NAME]`.
pub(super) fn show(s: &mut Session, arg: Option<&str>) -> CmdResult {
    let opts = s.opts;
    let list = match s
        .client("slurm_load_reservations error")?
        .call(CtldRequest::ListReservations)
    {
        Ok(CtldResponse::Reservations(l)) => l,
        Ok(_) => {
            return Err(fail(
                "slurm_load_reservations error: Unexpected message received",
            ))
        }
        Err(e) => return Err(fail(format!("slurm_load_reservations error: {e}"))),
    };
    match arg {
        None if list.is_empty() => Ok("No reservations in the system\n".to_string()),
        None => Ok(list.iter().map(|r| render_resv(r, opts)).collect()),
        Some(name) => match list.iter().find(|r| r.name == name) {
            Some(r) => Ok(render_resv(r, opts)),
            None => Err(fail(format!("Reservation {name} not found"))),
        },
    }
}

fn null(s: &str) -> &str {
    if s.is_empty() {
        "(null)"
    } else {
        s
    }
}

/// One reservation as Slurm 22.05's `scontrol show reservation` prints it
/// (`slurm_sprint_reservation_info`).
pub fn render_resv(r: &ResvInfo, opts: ShowOpts) -> String {
    let secs = (r.end - r.start).max(0) as u64;
    let lines = vec![
        format!(
            "ReservationName={} StartTime={} EndTime={} Duration={}",
            r.name,
            fmt_time(r.start),
            fmt_time(r.end),
            format_duration_hms(secs)
        ),
        format!(
            "Nodes={} NodeCnt={} CoreCnt={} Features=(null) PartitionName={} Flags={}",
            null(&r.nodes),
            r.node_cnt,
            r.core_cnt,
            r.partition.as_deref().unwrap_or("(null)"),
            null(&r.flags)
        ),
        format!("TRES=cpu={}", r.cpu_cnt),
        format!(
            "Users={} Groups=(null) Accounts={} Licenses=(null) State={} BurstBuffer=(null) Watts=n/a",
            null(&r.users),
            null(&r.accounts),
            if r.active { "ACTIVE" } else { "INACTIVE" }
        ),
        "MaxStartDelay=(null)".to_string(),
    ];
    finish_record(&lines, opts)
}
