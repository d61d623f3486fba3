use super::auth::{lookup, parse_challenge, parse_netrc, Challenge, NetrcEntry};
use super::http::Url;
use super::*;

fn r(user: Option<&str>, registry: &str, repository: &str, reference: &str) -> Reference {
    Reference {
        user: user.map(str::to_string),
        registry: registry.into(),
        repository: repository.into(),
        reference: reference.into(),
    }
}

#[test]
fn references_parse_as_enroot_reads_them() {
    let digest = "sha256:".to_string() + &"ab".repeat(32);
    assert_eq!(
        Reference::parse("ubuntu").unwrap(),
        r(None, "docker.io", "library/ubuntu", "latest")
    );
    assert_eq!(
        Reference::parse("library/ubuntu:22.04").unwrap(),
        r(None, "docker.io", "library/ubuntu", "22.04")
    );
    assert_eq!(
        Reference::parse("nvcr.io#nvidia/pytorch:24.01-py3").unwrap(),
        r(None, "nvcr.io", "nvidia/pytorch", "24.01-py3")
    );
    assert_eq!(
        Reference::parse("alice@127.0.0.1:5000#test/busybox:1").unwrap(),
        r(Some("alice"), "127.0.0.1:5000", "test/busybox", "1")
    );
    assert_eq!(
        Reference::parse(&format!("docker://ubuntu@{digest}")).unwrap(),
        r(None, "docker.io", "library/ubuntu", &digest)
    );
    assert_eq!(
        Reference::parse(&format!("bob@gitlab.example:4567#g/p@{digest}")).unwrap(),
        r(Some("bob"), "gitlab.example:4567", "g/p", &digest)
    );
    for bad in [
        "Ubuntu",
        "a#",
        "#x",
        "x:",
        "x:a/b",
        "a//b",
        "@x",
        "r#x:1@sha256:12",
    ] {
        assert!(Reference::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn endpoints_follow_the_mirror_and_http_keys() {
    let conf = SiteConf::parse(
        "registry_mirror=docker.io=http://127.0.0.1:5001/ registry_http=127.0.0.1:5000\n",
    )
    .unwrap();
    let hub = Reference::parse("ubuntu").unwrap().endpoint(&conf).unwrap();
    assert_eq!(hub.to_string(), "http://127.0.0.1:5001");
    let local = Reference::parse("127.0.0.1:5000#a/b").unwrap();
    assert_eq!(
        local.endpoint(&conf).unwrap().to_string(),
        "http://127.0.0.1:5000"
    );
    let nvcr = Reference::parse("nvcr.io#nvidia/cuda").unwrap();
    assert_eq!(
        nvcr.endpoint(&SiteConf::default()).unwrap().to_string(),
        "https://nvcr.io"
    );
    let all = SiteConf::parse("registry_mirror=https://mirror.site:8443").unwrap();
    assert_eq!(
        nvcr.endpoint(&all).unwrap().to_string(),
        "https://mirror.site:8443"
    );
    assert_eq!(
        SiteConf::parse("registry_mirror=mirror.site").unwrap_err(),
        "pyxis.conf:1: registry_mirror needs an http:// or https:// URL: mirror.site"
    );
}

#[test]
fn urls_parse_and_join() {
    let u = Url::parse("https://auth.docker.io/token?service=x").unwrap();
    assert_eq!(
        (u.https, u.host.as_str(), u.port),
        (true, "auth.docker.io", 443)
    );
    assert_eq!(u.path, "/token?service=x");
    let v = Url::parse("http://[::1]:8080").unwrap();
    assert_eq!(
        (v.host.as_str(), v.port, v.path.as_str()),
        ("::1", 8080, "/")
    );
    assert_eq!(v.authority(), "[::1]:8080");
    let b = Url::parse("http://127.0.0.1:5000/v2/a/blobs/x").unwrap();
    assert_eq!(
        b.join("/store/y").unwrap().to_string(),
        "http://127.0.0.1:5000/store/y"
    );
    assert_eq!(
        b.join("https://cdn.example/z").unwrap().to_string(),
        "https://cdn.example/z"
    );
}

#[test]
fn challenges_name_the_realm_service_and_scope() {
    assert_eq!(
        parse_challenge(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull""#
        ),
        Some(Challenge::Bearer {
            realm: "https://auth.docker.io/token".into(),
            service: Some("registry.docker.io".into()),
            scope: Some("repository:library/ubuntu:pull".into()),
        })
    );
    assert_eq!(
        parse_challenge(r#"Basic realm="Registry Realm""#),
        Some(Challenge::Basic)
    );
    assert_eq!(parse_challenge("Negotiate"), None);
}

#[test]
fn credentials_come_from_netrc_by_host_and_user() {
    let entries = parse_netrc(
        "# enroot credentials\nmachine nvcr.io login $oauthtoken password KEY\n\
         machine 127.0.0.1 login alice password a1\nmachine 127.0.0.1 login bob password b2\n\
         default login anon password x\n",
    );
    assert_eq!(entries.len(), 4);
    let pick =
        |host: &str, user: Option<&str>| lookup(&entries, host, user).map(|e| e.password.clone());
    assert_eq!(pick("nvcr.io", None).as_deref(), Some("KEY"));
    assert_eq!(pick("127.0.0.1:5000", None).as_deref(), Some("a1"));
    assert_eq!(pick("127.0.0.1:5000", Some("bob")).as_deref(), Some("b2"));
    assert_eq!(pick("other", None).as_deref(), Some("x"));
    assert_eq!(pick("other", Some("carol")), None);
    let v6 = parse_netrc("machine [::1] login v password six");
    assert_eq!(
        lookup(&v6, "[::1]:5000", None).map(|e| e.password.as_str()),
        Some("six")
    );
    let e = NetrcEntry {
        machine: None,
        login: "u".into(),
        password: "p".into(),
    };
    assert_eq!(basic(&e), "Basic dTpw");
}

#[test]
fn the_credentials_file_is_enroots() {
    let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        credentials_path(&env(&[("ENROOT_CONFIG_PATH", "/e")]), Some("/home/u")),
        Some(PathBuf::from("/e/.credentials"))
    );
    assert_eq!(
        credentials_path(&env(&[("XDG_CONFIG_HOME", "/x")]), Some("/home/u")),
        Some(PathBuf::from("/x/enroot/.credentials"))
    );
    assert_eq!(
        credentials_path(&[], Some("/home/u")),
        Some(PathBuf::from("/home/u/.config/enroot/.credentials"))
    );
}

/// A one-thread HTTP server answering `n` requests with `reply(head)`.
fn serve(n: usize, reply: impl Fn(&str) -> String + Send + 'static) -> u16 {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(n).flatten() {
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            let mut conn = conn;
            let _ = conn.write_all(reply(&head).as_bytes());
        }
    });
    port
}

#[test]
fn basic_auth_redirects_and_chunked_bodies() {
    let want = format!(
        "authorization: {}",
        basic(&NetrcEntry {
            machine: None,
            login: "alice".into(),
            password: "pw".into(),
        })
    );
    let port = serve(3, move |head| {
        let lower = head.to_ascii_lowercase();
        if lower.starts_with("get /v2/r/manifests/t ")
            && !lower.contains(&want.to_ascii_lowercase())
        {
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\n\r\n".into()
        } else if lower.starts_with("get /v2/r/manifests/t ") {
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"
                .into()
        } else if lower.starts_with("get /elsewhere ") {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n5\r\n\":1}\n\r\n0\r\n\r\n".into()
        } else {
            "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n".into()
        }
    });
    let entries = parse_netrc("machine 127.0.0.1 login alice password pw");
    let mut session = Session {
        base: Url::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        tls: http::tls_config(None).unwrap(),
        credentials: &entries,
        user: None,
        authorization: None,
    };
    session.base.path.clear();
    let body = session
        .get("/v2/r/manifests/t", Some(MANIFEST_ACCEPT))
        .unwrap()
        .read_all(100)
        .unwrap();
    assert_eq!(body, b"{\"a\":1}\n");

    // Without credentials the 401 is the error, as enroot logs it.
    let port = serve(1, |_| {
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\n\r\n".into()
    });
    let mut session = Session {
        base: Url::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        tls: http::tls_config(None).unwrap(),
        credentials: &[],
        user: None,
        authorization: None,
    };
    session.base.path.clear();
    assert_eq!(
        session.get("/v2/r/manifests/t", None).err().unwrap(),
        format!(
            "URL http://127.0.0.1:{port}/v2/r/manifests/t returned error code: 401 Unauthorized"
        )
    );
}
