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
