use super::anchor::{parse_environment, resolve_in_root};
use super::*;

#[test]
fn site_conf_reads_plugstack_words_and_refuses_unknown_keys() {
    let c = SiteConf::parse(
        "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so container_writable=0 mount_home=1\n\
         cache_dir=/tmp/c cache_max_mb=5 # comment\nkernel_squashfs=no user_namespaces=0\n",
    )
    .unwrap();
    assert!(!c.writable);
    assert!(c.mount_home);
    assert_eq!(c.cache_dir, PathBuf::from("/tmp/c"));
    assert_eq!(c.cache_max_mb, 5);
    assert!(!c.kernel_squashfs);
    assert!(!c.user_namespaces);
    assert!(SiteConf::default().user_namespaces);
    assert_eq!(
        SiteConf::parse("bogus=1").unwrap_err(),
        "pyxis.conf:1: unknown key bogus"
    );
}

#[test]
fn image_environment_lines_parse_as_enroot_writes_them() {
    let env = parse_environment("# c\nPATH=/bin:/usr/bin\nexport FOO=\"a b\"\nBAR='x'\nbad line\n");
    assert_eq!(
        env,
        vec![
            ("PATH".to_string(), "/bin:/usr/bin".to_string()),
            ("FOO".to_string(), "a b".to_string()),
            ("BAR".to_string(), "x".to_string()),
        ]
    );
}

#[test]
fn image_links_never_lead_out_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("abs")).unwrap();
    std::os::unix::fs::symlink("../../real", root.join("rel")).unwrap();
    assert_eq!(
        resolve_in_root(root, "/abs/passwd").unwrap(),
        root.join("etc/passwd")
    );
    assert_eq!(
        resolve_in_root(root, "/rel/x").unwrap(),
        root.join("real/x")
    );
    assert_eq!(resolve_in_root(root, "/../../x").unwrap(), root.join("x"));
}

#[test]
fn image_env_keeps_the_hosts_slurm_and_named_variables() {
    let image = vec![
        ("FOO".to_string(), "image".to_string()),
        ("BAR".to_string(), "image".to_string()),
        ("SLURM_JOB_ID".to_string(), "9".to_string()),
    ];
    let kept = merge_image_env(&image, &["BAR".to_string()]);
    assert_eq!(kept, vec![("FOO".to_string(), "image".to_string())]);
}
