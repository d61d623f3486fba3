//! `--begin` times, as `sbatch(1)` documents them: `now[+count[units]]`,
//! `HH:MM[:SS] [AM|PM]`, `midnight`, `noon`, `elevenses`, `fika`, `teatime`,
//! `today`, `tomorrow`, `YYYY-MM-DD[THH:MM[:SS]]`, `MMDDYY`, `MM/DD[/YY]`,
//! `MM.DD[.YY]`, and a time of day followed by a date (`16:00 12/25`).
//!
//! Everything is computed from `now` in the given time zone (the commands pass
//! `chrono::Local`, tests pass `Utc`), never from the clock.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use model::Timestamp;

use super::{named_time, parse_clock, parse_iso_date, parse_offset, parse_short_date};

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
            _ => {}
        }
        if let Some(named) = named_time(tok) {
            set_once(&mut time, named)?;
            continue;
        }
        if let Some((d, t)) = tok.split_once('t') {
            // YYYY-MM-DDTHH:MM[:SS]
            set_once(&mut date, (parse_iso_date(d, any_digits)?, true))?;
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

/// A month or day field of `YYYY-MM-DD`: any number `u32` reads.
fn any_digits(s: &str) -> Option<u32> {
    s.parse().ok()
}

/// `YYYY-MM-DD`, `MMDDYY`, `MM/DD[/YY]`, `MM.DD[.YY]`; the flag says whether
/// the year was given.
fn parse_date(text: &str, this_year: i32) -> Option<(NaiveDate, bool)> {
    if text.contains('-') {
        return Some((parse_iso_date(text, any_digits)?, true));
    }
    parse_short_date(text, this_year, false)
}
