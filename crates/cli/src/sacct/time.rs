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

use crate::timespec::{parse_clock, parse_offset, two_digits};

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
        "today" | "midnight" => NaiveDateTime::new(today, NaiveTime::MIN),
        "tomorrow" => NaiveDateTime::new(today.succ_opt()?, NaiveTime::MIN),
        "noon" => NaiveDateTime::new(today, NaiveTime::from_hms_opt(12, 0, 0)?),
        "elevenses" => NaiveDateTime::new(today, NaiveTime::from_hms_opt(11, 0, 0)?),
        "fika" => NaiveDateTime::new(today, NaiveTime::from_hms_opt(15, 0, 0)?),
        "teatime" => NaiveDateTime::new(today, NaiveTime::from_hms_opt(16, 0, 0)?),
        _ => parse_date_time(&text, today)?,
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
        let date = parse_iso_date(date)?;
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
    Some(NaiveDateTime::new(
        parse_short_date(date, today.year())?,
        time,
    ))
}

fn parse_iso_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 {
        return None;
    }
    NaiveDate::from_ymd_opt(y.parse().ok()?, two_digits(m)?, two_digits(d)?)
}

/// `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`.
fn parse_short_date(text: &str, this_year: i32) -> Option<NaiveDate> {
    let year = |s: &str| -> Option<i32> {
        match s.len() {
            2 => Some(2000 + i32::try_from(two_digits(s)?).ok()?),
            4 if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            _ => None,
        }
    };
    let (month, day, y) = if text.bytes().all(|b| b.is_ascii_digit()) {
        match text.len() {
            4 => (two_digits(&text[0..2])?, two_digits(&text[2..4])?, None),
            6 => (
                two_digits(&text[0..2])?,
                two_digits(&text[2..4])?,
                Some(year(&text[4..6])?),
            ),
            _ => return None,
        }
    } else {
        let sep = if text.contains('/') { '/' } else { '.' };
        let parts: Vec<&str> = text.split(sep).collect();
        match parts.as_slice() {
            [m, d] => (two_digits(m)?, two_digits(d)?, None),
            [m, d, y] => (two_digits(m)?, two_digits(d)?, Some(year(y)?)),
            _ => return None,
        }
    };
    NaiveDate::from_ymd_opt(y.unwrap_or(this_year), month, day)
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
