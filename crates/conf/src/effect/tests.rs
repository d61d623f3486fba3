use super::*;

#[test]
fn keys_that_act_or_match_muster_are_not_inert() {
    assert!(!global_key_is_inert("SchedulerParameters", "bf_window=60"));
    assert!(!global_key_is_inert("proctracktype", "proctrack/cgroup"));
    assert!(!global_key_is_inert("SelectType", "select/cons_tres"));
    assert!(global_key_is_inert("SelectType", "select/linear"));
    assert!(global_key_is_inert("ResvProlog", "/etc/prolog"));
    assert!(!global_key_is_inert("Prolog", "/etc/prolog"));
    // Configless mode acts (ctld); any other controller flag is warned.
    assert!(!global_key_is_inert(
        "SlurmctldParameters",
        "enable_configless"
    ));
    assert!(global_key_is_inert(
        "SlurmctldParameters",
        "enable_configless,idle_on_node_suspend"
    ));
    assert!(global_key_is_inert("SlurmctldParameters", "cloud_dns"));
    // Typed keys, unknown and obsolete keys are not this module's.
    assert!(!global_key_is_inert("KillWait", "30"));
    assert!(!global_key_is_inert("Frobnicate", "1"));
    assert!(!global_key_is_inert("FastSchedule", "1"));
}

#[test]
fn inert_keys_follow_includes_with_file_and_line() {
    let mut read = |p: &Path| -> std::io::Result<String> {
        assert_eq!(p, Path::new("/etc/slurm/extra.conf"));
        Ok("\nResvEpilog=/bin/true\n".to_string())
    };
    let w = inert_keys(
        "ClusterName=c\nInclude extra.conf\nNodeName=n1 CPUs=2 Comment=x\nPartitionName=p Nodes=n1 PreemptMode=off Hidden=yes\n",
        Path::new("/etc/slurm/slurm.conf"),
        &mut read,
    );
    let lines: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        lines,
        vec![
            "/etc/slurm/extra.conf:2: ResvEpilog=/bin/true does nothing here",
            "/etc/slurm/slurm.conf:3: Comment (node line) does nothing here",
            "/etc/slurm/slurm.conf:4: Hidden (partition line) does nothing here",
        ]
    );
}

#[test]
fn cgroup_keys_read_but_not_applied() {
    let w = inert_cgroup_keys(
        "ConstrainCores=yes\nConstrainRAMSpace=yes\nSignalChildrenProcesses=no\nCgroupAutomount=yes\n",
        Path::new("cgroup.conf"),
    );
    let lines: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        lines,
        vec!["cgroup.conf:4: CgroupAutomount does nothing here",]
    );
}

#[test]
fn reconfigure_applies_the_scheduler_and_priority_keys_only() {
    assert_eq!(reload_for("KillWait"), Reload::Reconfigure);
    assert_eq!(reload_for("SchedulerParameters"), Reload::Reconfigure);
    assert_eq!(reload_for("priorityweightage"), Reload::Reconfigure);
    assert_eq!(reload_for("SlurmctldPort"), Reload::Restart);
    assert_eq!(reload_for("AuthType"), Reload::Restart);
    assert_eq!(reload_for("StateSaveLocation"), Reload::Restart);
    // Every key it applies is one `scontrol show config` shows.
    // (DefMemPerCPU shows where set, DefMemPerNode where not.)
    let mut shown: Vec<String> = Vec::new();
    for extra in ["", "DefMemPerCPU=100\n"] {
        let text = format!(
            "ClusterName=c\nSlurmctldHost=h\n{extra}NodeName=n CPUs=1\nPartitionName=p Nodes=n\n"
        );
        let cfg = crate::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("none"))
        })
        .unwrap()
        .config;
        shown.extend(cfg.show_config_entries().into_iter().map(|(k, _)| k));
    }
    let missing: Vec<&&str> = APPLIED_BY_RECONFIGURE
        .iter()
        // PreemptParameters: Slurm 22.05's `show config` lists it not.
        .filter(|key| **key != "PreemptParameters" && !shown.iter().any(|k| k == **key))
        .collect();
    assert!(missing.is_empty(), "not shown: {missing:?}");
}

#[test]
fn error_parts_split_the_location_off() {
    let e = ConfError::Syntax {
        file: "/a/slurm.conf".into(),
        line: 3,
        reason: "unterminated quote".into(),
    };
    let (file, line, message) = error_parts(&e);
    assert_eq!(file, Some(Path::new("/a/slurm.conf")));
    assert_eq!(line, Some(3));
    assert_eq!(message, "unterminated quote");
}

#[test]
fn key_table_covers_every_known_key_once() {
    let rows = key_table();
    for key in crate::keys::MODELLED_GLOBAL {
        assert!(
            rows.iter().any(|r| r.key.eq_ignore_ascii_case(key)),
            "{key} has no row"
        );
    }
    assert_eq!(MODELLED_SPELLING.len(), crate::keys::MODELLED_GLOBAL.len());
    for key in crate::keys::OTHER_GLOBAL
        .iter()
        .chain(crate::keys::OBSOLETE_GLOBAL)
    {
        let n = rows
            .iter()
            .filter(|r| r.section == "slurm.conf" && r.key == *key)
            .count();
        assert_eq!(n, 1, "{key}");
    }
    let prolog = rows.iter().find(|r| r.key == "Prolog").unwrap();
    assert_eq!(prolog.disposition, KeyDisposition::Acting);
    let ctld_prolog = rows.iter().find(|r| r.key == "PrologSlurmctld").unwrap();
    assert_eq!(ctld_prolog.disposition, KeyDisposition::Acting);
    let kill_wait = rows.iter().find(|r| r.key == "KillWait").unwrap();
    assert_eq!(kill_wait.disposition, KeyDisposition::Acting);
    let select = rows.iter().find(|r| r.key == "SelectType").unwrap();
    assert!(matches!(select.disposition, KeyDisposition::OnlyAs(_)));
}

#[test]
fn issue_39_unsupported_scripts_and_prolog_flags_are_refused() {
    assert!(refusal("TaskProlog", "/etc/tp").is_none());
    assert!(refusal("SrunProlog", "/etc/sp").is_none());
    // Run by the controller since issue 39's second round.
    assert!(refusal("EpilogSlurmctld", "/etc/e").is_none());
    assert!(refusal("PrologSlurmctld", "/etc/p").is_none());
    assert!(refusal("PrologFlags", "Alloc,Contain,Serial").is_none());
    assert!(refusal("PrologFlags", "Contain,RunInJob").is_none());
    let why = refusal("PrologFlags", "Contain,X11").unwrap();
    assert!(why.contains("X11"), "{why}");
    assert!(refusal("Prolog", "/etc/prolog").is_none());
}

#[test]
fn reconfig_flags_keep_the_running_partitions_or_their_state() {
    let cfg = |flags: &str, parts: &str| {
        let text = format!("ClusterName=c\nSlurmctldHost=h\n{flags}NodeName=n CPUs=1\n{parts}");
        crate::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("none"))
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .config
    };
    // Running: p changed by scontrol update (DOWN, MaxNodes=1), q made by
    // scontrol create. The files: p as written, r added.
    let running = cfg(
        "",
        "PartitionName=p Nodes=n State=DOWN MaxNodes=1\nPartitionName=q Nodes=n\n",
    );
    let files = "PartitionName=p Nodes=n MaxTime=60\nPartitionName=r Nodes=n\n";
    let names = |c: &crate::Config| {
        c.partitions
            .iter()
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    // No flags: the files' partitions only.
    let r = reconfigured(&running, &cfg("", files), &[]);
    assert_eq!(names(&r.config), ["p", "r"]);
    assert_eq!(r.config.partitions[0].state, "UP");
    // KeepPartState: the files' p with its running State; q kept.
    let r = reconfigured(&running, &cfg("ReconfigFlags=KeepPartState\n", files), &[]);
    assert_eq!(names(&r.config), ["p", "r", "q"]);
    let p = &r.config.partitions[0];
    assert_eq!((p.state.as_str(), p.max_nodes), ("DOWN", None));
    assert_eq!(p.max_time, model::TimeLimit::Minutes(60));
    // KeepPartInfo: the running p as it is.
    let r = reconfigured(
        &running,
        &cfg("ReconfigFlags=KeepPartState,KeepPartInfo\n", files),
        &[],
    );
    assert_eq!(names(&r.config), ["p", "r", "q"]);
    let p = &r.config.partitions[0];
    assert_eq!((p.state.as_str(), p.max_nodes), ("DOWN", Some(1)));
    assert_eq!(p.max_time, model::TimeLimit::Unlimited);
    // An unknown flag is refused at its line.
    let e = crate::parse_str(
        "ClusterName=c\nSlurmctldHost=h\nReconfigFlags=KeepPartInfo,KeepAll\n",
        std::path::Path::new("/x/slurm.conf"),
        &mut |_| Err(std::io::Error::other("none")),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("/x/slurm.conf:3") && e.contains("KeepAll"),
        "{e}"
    );
}

#[test]
fn private_data_acts_and_its_words_that_name_nothing_are_warned() {
    assert!(!global_key_is_inert("PrivateData", "jobs,usage"));
    let w = inert_keys(
        "ClusterName=c\nPrivateData=jobs,secrets\n",
        Path::new("/etc/slurm/slurm.conf"),
        &mut |_| Err(std::io::Error::other("no includes")),
    );
    let lines: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("/etc/slurm/slurm.conf:2: PrivateData: \"secrets\" names nothing"),
        "{lines:?}"
    );
    assert_eq!(reload_for("PrivateData"), Reload::Reconfigure);
}
