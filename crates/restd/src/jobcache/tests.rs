use super::*;
use crate::json::J;
use crate::{v0038, v0044};

fn jobs() -> Vec<JobInfo> {
    let pending = JobInfo {
        job_id: model::JobId(7),
        name: "a \"quoted\"/name\twith\u{1}controls é".into(),
        user: "alice".into(),
        work_dir: "/home/alice/run".into(),
        ..JobInfo::default()
    };
    let running = JobInfo {
        job_id: model::JobId(8),
        state: model::JobState::Running,
        start_time: Some(5),
        nodes: vec!["node1".into(), "node2".into()],
        cpus_per_node: vec![2, 2],
        cpu_ids_per_node: vec![vec![0, 1], vec![2, 3]],
        ..JobInfo::default()
    };
    vec![pending, running]
}

/// The answer as the handler writes it without the cache.
fn fresh(jobs: &[JobInfo], topo: Topology<'_>, render: Render) -> String {
    let rendered = jobs.iter().map(|j| render(j, "c", topo)).collect();
    v0038::answer(false, vec![], vec![("jobs", J::Arr(rendered))]).to_slurm_string()
}

/// The jobs as the controller sends them.
fn wires(jobs: &[JobInfo]) -> JobWires {
    let list = proto::JobList {
        now: 0,
        jobs: jobs.to_vec(),
    };
    JobWires::from_list(&list).unwrap()
}

/// A listing through the cache; the topology is `topo`.
fn listing(cache: &JobCache, jobs: &[JobInfo], topo: Topology<'_>, render: Render) -> Vec<J> {
    cache.listing(&wires(jobs), "c", || topo.to_vec(), render)
}

/// The answer through the cache, written in pieces as the server sends
/// it.
fn cached(cache: &JobCache, jobs: &[JobInfo], topo: Topology<'_>, render: Render) -> String {
    let rendered = listing(cache, jobs, topo, render);
    let answer = v0038::answer(false, vec![], vec![("jobs", J::Arr(rendered))]);
    let pieces = answer.to_slurm_chunks();
    assert!(pieces.len() > jobs.len(), "each job is a piece of its own");
    let whole: Vec<u8> = pieces.iter().flat_map(|b| b.iter().copied()).collect();
    let text = String::from_utf8(whole).unwrap();
    assert_eq!(text, answer.to_slurm_string());
    text
}

#[test]
fn a_listing_is_the_same_text_with_and_without_the_cache() {
    let topo = vec![
        ("node1".to_string(), 1, 2, 1),
        ("node2".to_string(), 2, 1, 1),
    ];
    for render in [v0038::job as Render, v0044::render::job] {
        let cache = JobCache::default();
        let mut list = jobs();
        // First listing (written), second (kept), then a change.
        assert_eq!(
            cached(&cache, &list, &topo, render),
            fresh(&list, &topo, render)
        );
        assert_eq!(
            cached(&cache, &list, &topo, render),
            fresh(&list, &topo, render)
        );
        list[0].priority = 42;
        list[1].run_time = 9;
        assert_eq!(
            cached(&cache, &list, &topo, render),
            fresh(&list, &topo, render)
        );
        // Another node shape changes the running job's job_resources.
        let other = vec![
            ("node1".to_string(), 2, 1, 1),
            ("node2".to_string(), 1, 2, 1),
        ];
        assert_ne!(fresh(&list, &topo, render), fresh(&list, &other, render));
        assert_eq!(
            cached(&cache, &list, &other, render),
            fresh(&list, &other, render)
        );
        // v0.0.44's answer puts the jobs at the same indent.
        let v44 = |rendered: Vec<J>| {
            v0044::render::answer(J::Null, vec![("jobs", J::Arr(rendered))], vec![])
                .to_slurm_string()
        };
        assert_eq!(
            v44(listing(&cache, &list, &other, render)),
            v44(list.iter().map(|j| render(j, "c", &other)).collect())
        );
    }
}

#[test]
fn a_listing_keeps_only_the_jobs_it_had() {
    let cache = JobCache::default();
    let mut list = jobs();
    listing(&cache, &list, &[], v0038::job);
    assert_eq!(cache.len(), 2);
    list.remove(0);
    listing(&cache, &list, &[], v0038::job);
    assert_eq!(cache.len(), 1);
    listing(&cache, &[], &[], v0038::job);
    assert!(cache.is_empty());
}

#[test]
fn a_kept_job_is_reused_only_while_the_controller_sends_the_same() {
    let cache = JobCache::default();
    let mut list = jobs();
    let first = listing(&cache, &list, &[], v0038::job);
    let again = listing(&cache, &list, &[], v0038::job);
    let (J::Raw(a), J::Raw(b)) = (&first[0], &again[0]) else {
        panic!("not raw: {first:?}");
    };
    assert_eq!(a.as_ptr(), b.as_ptr(), "the same kept text");
    list[0].last_sched_eval = Some(100);
    let changed = listing(&cache, &list, &[], v0038::job);
    let J::Raw(c) = &changed[0] else {
        panic!("not raw: {changed:?}");
    };
    assert_ne!(a.as_ptr(), c.as_ptr());
    assert!(std::str::from_utf8(c)
        .unwrap()
        .contains("\"last_sched_evaluation\": 100"));
}

#[test]
fn the_topology_is_asked_only_when_a_job_holds_nodes() {
    let cache = JobCache::default();
    let list = jobs();
    let asked = std::cell::Cell::new(0);
    let topo = || {
        asked.set(asked.get() + 1);
        vec![
            ("node1".to_string(), 1, 2, 1),
            ("node2".to_string(), 2, 1, 1),
        ]
    };
    cache.listing(&wires(&list[..1]), "c", topo, v0038::job);
    assert_eq!(asked.get(), 0);
    cache.listing(&wires(&list), "c", topo, v0038::job);
    assert_eq!(asked.get(), 1);
    // Kept, and still asked: the shapes may have changed.
    cache.listing(&wires(&list), "c", topo, v0038::job);
    assert_eq!(asked.get(), 2);
}
