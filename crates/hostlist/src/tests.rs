use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn expanded(expr: &str) -> Vec<String> {
    expand(expr).unwrap_or_else(|err| panic!("expand({expr:?}) failed: {err}"))
}

fn names(list: &str) -> Vec<&str> {
    list.split(' ').filter(|name| !name.is_empty()).collect()
}

#[test]
fn expand_simple_range_and_single() {
    assert_eq!(expanded("node[1-3,5]"), names("node1 node2 node3 node5"));
}

#[test]
fn expand_keeps_zero_padding() {
    assert_eq!(expanded("gpu[01-03]"), names("gpu01 gpu02 gpu03"));
    assert_eq!(expanded("n[08-10]"), names("n08 n09 n10"));
    assert_eq!(expanded("n[8-10]"), names("n8 n9 n10"));
    assert_eq!(expanded("n[010]"), names("n010"));
    assert_eq!(expanded("n[098-101]"), names("n098 n099 n100 n101"));
}

#[test]
fn expand_top_level_list() {
    assert_eq!(expanded("a,b[1-2]"), names("a b1 b2"));
    assert_eq!(expanded("a b[1-2]\tc"), names("a b1 b2 c"));
    assert_eq!(expanded("a,,b,"), names("a b"));
}

#[test]
fn expand_several_bracket_groups_is_cartesian_product_first_group_slowest() {
    assert_eq!(
        expanded("rack[1-2]-n[1-2]"),
        names("rack1-n1 rack1-n2 rack2-n1 rack2-n2")
    );
}

#[test]
fn expand_keeps_suffix_after_brackets() {
    assert_eq!(expanded("n[1-2].ib"), names("n1.ib n2.ib"));
    assert_eq!(expanded("[1-2]"), names("1 2"));
}

#[test]
fn expand_plain_names_and_empty() {
    assert_eq!(expanded("login"), names("login"));
    assert_eq!(expanded("node7"), names("node7"));
    assert!(expanded("").is_empty());
}

#[test]
fn expand_keeps_order_and_duplicates() {
    assert_eq!(expanded("n[3,1-2],n1"), names("n3 n1 n2 n1"));
}

#[test]
fn expand_rejects_unbalanced_brackets() {
    assert_eq!(
        expand("n[1-3"),
        Err(HostlistError::UnbalancedBracket {
            expr: "n[1-3".into(),
            bracket: '[',
            position: 1
        })
    );
    assert_eq!(
        expand("n1-3]"),
        Err(HostlistError::UnbalancedBracket {
            expr: "n1-3]".into(),
            bracket: ']',
            position: 4
        })
    );
    assert_eq!(
        expand("n[1-[2]]"),
        Err(HostlistError::NestedBracket {
            expr: "n[1-[2]]".into(),
            position: 4
        })
    );
}

#[test]
fn expand_rejects_bad_ranges() {
    assert_eq!(
        expand("n[5-3]"),
        Err(HostlistError::ReversedRange {
            expr: "n[5-3]".into(),
            lo: 5,
            hi: 3
        })
    );
    for (expr, element) in [
        ("n[a-3]", "a-3"),
        ("n[]", ""),
        ("n[1,,2]", ""),
        ("n[1-2-3]", "1-2-3"),
        ("n[-1]", "-1"),
    ] {
        assert_eq!(
            expand(expr),
            Err(HostlistError::BadRange {
                expr: expr.into(),
                element: element.into()
            }),
            "{expr}"
        );
    }
    assert!(matches!(
        expand("n[99999999999999999999999]"),
        Err(HostlistError::NumberTooLarge { .. })
    ));
}

#[test]
fn expand_refuses_absurd_sizes() {
    let err = expand("n[0-99999999999]").unwrap_err();
    assert_eq!(
        err,
        HostlistError::TooManyHosts {
            expr: "n[0-99999999999]".into(),
            limit: MAX_HOSTS
        }
    );
    assert!(matches!(
        expand("n[0-18446744073709551615]"),
        Err(HostlistError::TooManyHosts { .. })
    ));
    assert!(matches!(
        expand("a[1-1024]b[1-1024]c[1-2]"),
        Err(HostlistError::TooManyHosts { .. })
    ));
    assert_eq!(expand("a[1-1024]b[1-1024]").map(|v| v.len()), Ok(MAX_HOSTS));
}

#[test]
fn errors_name_the_expression() {
    let err = expand("n[5-3]").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid hostlist "n[5-3]": range 5-3 runs backwards"#
    );
}

#[test]
fn count_matches_expand() {
    assert_eq!(count("node[1-3,5],login,rack[1-2]-n[01-10]"), Ok(25));
    assert_eq!(count(""), Ok(0));
    assert!(count("n[1-").is_err());
    assert!(count("n[0-99999999999]").is_err());
}

#[test]
fn compress_merges_consecutive_numbers() {
    assert_eq!(compress(&names("node1 node2 node3 node5")), "node[1-3,5]");
    assert_eq!(compress(&names("node1 node2")), "node[1-2]");
    assert_eq!(compress(&names("node1 node3")), "node[1,3]");
}

#[test]
fn compress_single_name_has_no_brackets() {
    assert_eq!(compress(&names("node4")), "node4");
    assert_eq!(compress(&names("gpu01")), "gpu01");
}

#[test]
fn compress_sorts_numerically_and_dedupes_within_group() {
    assert_eq!(compress(&names("n10 n9 n1 n2 n9 n11")), "n[1-2,9-11]");
}

#[test]
fn compress_keeps_first_appearance_order_of_groups() {
    assert_eq!(compress(&names("b2 a1 b1 login a2")), "b[1-2],a[1-2],login");
}

#[test]
fn compress_keeps_zero_padding() {
    assert_eq!(compress(&names("gpu01 gpu02 gpu03")), "gpu[01-03]");
    assert_eq!(compress(&names("n08 n09 n10")), "n[08-10]");
    assert_eq!(compress(&names("n8 n9 n10")), "n[8-10]");
    assert_eq!(compress(&names("n098 n099 n100")), "n[098-100]");
}

#[test]
fn compress_keeps_different_paddings_apart() {
    assert_eq!(compress(&names("n9 n010")), "n9,n010");
    assert_eq!(compress(&names("n1 n01 n001")), "n1,n01,n001");
    assert_eq!(compress(&names("n5 n01 n02")), "n5,n[01-02]");
}

#[test]
fn compress_names_without_digits_stay_as_is() {
    assert_eq!(compress(&names("login login batch")), "login,batch");
}

#[test]
fn compress_ranges_only_the_last_digit_run() {
    assert_eq!(
        compress(&names("rack1-n1 rack1-n2 rack2-n1 rack2-n2")),
        "rack1-n[1-2],rack2-n[1-2]"
    );
    assert_eq!(compress(&names("n1.ib n2.ib n3")), "n[1-2].ib,n3");
}

#[test]
fn compress_empty_input() {
    let no_names: [&str; 0] = [];
    assert_eq!(compress(&no_names), "");
    assert_eq!(compress(&[""]), "");
}

#[test]
fn compress_accepts_owned_strings() {
    let owned: Vec<String> = vec!["a1".into(), "a2".into()];
    assert_eq!(compress(&owned), "a[1-2]");
}

#[test]
fn compress_passes_huge_numbers_through() {
    let huge = "n99999999999999999999999";
    assert_eq!(compress(&[huge, "n1"]), format!("{huge},n1"));
}

#[test]
fn compress_handles_u64_max_without_overflow() {
    let max = format!("n{}", u64::MAX);
    let below = format!("n{}", u64::MAX - 1);
    let compressed = compress(&[&max, &below]);
    assert_eq!(compressed, format!("n[{}-{}]", u64::MAX - 1, u64::MAX));
    assert_eq!(expanded(&compressed), vec![below, max]);
}

// --- properties ---

/// Host names built from a few prefixes, suffixes and zero paddings, so that groups,
/// padding clashes and consecutive runs all happen often.
fn host_name() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec!["n", "node", "gpu", "rack1-n", "", "a-"]);
    let suffix = prop::sample::select(vec!["", "", "", ".ib", "x"]);
    prop_oneof![
        9 => (prefix, 0u64..150, 0usize..5, suffix)
            .prop_map(|(prefix, value, width, suffix)| format!("{prefix}{value:0width$}{suffix}")),
        1 => prop::sample::select(vec!["login", "batch", "head-a"]).prop_map(str::to_owned),
    ]
}

fn dedupe_in_order(names: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .iter()
        .filter(|name| seen.insert(name.as_str()))
        .cloned()
        .collect()
}

/// A random well-formed expression: items of literal text and bracket groups.
fn expression() -> impl Strategy<Value = String> {
    let element = (0u64..60, 0u64..6, 0usize..4).prop_map(|(lo, len, width)| {
        if len == 0 {
            format!("{lo:0width$}")
        } else {
            format!("{lo:0width$}-{}", lo + len)
        }
    });
    let bracket = prop::collection::vec(element, 1..4)
        .prop_map(|elements| format!("[{}]", elements.join(",")));
    let segment = prop_oneof![
        prop::sample::select(vec!["n", "gpu", "-", "rack", ".ib"]).prop_map(str::to_owned),
        bracket
    ];
    let item = prop::collection::vec(segment, 1..4).prop_map(|segments| segments.concat());
    prop::collection::vec(item, 0..5).prop_map(|items| items.join(","))
}

proptest! {
    #[test]
    fn expand_of_compress_returns_the_same_set_byte_for_byte(names in prop::collection::vec(host_name(), 0..40)) {
        let compressed = compress(&names);
        let round_trip = expand(&compressed).unwrap();
        let original: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let returned: BTreeSet<&str> = round_trip.iter().map(String::as_str).collect();
        prop_assert_eq!(&returned, &original, "compressed as {}", compressed);
        prop_assert_eq!(round_trip.len(), returned.len(), "duplicates in expand({})", compressed);
    }

    #[test]
    fn compress_is_idempotent_through_expand(names in prop::collection::vec(host_name(), 0..40)) {
        let compressed = compress(&names);
        let expanded_again = expand(&compressed).unwrap();
        prop_assert_eq!(compress(&expanded_again), compressed.clone());
        // Re-expanding the canonical form is a fixed point too: same names, same order.
        prop_assert_eq!(expand(&compress(&expanded_again)).unwrap(), expanded_again);
    }

    #[test]
    fn compress_ignores_duplicates(names in prop::collection::vec(host_name(), 0..40)) {
        let mut doubled = names.clone();
        doubled.extend(names.iter().cloned());
        prop_assert_eq!(compress(&doubled), compress(&dedupe_in_order(&names)));
    }

    #[test]
    fn compress_of_expand_is_canonical(expr in expression()) {
        let expanded_names = expand(&expr).unwrap();
        let canonical = compress(&expanded_names);
        prop_assert_eq!(compress(&expand(&canonical).unwrap()), canonical.clone());
        let original: BTreeSet<&str> = expanded_names.iter().map(String::as_str).collect();
        let round_trip = expand(&canonical).unwrap();
        let returned: BTreeSet<&str> = round_trip.iter().map(String::as_str).collect();
        prop_assert_eq!(returned, original);
    }

    #[test]
    fn count_equals_expanded_length(expr in expression()) {
        prop_assert_eq!(count(&expr).unwrap(), expand(&expr).unwrap().len());
    }

    #[test]
    fn expand_never_panics(expr in "[a-c0-9\\[\\],\\- ]{0,16}") {
        let _ = expand(&expr);
        prop_assert_eq!(count(&expr).ok(), expand(&expr).ok().map(|names| names.len()));
    }
}
