use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use model::{Gres, TimeLimit};

use crate::*;

const HEAD: &str = "ClusterName=test\nSlurmctldHost=ctl\n";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn no_include(p: &Path) -> io::Result<String> {
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not expected", p.display()),
    ))
}

fn parse(text: &str) -> Result<Loaded, ConfError> {
    parse_str(text, Path::new("/etc/slurm/slurm.conf"), &mut no_include)
}

fn parse_ok(text: &str) -> Loaded {
    parse(text).unwrap_or_else(|e| panic!("parse failed: {e}"))
}

fn err_text(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn reference() -> Loaded {
    load(&data("slurm.conf")).expect("reference slurm.conf loads")
}

// ---- the reference configuration ----

#[test]
fn reference_slurm_conf_parses_without_warnings() {
    let loaded = reference();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = &loaded.config;
    assert_eq!(c.cluster_name, "anchor");
    assert_eq!(
        c.slurmctld_host,
        vec![CtldHost {
            name: "ctl".into(),
            addr: Some("10.201.0.1".into())
        }]
    );
    assert_eq!((c.slurmctld_port, c.slurmd_port), (6817, 6818));
    assert_eq!(c.slurm_user, "root");
    assert_eq!(c.state_save_location, "/var/lib/slurm/state/ctld");
    assert_eq!(c.slurmd_spool_dir, "/var/lib/slurm/spool/%n");
    assert_eq!(c.return_to_service, 2);
    assert_eq!(c.def_mem_per_cpu, Some(500));
    assert_eq!(c.max_job_count, 100000);
    assert_eq!(c.gres_types, vec!["gpu"]);
    assert_eq!(c.auth_type, "auth/munge");
    assert_eq!(
        c.other.get("selecttypeparameters"),
        Some(&(
            "SelectTypeParameters".to_string(),
            "CR_Core_Memory".to_string()
        ))
    );
    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node1", "node2", "node3", "node4"]);
    let node3 = c.node("node3").unwrap();
    assert_eq!(node3.addr, "10.201.0.13");
    assert_eq!(node3.hostname, "node3");
    assert_eq!(node3.cpus, 2);
    // As `scontrol show node node3` shows: Sockets=2 CoresPerSocket=1 ThreadsPerCore=1 Boards=1.
    assert_eq!(
        (
            node3.sockets,
            node3.cores_per_socket,
            node3.threads_per_core,
            node3.boards
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(node3.real_memory, 4000);
    assert_eq!(node3.tmp_disk, 0);
    assert_eq!(node3.weight, 1);
    assert_eq!(node3.state.as_deref(), Some("UNKNOWN"));
    assert_eq!(
        node3.gres,
        vec![Gres {
            name: "gpu".into(),
            type_: Some("a100".into()),
            count: 2
        }]
    );
    assert!(c.node("node1").unwrap().gres.is_empty());

    let debug = c.partition("debug").unwrap();
    assert_eq!(debug.nodes, ["node1", "node2", "node3", "node4"]);
    assert!(debug.default);
    assert_eq!(debug.max_time, TimeLimit::Unlimited);
    assert_eq!(debug.default_time, None);
    assert_eq!(debug.state, "UP");
    assert_eq!((debug.priority_tier, debug.priority_job_factor), (1, 1));
    assert_eq!(debug.oversubscribe, "NO");
    assert_eq!((debug.min_nodes, debug.max_nodes), (0, None));
    assert_eq!(debug.allow_accounts, None);
    assert_eq!(c.partition("gpu").unwrap().nodes, ["node3", "node4"]);
    assert!(!c.partition("gpu").unwrap().default);
    assert_eq!(c.default_partition().unwrap().name, "debug");
    assert_eq!(c.spool_dir_for("node2"), "/var/lib/slurm/spool/node2");
}

#[test]
fn reference_gres_conf_is_loaded_beside_slurm_conf() {
    let c = reference().config;
    assert_eq!(c.gres.len(), 1);
    let g = &c.gres[0];
    assert_eq!(g.node_names, ["node3", "node4"]);
    assert_eq!(g.name, "gpu");
    assert_eq!(g.type_.as_deref(), Some("a100"));
    assert_eq!(
        g.files,
        ["/var/lib/slurm/dev/nvidia0", "/var/lib/slurm/dev/nvidia1"]
    );
    assert_eq!(g.count, 2);
    assert_eq!(g.autodetect.as_deref(), Some("off"));
    assert_eq!(g.line, 2);
    assert_eq!(c.gres_for_node("node4").len(), 1);
    assert!(c.gres_for_node("node1").is_empty());
}

// ---- scontrol show config ----

/// The main section of the reference output (without the header line and
/// the cgroup/MPI sections that follow the first blank line).
fn reference_show_config_lines() -> Vec<String> {
    let text = std::fs::read_to_string(data("scontrol_show_config.out")).unwrap();
    text.lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn show_config_matches_reference_for_keys_from_the_config() {
    let config = reference().config;
    let rendered = render_show_config(&config.show_config_entries());
    let ours: HashMap<&str, &str> = rendered
        .lines()
        .map(|l| (l.split(" = ").next().unwrap().trim_end(), l))
        .collect();
    let reference = reference_show_config_lines();
    for key in [
        "ClusterName",
        "SlurmctldPort",
        "SlurmdPort",
        "SlurmUser",
        "SlurmdTimeout",
        "KillWait",
        "MinJobAge",
        "MaxJobCount",
        "FirstJobId",
        "GresTypes",
        "DefMemPerCPU",
        "StateSaveLocation",
        "SlurmdSpoolDir",
        "ReturnToService",
        "SlurmctldHost[0]",
        "AuthType",
        "MaxMemPerNode",
        "MaxNodeCount",
        "AccountingStorageTRES",
        "PriorityDecayHalfLife",
        "SelectTypeParameters",
        "SlurmdPidFile",
    ] {
        let want = reference
            .iter()
            .find(|l| l.split(" = ").next().unwrap().trim_end() == key)
            .unwrap_or_else(|| panic!("{key} not in reference"));
        assert_eq!(ours.get(key), Some(&want.as_str()), "line for {key}");
    }
}

#[test]
fn show_config_has_reference_order_and_all_values_but_runtime_ones() {
    let config = reference().config;
    let rendered = render_show_config(&config.show_config_entries());
    let ours: Vec<&str> = rendered.lines().collect();
    let reference = reference_show_config_lines();
    assert_eq!(ours.len(), reference.len());
    // Values only the running controller knows differ; everything else,
    // including the padding, is byte for byte.
    let runtime = ["BOOT_TIME", "NEXT_JOB_ID", "SLURM_CONF"];
    for (mine, theirs) in ours.iter().zip(&reference) {
        let key = theirs.split(" = ").next().unwrap().trim_end();
        assert_eq!(mine.split(" = ").next().unwrap().trim_end(), key);
        if !runtime.contains(&key) {
            assert_eq!(*mine, theirs.as_str());
        }
    }
}

#[test]
fn show_config_runtime_rows_can_be_overridden() {
    let mut entries = reference().config.show_config_entries();
    assert!(override_entry(&mut entries, "NEXT_JOB_ID", "66799"));
    assert!(!override_entry(&mut entries, "NoSuchKey", "x"));
    let rendered = render_show_config(&entries);
    assert!(rendered.contains("NEXT_JOB_ID             = 66799\n"));
    assert!(rendered.contains(&format!(
        "SLURM_CONF              = {}\n",
        data("slurm.conf").display()
    )));
}

#[test]
fn show_config_defaults_and_units_for_unset_and_set_keys() {
    let c = parse_ok(&format!(
        "{HEAD}MessageTimeout=20\nSuspendTime=600\nDisableRootJobs=YES\nDefMemPerNode=1G\nMaxMemPerCPU=2000\nSlurmctldHost=backup(10.0.0.2)\n"
    ))
    .config;
    let entries: HashMap<String, String> = c.show_config_entries().into_iter().collect();
    assert_eq!(entries["MessageTimeout"], "20 sec");
    assert_eq!(entries["SuspendTime"], "600 sec");
    assert_eq!(entries["DisableRootJobs"], "Yes");
    assert_eq!(entries["DefMemPerNode"], "1024");
    assert!(!entries.contains_key("DefMemPerCPU"));
    assert_eq!(entries["MaxMemPerCPU"], "2000");
    assert_eq!(entries["BatchStartTimeout"], "10 sec");
    assert_eq!(entries["AccountingStorageType"], "accounting_storage/none");
    assert_eq!(entries["GresTypes"], "(null)");
    assert_eq!(entries["SlurmctldHost[0]"], "ctl");
    assert_eq!(entries["SlurmctldHost[1]"], "backup(10.0.0.2)");
    assert_eq!(entries["MaxNodeCount"], "0");
}

#[test]
fn show_config_prints_private_data_in_slurms_order() {
    let entries = |extra: &str| -> HashMap<String, String> {
        parse_ok(&format!("{HEAD}{extra}"))
            .config
            .show_config_entries()
            .into_iter()
            .collect()
    };
    assert_eq!(entries("")["PrivateData"], "none");
    assert_eq!(
        entries("PrivateData=usage,Jobs\n")["PrivateData"],
        "jobs,usage"
    );
    assert_eq!(
        entries("PrivateData=all\n")["PrivateData"],
        "accounts,cloud,events,jobs,nodes,partitions,reservations,usage,users"
    );
}

#[test]
fn every_show_config_key_from_other_is_a_known_key() {
    let unknown: Vec<&str> = show::other_keys()
        .into_iter()
        .filter(|key| !keys::contains(keys::OTHER_GLOBAL, key))
        .collect();
    assert!(
        unknown.is_empty(),
        "shown but not accepted in slurm.conf: {unknown:?}"
    );
}

#[test]
fn render_pads_keys_to_23_columns() {
    let out = render_show_config(&[
        ("ClusterName".into(), "x".into()),
        ("AccountingStorageBackupHost".into(), "(null)".into()),
        ("PowerPlugin".into(), String::new()),
    ]);
    assert_eq!(
        out,
        "ClusterName             = x\nAccountingStorageBackupHost = (null)\nPowerPlugin             = \n"
    );
}

// ---- syntax ----

#[test]
fn keys_are_case_insensitive() {
    let c = parse_ok(
        "clustername=MyCluster\nSLURMCTLDHOST=ctl\nslurmdport=7000\nnodename=n[1-2] cpus=4 REALMEMORY=100\npartitionname=p nodes=n[1-2] default=yes maxtime=1:00:00 state=down\n",
    )
    .config;
    // Slurm maps ClusterName to lower case.
    assert_eq!(c.cluster_name, "mycluster");
    assert_eq!(c.slurmd_port, 7000);
    assert_eq!(c.nodes.len(), 2);
    assert_eq!(c.nodes[1].cpus, 4);
    assert_eq!(c.nodes[1].real_memory, 100);
    let p = c.partition("p").unwrap();
    assert!(p.default);
    assert_eq!(p.max_time, TimeLimit::Minutes(60));
    assert_eq!(p.state, "DOWN");
}

#[test]
fn comments_blank_lines_and_escaped_hash() {
    let c = parse_ok(&format!(
        "# leading comment\n\n   \n{HEAD}SlurmdPort=7001 # trailing comment\nMailProg=/bin/mail\\#x\n#SlurmctldPort=1\n"
    ))
    .config;
    assert_eq!(c.slurmd_port, 7001);
    assert_eq!(c.slurmctld_port, 6817);
    assert_eq!(c.other["mailprog"].1, "/bin/mail#x");
}

#[test]
fn quoted_values_keep_spaces_and_hashes() {
    let loaded = parse_ok(&format!(
        "{HEAD}InteractiveStepOptions=\"--interactive --pty $SHELL\"\nNodeName=n1 Reason=\"disk # 2 bad\" State=DOWN\n"
    ));
    let c = loaded.config;
    assert_eq!(
        c.other["interactivestepoptions"].1,
        "--interactive --pty $SHELL"
    );
    assert_eq!(c.nodes[0].reason.as_deref(), Some("disk # 2 bad"));
    assert_eq!(c.nodes[0].state.as_deref(), Some("DOWN"));
}

#[test]
fn continuation_lines_join_and_errors_cite_the_first_line() {
    let text = format!("{HEAD}NodeName=n[1-3] \\\n   CPUs=8 \\\n   RealMemory=1000\nPartitionName=p \\\n Nodes=n[1-3]\n");
    let c = parse_ok(&text).config;
    assert_eq!(c.nodes.len(), 3);
    assert!(c.nodes.iter().all(|n| n.cpus == 8 && n.real_memory == 1000));
    assert_eq!(c.nodes[0].line, 3);
    assert_eq!(c.partition("p").unwrap().line, 6);
    let err = err_text(&format!("{HEAD}NodeName=n1 \\\n CPUs=x\n"));
    assert_eq!(
        err,
        "/etc/slurm/slurm.conf:3: invalid value \"x\" for CPUs: expected a whole number"
    );
}

#[test]
fn several_pairs_on_a_global_line_and_spaces_around_equals() {
    let c = parse_ok(&format!("{HEAD}SlurmctldPort = 7100 SlurmdPort=7101\n")).config;
    assert_eq!((c.slurmctld_port, c.slurmd_port), (7100, 7101));
}

#[test]
fn a_bare_word_is_a_syntax_error() {
    assert_eq!(
        err_text(&format!(
            "{HEAD}InteractiveStepOptions=--interactive --pty\n"
        )),
        "/etc/slurm/slurm.conf:3: expected Key=Value, found \"--pty\""
    );
    assert!(err_text(&format!("{HEAD}MailProg=\"/bin/mail\n")).contains("unterminated quote"));
}

#[test]
fn unknown_keys_warn_and_parsing_goes_on() {
    let loaded = parse_ok(&format!(
        "{HEAD}FooBar=1\nNodeName=n1 Colour=blue CPUs=2\nPartitionName=p Nodes=n1 Flavour=x\nFastSchedule=1\n"
    ));
    let msgs: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "/etc/slurm/slurm.conf:3: unknown key FooBar",
            "/etc/slurm/slurm.conf:4: unknown key Colour on NodeName line",
            "/etc/slurm/slurm.conf:5: unknown key Flavour on PartitionName line",
            "/etc/slurm/slurm.conf:6: FastSchedule is obsolete and ignored",
        ]
    );
    assert_eq!(loaded.config.nodes[0].cpus, 2);
    assert!(!loaded.config.other.contains_key("foobar"));
}

#[test]
fn known_unmodelled_keys_are_kept_without_warnings() {
    let loaded = parse_ok(&format!(
        "{HEAD}SchedulerParameters=bf_window=60,bf_continue\nNodeName=n1 CoreSpecCount=1\nPartitionName=p Nodes=n1 OverTimeLimit=5 Hidden=YES\n"
    ));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = loaded.config;
    assert_eq!(
        c.other["schedulerparameters"],
        (
            "SchedulerParameters".to_string(),
            "bf_window=60,bf_continue".to_string()
        )
    );
    assert_eq!(c.nodes[0].other["corespeccount"].1, "1");
    assert_eq!(c.partitions[0].other["overtimelimit"].1, "5");
}

#[test]
fn a_key_given_twice_warns_and_the_last_wins() {
    let loaded = parse_ok(&format!("{HEAD}SlurmdPort=1\nSlurmdPort=2\n"));
    assert_eq!(loaded.config.slurmd_port, 2);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0]
        .to_string()
        .starts_with("/etc/slurm/slurm.conf:4: SlurmdPort specified more than once"));
}

#[test]
fn defaults_when_keys_are_absent() {
    let c = parse_ok(HEAD).config;
    assert_eq!(c.slurmctld_port, 6817);
    assert_eq!(c.slurmd_port, 6818);
    assert_eq!(c.state_save_location, "/var/spool/slurmctld");
    assert_eq!(c.slurmd_spool_dir, "/var/spool/slurmd");
    assert_eq!(c.slurm_user, "root");
    assert_eq!(
        (
            c.slurmd_timeout,
            c.kill_wait,
            c.min_job_age,
            c.max_job_count,
            c.first_job_id,
            c.return_to_service
        ),
        (300, 30, 300, 10000, 1, 0)
    );
    assert_eq!(c.auth_type, "auth/munge");
    assert_eq!(
        (c.def_mem_per_cpu, c.def_mem_per_node, c.max_mem_per_node),
        (None, None, None)
    );
    assert!(c.default_partition().is_none());
}

#[test]
fn missing_cluster_name_or_controller_is_an_error() {
    assert_eq!(
        parse("SlurmctldHost=ctl\n").unwrap_err().to_string(),
        "/etc/slurm/slurm.conf: ClusterName needs to be specified"
    );
    assert_eq!(
        parse("ClusterName=c\n").unwrap_err().to_string(),
        "/etc/slurm/slurm.conf: SlurmctldHost needs to be specified"
    );
}

#[test]
fn old_control_machine_keys_give_controller_hosts() {
    let c = parse_ok(
        "ClusterName=c\nControlMachine=head\nControlAddr=10.0.0.1\nBackupController=head2\n",
    )
    .config;
    assert_eq!(
        c.slurmctld_host,
        vec![
            CtldHost {
                name: "head".into(),
                addr: Some("10.0.0.1".into())
            },
            CtldHost {
                name: "head2".into(),
                addr: None
            }
        ]
    );
}

#[test]
fn port_range_takes_the_first_port() {
    let c = parse_ok(&format!("{HEAD}SlurmctldPort=6817-6818\n")).config;
    assert_eq!(c.slurmctld_port, 6817);
}

// ---- nodes ----

#[test]
fn node_ranges_expand_with_addresses_matched_by_position() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=gpu[01-03] NodeAddr=10.0.0.[1-3] NodeHostname=h[1-3] Port=[17001-17003]\n"
    ))
    .config;
    let got: Vec<(&str, &str, &str, Option<u16>)> = c
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.as_str(),
                n.addr.as_str(),
                n.hostname.as_str(),
                n.port,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("gpu01", "10.0.0.1", "h1", Some(17001)),
            ("gpu02", "10.0.0.2", "h2", Some(17002)),
            ("gpu03", "10.0.0.3", "h3", Some(17003)),
        ]
    );
}

#[test]
fn node_address_defaults_to_hostname_then_name() {
    let c = parse_ok(&format!("{HEAD}NodeName=a NodeHostname=ha\nNodeName=b\n")).config;
    assert_eq!(
        (c.nodes[0].hostname.as_str(), c.nodes[0].addr.as_str()),
        ("ha", "ha")
    );
    assert_eq!(
        (c.nodes[1].hostname.as_str(), c.nodes[1].addr.as_str()),
        ("b", "b")
    );
    assert_eq!(c.spool_dir_for("a"), "/var/spool/slurmd");
}

#[test]
fn spool_dir_expands_node_and_host() {
    let c = parse_ok(&format!(
        "{HEAD}SlurmdSpoolDir=/s/%n/%h\nNodeName=a NodeHostname=ha\n"
    ))
    .config;
    assert_eq!(c.spool_dir_for("a"), "/s/a/ha");
    assert_eq!(c.spool_dir_for("zz"), "/s/zz/zz");
}

#[test]
fn node_address_count_must_match() {
    assert_eq!(
        err_text(&format!("{HEAD}NodeName=n[1-3] NodeAddr=10.0.0.[1-2]\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"10.0.0.[1-2]\" for NodeAddr: 2 names for 3 nodes in n[1-3]"
    );
}

#[test]
fn cpu_topology_defaults() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=a\nNodeName=b CPUs=2\nNodeName=c Sockets=2 CoresPerSocket=8 ThreadsPerCore=2\nNodeName=d CPUs=16 CoresPerSocket=4\nNodeName=e Boards=2 SocketsPerBoard=2 CoresPerSocket=4\nNodeName=f Procs=3\n"
    ))
    .config;
    let t = |n: &str| {
        let n = c.node(n).unwrap();
        (
            n.cpus,
            n.boards,
            n.sockets,
            n.cores_per_socket,
            n.threads_per_core,
        )
    };
    assert_eq!(t("a"), (1, 1, 1, 1, 1));
    assert_eq!(t("b"), (2, 1, 2, 1, 1));
    assert_eq!(t("c"), (32, 1, 2, 8, 2));
    assert_eq!(t("d"), (16, 1, 4, 4, 1));
    assert_eq!(t("e"), (16, 2, 2, 4, 1));
    assert_eq!(t("f"), (3, 1, 3, 1, 1));
    let a = c.node("a").unwrap();
    assert_eq!(
        (a.real_memory, a.tmp_disk, a.weight, a.state.clone()),
        (1, 0, 1, None)
    );
}

#[test]
fn node_default_lines_apply_to_later_lines_only() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=early\nNodeName=DEFAULT CPUs=4 RealMemory=2000 Features=fast,ib State=UNKNOWN\nNodeName=n[1-2]\nNodeName=n3 CPUs=8\nNodeName=default RealMemory=3000\nNodeName=n4\n"
    ))
    .config;
    let summary = |n: &str| {
        let n = c.node(n).unwrap();
        (n.cpus, n.real_memory, n.features.clone(), n.state.clone())
    };
    assert_eq!(summary("early"), (1, 1, vec![], None));
    let fast = vec!["fast".to_string(), "ib".to_string()];
    assert_eq!(
        summary("n1"),
        (4, 2000, fast.clone(), Some("UNKNOWN".into()))
    );
    assert_eq!(
        summary("n3"),
        (8, 2000, fast.clone(), Some("UNKNOWN".into()))
    );
    // A second DEFAULT line changes only what it names.
    assert_eq!(summary("n4"), (4, 3000, fast, Some("UNKNOWN".into())));
    assert!(c.node("DEFAULT").is_none());
}

#[test]
fn duplicate_node_is_an_error() {
    assert_eq!(
        err_text(&format!("{HEAD}NodeName=n[1-3]\nNodeName=n2\n")),
        "/etc/slurm/slurm.conf:4: invalid value \"n2\" for NodeName: node n2 is already defined at /etc/slurm/slurm.conf:3"
    );
}

#[test]
fn bad_node_values_name_file_line_key_and_reason() {
    let cases = [
        (
            "NodeName=n1 CPUs=two",
            "invalid value \"two\" for CPUs: expected a whole number",
        ),
        (
            "NodeName=n1 Sockets=0",
            "invalid value \"0\" for Sockets: must be at least 1",
        ),
        (
            "NodeName=n1 RealMemory=lots",
            "invalid value \"lots\" for RealMemory: invalid memory specification",
        ),
        (
            "NodeName=n1 State=SLEEPY",
            "invalid value \"SLEEPY\" for State: expected UNKNOWN, FUTURE",
        ),
        (
            "NodeName=n[1-",
            "invalid value \"n[1-\" for NodeName: bad hostlist",
        ),
        (
            "NodeName=n1 Gres=gpu:a:b:c",
            "invalid value \"gpu:a:b:c\" for Gres: invalid GRES",
        ),
        (
            "NodeName=n1 Weight=-1",
            "invalid value \"-1\" for Weight: expected a whole number",
        ),
        (
            "NodeName=n1 Port=http",
            "invalid value \"http\" for Port: expected a port number",
        ),
    ];
    for (line, want) in cases {
        let err = err_text(&format!("{HEAD}GresTypes=gpu\n{line}\n"));
        assert!(
            err.starts_with(&format!("/etc/slurm/slurm.conf:4: {want}")),
            "{line}: got {err}"
        );
        assert!(matches!(
            parse(&format!("{HEAD}GresTypes=gpu\n{line}\n")),
            Err(ConfError::Invalid { line: 4, .. })
        ));
    }
}

#[test]
fn node_state_is_uppercased_and_may_combine() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=a State=future\nNodeName=b State=cloud+powered_down\n"
    ))
    .config;
    assert_eq!(c.nodes[0].state.as_deref(), Some("FUTURE"));
    assert_eq!(c.nodes[1].state.as_deref(), Some("CLOUD+POWERED_DOWN"));
}

#[test]
fn gres_must_be_listed_in_gres_types() {
    assert_eq!(
        err_text(&format!("{HEAD}NodeName=n1 Gres=gpu:a100:2,nic:1\nGresTypes=gpu\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"gpu:a100:2,nic:1\" for Gres: nic is not listed in GresTypes"
    );
    let c = parse_ok(&format!(
        "{HEAD}NodeName=n1 Gres=gpu:a100:2,nic:1\nGresTypes=gpu,nic\n"
    ))
    .config;
    assert_eq!(c.nodes[0].gres.len(), 2);
}

#[test]
fn down_nodes_lines_set_state_and_reason() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=n[1-3]\nDownNodes=n[2-3] Reason=\"bad fan\" State=FAIL\n"
    ))
    .config;
    assert_eq!(c.nodes[0].state, None);
    assert_eq!(c.nodes[1].state.as_deref(), Some("FAIL"));
    assert_eq!(c.nodes[2].reason.as_deref(), Some("bad fan"));
    assert!(
        err_text(&format!("{HEAD}NodeName=n1\nDownNodes=n9\n")).contains("node n9 is not defined")
    );
}

// ---- partitions ----

#[test]
fn partition_defaults_and_values() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=n[1-4]\nPartitionName=DEFAULT MaxTime=1-00:00:00 State=UP PriorityTier=5\nPartitionName=a Nodes=n[1-2] DefaultTime=30 MaxNodes=2 MinNodes=1 OverSubscribe=force:4 AllowAccounts=x,y AllowGroups=ALL DefMemPerCPU=1G MaxMemPerNode=UNLIMITED\nPartitionName=b Nodes=ALL MaxTime=UNLIMITED State=inactive Shared=EXCLUSIVE Priority=7 Default=YES\n"
    ))
    .config;
    let a = c.partition("a").unwrap();
    assert_eq!(a.max_time, TimeLimit::Minutes(1440));
    assert_eq!(a.default_time, Some(TimeLimit::Minutes(30)));
    assert_eq!((a.max_nodes, a.min_nodes), (Some(2), 1));
    assert_eq!(a.priority_tier, 5);
    assert_eq!(a.oversubscribe, "FORCE:4");
    assert_eq!(a.allow_accounts, Some(vec!["x".into(), "y".into()]));
    assert_eq!(a.allow_groups, None);
    assert_eq!((a.def_mem_per_cpu, a.max_mem_per_node), (Some(1024), None));
    let b = c.partition("b").unwrap();
    assert_eq!(b.nodes, ["n1", "n2", "n3", "n4"]);
    assert_eq!(b.max_time, TimeLimit::Unlimited);
    assert_eq!(b.state, "INACTIVE");
    assert_eq!(b.oversubscribe, "EXCLUSIVE");
    assert_eq!((b.priority_tier, b.priority_job_factor), (7, 7));
    assert_eq!(c.default_partition().unwrap().name, "b");
}

#[test]
fn partition_nodes_may_be_defined_later_and_come_out_in_node_order() {
    let c = parse_ok(&format!(
        "{HEAD}PartitionName=p Nodes=b,a[2-3],a1,b\nNodeName=a[1-3]\nNodeName=b\n"
    ))
    .config;
    assert_eq!(c.partition("p").unwrap().nodes, ["a1", "a2", "a3", "b"]);
}

#[test]
fn nodesets_resolve_in_partitions() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=n[1-2] Features=gpu\nNodeName=n[3-4]\nNodeSet=gpus Feature=gpu\nNodeSet=tail Nodes=n4\nPartitionName=p Nodes=gpus,tail\n"
    ))
    .config;
    assert_eq!(c.partition("p").unwrap().nodes, ["n1", "n2", "n4"]);
}

#[test]
fn partition_with_undefined_node_is_an_error() {
    assert_eq!(
        err_text(&format!(
            "{HEAD}NodeName=n[1-2]\nPartitionName=p Nodes=n[1-3]\n"
        )),
        "/etc/slurm/slurm.conf:4: invalid value \"n[1-3]\" for Nodes: node n3 is not defined"
    );
}

#[test]
fn duplicate_partition_is_an_error() {
    assert!(
        err_text(&format!("{HEAD}PartitionName=p\nPartitionName=p\n"))
            .contains("partition is already defined at /etc/slurm/slurm.conf:3")
    );
}

#[test]
fn bad_partition_values_name_file_line_key_and_reason() {
    let cases = [
        (
            "MaxTime=forever",
            "invalid value \"forever\" for MaxTime: invalid time specification",
        ),
        (
            "DefaultTime=1:2:3:4",
            "invalid value \"1:2:3:4\" for DefaultTime: invalid time specification",
        ),
        (
            "State=OPEN",
            "invalid value \"OPEN\" for State: expected UP, DOWN, DRAIN or INACTIVE",
        ),
        (
            "Default=maybe",
            "invalid value \"maybe\" for Default: expected YES or NO",
        ),
        (
            "OverSubscribe=YES:0",
            "invalid value \"YES:0\" for OverSubscribe: expected NO, EXCLUSIVE",
        ),
        (
            "MaxNodes=many",
            "invalid value \"many\" for MaxNodes: expected a whole number",
        ),
        (
            "DefMemPerCPU=1Q",
            "invalid value \"1Q\" for DefMemPerCPU: invalid memory specification",
        ),
    ];
    for (pair, want) in cases {
        let err = err_text(&format!("{HEAD}PartitionName=p {pair}\n"));
        assert!(
            err.starts_with(&format!("/etc/slurm/slurm.conf:3: {want}")),
            "{pair}: got {err}"
        );
    }
}

#[test]
fn bad_global_values_name_file_line_key_and_reason() {
    let cases = [
        (
            "SlurmdTimeout=soon",
            "invalid value \"soon\" for SlurmdTimeout: expected a whole number",
        ),
        (
            "SlurmctldPort=0",
            "invalid value \"0\" for SlurmctldPort: expected a port number",
        ),
        (
            "ReturnToService=3",
            "invalid value \"3\" for ReturnToService: expected 0, 1 or 2",
        ),
        (
            "DefMemPerCPU=-5",
            "invalid value \"-5\" for DefMemPerCPU: invalid memory specification",
        ),
        (
            "FirstJobId=0",
            "invalid value \"0\" for FirstJobId: must be at least 1",
        ),
        (
            "SlurmctldHost=a(b",
            "invalid value \"a(b\" for SlurmctldHost: expected host or host(addr)",
        ),
    ];
    for (pair, want) in cases {
        let err = err_text(&format!("ClusterName=c\nSlurmctldHost=x\n{pair}\n"));
        assert!(
            err.starts_with(&format!("/etc/slurm/slurm.conf:3: {want}")),
            "{pair}: got {err}"
        );
    }
}

#[test]
fn conflicting_settings_warn_at_their_line() {
    let loaded = parse_ok(&format!(
        "{HEAD}DefMemPerCPU=100\nDefMemPerNode=1000\nPartitionName=a Default=YES\nPartitionName=b Default=YES\n"
    ));
    let msgs: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "/etc/slurm/slurm.conf:4: DefMemPerCPU and DefMemPerNode are mutually exclusive, DefMemPerCPU used",
            "/etc/slurm/slurm.conf:6: several partitions have Default=YES, b is the default",
        ]
    );
    assert_eq!(loaded.config.def_mem_per_node, None);
    assert_eq!(loaded.config.default_partition().unwrap().name, "b");
}

#[test]
fn memory_limits_accept_suffixes_and_unlimited() {
    let c = parse_ok(&format!("{HEAD}DefMemPerCPU=2G\nMaxMemPerNode=UNLIMITED\n")).config;
    assert_eq!((c.def_mem_per_cpu, c.max_mem_per_node), (Some(2048), None));
    let c = parse_ok(&format!("{HEAD}DefMemPerNode=0\n")).config;
    assert_eq!(c.def_mem_per_node, None);
}

// ---- Include ----

#[test]
fn include_is_resolved_against_the_config_directory() {
    let mut files: HashMap<PathBuf, String> = HashMap::new();
    files.insert(
        "/etc/slurm/nodes.conf".into(),
        "NodeName=n[1-2] CPUs=4\nInclude sub/parts.conf\n".into(),
    );
    files.insert(
        "/etc/slurm/sub/parts.conf".into(),
        "PartitionName=p Nodes=ALL\nBogus=1\n".into(),
    );
    files.insert("/abs/extra.conf".into(), "SlurmdPort=7777\n".into());
    let mut seen = Vec::new();
    let mut reader = |p: &Path| {
        seen.push(p.to_path_buf());
        files
            .get(p)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    };
    let loaded = parse_str(
        &format!("{HEAD}include nodes.conf\nInclude /abs/extra.conf\n"),
        Path::new("/etc/slurm/slurm.conf"),
        &mut reader,
    )
    .unwrap();
    assert_eq!(loaded.config.nodes.len(), 2);
    assert_eq!(loaded.config.partition("p").unwrap().nodes, ["n1", "n2"]);
    assert_eq!(loaded.config.slurmd_port, 7777);
    assert_eq!(
        loaded.warnings[0].to_string(),
        "/etc/slurm/sub/parts.conf:2: unknown key Bogus"
    );
    assert_eq!(
        seen,
        [
            PathBuf::from("/etc/slurm/nodes.conf"),
            PathBuf::from("/etc/slurm/sub/parts.conf"),
            PathBuf::from("/abs/extra.conf"),
        ]
    );
}

#[test]
fn errors_in_included_files_cite_that_file() {
    let mut reader = |_: &Path| Ok("NodeName=n1 CPUs=x\n".to_string());
    let err = parse_str(
        &format!("{HEAD}Include nodes.conf\n"),
        Path::new("/etc/slurm/slurm.conf"),
        &mut reader,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "/etc/slurm/nodes.conf:1: invalid value \"x\" for CPUs: expected a whole number"
    );
}

#[test]
fn missing_include_and_include_loops_are_errors() {
    let err = err_text(&format!("{HEAD}Include nodes.conf\n"));
    assert!(
        err.starts_with("/etc/slurm/slurm.conf:3: cannot read included file /etc/slurm/nodes.conf"),
        "{err}"
    );
    let mut reader = |_: &Path| Ok("Include self.conf\n".to_string());
    let err = parse_str(
        "Include self.conf\n",
        Path::new("/etc/slurm/slurm.conf"),
        &mut reader,
    )
    .unwrap_err();
    assert!(matches!(err, ConfError::IncludeDepth { .. }), "{err}");
}

#[test]
fn load_reads_includes_and_gres_conf_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slurm.conf"),
        "ClusterName=disk\nSlurmctldHost=ctl\nGresTypes=gpu\nInclude nodes.conf\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("nodes.conf"),
        "NodeName=g[1-2] Gres=gpu:2\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("gres.conf"),
        "Name=gpu File=/dev/nvidia[0-1]\nName=mps Count=100\n",
    )
    .unwrap();
    let loaded = load(&dir.path().join("slurm.conf")).unwrap();
    assert_eq!(loaded.config.nodes.len(), 2);
    assert_eq!(loaded.config.gres.len(), 2);
    assert_eq!(loaded.config.gres_for_node("g2").len(), 2);
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(
        loaded.warnings[0].message,
        "GRES mps is not listed in GresTypes, ignored"
    );

    let missing = load(&dir.path().join("nope.conf")).unwrap_err();
    assert!(matches!(missing, ConfError::Io { .. }));
    assert!(missing.to_string().starts_with("cannot read "));
}

// ---- gres.conf ----

#[test]
fn gres_conf_lines_counts_and_autodetect() {
    let (gres, warnings) = parse_gres_conf(
        "AutoDetect=nvml\nNodeName=n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15\nName=gpu File=/dev/nvidia0,/dev/nvidia1 AutoDetect=off\nName=mps Count=4K\nname=shard count=8 Bogus=1\n",
        Path::new("/etc/slurm/gres.conf"),
    )
    .unwrap();
    assert_eq!(gres.len(), 4);
    assert_eq!(gres[0].node_names, ["n1", "n2"]);
    assert_eq!(gres[0].files.len(), 4);
    assert_eq!(gres[0].count, 4);
    assert_eq!(gres[0].cores.as_deref(), Some("0-15"));
    assert_eq!(gres[0].autodetect.as_deref(), Some("nvml"));
    assert!(gres[1].node_names.is_empty());
    assert_eq!(gres[1].count, 2);
    assert_eq!(gres[1].autodetect.as_deref(), Some("off"));
    assert_eq!(gres[2].count, 4096);
    assert_eq!(gres[3].count, 8);
    assert_eq!(gres[3].type_, None);
    assert_eq!(
        warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["/etc/slurm/gres.conf:5: unknown key Bogus"]
    );
}

/// Issue 37: `File=` ranges, `Type=`, `Cores=`, `Links=` and `Flags=`
/// are kept per line, shard and mps lines count as written.
#[test]
fn issue_37_gres_conf_keeps_type_cores_links_and_flags() {
    let (gres, warnings) = parse_gres_conf(
        "Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-1,4 Links=-1,2 Flags=nvidia_gpu_env,AMD_GPU_ENV\n\
         Name=gpu Type=fake File=/tmp/x/nvidia[2-3] Cores=[2-3] Flags=CountOnly\n\
         Name=shard Count=8 File=/dev/nvidia0\n\
         Name=mps Count=200\n",
        Path::new("gres.conf"),
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(gres[0].files, ["/dev/nvidia0", "/dev/nvidia1"]);
    assert_eq!(gres[0].type_.as_deref(), Some("a100"));
    assert_eq!(gres[0].links.as_deref(), Some("-1,2"));
    assert_eq!(gres[0].flags, ["nvidia_gpu_env", "amd_gpu_env"]);
    assert_eq!(
        gres[0].cores.as_deref().and_then(crate::parse_id_list),
        Some(vec![0, 1, 4])
    );
    assert_eq!(
        gres[1].cores.as_deref().and_then(crate::parse_id_list),
        Some(vec![2, 3])
    );
    assert_eq!(gres[1].flags, ["countonly"]);
    assert_eq!(gres[2].count, 8);
    assert_eq!(gres[3].count, 200);
}

#[test]
fn gres_conf_bad_values_are_errors() {
    let cases = [
        (
            "Name=gpu Count=lots",
            "gres.conf:1: invalid value \"lots\" for Count",
        ),
        (
            "Name=gpu File=/dev/nvidia[0-",
            "gres.conf:1: invalid value \"/dev/nvidia[0-\" for File: bad hostlist",
        ),
        (
            "Type=a100",
            "gres.conf:1: invalid value \"\" for Name: every gres.conf line needs Name=",
        ),
        (
            "AutoDetect=magic",
            "gres.conf:1: invalid value \"magic\" for AutoDetect",
        ),
        ("Name=g:pu", "gres.conf:1: invalid value \"g:pu\" for Name"),
        (
            "Name=gpu Flags=sparkly",
            "gres.conf:1: invalid value \"sparkly\" for Flags: unknown flag sparkly",
        ),
        (
            "Name=gpu Cores=3-1",
            "gres.conf:1: invalid value \"3-1\" for Cores",
        ),
        (
            "Name=gpu Links=-1,x",
            "gres.conf:1: invalid value \"-1,x\" for Links",
        ),
    ];
    for (text, want) in cases {
        let err = parse_gres_conf(text, Path::new("gres.conf"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{text}: got {err}");
    }
}

// ---- lexer details ----

#[test]
fn lexer_joins_continuations_and_keeps_first_line_numbers() {
    let lines = lex::logical_lines("a=1 \\\nb=2\n\n# c\nd=3 \\\n");
    assert_eq!(
        lines,
        [
            lex::LogicalLine {
                line: 1,
                text: "a=1 b=2".into()
            },
            lex::LogicalLine {
                line: 5,
                text: "d=3".into()
            },
        ]
    );
}

#[test]
fn lexer_handles_empty_values_and_crlf() {
    let c = parse_ok(&format!(
        "{HEAD}PowerPlugin= SlurmdPort=7002\r\nPriorityFlags=\r\n"
    ))
    .config;
    assert_eq!(c.other["powerplugin"].1, "");
    assert_eq!(c.other["priorityflags"].1, "");
    assert_eq!(c.slurmd_port, 7002);
}

#[test]
fn scheduler_parameters_are_read_and_checked() {
    let c = parse_ok(&format!(
        "{HEAD}SchedulerType=sched/builtin\nSchedulerParameters=bf_window=60,bf_resolution=30,bf_max_job_test=1000,bf_max_job_user=5,bf_continue,bf_interval=10,default_queue_depth=50,sched_interval=20,max_rpc_cnt=150,bf_age_reserve=86400,bf_slowdown_reserve=10,bf_slowdown_reserve_width=40,bf_order=Priority\n"
    ))
    .config;
    assert_eq!(c.scheduler_type, "sched/builtin");
    let p = &c.scheduler_params;
    assert_eq!(p.bf_window, Some(60));
    assert_eq!(p.bf_resolution, Some(30));
    assert_eq!(p.bf_max_job_test, Some(1000));
    assert_eq!(p.bf_max_job_user, Some(5));
    assert!(p.bf_continue);
    assert_eq!(p.bf_interval, Some(10));
    assert_eq!(p.default_queue_depth, Some(50));
    assert_eq!(p.sched_interval, Some(20));
    assert_eq!(p.bf_age_reserve, Some(86400));
    assert_eq!(p.bf_slowdown_reserve, Some(10));
    assert_eq!(p.bf_slowdown_reserve_width, Some(40));
    assert_eq!(p.bf_order_shortest, Some(false));
    let c = parse_ok(&format!("{HEAD}SchedulerParameters=bf_order=shortest\n")).config;
    assert_eq!(c.scheduler_params.bf_order_shortest, Some(true));
    assert_eq!(
        parse_ok(HEAD).config.scheduler_params.bf_order_shortest,
        None
    );
    assert_eq!(parse_ok(HEAD).config.scheduler_type, "sched/backfill");
    let c = parse_ok(&format!("{HEAD}SchedulerParameters=bf_plan=Pool\n")).config;
    assert_eq!(c.scheduler_params.bf_plan_pool, Some(true));
    let c = parse_ok(&format!("{HEAD}SchedulerParameters=bf_plan=nodes\n")).config;
    assert_eq!(c.scheduler_params.bf_plan_pool, Some(false));
    assert_eq!(parse_ok(HEAD).config.scheduler_params.bf_plan_pool, None);
    let c = parse_ok(&format!("{HEAD}SchedulerParameters=bf_plan=auto\n")).config;
    assert_eq!(c.scheduler_params.bf_plan_pool, None);
}

#[test]
fn scheduler_parameters_out_of_range_are_refused_with_file_and_line() {
    assert_eq!(
        err_text(&format!("{HEAD}SchedulerParameters=bf_window=0\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"bf_window=0\" for SchedulerParameters: bf_window must be a number from 1 to 43200"
    );
    assert!(
        err_text(&format!("{HEAD}SchedulerParameters=bf_interval=x\n"))
            .contains("bf_interval must be a number from 1 to 10800")
    );
    assert!(
        err_text(&format!("{HEAD}SchedulerParameters=bf_resolution\n"))
            .contains("bf_resolution must be a number from 1 to 3600")
    );
    assert_eq!(
        err_text(&format!("{HEAD}SchedulerParameters=bf_order=longest\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"bf_order=longest\" for SchedulerParameters: bf_order must be shortest or priority"
    );
    assert_eq!(
        err_text(&format!("{HEAD}SchedulerParameters=bf_plan=racks\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"bf_plan=racks\" for SchedulerParameters: bf_plan must be auto, nodes or pool"
    );
    assert!(err_text(&format!("{HEAD}SchedulerType=sched/fancy\n"))
        .contains(":3: invalid value \"sched/fancy\" for SchedulerType"));
}

#[test]
fn priority_settings_are_typed_and_bad_ones_cite_the_line() {
    let c = parse_ok(&format!(
        "{HEAD}PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityWeightFairshare=10000\n\
         PriorityWeightTRES=CPU=1000,GRES/gpu=3000\nPriorityDecayHalfLife=7-0\nPriorityMaxAge=14-0\n\
         PriorityCalcPeriod=2\nPriorityFavorSmall=YES\nPriorityFlags=NO_FAIR_TREE,small_relative_to_time\n"
    ))
    .config
    .priority;
    assert!(c.multifactor && c.favor_small);
    assert_eq!((c.weight_age, c.weight_fairshare), (1000, 10_000));
    assert_eq!(
        c.weight_tres,
        vec![("CPU".into(), 1000), ("GRES/gpu".into(), 3000)]
    );
    assert_eq!(
        (c.decay_half_life, c.max_age, c.calc_period),
        (7 * 86_400, 14 * 86_400, 120)
    );
    assert!(c.has_flag("NO_FAIR_TREE") && c.has_flag("SMALL_RELATIVE_TO_TIME"));
    let d = parse_ok(HEAD).config.priority;
    assert!(!d.multifactor);
    assert_eq!((d.max_age, d.calc_period), (7 * 86_400, 300));
    for bad in [
        "PriorityWeightAge=-5",
        "PriorityWeightQOS=lots",
        "PriorityType=priority/fancy",
        "PriorityDecayHalfLife=soon",
        "PriorityCalcPeriod=0",
        "PriorityFavorSmall=maybe",
        "PriorityUsageResetPeriod=HOURLY",
        "PriorityWeightTRES=CPU",
    ] {
        let e = err_text(&format!("{HEAD}{bad}\n"));
        assert!(
            e.contains("slurm.conf:") && e.contains(bad.split('=').next().unwrap()),
            "{bad}: {e}"
        );
    }
}

#[test]
fn preemption_keys_are_checked_with_file_and_line() {
    let c = parse_ok(&format!(
        "{HEAD}PreemptType=preempt/qos\nPreemptMode=SUSPEND,GANG\nPreemptExemptTime=00:05:00\n"
    ))
    .config;
    assert_eq!(c.other["preempttype"].1, "preempt/qos");
    assert_eq!(c.other["preemptmode"].1, "SUSPEND,GANG");
    assert_eq!(
        err_text(&format!("{HEAD}PreemptType=preempt/fancy\n")),
        "/etc/slurm/slurm.conf:3: invalid value \"preempt/fancy\" for PreemptType: expected preempt/none, preempt/qos or preempt/partition_prio"
    );
    assert!(err_text(&format!("{HEAD}PreemptMode=REQUEUE,SOMETIMES\n"))
        .starts_with("/etc/slurm/slurm.conf:3: invalid value"));
    assert!(err_text(&format!("{HEAD}PreemptExemptTime=soon\n"))
        .starts_with("/etc/slurm/slurm.conf:3: invalid value"));
}

#[test]
fn one_value_of_the_main_file_without_a_parse() {
    let conf = "ClusterName=c # AuthType=auth/none\nauthtype=auth/muster AuthInfo=key=/k\n";
    assert_eq!(
        main_file_value(conf, "AuthType"),
        Some(Some("auth/muster".to_string()))
    );
    assert_eq!(main_file_value("SlurmctldHost=h\n", "AuthType"), Some(None));
    assert_eq!(
        main_file_value(
            "AuthType=auth/muster\nInclude /etc/slurm/auth.conf\n",
            "AuthType"
        ),
        None
    );
}

// ---- cgroup.conf ----

#[test]
fn cgroup_conf_defaults_are_slurms() {
    let (c, warnings) = parse_cgroup_conf("", Path::new("cgroup.conf")).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(c, CgroupConf::default());
    assert_eq!(c.plugin, CgroupPlugin::Autodetect);
    assert_eq!(c.mountpoint, "/sys/fs/cgroup");
    assert!(!c.ignore_systemd && !c.constrain_cores && !c.constrain_devices);
    assert!(!c.constrain_ram_space && !c.constrain_swap_space);
    assert_eq!(c.allowed_ram_space, 100.0);
    assert_eq!(c.allowed_swap_space, 0.0);
    assert_eq!(c.min_ram_space, 30);
    assert_eq!(c.max_ram_percent, 100.0);
}

#[test]
fn cgroup_conf_keys_are_typed_and_unknown_ones_warned() {
    let text = "CgroupPlugin=cgroup/v1\n\
                CgroupMountpoint=/tmp/cg/\n\
                IgnoreSystemd=yes\n\
                ConstrainCores=yes ConstrainRAMSpace=yes\n\
                AllowedRAMSpace=95.5 ConstrainSwapSpace=yes AllowedSwapSpace=10\n\
                MinRAMSpace=64 MaxRAMPercent=90% ConstrainDevices=yes\n\
                CgroupAutomount=yes\n\
                Bogus=1\n";
    let (c, warnings) = parse_cgroup_conf(text, Path::new("/etc/slurm/cgroup.conf")).unwrap();
    assert_eq!(c.plugin, CgroupPlugin::V1);
    assert_eq!(c.plugin.as_slurm_str(), "cgroup/v1");
    assert_eq!(c.mountpoint, "/tmp/cg");
    assert!(c.ignore_systemd && c.constrain_cores && c.constrain_ram_space);
    assert!(c.constrain_swap_space && c.constrain_devices);
    assert_eq!(c.allowed_ram_space, 95.5);
    assert_eq!(c.allowed_swap_space, 10.0);
    assert_eq!(c.min_ram_space, 64);
    assert_eq!(c.max_ram_percent, 90.0);
    let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings, ["/etc/slurm/cgroup.conf:8: unknown key Bogus"]);
}

#[test]
fn cgroup_conf_bad_values_are_errors() {
    for (text, want) in [
        (
            "CgroupPlugin=cgroup/v3",
            "cgroup.conf:1: invalid value \"cgroup/v3\" for CgroupPlugin",
        ),
        (
            "ConstrainCores=maybe",
            "cgroup.conf:1: invalid value \"maybe\" for ConstrainCores: expected yes or no",
        ),
        (
            "AllowedRAMSpace=120",
            "cgroup.conf:1: invalid value \"120\" for AllowedRAMSpace",
        ),
        (
            "CgroupMountpoint=sys/fs/cgroup",
            "cgroup.conf:1: invalid value \"sys/fs/cgroup\" for CgroupMountpoint",
        ),
    ] {
        let err = parse_cgroup_conf(text, Path::new("cgroup.conf"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{text}: {err}");
    }
}

#[test]
fn cgroup_conf_memory_keys_become_memory_constraints() {
    let parse = |text: &str| {
        parse_cgroup_conf(text, std::path::Path::new("cgroup.conf"))
            .unwrap()
            .0
            .memory_constraints()
    };
    let c = parse(
        "# limits\nConstrainRAMSpace=yes\nallowedramspace=99.5\nMinRAMSpace=50\n\
         MaxRAMPercent=90 # of RealMemory\nConstrainCores=yes\n",
    )
    .expect("RAM is constrained");
    assert!(c.constrain_ram && !c.constrain_swap);
    assert_eq!(c.allowed_ram_percent, 99.5);
    assert_eq!(c.min_ram_mb, 50);
    assert_eq!(c.max_ram_percent, 90.0);
    assert_eq!(c.allowed_swap_percent, 0.0);
    let c = parse("ConstrainSwapSpace=yes\nAllowedSwapSpace=20\nMaxSwapPercent=5\n")
        .expect("swap is constrained");
    assert!(!c.constrain_ram && c.constrain_swap);
    assert_eq!((c.allowed_swap_percent, c.max_swap_percent), (20.0, 5.0));
    // Nothing constrained, or cgroups disabled: no limits.
    assert_eq!(parse("ConstrainCores=yes\n"), None);
    assert_eq!(
        parse("CgroupPlugin=disabled\nConstrainRAMSpace=yes\n"),
        None
    );
}

#[test]
fn load_reads_cgroup_conf_beside_slurm_conf_and_confinement_follows_proctrack() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    std::fs::write(&conf, "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n1\n").unwrap();
    let loaded = load(&conf).unwrap();
    assert_eq!(loaded.config.cgroup, None);
    assert!(loaded.config.confinement().is_none());

    std::fs::write(
        dir.path().join("cgroup.conf"),
        "CgroupPlugin=cgroup/v2\nNope=1\n",
    )
    .unwrap();
    let loaded = load(&conf).unwrap();
    assert_eq!(
        loaded.config.cgroup.as_ref().map(|c| c.plugin),
        Some(CgroupPlugin::V2)
    );
    // ProctrackType defaults to proctrack/cgroup, as in Slurm.
    assert!(loaded.config.confinement().is_some());
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.to_string().ends_with("cgroup.conf:2: unknown key Nope")),
        "{:?}",
        loaded.warnings
    );

    std::fs::write(
        &conf,
        "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n1\nProctrackType=proctrack/linuxproc\n",
    )
    .unwrap();
    assert!(load(&conf).unwrap().config.confinement().is_none());

    std::fs::write(dir.path().join("cgroup.conf"), "CgroupPlugin=disabled\n").unwrap();
    std::fs::write(&conf, "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n1\n").unwrap();
    assert!(load(&conf).unwrap().config.confinement().is_none());
}

#[test]
fn licenses_are_checked_at_their_line() {
    let ok = parse_ok(&format!("{HEAD}Licenses=matlab:10,ansys\n"));
    assert_eq!(ok.config.other["licenses"].1, "matlab:10,ansys");
    let err = err_text(&format!("{HEAD}Licenses=matlab:x\n"));
    assert!(
        err.contains("invalid value \"matlab:x\" for Licenses"),
        "{err}"
    );
}

#[test]
fn partition_lln_maxcpuspernode_and_gracetime_are_read_and_checked() {
    let c = parse_ok(&format!(
        "{HEAD}NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 LLN=yes MaxCPUsPerNode=2 GraceTime=30\n\
         PartitionName=q Nodes=n1 MaxCPUsPerNode=UNLIMITED\n"
    ))
    .config;
    let p = &c.partitions[0].other;
    assert_eq!(p["lln"].1, "YES");
    assert_eq!(p["maxcpuspernode"].1, "2");
    assert_eq!(p["gracetime"].1, "30");
    assert_eq!(c.partitions[1].other["maxcpuspernode"].1, "UNLIMITED");
    for (bad, why) in [
        ("LLN=maybe", "expected YES or NO"),
        ("MaxCPUsPerNode=two", "expected a whole number"),
        ("GraceTime=-5", "expected a whole number"),
        ("QOS=part_qos", "a partition QOS"),
        ("Alternate=other", "alternate partition"),
    ] {
        let e = err_text(&format!(
            "{HEAD}NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 {bad}\n"
        ));
        assert!(e.contains(why), "{bad}: {e}");
        assert!(e.contains("slurm.conf:"), "{bad}: {e}");
    }
}
