use super::*;

fn run(node: &str, start: i64, ok: bool) -> HealthCheckRun {
    HealthCheckRun {
        node: node.into(),
        start,
        ok,
        ..Default::default()
    }
}

#[test]
fn keeps_the_last_runs_of_each_node_oldest_first() {
    let mut log = HealthLog::default();
    for t in 0..(KEEP as i64 + 5) {
        log.record(run("n1", t, true), false, None);
    }
    log.record(run("n2", 100, false), true, Some("disk full".into()));
    let n1 = log.runs(Some("n1"));
    assert_eq!(n1.len(), KEEP);
    assert_eq!(n1.first().map(|r| r.start), Some(5));
    assert_eq!(n1.last().map(|r| r.start), Some(KEEP as i64 + 4));
    let n2 = log.runs(Some("n2"));
    assert_eq!(n2.len(), 1);
    assert!(n2[0].drained);
    assert_eq!(n2[0].reason.as_deref(), Some("disk full"));
    assert_eq!(log.runs(None).len(), KEEP + 1);
    assert!(log.runs(Some("n3")).is_empty());
    log.retain(|n| n != "n1");
    assert!(log.runs(Some("n1")).is_empty());
}

#[test]
fn a_long_output_line_is_cut_on_a_character_boundary() {
    let mut log = HealthLog::default();
    let mut r = run("n1", 0, false);
    r.output = "é".repeat(OUTPUT_MAX);
    log.record(r, false, None);
    let out = &log.runs(Some("n1"))[0].output;
    assert!(out.len() <= OUTPUT_MAX);
    assert!(out.chars().all(|c| c == 'é'));
}
