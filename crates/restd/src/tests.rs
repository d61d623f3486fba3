use super::*;

#[test]
fn listen_arguments_as_slurmrestd_takes_them() {
    assert_eq!(
        Listen::parse("6820").unwrap(),
        Listen::Tcp("0.0.0.0:6820".into())
    );
    assert_eq!(
        Listen::parse("127.0.0.1:6820").unwrap(),
        Listen::Tcp("127.0.0.1:6820".into())
    );
    assert_eq!(
        Listen::parse("unix:/run/slurmrestd.sock").unwrap(),
        Listen::Unix("/run/slurmrestd.sock".into())
    );
    assert!(Listen::parse("localhost:http").is_err());
    assert_eq!(AuthMode::parse("rest_auth/jwt"), Some(AuthMode::Jwt));
    assert_eq!(AuthMode::parse("local"), Some(AuthMode::Local));
    assert_eq!(AuthMode::parse("rest_auth/none"), None);
}

#[test]
fn queries_are_decoded() {
    assert_eq!(
        parse_query("signal=SIGUSR1&a=b%2Fc&x"),
        vec![
            ("signal".to_string(), "SIGUSR1".to_string()),
            ("a".to_string(), "b/c".to_string()),
            ("x".to_string(), String::new())
        ]
    );
}
