use proptest::prelude::*;

use super::*;

fn minutes(s: &str) -> TimeLimit {
    parse_time_limit(s).unwrap_or_else(|err| panic!("parse_time_limit({s:?}) failed: {err}"))
}

#[test]
fn time_limit_accepts_every_sbatch_form() {
    assert_eq!(minutes("30"), TimeLimit::Minutes(30));
    assert_eq!(minutes("30:00"), TimeLimit::Minutes(30));
    assert_eq!(minutes("2:00:00"), TimeLimit::Minutes(120));
    assert_eq!(minutes("1-0"), TimeLimit::Minutes(1440));
    assert_eq!(minutes("1-2"), TimeLimit::Minutes(1440 + 120));
    assert_eq!(minutes("1-02:30"), TimeLimit::Minutes(1440 + 150));
    assert_eq!(minutes("1-02:30:00"), TimeLimit::Minutes(1440 + 150));
    assert_eq!(minutes("365-00:00:00"), TimeLimit::Minutes(365 * 1440));
}

#[test]
fn time_limit_rounds_seconds_up_to_minutes() {
    assert_eq!(minutes("0:30"), TimeLimit::Minutes(1));
    assert_eq!(minutes("0:01"), TimeLimit::Minutes(1));
    assert_eq!(minutes("1:00:30"), TimeLimit::Minutes(61));
    assert_eq!(minutes("1-00:00:01"), TimeLimit::Minutes(1441));
    assert_eq!(minutes("0:60"), TimeLimit::Minutes(1));
    assert_eq!(minutes("0:61"), TimeLimit::Minutes(2));
}

#[test]
fn time_limit_unlimited_in_any_case() {
    for s in [
        "UNLIMITED",
        "unlimited",
        "Infinite",
        "INFINITE",
        " unlimited ",
    ] {
        assert_eq!(minutes(s), TimeLimit::Unlimited, "{s}");
    }
}

#[test]
fn time_limit_zero_is_zero_minutes_not_unlimited() {
    assert_eq!(minutes("0"), TimeLimit::Minutes(0));
    assert_eq!(minutes("0:00"), TimeLimit::Minutes(0));
}

#[test]
fn time_limit_fields_are_not_range_checked() {
    assert_eq!(minutes("90"), TimeLimit::Minutes(90));
    assert_eq!(minutes("1:90"), TimeLimit::Minutes(3));
}

#[test]
fn time_limit_rejects_garbage() {
    for s in [
        "",
        " ",
        "abc",
        "1:2:3:4",
        "-1",
        "1-",
        "-",
        "1-2:3:4:5",
        "1:",
        ":1",
        "1::2",
        "1-2-3",
        "1.5",
        "+5",
        "1h",
    ] {
        assert_eq!(
            parse_time_limit(s),
            Err(UnitError::Time(s.to_owned())),
            "{s:?}"
        );
    }
}

#[test]
fn time_limit_rejects_overflow() {
    assert!(parse_time_limit(&u64::MAX.to_string()).is_err());
    assert!(parse_time_limit(&(u64::from(u32::MAX) + 1).to_string()).is_err());
    assert_eq!(minutes(&u32::MAX.to_string()), TimeLimit::Minutes(u32::MAX));
    assert!(parse_time_limit("99999999999999999999999").is_err());
    assert!(parse_time_limit("213503982334601-0").is_err());
}

#[test]
fn time_error_names_the_input_and_the_forms() {
    assert_eq!(
        parse_time_limit("1:2:3:4").unwrap_err().to_string(),
        r#"invalid time specification "1:2:3:4": expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"#
    );
}

#[test]
fn format_duration_matches_squeue_time_column() {
    let cases = [
        (0, "0:00"),
        (6, "0:06"),
        (60, "1:00"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (86_399, "23:59:59"),
        (86_400, "1-00:00:00"),
        (90_061, "1-01:01:01"),
        (365 * 86_400, "365-00:00:00"),
    ];
    for (secs, expected) in cases {
        assert_eq!(format_duration(secs), expected, "{secs}");
    }
}

#[test]
fn format_duration_hms_matches_scontrol_run_time() {
    let cases = [
        (0, "00:00:00"),
        (3, "00:00:03"),
        (9, "00:00:09"),
        (3599, "00:59:59"),
        (36_000, "10:00:00"),
        (86_400, "1-00:00:00"),
        (365 * 86_400, "365-00:00:00"),
    ];
    for (secs, expected) in cases {
        assert_eq!(format_duration_hms(secs), expected, "{secs}");
    }
}

#[test]
fn format_time_limit_as_squeue_and_scontrol_print_it() {
    assert_eq!(format_time_limit(TimeLimit::Unlimited), "UNLIMITED");
    assert_eq!(format_time_limit(TimeLimit::Minutes(0)), "0:00");
    assert_eq!(format_time_limit(TimeLimit::Minutes(30)), "30:00");
    assert_eq!(format_time_limit(TimeLimit::Minutes(61)), "1:01:00");
    assert_eq!(
        format_time_limit(TimeLimit::Minutes(365 * 1440)),
        "365-00:00:00"
    );
    assert_eq!(format_time_limit_hms(TimeLimit::Unlimited), "UNLIMITED");
    assert_eq!(format_time_limit_hms(TimeLimit::Minutes(30)), "00:30:00");
    assert_eq!(
        format_time_limit_hms(TimeLimit::Minutes(365 * 1440)),
        "365-00:00:00"
    );
}

#[test]
fn memory_accepts_units_in_any_case() {
    let cases = [
        ("500", 500),
        ("0", 0),
        ("500M", 500),
        ("500m", 500),
        ("500MB", 500),
        ("500mb", 500),
        ("4G", 4096),
        ("4g", 4096),
        ("4GB", 4096),
        ("2T", 2 * 1024 * 1024),
        ("1P", 1024u64.pow(3)),
        ("1E", 1024u64.pow(4)),
        ("1024K", 1),
        ("1024k", 1),
        ("1025K", 2),
        ("1K", 1),
        ("0K", 0),
        (" 8G ", 8192),
    ];
    for (s, mb) in cases {
        assert_eq!(parse_memory_mb(s), Ok(mb), "{s:?}");
    }
}

#[test]
fn memory_rejects_garbage() {
    for s in [
        "",
        "M",
        "-1",
        "-1G",
        "+1G",
        "1.5G",
        "4X",
        "4GiB",
        "4B",
        "4 G",
        "abc",
        "4GG",
        "99999999999999999999",
    ] {
        assert_eq!(
            parse_memory_mb(s),
            Err(UnitError::Memory(s.to_owned())),
            "{s:?}"
        );
    }
    assert!(parse_memory_mb("16777216E").is_err());
}

#[test]
fn format_memory_matches_squeue_and_scontrol() {
    let cases = [
        (0, "0"),
        (1, "1M"),
        (500, "500M"),
        (1000, "1000M"),
        (2000, "2000M"),
        (4000, "4000M"),
        (16000, "16000M"),
        (1024, "1G"),
        (4096, "4G"),
        (1536, "1536M"),
        (1_048_576, "1T"),
        (1024u64.pow(3), "1P"),
        (1024u64.pow(4), "1E"),
        (1024u64.pow(5), "1024E"),
    ];
    for (mb, expected) in cases {
        assert_eq!(format_memory_mb(mb), expected, "{mb}");
    }
}

#[test]
fn count_accepts_plain_and_binary_suffixes() {
    assert_eq!(parse_count("4"), Some(4));
    assert_eq!(parse_count("0"), Some(0));
    assert_eq!(parse_count("4k"), Some(4096));
    assert_eq!(parse_count("4K"), Some(4096));
    assert_eq!(parse_count("2m"), Some(2 * 1024 * 1024));
    assert_eq!(parse_count("1G"), Some(1024 * 1024 * 1024));
    for s in [
        "",
        "k",
        "-1",
        "1.5",
        "4x",
        "4kk",
        " 4",
        "99999999999999999999",
        "18014398509481984k",
    ] {
        assert_eq!(parse_count(s), None, "{s:?}");
    }
}

fn time_limit() -> impl Strategy<Value = TimeLimit> {
    prop_oneof![
        1 => Just(TimeLimit::Unlimited),
        3 => (0u32..100_000).prop_map(TimeLimit::Minutes),
        1 => any::<u32>().prop_map(TimeLimit::Minutes),
    ]
}

proptest! {
    #[test]
    fn time_limit_round_trips_through_squeue_format(t in time_limit()) {
        prop_assert_eq!(parse_time_limit(&format_time_limit(t)), Ok(t));
    }

    #[test]
    fn time_limit_round_trips_through_scontrol_format(t in time_limit()) {
        prop_assert_eq!(parse_time_limit(&format_time_limit_hms(t)), Ok(t));
    }

    #[test]
    fn formatted_duration_parses_to_minutes_rounded_up(secs in prop_oneof![0u64..200_000, 0u64..=u64::from(u32::MAX) * 60]) {
        let expected = TimeLimit::Minutes(u32::try_from(secs.div_ceil(60)).unwrap());
        prop_assert_eq!(parse_time_limit(&format_duration(secs)), Ok(expected));
        prop_assert_eq!(parse_time_limit(&format_duration_hms(secs)), Ok(expected));
    }

    #[test]
    fn memory_round_trips(mb in prop_oneof![
        0u64..10_000,
        (0u64..4096, 0u32..5).prop_map(|(n, power)| n * 1024u64.pow(power)),
        any::<u64>(),
    ]) {
        prop_assert_eq!(parse_memory_mb(&format_memory_mb(mb)), Ok(mb));
    }

    #[test]
    fn parsers_never_panic(s in "[0-9a-zA-Z:+. -]{0,12}") {
        let _ = parse_time_limit(&s);
        let _ = parse_memory_mb(&s);
        let _ = parse_count(&s);
    }
}
