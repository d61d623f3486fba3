//! `muster restd` (slurmrestd): Slurm's REST API, v0.0.38 as slurmrestd
//! 22.05 serves it (`../shared/reference/slurm-22.05/rest_*`), over HTTP/1.1
//! (hyper) on TCP or a Unix socket, talking to the controller through the
//! client library only. docs/rest.md is the user's and admin's guide.
//! The data parser v0.0.44 is served beside it (`v0044`), and slurmdbd's
//! v0.0.38 paths beyond jobs are in `dbv0038`.
//!
//! ```text
//!  HTTP request --authenticate--> Identity --route (api::ROUTES)--> handler (blocking)
//!      JWT (auth::jwt: AuthAltParameters=jwt_key= HS256, jwks= RS256)  |
//!      or SO_PEERCRED on a Unix socket (rest_auth/local)              v
//!                             client::Client as restd's user: OnBehalf { user, request }
//! ```
//!
//! # Acting for a user
//!
//! restd proves *its own* identity to the controller (auth/muster or MUNGE,
//! as any command); it learns its caller's from a JWT it checks with the
//! cluster's JWT key, or from the kernel (SO_PEERCRED) on a Unix socket.
//! Each request then travels as `CtldRequest::OnBehalf { user, request }`,
//! which the controller takes only from root or SlurmUser and handles
//! exactly as `request` sent by `user` (every permission check sees
//! `user`). So restd must run as root or SlurmUser (as slurmrestd must be
//! able to read the JWT key); a caller who is restd's own user is served
//! without the wrapper. A restd run by anyone else can only act as itself:
//! the controller refuses its `OnBehalf`.
//!
//! Tokens are minted by the controller (`scontrol token`,
//! `CtldRequest::Token`), which holds the key; restd reads the same key.
//! Missing headers are answered 401; a forged, expired or unknown-user
//! token as slurmrestd answers a token the controller refuses
//! (`rest_bad_token.response`: 500, "slurmctld config is unable to load").
#![warn(missing_docs)]

pub mod api;
mod body;
pub mod dbquery;
pub mod dbv0038;
pub mod fuzz;
pub mod jobcache;
pub mod json;
pub mod metrics;
pub mod openapi;
pub mod submit;
pub mod ui;
pub mod v0038;
pub mod v0044;
pub mod watch;

use anyhow::{bail, Context};
use http_body_util::BodyExt;
use proto::Identity;
use std::path::PathBuf;
use std::sync::Arc;
use tracing::{info, warn};

/// How callers prove who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// `rest_auth/jwt`: a token in `X-SLURM-USER-TOKEN` or `Authorization: Bearer`.
    Jwt,
    /// `rest_auth/local`: the peer's uid on a Unix socket.
    Local,
}

impl AuthMode {
    /// `rest_auth/jwt` or `rest_auth/local` (also without the prefix).
    pub fn parse(s: &str) -> Option<AuthMode> {
        match s.strip_prefix("rest_auth/").unwrap_or(s) {
            "jwt" => Some(AuthMode::Jwt),
            "local" => Some(AuthMode::Local),
            _ => None,
        }
    }
}

/// Where to listen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// `[ADDR:]PORT` (ADDR defaults to 0.0.0.0 as slurmrestd's).
    Tcp(String),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Listen {
    /// Parses slurmrestd's listen argument.
    pub fn parse(s: &str) -> Result<Listen, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("invalid socket {s}"));
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) => (h.trim_matches(['[', ']']).to_string(), p),
            None => ("0.0.0.0".to_string(), s),
        };
        let port: u16 = port.parse().map_err(|_| format!("invalid port in {s}"))?;
        let host = if host.is_empty() {
            "0.0.0.0".to_string()
        } else {
            host
        };
        Ok(Listen::Tcp(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }))
    }
}

/// `muster restd`'s options.
#[derive(Clone, Debug)]
pub struct Options {
    /// `-f slurm.conf`.
    pub conf: Option<PathBuf>,
    /// `-a`: None picks jwt on TCP, local on a Unix socket.
    pub auth: Option<AuthMode>,
    /// Where to listen (at least one).
    pub listen: Vec<Listen>,
    /// `--ui-user-header`: the dashboard trusts this header, set by an
    /// authenticating reverse proxy, to name the user.
    pub ui_user_header: Option<String>,
}

/// How requests are authenticated, fixed at start.
struct Authn {
    mode: AuthMode,
    /// `jwt_key=` (HS256) and `jwks=` (RS256) of AuthAltParameters.
    tokens: Option<auth::jwt::TokenCheck>,
    /// root and SlurmUser: a token of theirs may name another user
    /// (`X-SLURM-USER-NAME`), as in Slurm.
    daemon_uids: Vec<u32>,
    host: String,
}

struct Server {
    ctx: api::Ctx,
    authn: Authn,
    ui: ui::UiState,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn identity_of_user(user: &nix::unistd::User, host: &str) -> Identity {
    Identity {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        user: user.name.clone(),
        host: host.to_string(),
    }
}

fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

impl Authn {
    /// Who the request comes from, or the answer refusing it.
    fn authenticate(
        &self,
        headers: &hyper::HeaderMap,
        peer_uid: Option<u32>,
    ) -> Result<Identity, api::Resp> {
        match self.mode {
            AuthMode::Local => {
                let uid = peer_uid.ok_or_else(api::unauthenticated)?;
                match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
                    Ok(Some(u)) => Ok(identity_of_user(&u, &self.host)),
                    _ => Err(api::bad_token()),
                }
            }
            AuthMode::Jwt => {
                let token = header(headers, "x-slurm-user-token").or_else(|| {
                    header(headers, "authorization").and_then(|a| {
                        a.strip_prefix("Bearer ")
                            .or_else(|| a.strip_prefix("bearer "))
                    })
                });
                let Some(token) = token.filter(|t| !t.is_empty()) else {
                    return Err(api::unauthenticated());
                };
                let check = self.tokens.as_ref().ok_or_else(api::bad_token)?;
                let claims = check.verify(token, now()).map_err(|e| {
                    info!("refused a token: {e}");
                    api::bad_token()
                })?;
                let owner = nix::unistd::User::from_name(&claims.sun)
                    .ok()
                    .flatten()
                    .ok_or_else(api::bad_token)?;
                let user = match header(headers, "x-slurm-user-name") {
                    Some(name) if !name.is_empty() && name != claims.sun => {
                        if !self.daemon_uids.contains(&owner.uid.as_raw()) {
                            info!(
                                "refused a token of {} used for {name}: not root or SlurmUser",
                                claims.sun
                            );
                            return Err(api::bad_token());
                        }
                        nix::unistd::User::from_name(name)
                            .ok()
                            .flatten()
                            .ok_or_else(api::bad_token)?
                    }
                    _ => owner,
                };
                Ok(identity_of_user(&user, &self.host))
            }
        }
    }
}

/// The most a request body may hold.
const MAX_BODY: usize = 16 << 20;

type Body = http_body_util::Either<body::Pieces, watch::SseBody>;

impl AsRef<api::Ctx> for Server {
    fn as_ref(&self) -> &api::Ctx {
        &self.ctx
    }
}

/// A watch stream's answer (`watch`).
fn respond_stream(body: watch::SseBody) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(http_body_util::Either::Right(body));
    let h = r.headers_mut();
    for (k, v) in [
        (hyper::header::CONTENT_TYPE, "text/event-stream"),
        (hyper::header::CACHE_CONTROL, "no-cache"),
    ] {
        h.insert(k, hyper::header::HeaderValue::from_static(v));
    }
    r
}

fn respond(resp: api::Resp) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(http_body_util::Either::Left(body::Pieces::from(resp.body)));
    *r.status_mut() = hyper::StatusCode::from_u16(resp.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.extensions_mut()
        .insert(hyper::ext::ReasonPhrase::from_static(
            api::reason(resp.status).as_bytes(),
        ));
    let h = r.headers_mut();
    if resp.status >= 400 {
        h.insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("Close"),
        );
    }
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(resp.content_type),
    );
    r
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => match s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    out.push(v);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a query string into its pairs.
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

async fn handle(
    server: Arc<Server>,
    peer_uid: Option<u32>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, std::convert::Infallible> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(parse_query).unwrap_or_default();
    if ui::is_ui_path(&path) {
        let out = handle_ui(server.clone(), peer_uid, req, method.clone(), path, query).await;
        server.ctx.metrics.count(&method, out.status);
        return Ok(respond_ui(out));
    }
    let resp = match api::find(&method, &path) {
        Err(status) => api::Resp::json(
            status,
            &v0038::answer(
                false,
                vec![v0038::error(
                    &format!("Unable to find a handler for {method} {path}"),
                    -1,
                    if status == 404 {
                        "Not found"
                    } else {
                        "Method not allowed"
                    },
                    "muster_restd",
                )],
                vec![],
            ),
        ),
        Ok((route, params)) => {
            let who = if route.auth {
                match cookie_headers(req.headers(), &method) {
                    Some(h) => server.authn.authenticate(&h, peer_uid),
                    None => server.authn.authenticate(req.headers(), peer_uid),
                }
            } else {
                Ok(Identity {
                    uid: u32::MAX,
                    gid: u32::MAX,
                    user: String::new(),
                    host: String::new(),
                })
            };
            match who {
                Err(resp) => resp,
                Ok(who) if route.op == watch::OP => {
                    let last = header(req.headers(), "last-event-id").map(str::to_string);
                    match watch::open(server.clone(), who, &query, last.as_deref()).await {
                        watch::Answer::Stream(body) => {
                            server.ctx.metrics.count(&method, 200);
                            return Ok(respond_stream(body));
                        }
                        watch::Answer::Refused(resp) => resp,
                    }
                }
                Ok(who) => {
                    let accept = header(req.headers(), "accept").unwrap_or("").to_string();
                    let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY);
                    match limited.collect().await {
                        Err(_) => api::Resp::json(
                            413,
                            &v0038::answer(
                                false,
                                vec![v0038::error(
                                    "request body too large or unreadable",
                                    -1,
                                    "Unspecified error",
                                    "muster_restd",
                                )],
                                vec![],
                            ),
                        ),
                        Ok(body) => {
                            let call = api::Call {
                                method: method.clone(),
                                path,
                                query,
                                params,
                                body: body.to_bytes().to_vec(),
                                accept,
                            };
                            let s = server.clone();
                            let handler = route.handler;
                            match tokio::task::spawn_blocking(move || handler(&s.ctx, &who, &call))
                                .await
                            {
                                Ok(resp) => resp,
                                Err(e) => {
                                    warn!("a handler failed: {e}");
                                    api::bad_token()
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    server.ctx.metrics.count(&method, resp.status);
    Ok(respond(resp))
}

/// For a GET of the API from the dashboard's pages (the watch stream they
/// follow), which send no token header: the headers with the session
/// cookie's token. None when the request carries its own token, is not a
/// GET (the cookie is never enough to change anything through the API), or
/// has no cookie.
fn cookie_headers(headers: &hyper::HeaderMap, method: &str) -> Option<hyper::HeaderMap> {
    if method != "GET"
        || header(headers, "x-slurm-user-token").is_some()
        || header(headers, "authorization").is_some()
    {
        return None;
    }
    let token = header(headers, "cookie").and_then(ui::cookie_token)?;
    let mut h = headers.clone();
    h.insert(
        "x-slurm-user-token",
        hyper::header::HeaderValue::from_str(token).ok()?,
    );
    Some(h)
}

/// Who a dashboard request comes from: the trusted proxy header when the
/// administrator named one, else the cookie's token, else the API's
/// headers (or the Unix socket's peer).
fn ui_identity(
    server: &Server,
    headers: &hyper::HeaderMap,
    peer_uid: Option<u32>,
) -> Result<Identity, api::Resp> {
    if let Some(name) = &server.ui.user_header {
        if let Some(user) = header(headers, name).filter(|u| !u.is_empty()) {
            return nix::unistd::User::from_name(user)
                .ok()
                .flatten()
                .map(|u| identity_of_user(&u, &server.authn.host))
                .ok_or_else(api::bad_token);
        }
    }
    let cookie = header(headers, "cookie").and_then(ui::cookie_token);
    match cookie {
        Some(token) if server.authn.mode == AuthMode::Jwt => {
            let mut h = hyper::HeaderMap::new();
            if let Ok(v) = hyper::header::HeaderValue::from_str(token) {
                h.insert("x-slurm-user-token", v);
            }
            server.authn.authenticate(&h, peer_uid)
        }
        _ => server.authn.authenticate(headers, peer_uid),
    }
}

async fn handle_ui(
    server: Arc<Server>,
    peer_uid: Option<u32>,
    req: hyper::Request<hyper::body::Incoming>,
    method: String,
    path: String,
    query: Vec<(String, String)>,
) -> ui::Out {
    let headers = req.headers().clone();
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    let form = ui::parse_form(&body);
    match (method.as_str(), path.as_str()) {
        ("GET", "/login") => return ui::login_page(None),
        ("POST", "/login") => {
            let token = form
                .iter()
                .find(|(k, _)| k == "token")
                .map(|(_, v)| v.trim().trim_start_matches("SLURM_JWT=").to_string())
                .unwrap_or_default();
            let mut h = hyper::HeaderMap::new();
            if let Ok(v) = hyper::header::HeaderValue::from_str(&token) {
                h.insert("x-slurm-user-token", v);
            }
            return match server.authn.authenticate(&h, peer_uid) {
                Ok(_) if !token.is_empty() => ui::logged_in(&token),
                _ => ui::login_page(Some(
                    "That token was refused: it is forged, expired or of an unknown user.",
                )),
            };
        }
        (_, "/logout") => return ui::logged_out(),
        _ => {}
    }
    let who = match ui_identity(&server, &headers, peer_uid) {
        Ok(who) => who,
        Err(_) if method == "GET" => return ui::login_page(None),
        Err(_) => return ui::login_page(Some("Log in first.")),
    };
    let req = ui::Req {
        method,
        path,
        query,
        form,
        body,
        origin: header(&headers, "origin").map(str::to_string),
        host: header(&headers, "host").map(str::to_string),
    };
    let s = server.clone();
    tokio::task::spawn_blocking(move || ui::serve(&s.ctx, &s.ui, &s.authn.daemon_uids, &who, &req))
        .await
        .unwrap_or_else(|e| {
            warn!("a page failed: {e}");
            ui::login_page(Some("internal error"))
        })
}

fn respond_ui(out: ui::Out) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(http_body_util::Either::Left(body::Pieces::from(out.body)));
    *r.status_mut() =
        hyper::StatusCode::from_u16(out.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(out.content_type),
    );
    // Pages are never framed elsewhere and never cached.
    h.insert(
        hyper::header::X_FRAME_OPTIONS,
        hyper::header::HeaderValue::from_static("DENY"),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    for (k, v) in out.headers {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&v) {
            h.append(k, v);
        }
    }
    r
}

fn serve_conn<S>(server: Arc<Server>, io: S, peer_uid: Option<u32>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let io = hyper_util::rt::TokioIo::new(io);
        let svc = hyper::service::service_fn(move |req| handle(server.clone(), peer_uid, req));
        let _ = hyper::server::conn::http1::Builder::new()
            // A client that sends no complete header in this time is
            // dropped, so silent connections hold nothing for long.
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(std::time::Duration::from_secs(30))
            .title_case_headers(true)
            // slurmrestd sends no Date.
            .auto_date_header(false)
            .serve_connection(io, svc)
            .await;
    });
}

async fn run(opts: Options) -> anyhow::Result<()> {
    let conf_path = opts
        .conf
        .clone()
        .or_else(client::find_config)
        .context("could not find slurm.conf: give -f or set SLURM_CONF")?;
    let cfg = conf::load(&conf_path)
        .with_context(|| format!("reading {}", conf_path.display()))?
        .config;
    let mode = opts.auth.unwrap_or(match opts.listen.first() {
        Some(Listen::Unix(_)) => AuthMode::Local,
        _ => AuthMode::Jwt,
    });
    if mode == AuthMode::Local && opts.listen.iter().any(|l| matches!(l, Listen::Tcp(_))) {
        bail!("rest_auth/local takes its callers from Unix sockets only: listen on unix:PATH or use -a rest_auth/jwt");
    }
    let tokens = auth::jwt::TokenCheck::from_config(&cfg)
        .context("reading the JWT key or JWKS of AuthAltParameters")?;
    if mode == AuthMode::Jwt && tokens.is_none() {
        bail!("rest_auth/jwt needs AuthAltTypes=auth/jwt and AuthAltParameters=jwt_key=PATH or jwks=PATH in slurm.conf");
    }
    if let Some(jwks) = tokens.as_ref().and_then(|t| t.jwks.as_ref()) {
        info!("RS256 keys of the JWKS: {}", jwks.kids().join(", "));
    }
    let me = client::current_identity();
    let (daemon_uids, _) = auth::daemon_uids(&cfg);
    if !daemon_uids.contains(&me.uid) {
        warn!(
            "running as {} (uid {}), neither root nor SlurmUser: the controller refuses requests on behalf of other users",
            me.user, me.uid
        );
    }
    let host = me.host.clone();
    // Absolute: `muster sim` runs it from wherever restd was started.
    let site = ui::SiteConf::of(
        &std::fs::canonicalize(&conf_path).unwrap_or_else(|_| conf_path.clone()),
        &cfg,
    );
    let server = Arc::new(Server {
        ctx: api::Ctx {
            cluster: cfg.cluster_name.clone(),
            ctld_host: cfg
                .slurmctld_host
                .first()
                .map(|h| h.name.clone())
                .unwrap_or_default(),
            client: client::Client::new(cfg, me),
            metrics: metrics::Counters::default(),
            jobs_v0038: jobcache::JobCache::default(),
            jobs_v0044: jobcache::JobCache::default(),
        },
        authn: Authn {
            mode,
            tokens,
            daemon_uids,
            host,
        },
        ui: ui::UiState {
            site: Some(site),
            ..ui::UiState::new(opts.ui_user_header.clone())
        },
    });
    let mut tasks = Vec::new();
    for l in &opts.listen {
        match l {
            Listen::Tcp(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("listening on {addr}"))?;
                info!("listening on http://{}", listener.local_addr()?);
                let server = server.clone();
                tasks.push(tokio::spawn(async move {
                    loop {
                        match listener.accept().await {
                            Ok((stream, _)) => {
                                let _ = stream.set_nodelay(true);
                                serve_conn(server.clone(), stream, None);
                            }
                            Err(e) => {
                                warn!("accept: {e}");
                                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            }
                        }
                    }
                }));
            }
            Listen::Unix(path) => {
                let _ = std::fs::remove_file(path);
                let listener = tokio::net::UnixListener::bind(path)
                    .with_context(|| format!("listening on {}", path.display()))?;
                // Anyone may connect: the kernel says who they are.
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
                info!("listening on unix:{}", path.display());
                let server = server.clone();
                tasks.push(tokio::spawn(async move {
                    loop {
                        match listener.accept().await {
                            Ok((stream, _)) => {
                                let uid = stream.peer_cred().ok().map(|c| c.uid());
                                serve_conn(server.clone(), stream, uid);
                            }
                            Err(e) => {
                                warn!("accept: {e}");
                                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            }
                        }
                    }
                }));
            }
        }
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            term.recv().await;
            Ok::<(), std::io::Error>(())
        } => {}
    }
    for l in &opts.listen {
        if let Listen::Unix(path) = l {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(())
}

/// Runs the daemon until SIGTERM or SIGINT; the exit status.
pub fn main(opts: Options) -> i32 {
    if opts.listen.is_empty() {
        eprintln!("slurmrestd: error: no listen address: give [HOST:]PORT or unix:PATH");
        return 1;
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("slurmrestd: error: cannot start runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(run(opts)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("slurmrestd: error: {e:#}");
            1
        }
    }
}

#[cfg(test)]
mod tests;
