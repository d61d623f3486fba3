use super::parse_begin;
use chrono::{TimeZone, Utc};

/// 2026-12-02T10:24:04Z, a Wednesday (the reference capture's day).
fn now() -> i64 {
    Utc.with_ymd_and_hms(2026, 12, 2, 10, 24, 4)
        .unwrap()
        .timestamp()
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<i64> {
    Some(
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
            .unwrap()
            .timestamp(),
    )
}

fn begin(s: &str) -> Option<i64> {
    parse_begin(s, now(), &Utc)
}

#[test]
fn begin_relative_to_now() {
    assert_eq!(begin("now"), Some(now()));
    assert_eq!(begin("now+60"), Some(now() + 60));
    assert_eq!(begin("now+1hour"), Some(now() + 3600));
    assert_eq!(begin("now+10minutes"), Some(now() + 600));
    assert_eq!(begin("now+2days"), Some(now() + 2 * 86_400));
    assert_eq!(begin("now+1week"), Some(now() + 7 * 86_400));
    assert_eq!(begin("NOW+30s"), Some(now() + 30));
    assert_eq!(begin("now+"), None);
    assert_eq!(begin("now+5fortnights"), None);
}

#[test]
fn begin_time_of_day_is_the_next_occurrence() {
    assert_eq!(begin("16:00"), at(2026, 12, 2, 16, 0, 0));
    assert_eq!(begin("16:00:30"), at(2026, 12, 2, 16, 0, 30));
    // Already past today: tomorrow.
    assert_eq!(begin("09:00"), at(2026, 12, 3, 9, 0, 0));
    assert_eq!(begin("4:00pm"), at(2026, 12, 2, 16, 0, 0));
    assert_eq!(begin("4:00 PM"), at(2026, 12, 2, 16, 0, 0));
    assert_eq!(begin("12:00am"), at(2026, 12, 3, 0, 0, 0));
    assert_eq!(begin("25:00"), None);
}

#[test]
fn begin_named_times() {
    assert_eq!(begin("midnight"), at(2026, 12, 3, 0, 0, 0));
    assert_eq!(begin("noon"), at(2026, 12, 2, 12, 0, 0));
    assert_eq!(begin("elevenses"), at(2026, 12, 2, 11, 0, 0));
    assert_eq!(begin("fika"), at(2026, 12, 2, 15, 0, 0));
    assert_eq!(begin("teatime"), at(2026, 12, 2, 16, 0, 0));
    assert_eq!(begin("today"), at(2026, 12, 2, 0, 0, 0));
    assert_eq!(begin("tomorrow"), at(2026, 12, 3, 0, 0, 0));
}

#[test]
fn begin_dates() {
    assert_eq!(begin("2027-01-15"), at(2027, 1, 15, 0, 0, 0));
    assert_eq!(begin("2027-01-15T08:30"), at(2027, 1, 15, 8, 30, 0));
    assert_eq!(begin("2027-01-15T08:30:15"), at(2027, 1, 15, 8, 30, 15));
    assert_eq!(begin("12/25"), at(2026, 12, 25, 0, 0, 0));
    assert_eq!(begin("12/25/27"), at(2027, 12, 25, 0, 0, 0));
    assert_eq!(begin("12.25.27"), at(2027, 12, 25, 0, 0, 0));
    assert_eq!(begin("122527"), at(2027, 12, 25, 0, 0, 0));
    // A month and day already past this year means next year.
    assert_eq!(begin("01/10"), at(2027, 1, 10, 0, 0, 0));
    assert_eq!(begin("16:00 12/25"), at(2026, 12, 25, 16, 0, 0));
    assert_eq!(begin("2027-02-30"), None);
    assert_eq!(begin("garbage"), None);
    assert_eq!(begin(""), None);
}
