//! `muster sim` on a site's own past: real jobs run on a real cluster, their
//! history is exported with sacct, and the export is replayed.

use crate::{cluster, secs};

/// A field of `muster sim --json`'s one object (`"key":value`).
fn field<'a>(json: &'a str, key: &str) -> &'a str {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {json}"));
    let rest = &json[at + key.len() + 3..];
    rest[..rest.find([',', '}']).unwrap_or(rest.len())].trim()
}

#[test]
fn sim_replays_history_exported_with_sacct() {
    let c = cluster(2);
    // The whole cluster, two half jobs, a small one, and one that never runs.
    let wide = c.submit(&["-N", "2", "-n", "4", "-t", "1", "--wrap", "sleep 2"]);
    let halves: Vec<u32> = (0..2)
        .map(|_| c.submit(&["-N", "1", "-n", "2", "-t", "2", "--wrap", "sleep 2"]))
        .collect();
    let small = c.submit(&["-n", "1", "-t", "3", "--wrap", "sleep 3"]);
    let never = c.submit(&["--hold", "--wrap", "true"]);
    c.ok("scancel", &[&never.to_string()]);
    for id in [wide, halves[0], halves[1], small] {
        assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "job {id}");
    }
    let columns =
        "JobIDRaw,Submit,Start,End,NCPUS,NNodes,Timelimit,User,Account,Partition,NodeList";
    // Records reach the store asynchronously: wait for every job's end.
    let parsable = c.wait_until("every job's end in sacct", secs(20), || {
        let o = c.run("sacct", &["-a", "-X", "-P", "-o", columns]);
        let ended = |id: u32| {
            o.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{id}|")) && !l.contains("Unknown"))
        };
        let all = [wide, halves[0], halves[1], small].into_iter().all(ended);
        (all && o.stdout.lines().count() == 6).then_some(o.stdout)
    });
    let json = c.ok("sacct", &["-a", "-X", "--json"]).stdout;
    c.write("history.txt", &parsable);
    c.write("history.json", &json);

    for (file, extra) in [
        ("history.txt", vec![]),
        ("history.txt", vec!["--format", "sacct", "--policy", "fcfs"]),
        ("history.json", vec![]),
        // The site's own slurm.conf: its nodes and partitions.
        ("history.txt", vec!["--config", c.conf().to_str().unwrap()]),
    ] {
        let mut args = vec!["--trace", file, "--json", "--quiet", "--csv", "jobs.csv"];
        args.extend(extra.iter().copied());
        let out = c.ok("sim", &args);
        assert!(out.stderr.is_empty(), "{args:?}: {}", out.stderr);
        // Four jobs ran; the cancelled one never started and is dropped.
        assert_eq!(field(&out.stdout, "jobs"), "4", "{args:?}: {}", out.stdout);
        let util: f64 = field(&out.stdout, "utilization").parse().unwrap();
        assert!(util > 0.0 && util <= 1.0, "{}", out.stdout);
        let csv = c.read("jobs.csv");
        let rows: Vec<(u32, u32)> = csv
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[0].parse().unwrap(), f[4].parse().unwrap())
            })
            .collect();
        // The trace's job numbers are the cluster's job ids, and each job
        // asks for the CPUs it had.
        assert_eq!(
            rows,
            vec![(wide, 4), (halves[0], 2), (halves[1], 2), (small, 1)],
            "{args:?}: {csv}"
        );
        // The wide job needs the whole (inferred or configured) machine:
        // it ran on both nodes.
        let wide_row = csv.lines().nth(1).unwrap();
        assert!(wide_row.contains('['), "{args:?}: {wide_row}");
    }
    // A malformed line is refused with its number, or skipped on request.
    let mut broken = parsable.clone();
    broken.push_str("77|not a time|Unknown|Unknown|1|1|00:01:00|u|a|p|n1\n");
    c.write("broken.txt", &broken);
    let out = c.run("sim", &["--trace", "broken.txt", "--quiet"]);
    assert!(!out.ok());
    assert!(
        out.stderr
            .contains("line 7: Submit: \"not a time\" is not a time"),
        "{}",
        out.stderr
    );
    let out = c.ok(
        "sim",
        &[
            "--trace",
            "broken.txt",
            "--quiet",
            "--json",
            "--skip-bad-lines",
        ],
    );
    assert_eq!(field(&out.stdout, "jobs"), "4", "{}", out.stdout);
    assert!(out.stderr.contains("skipped line 7"), "{}", out.stderr);
}
