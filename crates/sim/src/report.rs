//! What a run measured: the summary, the per-job CSV and the picture.
//! All pure: text in, text out.

use crate::driver::{JobRecord, Sample};
use std::fmt::Write;

/// Bounded slowdown's threshold (seconds): very short jobs count as this long.
pub const TAU: f64 = 10.0;

/// The summary of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Jobs that ran.
    pub jobs: usize,
    /// sum(run x processors) / (processors x makespan).
    pub utilization: f64,
    /// Mean of start - submit (seconds).
    pub mean_wait_s: f64,
    /// Largest start - submit.
    pub max_wait_s: i64,
    /// Mean of max(1, (wait + run) / max(run, TAU)).
    pub mean_bsld: f64,
    /// Last end minus first submit.
    pub makespan_s: i64,
    /// Wall-clock seconds the simulation took.
    pub sim_seconds: f64,
    /// Jobs simulated per wall-clock second.
    pub jobs_per_s: f64,
    /// Scheduling passes.
    pub passes: u64,
}

/// Computes the summary. `procs` is the machine's processor count.
pub fn summarize(records: &[JobRecord], procs: u64, passes: u64, sim_seconds: f64) -> Summary {
    let n = records.len();
    let first = records.iter().map(|r| r.submit).min().unwrap_or(0);
    let last = records.iter().map(|r| r.end).max().unwrap_or(0);
    let makespan = last - first;
    let work: f64 = records
        .iter()
        .map(|r| (r.end - r.start) as f64 * f64::from(r.procs))
        .sum();
    let waits: Vec<i64> = records.iter().map(|r| r.start - r.submit).collect();
    let bsld: f64 = records
        .iter()
        .map(|r| {
            let run = (r.end - r.start) as f64;
            let wait = (r.start - r.submit) as f64;
            ((wait + run) / run.max(TAU)).max(1.0)
        })
        .sum();
    let mean = |x: f64| if n == 0 { 0.0 } else { x / n as f64 };
    Summary {
        jobs: n,
        utilization: if makespan > 0 && procs > 0 {
            work / (procs as f64 * makespan as f64)
        } else {
            0.0
        },
        mean_wait_s: mean(waits.iter().map(|w| *w as f64).sum()),
        max_wait_s: waits.iter().copied().max().unwrap_or(0),
        mean_bsld: mean(bsld),
        makespan_s: makespan,
        sim_seconds,
        jobs_per_s: if sim_seconds > 0.0 {
            n as f64 / sim_seconds
        } else {
            0.0
        },
        passes,
    }
}

impl Summary {
    /// The human summary.
    pub fn text(&self) -> String {
        format!(
            "jobs            {}\n\
             utilization     {:.3}\n\
             mean wait       {:.0} s\n\
             max wait        {} s\n\
             mean bsld       {:.2} (tau = 10 s)\n\
             makespan        {} s\n\
             passes          {}\n\
             simulated in    {:.2} s ({:.0} jobs/s)\n",
            self.jobs,
            self.utilization,
            self.mean_wait_s,
            self.max_wait_s,
            self.mean_bsld,
            self.makespan_s,
            self.passes,
            self.sim_seconds,
            self.jobs_per_s
        )
    }

    /// `--json`: one object.
    pub fn json(&self) -> String {
        serde_json::json!({
            "jobs": self.jobs,
            "utilization": self.utilization,
            "mean_wait_s": self.mean_wait_s,
            "max_wait_s": self.max_wait_s,
            "mean_bsld": self.mean_bsld,
            "makespan_s": self.makespan_s,
            "sim_seconds": self.sim_seconds,
            "jobs_per_s": self.jobs_per_s,
            "passes": self.passes,
        })
        .to_string()
    }
}

/// The per-job CSV: `id,submit,start,end,procs,nodes`, the nodes as a
/// hostlist of their `names` (the configuration's nodes, in its order).
pub fn csv(records: &[JobRecord], names: &[String]) -> String {
    let mut out = String::from("id,submit,start,end,procs,nodes\n");
    let mut on = Vec::new();
    for r in records {
        on.clear();
        on.extend(r.nodes.iter().map(|&i| names[i as usize].clone()));
        let _ = writeln!(
            out,
            "{},{},{},{},{},\"{}\"",
            r.id,
            r.submit,
            r.start,
            r.end,
            r.procs,
            hostlist::compress(&on)
        );
    }
    out
}

/// The picture `--svg` writes: utilization and queue length over time and
/// the wait-time distribution, drawn by `charts` (valid SVG, dated time
/// axes when the trace gives its start, `epoch`).
pub fn svg(
    title: &str,
    records: &[JobRecord],
    samples: &[Sample],
    procs: u64,
    epoch: Option<i64>,
) -> String {
    let series = |name: &str, reduce, f: &dyn Fn(&Sample) -> f64| charts::Series {
        name: name.to_string(),
        points: samples.iter().map(|s| (s.t, f(s))).collect(),
        reduce,
    };
    let time_chart = |id: &str, title: &str, y_label: &str, y_max, s| {
        charts::TimeChart {
            id: id.to_string(),
            title: title.to_string(),
            y_label: y_label.to_string(),
            y_max,
            epoch,
            series: vec![s],
            width: 900.0,
            height: 260.0,
        }
        .render()
    };
    let per_cent = 100.0 / procs.max(1) as f64;
    let util = time_chart(
        "utilization",
        "Utilization",
        "busy processors (%)",
        Some(100.0),
        series("mean busy", charts::Reduce::Mean, &|s| {
            s.busy as f64 * per_cent
        }),
    );
    let queue = time_chart(
        "queue",
        "Queue length",
        "jobs waiting",
        None,
        series("most waiting", charts::Reduce::Max, &|s| s.queued as f64),
    );
    let waits = charts::BarChart {
        id: "waits".to_string(),
        title: "Wait time".to_string(),
        x_label: "time from submission to start".to_string(),
        y_label: "jobs".to_string(),
        bars: charts::wait_bins(records.iter().map(|r| r.start - r.submit)),
        log_y: true,
        width: 900.0,
        height: 260.0,
    }
    .render();
    charts::stack(title, &[util, queue, waits])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64, submit: i64, start: i64, end: i64, procs: u32) -> JobRecord {
        JobRecord {
            id,
            submit,
            start,
            end,
            procs,
            nodes: vec![0],
        }
    }

    #[test]
    fn summary_follows_the_definitions() {
        // 2 processors; job 1 runs 0..100 on 2, job 2 waits 100 and runs 5 on 1.
        let r = [rec(1, 0, 0, 100, 2), rec(2, 0, 100, 105, 1)];
        let s = summarize(&r, 2, 3, 0.5);
        assert_eq!(s.jobs, 2);
        assert_eq!(s.makespan_s, 105);
        assert!((s.utilization - 205.0 / 210.0).abs() < 1e-9);
        assert_eq!(s.mean_wait_s, 50.0);
        assert_eq!(s.max_wait_s, 100);
        // bsld: job 1: 1; job 2: (100 + 5) / max(5, 10) = 10.5.
        assert!((s.mean_bsld - 5.75).abs() < 1e-9);
        assert_eq!(s.jobs_per_s, 4.0);
        let json: serde_json::Value = serde_json::from_str(&s.json()).unwrap();
        for key in [
            "jobs",
            "utilization",
            "mean_wait_s",
            "max_wait_s",
            "mean_bsld",
            "makespan_s",
            "sim_seconds",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn csv_and_svg() {
        let mut r = [rec(1, 0, 0, 100, 2), rec(2, 5, 100, 110, 4)];
        r[1].nodes = vec![1, 2, 0, 4];
        let names: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        assert_eq!(
            csv(&r, &names),
            "id,submit,start,end,procs,nodes\n1,0,0,100,2,\"n1\"\n2,5,100,110,4,\"n[1-3,5]\"\n"
        );
        let samples = [
            Sample {
                t: 0,
                busy: 2,
                queued: 0,
            },
            Sample {
                t: 100,
                busy: 0,
                queued: 0,
            },
        ];
        let pic = svg("t <1>", &r, &samples, 2, Some(1_700_000_000));
        let xml = roxmltree::Document::parse(&pic).expect("valid XML");
        let texts: Vec<&str> = xml.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.contains(&"t <1>"));
        assert!(texts.contains(&"< 1 min"), "{texts:?}");
        assert!(texts.contains(&"time (UTC)"));
    }
}

/// `muster sim --topology`: how compactly multi-node jobs were placed.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoReport {
    /// `switches` (leaf switches, topology/tree) or `blocks`.
    pub unit: &'static str,
    /// Jobs that ran on more than one node.
    pub multi_node_jobs: usize,
    /// Mean leaves (blocks) each of them spanned.
    pub mean_spanned: f64,
    /// How many spanned 1, 2, 3 and 4 or more.
    pub spanned: [usize; 4],
    /// Share of them that spanned more leaves than their node count needs
    /// (`ceil(nodes / largest leaf)`): the fragmented ones.
    pub fragmented: f64,
}

/// The report for `records` on a cluster whose node `i` sits under leaf
/// `leaf_of[i]` (None: under none; each such node counts as a leaf of its
/// own); `largest` is the largest leaf's node count.
pub fn topology(
    records: &[JobRecord],
    leaf_of: &[Option<u32>],
    largest: usize,
    unit: &'static str,
) -> TopoReport {
    let mut n = 0usize;
    let mut sum = 0usize;
    let mut spanned = [0usize; 4];
    let mut fragmented = 0usize;
    let mut leaves: Vec<i64> = Vec::new();
    for r in records.iter().filter(|r| r.nodes.len() > 1) {
        leaves.clear();
        leaves.extend(r.nodes.iter().map(|&i| {
            leaf_of
                .get(i as usize)
                .copied()
                .flatten()
                .map_or(-1 - i64::from(i), i64::from)
        }));
        leaves.sort_unstable();
        leaves.dedup();
        let k = leaves.len();
        n += 1;
        sum += k;
        spanned[k.clamp(1, 4) - 1] += 1;
        if k > r.nodes.len().div_ceil(largest.max(1)) {
            fragmented += 1;
        }
    }
    let share = |x: usize| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    TopoReport {
        unit,
        multi_node_jobs: n,
        mean_spanned: share(sum),
        spanned,
        fragmented: share(fragmented),
    }
}

impl TopoReport {
    /// Lines after the summary.
    pub fn text(&self) -> String {
        format!(
            "multi-node jobs {}\n\
             {:<15} mean {:.2}; 1: {}, 2: {}, 3: {}, 4+: {}\n\
             fragmented      {:.1} % (more {} than their node count needs)\n",
            self.multi_node_jobs,
            format!("{} spanned", self.unit),
            self.mean_spanned,
            self.spanned[0],
            self.spanned[1],
            self.spanned[2],
            self.spanned[3],
            self.fragmented * 100.0,
            self.unit
        )
    }

    /// The `topology` member of `--json`'s object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "unit": self.unit,
            "multi_node_jobs": self.multi_node_jobs,
            "mean_spanned": self.mean_spanned,
            "spanned_1": self.spanned[0],
            "spanned_2": self.spanned[1],
            "spanned_3": self.spanned[2],
            "spanned_4_or_more": self.spanned[3],
            "fragmented": self.fragmented,
        })
    }
}
