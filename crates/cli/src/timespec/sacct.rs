//! `-S/--starttime` and `-E/--endtime` values, as `sacct(1)` lists them:
//! `HH:MM[:SS][AM|PM]`, `MMDD[YY][-HH:MM[:SS]]`, `MM.DD[.YY][-HH:MM[:SS]]`,
//! `MM/DD[/YY][-HH:MM[:SS]]`, `YYYY-MM-DD[THH:MM[:SS]]`, `today`,
//! `midnight`, `noon`, `elevenses`, `fika`, `teatime`, `tomorrow` and
//! `now[{+|-}count[seconds|minutes|hours|days|weeks]]`.
//!
//! Unlike sbatch's `--begin`, these times look back: a time of day is today's
//! (even when it has passed) and a date without a year is this year's.
//! Everything is computed from `now` in the given time zone, never the clock.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use model::Timestamp;

use super::{named_time, parse_clock, parse_iso_date, parse_offset, parse_short_date, two_digits};

/// Parses a `-S`/`-E` value into a timestamp; `None` when it is not one of
/// sacct's forms.
pub fn parse_time<Tz: TimeZone>(spec: &str, now: Timestamp, tz: &Tz) -> Option<Timestamp> {
    let text = spec.trim().to_ascii_lowercase();
    if text.is_empty() {
        return None;
    }
    if let Some(rest) = text.strip_prefix("now") {
        return now.checked_add(parse_offset(rest)?);
    }
    let now_local = tz.timestamp_opt(now, 0).earliest()?.naive_local();
    let today = now_local.date();
    let at = match text.as_str() {
        "today" => NaiveDateTime::new(today, NaiveTime::MIN),
        "tomorrow" => NaiveDateTime::new(today.succ_opt()?, NaiveTime::MIN),
        word => match named_time(word) {
            Some(time) => NaiveDateTime::new(today, time),
            None => parse_date_time(&text, today)?,
        },
    };
    Some(tz.from_local_datetime(&at).earliest()?.timestamp())
}

fn parse_date_time(text: &str, today: NaiveDate) -> Option<NaiveDateTime> {
    // YYYY-MM-DD[THH:MM[:SS]]
    if text.len() >= 10 && text.as_bytes()[4] == b'-' && text.as_bytes()[7] == b'-' {
        let (date, time) = match text.split_once('t') {
            Some((d, t)) => (d, Some(t)),
            None => (text, None),
        };
        let date = parse_iso_date(date, two_digits)?;
        let time = match time {
            Some(t) => parse_clock(t)?,
            None => NaiveTime::MIN,
        };
        return Some(NaiveDateTime::new(date, time));
    }
    // A bare time of day: today's.
    if text.contains(':') && !text.contains('-') {
        return Some(NaiveDateTime::new(today, parse_clock(text)?));
    }
    // A date in one of the short forms, then an optional `-HH:MM[:SS]`.
    let (date, time) = match text.split_once('-') {
        Some((d, t)) => (d, parse_clock(t)?),
        None => (text, NaiveTime::MIN),
    };
    let (date, _) = parse_short_date(date, today.year(), true)?;
    Some(NaiveDateTime::new(date, time))
}

/// Midnight at the start of `now`'s day in `tz`: sacct's default `-S`.
pub fn midnight<Tz: TimeZone>(now: Timestamp, tz: &Tz) -> Timestamp {
    let local = match tz.timestamp_opt(now, 0).earliest() {
        Some(t) => t.naive_local(),
        None => return now - now.rem_euclid(86_400),
    };
    let at = NaiveDateTime::new(local.date(), NaiveTime::MIN);
    tz.from_local_datetime(&at)
        .earliest()
        .map(|t| t.timestamp())
        // A day that starts inside a DST gap: an hour later is the day's start.
        .unwrap_or_else(|| (at + Duration::hours(1)).and_utc().timestamp())
}
