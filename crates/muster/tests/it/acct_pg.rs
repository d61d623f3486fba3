//! The controller with its history in PostgreSQL
//! (`AccountingStorageType=accounting_storage/pgsql`), and what happens to
//! the records when the database or the controller goes away mid-stream
//! (issue 4).
//!
//! The server is the one `MUSTER_TEST_PG` names (xtask/setup.sh starts one and
//! sets it). Each test gives its controller a database of its own, created
//! by the test's role (CREATEDB, which xtask/setup.sh grants) and dropped at the
//! end; the controller finds it as a site's would, through
//! `AccountingStorageHost/Port/User/Pass` in slurm.conf and `StorageLoc` in
//! a slurmdbd.conf beside it. Without `MUSTER_TEST_PG` the tests say so
//! and pass, except under CI (`CI` set), where they fail: CI must not skip
//! them.

use crate::{builder, secs};
use e2e::{Builder, Cluster};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// The connection string of the test server, or None (outside CI) when
/// there is none.
fn pg_base(test: &str) -> Option<String> {
    match std::env::var("MUSTER_TEST_PG") {
        Ok(s) if !s.trim().is_empty() => Some(s),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
            assert!(
                !ci,
                "{test}: MUSTER_TEST_PG is not set but CI is: the PostgreSQL accounting \
                 tests must run in CI (xtask/setup.sh starts a server and sets it)"
            );
            eprintln!("{test}: did not run: set MUSTER_TEST_PG to a PostgreSQL connection string");
            None
        }
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A database of the test's own on the test server, dropped with this
/// value (also when the test fails).
struct Db {
    /// `key=value` pairs of `MUSTER_TEST_PG` (values without spaces, as
    /// xtask/setup.sh writes them).
    base: Vec<(String, String)>,
    /// Connected to the base database, never to `name`.
    admin: postgres::Client,
    name: String,
}

impl Db {
    fn create(base: &str) -> Db {
        let mut admin = postgres::Client::connect(base, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to MUSTER_TEST_PG ({base}): {e}"));
        let name = format!(
            "muster_e2e_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        // One statement each: several in one string are one transaction,
        // which CREATE and DROP DATABASE refuse.
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            admin.batch_execute(&sql).unwrap_or_else(|e| {
                panic!(
                    "{sql}: {e:?} (the role of MUSTER_TEST_PG needs CREATEDB: xtask/setup.sh \
                     grants it)"
                )
            });
        }
        let base = base
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Db { base, admin, name }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.base
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A cluster of `nodes` whose controller keeps its history here.
    fn builder(&self, nodes: u32) -> Builder {
        let mut conf = String::from("AccountingStorageType=accounting_storage/pgsql\n");
        for (key, conf_key) in [
            ("host", "AccountingStorageHost"),
            ("port", "AccountingStoragePort"),
            ("user", "AccountingStorageUser"),
            ("password", "AccountingStoragePass"),
        ] {
            if let Some(v) = self.get(key) {
                conf.push_str(&format!("{conf_key}={v}\n"));
            }
        }
        builder().nodes(nodes).conf_extra(&conf).file(
            "slurmdbd.conf",
            &format!(
                "StorageType=accounting_storage/pgsql\nStorageLoc={}\n",
                self.name
            ),
        )
    }

    /// A connection to this database (for checks behind sacct's back).
    fn connect(&self) -> postgres::Client {
        let info: Vec<String> = self
            .base
            .iter()
            .filter(|(k, _)| k != "dbname")
            .map(|(k, v)| format!("{k}={v}"))
            .chain([format!("dbname={}", self.name)])
            .collect();
        postgres::Client::connect(&info.join(" "), postgres::NoTls).unwrap()
    }

    /// Ends every server process serving this database (as a crash of the
    /// database would, for its clients); they may connect again at once.
    fn kill_backends(&mut self) -> u64 {
        self.admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&self.name],
            )
            .unwrap()
            .len() as u64
    }

    /// The database goes away: its connections are ended and new ones
    /// refused until `restore`.
    fn cut(&mut self) {
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE {} WITH ALLOW_CONNECTIONS false",
                self.name
            ))
            .unwrap();
        self.kill_backends();
    }

    fn restore(&mut self) {
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE {} WITH ALLOW_CONNECTIONS true",
                self.name
            ))
            .unwrap();
    }

    /// The rows of the jobs table per job id.
    fn rows_per_job(&self) -> BTreeMap<u32, i64> {
        self.connect()
            .query(
                "SELECT job_id, COUNT(*) FROM jobs GROUP BY job_id ORDER BY job_id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u32, r.get::<_, i64>(1)))
            .collect()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        for sql in [
            format!("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true", self.name),
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ] {
            if let Err(e) = self.admin.batch_execute(&sql) {
                eprintln!("{sql}: {e}");
            }
        }
    }
}

/// `sacct -a -X -n -P -o JobIDRaw,State` once every job of `ids` is there in
/// `state`: each job's lines (job and steps) as sacct printed them, keyed
/// by job id.
fn sacct_when_all(c: &Cluster, ids: &[u32], state: &str) -> BTreeMap<u32, Vec<String>> {
    c.wait_until(&format!("every job {state} in sacct"), secs(60), || {
        let o = c.run("sacct", &["-a", "-X", "-n", "-P", "-o", "JobIDRaw,State"]);
        let rows: BTreeMap<&str, &str> =
            o.stdout.lines().filter_map(|l| l.split_once('|')).collect();
        ids.iter()
            .all(|id| rows.get(id.to_string().as_str()) == Some(&state))
            .then_some(())
    });
    let all = c.ok("sacct", &["-a", "-n", "-P", "-o", "JobID,State"]);
    let mut lines: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for l in all.stdout.lines() {
        let job: u32 = l
            .split(['.', '|', '_'])
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("sacct line {l:?}"));
        lines.entry(job).or_default().push(l.to_string());
    }
    lines
}

#[test]
fn the_controller_keeps_its_history_in_postgresql() {
    let Some(base) = pg_base("the_controller_keeps_its_history_in_postgresql") else {
        return;
    };
    let db = Db::create(&base);
    let mut c = db.builder(2).start();
    assert!(
        c.log("ctld").contains("accounting in Postgres("),
        "{}",
        c.log("ctld")
    );
    let ok = c.submit(&["-J", "fine", "-N2", "--wrap", "srun true"]);
    let failed = c.submit(&["--wrap", "exit 3"]);
    assert_eq!(c.wait_done(ok, secs(30)), "COMPLETED");
    assert_eq!(c.wait_done(failed, secs(30)), "FAILED");
    let lines = sacct_when_all(&c, &[ok], "COMPLETED");
    assert_eq!(
        lines[&ok],
        [
            format!("{ok}|COMPLETED"),
            format!("{ok}.batch|COMPLETED"),
            format!("{ok}.0|COMPLETED"),
        ]
    );
    assert_eq!(
        lines[&failed],
        [format!("{failed}|FAILED"), format!("{failed}.batch|FAILED")]
    );
    let out = c.ok(
        "sacct",
        &[
            "-P",
            "-j",
            &ok.to_string(),
            "-o",
            "JobID,JobName,NNodes,ExitCode",
        ],
    );
    assert_eq!(
        out.stdout,
        format!("JobID|JobName|NNodes|ExitCode\n{ok}|fine|2|0:0\n{ok}.batch|batch|1|0:0\n{ok}.0|true|2|0:0\n")
    );
    // The records are in the database, once each.
    assert_eq!(
        db.rows_per_job(),
        BTreeMap::from([(ok, 1), (failed, 1)]),
        "{}",
        c.log("ctld")
    );
    // A restarted controller finds its history there.
    c.kill_ctld();
    c.restart_ctld();
    let again = c.ok("sacct", &["-P", "-n", "-X", "-o", "JobID,State"]);
    assert_eq!(again.stdout, format!("{ok}|COMPLETED\n{failed}|FAILED\n"));
}

#[test]
fn the_controller_keeps_scheduling_while_postgresql_is_away() {
    let Some(base) = pg_base("the_controller_keeps_scheduling_while_postgresql_is_away") else {
        return;
    };
    let mut db = Db::create(&base);
    let c = db.builder(2).start();
    let before = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(before, secs(30)), "COMPLETED");
    sacct_when_all(&c, &[before], "COMPLETED");

    db.cut();
    // Jobs submitted, started and ended while the database is away.
    let during: Vec<u32> = (0..6)
        .map(|i| c.submit(&["-J", &format!("away{i}"), "--wrap", "sleep 0.2"]))
        .collect();
    for id in &during {
        assert_eq!(c.wait_done(*id, secs(60)), "COMPLETED", "{}", c.logs());
    }
    // sacct says the database is unavailable meanwhile.
    let away = c.run("sacct", &["-X", "-n", "-P", "-o", "JobID"]);
    assert!(
        !away.ok(),
        "sacct answered while the database was away: {away}"
    );
    c.wait_until("the controller to say it will retry", secs(30), || {
        c.log("ctld").contains("will retry").then_some(())
    });
    let running = c.submit(&["--wrap", "sleep 300"]);
    c.wait_state(running, "RUNNING", secs(30));
    db.restore();

    let mut all = vec![before];
    all.extend(&during);
    let lines = sacct_when_all(&c, &all, "COMPLETED");
    for id in &all {
        assert_eq!(
            lines[id],
            [format!("{id}|COMPLETED"), format!("{id}.batch|COMPLETED")],
            "job {id} in sacct"
        );
    }
    assert_eq!(lines[&running][0], format!("{running}|RUNNING"));
    let rows = db.rows_per_job();
    for id in all.iter().chain([&running]) {
        assert_eq!(rows.get(id), Some(&1), "rows of job {id}: {rows:?}");
    }
    assert_eq!(rows.len(), all.len() + 1, "{rows:?}");
}

/// A stream of jobs running and ending while the database's connections
/// are killed (`Some`, PostgreSQL) and the controller is SIGKILLed and
/// restarted: every job is in sacct once, in its final state.
fn kill_mid_stream(mut db: Option<&mut Db>, c: &mut Cluster) {
    const JOBS: u32 = 24;
    let ids: Vec<u32> = (0..JOBS)
        .map(|i| c.submit(&["-J", &format!("s{i}"), "--wrap", "sleep 0.3"]))
        .collect();
    let ended = |c: &Cluster| {
        ids.iter()
            .filter(|id| c.job_state(**id) == "COMPLETED")
            .count()
    };
    c.wait_until("a quarter of the stream to end", secs(60), || {
        (ended(c) >= ids.len() / 4).then_some(())
    });
    if let Some(db) = db.as_deref_mut() {
        assert!(db.kill_backends() > 0, "the controller had no connection");
    }
    c.wait_until("half the stream to end", secs(60), || {
        (ended(c) >= ids.len() / 2).then_some(())
    });
    c.kill_ctld();
    if let Some(db) = db.as_deref_mut() {
        db.kill_backends();
    }
    c.restart_ctld();
    if let Some(db) = db.as_deref_mut() {
        c.wait_until("three quarters of the stream to end", secs(60), || {
            (ended(c) >= ids.len() * 3 / 4).then_some(())
        });
        db.kill_backends();
    }
    for id in &ids {
        assert_eq!(c.wait_done(*id, secs(60)), "COMPLETED", "{}", c.logs());
    }
    let lines = sacct_when_all(c, &ids, "COMPLETED");
    for id in &ids {
        assert_eq!(
            lines[id],
            [format!("{id}|COMPLETED"), format!("{id}.batch|COMPLETED")],
            "job {id} in sacct"
        );
    }
    assert_eq!(lines.len(), ids.len(), "{lines:?}");
    if let Some(db) = db {
        let rows = db.rows_per_job();
        assert_eq!(
            rows,
            ids.iter().map(|id| (*id, 1)).collect(),
            "one row per job"
        );
        // With nothing left to write, a killed connection is opened again
        // by the next read and the next sacctmgr change.
        assert!(db.kill_backends() > 0, "the controller had no connection");
        let out = c.ok("sacct", &["-a", "-X", "-n", "-P", "-o", "JobID"]);
        assert_eq!(out.stdout.lines().count(), ids.len(), "{out}");
        assert!(db.kill_backends() > 0, "the controller had no connection");
        c.ok("sacctmgr", &["-i", "add", "account", "physics"]);
        let out = c.ok(
            "sacctmgr",
            &["-n", "-P", "list", "account", "format=Account"],
        );
        assert!(out.stdout.lines().any(|l| l == "physics"), "{out}");
    }
}

#[test]
fn killing_the_controller_and_postgresql_connections_mid_stream_loses_no_record() {
    let Some(base) =
        pg_base("killing_the_controller_and_postgresql_connections_mid_stream_loses_no_record")
    else {
        return;
    };
    let mut db = Db::create(&base);
    let mut c = db.builder(2).start();
    kill_mid_stream(Some(&mut db), &mut c);
}

#[test]
fn killing_the_controller_mid_stream_loses_no_sqlite_record() {
    let mut c = builder().nodes(2).start();
    kill_mid_stream(None, &mut c);
}

/// A PostgreSQL server of the test's own (`initdb` + `pg_ctl`, as the
/// `postgres` user when the test runs as root), listening on localhost
/// with TLS under a certificate for `localhost` signed by a CA made here
/// (the `openssl` command), stopped with this value.
struct TlsServer {
    dir: std::path::PathBuf,
    bin: std::path::PathBuf,
    port: u16,
}

impl TlsServer {
    /// None (outside CI) where PostgreSQL's programs or `openssl` are missing.
    fn start(test: &str) -> Option<TlsServer> {
        let bin = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .filter(|b| b.join("initdb").exists())
                .max()
        });
        let openssl = std::process::Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success());
        let Some(bin) = bin.filter(|_| openssl) else {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
            assert!(
                !ci,
                "{test}: PostgreSQL (initdb) or openssl missing under CI"
            );
            eprintln!("{test}: did not run: needs /usr/lib/postgresql/*/bin and openssl");
            return None;
        };
        let dir = std::env::temp_dir().join(format!(
            "muster-pgtls-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let server = TlsServer {
            dir,
            bin,
            port: e2e::free_port(),
        };
        server.make_ca("ca");
        server.make_ca("other-ca");
        server.sign("server", "ca", "DNS:localhost");
        let data = server.dir.join("data");
        std::fs::create_dir(&data).unwrap();
        server.chown(&server.dir);
        server.as_server(&[
            "initdb",
            "--no-sync",
            "-A",
            "trust",
            "-U",
            "muster",
            "-D",
            data.to_str().unwrap(),
        ]);
        for f in ["server.crt", "server.key"] {
            std::fs::copy(server.dir.join(f), data.join(f)).unwrap();
        }
        server.chown(&data);
        std::fs::set_permissions(
            data.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        // TLS in postgresql.conf (not on the command line, which would
        // win over the test's ALTER SYSTEM SET ssl = off below).
        let mut pgconf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        use std::io::Write;
        writeln!(
            pgconf,
            "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'"
        )
        .unwrap();
        drop(pgconf);
        let opts = format!(
            "-p {} -k {} -c listen_addresses=localhost -c fsync=off",
            server.port,
            server.dir.display()
        );
        let log = server.dir.join("server.log");
        server.as_server(&[
            "pg_ctl",
            "-D",
            data.to_str().unwrap(),
            "-l",
            log.to_str().unwrap(),
            "-o",
            &opts,
            "-w",
            "start",
        ]);
        server
            .admin()
            .batch_execute("CREATE DATABASE slurm_acct_db")
            .unwrap();
        Some(server)
    }

    fn openssl(&self, args: &[&str]) {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A self-signed CA, `NAME.crt` and `NAME.key`.
    fn make_ca(&self, name: &str) {
        self.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=muster test {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ]);
    }

    /// `NAME.crt` and `NAME.key` signed by CA `ca`, for `san`.
    fn sign(&self, name: &str, ca: &str, san: &str) {
        self.openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ]);
        std::fs::write(
            self.dir.join(format!("{name}.ext")),
            format!("subjectAltName={san}\nextendedKeyUsage=serverAuth\n"),
        )
        .unwrap();
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
            "-out",
            &format!("{name}.crt"),
        ]);
    }

    fn root() -> bool {
        nix::unistd::Uid::effective().is_root()
    }

    fn chown(&self, path: &std::path::Path) {
        if Self::root() {
            let st = std::process::Command::new("chown")
                .args(["-R", "postgres:", path.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(st.success());
        }
    }

    /// Runs one of PostgreSQL's programs as the server's user.
    fn as_server(&self, args: &[&str]) {
        let program = self.bin.join(args[0]);
        let mut cmd = if Self::root() {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            std::process::Command::new(&program)
        };
        let out = cmd
            .args(&args[1..])
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A connection over the Unix socket (no TLS there), as the superuser.
    fn admin(&self) -> postgres::Client {
        postgres::Client::connect(
            &format!(
                "host={} port={} user=muster dbname=postgres",
                self.dir.display(),
                self.port
            ),
            postgres::NoTls,
        )
        .unwrap()
    }

    /// The controller's sessions to slurm_acct_db: (over TLS, plain).
    fn sessions(&self) -> (i64, i64) {
        let row = self
            .admin()
            .query_one(
                "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
                 FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.datname = 'slurm_acct_db'",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    }

    /// The slurmdbd.conf that points the controller here with `params`
    /// (`StorageParameters`) and `host`.
    fn dbd_conf(&self, host: &str, params: &str) -> String {
        format!(
            "StorageType=accounting_storage/pgsql\nStorageHost={host}\nStoragePort={}\n\
             StorageUser=muster\nStorageParameters={params}\n",
            self.port
        )
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        if data.exists() {
            let program = self.bin.join("pg_ctl");
            let mut cmd = if Self::root() {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&program);
                c
            } else {
                std::process::Command::new(&program)
            };
            let _ = cmd
                .args(["-D", data.to_str().unwrap_or(""), "-m", "immediate", "stop"])
                .output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_controller_reaches_postgresql_over_tls_as_sslmode_says() {
    let test = "the_controller_reaches_postgresql_over_tls_as_sslmode_says";
    let Some(server) = TlsServer::start(test) else {
        return;
    };
    let dbd = |c: &Cluster, text: &str| {
        std::fs::write(c.conf().with_file_name("slurmdbd.conf"), text).unwrap();
    };
    // sslmode=require: TLS, the certificate unchecked.
    let mut c = builder()
        .nodes(1)
        .conf_extra("AccountingStorageType=accounting_storage/pgsql\n")
        .file(
            "slurmdbd.conf",
            &server.dbd_conf("localhost", "sslmode=require"),
        )
        .start();
    let job = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(job, secs(30)), "COMPLETED");
    sacct_when_all(&c, &[job], "COMPLETED");
    let (tls, plain) = server.sessions();
    assert!(
        tls >= 1 && plain == 0,
        "TLS {tls}, plain {plain}: {}",
        c.log("ctld")
    );

    // verify-full with the CA that signed the server's certificate, by
    // the name in it.
    c.kill_ctld();
    let ca = server.path("ca.crt");
    dbd(
        &c,
        &server.dbd_conf(
            "localhost",
            &format!("sslmode=verify-full,sslrootcert={ca}"),
        ),
    );
    c.restart_ctld();
    let again = c.ok("sacct", &["-X", "-n", "-P", "-o", "JobID,State"]);
    assert_eq!(again.stdout, format!("{job}|COMPLETED\n"));
    c.wait_until("the controller's session, over TLS", secs(30), || {
        let (tls, plain) = server.sessions();
        (tls >= 1 && plain == 0).then_some(())
    });

    // Refused: another CA; the right CA but a name the certificate does
    // not hold (127.0.0.1); a server without TLS under require.
    let refused = |c: &mut Cluster, text: &str, why: &str| {
        c.kill_ctld();
        dbd(c, text);
        let before = c.log("ctld").len();
        c.spawn_ctld();
        let st = c.wait_ctld_exit(secs(60));
        let log = c.log("ctld")[before..].to_string();
        assert!(st.is_some_and(|s| !s.success()), "{text}: {st:?} {log}");
        assert!(
            log.contains("opening the accounting database") && log.contains(why),
            "{text}: wanted {why:?} in {log}"
        );
    };
    let other = server.path("other-ca.crt");
    refused(
        &mut c,
        &server.dbd_conf(
            "localhost",
            &format!("sslmode=verify-full,sslrootcert={other}"),
        ),
        "invalid peer certificate: UnknownIssuer",
    );
    refused(
        &mut c,
        &server.dbd_conf(
            "127.0.0.1",
            &format!("sslmode=verify-full,sslrootcert={ca}"),
        ),
        "certificate not valid for name",
    );
    // verify-ca does not check the name: 127.0.0.1 is accepted.
    c.kill_ctld();
    dbd(
        &c,
        &server.dbd_conf("127.0.0.1", &format!("sslmode=verify-ca,sslrootcert={ca}")),
    );
    c.restart_ctld();
    c.ok("sacct", &["-X", "-n"]);
    server
        .admin()
        .batch_execute("ALTER SYSTEM SET ssl = off")
        .unwrap();
    server
        .admin()
        .batch_execute("SELECT pg_reload_conf()")
        .unwrap();
    c.wait_until("the server to stop offering TLS", secs(30), || {
        let ssl: String = server.admin().query_one("SHOW ssl", &[]).unwrap().get(0);
        (ssl == "off").then_some(())
    });
    refused(
        &mut c,
        &server.dbd_conf("localhost", "sslmode=require"),
        "server does not support TLS",
    );
    // prefer (the default) goes on without TLS there.
    c.kill_ctld();
    dbd(&c, &server.dbd_conf("localhost", "sslmode=prefer"));
    c.restart_ctld();
    c.ok("sacct", &["-X", "-n"]);
    c.wait_until("the controller's session, without TLS", secs(30), || {
        let (tls, plain) = server.sessions();
        (tls == 0 && plain >= 1).then_some(())
    });
}
