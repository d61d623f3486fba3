//! The pages, as functions from the controller's answers to HTML: no I/O
//! here, so each is tested with made-up data (`tests`).

use super::html::{badge, duration, esc, table, time};
use model::{JobState, Timestamp};
use proto::health::HealthCheckRun;
use proto::{AcctJob, JobInfo, NodeInfo, PartitionInfo, ShareRow};
use proto::{JobRows, PackedRow};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One job of the lists, borrowed from the controller's compact answer
/// (`JobFilter::rows`): its texts are the answer's, shared by every job
/// that names them, so a queue of 10,000 costs no text per job.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    /// The row.
    pub row: &'a PackedRow,
    rows: &'a JobRows,
}

impl<'a> Job<'a> {
    /// The job's name.
    pub fn name(&self) -> &'a str {
        self.rows.text(self.row.name)
    }
    /// Its user's name.
    pub fn user(&self) -> &'a str {
        self.rows.text(self.row.user)
    }
    /// Its partition (or partitions, comma-separated, while pending).
    pub fn partition(&self) -> &'a str {
        self.rows.text(self.row.partition)
    }
    /// The names of its nodes.
    pub fn nodes(&self) -> impl Iterator<Item = &'a str> + 'a {
        let rows = self.rows;
        self.row.nodes().iter().map(move |i| rows.text(*i))
    }
    /// Its id as squeue prints it (`12_3` for array tasks).
    pub fn id_str(&self) -> String {
        match (self.row.array_job_id(), self.row.array_task_id()) {
            (Some(a), Some(t)) => format!("{a}_{t}"),
            _ => self.row.job_id.0.to_string(),
        }
    }
}

/// Every job of an answer.
pub fn jobs(rows: &JobRows) -> impl Iterator<Item = Job<'_>> + '_ {
    rows.rows().map(move |row| Job { row, rows })
}

/// A node's GRES as `gpu:2 (1 used)`.
fn gres_words(n: &NodeInfo) -> String {
    n.gres
        .iter()
        .map(|g| {
            let used: u64 = n
                .gres_used
                .iter()
                .filter(|u| u.name == g.name && u.type_ == g.type_)
                .map(|u| u.count)
                .sum();
            let kind = match &g.type_ {
                Some(t) => format!("{}:{t}", g.name),
                None => g.name.clone(),
            };
            format!("{kind}:{} ({used} used)", g.count)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn pct(part: u64, whole: u64) -> u64 {
    (part * 100).checked_div(whole).unwrap_or(0)
}

/// The node grid: one tile per node, its state in words and colour, its
/// CPU, memory and GPU use.
pub fn node_grid(nodes: &[NodeInfo]) -> String {
    let mut s = String::from("<div class=\"grid\" id=\"nodes\">");
    for n in nodes {
        let state = n.state.sinfo_long();
        let cpu = pct(u64::from(n.alloc_cpus), u64::from(n.cpus));
        let _ = write!(
            s,
            "<a class=\"node {cls}\" href=\"/nodes/{name}\" data-node=\"{name}\" data-state=\"{st}\">\
             <b>{name}</b>{badge}<br>CPU {a}/{t}<div class=\"bar\" role=\"img\" aria-label=\"CPU {cpu}% allocated\"><span style=\"width:{cpu}%\"></span></div>\
             mem {am}/{tm} MB",
            cls = super::html::state_class(&state),
            name = esc(&n.name),
            st = esc(&state),
            badge = badge(&state),
            a = n.alloc_cpus,
            t = n.cpus,
            am = n.alloc_mem,
            tm = n.real_memory,
        );
        let g = gres_words(n);
        if !g.is_empty() {
            let _ = write!(s, "<br>{}", esc(&g));
        }
        s.push_str("</a>");
    }
    s.push_str("</div>");
    s
}

/// Partitions with their load: CPUs allocated of their nodes' CPUs, jobs
/// running and pending (a pending job that may run in several counts in
/// each).
pub fn partitions_table(parts: &[PartitionInfo], nodes: &[NodeInfo], jobs: &JobRows) -> String {
    let by_name: BTreeMap<&str, &NodeInfo> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    // Counted by the partition text's index first: a few distinct texts,
    // however many jobs.
    let mut by_text: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for row in jobs.rows() {
        let c = by_text.entry(row.partition).or_default();
        match row.state {
            JobState::Running => c.0 += 1,
            JobState::Pending => c.1 += 1,
            _ => {}
        }
    }
    let mut by_part: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (text, (running, pending)) in &by_text {
        for p in jobs.text(*text).split(',') {
            let c = by_part.entry(p).or_default();
            c.0 += running;
            c.1 += pending;
        }
    }
    let rows: Vec<Vec<String>> = parts
        .iter()
        .map(|p| {
            let (mut alloc, mut total) = (0u64, 0u64);
            for name in &p.nodes {
                if let Some(n) = by_name.get(name.as_str()) {
                    alloc += u64::from(n.alloc_cpus);
                    total += u64::from(n.cpus);
                }
            }
            let (running, pending) = by_part.get(p.name.as_str()).copied().unwrap_or_default();
            vec![
                format!("{}{}", esc(&p.name), if p.default { "*" } else { "" }),
                esc(&p.state),
                p.nodes.len().to_string(),
                format!("{alloc}/{total} ({}%)", pct(alloc, total)),
                running.to_string(),
                pending.to_string(),
            ]
        })
        .collect();
    table(
        "Partitions",
        &[
            "partition",
            "state",
            "nodes",
            "CPUs allocated",
            "running jobs",
            "pending jobs",
        ],
        &rows,
    )
}

/// The queue at a glance: running, and pending by reason (counts only:
/// the queue itself is `/jobs`' to list).
pub fn queue_summary(jobs: &JobRows) -> String {
    let mut running = 0usize;
    let mut by_reason: BTreeMap<&'static str, usize> = BTreeMap::new();
    for row in jobs.rows() {
        match row.state {
            JobState::Running => running += 1,
            JobState::Pending => *by_reason.entry(row.reason.as_slurm_str()).or_default() += 1,
            _ => {}
        }
    }
    let pending: usize = by_reason.values().sum();
    let rows: Vec<Vec<String>> = by_reason
        .iter()
        .map(|(r, n)| {
            vec![
                format!(
                    "<a href=\"/jobs?state=PENDING&amp;reason={}\">{}</a>",
                    esc(r),
                    esc(r)
                ),
                n.to_string(),
            ]
        })
        .collect();
    format!(
        "<p id=\"queue\"><strong>{running}</strong> running, <strong>{pending}</strong> pending.</p>{}",
        table("Pending jobs by reason", &["reason", "jobs"], &rows)
    )
}

/// Allocated CPUs over `[from, to]` as a step series, from the jobs that ran
/// in that window (accounting records and running jobs alike).
pub fn busy_series(
    spans: &[(Timestamp, Option<Timestamp>, u32)],
    from: i64,
    to: i64,
) -> Vec<(i64, f64)> {
    let mut delta: BTreeMap<i64, i64> = BTreeMap::new();
    delta.entry(from).or_default();
    for (start, end, cpus) in spans {
        let s = (*start).max(from);
        let e = end.unwrap_or(i64::MAX);
        if e <= s || s > to {
            continue;
        }
        *delta.entry(s).or_default() += i64::from(*cpus);
        // A job still running at the window's end holds its CPUs to it.
        if e < to {
            *delta.entry(e).or_default() -= i64::from(*cpus);
        }
    }
    let mut level = 0i64;
    let mut out = Vec::with_capacity(delta.len());
    for (t, d) in delta {
        level += d;
        out.push((t, level as f64));
    }
    if !matches!(out.last(), Some(p) if p.0 >= to) {
        out.push((to, level as f64));
    }
    out
}

/// How many jobs one page of `/jobs` lists: a queue of 10,000 is a
/// few pages' links, not a 3 MB table.
pub const JOBS_PER_PAGE: usize = 200;

/// `/jobs`' query: filters, sort key and page (1-based).
#[derive(Debug, Default)]
pub struct JobQuery<'a> {
    /// A user name (exact).
    pub user: &'a str,
    /// A partition the job may run in.
    pub partition: &'a str,
    /// A state word (`PENDING`, any case).
    pub state: &'a str,
    /// Part of the job's name.
    pub name: &'a str,
    /// A pending reason (`Resources`), from the overview's links.
    pub reason: &'a str,
    /// `id` (default), `user`, `name`, `state` or `priority`.
    pub sort: &'a str,
    /// The page, from 1.
    pub page: usize,
}

impl JobQuery<'_> {
    /// The query's link to another page of the same list.
    fn link(&self, page: usize) -> String {
        let mut s = String::from("/jobs?");
        for (k, v) in [
            ("user", self.user),
            ("partition", self.partition),
            ("state", self.state),
            ("name", self.name),
            ("reason", self.reason),
            ("sort", self.sort),
        ] {
            if !v.is_empty() {
                let _ = write!(s, "{k}={}&", super::html::url_enc(v));
            }
        }
        let _ = write!(s, "page={page}");
        s
    }
}

/// The jobs `q` selects, sorted as it asks: views, no copies.
pub fn select_jobs<'a>(jobs: &'a JobRows, q: &JobQuery) -> Vec<Job<'a>> {
    let mut shown: Vec<Job<'a>> = self::jobs(jobs)
        .filter(|j| q.user.is_empty() || j.user() == q.user)
        .filter(|j| q.partition.is_empty() || j.partition().split(',').any(|p| p == q.partition))
        .filter(|j| q.state.is_empty() || j.row.state.as_slurm_str().eq_ignore_ascii_case(q.state))
        .filter(|j| q.name.is_empty() || j.name().contains(q.name))
        .filter(|j| q.reason.is_empty() || j.row.reason.as_slurm_str() == q.reason)
        .collect();
    let id = |j: &Job| j.row.job_id;
    match q.sort {
        "user" => shown.sort_by(|a, b| a.user().cmp(b.user()).then(id(a).cmp(&id(b)))),
        "name" => shown.sort_by(|a, b| a.name().cmp(b.name()).then(id(a).cmp(&id(b)))),
        "state" => shown.sort_by(|a, b| {
            a.row
                .state
                .as_slurm_str()
                .cmp(b.row.state.as_slurm_str())
                .then(id(a).cmp(&id(b)))
        }),
        "priority" => {
            shown.sort_by(|a, b| b.row.priority.cmp(&a.row.priority).then(id(a).cmp(&id(b))))
        }
        _ => shown.sort_by_key(|j| j.row.job_id),
    }
    shown
}

/// `/jobs`' list: how many match, one page of them ([`JOBS_PER_PAGE`])
/// and links to the others.
pub fn jobs_listing(jobs: &JobRows, q: &JobQuery) -> String {
    let shown = select_jobs(jobs, q);
    let n_pages = shown.len().div_ceil(JOBS_PER_PAGE).max(1);
    let page = q.page.clamp(1, n_pages);
    let from = (page - 1) * JOBS_PER_PAGE;
    let to = (from + JOBS_PER_PAGE).min(shown.len());
    let mut s = String::new();
    let _ = write!(
        s,
        "<p id=\"shown\">Showing {} of {} jobs.</p>",
        if shown.is_empty() {
            "0".to_string()
        } else {
            format!("{}\u{2013}{}", from + 1, to)
        },
        shown.len(),
    );
    let pager = if n_pages > 1 {
        let mut p = String::from("<nav class=\"pager\" aria-label=\"pages\">");
        if page > 1 {
            let _ = write!(
                p,
                "<a href=\"{}\" rel=\"prev\">previous</a> ",
                esc(&q.link(page - 1))
            );
        }
        let _ = write!(p, "page {page} of {n_pages}");
        if page < n_pages {
            let _ = write!(
                p,
                " <a href=\"{}\" rel=\"next\">next</a>",
                esc(&q.link(page + 1))
            );
        }
        p.push_str("</nav>");
        p
    } else {
        String::new()
    };
    s.push_str(&pager);
    s.push_str(&jobs_table(&shown[from..to], jobs.now));
    s.push_str(&pager);
    s
}

/// The jobs table.
pub fn jobs_table(jobs: &[Job], now: Timestamp) -> String {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            let r = j.row;
            let t = match r.start_time() {
                Some(s) if r.state == JobState::Running => duration(now - s),
                _ => "0:00".to_string(),
            };
            vec![
                format!("<a href=\"/jobs/{id}\">{id}</a>", id = esc(&j.id_str())),
                esc(j.name()),
                esc(j.user()),
                esc(j.partition()),
                esc(r.state.as_slurm_str()),
                esc(&if r.state == JobState::Pending {
                    r.reason.as_slurm_str().to_string()
                } else {
                    hostlist::compress(&j.nodes().collect::<Vec<_>>())
                }),
                t,
                model::units::format_time_limit(r.time_limit()),
            ]
        })
        .collect();
    table(
        "Jobs",
        &[
            "job",
            "name",
            "user",
            "partition",
            "state",
            "nodes (reason)",
            "time",
            "time limit",
        ],
        &rows,
    )
}

/// A job's id as squeue prints it (`12_3` for array tasks).
pub fn job_id_str(j: &JobInfo) -> String {
    match (j.array_job_id, j.array_task_id) {
        (Some(a), Some(t)) => format!("{a}_{t}"),
        _ => j.job_id.0.to_string(),
    }
}

/// A job's fields, in `scontrol show job`'s order and names.
pub fn job_fields(j: &JobInfo) -> String {
    let opt_t = |t: Option<Timestamp>| t.map_or("Unknown".to_string(), time);
    let rows: Vec<Vec<String>> = [
        ("JobId", j.job_id.0.to_string()),
        ("JobName", j.name.clone()),
        ("UserId", format!("{}({})", j.user, j.uid)),
        ("Account", j.account.clone()),
        ("QOS", j.qos.clone()),
        ("Partition", j.partition.clone()),
        ("JobState", j.state.as_slurm_str().to_string()),
        ("Reason", j.reason.as_slurm_str().to_string()),
        ("Priority", j.priority.to_string()),
        ("SubmitTime", time(j.submit_time)),
        ("StartTime", opt_t(j.start_time)),
        ("EndTime", opt_t(j.end_time)),
        ("TimeLimit", model::units::format_time_limit(j.time_limit)),
        ("NumNodes", j.num_nodes.to_string()),
        ("NumCPUs", j.num_cpus.to_string()),
        ("TRES", j.tres.clone()),
        ("NodeList", hostlist::compress(&j.nodes)),
        ("WorkDir", j.work_dir.clone()),
        ("StdOut", j.stdout.clone()),
        ("ExitCode", j.exit_code.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| vec![esc(k), esc(&v)])
    .collect();
    table("Fields", &["field", "value"], &rows)
}

/// Action buttons (cancel, hold, release, requeue) as forms that post with
/// the anti-forgery token.
pub fn job_actions(j: &JobInfo, csrf: &str) -> String {
    let mut acts: Vec<(&str, &str)> = Vec::new();
    match j.state {
        JobState::Pending => {
            acts.push(("cancel", "Cancel"));
            if j.priority == 0 {
                acts.push(("release", "Release"));
            } else {
                acts.push(("hold", "Hold"));
            }
        }
        JobState::Running | JobState::Suspended => {
            acts.push(("cancel", "Cancel"));
            acts.push(("requeue", "Requeue"));
        }
        _ => {}
    }
    let mut s = String::from("<div id=\"actions\">");
    for (act, label) in acts {
        let _ = write!(
            s,
            "<form class=\"inline\" method=\"post\" action=\"/jobs/{}/{act}\">{}<button type=\"submit\" name=\"do\" value=\"{act}\">{label}</button></form>",
            j.job_id.0,
            super::html::csrf_field(csrf)
        );
    }
    s.push_str("</div>");
    s
}

/// The fair-share tree as `sshare` shows it, indented by depth.
pub fn fairshare_table(rows: &[ShareRow]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let indent = "&nbsp;".repeat(2 * r.depth as usize);
            vec![
                format!("{indent}{}", esc(&r.account)),
                esc(&r.user),
                r.raw_shares.map_or("parent".to_string(), |v| v.to_string()),
                format!("{:.6}", r.norm_shares),
                format!("{:.0}", r.raw_usage),
                format!("{:.6}", r.effective_usage),
                r.fairshare.map_or(String::new(), |f| format!("{f:.6}")),
            ]
        })
        .collect();
    table(
        "Fair Tree",
        &[
            "account",
            "user",
            "raw shares",
            "norm shares",
            "raw usage",
            "effective usage",
            "fair-share factor",
        ],
        &rows,
    )
}

/// A job's steps with what they used, as `sacct` and `sstat` show them:
/// the steps accounting holds (finished and running), then the running
/// steps it does not hold yet; a running step's usage is its nodes' live
/// report (`sstat`) where one came, else what accounting recorded.
pub fn steps_table(
    job: model::JobId,
    running: &[&proto::StepInfo],
    acct: &[proto::AcctStep],
    live: &[proto::LiveStepStat],
    now: Timestamp,
) -> String {
    let live_usage = |step: &proto::StepId| live.iter().find(|l| l.step == *step).map(|l| &l.usage);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |id: String,
                   name: &str,
                   state: JobState,
                   exit: String,
                   start: Option<Timestamp>,
                   end: Option<Timestamp>,
                   nodes: &str,
                   tasks: u32,
                   cpus: u32,
                   usage: Option<&proto::StepUsage>| {
        let total = usage.and_then(|u| match (u.user_cpu_usec, u.sys_cpu_usec) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        });
        rows.push(vec![
            esc(&id),
            esc(name),
            esc(state.as_slurm_str()),
            exit,
            start.map(time).unwrap_or_default(),
            start
                .map(|st| duration(end.unwrap_or(now) - st))
                .unwrap_or_default(),
            esc(nodes),
            tasks.to_string(),
            cpus.to_string(),
            total.map(cpu_time).unwrap_or_default(),
            usage
                .and_then(|u| u.ave_cpu_usec)
                .map(cpu_time)
                .unwrap_or_default(),
            usage
                .and_then(|u| u.max_rss_kib)
                .map(kib)
                .unwrap_or_default(),
        ]);
    };
    for s in acct {
        let id = format!("{}.{}", job.0, s.step.as_slurm_string());
        let usage = if s.state == JobState::Running {
            live_usage(&s.step).or(Some(&s.usage))
        } else {
            Some(&s.usage)
        };
        let exit = if s.state == JobState::Running {
            String::new()
        } else {
            s.exit_code.to_string()
        };
        row(
            id,
            &s.name,
            s.state,
            exit,
            s.start_time,
            s.end_time,
            &s.nodes,
            s.n_tasks,
            s.n_cpus,
            usage,
        );
    }
    for s in running
        .iter()
        .filter(|s| !acct.iter().any(|a| a.step == s.step))
    {
        row(
            format!("{}.{}", job.0, s.step.as_slurm_string()),
            &s.name,
            s.state,
            String::new(),
            Some(s.start_time),
            None,
            &hostlist::compress(&s.nodes),
            s.ntasks,
            s.cpus,
            live_usage(&s.step),
        );
    }
    table(
        "Steps",
        &[
            "step",
            "name",
            "state",
            "exit code",
            "start",
            "elapsed",
            "nodes",
            "tasks",
            "CPUs",
            "TotalCPU",
            "AveCPU",
            "MaxRSS",
        ],
        &rows,
    )
}

/// CPU time as sacct prints it: `MM:SS.mmm` under an hour, else
/// `[D-]HH:MM:SS`.
fn cpu_time(usec: u64) -> String {
    let secs = usec / 1_000_000;
    if secs < 3_600 {
        format!(
            "{:02}:{:02}.{:03}",
            secs / 60,
            secs % 60,
            usec % 1_000_000 / 1_000
        )
    } else {
        duration(secs as i64)
    }
}

/// A memory size in KiB as sacct prints it: `K`, `M` or `G` with two
/// decimals above a kibibyte.
fn kib(k: u64) -> String {
    match k {
        0..=1_023 => format!("{k}K"),
        1_024..=1_048_575 => format!("{:.2}M", k as f64 / 1_024.0),
        _ => format!("{:.2}G", k as f64 / 1_048_576.0),
    }
}

/// The distribution of bounded slowdown (10 s bound, as `muster sim`'s
/// `mean_bsld`) of simulated jobs given as (submit, start, end), as a chart
/// and its table, ids prefixed by `id`.
pub fn slowdown_chart(id: &str, jobs: &[(i64, i64, i64)]) -> String {
    let chart = charts::BarChart {
        id: id.to_string(),
        title: "Bounded slowdown".into(),
        x_label: "(wait + run) / max(run, 10 s)".into(),
        y_label: "jobs".into(),
        bars: charts::slowdown_bins(jobs.iter().map(|&(submit, start, end)| {
            charts::bounded_slowdown(start - submit, end - start, 10.0)
        })),
        log_y: true,
        width: 900.0,
        height: 260.0,
    };
    format!("{}{}", chart.render(), chart.html_table())
}

/// Finished jobs: counts by user and by account, waits, and use over time,
/// as charts and tables.
pub fn history(jobs: &[AcctJob], from: i64, to: i64) -> String {
    let mut s = String::new();
    let spans: Vec<(Timestamp, Option<Timestamp>, u32)> = jobs
        .iter()
        .filter_map(|j| j.start_time.map(|st| (st, j.end_time, j.n_cpus)))
        .collect();
    let util = charts::TimeChart {
        id: "hist-util".into(),
        title: "CPUs in use".into(),
        y_label: "allocated CPUs".into(),
        y_max: None,
        epoch: Some(0),
        series: vec![charts::Series {
            name: "allocated".into(),
            points: busy_series(&spans, from, to),
            reduce: charts::Reduce::Mean,
        }],
        width: 900.0,
        height: 260.0,
    };
    s.push_str(&util.render());
    let waits = charts::BarChart {
        id: "hist-wait".into(),
        title: "Wait time".into(),
        x_label: "time from submission to start".into(),
        y_label: "jobs".into(),
        bars: charts::wait_bins(
            jobs.iter()
                .filter_map(|j| j.start_time.map(|st| st - j.submit_time)),
        ),
        log_y: true,
        width: 900.0,
        height: 260.0,
    };
    s.push_str(&waits.render());
    s.push_str(&waits.html_table());
    for (what, key) in [("user", 0), ("account", 1)] {
        let mut counts: BTreeMap<&str, f64> = BTreeMap::new();
        for j in jobs {
            let k = if key == 0 {
                j.user.as_str()
            } else {
                j.account.as_str()
            };
            *counts.entry(k).or_default() += 1.0;
        }
        let chart = charts::BarChart {
            id: format!("hist-by-{what}"),
            title: format!("Jobs by {what}"),
            x_label: what.into(),
            y_label: "jobs".into(),
            bars: counts
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            log_y: false,
            width: 900.0,
            height: 240.0,
        };
        s.push_str(&chart.render());
        s.push_str(&chart.html_table());
    }
    s
}

/// A node's recent health-check runs, newest first: when, how it ended,
/// its first output line, what the daemon did and whether the node was
/// drained after it.
pub fn health_table(runs: &[HealthCheckRun]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .rev()
        .map(|r| {
            let result = if r.ok {
                "<span class=\"ok-word\">passed</span>".to_string()
            } else {
                format!(
                    "<strong class=\"fail-word\">failed</strong> ({})",
                    esc(&match r.exit_code {
                        Some(c) => format!("exit code {c}"),
                        None if r.why.is_empty() => "no exit code".to_string(),
                        None => r.why.clone(),
                    })
                )
            };
            let drained = match (&r.reason, r.drained) {
                (Some(reason), true) => format!("drained: {}", esc(reason)),
                (None, true) => "drained".to_string(),
                _ => "no".to_string(),
            };
            vec![
                time(r.start),
                format!("{}.{:03} s", r.duration_ms / 1000, r.duration_ms % 1000),
                result,
                esc(&r.output),
                esc(r.action.as_str()),
                drained,
            ]
        })
        .collect();
    table(
        "Recent health checks (newest first)",
        &["started", "took", "result", "output", "action", "drained"],
        &rows,
    )
}
