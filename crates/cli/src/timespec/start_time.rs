//! `scontrol update job StartTime=` values, as `scontrol(1)` takes them:
//! `now`, `now+count[seconds|minutes|hours|days|weeks]`,
//! `YYYY-MM-DD[THH:MM[:SS]]` and `HH:MM[:SS]` (today), in local time.
//!
//! Fewer forms than sbatch's `--begin`: no `now-`, no blank before the unit,
//! no named times and no short dates.

use chrono::{Local, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use model::Timestamp;

use super::unit_seconds;

/// Parses a `StartTime=` value into a timestamp; `None` when it is not one
/// of the forms above.
pub(crate) fn parse_start_time(value: &str, now: Timestamp) -> Option<Timestamp> {
    let lower = value.to_ascii_lowercase();
    if lower == "now" {
        return Some(now);
    }
    if let Some(offset) = lower.strip_prefix("now+") {
        let n_digits = offset.chars().take_while(char::is_ascii_digit).count();
        let n: i64 = offset[..n_digits].parse().ok()?;
        let scale = unit_seconds(&offset[n_digits..])?;
        return Some(now + n * scale);
    }
    let local = |dt: NaiveDateTime| {
        Local
            .from_local_datetime(&dt)
            .earliest()
            .map(|t| t.timestamp())
    };
    for fmt in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(value, fmt) {
            return local(dt);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        return local(d.and_hms_opt(0, 0, 0)?);
    }
    for fmt in ["%H:%M:%S", "%H:%M"] {
        if let Ok(t) = NaiveTime::parse_from_str(value, fmt) {
            let today = Local.timestamp_opt(now, 0).earliest()?.date_naive();
            return local(today.and_time(t));
        }
    }
    None
}
