//! Authentication end to end: the controller and the node daemons refuse
//! requests whose credential is missing, forged or replayed, and log each
//! refusal; as root, real users get their credentials from the node
//! daemon's socket and can neither touch another user's job nor pose as a
//! node or as the controller; with auth/munge, a real munged.

use crate::{builder, cluster, secs};
use e2e::Cluster;
use proto::{CtldRequest, CtldResponse, Identity, NodeRequest, NodeResponse, SlurmError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The value of `key=` on the first slurm.conf line that has `line_has`.
fn conf_value(c: &Cluster, line_has: &str, key: &str) -> String {
    let text = std::fs::read_to_string(c.conf()).expect("reading the cluster's slurm.conf");
    text.lines()
        .filter(|l| l.contains(line_has))
        .find_map(|l| e2e::field(l, key))
        .unwrap_or_else(|| panic!("no {key}= on a line with {line_has:?} in:\n{text}"))
}

fn ctld_addr(c: &Cluster) -> String {
    format!(
        "127.0.0.1:{}",
        conf_value(c, "SlurmctldPort=", "SlurmctldPort")
    )
}

fn node_addr(c: &Cluster, node: &str) -> String {
    format!(
        "127.0.0.1:{}",
        conf_value(c, &format!("NodeName={node} "), "Port")
    )
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs() as i64
}

fn me() -> Identity {
    client::current_identity()
}

fn ctld_call(
    c: &Cluster,
    identity: Identity,
    credential: Option<String>,
    req: CtldRequest,
) -> CtldResponse {
    rpc::call_blocking(&ctld_addr(c), identity, credential, req, TIMEOUT)
        .expect("the controller answers")
}

/// A credential signed with the cluster's own key (the test owns it).
fn signed(c: &Cluster, identity: &Identity) -> String {
    let key = auth::load_key(&c.root().join(e2e::KEY_FILE)).expect("reading the cluster key");
    auth::Signer::with_key(&key)
        .sign(identity, now())
        .expect("signing")
}

fn is_auth_refusal(r: &CtldResponse) -> bool {
    matches!(r, CtldResponse::Error(SlurmError::ProtocolAuthentication))
}

fn wait_log(c: &Cluster, name: &str, text: &str) {
    c.wait_until(&format!("{text:?} in {name}.log"), secs(10), || {
        c.log(name).contains(text).then_some(())
    });
}

#[test]
fn request_without_a_credential_is_refused_and_logged() {
    let c = cluster(1);
    let r = ctld_call(&c, me(), None, CtldRequest::Ping);
    assert!(is_auth_refusal(&r), "{r:?}");
    let r = ctld_call(&c, me(), None, CtldRequest::Submit(Box::default()));
    assert!(is_auth_refusal(&r), "{r:?}");
    wait_log(&c, "ctld", "authentication failed: no credential");
    // The commands, which carry credentials, still work.
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
}

#[test]
fn forged_credential_is_refused_and_logged() {
    let c = cluster(1);
    let root = Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: e2e::hostname(),
    };
    let forged = auth::Signer::with_key(&[7u8; 32])
        .sign(&root, now())
        .expect("signing");
    let r = ctld_call(&c, root.clone(), Some(forged), CtldRequest::Shutdown);
    assert!(is_auth_refusal(&r), "{r:?}");
    wait_log(&c, "ctld", "invalid credential signature");
    // A genuine credential for one user does not vouch for another.
    if me().uid != 0 {
        let mine = signed(&c, &me());
        let r = ctld_call(&c, root, Some(mine), CtldRequest::Shutdown);
        assert!(is_auth_refusal(&r), "{r:?}");
    }
    // The node daemon refuses the forgery as well.
    let forged = auth::Signer::with_key(&[7u8; 32])
        .sign(&me(), now())
        .expect("signing");
    let r: NodeResponse = rpc::call_blocking(
        &node_addr(&c, "node1"),
        me(),
        Some(forged),
        NodeRequest::Shutdown,
        TIMEOUT,
    )
    .expect("the node daemon answers");
    assert!(
        matches!(&r, NodeResponse::Failed(m) if m.starts_with("Protocol authentication error")),
        "{r:?}"
    );
    wait_log(&c, "noded-node1", "authentication failed");
    // Still up.
    c.ok("scontrol", &["ping"]);
    assert_eq!(c.node_state("node1"), "idle");
}

#[test]
fn replayed_credential_is_refused_and_logged() {
    let c = cluster(1);
    let cred = signed(&c, &me());
    let r = ctld_call(&c, me(), Some(cred.clone()), CtldRequest::ListJobs);
    assert!(matches!(r, CtldResponse::Jobs(_)), "{r:?}");
    let r = ctld_call(&c, me(), Some(cred), CtldRequest::ListJobs);
    assert!(is_auth_refusal(&r), "{r:?}");
    wait_log(&c, "ctld", "replayed credential");
}

// Client sessions: one credential per connection, then numbered requests.

/// One request frame, kept as bytes so a test can send it again elsewhere.
fn frame(identity: &Identity, credential: Option<String>, body: &CtldRequest) -> Vec<u8> {
    let enc = match body {
        CtldRequest::InSession { request, .. } if matches!(**request, CtldRequest::Submit(_)) => {
            rpc::Encoding::Binary
        }
        _ => rpc::Encoding::Json,
    };
    let mut out = Vec::new();
    let env = rpc::signed_envelope(identity.clone(), credential, body);
    rpc::append_frame(&mut out, &env, enc, proto::MAX_FRAME_BYTES).expect("encoding");
    out
}

fn in_session(seq: u64, request: CtldRequest) -> CtldRequest {
    CtldRequest::InSession {
        seq,
        request: Box::new(request),
    }
}

/// Sends one frame and reads its answer; an error where the controller
/// closed the connection.
fn exchange(conn: &mut rpc::Conn, frame: &[u8]) -> Result<CtldResponse, rpc::RpcError> {
    let (mut answers, err) = conn.call_many::<CtldResponse>(frame, 1);
    answers
        .pop()
        .ok_or_else(|| err.expect("an answer or an error"))
}

fn connect(c: &Cluster) -> rpc::Conn {
    rpc::Conn::connect(&ctld_addr(c), TIMEOUT).expect("connects")
}

/// A connection on which `who` opened a session (answered Ok).
fn open_session(c: &Cluster, who: &Identity) -> rpc::Conn {
    let mut conn = connect(c);
    let open = frame(who, Some(signed(c, who)), &CtldRequest::OpenSession);
    assert!(matches!(
        exchange(&mut conn, &open).unwrap(),
        CtldResponse::Ok
    ));
    conn
}

fn held_job(c: &Cluster, name: &str) -> CtldRequest {
    CtldRequest::Submit(Box::new(proto::JobDesc {
        name: name.into(),
        script: "#!/bin/sh\ntrue\n".into(),
        work_dir: c.work().display().to_string(),
        hold: true,
        ..proto::JobDesc::default()
    }))
}

#[test]
fn session_requests_are_refused_without_a_session_out_of_order_or_elsewhere() {
    let c = cluster(1);
    let closed = |conn: &mut rpc::Conn| {
        let again = frame(&me(), Some(signed(&c, &me())), &CtldRequest::Ping);
        let r = exchange(conn, &again);
        assert!(r.is_err(), "the connection should be closed: {r:?}");
    };
    // `frame` is refused for authentication, and the connection closed.
    let refused_and_closed = |conn: &mut rpc::Conn, frame: &[u8]| {
        let r = exchange(conn, frame).unwrap();
        assert!(is_auth_refusal(&r), "{r:?}");
        closed(conn);
    };
    // A numbered request on a connection that opened no session.
    refused_and_closed(
        &mut connect(&c),
        &frame(&me(), None, &in_session(1, CtldRequest::Ping)),
    );
    wait_log(&c, "ctld", "no authenticated session");

    // A session: one credential, then requests numbered from 1 without one.
    let mut conn = connect(&c);
    let open = frame(&me(), Some(signed(&c, &me())), &CtldRequest::OpenSession);
    let r = exchange(&mut conn, &open).unwrap();
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    let first = frame(&me(), None, &in_session(1, CtldRequest::Ping));
    let r = exchange(&mut conn, &first).unwrap();
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    let submit = frame(&me(), None, &in_session(2, held_job(&c, "insession")));
    let r = exchange(&mut conn, &submit).unwrap();
    let CtldResponse::Submitted(job) = r else {
        panic!("{r:?}")
    };
    assert_eq!(c.squeue_field(job.job_id.0, "%j"), "insession");
    // A request with a credential of its own is still checked as such.
    let own = frame(&me(), Some(signed(&c, &me())), &CtldRequest::Ping);
    assert!(matches!(
        exchange(&mut conn, &own).unwrap(),
        CtldResponse::Ok
    ));
    // The number must grow by one: a frame repeated is refused, and ends
    // the connection.
    refused_and_closed(&mut conn, &submit);
    assert_eq!(
        c.ok("squeue", &["-h", "-o", "%j", "-n", "insession"])
            .stdout,
        "insession\n",
        "the repeated submission was refused"
    );

    // Skipping a number is refused as well.
    let mut conn = open_session(&c, &me());
    refused_and_closed(
        &mut conn,
        &frame(&me(), None, &in_session(2, CtldRequest::Ping)),
    );

    // Frames copied onto another connection: the opening credential is
    // single-use, a numbered frame needs a session, and in another
    // caller's session it is refused for its identity.
    refused_and_closed(&mut connect(&c), &open);
    refused_and_closed(&mut connect(&c), &first);
    let other = Identity {
        uid: 4242,
        gid: 4242,
        user: "other".into(),
        host: me().host,
    };
    refused_and_closed(&mut open_session(&c, &other), &first);

    // A second session on one connection is refused.
    let open4 = frame(&me(), Some(signed(&c, &me())), &CtldRequest::OpenSession);
    refused_and_closed(&mut open_session(&c, &me()), &open4);

    // A session cannot be opened without a valid credential.
    let mut conn = connect(&c);
    let forged = auth::Signer::with_key(&[7u8; 32])
        .sign(&me(), now())
        .expect("signing");
    let r = exchange(
        &mut conn,
        &frame(&me(), Some(forged), &CtldRequest::OpenSession),
    )
    .unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    closed(&mut conn);
    let mut conn = connect(&c);
    let r = exchange(&mut conn, &frame(&me(), None, &CtldRequest::OpenSession)).unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    closed(&mut conn);
}

#[test]
fn a_session_acts_as_the_user_its_credential_proves() {
    let c = cluster(1);
    let root = Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: e2e::hostname(),
    };
    let other = Identity {
        uid: 4242,
        gid: 4343,
        user: "other".into(),
        host: e2e::hostname(),
    };
    let session = |who: &Identity| open_session(&c, who);
    let submitted = |r: CtldResponse| match r {
        CtldResponse::Submitted(s) => s.job_id,
        other => panic!("{other:?}"),
    };
    let mut theirs = session(&other);
    let mut admin = session(&root);
    // Jobs belong to the session's user.
    let job = submitted(
        exchange(
            &mut theirs,
            &frame(&other, None, &in_session(1, held_job(&c, "theirs"))),
        )
        .unwrap(),
    );
    assert_eq!(c.squeue_field(job.0, "%U %G"), "4242 4343");
    let root_job = submitted(
        exchange(
            &mut admin,
            &frame(&root, None, &in_session(1, held_job(&c, "roots"))),
        )
        .unwrap(),
    );
    assert_eq!(c.squeue_field(root_job.0, "%U"), "0");
    // Another user's job is out of reach, and so are the daemons' requests.
    let cancel = |job_id| CtldRequest::Cancel {
        job_id,
        signal: None,
        batch_only: false,
        full: false,
        tasks: None,
    };
    let r = exchange(
        &mut theirs,
        &frame(&other, None, &in_session(2, cancel(root_job))),
    )
    .unwrap();
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::AccessDenied)),
        "{r:?}"
    );
    let reg = frame(&other, None, &in_session(3, rogue_registration("node9")));
    let r = exchange(&mut theirs, &reg).unwrap();
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::AccessDenied)),
        "{r:?}"
    );
    assert_eq!(c.job_state(root_job.0), "PENDING");
    // Its own job it may cancel; root may cancel any.
    let r = exchange(
        &mut theirs,
        &frame(&other, None, &in_session(4, cancel(job))),
    )
    .unwrap();
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    let r = exchange(
        &mut admin,
        &frame(&root, None, &in_session(2, cancel(root_job))),
    )
    .unwrap();
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    // A session's requests cannot claim another identity.
    let r = exchange(
        &mut theirs,
        &frame(&root, None, &in_session(5, CtldRequest::Shutdown)),
    )
    .unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    c.ok("scontrol", &["ping"]);
}

fn rogue_registration(name: &str) -> CtldRequest {
    CtldRequest::RegisterNode(proto::NodeRegistration {
        name: name.into(),
        addr: "127.0.0.1".into(),
        port: 1,
        cpus: 64,
        boards: 1,
        sockets: 1,
        cores_per_socket: 64,
        threads_per_core: 1,
        real_memory: 100_000,
        free_memory: 100_000,
        cpu_load: 0.0,
        gres: vec![],
        os: "Linux".into(),
        arch: "x86_64".into(),
        boot_time: 0,
        start_time: 0,
        running_jobs: vec![],
        version: "22.05".into(),
        boot_id: String::new(),
        fabric: None,
    })
}

#[test]
fn only_the_daemons_users_may_register_a_node() {
    let c = cluster(1);
    // What the node daemon's socket would hand a user: a valid credential
    // for a uid that is neither root nor SlurmUser.
    let stranger = Identity {
        uid: 4242,
        gid: 4242,
        user: "stranger".into(),
        host: e2e::hostname(),
    };
    let cred = signed(&c, &stranger);
    let r = ctld_call(&c, stranger, Some(cred), rogue_registration("node1"));
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::AccessDenied)),
        "{r:?}"
    );
    wait_log(&c, "ctld", "is not root or SlurmUser");
    assert_eq!(c.node_field("node1", "CPUTot"), "2");
}

// ---------------------------------------------------------------------
// Several real users (root only: CI runs as root).

/// A Unix user made for one test, removed (with its home) on drop.
pub(crate) struct TestUser {
    pub(crate) name: String,
    uid: u32,
    gid: u32,
    home: PathBuf,
}

impl TestUser {
    pub(crate) fn create(tag: &str, base: &Path) -> TestUser {
        let name = format!("mu{}{tag}", std::process::id() % 100_000);
        let home = base.join(&name);
        // A leftover of a killed earlier run with the same pid.
        let _ = Command::new("userdel").arg(&name).output();
        let out = Command::new("useradd")
            .args(["--no-create-home", "--user-group", "--shell", "/bin/sh"])
            .arg("--home-dir")
            .arg(&home)
            .arg(&name)
            .output()
            .expect("running useradd");
        assert!(out.status.success(), "useradd {name}: {out:?}");
        let user = nix::unistd::User::from_name(&name)
            .expect("reading passwd")
            .expect("the new user exists");
        std::fs::create_dir_all(&home).expect("creating a home directory");
        nix::unistd::chown(&home, Some(user.uid), Some(user.gid)).expect("chown");
        TestUser {
            name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            home,
        }
    }

    /// `program args...` run as this user, in its home.
    pub(crate) fn command(&self, program: &Path) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(program);
        cmd.uid(self.uid)
            .gid(self.gid)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env("LOGNAME", &self.name);
        cmd
    }

    /// A Slurm command of `c` as this user.
    pub(crate) fn run(&self, c: &Cluster, cmd: &str, args: &[&str]) -> e2e::Output {
        let mut command = self.command(c.binary());
        command
            .arg(cmd)
            .args(args)
            .env("SLURM_CONF", c.conf())
            .env_remove("SLURM_JOB_ID");
        output(command)
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

pub(crate) fn output(mut c: Command) -> e2e::Output {
    let out = c.output().expect("running a command");
    e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

pub(crate) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The environment variable that turns `helper_runs_as_another_user` into
/// the other user's side of `users_reach_only_what_is_theirs`.
const HELPER: &str = "MUSTER_AUTH_TEST_HELPER";

/// Not a test by itself: `users_reach_only_what_is_theirs` runs this test
/// binary again as another user with `MUSTER_AUTH_TEST_HELPER` set, to send
/// hand-made requests with that user's credential from the node daemon's
/// socket. Without the variable it does nothing.
#[test]
fn helper_runs_as_another_user() {
    let Ok(what) = std::env::var(HELPER) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} unset"));
    let socket = PathBuf::from(var("HELPER_SOCKET"));
    let credential = || Some(auth::credential_from_socket(&socket).expect("socket credential"));
    let mine = client::current_identity();
    let answer = match what.as_str() {
        // Claims to be the victim; the credential says who it really is.
        "impersonate" => {
            let victim = Identity {
                uid: var("HELPER_VICTIM_UID").parse().unwrap(),
                gid: var("HELPER_VICTIM_UID").parse().unwrap(),
                user: var("HELPER_VICTIM"),
                host: mine.host.clone(),
            };
            let job_id = model::JobId(var("HELPER_JOB").parse().unwrap());
            let req = CtldRequest::Cancel {
                job_id,
                signal: None,
                batch_only: false,
                full: false,
                tasks: None,
            };
            let r: CtldResponse =
                rpc::call_blocking(&var("HELPER_CTLD"), victim, credential(), req, TIMEOUT)
                    .unwrap();
            format!("{r:?}")
        }
        "register" => {
            let r: CtldResponse = rpc::call_blocking(
                &var("HELPER_CTLD"),
                mine,
                credential(),
                rogue_registration("node1"),
                TIMEOUT,
            )
            .unwrap();
            format!("{r:?}")
        }
        "launch" => {
            let launch = proto::BatchLaunch {
                job_id: model::JobId(999_999),
                uid: 0,
                gid: 0,
                user: "root".into(),
                script: format!("#!/bin/sh\ntouch {}\n", var("HELPER_PWNED")),
                argv: vec![],
                env: vec![],
                work_dir: "/".into(),
                stdout: "/dev/null".into(),
                stderr: "/dev/null".into(),
                stdin: "/dev/null".into(),
                open_append: false,
                cpus: 1,
                mem: 1,
                gpus: vec![],
                cpu_ids: vec![],
                time_limit_secs: None,
                acctg_freq: None,
                restarts: 0,
                container: Vec::new(),
            };
            let r: NodeResponse = rpc::call_blocking(
                &var("HELPER_NODE"),
                mine,
                credential(),
                NodeRequest::LaunchBatch(Box::new(launch)),
                TIMEOUT,
            )
            .unwrap();
            format!("{r:?}")
        }
        other => panic!("unknown helper action {other}"),
    };
    println!("HELPER-ANSWER {answer}");
}

#[test]
fn users_reach_only_what_is_theirs() {
    if !is_root() {
        eprintln!(
            "users_reach_only_what_is_theirs: not run: it creates Unix users, which needs root"
        );
        return;
    }
    // Binaries and homes where the test users can reach them.
    let base = tempfile::Builder::new()
        .prefix("muster-auth-")
        .tempdir()
        .expect("a temp dir");
    set_mode(base.path(), 0o755);
    let a = TestUser::create("a", base.path());
    let b = TestUser::create("b", base.path());
    let test_bin = base.path().join("it-helper");
    std::fs::copy(std::env::current_exe().unwrap(), &test_bin).expect("copying the test binary");
    let muster_bin = base.path().join("muster");
    std::fs::copy(env!("CARGO_BIN_EXE_muster"), &muster_bin).expect("copying muster");
    let c = builder().binary(&muster_bin).nodes(1).start();
    // The users may read slurm.conf and reach the socket, not the key.
    set_mode(c.root(), 0o755);
    let key = c.root().join(e2e::KEY_FILE);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let socket = c.root().join(e2e::SOCKET_FILE);

    // A's jobs run as A.
    let out = a.run(&c, "sbatch", &["--parsable", "--wrap", "id -u; id -un"]);
    assert!(out.ok(), "sbatch as {}: {out}\n{}", a.name, c.logs());
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.squeue_field(id, "%u"), a.name);
    let text = std::fs::read_to_string(a.home.join(format!("slurm-{id}.out"))).unwrap_or_default();
    assert_eq!(text, format!("{}\n{}\n", a.uid, a.name), "{}", c.logs());

    // B cannot cancel A's job.
    let out = a.run(&c, "sbatch", &["--parsable", "--wrap", "sleep 300"]);
    assert!(out.ok(), "{out}");
    let long: u32 = out.stdout.trim().parse().expect("a job id");
    c.wait_state(long, "RUNNING", secs(20));
    let out = b.run(&c, "scancel", &[&long.to_string()]);
    assert_eq!(out.code, 210, "{out}");
    assert_eq!(
        out.stderr,
        format!("scancel: error: Kill job error on job id {long}: Access/permission denied\n")
    );
    // scontrol listpids: A sees its job's processes on the node, B none
    // of them (issue 35 item 15).
    let job = long.to_string();
    let out = a.run(&c, "scontrol", &["listpids", &job, "node1"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains(" batch ")),
        "{out}"
    );
    let out = b.run(&c, "scontrol", &["listpids", &job, "node1"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stdout, "PID      JOBID    STEPID   LOCALID GLOBALID\n");
    assert_eq!(
        out.stderr,
        format!("JobId={job} does not exist on node node1.\n")
    );

    // B cannot pose as A, register a node or launch on a node directly.
    let helper = |what: &str, extra: &[(&str, String)]| -> String {
        let mut cmd = b.command(&test_bin);
        cmd.args([
            "--exact",
            "auth::helper_runs_as_another_user",
            "--nocapture",
        ])
        .env(HELPER, what)
        .env("HELPER_SOCKET", &socket)
        .env("HELPER_CTLD", ctld_addr(&c))
        .env("HELPER_NODE", node_addr(&c, "node1"));
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let out = output(cmd);
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix("HELPER-ANSWER "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("the helper as {} failed: {out}", b.name))
    };
    let answer = helper(
        "impersonate",
        &[
            ("HELPER_VICTIM", a.name.clone()),
            ("HELPER_VICTIM_UID", a.uid.to_string()),
            ("HELPER_JOB", long.to_string()),
        ],
    );
    assert!(
        answer.contains("ProtocolAuthentication") || answer.contains("AccessDenied"),
        "{answer}"
    );
    assert_eq!(c.job_state(long), "RUNNING");
    let answer = helper("register", &[]);
    assert!(answer.contains("AccessDenied"), "{answer}");
    assert_eq!(c.node_field("node1", "CPUTot"), "2");
    let pwned = base.path().join("pwned");
    let answer = helper("launch", &[("HELPER_PWNED", pwned.display().to_string())]);
    assert!(answer.contains("Access/permission denied"), "{answer}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pwned.exists(), "a rogue launch ran");

    // A may cancel its own job.
    let out = a.run(&c, "scancel", &[&long.to_string()]);
    assert!(out.ok(), "{out}");
    assert_eq!(c.wait_done(long, secs(20)), "CANCELLED");
}

/// A user's job scripts and environments are on disk in the controller's
/// journal and the node daemon's spool: another user reads none of it, and
/// a state directory left readable is made owner-only at the next start.
#[test]
fn another_user_reads_no_secret_on_disk() {
    if !is_root() {
        eprintln!(
            "another_user_reads_no_secret_on_disk: not run: it creates Unix users, which needs root"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::Builder::new()
        .prefix("muster-secret-")
        .tempdir()
        .expect("a temp dir");
    set_mode(base.path(), 0o755);
    let a = TestUser::create("sa", base.path());
    let b = TestUser::create("sb", base.path());
    let muster_bin = base.path().join("muster");
    std::fs::copy(env!("CARGO_BIN_EXE_muster"), &muster_bin).expect("copying muster");
    let mut c = builder().binary(&muster_bin).nodes(1).start();
    // Everything up to the state and the spool may be reached: what
    // protects them is their own modes.
    set_mode(c.root(), 0o755);
    let token = "MY_SECRET_TOKEN=5f1e0c77d2";
    let out = a.run(
        &c,
        "sbatch",
        &[
            "--parsable",
            "--export=ALL,SECRET_ENV=env-5f1e0c77d2",
            "--wrap",
            &format!("true {token}; sleep 300"),
        ],
    );
    assert!(out.ok(), "sbatch as {}: {out}\n{}", a.name, c.logs());
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    c.wait_state(id, "RUNNING", secs(20));
    let grep_as_b = |c: &Cluster| {
        let mut cmd = b.command(Path::new("/bin/grep"));
        cmd.args(["-r", "-a", "-l", "-e", "5f1e0c77d2"])
            .arg(c.root());
        let out = cmd.output().expect("running grep as the other user");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // As root the secrets are there (the grep finds what it looks for)...
    let root_sees = std::process::Command::new("grep")
        .args(["-r", "-a", "-l", "-e", "5f1e0c77d2"])
        .arg(c.state_dir())
        .output()
        .expect("grep");
    assert!(!root_sees.stdout.is_empty(), "the journal holds the job");
    // ... and the other user finds none of them.
    assert_eq!(grep_as_b(&c), "", "{}", c.logs());
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    let state = c.state_dir();
    assert_eq!(mode(&state), 0o700);
    for entry in std::fs::read_dir(&state).expect("the state dir") {
        let path = entry.expect("an entry").path();
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    // A state directory made readable (an older release, by hand) is
    // made owner-only again at the controller's next start.
    c.kill_ctld();
    set_mode(&state, 0o755);
    for entry in std::fs::read_dir(&state).expect("the state dir") {
        let path = entry.expect("an entry").path();
        if path.is_file() {
            set_mode(&path, 0o644);
        }
    }
    c.spawn_ctld();
    c.wait_state(id, "RUNNING", secs(20));
    wait_log(&c, "ctld", "was readable by other users");
    assert_eq!(mode(&state), 0o700);
    assert_eq!(grep_as_b(&c), "", "{}", c.logs());
    let out = a.run(&c, "scancel", &[&id.to_string()]);
    assert!(out.ok(), "{out}");
    c.wait_done(id, secs(20));
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

// ---------------------------------------------------------------------
// auth/munge with a real munged.

const MUNGE_SOCKET: &str = "/var/run/munge/munge.socket.2";

/// True where munged must be there: CI (`CI` set), or root with apt-get
/// (where `cargo xtask verify` installs and starts it).
fn munge_required() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    let apt = Path::new("/usr/bin/apt-get").exists();
    ci || (is_root() && apt)
}

#[test]
fn auth_munge_runs_jobs_with_a_real_munged() {
    let probe = auth::munge::Munge::load(Path::new(MUNGE_SOCKET)).and_then(|m| m.encode(b"probe"));
    if let Err(e) = probe {
        if munge_required() {
            panic!(
                "munged is required here (CI, or root with apt-get; xtask/setup.sh installs and starts it) \
                 but does not answer on {MUNGE_SOCKET}: {e}"
            );
        }
        eprintln!("auth_munge_runs_jobs_with_a_real_munged: not run: {e}");
        return;
    }
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "AuthType=auth/munge\nAuthInfo=socket={MUNGE_SOCKET}\n"
        ))
        .start();
    let id = c.submit(&["--wrap", "echo munged-ok"]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.read(&format!("slurm-{id}.out")), "munged-ok\n");
    // A MUNGE credential is accepted once.
    let cfg = conf::load(c.conf()).expect("slurm.conf").config;
    let cred = auth::credential_for_client(&cfg, &me(), now()).expect("a MUNGE credential");
    assert!(cred.starts_with("MUNGE:"), "{cred}");
    let r = ctld_call(&c, me(), Some(cred.clone()), CtldRequest::Ping);
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    let r = ctld_call(&c, me(), Some(cred), CtldRequest::Ping);
    assert!(is_auth_refusal(&r), "{r:?}");
    wait_log(&c, "ctld", "replayed credential");
    // A credential of the muster scheme means nothing here.
    let forged = auth::Signer::with_key(&[7u8; 32])
        .sign(&me(), now())
        .expect("signing");
    let r = ctld_call(&c, me(), Some(forged), CtldRequest::Ping);
    assert!(is_auth_refusal(&r), "{r:?}");
    // Sessions under MUNGE: opened with a MUNGE credential, which is then
    // spent; the library's calls in a session work.
    let cred = auth::credential_for_client(&cfg, &me(), now()).expect("a MUNGE credential");
    let open = frame(&me(), Some(cred), &CtldRequest::OpenSession);
    let mut conn = connect(&c);
    assert!(matches!(
        exchange(&mut conn, &open).unwrap(),
        CtldResponse::Ok
    ));
    let r = exchange(
        &mut conn,
        &frame(&me(), None, &in_session(1, held_job(&c, "m1"))),
    )
    .unwrap();
    assert!(matches!(r, CtldResponse::Submitted(_)), "{r:?}");
    let r = exchange(
        &mut conn,
        &frame(&me(), None, &in_session(1, CtldRequest::Ping)),
    )
    .unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    let mut conn = connect(&c);
    let r = exchange(&mut conn, &open).unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    let client = client::Client::new(cfg, me());
    let reqs: Vec<_> = (0..client::PIPELINE_WINDOW + 3)
        .map(|i| held_job(&c, &format!("mp{i}")))
        .collect();
    for _ in 0..2 {
        for r in client.call_pipelined(&reqs) {
            assert!(matches!(r, Ok(CtldResponse::Submitted(_))), "{r:?}");
        }
        client
            .call(CtldRequest::Ping)
            .expect("a call in the session");
    }
}

#[test]
fn one_connection_carries_several_requests_each_with_its_own_credential() {
    let c = cluster(1);
    let mut conn = rpc::Conn::connect(&ctld_addr(&c), TIMEOUT).expect("connects");
    for _ in 0..3 {
        let r: CtldResponse = conn
            .call(me(), Some(signed(&c, &me())), CtldRequest::Ping)
            .expect("answered on the same connection");
        assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    }
    // A request without a credential is refused on a reused connection too,
    // and the connection still serves the next one.
    let r: CtldResponse = conn.call(me(), None, CtldRequest::Ping).unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    let r: CtldResponse = conn
        .call(me(), Some(signed(&c, &me())), CtldRequest::Ping)
        .unwrap();
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    // The library keeps a connection that answered for the next calls.
    let client = client::Client::new(
        conf::load(c.conf()).unwrap().config,
        client::current_identity(),
    );
    for _ in 0..5 {
        client.call(CtldRequest::Ping).expect("ping");
    }
}

#[test]
fn pipelined_requests_are_each_checked_and_answered_in_order() {
    let c = cluster(1);
    let mut conn = rpc::Conn::connect(&ctld_addr(&c), TIMEOUT).expect("connects");
    let cred = signed(&c, &me());
    let submit = CtldRequest::Submit(Box::new(proto::JobDesc {
        name: "piped".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        work_dir: c.work().display().to_string(),
        hold: true,
        ..proto::JobDesc::default()
    }));
    // Five requests in one write: a credential used twice on one
    // connection is a replay like any other, a missing one is refused, and
    // the others are answered, in order, each in its own encoding.
    let mut frames = Vec::new();
    let reqs = [
        (Some(cred.clone()), CtldRequest::Ping, rpc::Encoding::Json),
        (Some(cred), CtldRequest::Ping, rpc::Encoding::Json),
        (None, CtldRequest::Ping, rpc::Encoding::Json),
        (Some(signed(&c, &me())), submit, rpc::Encoding::Binary),
        (
            Some(signed(&c, &me())),
            CtldRequest::Ping,
            rpc::Encoding::Json,
        ),
    ];
    for (cred, req, enc) in &reqs {
        let env = rpc::signed_envelope(me(), cred.clone(), req);
        rpc::append_frame(&mut frames, &env, *enc, proto::MAX_FRAME_BYTES).unwrap();
    }
    let (answers, err) = conn.call_many::<CtldResponse>(&frames, reqs.len());
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(answers[0], CtldResponse::Ok), "{answers:?}");
    assert!(is_auth_refusal(&answers[1]), "{answers:?}");
    assert!(is_auth_refusal(&answers[2]), "{answers:?}");
    assert!(
        matches!(answers[3], CtldResponse::Submitted(_)),
        "{answers:?}"
    );
    assert!(matches!(answers[4], CtldResponse::Ok), "{answers:?}");
    wait_log(&c, "ctld", "replayed credential");
    // The library's pipelined calls: more requests than its window, each
    // answered, in order (job ids follow the order of the requests).
    let client = client::Client::new(
        conf::load(c.conf()).unwrap().config,
        client::current_identity(),
    );
    let n = client::PIPELINE_WINDOW * 2 + 5;
    let mut reqs = Vec::new();
    for i in 0..n {
        reqs.push(CtldRequest::Submit(Box::new(proto::JobDesc {
            name: format!("p{i}"),
            script: "#!/bin/sh\ntrue\n".into(),
            work_dir: c.work().display().to_string(),
            hold: true,
            ..proto::JobDesc::default()
        })));
        if i == 3 {
            reqs.push(CtldRequest::Ping);
        }
    }
    let results = client.call_pipelined(&reqs);
    assert_eq!(results.len(), reqs.len());
    let mut ids = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(CtldResponse::Submitted(s)) => ids.push(s.job_id.0),
            Ok(CtldResponse::Ok) => assert_eq!(i, 4),
            other => panic!("request {i}: {other:?}"),
        }
    }
    assert_eq!(ids.len(), n);
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let out = c.ok("squeue", &["-h", "-o", "%i %j", "-j", &ids[7].to_string()]);
    assert_eq!(out.stdout.trim(), format!("{} p7", ids[7]));
}

#[test]
fn streamed_job_listing_is_checked_and_arrives_whole() {
    let c = cluster(1);
    // More than two chunks of rows (parts of the streamed answer), names
    // that change from part to part.
    let client = client::Client::new(
        conf::load(c.conf()).unwrap().config,
        client::current_identity(),
    );
    let n = proto::JobRows::CHUNK * 2 + 100;
    let reqs: Vec<CtldRequest> = (0..n)
        .map(|i| {
            CtldRequest::Submit(Box::new(proto::JobDesc {
                name: format!("s{}", i / 3),
                script: "#!/bin/sh\ntrue\n".into(),
                work_dir: c.work().display().to_string(),
                hold: true,
                ..proto::JobDesc::default()
            }))
        })
        .collect();
    let mut ids = Vec::new();
    for r in client.call_pipelined(&reqs) {
        match r {
            Ok(CtldResponse::Submitted(s)) => ids.push(s.job_id.0),
            other => panic!("{other:?}"),
        }
    }
    let stream = proto::JobFilter {
        brief: true,
        rows: true,
        stream: true,
        ..proto::JobFilter::default()
    };
    // A streamed listing is checked as any request: without a credential,
    // or with one already used, the answer is a refusal and no part.
    let mut conn = rpc::Conn::connect(&ctld_addr(&c), TIMEOUT).expect("connects");
    let query = CtldRequest::QueryJobs(stream.clone());
    let r: CtldResponse = conn.call(me(), None, query.clone()).unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    let cred = signed(&c, &me());
    let r: CtldResponse = conn.call(me(), Some(cred.clone()), query.clone()).unwrap();
    let CtldResponse::JobRowsPart(mut rows) = r else {
        panic!("not a part: {r:?}");
    };
    loop {
        match conn.read_more::<CtldResponse>().unwrap() {
            CtldResponse::JobRowsPart(p) => rows.append(p),
            CtldResponse::JobRows(last) => {
                rows.append(last);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let r: CtldResponse = conn.call(me(), Some(cred), query).unwrap();
    assert!(is_auth_refusal(&r), "{r:?}");
    // The parts together are the answer a single frame carries.
    let whole = client
        .call(CtldRequest::QueryJobs(proto::JobFilter {
            stream: false,
            ..stream
        }))
        .unwrap();
    let CtldResponse::JobRows(whole) = whole else {
        panic!("{whole:?}");
    };
    assert_eq!(rows.strings, whole.strings);
    assert_eq!(rows.len(), n);
    assert!(rows.rows().eq(whole.rows()));
    // squeue reads the parts: every job, with its own name.
    let out = c.ok("squeue", &["-h", "-o", "%i %j %T", "-S", "i"]);
    let want: String = ids
        .iter()
        .enumerate()
        .map(|(i, id)| format!("{id} s{} PENDING\n", i / 3))
        .collect();
    assert_eq!(out.stdout, want);
}
