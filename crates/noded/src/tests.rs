use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn opts(s: &str) -> NodedOptions {
    match parse_args(&args(s)) {
        Ok(Parsed::Run(o)) => o,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn options_in_slurmd_spelling() {
    let o = opts("-D -vv -N n1 -f /tmp/slurm.conf");
    assert_eq!(o.node_name.as_deref(), Some("n1"));
    assert_eq!(o.conf_path, PathBuf::from("/tmp/slurm.conf"));
    assert!(o.foreground);
    assert_eq!(o.verbose, 2);
    let o = opts("-Nn2 -f/etc/x.conf -v -v");
    assert_eq!(o.node_name.as_deref(), Some("n2"));
    assert_eq!(o.conf_path, PathBuf::from("/etc/x.conf"));
    assert_eq!(o.verbose, 2);
}

#[test]
fn defaults_are_hostname_and_slurm_conf() {
    let o = opts("");
    assert_eq!(o.node_name, None);
    assert_eq!(o.verbose, 0);
    assert!(o.conf_path.is_absolute());
}

#[test]
fn bad_options_are_errors() {
    assert_eq!(
        parse_args(&args("-N")),
        Err("option -N requires an argument".to_string())
    );
    assert!(parse_args(&args("--bogus")).is_err());
    assert_eq!(parse_args(&args("-h")), Ok(Parsed::Help));
}

#[test]
fn main_reports_missing_config_as_failure() {
    assert_eq!(
        main(args("noded -N n1 -f /nonexistent/muster-test/slurm.conf")),
        1
    );
    assert_eq!(main(args("--bogus")), 1);
}

#[test]
fn configless_options_in_slurmd_spelling() {
    let o = opts("--conf-server ctl:6817 --authinfo key=/etc/slurm/k -N n1");
    assert_eq!(o.conf_server.as_deref(), Some("ctl:6817"));
    assert_eq!(o.authinfo.as_deref(), Some("key=/etc/slurm/k"));
    let o = opts("--conf-server=ctl --authinfo=socket=/run/m");
    assert_eq!(o.conf_server.as_deref(), Some("ctl"));
    assert_eq!(o.authinfo.as_deref(), Some("socket=/run/m"));
    assert!(parse_args(&args("--conf-server")).is_err());
    assert!(parse_args(&args("--conf-serverx")).is_err());
}
