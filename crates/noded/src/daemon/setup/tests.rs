use super::*;

#[test]
fn config_overrides_is_one_word_of_the_list() {
    assert!(has_config_overrides(Some("config_overrides")));
    assert!(has_config_overrides(Some(
        "shutdown_on_reboot, Config_Overrides"
    )));
    assert!(!has_config_overrides(Some("shutdown_on_reboot")));
    assert!(!has_config_overrides(None));
}

#[test]
fn host_port_brackets_ipv6() {
    assert_eq!(host_port("127.0.0.1", 6818), "127.0.0.1:6818");
    assert_eq!(host_port("ctl", 6817), "ctl:6817");
    assert_eq!(host_port("::1", 6817), "[::1]:6817");
}

#[test]
fn gres_lines_are_summed_by_name_and_type() {
    let line = |name: &str, ty: Option<&str>, count: u64| conf::GresConf {
        node_names: vec![],
        name: name.into(),
        type_: ty.map(str::to_string),
        files: vec![],
        count,
        cores: None,
        links: None,
        flags: vec![],
        autodetect: None,
        line: 1,
    };
    let a = line("gpu", Some("a100"), 2);
    let b = line("gpu", Some("a100"), 2);
    let c = line("gpu", Some("v100"), 1);
    let inv = gres_inventory(&[&a, &b, &c]);
    assert_eq!(
        inv,
        vec![
            Gres {
                name: "gpu".into(),
                type_: Some("a100".into()),
                count: 4
            },
            Gres {
                name: "gpu".into(),
                type_: Some("v100".into()),
                count: 1
            },
        ]
    );
}

/// slurm.conf `TaskPluginParam`: the binding of a step that asks none,
/// and the words the daemon says it does not act on.
#[test]
fn task_plugin_param_gives_the_default_binding() {
    assert_eq!(task_plugin_param(None), (None, vec![]));
    assert_eq!(
        task_plugin_param(Some("Cores")),
        (Some("cores".to_string()), vec![])
    );
    assert_eq!(
        task_plugin_param(Some("Verbose,Threads")),
        (Some("verbose,threads".to_string()), vec![])
    );
    assert_eq!(
        task_plugin_param(Some("autobind=sockets,SlurmdOffSpec")),
        (
            Some("sockets".to_string()),
            vec!["SlurmdOffSpec".to_string()]
        )
    );
    assert_eq!(
        task_plugin_param(Some("none,verbose")),
        (Some("verbose,none".to_string()), vec![])
    );
}

/// The threads per core the node's CPU ids count.
#[test]
fn cpu_threads_count_only_where_cpus_are_threads() {
    let node = |words: &str| {
        let text = format!("ClusterName=c\nSlurmctldHost=h\nNodeName=a {words}\n");
        conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect("parses")
        .config
        .nodes[0]
            .clone()
    };
    assert_eq!(
        cpu_threads(&node("Sockets=1 CoresPerSocket=2 ThreadsPerCore=2")),
        2
    );
    // CPUs=2 on 2 cores of 2 threads: each CPU a core.
    assert_eq!(
        cpu_threads(&node("CPUs=2 CoresPerSocket=2 ThreadsPerCore=2")),
        1
    );
    assert_eq!(cpu_threads(&node("CPUs=2")), 1);
}
