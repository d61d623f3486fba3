//! Golden tests: sacctmgr's listings and errors against what Slurm 22.05
//! printed (`/work/shared/reference/slurm-22.05/sacctmgr_*.out`).
//!
//! The tables below mirror the capture's association database: cluster
//! `anchor`, accounts `ml` and `research` under `root`, users with QOS
//! `high,normal` set on some associations (the others inherit `normal`).

use cli::sacctmgr::{self, fields, Command, Opts};
use proto::acctdb::{AcctAccount, AcctCluster, AcctTables, AcctUser, AdminLevel, Assoc, Qos};

fn capture() -> AcctTables {
    let mut id = 0;
    let mut assoc = |account: &str, user: &str, parent: &str, qos: &[&str]| {
        id += 1;
        Assoc {
            id,
            cluster: "anchor".into(),
            account: account.into(),
            user: user.into(),
            parent: parent.into(),
            shares: 1,
            qos: qos.iter().map(|s| s.to_string()).collect(),
            ..Assoc::default()
        }
    };
    let hn = &["high", "normal"];
    // Deliberately out of order: the listing sorts them as Slurm does.
    let assocs = vec![
        assoc("research", "sauser", "research", hn),
        assoc("root", "", "", &["normal"]),
        assoc("ml", "", "root", &[]),
        assoc("research", "", "root", &[]),
        assoc("ml", "sauser", "ml", hn),
        assoc("ml", "nobody", "ml", &[]),
        assoc("root", "root", "root", hn),
        assoc("ml", "root", "ml", hn),
        assoc("research", "root", "research", hn),
    ];
    let acct = |n: &str| AcctAccount {
        name: n.into(),
        description: n.into(),
        organization: n.into(),
    };
    let user = |n: &str, d: &str| AcctUser {
        name: n.into(),
        default_account: d.into(),
        admin_level: AdminLevel::None,
    };
    let mut high = Qos::new(2, "high");
    high.priority = 100;
    AcctTables {
        clusters: vec![AcctCluster {
            name: "anchor".into(),
        }],
        accounts: vec![acct("ml"), acct("research"), acct("root")],
        users: vec![
            user("nobody", "ml"),
            user("root", "root"),
            user("sauser", "ml"),
        ],
        assocs,
        qos: vec![Qos::new(1, "normal"), high],
    }
}

fn run(args: &[&str], t: &AcctTables) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (o, words, _, _) = sacctmgr::parse_opts(&args).unwrap();
    let Command::Show(s) = sacctmgr::parse_command(&words, &o).unwrap() else {
        panic!("not a listing");
    };
    let rows = sacctmgr::rows(t, &s, ("ctl", 6817));
    fields::render(&s.columns, &rows, o.layout, !o.noheader)
}

fn err(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (o, words, _, _) = sacctmgr::parse_opts(&args).unwrap();
    sacctmgr::parse_command(&words, &o).unwrap_err()
}

#[test]
fn show_assoc_matches_slurm() {
    assert_eq!(
        run(&["show", "assoc"], &capture()),
        include_str!("golden/sacctmgr_show_assoc.txt")
    );
}

#[test]
fn show_qos_with_format_matches_slurm() {
    assert_eq!(
        run(
            &[
                "show",
                "qos",
                "format=Name,Priority,Preempt,PreemptMode,MaxWall"
            ],
            &capture()
        ),
        include_str!("golden/sacctmgr_show_qos.txt")
    );
}

#[test]
fn parsable_and_where_forms_tools_use() {
    let t = capture();
    // Open OnDemand: accounts and QOS of one user on one cluster.
    assert_eq!(
        run(
            &[
                "-nP",
                "show",
                "users",
                "withassoc",
                "format=account,qos",
                "where",
                "user=sauser",
                "cluster=anchor"
            ],
            &t
        ),
        "ml|high,normal\nresearch|high,normal\n"
    );
    // Issue 35: the options may follow the command.
    assert_eq!(
        run(
            &[
                "show",
                "users",
                "withassoc",
                "format=account,qos",
                "where",
                "user=sauser",
                "cluster=anchor",
                "-nP"
            ],
            &t
        ),
        "ml|high,normal\nresearch|high,normal\n"
    );
    // Kubeflow-style: -s (withassoc) list user NAME format=account%256.
    let out = run(
        &["-n", "-s", "list", "user", "nobody", "format=account%-8"],
        &t,
    );
    assert_eq!(out, "ml       \n");
    assert_eq!(
        run(
            &["-p", "show", "user", "format=user,defaultaccount,admin"],
            &t
        ),
        "User|Def Acct|Admin|\nnobody|ml|None|\nroot|root|None|\nsauser|ml|None|\n"
    );
    // Values wider than their column end in '+'.
    assert_eq!(
        run(
            &[
                "-n",
                "show",
                "account",
                "where",
                "name=research",
                "format=account%5"
            ],
            &t
        ),
        "rese+ \n"
    );
}

#[test]
fn default_listings_have_slurms_headers() {
    let t = capture();
    let first = |args: &[&str]| run(args, &t).lines().next().unwrap().to_owned();
    assert_eq!(first(&["show", "user"]), "      User   Def Acct     Admin ");
    assert_eq!(
        first(&["show", "account"]),
        "   Account                Descr                  Org "
    );
    assert_eq!(
        first(&["show", "cluster"]),
        "   Cluster     ControlHost  ControlPort   RPC     Share GrpJobs       GrpTRES \
         GrpSubmit MaxJobs       MaxTRES MaxSubmit     MaxWall                  QOS   Def QOS "
    );
    let qos = run(&["show", "qos"], &t);
    assert!(
        qos.starts_with(&format!(
            "      Name   Priority  GraceTime    Preempt   PreemptExemptTime PreemptMode \
             {:>40} UsageThres UsageFactor       GrpTRES ",
            "Flags"
        )),
        "{qos}"
    );
    assert!(
        qos.contains(
            "    normal          0   00:00:00                                    cluster "
        ),
        "{qos}"
    );
    assert!(qos.contains("    1.000000 "), "{qos}");
}

#[test]
fn malformed_commands_get_slurms_errors() {
    assert_eq!(err(&["frobnicate"]), "invalid keyword: frobnicate\n");
    assert_eq!(
        err(&["show", "assoc", "format=bogus"]),
        "Unknown field 'bogus'\n"
    );
    assert_eq!(
        err(&["show", "assoc", "where", "colour=red"]),
        " Unknown condition: colour=red\n Use keyword 'set' to modify value\n"
    );
    assert_eq!(
        err(&["modify", "user", "where", "name=x", "set", "colour=red"]),
        " Unknown option: colour=red\n Use keyword 'where' to modify condition\n"
    );
    assert_eq!(
        err(&["-i", "add", "user", "x", "account=ml", "maxjobs=lots"]),
        " Bad MaxJobs value: lots\n"
    );
    assert!(err(&["add", "thing"]).starts_with("No valid entity in add command\n"));
    assert!(err(&["show", "thing"]).starts_with("No valid entity in list command\n"));
    assert!(err(&["delete"]).starts_with("No valid entity in delete command\n"));
    assert_eq!(
        err(&["-r", "add", "account", "x"]),
        "Can't run this command in readonly mode.\n"
    );
}

#[test]
fn changes_parse_into_requests() {
    use proto::acctdb::{Action, Entity, Key, ListOp};
    let args: Vec<String> = [
        "-i",
        "modify",
        "user",
        "where",
        "name=alice",
        "account=ML",
        "set",
        "MaxWall=1-00:00:00",
        "qos+=high",
        "GrpTRES=mem=2G,cpu=4",
        "maxjobs=-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (o, words, _, _) = sacctmgr::parse_opts(&args).unwrap();
    assert_eq!(
        o,
        Opts {
            immediate: true,
            ..Opts::default()
        }
    );
    let Command::Change(r) = sacctmgr::parse_command(&words, &o).unwrap() else {
        panic!()
    };
    assert_eq!(
        (r.action, r.entity, r.commit),
        (Action::Modify, Entity::User, true)
    );
    assert_eq!(r.cond.names, vec!["alice"]);
    assert_eq!(r.cond.accounts, vec!["ml"]);
    let keys: Vec<(Key, ListOp, Option<&str>)> = r
        .set
        .iter()
        .map(|s| (s.key, s.op, s.value.as_deref()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (Key::MaxWall, ListOp::Set, Some("1440")),
            (Key::Qos, ListOp::Add, Some("high")),
            (Key::GrpTres, ListOp::Set, Some("cpu=4,mem=2048")),
            (Key::MaxJobs, ListOp::Set, None),
        ]
    );
}

/// `sacctmgr show reservation`: Slurm 22.05's default columns
/// (`Cluster,Name%15,TRES%30,TimeStart,TimeEnd,UnusedWall`; no capture of
/// Slurm's has one: from sacctmgr's man page and its default format), and
/// `-P` with chosen columns.
#[test]
fn show_reservation_default_and_parsable() {
    std::env::set_var("TZ", "UTC");
    let w = |name: &str, start: i64, end: i64, unused: f64| proto::resv::AcctResv {
        cluster: "anchor".into(),
        name: name.into(),
        start,
        end,
        nodes: "node[1-2]".into(),
        tres: "cpu=4".into(),
        flags: "MAINT,SPEC_NODES".into(),
        cpus: 4,
        used_cpu_secs: 0,
        unused_wall: unused,
    };
    // 2026-12-02T10:00:00Z and on.
    let t0 = 1_796_205_600;
    let all = vec![
        w("maint", t0, t0 + 3600, 3600.0),
        w("short", t0 + 60, t0 + 120, 30.5),
    ];
    let words: Vec<String> = ["where", "start=2026-12-01T00:00:00"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let s = sacctmgr::resv::parse(&words, t0).unwrap();
    let rows = sacctmgr::resv::select(&s, &all);
    assert_eq!(
        sacctmgr::resv::render(&s, &rows, fields::Layout::Columns, true),
        "   Cluster            Name                           TRES           TimeStart             TimeEnd UnusedWall \n\
         ---------- --------------- ------------------------------ ------------------- ------------------- ---------- \n\
         \x20   anchor           maint                          cpu=4 2026-12-02T10:00:00 2026-12-02T11:00:00  3.600e+03 \n\
         \x20   anchor           short                          cpu=4 2026-12-02T10:01:00 2026-12-02T10:02:00  30.500000 \n"
    );
    let words: Vec<String> = ["names=short", "format=Name,Nodes,Flags,UnusedWall"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let s = sacctmgr::resv::parse(&words, t0).unwrap();
    let rows = sacctmgr::resv::select(&s, &all);
    assert_eq!(
        sacctmgr::resv::render(&s, &rows, fields::Layout::Parsable2, true),
        "Name|Nodes|Flags|UnusedWall\nshort|node[1-2]|MAINT,SPEC_NODES|30.500000\n"
    );
    let bad: Vec<String> = vec!["format=Nope".into()];
    assert_eq!(
        sacctmgr::resv::parse(&bad, t0).unwrap_err(),
        "Unknown field 'Nope'\n"
    );
}
