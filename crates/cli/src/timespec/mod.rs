//! Slurm's time and date forms, as the commands read them: the one place
//! that turns `now+1hour`, `16:00`, `12/25`, `2026-12-02T10:24` and their
//! kin into timestamps.
//!
//! The commands differ in what a form means (sbatch's `--begin` looks
//! forward, sacct's `-S/-E` look back, scontrol's `StartTime=` takes fewer
//! forms), so each has its own entry point; the pieces they share live here.
//! Everything is computed from `now` in a given time zone, never the clock.
//! Time limits (`--time`, `TimeLimit=`) are `model::units::parse_time_limit`,
//! which slurm.conf shares.
//!
//! ```text
//! sbatch --begin/--deadline  -> begin::parse_begin
//! sacct/sreport -S/-E        -> sacct::parse_time, sacct::midnight
//! scontrol StartTime=        -> start_time::parse_start_time
//! ```

mod begin;
mod sacct;
mod start_time;
#[cfg(test)]
mod tests;

pub use begin::parse_begin;
pub use sacct::{midnight, parse_time};
pub(crate) use start_time::parse_start_time;

use chrono::{NaiveDate, NaiveTime};

/// `""`, `+60`, `-1day`, `-2hours`: seconds relative to now.
pub(crate) fn parse_offset(rest: &str) -> Option<i64> {
    if rest.is_empty() {
        return Some(0);
    }
    let (sign, body) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let digits_end = body
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(body.len());
    let (digits, unit) = body.split_at(digits_end);
    let count: i64 = digits.parse().ok()?;
    // sbatch accepts a space before the unit (`now+1 hour`).
    let scale = unit_seconds(unit.trim())?;
    count.checked_mul(scale)?.checked_mul(sign)
}

/// The seconds in one of a `now+count[unit]` offset's units (`""` is seconds).
pub(crate) fn unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return None,
    })
}

/// `midnight`, `noon`, `elevenses`, `fika`, `teatime`: the times of day
/// Slurm knows by name.
pub(crate) fn named_time(word: &str) -> Option<NaiveTime> {
    let hour = match word {
        "midnight" => 0,
        "noon" => 12,
        "elevenses" => 11,
        "fika" => 15,
        "teatime" => 16,
        _ => return None,
    };
    NaiveTime::from_hms_opt(hour, 0, 0)
}

/// `HH:MM[:SS]` with an optional `am`/`pm` suffix.
pub(crate) fn parse_clock(text: &str) -> Option<NaiveTime> {
    let (clock, meridiem) = if let Some(c) = text.strip_suffix("am") {
        (c, Some(false))
    } else if let Some(c) = text.strip_suffix("pm") {
        (c, Some(true))
    } else {
        (text, None)
    };
    let fields: Vec<Option<u32>> = clock.split(':').map(two_digits).collect();
    let (mut hour, minute, second) = match fields.as_slice() {
        [h, m] => ((*h)?, (*m)?, 0),
        [h, m, s] => ((*h)?, (*m)?, (*s)?),
        _ => return None,
    };
    match meridiem {
        Some(pm) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour %= 12;
            if pm {
                hour += 12;
            }
        }
        None if hour > 23 => return None,
        None => {}
    }
    NaiveTime::from_hms_opt(hour, minute, second)
}

/// One or two decimal digits (a field of a clock or a date).
pub(crate) fn two_digits(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 2 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `YYYY-MM-DD`, reading the month and the day with `field` (sacct takes
/// one or two digits, sbatch any number).
pub(crate) fn parse_iso_date(text: &str, field: fn(&str) -> Option<u32>) -> Option<NaiveDate> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 {
        return None;
    }
    NaiveDate::from_ymd_opt(y.parse().ok()?, field(m)?, field(d)?)
}

/// `MMDDYY`, `MM/DD[/YY]`, `MM.DD[.YY]`, and `MMDD` when `mmdd` (sacct takes
/// it, sbatch does not); a missing year is `this_year`. The flag says
/// whether the year was given.
pub(crate) fn parse_short_date(
    text: &str,
    this_year: i32,
    mmdd: bool,
) -> Option<(NaiveDate, bool)> {
    let year = |s: &str| -> Option<i32> {
        match s.len() {
            2 => Some(2000 + i32::try_from(two_digits(s)?).ok()?),
            4 if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            _ => None,
        }
    };
    let all_digits = text.bytes().all(|b| b.is_ascii_digit());
    let (month, day, y) = if all_digits && text.len() == 6 {
        (
            two_digits(&text[0..2])?,
            two_digits(&text[2..4])?,
            Some(year(&text[4..6])?),
        )
    } else if all_digits && mmdd {
        match text.len() {
            4 => (two_digits(&text[0..2])?, two_digits(&text[2..4])?, None),
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
    let date = NaiveDate::from_ymd_opt(y.unwrap_or(this_year), month, day)?;
    Some((date, y.is_some()))
}
