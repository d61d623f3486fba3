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

/// Wait-time classes of the histogram: (label, upper bound in seconds).
const WAIT_CLASSES: &[(&str, i64)] = &[
    ("0", 1),
    ("<1m", 60),
    ("<10m", 600),
    ("<1h", 3_600),
    ("<6h", 21_600),
    ("<1d", 86_400),
    ("<1w", 604_800),
    (">=1w", i64::MAX),
];

/// An SVG picture: utilization and queue length over time, and the
/// wait-time distribution.
pub fn svg(title: &str, records: &[JobRecord], samples: &[Sample], procs: u64) -> String {
    const W: f64 = 900.0;
    const PLOT_H: f64 = 180.0;
    const LEFT: f64 = 60.0;
    let width = W - LEFT - 20.0;
    let t_end = samples.last().map_or(1, |s| s.t).max(1) as f64;
    // Each pixel column shows the mean use and the largest queue in it.
    let cols = width as usize;
    let mut use_sum = vec![0.0f64; cols];
    let mut use_time = vec![0.0f64; cols];
    let mut queue_max = vec![0u64; cols];
    for w in samples.windows(2) {
        let (a, b) = (w[0], w[1]);
        let col = ((a.t as f64 / t_end) * (cols - 1) as f64) as usize;
        let dt = (b.t - a.t) as f64;
        use_sum[col] += a.busy as f64 * dt;
        use_time[col] += dt;
        queue_max[col] = queue_max[col].max(a.queued);
    }
    let q_top = queue_max.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut util_pts = String::new();
    let mut queue_pts = String::new();
    let mut last_util = 0.0;
    for c in 0..cols {
        if use_time[c] > 0.0 {
            last_util = use_sum[c] / use_time[c] / procs.max(1) as f64;
        }
        let x = LEFT + c as f64;
        let _ = write!(util_pts, "{x:.1},{:.1} ", 40.0 + PLOT_H * (1.0 - last_util));
        let q = queue_max[c] as f64 / q_top;
        let _ = write!(queue_pts, "{x:.1},{:.1} ", 260.0 + PLOT_H * (1.0 - q));
    }
    let mut counts = vec![0usize; WAIT_CLASSES.len()];
    for r in records {
        let wait = r.start - r.submit;
        let k = WAIT_CLASSES
            .iter()
            .position(|(_, hi)| wait < *hi)
            .unwrap_or(WAIT_CLASSES.len() - 1);
        counts[k] += 1;
    }
    let c_top = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"720\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"20\" font-size=\"15\">{}</text>",
        xml_escape(title)
    );
    for (y0, label, top) in [
        (40.0, "utilization", "100%".to_string()),
        (260.0, "queued jobs", format!("{}", q_top as u64)),
    ] {
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{y0}\" width=\"{width}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"#999\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{top}</text>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\
             <text x=\"{}\" y=\"{}\">{label}</text>",
            LEFT - 4.0,
            y0 + 10.0,
            LEFT - 4.0,
            y0 + PLOT_H,
            LEFT + 4.0,
            y0 + 14.0
        );
    }
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"{util_pts}\"/>"
    );
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#d62728\" points=\"{queue_pts}\"/>"
    );
    let days = t_end / 86_400.0;
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">time: {days:.1} days</text>",
        LEFT + width,
        260.0 + PLOT_H + 16.0
    );
    let y0 = 480.0;
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"{}\">wait time (jobs)</text>",
        y0 - 4.0
    );
    let bar_w = width / WAIT_CLASSES.len() as f64;
    for (k, (label, _)) in WAIT_CLASSES.iter().enumerate() {
        let h = PLOT_H * counts[k] as f64 / c_top;
        let x = LEFT + k as f64 * bar_w;
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#2ca02c\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            x + 4.0,
            y0 + PLOT_H - h,
            bar_w - 8.0,
            x + bar_w / 2.0,
            y0 + PLOT_H - h - 4.0,
            counts[k],
            x + bar_w / 2.0,
            y0 + PLOT_H + 16.0
        );
    }
    s.push_str("</svg>\n");
    s
}

fn xml_escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
        let pic = svg("t <1>", &r, &samples, 2);
        assert!(pic.starts_with("<svg"));
        assert!(pic.contains("t &lt;1&gt;"));
        assert!(pic.trim_end().ends_with("</svg>"));
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
