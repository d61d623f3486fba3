//! Slurm's units: time limits and durations, memory sizes, counts.
//!
//! Parsers accept what Slurm's commands accept (`sbatch(1) --time`, `--mem`); formatters print
//! what `squeue(1)` and `scontrol(1)` print, byte for byte, because scripts parse that output.
//! Everything here is pure: no clock, no locale.
//!
//! Invariant: each formatter's output parses back to the same value
//! (`parse_time_limit(&format_time_limit(t)) == Ok(t)`, `parse_memory_mb(&format_memory_mb(m)) == Ok(m)`).

use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Why a time or memory value was refused.
///
/// The payload is the text as given, so callers can echo it; the request should be rejected
/// (Slurm's commands print `sbatch: error: Invalid --time specification`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not one of Slurm's time forms, or too large for a limit in minutes.
    #[error(
        "invalid time specification {0:?}: expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"
    )]
    Time(String),
    /// Not a memory size (a whole number with an optional K, M, G, T, P or E suffix), or too large.
    #[error("invalid memory specification {0:?}: expected a whole number of megabytes or a K/M/G/T suffix")]
    Memory(String),
}

/// A time limit: a number of minutes, or UNLIMITED/INFINITE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimeLimit {
    /// No limit.
    #[default]
    Unlimited,
    /// A limit in whole minutes (Slurm rounds seconds up to minutes).
    Minutes(u32),
}

/// Parses a time limit in one of Slurm's `--time` forms.
///
/// Accepted, per `sbatch(1) --time`: `minutes`, `minutes:seconds`, `hours:minutes:seconds`,
/// `days-hours`, `days-hours:minutes`, `days-hours:minutes:seconds`, and `UNLIMITED` or
/// `INFINITE` in any case. Fields are not range-checked (`90` and `1:90` are both fine),
/// as Slurm does not check them either. Surrounding whitespace is ignored.
///
/// Seconds round up to the next whole minute: `0:30` is 1 minute, `1:00:30` is 61.
///
/// `0` parses to `Minutes(0)`, not to [`TimeLimit::Unlimited`]: this is a parser, and keeping
/// zero distinct lets every formatted limit parse back to itself. `sbatch(1)` says "a time
/// limit of zero requests that no time limit be imposed"; job submission applies that rule.
///
/// # Errors
///
/// [`UnitError::Time`] for anything else, e.g. `""`, `abc`, `-1`, `1:2:3:4`, `1-`, or a value
/// beyond `u32::MAX` minutes.
pub fn parse_time_limit(s: &str) -> Result<TimeLimit, UnitError> {
    let text = s.trim();
    if text.eq_ignore_ascii_case("UNLIMITED") || text.eq_ignore_ascii_case("INFINITE") {
        return Ok(TimeLimit::Unlimited);
    }
    let err = || UnitError::Time(s.to_owned());
    let field = |digits: &str| -> Result<u64, UnitError> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        digits.parse().map_err(|_| err())
    };

    // (days, hours, minutes, seconds)
    let (days, clock) = match text.split_once('-') {
        Some((days, clock)) => (Some(field(days)?), clock),
        None => (None, text),
    };
    let clock_fields = clock
        .split(':')
        .map(field)
        .collect::<Result<Vec<u64>, _>>()?;
    let (days, hours, minutes, seconds) = match (days, clock_fields.as_slice()) {
        (None, &[minutes]) => (0, 0, minutes, 0),
        (None, &[minutes, seconds]) => (0, 0, minutes, seconds),
        (None, &[hours, minutes, seconds]) => (0, hours, minutes, seconds),
        (Some(days), &[hours]) => (days, hours, 0, 0),
        (Some(days), &[hours, minutes]) => (days, hours, minutes, 0),
        (Some(days), &[hours, minutes, seconds]) => (days, hours, minutes, seconds),
        _ => return Err(err()),
    };

    let total_secs = days
        .checked_mul(86_400)
        .and_then(|secs| secs.checked_add(hours.checked_mul(3_600)?))
        .and_then(|secs| secs.checked_add(minutes.checked_mul(60)?))
        .and_then(|secs| secs.checked_add(seconds))
        .ok_or_else(err)?;
    let total_minutes = total_secs.div_ceil(60);
    u32::try_from(total_minutes)
        .map(TimeLimit::Minutes)
        .map_err(|_| err())
}

/// Formats a time limit as `squeue(1)`'s TIME_LIMIT column prints it.
///
/// [`TimeLimit::Unlimited`] is `UNLIMITED`; minutes go through [`format_duration`], so
/// 30 minutes is `30:00` and a year is `365-00:00:00`.
pub fn format_time_limit(t: TimeLimit) -> String {
    match t {
        TimeLimit::Unlimited => "UNLIMITED".to_owned(),
        TimeLimit::Minutes(minutes) => format_duration(u64::from(minutes) * 60),
    }
}

/// Formats a time limit as `scontrol show job` prints `TimeLimit=`.
///
/// [`TimeLimit::Unlimited`] is `UNLIMITED`; minutes go through [`format_duration_hms`], so
/// 30 minutes is `00:30:00` and a year is `365-00:00:00`.
pub fn format_time_limit_hms(t: TimeLimit) -> String {
    match t {
        TimeLimit::Unlimited => "UNLIMITED".to_owned(),
        TimeLimit::Minutes(minutes) => format_duration_hms(u64::from(minutes) * 60),
    }
}

/// Formats a duration as `squeue(1)`'s TIME column prints it.
///
/// `M:SS` below an hour (`0:00`, `0:06`, `59:59`), `H:MM:SS` below a day (`1:00:00`,
/// `23:59:59`), `D-HH:MM:SS` from a day on (`1-00:00:00`).
pub fn format_duration(secs: u64) -> String {
    let (days, hours, minutes, seconds) = split_secs(secs);
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{seconds:02}")
    } else if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes}:{seconds:02}")
    }
}

/// Formats a duration as `scontrol show job` prints `RunTime=`.
///
/// Always at least `HH:MM:SS` (`00:00:09`); `D-HH:MM:SS` from a day on (`1-00:00:00`).
pub fn format_duration_hms(secs: u64) -> String {
    let (days, hours, minutes, seconds) = split_secs(secs);
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{seconds:02}")
    } else {
        format!("{hours:02}:{minutes:02}:{seconds:02}")
    }
}

fn split_secs(secs: u64) -> (u64, u64, u64, u64) {
    (
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    )
}

/// Binary unit suffixes Slurm prints and accepts, each a power of 1024 of the previous.
const SIZE_SUFFIXES: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];

/// Parses a memory size into megabytes (MiB), as `sbatch(1) --mem` reads it.
///
/// A bare number is megabytes (`500`); suffixes `K`, `M`, `G`, `T`, `P`, `E` (any case,
/// optionally followed by `B`, as in `4GB`) scale by powers of 1024. Kilobytes round up to
/// whole megabytes (`1025K` is 2). `0` is valid: for `--mem` it means all of a node's memory.
///
/// # Errors
///
/// [`UnitError::Memory`] for empty text, signs, fractions, unknown suffixes, or sizes beyond
/// `u64::MAX` megabytes.
pub fn parse_memory_mb(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Memory(s.to_owned());
    let text = s.trim();
    let digits_end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(err());
    }
    let number: u64 = digits.parse().map_err(|_| err())?;

    let mut suffix_chars = suffix.chars();
    let unit = suffix_chars.next().map(|c| c.to_ascii_uppercase());
    match suffix_chars.as_str() {
        "" | "B" | "b" => {}
        _ => return Err(err()),
    }
    match unit {
        None => Ok(number),
        Some('K') => Ok(number.div_ceil(1024)),
        Some(unit) => {
            let power = SIZE_SUFFIXES
                .iter()
                .position(|c| *c == unit)
                .ok_or_else(err)?;
            // 'M' is at index 1: megabytes times 1024^(index - 1).
            let scale = 1024u64.pow(u32::try_from(power - 1).map_err(|_| err())?);
            number.checked_mul(scale).ok_or_else(err)
        }
    }
}

/// Formats megabytes as `squeue(1) %m` and `scontrol show job` print memory.
///
/// The size is divided by 1024 while it stays whole, moving up one unit each time:
/// 500 is `500M`, 16000 is `16000M`, 4096 is `4G`, 1048576 is `1T`. Zero prints as `0`.
pub fn format_memory_mb(mb: u64) -> String {
    if mb == 0 {
        return "0".to_owned();
    }
    let mut value = mb;
    let mut unit_idx = 1; // 'M'
                          // `trailing_zeros() >= 10` is "divisible by 1024" without `is_multiple_of` (Rust 1.87, above our MSRV).
    while value.trailing_zeros() >= 10 && unit_idx + 1 < SIZE_SUFFIXES.len() {
        value /= 1024;
        unit_idx += 1;
    }
    format!("{value}{}", SIZE_SUFFIXES[unit_idx])
}

/// Parses a count such as `4`, or with Slurm's binary count suffixes `4k` (4096), `2m`
/// (2 * 1024^2), `1g` (1024^3), in any case, as Slurm accepts them in GRES counts (`gpu:1k`).
///
/// Returns `None` for anything else, including signs, fractions and overflow.
pub fn parse_count(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()?.to_ascii_lowercase() {
        b'k' => (&s[..s.len() - 1], 1024u64),
        b'm' => (&s[..s.len() - 1], 1024u64.pow(2)),
        b'g' => (&s[..s.len() - 1], 1024u64.pow(3)),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// UNLIMITED is longer than any number of minutes.
impl Ord for TimeLimit {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let key = |t: &TimeLimit| match t {
            TimeLimit::Minutes(m) => u64::from(*m),
            TimeLimit::Unlimited => u64::MAX,
        };
        key(self).cmp(&key(other))
    }
}

impl PartialOrd for TimeLimit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
