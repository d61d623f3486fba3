use super::*;

fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn diff_entries_ignores_runtime_facts_and_finds_changes() {
    let running = entries(&[
        ("BOOT_TIME", "2026-12-06T10:00:00"),
        ("KillWait", "5 sec"),
        ("MinJobAge", "300 sec"),
        ("NEXT_JOB_ID", "17"),
        ("OldKey", "x"),
    ]);
    let file = entries(&[
        ("BOOT_TIME", "(null)"),
        ("KillWait", "30 sec"),
        ("MinJobAge", "300 sec"),
        ("NEXT_JOB_ID", "1"),
        ("NewKey", "y"),
    ]);
    let changes = diff_entries(&running, &file);
    assert_eq!(
        changes,
        vec![
            Change {
                key: "KillWait".into(),
                running: Some("5 sec".into()),
                file: Some("30 sec".into()),
            },
            Change {
                key: "OldKey".into(),
                running: Some("x".into()),
                file: None,
            },
            Change {
                key: "NewKey".into(),
                running: None,
                file: Some("y".into()),
            },
        ]
    );
    assert!(diff_entries(&running, &running).is_empty());
}

#[test]
fn diff_names_compares_sets() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        diff_names("NodeName", &s(&["n1", "n2"]), &s(&["n2", "n1"])),
        None
    );
    let c = diff_names("NodeName", &s(&["n1", "n2"]), &s(&["n1", "n2", "n3"])).unwrap();
    assert_eq!(c.running.as_deref(), Some("n[1-2]"));
    assert_eq!(c.file.as_deref(), Some("n[1-3]"));
}

#[test]
fn each_change_says_whether_reconfigure_applies_it() {
    let change = |key: &str, running: &str, file: &str| Change {
        key: key.into(),
        running: Some(running.into()),
        file: Some(file.into()),
    };
    let changes = vec![
        change("KillWait", "5 sec", "30 sec"),
        change("MessageTimeout", "10 sec", "20 sec"),
        change("PartitionName", "debug", "debug,gpu"),
        change("NodeName (added)", "n[1-2]", "n[1-3]"),
        change("NodeName", "n[1-2]", "n1"),
    ];
    let text = render_changes(&changes);
    assert_eq!(
        text,
        "diff: KillWait: running 5 sec -> file 30 sec: applied by `scontrol reconfigure`\n\
         diff: MessageTimeout: running 10 sec -> file 20 sec: needs a restart\n\
         diff: PartitionName: running debug -> file debug,gpu: applied by `scontrol reconfigure`\n\
         diff: NodeName (added): running n[1-2] -> file n[1-3]: applied by `scontrol reconfigure`\n\
         diff: NodeName: running n[1-2] -> file n1: needs a restart\n\
         diff: 5 changes: 3 applied by `scontrol reconfigure`, 2 need a restart of the controller and the node daemons\n"
    );
    assert_eq!(
        render_changes(&[]),
        "diff: the running controller uses this configuration\n"
    );
}

#[test]
fn a_missing_file_is_an_error() {
    let mut read = |_: &Path| -> std::io::Result<String> {
        Err(std::io::Error::from(std::io::ErrorKind::NotFound))
    };
    let report = check_files(Path::new("/nowhere/slurm.conf"), &mut read);
    assert_eq!(report.errors(), 1);
    assert_eq!(
        report.render_with(""),
        "slurm.conf: error: cannot read: entity not found\nchecked nothing: 1 error, 0 warnings\n"
    );
}

/// The cases under tests/check-config/: each a directory with a
/// slurm.conf (and maybe gres.conf, cgroup.conf, topology.conf, included
/// files) and `expected.txt`, what `muster check-config` prints for it.
/// `UPDATE_GOLDEN=1` rewrites the expected files.
#[test]
fn golden_check_config_reports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check-config");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "{cases:?}");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failed = Vec::new();
    for case in cases {
        let mut read = |p: &Path| std::fs::read_to_string(p);
        let report = check_files(&case.join("slurm.conf"), &mut read);
        let got = report.render_with("");
        let expected_path = case.join("expected.txt");
        if update {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            failed.push(format!(
                "{}:\n--- expected\n{expected}--- got\n{got}",
                case.display()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

fn topo(text: &str) -> conf::TopologyConf {
    conf::parse_topology_conf(text, Path::new("/etc/slurm/topology.conf"))
        .unwrap()
        .0
}

fn said(r: proto::FabricReport) -> proto::FabricReport {
    proto::FabricReport {
        source: "MusterTopologyProbe".into(),
        ..r
    }
}

fn names(sw: &[&str]) -> proto::FabricReport {
    said(proto::FabricReport {
        switches: sw.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

fn ib(prefix: &str, sm: &str) -> proto::FabricReport {
    proto::FabricReport {
        ib_ports: vec![proto::IbPort {
            device: "mlx5_0".into(),
            port: 1,
            state: "4: ACTIVE".into(),
            link_layer: "InfiniBand".into(),
            subnet_prefix: prefix.into(),
            sm_lid: sm.into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn fabric_reports_against_topology_conf() {
    let t = topo(
        "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\n\
         SwitchName=top Switches=s[0-1]\nSwitchName=other Nodes=n5\n",
    );
    let reports = vec![
        ("n1".to_string(), names(&["s0", "top"])),
        ("n2".to_string(), names(&["s1"])),
        ("n3".to_string(), names(&["leaf9"])),
        ("n4".to_string(), names(&["s1", "other"])),
        (
            "n5".to_string(),
            said(proto::FabricReport {
                error: "MusterTopologyProbe failed: /x exited with exit status: 1".into(),
                ..Default::default()
            }),
        ),
        ("n7".to_string(), names(&["s0"])),
    ];
    let all = ["n1", "n2", "n3", "n4", "n5", "n6", "n7"];
    let (found, summary) = fabric::compare(
        &t,
        Path::new("/etc/slurm/topology.conf"),
        &all,
        true,
        &reports,
    );
    let lines: Vec<String> = found
        .iter()
        .map(|f| f.render(Path::new("/etc/slurm")))
        .collect();
    assert_eq!(
        lines,
        vec![
            "topology.conf:1: warning: node n2 reports leaf switch s1 (MusterTopologyProbe), but topology.conf puts it under s0",
            "topology.conf:2: warning: node n3 reports leaf switch leaf9 (MusterTopologyProbe, a name topology.conf does not have), but topology.conf puts it under s1",
            "topology.conf:2: warning: node n4 reports switch other above s1 (MusterTopologyProbe), but topology.conf has top there",
            "topology.conf: warning: node n5: MusterTopologyProbe failed: /x exited with exit status: 1",
            "topology.conf: warning: node n7 reports leaf switch s0 (MusterTopologyProbe), but topology.conf puts it under no switch",
            "topology.conf: warning: node n6 reported no switch though MusterTopologyProbe is set (not registered since the controller started, or an older daemon)",
        ]
    );
    assert_eq!(
        summary,
        "fabric: 6 nodes (n[1-5,7]) reported, 5 naming a leaf switch, 0 InfiniBand ports, 0 LLDP neighbours\n"
    );
}

#[test]
fn fabric_infiniband_subnets_under_one_switch() {
    let t = topo(
        "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n",
    );
    let reports = vec![
        ("n1".to_string(), ib("fe80:0000:0000:0000", "0x1")),
        ("n2".to_string(), ib("fe80:0000:0000:0000", "0x1")),
        ("n3".to_string(), ib("fe80:0000:0000:0000", "0x7")),
    ];
    let (found, summary) = fabric::compare(&t, Path::new("topology.conf"), &[], false, &reports);
    let lines: Vec<String> = found.iter().map(|f| f.render(Path::new(""))).collect();
    assert_eq!(
        lines,
        vec![
            "topology.conf:3: warning: top holds nodes on different InfiniBand subnets: \
             n[1-2] on fe80:0000:0000:0000 SM LID 0x1; n3 on fe80:0000:0000:0000 SM LID 0x7"
        ]
    );
    assert!(summary.contains("3 InfiniBand ports"), "{summary}");
    // Blocks: the block is the leaf.
    let b = topo("BlockName=b0 Nodes=n[1-2]\nBlockName=b1 Nodes=n[3-4]\n");
    let (found, _) = fabric::compare(
        &b,
        Path::new("topology.conf"),
        &[],
        false,
        &[("n1".to_string(), names(&["b1"]))],
    );
    assert_eq!(
        found[0].message,
        "node n1 reports block b1 (MusterTopologyProbe), but topology.conf puts it under b0"
    );
}
