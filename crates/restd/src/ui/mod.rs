//! The dashboard: server-rendered pages for users and administrators,
//! served by `muster restd` beside the REST API (docs/dashboard.md).
//!
//! ```text
//!  browser --GET /jobs--> identity (cookie token | proxy header | JWT headers)
//!      --> Ctx::call(who, ListJobs ...) as that user (the controller checks rights)
//!      --> pages::* (pure: answers -> HTML) --> html::page (layout, nav)
//!  browser --POST /jobs/7/cancel (csrf=...)--> check the token and Origin --> Cancel as that user
//! ```
//!
//! Who: the same identities as the REST API. A browser logs in by pasting a
//! token from `scontrol token` (kept in an HttpOnly, SameSite=Strict
//! cookie); a site that authenticates at a reverse proxy names the header
//! that carries the user (`muster restd --ui-user-header NAME`), which
//! restd then trusts. Every page asks the controller as the viewer, so a
//! user sees what squeue and sacct show them (PrivateData) and can act only
//! on what scancel/scontrol let them.
//!
//! Forgery: every action is a POST carrying a token bound to the viewer
//! (a JWT signed with a key drawn at start, lifetime 12 hours), and a
//! request whose `Origin` names another host is refused.

pub mod html;
pub mod pages;

use crate::api::Ctx;
use html::{esc, page, table, time};
use model::{JobId, JobState};
use proto::{AcctQuery, CtldRequest, CtldResponse, Identity, JobInfo, NodeInfo};
use std::fmt::Write as _;

/// The cookie that holds a browser's token.
pub const COOKIE: &str = "muster_token";

/// The anti-forgery tokens' lifetime.
const CSRF_LIFESPAN: u64 = 12 * 3_600;

/// How much of a job's output file its page shows.
const TAIL_BYTES: u64 = 4_096;

/// What the dashboard holds, fixed at start.
pub struct UiState {
    /// The key of the anti-forgery tokens (random, per process).
    pub secret: Vec<u8>,
    /// `--ui-user-header`: the header a trusted reverse proxy sets to the
    /// authenticated user.
    pub user_header: Option<String>,
    /// The path of the `muster` binary, for the simulator page.
    pub muster: std::path::PathBuf,
    /// The cluster's slurm.conf, whose machine and scheduler settings the
    /// simulator page replays the site's history on (None: unknown, and
    /// the page says the trace's machine was used).
    pub site: Option<SiteConf>,
}

/// What the simulator page takes from the cluster's slurm.conf.
#[derive(Clone, Debug, Default)]
pub struct SiteConf {
    /// The file, given to `muster sim --config` as it is.
    pub path: std::path::PathBuf,
    /// Its nodes' count.
    pub nodes: usize,
    /// Their CPUs, all together.
    pub cpus: u64,
    /// `SchedulerType`, as the file spells it.
    pub scheduler_type: String,
    /// `SchedulerParameters`, as the file spells it ("" when unset).
    pub scheduler_params: String,
}

impl SiteConf {
    /// The settings of `cfg`, read from `path`.
    pub fn of(path: &std::path::Path, cfg: &conf::Config) -> SiteConf {
        let raw = |k: &str| cfg.other.get(k).map(|(_, v)| v.clone());
        SiteConf {
            path: path.to_path_buf(),
            nodes: cfg.nodes.len(),
            cpus: cfg.nodes.iter().map(|n| u64::from(n.cpus)).sum(),
            scheduler_type: raw("schedulertype").unwrap_or_else(|| cfg.scheduler_type.clone()),
            scheduler_params: raw("schedulerparameters").unwrap_or_default(),
        }
    }
}

impl UiState {
    /// A state with a fresh random key.
    pub fn new(user_header: Option<String>) -> UiState {
        let mut secret = vec![0u8; 32];
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            use std::io::Read as _;
            let _ = f.read_exact(&mut secret);
        }
        UiState {
            secret,
            user_header,
            muster: std::env::current_exe().unwrap_or_else(|_| "muster".into()),
            site: None,
        }
    }
}

/// A request to a page.
#[derive(Debug, Default)]
pub struct Req {
    /// `GET` or `POST`.
    pub method: String,
    /// The path.
    pub path: String,
    /// The query's pairs.
    pub query: Vec<(String, String)>,
    /// A form body's pairs.
    pub form: Vec<(String, String)>,
    /// The raw body (the simulator's upload).
    pub body: Vec<u8>,
    /// The `Origin` header, when sent.
    pub origin: Option<String>,
    /// The `Host` header.
    pub host: Option<String>,
}

impl Req {
    fn q(&self, name: &str) -> &str {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    fn f(&self, name: &str) -> &str {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A page's answer.
#[derive(Debug)]
pub struct Out {
    /// The status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// Its type.
    pub content_type: &'static str,
    /// Extra headers (`Location`, `Set-Cookie`).
    pub headers: Vec<(&'static str, String)>,
}

impl Out {
    fn html(status: u16, body: String) -> Out {
        Out {
            status,
            body,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
        }
    }

    fn redirect(to: &str) -> Out {
        Out {
            status: 303,
            body: String::new(),
            content_type: "text/plain",
            headers: vec![("location", to.to_string())],
        }
    }
}

/// Whether `path` is one of the dashboard's.
pub fn is_ui_path(path: &str) -> bool {
    path == "/"
        || [
            "/jobs",
            "/nodes",
            "/history",
            "/fairshare",
            "/reservations",
            "/sim",
            "/login",
            "/logout",
        ]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// The token in a `Cookie` header, if any.
pub fn cookie_token(cookie: &str) -> Option<&str> {
    cookie
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// The login page.
pub fn login_page(error: Option<&str>) -> Out {
    let mut body = String::new();
    if let Some(e) = error {
        let _ = write!(body, "<p class=\"err\" role=\"alert\">{}</p>", esc(e));
    }
    body.push_str(
        "<p>Paste a token from <code>scontrol token</code> (the line's part after <code>SLURM_JWT=</code>).</p>\
         <form method=\"post\" action=\"/login\"><label for=\"token\">Token</label> \
         <input id=\"token\" name=\"token\" type=\"password\" size=\"60\" autocomplete=\"off\" required> \
         <button type=\"submit\">Log in</button></form>",
    );
    Out::html(
        if error.is_some() { 401 } else { 200 },
        page("Log in", "", None, &body),
    )
}

/// The answer to a good login: the cookie and a way home.
pub fn logged_in(token: &str) -> Out {
    let mut out = Out::redirect("/");
    out.headers.push((
        "set-cookie",
        format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"),
    ));
    out
}

/// Logging out forgets the cookie.
pub fn logged_out() -> Out {
    let mut out = Out::redirect("/login");
    out.headers.push((
        "set-cookie",
        format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    ));
    out
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The viewer's anti-forgery token.
pub fn csrf_token(ui: &UiState, who: &Identity) -> String {
    auth::jwt::mint(&ui.secret, &who.user, now(), CSRF_LIFESPAN)
}

/// Whether a POST may act: its token is the viewer's and it comes from
/// this site.
fn check_post(ui: &UiState, who: &Identity, req: &Req) -> Result<(), String> {
    if let (Some(origin), Some(host)) = (&req.origin, &req.host) {
        let o = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .unwrap_or(origin);
        if o != host {
            return Err(format!(
                "refused: the request comes from {origin}, not this site"
            ));
        }
    }
    match auth::jwt::verify(&ui.secret, req.f("csrf"), now()) {
        Ok(c) if c.sun == who.user => Ok(()),
        _ => Err(
            "refused: the form is stale or forged (no valid anti-forgery token); reload the page"
                .to_string(),
        ),
    }
}

fn error_page(who: &Identity, status: u16, msg: &str) -> Out {
    Out::html(
        status,
        page(
            "Error",
            &who.user,
            None,
            &format!("<p class=\"err\" role=\"alert\">{}</p>", esc(msg)),
        ),
    )
}

fn ask(ctx: &Ctx, who: &Identity, req: CtldRequest) -> Result<CtldResponse, String> {
    ctx.call(who, req).map_err(|e| match e {
        client::ClientError::Refused(e) => e.as_slurm_str().to_string(),
        e => e.to_string(),
    })
}

/// The active jobs (pending, running, suspended, completing) that
/// `filter`'s users and partitions select, as the controller's compact
/// rows (what squeue reads): the lists need no more, and a queue of
/// 10,000 then costs no `JobInfo` per job on either side.
fn job_rows(ctx: &Ctx, who: &Identity, filter: proto::JobFilter) -> Result<proto::JobRows, String> {
    let filter = proto::JobFilter {
        active_only: true,
        brief: true,
        rows: true,
        ..filter
    };
    match ask(ctx, who, CtldRequest::QueryJobs(filter))? {
        CtldResponse::JobRows(rows) => Ok(rows),
        _ => Err("unexpected answer".into()),
    }
}

fn query_jobs(
    ctx: &Ctx,
    who: &Identity,
    filter: proto::JobFilter,
) -> Result<(Vec<JobInfo>, i64), String> {
    match ask(ctx, who, CtldRequest::QueryJobs(filter))? {
        CtldResponse::Jobs(l) => Ok((l.jobs, l.now)),
        _ => Err("unexpected answer".into()),
    }
}

/// A listing the controller refuses this viewer (`PrivateData=nodes` or
/// `partitions`): `None`, and the page says so instead of failing.
fn unless_private<T>(r: Result<T, String>) -> Result<Option<T>, String> {
    match r {
        Err(e) if e == proto::SlurmError::AccessDenied.as_slurm_str() => Ok(None),
        other => other.map(Some),
    }
}

/// What a page shows in place of a listing `PrivateData` hides.
const PRIVATE_NOTE: &str = "<p class=\"note\">Hidden from you here (PrivateData).</p>";

/// The jobs that ended in `[from, to]`, as accounting holds them: asked
/// by their final states (sacct's `-s` window), so the jobs still
/// pending, thousands of them, stay in the database.
fn finished_between(from: i64, to: i64) -> AcctQuery {
    AcctQuery {
        start: Some(from),
        end: Some(to),
        states: model::ALL_JOB_STATES
            .into_iter()
            .filter(|s| s.is_finished())
            .collect(),
        ..Default::default()
    }
}

fn nodes_of(ctx: &Ctx, who: &Identity) -> Result<Vec<NodeInfo>, String> {
    match ask(ctx, who, CtldRequest::ListNodes)? {
        CtldResponse::Nodes(n) => Ok(n),
        _ => Err("unexpected answer".into()),
    }
}

/// Whether the viewer is root or SlurmUser: may act on every job and read
/// every job's output; others see the buttons on their own jobs only,
/// operators excepted (the controller decides anyway).
fn is_admin(who: &Identity, admins: &[u32]) -> bool {
    admins.contains(&who.uid)
}

/// Whether the viewer is of AdminLevel Operator or Administrator in the
/// association database, as the controller reads it: such users act on
/// every job too.
fn is_operator(ctx: &Ctx, who: &Identity) -> bool {
    matches!(
        ask(ctx, who, CtldRequest::AcctTables),
        Ok(CtldResponse::AcctTables(t)) if t.user(&who.user).is_some_and(
            |u| u.admin_level >= proto::acctdb::AdminLevel::Operator
        )
    )
}

/// Serves a dashboard page as `who` (authenticated by the caller).
pub fn serve(ctx: &Ctx, ui: &UiState, admins: &[u32], who: &Identity, req: &Req) -> Out {
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let result = match (req.method.as_str(), parts.as_slice()) {
        ("GET", [""]) => overview(ctx, who),
        ("GET", ["jobs"]) => jobs_page(ctx, who, req),
        ("GET", ["jobs", id]) => job_page(ctx, ui, admins, who, id),
        ("POST", ["jobs", id, action]) => match check_post(ui, who, req) {
            Err(e) => return error_page(who, 403, &e),
            Ok(()) => job_action(ctx, who, id, action),
        },
        ("GET", ["nodes"]) => return Out::redirect("/"),
        ("GET", ["nodes", name]) => node_page(ctx, who, name),
        ("GET", ["history"]) => history_page(ctx, who, req),
        ("GET", ["fairshare"]) => fairshare_page(ctx, who),
        ("GET", ["reservations"]) => reservations_page(ctx, who),
        ("GET", ["sim"]) => Ok(sim_page(ui, who, None)),
        ("POST", ["sim"]) => match check_post(ui, who, req) {
            Err(e) => return error_page(who, 403, &e),
            Ok(()) => Ok(sim_run(ctx, ui, who, req)),
        },
        _ => return error_page(who, 404, &format!("no page {}", req.path)),
    };
    match result {
        Ok(out) => out,
        Err(e) => error_page(who, 500, &e),
    }
}

/// The live stream a page listens to (the watch stream, when restd serves
/// one).
const LIVE: &str = "/muster/v1/watch";

fn overview(ctx: &Ctx, who: &Identity) -> Result<Out, String> {
    let listed_nodes = unless_private(nodes_of(ctx, who))?;
    let nodes = listed_nodes.clone().unwrap_or_default();
    let jobs = job_rows(ctx, who, proto::JobFilter::default())?;
    let now = jobs.now;
    let parts = match unless_private(ask(ctx, who, CtldRequest::ListPartitions))? {
        Some(CtldResponse::Partitions(p)) => Some(p),
        Some(_) => Some(Vec::new()),
        None => None,
    };
    let mut body = String::new();
    let _ = write!(
        body,
        "<h2>Nodes</h2>{}<h2>Partitions</h2>{}<h2>Queue</h2>{}",
        match &listed_nodes {
            Some(n) => pages::node_grid(n),
            None => PRIVATE_NOTE.to_string(),
        },
        match &parts {
            Some(p) => pages::partitions_table(p, &nodes, &jobs),
            None => PRIVATE_NOTE.to_string(),
        },
        pages::queue_summary(&jobs)
    );
    if listed_nodes.is_none() {
        // Without the nodes there is no capacity to chart use against.
        return Ok(Out::html(
            200,
            page("Cluster", &who.user, Some(LIVE), &body),
        ));
    }
    // The last hour's use: finished jobs from accounting, running ones
    // from the controller.
    let from = now - 3_600;
    let mut spans: Vec<(i64, Option<i64>, u32)> = jobs
        .rows()
        .filter(|j| j.state == JobState::Running)
        .filter_map(|j| j.start_time().map(|s| (s, None, j.num_cpus)))
        .collect();
    if let Ok(CtldResponse::AcctJobs(done)) = ask(
        ctx,
        who,
        CtldRequest::AcctQuery(finished_between(from, now)),
    ) {
        spans.extend(
            done.iter()
                .filter(|j| j.end_time.is_some())
                .filter_map(|j| j.start_time.map(|s| (s, j.end_time, j.n_cpus))),
        );
    }
    let total: u32 = nodes.iter().map(|n| n.cpus).sum();
    let chart = charts::TimeChart {
        id: "util".into(),
        title: "Utilization, last hour".into(),
        y_label: "allocated CPUs (%)".into(),
        y_max: Some(100.0),
        epoch: Some(0),
        series: vec![charts::Series {
            name: "allocated".into(),
            points: pages::busy_series(&spans, from, now)
                .into_iter()
                .map(|(t, v)| (t, v * 100.0 / f64::from(total.max(1))))
                .collect(),
            reduce: charts::Reduce::Mean,
        }],
        width: 900.0,
        height: 240.0,
    };
    let _ = write!(body, "<h2>Utilization</h2>{}", chart.render());
    Ok(Out::html(
        200,
        page("Cluster", &who.user, Some(LIVE), &body),
    ))
}

fn jobs_page(ctx: &Ctx, who: &Identity, req: &Req) -> Result<Out, String> {
    let q = pages::JobQuery {
        user: req.q("user"),
        partition: req.q("partition"),
        state: req.q("state"),
        name: req.q("name"),
        reason: req.q("reason"),
        sort: req.q("sort"),
        page: req.q("page").parse().unwrap_or(1),
    };
    // User and partition are the controller's filters (squeue's -u and
    // -p): only those jobs cross the wire.
    let one = |v: &str| {
        if v.is_empty() {
            Vec::new()
        } else {
            vec![v.to_string()]
        }
    };
    let jobs = job_rows(
        ctx,
        who,
        proto::JobFilter {
            users: one(q.user),
            partitions: one(q.partition),
            ..Default::default()
        },
    )?;
    let mut body = String::new();
    let field = |id: &str, label: &str, v: &str| {
        format!(
            "<label for=\"{id}\">{label}</label> <input id=\"{id}\" name=\"{id}\" value=\"{}\" size=\"10\"> ",
            esc(v)
        )
    };
    let _ = write!(
        body,
        "<form method=\"get\" action=\"/jobs\" role=\"search\">{}{}{}{}\
         <label for=\"sort\">sort by</label> <select id=\"sort\" name=\"sort\">",
        field("user", "user", q.user),
        field("partition", "partition", q.partition),
        field("state", "state", q.state),
        field("name", "name", q.name)
    );
    for s in ["id", "user", "name", "state", "priority"] {
        let sel = if s == q.sort { " selected" } else { "" };
        let _ = write!(body, "<option{sel}>{s}</option>");
    }
    body.push_str("</select> ");
    if !q.reason.is_empty() {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"reason\" value=\"{}\">",
            esc(q.reason)
        );
    }
    body.push_str("<button type=\"submit\">Filter</button></form>");
    body.push_str(&pages::jobs_listing(&jobs, &q));
    Ok(Out::html(200, page("Jobs", &who.user, Some(LIVE), &body)))
}

fn parse_job_id(id: &str) -> Option<JobId> {
    id.parse::<u32>().ok().map(JobId)
}

fn job_page(
    ctx: &Ctx,
    ui: &UiState,
    admins: &[u32],
    who: &Identity,
    id: &str,
) -> Result<Out, String> {
    let Some(wanted) = parse_job_id(id) else {
        return Ok(error_page(
            who,
            404,
            &format!("Invalid job id specified: {id}"),
        ));
    };
    let (jobs, now) = query_jobs(
        ctx,
        who,
        proto::JobFilter {
            job_ids: vec![wanted.0],
            ..Default::default()
        },
    )?;
    let Some(j) = jobs.iter().find(|j| j.job_id == wanted) else {
        return Ok(error_page(
            who,
            404,
            &format!("Invalid job id specified: {id}"),
        ));
    };
    let mut body = pages::job_fields(j);
    if j.uid == who.uid || is_admin(who, admins) || is_operator(ctx, who) {
        body.push_str(&pages::job_actions(j, &csrf_token(ui, who)));
    }
    if j.state == JobState::Pending {
        if let Ok(CtldResponse::Explanation(x)) =
            ask(ctx, who, CtldRequest::Explain { job_id: j.job_id })
        {
            let _ = write!(
                body,
                "<h2>Why it waits</h2><pre id=\"explain\">{}</pre>",
                esc(&cli::explain::render(&x, now))
            );
        }
        // This job's factors alone; a controller older than the request
        // is asked for the whole queue's.
        let factors = ask(
            ctx,
            who,
            CtldRequest::JobPriorities {
                job_ids: vec![j.job_id.0],
            },
        )
        .or_else(|_| ask(ctx, who, CtldRequest::Priorities));
        if let Ok(CtldResponse::Priorities(p)) = factors {
            if let Some(row) = p.jobs.iter().find(|r| r.job_id == j.job_id) {
                let f = &row.factors;
                let rows: Vec<Vec<String>> = [
                    ("site", f.site),
                    ("age", f.age),
                    ("association", f.assoc),
                    ("fair-share", f.fairshare),
                    ("job size", f.jobsize),
                    ("partition", f.partition),
                    ("QOS", f.qos),
                ]
                .iter()
                .map(|(k, v)| vec![esc(k), format!("{v:.0}")])
                .chain(f.tres.iter().map(|(k, v)| vec![esc(k), format!("{v:.0}")]))
                .chain([vec!["nice".to_string(), f.nice.to_string()]])
                .collect();
                let _ = write!(
                    body,
                    "<h2>Priority {}</h2>{}",
                    row.priority,
                    table("Priority factors (weighted)", &["factor", "value"], &rows)
                );
            }
        }
    }
    // The steps as sacct and sstat show them to the viewer: each asked as
    // the viewer, so the controller's rights apply; a question refused (or
    // accounting not kept) leaves its part out rather than failing the page.
    let running: Vec<proto::StepInfo> = match ask(ctx, who, CtldRequest::ListSteps) {
        Ok(CtldResponse::Steps(list)) => list
            .steps
            .into_iter()
            .filter(|s| s.job_id == j.job_id)
            .collect(),
        _ => Vec::new(),
    };
    let acct = match ask(
        ctx,
        who,
        CtldRequest::AcctQuery(AcctQuery {
            job_ids: vec![j.job_id.0],
            ..Default::default()
        }),
    ) {
        Ok(CtldResponse::AcctJobs(a)) => a
            .into_iter()
            .find(|a| a.job_id == j.job_id)
            .map(|a| a.steps)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let live = if running.is_empty() {
        Vec::new()
    } else {
        match ask(ctx, who, CtldRequest::StepStat { job_id: j.job_id }) {
            Ok(CtldResponse::StepStats(s)) => s,
            _ => Vec::new(),
        }
    };
    let _ = write!(
        body,
        "<h2>Steps</h2>{}",
        pages::steps_table(
            j.job_id,
            &running.iter().collect::<Vec<_>>(),
            &acct,
            &live,
            now
        )
    );
    if let Some(tail) = output_tail(&j.stdout, who, admins) {
        let _ = write!(
            body,
            "<h2>Output</h2><p>The end of {}:</p><pre id=\"output\">{}</pre>",
            esc(&j.stdout),
            esc(&tail)
        );
    }
    Ok(Out::html(
        200,
        page(
            &format!("Job {}", pages::job_id_str(j)),
            &who.user,
            Some(LIVE),
            &body,
        ),
    ))
}

/// The end of a job's output file, when the viewer may read it: they own
/// it, or it is readable by all, or they are an administrator.
fn output_tail(path: &str, who: &Identity, admins: &[u32]) -> Option<String> {
    use std::io::{Read as _, Seek as _};
    use std::os::unix::fs::MetadataExt as _;
    if path.is_empty() || path.contains('%') {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    let may = is_admin(who, admins) || meta.uid() == who.uid || meta.mode() & 0o004 != 0;
    if !may || !meta.is_file() {
        return None;
    }
    let mut f = std::fs::File::open(path).ok()?;
    let from = meta.len().saturating_sub(TAIL_BYTES);
    f.seek(std::io::SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn job_action(ctx: &Ctx, who: &Identity, id: &str, action: &str) -> Result<Out, String> {
    let Some(job_id) = parse_job_id(id) else {
        return Ok(error_page(
            who,
            404,
            &format!("Invalid job id specified: {id}"),
        ));
    };
    let req = match action {
        "cancel" => CtldRequest::Cancel {
            job_id,
            signal: None,
            batch_only: false,
            full: false,
            tasks: None,
        },
        "hold" => CtldRequest::Hold {
            job_id,
            user: true,
            tasks: None,
        },
        "release" => CtldRequest::Release {
            job_id,
            tasks: None,
        },
        "requeue" => CtldRequest::Requeue {
            job_id,
            hold: false,
            tasks: None,
        },
        other => return Ok(error_page(who, 404, &format!("no action {other}"))),
    };
    match ask(ctx, who, req) {
        Ok(_) => Ok(Out::redirect(&format!("/jobs/{}?done={action}", job_id.0))),
        Err(e) => Ok(error_page(
            who,
            403,
            &format!("{action} of job {}: {e}", job_id.0),
        )),
    }
}

fn node_page(ctx: &Ctx, who: &Identity, name: &str) -> Result<Out, String> {
    let Some(nodes) = unless_private(nodes_of(ctx, who))? else {
        return Ok(error_page(
            who,
            403,
            &format!(
                "Node {name}: {}",
                proto::SlurmError::AccessDenied.as_slurm_str()
            ),
        ));
    };
    let Some(n) = nodes.iter().find(|n| n.name == name) else {
        return Ok(error_page(who, 404, &format!("Node {name} not found")));
    };
    let jobs = job_rows(ctx, who, proto::JobFilter::default())?;
    let state = n.state.sinfo_long();
    let gres = n
        .gres
        .iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let gres_used = n
        .gres_used
        .iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let rows: Vec<Vec<String>> = [
        ("State", html::badge(&state)),
        ("StateFlags", esc(&n.state.scontrol_string())),
        (
            "Reason",
            esc(&match (&n.reason, &n.reason_user, n.reason_time) {
                (Some(r), Some(u), Some(t)) => format!("{r} [{u}@{}]", time(t)),
                (Some(r), _, _) => r.clone(),
                _ => "none".to_string(),
            }),
        ),
        ("CPUs", format!("{} allocated of {}", n.alloc_cpus, n.cpus)),
        (
            "Memory",
            format!("{} MB allocated of {}", n.alloc_mem, n.real_memory),
        ),
        ("Gres", esc(&gres)),
        ("GresUsed", esc(&gres_used)),
        ("Partitions", esc(&n.partitions.join(","))),
        ("Features", esc(&n.features.join(","))),
        (
            "CPULoad",
            n.cpu_load.map_or("N/A".into(), |l| format!("{l:.2}")),
        ),
        ("BootTime", n.boot_time.map_or("None".into(), time)),
        (
            "SlurmdStartTime",
            n.slurmd_start_time.map_or("None".into(), time),
        ),
    ]
    .into_iter()
    .map(|(k, v)| vec![esc(k), v])
    .collect();
    let here: Vec<pages::Job> = pages::jobs(&jobs)
        .filter(|j| j.row.state == JobState::Running && j.nodes().any(|x| x == name))
        .collect();
    // The controller keeps the last runs of each node in memory; an older
    // controller that does not know the request leaves the list empty.
    let runs = match ask(
        ctx,
        who,
        CtldRequest::HealthChecks {
            node: Some(name.to_string()),
        },
    ) {
        Ok(CtldResponse::HealthChecks(r)) => r,
        _ => Vec::new(),
    };
    let health = if runs.is_empty() {
        "<p id=\"health\">No health check has run on this node since the controller started \
         (slurm.conf's <code>HealthCheckProgram</code> sets one).</p>"
            .to_string()
    } else {
        format!("<div id=\"health\">{}</div>", pages::health_table(&runs))
    };
    let body = format!(
        "{}<h2>Jobs on {}</h2>{}<h2>Health checks</h2>{health}",
        table("Node", &["field", "value"], &rows),
        esc(name),
        pages::jobs_table(&here, jobs.now),
    );
    Ok(Out::html(
        200,
        page(&format!("Node {name}"), &who.user, Some(LIVE), &body),
    ))
}

fn history_page(ctx: &Ctx, who: &Identity, req: &Req) -> Result<Out, String> {
    let now = now();
    let days: i64 = req.q("days").parse().unwrap_or(7).clamp(1, 366);
    let from = now - days * 86_400;
    let jobs = match ask(
        ctx,
        who,
        CtldRequest::AcctQuery(finished_between(from, now)),
    )? {
        CtldResponse::AcctJobs(j) => j,
        _ => Vec::new(),
    };
    let done: Vec<proto::AcctJob> = jobs.into_iter().filter(|j| j.end_time.is_some()).collect();
    let mut body = format!(
        "<form method=\"get\" action=\"/history\"><label for=\"days\">days</label> \
         <input id=\"days\" name=\"days\" value=\"{days}\" size=\"4\"> <button type=\"submit\">Show</button></form>\
         <p>{} finished jobs since {}.</p>",
        done.len(),
        time(from)
    );
    body.push_str(&pages::history(&done, from, now));
    Ok(Out::html(200, page("History", &who.user, None, &body)))
}

fn fairshare_page(ctx: &Ctx, who: &Identity) -> Result<Out, String> {
    let rows = match ask(ctx, who, CtldRequest::Shares)? {
        CtldResponse::Shares(r) => r,
        _ => Vec::new(),
    };
    Ok(Out::html(
        200,
        page(
            "Fair share",
            &who.user,
            None,
            &pages::fairshare_table(&rows),
        ),
    ))
}

fn reservations_page(ctx: &Ctx, who: &Identity) -> Result<Out, String> {
    let list = match ask(ctx, who, CtldRequest::ListReservations)? {
        CtldResponse::Reservations(r) => r,
        _ => Vec::new(),
    };
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|r| {
            vec![
                esc(&r.name),
                if r.active { "ACTIVE" } else { "INACTIVE" }.to_string(),
                time(r.start),
                time(r.end),
                esc(&r.nodes),
                r.node_cnt.to_string(),
                esc(&r.flags),
                esc(&r.users),
                esc(&r.accounts),
            ]
        })
        .collect();
    let body = table(
        "Reservations",
        &[
            "name",
            "state",
            "start",
            "end",
            "nodes",
            "node count",
            "flags",
            "users",
            "accounts",
        ],
        &rows,
    );
    Ok(Out::html(
        200,
        page("Reservations", &who.user, Some(LIVE), &body),
    ))
}

/// The simulator's form: a trace (pasted or the site's recent history),
/// run A with the site's own settings and run B with one changed.
fn sim_page(ui: &UiState, who: &Identity, result: Option<&str>) -> Out {
    let mut body = String::from(
        "<p>Replay a workload trace through the scheduler twice, with the site's policy (A) and with a changed setting (B), and compare.</p>",
    );
    let _ = write!(body, "<p>{}</p>", site_words(ui.site.as_ref()));
    let options = |selected: &str| {
        [
            ("site", "the site's (SchedulerType)"),
            ("backfill", "backfill"),
            ("easy", "easy"),
            ("fcfs", "fcfs"),
        ]
        .iter()
        .map(|(v, words)| {
            let sel = if *v == selected { " selected" } else { "" };
            format!("<option value=\"{v}\"{sel}>{words}</option>")
        })
        .collect::<String>()
    };
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/sim\">{}\
         <p><label><input type=\"radio\" name=\"source\" value=\"history\" checked> the cluster's jobs of the last \
         <input name=\"days\" value=\"30\" size=\"4\" aria-label=\"days\"> days, on the cluster's own nodes</label><br>\
         <label><input type=\"radio\" name=\"source\" value=\"trace\"> this trace (Standard Workload Format, on the machine its header names):</label><br>\
         <textarea name=\"trace\" rows=\"6\" cols=\"80\" aria-label=\"trace\"></textarea></p>\
         <p><label for=\"a\">schedule A</label> <select id=\"a\" name=\"a\">{}</select> \
         <label for=\"b\">schedule B</label> <select id=\"b\" name=\"b\">{}</select></p>\
         <p><label for=\"b_params\">B's SchedulerParameters (empty: the site's)</label> \
         <input id=\"b_params\" name=\"b_params\" size=\"60\" placeholder=\"bf_window=1440,bf_continue\"></p>\
         <button type=\"submit\">Simulate</button></form>",
        html::csrf_field(&csrf_token(ui, who)),
        options("site"),
        options("easy"),
    );
    if let Some(r) = result {
        body.push_str(r);
    }
    Out::html(200, page("Simulator", &who.user, None, &body))
}

/// The site's settings, in words, for the page.
fn site_words(site: Option<&SiteConf>) -> String {
    match site {
        Some(c) => format!(
            "The site: {} nodes, {} CPUs, SchedulerType={}{} (from {}).",
            c.nodes,
            c.cpus,
            esc(&c.scheduler_type),
            if c.scheduler_params.is_empty() {
                String::new()
            } else {
                format!(", SchedulerParameters={}", esc(&c.scheduler_params))
            },
            esc(&c.path.display().to_string())
        ),
        None => "The cluster's slurm.conf is unknown here: runs use the trace's machine and the simulator's default scheduler.".to_string(),
    }
}

/// One simulated schedule: the policy (None: the configuration's
/// SchedulerType) and SchedulerParameters (None: the site's).
struct SimRun {
    policy: Option<String>,
    params: Option<String>,
}

impl SimRun {
    fn words(&self, site: Option<&SiteConf>) -> String {
        let policy = match (&self.policy, site) {
            (Some(p), _) => p.clone(),
            (None, Some(c)) => format!("the site's {}", c.scheduler_type),
            (None, None) => "the default policy".to_string(),
        };
        match &self.params {
            Some(p) => format!("{policy}, SchedulerParameters={p}"),
            None => policy,
        }
    }
}

/// What one run of `muster sim` gives: its summary (JSON), its pictures
/// (one SVG document) and each job's (submit, start, end).
struct SimResult {
    summary: serde_json::Value,
    svg: String,
    jobs: Vec<(i64, i64, i64)>,
}

/// One run of `muster sim` in `dir`, named `name` there.
fn run_sim(
    ui: &UiState,
    dir: &std::path::Path,
    name: &str,
    trace: &std::path::Path,
    config: Option<&std::path::Path>,
    policy: Option<&str>,
) -> Result<SimResult, String> {
    let svg = dir.join(format!("{name}.svg"));
    let csv = dir.join(format!("{name}.csv"));
    let mut cmd = std::process::Command::new(&ui.muster);
    cmd.arg("sim")
        .arg("--trace")
        .arg(trace)
        .arg("--json")
        .arg("--quiet");
    cmd.arg("--svg").arg(&svg).arg("--csv").arg(&csv);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    if let Some(p) = policy {
        cmd.args(["--policy", p]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running muster sim: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "schedule {}: {}",
            name.to_uppercase(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let summary =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("muster sim's answer: {e}"))?;
    Ok(SimResult {
        summary,
        svg: std::fs::read_to_string(&svg).unwrap_or_default(),
        jobs: sim_jobs(&std::fs::read_to_string(&csv).unwrap_or_default()),
    })
}

/// Each job's (submit, start, end) from `muster sim --csv`'s lines
/// (`id,submit,start,end,procs,nodes`).
fn sim_jobs(csv: &str) -> Vec<(i64, i64, i64)> {
    csv.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split(',').skip(1).map(|v| v.parse::<i64>().ok());
            Some((f.next()??, f.next()??, f.next()??))
        })
        .collect()
}

/// The site's finished jobs as a Standard Workload Format trace, with the
/// cluster's size (nodes, CPUs) in its header when known, so that the
/// trace read alone describes the machine the jobs ran on rather than the
/// widest job.
fn history_trace(jobs: &[proto::AcctJob], machine: Option<(usize, u64)>) -> String {
    let mut s = String::new();
    let t0 = jobs.iter().map(|j| j.submit_time).min().unwrap_or(0);
    let _ = writeln!(s, "; UnixStartTime: {t0}");
    if let Some((nodes, cpus)) = machine {
        let _ = writeln!(s, "; MaxNodes: {nodes}");
        let _ = writeln!(s, "; MaxProcs: {cpus}");
    }
    for (i, j) in jobs.iter().enumerate() {
        let (Some(st), Some(en)) = (j.start_time, j.end_time) else {
            continue;
        };
        let limit = match j.time_limit {
            model::TimeLimit::Minutes(m) => i64::from(m) * 60,
            _ => -1,
        };
        let _ = writeln!(
            s,
            "{} {} {} {} {} -1 -1 {} {limit} -1 1 {} -1 -1 -1 -1 -1 -1",
            i + 1,
            j.submit_time - t0,
            st - j.submit_time,
            en - st,
            j.n_cpus,
            j.n_cpus,
            j.uid
        );
    }
    s
}

/// The machine a pasted trace names in its header, in words.
fn trace_machine(trace: &str) -> String {
    let header = |key: &str| {
        trace
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix(';'))
            .find_map(|l| l.trim_start().strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    match (header("MaxNodes:"), header("MaxProcs:")) {
        (_, None) => "the trace's machine: it names none (no MaxProcs header), so the simulator sizes it to the widest job".to_string(),
        (Some(n), Some(p)) => format!("the trace's machine: {n} nodes, {p} CPUs (its header)"),
        (None, Some(p)) => format!("the trace's machine: {p} CPUs (its header)"),
    }
}

/// The site's slurm.conf text, with its relative `Include` lines made
/// absolute: the copy is read from a temporary directory, and slurm.conf
/// resolves includes against the directory of the file read.
fn site_text(site: &SiteConf) -> Result<String, String> {
    let text = std::fs::read_to_string(&site.path)
        .map_err(|e| format!("reading {}: {e}", site.path.display()))?;
    let dir = site.path.parent().unwrap_or(std::path::Path::new("/"));
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let target = t
            .get(..8)
            .filter(|h| h.eq_ignore_ascii_case("include ") || h.eq_ignore_ascii_case("include\t"))
            .map(|_| t[8..].trim());
        match target {
            Some(f) if !f.is_empty() && !f.starts_with('/') => {
                let _ = writeln!(out, "Include {}", dir.join(f).display());
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// The `--config` file for a run, written in `dir` when the site's file
/// will not do as it is: with the cluster's history, the site's slurm.conf
/// (its nodes and scheduler), with B's SchedulerParameters appended when
/// changed (the last line wins); with a pasted trace, only the site's
/// scheduler settings, so the trace's own machine is used.
fn run_config(
    dir: &std::path::Path,
    name: &str,
    site: Option<&SiteConf>,
    history: bool,
    run: &SimRun,
) -> Result<Option<std::path::PathBuf>, String> {
    let text = match (site, history, &run.params) {
        (Some(c), true, None) => return Ok(Some(c.path.clone())),
        (Some(c), true, Some(p)) => format!("{}\nSchedulerParameters={p}\n", site_text(c)?),
        (site, false, params) => {
            let mut t = String::new();
            if let Some(c) = site {
                let _ = writeln!(t, "SchedulerType={}", c.scheduler_type);
            }
            let params = params
                .as_deref()
                .or(site.map(|c| c.scheduler_params.as_str()))
                .unwrap_or("");
            if !params.is_empty() {
                let _ = writeln!(t, "SchedulerParameters={params}");
            }
            if t.is_empty() {
                return Ok(None);
            }
            t
        }
        (None, true, None) => return Ok(None),
        (None, true, Some(p)) => format!("SchedulerParameters={p}\n"),
    };
    let path = dir.join(format!("{name}.conf"));
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(Some(path))
}

fn sim_run(ctx: &Ctx, ui: &UiState, who: &Identity, req: &Req) -> Out {
    let fail = |e: &str| {
        sim_page(
            ui,
            who,
            Some(&format!("<p class=\"err\" role=\"alert\">{}</p>", esc(e))),
        )
    };
    let policy = |p: &str| match p {
        "site" | "" => Some(None),
        "backfill" | "easy" | "fcfs" => Some(Some(p.to_string())),
        _ => None,
    };
    let (Some(a), Some(b)) = (policy(req.f("a")), policy(req.f("b"))) else {
        return fail("unknown policy: site, backfill, easy or fcfs");
    };
    let b_params = req.f("b_params").trim();
    if b_params.chars().any(char::is_control) {
        return fail("SchedulerParameters is one line");
    }
    let runs = [
        SimRun {
            policy: a,
            params: None,
        },
        SimRun {
            policy: b,
            params: (!b_params.is_empty()).then(|| b_params.to_string()),
        },
    ];
    let site = ui.site.as_ref();
    let history = req.f("source") != "trace";
    let (text, machine) = if history {
        let days: i64 = req.f("days").parse().unwrap_or(30).clamp(1, 366);
        let now = now();
        let text = match ask(
            ctx,
            who,
            CtldRequest::AcctQuery(finished_between(now - days * 86_400, now)),
        ) {
            Ok(CtldResponse::AcctJobs(j)) => history_trace(&j, site.map(|c| (c.nodes, c.cpus))),
            Ok(_) => String::new(),
            Err(e) => return fail(&e),
        };
        let machine = match site {
            Some(c) => format!(
                "the cluster's own: {} nodes, {} CPUs (its slurm.conf)",
                c.nodes, c.cpus
            ),
            None => trace_machine(&text),
        };
        (text, machine)
    } else {
        let text = req.f("trace").to_string();
        let machine = trace_machine(&text);
        (text, machine)
    };
    let dir = match tempdir() {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    let trace = dir.join("trace.swf");
    let result = std::fs::write(&trace, text.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|()| {
            let mut out = Vec::new();
            for (name, run) in ["a", "b"].into_iter().zip(&runs) {
                let config = run_config(&dir, name, site, history, run)?;
                out.push(run_sim(
                    ui,
                    &dir,
                    name,
                    &trace,
                    config.as_deref(),
                    run.policy.as_deref(),
                )?);
            }
            Ok(out)
        });
    let _ = std::fs::remove_dir_all(&dir);
    let html = match result {
        Err(e) => format!("<p class=\"err\" role=\"alert\">{}</p>", esc(&e)),
        Ok(results) => sim_results(&runs, &results, site, &machine),
    };
    sim_page(ui, who, Some(&html))
}

/// The two runs' results: the summary side by side, then each run's
/// charts in a column of its own (stacked on a narrow screen).
fn sim_results(
    runs: &[SimRun],
    results: &[SimResult],
    site: Option<&SiteConf>,
    machine: &str,
) -> String {
    let names = ["A", "B"];
    let heads: Vec<String> = runs
        .iter()
        .zip(names)
        .map(|(r, n)| format!("{n}: {}", r.words(site)))
        .collect();
    let keys = [
        "jobs",
        "utilization",
        "mean_wait_s",
        "max_wait_s",
        "mean_bsld",
        "makespan_s",
    ];
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            std::iter::once(esc(k))
                .chain(results.iter().map(|r| esc(&r.summary[k].to_string())))
                .collect()
        })
        .collect();
    let mut head: Vec<&str> = vec!["measure"];
    head.extend(heads.iter().map(String::as_str));
    let mut s = format!(
        "<h2>Results</h2><p id=\"sim-machine\">Machine: {}.</p>{}<div class=\"grid2\">",
        esc(machine),
        table("Summary", &head, &rows)
    );
    for ((r, n), h) in results.iter().zip(names).zip(&heads) {
        let p = n.to_ascii_lowercase();
        let _ = write!(
            s,
            "<section aria-labelledby=\"run-{p}\" data-run=\"{p}\"><h3 id=\"run-{p}\">{}</h3>{}{}</section>",
            esc(h),
            prefix_ids(&r.svg, &p),
            pages::slowdown_chart(&format!("{p}-slowdown"), &r.jobs),
        );
    }
    s.push_str("</div>");
    s
}

/// `svg` with every element id, and the references to them in
/// `aria-labelledby`, prefixed by `prefix-`: the two runs' pictures are
/// inlined in one page, and `muster sim` names the ids the same in both.
fn prefix_ids(svg: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(svg.len() + 64);
    let mut rest = svg;
    loop {
        let id = rest.find(" id=\"").map(|i| (i, " id=\"".len(), false));
        let by = rest
            .find(" aria-labelledby=\"")
            .map(|i| (i, " aria-labelledby=\"".len(), true));
        let next = match (id, by) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        let Some((at, len, list)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at + len]);
        rest = &rest[at + len..];
        let end = rest.find('"').unwrap_or(rest.len());
        let value = &rest[..end];
        if list {
            let ids: Vec<String> = value
                .split_whitespace()
                .map(|v| format!("{prefix}-{v}"))
                .collect();
            out.push_str(&ids.join(" "));
        } else {
            let _ = write!(out, "{prefix}-{value}");
        }
        rest = &rest[end..];
    }
}

fn tempdir() -> Result<std::path::PathBuf, String> {
    let base = std::env::temp_dir().join(format!("muster-ui-sim-{}-{}", std::process::id(), now()));
    for i in 0..100 {
        let p = base.with_extension(i.to_string());
        if std::fs::create_dir(&p).is_ok() {
            return Ok(p);
        }
    }
    Err("could not make a temporary directory".into())
}

/// Parses an `application/x-www-form-urlencoded` body.
pub fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    crate::parse_query(&String::from_utf8_lossy(body))
}

#[cfg(test)]
mod tests;
