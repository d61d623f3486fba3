use super::*;

#[test]
fn the_counter_is_read_from_v1_oom_control_and_v2_events() {
    let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
    assert_eq!(parse_oom_kill(v1), Some(3));
    let v2 = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
    assert_eq!(parse_oom_kill(v2), Some(1));
    // Kernels before 4.13 have no counter.
    assert_eq!(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n"), None);
}

#[test]
fn v1_sums_the_step_and_every_task_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step_0");
    for (sub, n) in [("", 0), ("task_0", 0), ("task_1", 2), ("task_2", 1)] {
        let d = step.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("memory.oom_control"),
            format!("oom_kill_disable 0\nunder_oom 0\noom_kill {n}\n"),
        )
        .unwrap();
    }
    assert_eq!(v1_oom_kills(&step), 3);
    // A step cgroup that is not there counts nothing.
    assert_eq!(v1_oom_kills(&dir.path().join("gone")), 0);
}

#[test]
fn v2_reads_the_step_cgroups_hierarchical_events() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.events"),
        "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n",
    )
    .unwrap();
    assert_eq!(v2_oom_kills(dir.path()), 2);
}

#[test]
fn the_detected_line_is_slurmstepds() {
    // Slurm 22.05's text, singular and plural.
    assert_eq!(
        detected_line(1, "12.0"),
        "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. \
         Some of the step tasks have been OOM Killed.\n"
    );
    assert_eq!(
        detected_line(3, "20294700.batch"),
        "slurmstepd: error: Detected 3 oom_kill events in StepId=20294700.batch. \
         Some of the step tasks have been OOM Killed.\n"
    );
}
