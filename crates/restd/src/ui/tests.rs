use super::*;
use model::{NodeBase, NodeState, PendingReason, TimeLimit};

fn node(name: &str, base: NodeBase, alloc: u32) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        state: NodeState::new(base),
        cpus: 4,
        alloc_cpus: alloc,
        real_memory: 1000,
        gres: vec![model::Gres {
            name: "gpu".into(),
            type_: None,
            count: 2,
        }],
        gres_used: vec![],
        alloc_mem: 0,
        ..crate::openapi::example_node()
    }
}

fn job(id: u32, user: &str, state: JobState) -> JobInfo {
    JobInfo {
        job_id: JobId(id),
        name: format!("job<{id}>"),
        user: user.into(),
        uid: 1000,
        partition: "debug".into(),
        state,
        reason: if state == JobState::Pending {
            PendingReason::Resources
        } else {
            PendingReason::None
        },
        priority: 10,
        time_limit: TimeLimit::Minutes(60),
        nodes: if state == JobState::Running {
            vec!["n1".into()]
        } else {
            vec![]
        },
        start_time: (state == JobState::Running).then_some(1_000),
        num_cpus: 2,
        ..Default::default()
    }
}

/// The jobs as the controller's compact rows (what the lists read).
fn rows(jobs: &[JobInfo]) -> proto::JobRows {
    proto::JobRows::from_list(
        &proto::JobList {
            jobs: jobs.to_vec(),
            now: 2_000,
        },
        &proto::JobFilter::default(),
    )
}

/// Parses a page's HTML as XML where it is well-formed enough: the pages
/// are written as XHTML-compatible markup, except the doctype.
fn well_formed(html: &str) {
    let body = html
        .trim_start_matches("<!DOCTYPE html>\n")
        .replace("&nbsp;", "&#160;");
    // Void elements are written unclosed in HTML: close them for the check.
    let mut fixed = String::new();
    let mut rest = body.as_str();
    while let Some(i) = rest.find('<') {
        fixed.push_str(&rest[..i]);
        let end = rest[i..].find('>').map(|e| i + e).unwrap();
        let tag = &rest[i..=end];
        let name: String = tag[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if ["meta", "input", "br", "link"].contains(&name.as_str()) && !tag.ends_with("/>") {
            fixed.push_str(&tag[..tag.len() - 1]);
            fixed.push_str("/>");
        } else {
            fixed.push_str(tag);
        }
        rest = &rest[end + 1..];
    }
    fixed.push_str(rest);
    let fixed = format!("<div>{fixed}</div>");
    if let Err(e) = roxmltree::Document::parse(&fixed) {
        panic!("not well-formed: {e}\n{fixed}");
    }
}

#[test]
fn the_grid_shows_every_node_with_its_state_in_words() {
    let nodes = [
        node("n1", NodeBase::Mixed, 2),
        node("n2", NodeBase::Idle, 0),
        NodeInfo {
            state: NodeState {
                drain: true,
                ..NodeState::new(NodeBase::Idle)
            },
            ..node("n3", NodeBase::Idle, 0)
        },
    ];
    let g = pages::node_grid(&nodes);
    for (n, st) in [("n1", "mixed"), ("n2", "idle"), ("n3", "drained")] {
        assert!(
            g.contains(&format!("data-node=\"{n}\" data-state=\"{st}\"")),
            "{n} {st}: {g}"
        );
    }
    assert!(g.contains("CPU 2/4"));
    assert!(g.contains("gpu:2 (0 used)"));
    well_formed(&page("Cluster", "alice", Some("/muster/v1/watch"), &g));
}

#[test]
fn the_queue_summary_counts_pending_jobs_by_reason() {
    let jobs = [
        job(1, "alice", JobState::Running),
        job(2, "alice", JobState::Pending),
        job(3, "bob", JobState::Pending),
    ];
    let q = pages::queue_summary(&rows(&jobs));
    assert!(q.contains("<strong>1</strong> running, <strong>2</strong> pending."));
    assert!(q.contains(">Resources</a></td><td>2</td>"), "{q}");
    well_formed(&q);
}

#[test]
fn job_tables_escape_names_and_link_each_job() {
    let jobs = [job(7, "alice", JobState::Pending)];
    let r = rows(&jobs);
    let t = pages::jobs_table(&pages::jobs(&r).collect::<Vec<_>>(), 2_000);
    assert!(t.contains("<a href=\"/jobs/7\">7</a>"));
    assert!(t.contains("job&lt;7&gt;"));
    assert!(t.contains("<td>1:00:00</td>"), "{t}");
    well_formed(&t);
    let f = pages::job_fields(&jobs[0]);
    assert!(f.contains("<td>JobState</td><td>PENDING</td>"));
    well_formed(&f);
}

#[test]
fn actions_carry_the_token_and_fit_the_state() {
    let pending = pages::job_actions(&job(7, "alice", JobState::Pending), "TOKEN");
    assert!(pending.contains("action=\"/jobs/7/cancel\""));
    assert!(pending.contains("action=\"/jobs/7/hold\""));
    assert!(pending.contains("name=\"csrf\" value=\"TOKEN\""));
    let held = pages::job_actions(
        &JobInfo {
            priority: 0,
            ..job(7, "alice", JobState::Pending)
        },
        "T",
    );
    assert!(held.contains("/jobs/7/release"));
    let running = pages::job_actions(&job(8, "alice", JobState::Running), "T");
    assert!(running.contains("/jobs/8/requeue"));
    assert!(pages::job_actions(&job(9, "a", JobState::Completed), "T")
        .contains("<div id=\"actions\"></div>"));
}

#[test]
fn busy_series_is_a_step_function_clipped_to_the_window() {
    let spans = [(0, Some(50), 2), (20, None, 1), (200, Some(300), 4)];
    assert_eq!(
        pages::busy_series(&spans, 10, 100),
        vec![(10, 2.0), (20, 3.0), (50, 1.0), (100, 1.0)]
    );
}

#[test]
fn history_page_draws_valid_charts() {
    let j = proto::AcctJob {
        user: "alice".into(),
        account: "physics".into(),
        submit_time: 0,
        start_time: Some(100),
        end_time: Some(400),
        n_cpus: 2,
        ..crate::openapi::example_acct_job()
    };
    let h = pages::history(&[j], 0, 1_000);
    assert!(h.contains("Jobs by user"));
    assert_eq!(h.matches("<svg ").count(), 4);
    for doc in h.split("</svg>").filter(|d| d.contains("<svg ")) {
        let start = doc.find("<svg ").unwrap();
        roxmltree::Document::parse(&format!("{}</svg>", &doc[start..])).unwrap();
    }
}

#[test]
fn paths_cookies_and_forms() {
    for p in [
        "/",
        "/jobs",
        "/jobs/7",
        "/nodes/n1",
        "/history",
        "/sim",
        "/login",
    ] {
        assert!(is_ui_path(p), "{p}");
    }
    for p in ["/slurm/v0.0.38/jobs", "/openapi/v3", "/metrics", "/jobsx"] {
        assert!(!is_ui_path(p), "{p}");
    }
    assert_eq!(cookie_token("a=b; muster_token=xyz; c=d"), Some("xyz"));
    assert_eq!(cookie_token("muster_token="), None);
    assert_eq!(
        parse_form(b"csrf=a%2Bb&do=cancel"),
        vec![
            ("csrf".to_string(), "a+b".to_string()),
            ("do".to_string(), "cancel".to_string())
        ]
    );
    let out = logged_in("tok");
    assert_eq!(out.status, 303);
    assert!(out.headers.iter().any(|(k, v)| *k == "set-cookie"
        && v.starts_with("muster_token=tok;")
        && v.contains("HttpOnly")
        && v.contains("SameSite=Strict")));
}

#[test]
fn forged_or_cross_site_posts_are_refused() {
    let ui = UiState::new(None);
    let alice = Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "h".into(),
    };
    let bob = Identity {
        user: "bob".into(),
        ..alice.clone()
    };
    let good = Req {
        method: "POST".into(),
        form: vec![("csrf".into(), csrf_token(&ui, &alice))],
        host: Some("localhost:6820".into()),
        origin: Some("http://localhost:6820".into()),
        ..Default::default()
    };
    assert!(check_post(&ui, &alice, &good).is_ok());
    assert!(
        check_post(&ui, &bob, &good).is_err(),
        "another user's token"
    );
    let cross = Req {
        origin: Some("http://evil.example".into()),
        ..good
    };
    assert!(check_post(&ui, &alice, &cross).is_err());
    let none = Req {
        method: "POST".into(),
        ..Default::default()
    };
    assert!(check_post(&ui, &alice, &none).is_err());
}

#[test]
fn the_history_becomes_a_trace() {
    let j = proto::AcctJob {
        submit_time: 1_000,
        start_time: Some(1_010),
        end_time: Some(1_070),
        n_cpus: 2,
        uid: 5,
        time_limit: TimeLimit::Minutes(2),
        ..crate::openapi::example_acct_job()
    };
    assert_eq!(
        history_trace(std::slice::from_ref(&j), None),
        "; UnixStartTime: 1000\n1 0 10 60 2 -1 -1 2 120 -1 1 5 -1 -1 -1 -1 -1 -1\n"
    );
    // With the cluster's size: the machine, not the widest job's.
    assert_eq!(
        history_trace(&[j], Some((3, 24))),
        "; UnixStartTime: 1000\n; MaxNodes: 3\n; MaxProcs: 24\n1 0 10 60 2 -1 -1 2 120 -1 1 5 -1 -1 -1 -1 -1 -1\n"
    );
}

#[test]
fn a_pasted_traces_machine_is_named_from_its_header() {
    assert_eq!(
        trace_machine("; MaxNodes: 4\n;MaxProcs: 64\n1 0 0 10 1\n"),
        "the trace's machine: 4 nodes, 64 CPUs (its header)"
    );
    assert!(trace_machine("1 0 0 10 1\n").contains("widest job"));
}

#[test]
fn the_runs_configuration_keeps_the_site_and_changes_only_b() {
    let dir = tempfile_dir();
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=c\nInclude nodes.conf\nInclude /etc/abs.conf\nSchedulerType=sched/backfill\n",
    )
    .unwrap();
    let site = SiteConf {
        path: conf.clone(),
        nodes: 2,
        cpus: 8,
        scheduler_type: "sched/backfill".into(),
        scheduler_params: "bf_window=60".into(),
    };
    let a = SimRun {
        policy: None,
        params: None,
    };
    let b = SimRun {
        policy: Some("easy".into()),
        params: Some("bf_continue".into()),
    };
    // History: A is the site's file as it is; B a copy with its change
    // last, includes made absolute.
    assert_eq!(
        run_config(&dir, "a", Some(&site), true, &a).unwrap(),
        Some(conf.clone())
    );
    let bconf = run_config(&dir, "b", Some(&site), true, &b)
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(&bconf).unwrap();
    assert!(
        text.contains(&format!("Include {}\n", dir.join("nodes.conf").display())),
        "{text}"
    );
    assert!(text.contains("Include /etc/abs.conf\n"), "{text}");
    assert!(
        text.ends_with("\nSchedulerParameters=bf_continue\n"),
        "{text}"
    );
    // A pasted trace: the site's scheduler on the trace's machine.
    let p = run_config(&dir, "pa", Some(&site), false, &a)
        .unwrap()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(p).unwrap(),
        "SchedulerType=sched/backfill\nSchedulerParameters=bf_window=60\n"
    );
    assert_eq!(run_config(&dir, "n", None, false, &a).unwrap(), None);
    assert_eq!(
        b.words(Some(&site)),
        "easy, SchedulerParameters=bf_continue"
    );
    assert_eq!(a.words(Some(&site)), "the site's sched/backfill");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    tempdir().expect("a temporary directory")
}

#[test]
fn two_runs_render_side_by_side_with_ids_of_their_own() {
    let svg = charts::stack("t", &[waits_chart().render()]);
    let jobs =
        sim_jobs("id,submit,start,end,procs,nodes\n1,0,0,100,2,\"n1\"\n2,0,100,200,1,\"n[1-2]\"\n");
    assert_eq!(jobs, vec![(0, 0, 100), (0, 100, 200)]);
    let result = |u: f64| SimResult {
        summary: serde_json::json!({"jobs": 2, "utilization": u, "mean_bsld": 1.5}),
        svg: svg.clone(),
        jobs: jobs.clone(),
    };
    let runs = [
        SimRun {
            policy: None,
            params: None,
        },
        SimRun {
            policy: Some("fcfs".into()),
            params: None,
        },
    ];
    let h = sim_results(
        &runs,
        &[result(0.5), result(0.25)],
        None,
        "the trace's machine",
    );
    assert!(h.contains("<div class=\"grid2\"><section"), "{h}");
    assert!(h.contains("<td>0.5</td><td>0.25</td>"), "{h}");
    assert!(h.contains("Machine: the trace&#39;s machine."), "{h}");
    assert!(h.contains("id=\"a-waits-title\""), "{h}");
    assert!(
        h.contains("aria-labelledby=\"b-waits-title b-waits-desc\""),
        "{h}"
    );
    assert!(h.contains("id=\"b-slowdown-title\""), "{h}");
    // Every id once: B's labels point at B's titles.
    let mut ids: Vec<&str> = h
        .split(" id=\"")
        .skip(1)
        .map(|r| r.split('"').next().unwrap())
        .collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids in {h}");
    well_formed(&page("Simulator", "alice", None, &h));
}

#[test]
fn health_checks_show_newest_first_with_the_failure_and_the_drain() {
    use proto::health::{HealthCheckAction, HealthCheckRun};
    let runs = [
        HealthCheckRun {
            node: "n1".into(),
            start: 86_400,
            duration_ms: 12,
            ok: true,
            exit_code: Some(0),
            ..Default::default()
        },
        HealthCheckRun {
            node: "n1".into(),
            start: 86_460,
            duration_ms: 1_250,
            ok: false,
            exit_code: Some(1),
            why: "/etc/nhc exited with exit status: 1".into(),
            output: "disk <scratch> full".into(),
            action: HealthCheckAction::Drained,
            drained: true,
            reason: Some("disk <scratch> full".into()),
        },
    ];
    let t = pages::health_table(&runs);
    let failed = t.find("failed").expect("the failed run");
    let passed = t.find("passed").expect("the passing run");
    assert!(failed < passed, "newest first: {t}");
    assert!(t.contains("exit code 1"), "{t}");
    assert!(t.contains("disk &lt;scratch&gt; full"), "{t}");
    assert!(t.contains("drained: disk &lt;scratch&gt; full"), "{t}");
    assert!(t.contains("drained the node"), "{t}");
    assert!(t.contains("1.250 s"), "{t}");
    assert!(t.contains("1970-01-02 00:01:00"), "{t}");
    well_formed(&page("Node n1", "alice", None, &t));
}

#[test]
fn the_jobs_list_pages_a_long_queue_and_keeps_its_filters() {
    let jobs: Vec<JobInfo> = (1..=450)
        .map(|i| {
            job(
                i,
                if i % 2 == 0 { "alice" } else { "bob" },
                JobState::Pending,
            )
        })
        .collect();
    let q = pages::JobQuery {
        sort: "id",
        page: 1,
        ..Default::default()
    };
    let jobs_rows = rows(&jobs);
    let first = pages::jobs_listing(&jobs_rows, &q);
    assert!(
        first.contains("Showing 1\u{2013}200 of 450 jobs."),
        "{first}"
    );
    assert_eq!(first.matches("<a href=\"/jobs/").count(), 200);
    assert!(first.contains("page 1 of 3"));
    assert!(first.contains("href=\"/jobs?sort=id&amp;page=2\" rel=\"next\""));
    assert!(!first.contains("rel=\"prev\""));
    // The last page: the rest, a way back, none forward.
    let last = pages::jobs_listing(&jobs_rows, &pages::JobQuery { page: 3, ..q });
    assert!(
        last.contains("Showing 401\u{2013}450 of 450 jobs."),
        "{last}"
    );
    assert_eq!(last.matches("<a href=\"/jobs/").count(), 50);
    assert!(last.contains("rel=\"prev\"") && !last.contains("rel=\"next\""));
    // A page past the end shows the last one.
    let past = pages::jobs_listing(
        &jobs_rows,
        &pages::JobQuery {
            page: 99,
            ..pages::JobQuery::default()
        },
    );
    assert!(past.contains("Showing 401\u{2013}450"), "{past}");
    // Filters narrow the count and travel in the links, encoded.
    let q = pages::JobQuery {
        user: "alice",
        name: "job<1",
        sort: "priority",
        page: 1,
        ..Default::default()
    };
    let some = pages::jobs_listing(&jobs_rows, &q);
    let n = jobs
        .iter()
        .filter(|j| j.user == "alice" && j.name.contains("job<1"))
        .count();
    assert!(
        some.contains(&format!("Showing 1\u{2013}{n} of {n} jobs.")),
        "{some}"
    );
    assert!(!some.contains("page 1 of"), "one page: no pager");
    let none = pages::jobs_listing(&rows(&[]), &pages::JobQuery::default());
    assert!(none.contains("Showing 0 of 0 jobs."), "{none}");
    well_formed(&page("Jobs", "alice", None, &first));
}

#[test]
fn query_values_are_percent_encoded() {
    assert_eq!(html::url_enc("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    assert_eq!(html::url_enc("job-1_x.y~"), "job-1_x.y~");
}

#[test]
fn partitions_count_their_running_and_pending_jobs() {
    let parts = [
        proto::PartitionInfo {
            name: "debug".into(),
            default: true,
            nodes: vec!["n1".into(), "n2".into()],
            state: "UP".into(),
            ..crate::openapi::example_partition()
        },
        proto::PartitionInfo {
            name: "gpu".into(),
            default: false,
            nodes: vec!["n2".into()],
            state: "UP".into(),
            ..crate::openapi::example_partition()
        },
    ];
    let nodes = [
        node("n1", NodeBase::Mixed, 2),
        node("n2", NodeBase::Idle, 0),
    ];
    let mut both = job(4, "bob", JobState::Pending);
    both.partition = "debug,gpu".into();
    let jobs = [
        job(1, "alice", JobState::Running),
        job(2, "alice", JobState::Pending),
        job(3, "bob", JobState::Pending),
        both,
    ];
    let t = pages::partitions_table(&parts, &nodes, &rows(&jobs));
    assert!(
        t.contains("<td>debug*</td><td>UP</td><td>2</td><td>2/8 (25%)</td><td>1</td><td>3</td>"),
        "{t}"
    );
    assert!(
        t.contains("<td>gpu</td><td>UP</td><td>1</td><td>0/4 (0%)</td><td>0</td><td>1</td>"),
        "{t}"
    );
    well_formed(&t);
}

/// A controller-less context: the pages that ask nothing of the
/// controller (a pasted trace's simulation) can be served with it.
fn offline_ctx() -> Ctx {
    let cfg = conf::parse_str(
        "ClusterName=t\nSlurmctldHost=localhost\nNodeName=n1 CPUs=4\nPartitionName=debug Nodes=n1\n",
        std::path::Path::new("slurm.conf"),
        &mut |_| Err(std::io::Error::other("no includes")),
    )
    .expect("a configuration")
    .config;
    Ctx {
        client: client::Client::new(cfg, client::current_identity()),
        cluster: "t".into(),
        ctld_host: "localhost".into(),
        metrics: crate::metrics::Counters::default(),
        jobs_v0038: crate::jobcache::JobCache::default(),
        jobs_v0044: crate::jobcache::JobCache::default(),
    }
}

/// A small wait-time chart, as the simulator draws one.
fn waits_chart() -> charts::BarChart {
    charts::BarChart {
        id: "waits".into(),
        title: "Wait time".into(),
        x_label: "w".into(),
        y_label: "jobs".into(),
        bars: charts::wait_bins([0, 100]),
        log_y: true,
        width: 400.0,
        height: 200.0,
    }
}

/// A stand-in for `muster sim` (the real one is the muster binary's, which
/// restd's tests do not build): it writes a picture and two jobs as asked
/// and answers a summary that names its policy, and logs its arguments.
fn fake_muster(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let svg = waits_chart().render();
    std::fs::write(dir.join("picture.svg"), svg).unwrap();
    let script = dir.join("muster");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> {log}\npolicy=site\n\
             while [ $# -gt 0 ]; do case $1 in\n\
             --svg) cp {pic} \"$2\"; shift;;\n\
             --csv) printf 'id,submit,start,end,procs,nodes\\n1,0,0,100,2,\"n1\"\\n2,0,100,200,4,\"n[1,2]\"\\n' > \"$2\"; shift;;\n\
             --policy) policy=$2; shift;;\n\
             esac; shift; done\n\
             echo \"{{\\\"jobs\\\":2,\\\"utilization\\\":0.5,\\\"mean_wait_s\\\":50,\\\"max_wait_s\\\":100,\\\"mean_bsld\\\":5.5,\\\"makespan_s\\\":200,\\\"policy\\\":\\\"$policy\\\"}}\"\n",
            log = dir.join("args.log").display(),
            pic = dir.join("picture.svg").display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn the_sim_form_posts_with_its_token_and_shows_both_runs() {
    let dir = tempfile_dir();
    let ui = UiState {
        muster: fake_muster(&dir),
        ..UiState::new(None)
    };
    let ctx = offline_ctx();
    let alice = Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "h".into(),
    };
    // The form, as a browser gets it: its token is the one to send back.
    let form = serve(
        &ctx,
        &ui,
        &[],
        &alice,
        &Req {
            method: "GET".into(),
            path: "/sim".into(),
            ..Default::default()
        },
    );
    assert_eq!(form.status, 200);
    let token = form
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the form's anti-forgery token")
        .to_string();
    let post = |csrf: &str| {
        serve(
            &ctx,
            &ui,
            &[],
            &alice,
            &Req {
                method: "POST".into(),
                path: "/sim".into(),
                form: parse_form(
                    format!(
                        "csrf={}&source=trace&trace=%3B+MaxNodes%3A+2%0A%3B+MaxProcs%3A+8%0A1+0+0+100+2&a=site&b=fcfs&b_params=bf_continue",
                        html::url_enc(csrf)
                    )
                    .as_bytes(),
                ),
                host: Some("localhost:6820".into()),
                origin: Some("http://localhost:6820".into()),
                ..Default::default()
            },
        )
    };
    let out = post(&token);
    assert_eq!(out.status, 200, "{}", out.body);
    let b = &out.body;
    assert!(!b.contains("class=\"err\""), "{b}");
    assert!(
        b.contains("Machine: the trace&#39;s machine: 2 nodes, 8 CPUs (its header)."),
        "{b}"
    );
    assert!(
        b.contains("<h3 id=\"run-a\">A: the default policy</h3>"),
        "{b}"
    );
    assert!(
        b.contains("<h3 id=\"run-b\">B: fcfs, SchedulerParameters=bf_continue</h3>"),
        "{b}"
    );
    for p in ["a", "b"] {
        assert!(b.contains(&format!("id=\"{p}-waits-title\"")), "{b}");
        assert!(b.contains(&format!("id=\"{p}-slowdown-title\"")), "{b}");
    }
    // The results (the form's boolean attributes are HTML, not XML).
    let results = &b[b.find("<h2>Results</h2>").unwrap()..];
    well_formed(&results[..results.rfind("</section></div>").unwrap() + 16]);
    // A ran with the site's policy (no --policy), B with its own and its
    // SchedulerParameters in a configuration file.
    let log = std::fs::read_to_string(dir.join("args.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(
        !lines[0].contains("--policy") && !lines[0].contains("--config"),
        "{log}"
    );
    assert!(
        lines[1].contains("--policy fcfs") && lines[1].contains("--config"),
        "{log}"
    );
    // A forged token runs nothing.
    let forged = post("not-a-token");
    assert_eq!(forged.status, 403);
    assert_eq!(std::fs::read_to_string(dir.join("args.log")).unwrap(), log);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn steps_show_their_usage_from_accounting_and_sstat() {
    use proto::{AcctStep, LiveStepStat, StepId, StepUsage};
    let finished = AcctStep {
        step: StepId::Batch,
        name: "batch".into(),
        state: JobState::Completed,
        exit_code: model::ExitCode { code: 3, signal: 0 },
        start_time: Some(1_000),
        end_time: Some(1_065),
        nodes: "n1".into(),
        n_nodes: 1,
        n_cpus: 2,
        n_tasks: 1,
        alloc_tres: String::new(),
        usage: StepUsage {
            user_cpu_usec: Some(61_500_000),
            sys_cpu_usec: Some(500_000),
            ave_cpu_usec: Some(62_000_000),
            max_rss_kib: Some(2_048),
            ..Default::default()
        },
        container: None,
    };
    let recorded_running = AcctStep {
        step: StepId::Numbered(0),
        name: "solver".into(),
        state: JobState::Running,
        exit_code: model::ExitCode::default(),
        end_time: None,
        usage: StepUsage::default(),
        ..finished.clone()
    };
    // Running, not yet in accounting.
    let unrecorded = proto::StepInfo {
        job_id: JobId(7),
        step: StepId::Numbered(1),
        name: "post<1>".into(),
        user: "alice".into(),
        uid: 1000,
        partition: "debug".into(),
        state: JobState::Running,
        start_time: 1_900,
        time_limit: TimeLimit::Minutes(10),
        nodes: vec!["n1".into(), "n2".into()],
        ntasks: 4,
        cpus: 4,
        tres: String::new(),
        distribution: Default::default(),
        srun_host_pid: String::new(),
        node_addrs: vec![],
    };
    let live = LiveStepStat {
        job_id: JobId(7),
        step: StepId::Numbered(0),
        nodes: vec!["n1".into()],
        ntasks: 1,
        usage: StepUsage {
            user_cpu_usec: Some(4_000 * 1_000_000),
            max_rss_kib: Some(3 * 1_048_576),
            ..Default::default()
        },
        pids: vec![],
    };
    let t = pages::steps_table(
        JobId(7),
        &[&unrecorded],
        &[finished, recorded_running],
        &[live],
        2_000,
    );
    assert!(
        t.contains(">exit code</th>") && t.contains(">MaxRSS</th>"),
        "{t}"
    );
    assert!(
        t.contains("<td>7.batch</td><td>batch</td><td>COMPLETED</td><td>3:0</td><td>1970-01-01 00:16:40</td><td>00:01:05</td><td>n1</td><td>1</td><td>2</td><td>01:02.000</td><td>01:02.000</td><td>2.00M</td>"),
        "{t}"
    );
    // A running step: elapsed until now, no exit code, sstat's usage.
    assert!(
        t.contains("<td>7.0</td><td>solver</td><td>RUNNING</td><td></td><td>1970-01-01 00:16:40</td><td>00:16:40</td><td>n1</td><td>1</td><td>2</td><td>01:06:40</td><td></td><td>3.00G</td>"),
        "{t}"
    );
    assert!(
        t.contains("<td>7.1</td><td>post&lt;1&gt;</td><td>RUNNING</td><td></td>"),
        "{t}"
    );
    assert!(
        t.contains("<td>n[1-2]</td><td>4</td><td>4</td><td></td><td></td><td></td>"),
        "{t}"
    );
    well_formed(&t);
}

/// WCAG's relative luminance of `#RRGGBB` (or `#RGB`).
fn luminance(hex: &str) -> f64 {
    let h = hex.trim_start_matches('#');
    let h: String = if h.len() == 3 {
        h.chars().flat_map(|c| [c, c]).collect()
    } else {
        h.to_string()
    };
    let ch = |i: usize| {
        let c = f64::from(u8::from_str_radix(&h[i..i + 2], 16).unwrap()) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * ch(0) + 0.7152 * ch(2) + 0.0722 * ch(4)
}

/// The colour a rule of the style sets: `property:VALUE` after `selector{`.
fn style_colour(selector: &str, property: &str) -> String {
    let rule = html::STYLE
        .split('}')
        .find(|r| r.starts_with(selector))
        .unwrap_or_else(|| panic!("no rule for {selector}"));
    let value = rule
        .split(['{', ';'])
        .find_map(|d| d.strip_prefix(&format!("{property}:")))
        .unwrap_or_else(|| panic!("{selector} sets no {property}"));
    value
        .split_whitespace()
        .find(|w| w.starts_with('#'))
        .unwrap_or_else(|| panic!("no colour in {value}"))
        .to_string()
}

/// WCAG 2.2's non-text contrast (1.4.11): the focus ring is at least 3:1
/// against everything it is drawn on: the page, the tables and the
/// header's dark band.
#[test]
fn the_focus_ring_stands_out() {
    let ring = style_colour("a:focus", "outline");
    for (what, bg) in [
        ("the page", style_colour("body", "background")),
        ("a table", style_colour("table", "background")),
        ("the header", style_colour("header", "background")),
    ] {
        let (a, b) = (luminance(&ring), luminance(&bg));
        let ratio = (a.max(b) + 0.05) / (a.min(b) + 0.05);
        assert!(ratio >= 3.0, "{ring} on {what} ({bg}): {ratio:.2}:1");
    }
}
