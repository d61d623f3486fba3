//! Hostile hostlist expressions: random text, random bracket soup, numbers
//! at and beyond `u64`, and ranges whose product overflows. `expand` and
//! `count` must agree, never panic, and refuse anything above `MAX_HOSTS`
//! before building a single name.

// A test times `expand`'s refusal with the clock; tests may read it.
#![allow(clippy::disallowed_methods)]

use hostlist::{compress, count, expand, HostlistError, MAX_HOSTS};
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// Text made of the characters that mean something in a hostlist.
fn bracket_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("["),
            Just("]"),
            Just(","),
            Just("-"),
            Just(" "),
            Just("\t"),
            Just("0"),
            Just("1"),
            Just("9"),
            Just("00"),
            Just("n"),
            Just("rack"),
            Just(":"),
            Just("18446744073709551615"),
            Just("18446744073709551616"),
            Just("99999999"),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// A syntactically valid expression with arbitrary (possibly huge) bounds.
fn ranged() -> impl Strategy<Value = String> {
    let bound = prop_oneof![0u64..20, 0u64..2_000_000, any::<u64>()];
    let range = (bound.clone(), bound, 0usize..4).prop_map(|(a, b, pad)| {
        let (lo, hi) = (a.min(b), a.max(b));
        format!("{lo:0pad$}-{hi:0pad$}", pad = pad)
    });
    let group = prop::collection::vec(range, 1..4).prop_map(|r| format!("[{}]", r.join(",")));
    prop::collection::vec(("[a-z]{0,3}", group), 1..4).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(prefix, group)| format!("{prefix}{group}"))
            .collect::<String>()
    })
}

/// `expand` and `count` agree: same success, same length, same error.
fn check_agreement(expr: &str) -> Result<(), TestCaseError> {
    let counted = count(expr);
    if let Ok(n) = counted {
        prop_assume!(n <= 100_000, "too many names to build in a fuzz case");
    }
    let expanded = expand(expr);
    match (&expanded, &counted) {
        (Ok(names), Ok(n)) => {
            prop_assert_eq!(names.len(), *n);
            prop_assert!(names.len() <= MAX_HOSTS);
            // What expands compresses without panicking.
            let _ = compress(names);
        }
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        _ => prop_assert!(false, "expand {:?} but count {:?}", expanded, counted),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn arbitrary_text_never_panics(expr in "\\PC{0,40}") {
        check_agreement(&expr)?;
    }

    #[test]
    fn bracket_soup_never_panics(expr in bracket_soup()) {
        check_agreement(&expr)?;
    }

    #[test]
    fn huge_ranges_are_refused_without_building_names(expr in ranged()) {
        // `count` is the cheap path; when it says too many, `expand` must
        // refuse too, and quickly.
        match count(&expr) {
            Err(HostlistError::TooManyHosts { limit, .. }) => {
                prop_assert_eq!(limit, MAX_HOSTS);
                let start = Instant::now();
                let refused = matches!(expand(&expr), Err(HostlistError::TooManyHosts { .. }));
                prop_assert!(refused);
                prop_assert!(start.elapsed() < Duration::from_millis(200));
            }
            _ => check_agreement(&expr)?,
        }
    }

    #[test]
    fn compress_of_arbitrary_names_never_panics(names in prop::collection::vec("\\PC{0,12}", 0..20)) {
        let _ = compress(&names);
        let _ = expand(&compress(&names));
    }
}

#[test]
fn ranges_beyond_the_limit_are_errors() {
    for expr in [
        "node[1-99999999]",
        "node[0-18446744073709551615]",
        "node[1-99999999999999999999]",
        "a[1-100000]b[1-100000]c[1-100000]d[1-100000]e[1-100000]",
        "a[0-18446744073709551615]b[0-18446744073709551615]",
        "n[1-1048576],m1",
    ] {
        let start = Instant::now();
        assert!(expand(expr).is_err(), "{expr}");
        assert!(count(expr).is_err(), "{expr}");
        assert!(start.elapsed() < Duration::from_millis(500), "{expr}");
    }
    assert_eq!(count("n[1-1048576]"), Ok(MAX_HOSTS));
}

#[test]
fn numbers_at_the_top_of_u64_do_not_overflow() {
    let top = u64::MAX;
    assert_eq!(
        expand(&format!("n[{top}]")).unwrap(),
        vec![format!("n{top}")]
    );
    assert_eq!(count(&format!("n[{}-{top}]", top - 1)), Ok(2));
}
