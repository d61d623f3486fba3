//! `--begin` times, as `sbatch(1)` documents them: `now[+count[units]]`,
//! `HH:MM[:SS] [AM|PM]`, `midnight`, `noon`, `elevenses`, `fika`, `teatime`,
//! `today`, `tomorrow`, `YYYY-MM-DD[THH:MM[:SS]]`, `MMDDYY`, `MM/DD[/YY]`,
//! `MM.DD[.YY]`, and a time of day followed by a date (`16:00 12/25`).
//!
//! Everything is computed from `now` in the given time zone (the commands pass
//! `chrono::Local`, tests pass `Utc`), never from the clock.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use model::Timestamp;

use crate::timespec::{parse_clock, parse_offset, two_digits};

/// Parses a `--begin` value into a timestamp. `None` when it is not one of
/// Slurm's forms.
pub fn parse_begin<Tz: TimeZone>(spec: &str, now: Timestamp, tz: &Tz) -> Option<Timestamp> {
    let text = spec.trim().to_ascii_lowercase();
    if text.is_empty() {
        return None;
    }
    let now_local = tz.timestamp_opt(now, 0).earliest()?.naive_local();

    if let Some(rest) = text.strip_prefix("now") {
        return now.checked_add(parse_offset(rest)?);
    }

    // A time of day and/or a date, in either order, separated by blanks.
    let mut time: Option<NaiveTime> = None;
    let mut date: Option<(NaiveDate, bool)> = None; // (date, year given)
    let mut tokens: Vec<&str> = text.split_whitespace().collect();
    // "4:00 pm": glue a lone AM/PM to the time before it.
    let mut glued: Vec<String> = Vec::new();
    while !tokens.is_empty() {
        let tok = tokens.remove(0);
        if (tokens.first() == Some(&"am") || tokens.first() == Some(&"pm")) && tok.contains(':') {
            glued.push(format!("{tok}{}", tokens.remove(0)));
        } else {
            glued.push(tok.to_string());
        }
    }
    for tok in &glued {
        let tok = tok.as_str();
        match tok {
            "today" | "tomorrow" => {
                let today = now_local.date();
                let d = if tok == "today" {
                    today
                } else {
                    today.succ_opt()?
                };
                set_once(&mut date, (d, true))?;
                continue;
            }
            "midnight" | "noon" | "elevenses" | "fika" | "teatime" => {
                let hour = match tok {
                    "midnight" => 0,
                    "noon" => 12,
                    "elevenses" => 11,
                    "fika" => 15,
                    _ => 16,
                };
                set_once(&mut time, NaiveTime::from_hms_opt(hour, 0, 0)?)?;
                continue;
            }
            _ => {}
        }
        if let Some((d, t)) = tok.split_once('t') {
            // YYYY-MM-DDTHH:MM[:SS]
            set_once(&mut date, (parse_iso_date(d)?, true))?;
            set_once(&mut time, parse_clock(t)?)?;
        } else if tok.contains(':') {
            set_once(&mut time, parse_clock(tok)?)?;
        } else {
            set_once(&mut date, parse_date(tok, now_local.year())?)?;
        }
    }

    let at = match (date, time) {
        (None, None) => return None,
        (None, Some(t)) => {
            // A bare time of day is the next time the clock shows it.
            let today = NaiveDateTime::new(now_local.date(), t);
            if today <= now_local {
                today + Duration::days(1)
            } else {
                today
            }
        }
        (Some((d, year_given)), t) => {
            let mut at = NaiveDateTime::new(d, t.unwrap_or(NaiveTime::MIN));
            if !year_given && at < now_local {
                // MM/DD without a year that already passed means next year.
                at = NaiveDateTime::new(
                    NaiveDate::from_ymd_opt(d.year() + 1, d.month(), d.day())?,
                    at.time(),
                );
            }
            at
        }
    };
    Some(tz.from_local_datetime(&at).earliest()?.timestamp())
}

fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// `YYYY-MM-DD`.
fn parse_iso_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 {
        return None;
    }
    NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

/// `YYYY-MM-DD`, `MMDDYY`, `MM/DD[/YY]`, `MM.DD[.YY]`; the flag says whether
/// the year was given.
fn parse_date(text: &str, this_year: i32) -> Option<(NaiveDate, bool)> {
    if text.contains('-') {
        return Some((parse_iso_date(text)?, true));
    }
    let year = |s: &str| -> Option<i32> {
        match s.len() {
            2 => Some(2000 + i32::try_from(two_digits(s)?).ok()?),
            4 if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            _ => None,
        }
    };
    let (month, day, y) = if text.len() == 6 && text.bytes().all(|b| b.is_ascii_digit()) {
        (
            two_digits(&text[0..2])?,
            two_digits(&text[2..4])?,
            Some(year(&text[4..6])?),
        )
    } else {
        let sep = if text.contains('/') { '/' } else { '.' };
        let parts: Vec<&str> = text.split(sep).collect();
        match parts.as_slice() {
            [m, d] => (two_digits(m)?, two_digits(d)?, None),
            [m, d, y] => (two_digits(m)?, two_digits(d)?, Some(year(y)?)),
            _ => return None,
        }
    };
    let date = NaiveDate::from_ymd_opt(y.unwrap_or(this_year), month, day)?;
    Some((date, y.is_some()))
}
