use super::*;

/// Parses `doc` as XML (what a browser does with an .svg file) and returns
/// the text of every element with `tag`.
fn texts(doc: &str, tag: &str) -> Vec<String> {
    let xml = roxmltree::Document::parse(doc).unwrap_or_else(|e| panic!("invalid XML: {e}\n{doc}"));
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    xml.descendants()
        .filter(|n| n.tag_name().name() == tag)
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

fn util_chart(epoch: Option<i64>) -> TimeChart {
    TimeChart {
        id: "util".into(),
        title: "Utilization & queue <test>".into(),
        y_label: "utilization (%)".into(),
        y_max: Some(100.0),
        epoch,
        series: vec![Series {
            name: "busy".into(),
            points: (0..1_000)
                .map(|i| (i * 600, (i % 10) as f64 * 10.0))
                .collect(),
            reduce: Reduce::Mean,
        }],
        width: 900.0,
        height: 260.0,
    }
}

#[test]
fn value_ticks_are_round_and_cover_the_top() {
    assert_eq!(
        value_ticks(100.0, 5),
        (vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0], 100.0)
    );
    let (t, top) = value_ticks(37.0, 5);
    assert_eq!(t, vec![0.0, 10.0, 20.0, 30.0, 40.0]);
    assert_eq!(top, 40.0);
    assert_eq!(value_ticks(0.0, 5).1, 1.0);
    assert_eq!(value_label(25_000.0), "25k");
    assert_eq!(value_label(2.5), "2.5");
    assert_eq!(value_label(3_000_000.0), "3M");
}

#[test]
fn civil_dates_match_known_days() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    assert_eq!(civil_from_days(20_794), (2026, 12, 7));
}

#[test]
fn time_ticks_fall_on_whole_steps() {
    // 2026-12-07 00:00 UTC, three days: daily ticks at midnights.
    let t0 = 20_794 * 86_400 + 3_600;
    let ticks = time_ticks(t0, t0 + 3 * 86_400, 8, true);
    assert!(ticks.len() >= 3 && ticks.len() <= 8, "{ticks:?}");
    assert!(ticks.iter().all(|(t, _)| t % 21_600 == 0));
    assert!(ticks
        .iter()
        .any(|(_, l)| l.starts_with("12-08") || l == "2026-12-08"));
    // Relative: two hours from the start in 15-minute steps.
    let rel = time_ticks(0, 7_200, 8, false);
    assert_eq!(rel.first().unwrap(), &(0, "00:00".to_string()));
    assert_eq!(rel.last().unwrap().1, "02:00");
    assert_eq!(time_ticks(0, 40 * 86_400, 8, false)[1].1, "day 7");
}

#[test]
fn time_chart_is_valid_svg_with_axes_legend_and_text_alternative() {
    for epoch in [None, Some(1_700_000_000)] {
        let doc = util_chart(epoch).render();
        let titles = texts(&doc, "title");
        assert_eq!(titles[0], "Utilization & queue <test>");
        let desc = texts(&doc, "desc");
        assert!(desc[0].starts_with("utilization (%), from "), "{desc:?}");
        assert!(desc[0].contains("busy: between 0 and 90."), "{desc:?}");
        let labels = texts(&doc, "text");
        assert!(labels.contains(&"100".to_string()));
        assert!(labels.contains(&"utilization (%)".to_string()));
        assert!(labels.contains(&"busy".to_string()), "legend");
        let axis = if epoch.is_some() {
            "time (UTC)"
        } else {
            "time since the start"
        };
        assert!(labels.contains(&axis.to_string()));
        // At least three time ticks, each a date or a day.
        let dated = labels
            .iter()
            .filter(|l| l.starts_with("day ") || l.starts_with("2023-") || l.starts_with("11-"))
            .count();
        assert!(dated >= 3, "{labels:?}");
    }
}

#[test]
fn mean_reduction_weighs_by_time() {
    let s = Series {
        name: "x".into(),
        // 0 for 90 s then 100 for 10 s: one column holds all of it.
        points: vec![(0, 0.0), (90, 100.0)],
        reduce: Reduce::Mean,
    };
    let cols = TimeChart::columns(&s, 0, 100, 1);
    assert!((cols[0].unwrap() - 10.0).abs() < 1e-9, "{cols:?}");
    let max = Series {
        reduce: Reduce::Max,
        ..s
    };
    assert_eq!(TimeChart::columns(&max, 0, 100, 1)[0], Some(100.0));
}

#[test]
fn wait_histogram_is_valid_log_scaled_and_keeps_title_clear_of_bars() {
    let bars = wait_bins([0, 5, 59, 60, 700, 4_000, 90_000, 700_000, 700_000]);
    assert_eq!(bars[0], ("0 s".to_string(), 1.0));
    assert_eq!(bars[1], ("< 1 min".to_string(), 2.0));
    assert_eq!(bars[7], ("≥ 7 d".to_string(), 2.0));
    let chart = BarChart {
        id: "wait".into(),
        title: "Wait time".into(),
        x_label: "wait".into(),
        y_label: "jobs".into(),
        bars,
        log_y: true,
        width: 900.0,
        height: 260.0,
    };
    let doc = chart.render();
    let labels = texts(&doc, "text");
    assert!(labels.contains(&"< 1 min".to_string()));
    assert!(labels.contains(&"jobs (log scale)".to_string()));
    // Every count label sits below the title's baseline (y=20) and its
    // line: the tallest bar's count is inside the plot's top margin.
    let xml = roxmltree::Document::parse(&doc).unwrap();
    for n in xml.descendants().filter(|n| n.tag_name().name() == "text") {
        if n.attribute("font-size") == Some("15") {
            continue;
        }
        let y: f64 = n.attribute("y").unwrap().parse().unwrap();
        assert!(y >= 36.0, "{:?} at y={y} overlaps the title", n.text());
    }
    let table = chart.html_table();
    assert!(table.contains("<td>&lt; 1 min</td><td>2</td>"), "{table}");
}

#[test]
fn stacked_charts_are_one_valid_document() {
    let a = util_chart(None).render();
    let b = BarChart {
        id: "b".into(),
        title: "b".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        bars: vec![("a".into(), 1.0)],
        log_y: false,
        width: 900.0,
        height: 200.0,
    }
    .render();
    let doc = stack("sim <kth>", &[a, b]);
    let xml = roxmltree::Document::parse(&doc).unwrap();
    let root = xml.root_element();
    assert_eq!(root.attribute("height"), Some("492"));
    assert_eq!(
        root.children()
            .filter(|n| n.tag_name().name() == "svg")
            .count(),
        2
    );
}

#[test]
fn slowdown_bins_bound_short_jobs_and_count_each_job_once() {
    // No wait: 1; 5 s run waiting 5 s: bounded by 10 s, still 1.
    assert_eq!(bounded_slowdown(0, 100, 10.0), 1.0);
    assert_eq!(bounded_slowdown(5, 5, 10.0), 1.0);
    assert_eq!(bounded_slowdown(100, 100, 10.0), 2.0);
    assert_eq!(bounded_slowdown(1_000, 1, 10.0), 100.1);
    let bars = slowdown_bins([1.0, 1.0, 1.5, 2.0, 7.0, 100.1]);
    let counts: Vec<f64> = bars.iter().map(|b| b.1).collect();
    assert_eq!(counts, vec![2.0, 1.0, 1.0, 1.0, 0.0, 1.0]);
    assert_eq!(bars[0].0, "1");
}
