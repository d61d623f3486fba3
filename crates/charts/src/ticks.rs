//! Axis ticks: round numbers for values, calendar steps for time, and the
//! civil date of a Unix time (UTC) without a clock or time-zone database.

/// Up to about `want` round tick values (1, 2 or 5 times a power of ten)
/// covering `0..=top`, and the top of the axis (the last tick).
pub fn value_ticks(top: f64, want: usize) -> (Vec<f64>, f64) {
    let top = if top.is_finite() && top > 0.0 {
        top
    } else {
        1.0
    };
    let raw = top / want.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (top / step).ceil().max(1.0) as usize;
    let ticks = (0..=n).map(|i| i as f64 * step).collect();
    (ticks, n as f64 * step)
}

/// A value as a tick label: no trailing zeros, thousands as `k`, millions
/// as `M`.
pub fn value_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        trim(v / 1e6, "M")
    } else if a >= 1e4 {
        trim(v / 1e3, "k")
    } else {
        trim(v, "")
    }
}

fn trim(v: f64, suffix: &str) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

/// The calendar steps a time axis may use, in seconds.
const TIME_STEPS: &[i64] = &[
    60,
    300,
    900,
    1_800,
    3_600,
    3 * 3_600,
    6 * 3_600,
    12 * 3_600,
    86_400,
    2 * 86_400,
    7 * 86_400,
    14 * 86_400,
    28 * 86_400,
    91 * 86_400,
    364 * 86_400,
];

/// Tick times over `[t0, t1]` (Unix seconds, or seconds from a trace's
/// start when `dated` is false), at most about `want`, on whole steps
/// (midnights for steps of a day or more), with their labels.
pub fn time_ticks(t0: i64, t1: i64, want: usize, dated: bool) -> Vec<(i64, String)> {
    let span = (t1 - t0).max(1);
    let step = TIME_STEPS
        .iter()
        .copied()
        .find(|s| span / s <= want.max(1) as i64)
        .unwrap_or_else(|| {
            let years = span / (364 * 86_400) / want.max(1) as i64 + 1;
            years * 364 * 86_400
        });
    let first = t0.div_euclid(step) * step + if t0.rem_euclid(step) == 0 { 0 } else { step };
    (0..)
        .map(|i| first + i * step)
        .take_while(|t| *t <= t1)
        .map(|t| (t, time_label(t, step, dated)))
        .collect()
}

/// A tick's label: a date for steps of a day or more, else a date and a
/// time of day (dated), or days and hours since the start (not dated).
fn time_label(t: i64, step: i64, dated: bool) -> String {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (h, m) = (secs / 3_600, secs % 3_600 / 60);
    if !dated {
        return match (step >= 86_400, days) {
            (true, d) => format!("day {d}"),
            (false, 0) => format!("{h:02}:{m:02}"),
            (false, d) => format!("day {d} {h:02}:{m:02}"),
        };
    }
    let (y, mo, d) = civil_from_days(days);
    if step >= 86_400 {
        format!("{y:04}-{mo:02}-{d:02}")
    } else {
        format!("{mo:02}-{d:02} {h:02}:{m:02}")
    }
}

/// The proleptic Gregorian date (year, month, day) of a day number counted
/// from 1970-01-01, by 400-year eras of 146,097 days.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days from 0000-03-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..146096
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // year of era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // month from March, 0..11
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
