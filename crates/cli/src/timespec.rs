//! Pieces of Slurm's time forms that `sbatch --begin` and `sacct -S/-E`
//! share: clock times, `now` offsets, two-digit fields.

use chrono::NaiveTime;

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
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return None,
    };
    count.checked_mul(scale)?.checked_mul(sign)
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
