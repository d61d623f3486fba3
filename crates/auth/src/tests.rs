use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const OTHER_KEY: &[u8] = b"fedcba9876543210fedcba9876543210";
const NOW: i64 = 1_800_000_000;

fn alice() -> Identity {
    Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "n1".into(),
    }
}

fn root() -> Identity {
    Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: "n1".into(),
    }
}

fn sign(id: &Identity, now: i64) -> String {
    Signer::with_key(KEY).sign(id, now).unwrap()
}

#[test]
fn sign_then_verify_round_trips_the_identity() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    assert_eq!(v.verify(Some(&c), &alice(), NOW).unwrap(), alice());
}

#[test]
fn every_credential_is_different() {
    assert_ne!(sign(&alice(), NOW), sign(&alice(), NOW));
}

#[test]
fn missing_credential_is_refused() {
    let v = Verifier::with_key(KEY);
    assert!(matches!(
        v.verify(None, &alice(), NOW),
        Err(AuthError::Missing)
    ));
    assert!(matches!(
        v.verify(Some(""), &alice(), NOW),
        Err(AuthError::Missing)
    ));
}

#[test]
fn credential_signed_with_another_key_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = Signer::with_key(OTHER_KEY).sign(&root(), NOW).unwrap();
    assert!(matches!(
        v.verify(Some(&c), &root(), NOW),
        Err(AuthError::BadSignature)
    ));
}

#[test]
fn forged_signature_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    let (body, _) = c.split_once('.').unwrap();
    let forged = format!("{body}.{}", B64.encode([7u8; 32]));
    assert!(matches!(
        v.verify(Some(&forged), &alice(), NOW),
        Err(AuthError::BadSignature)
    ));
}

#[test]
fn tampered_payload_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    let (body, tag) = c.split_once('.').unwrap();
    let json = String::from_utf8(B64.decode(body).unwrap()).unwrap();
    let json = json.replace("\"uid\":1000", "\"uid\":0");
    assert!(json.contains("\"uid\":0"), "{json}");
    let tampered = format!("{}.{tag}", B64.encode(json));
    assert!(matches!(
        v.verify(Some(&tampered), &root(), NOW),
        Err(AuthError::BadSignature)
    ));
}

#[test]
fn expired_credential_is_refused_after_the_skew_allowance() {
    let v = Verifier::with_key(KEY);
    let exp = NOW + DEFAULT_LIFETIME;
    // Within the allowance: accepted.
    let c = sign(&alice(), NOW);
    assert!(v.verify(Some(&c), &alice(), exp + CLOCK_SKEW).is_ok());
    let c = sign(&alice(), NOW);
    assert!(matches!(
        v.verify(Some(&c), &alice(), exp + CLOCK_SKEW + 1),
        Err(AuthError::Expired { .. })
    ));
}

#[test]
fn credential_from_the_future_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW + CLOCK_SKEW + 1);
    assert!(matches!(
        v.verify(Some(&c), &alice(), NOW),
        Err(AuthError::NotYetValid { .. })
    ));
    let c = sign(&alice(), NOW + CLOCK_SKEW);
    assert!(v.verify(Some(&c), &alice(), NOW).is_ok());
}

#[test]
fn replayed_credential_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    assert!(v.verify(Some(&c), &alice(), NOW).is_ok());
    assert!(matches!(
        v.verify(Some(&c), &alice(), NOW + 1),
        Err(AuthError::Replayed)
    ));
}

#[test]
fn a_refused_credential_does_not_use_up_its_nonce() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    assert!(v.verify(Some(&c), &root(), NOW).is_err());
    assert!(v.verify(Some(&c), &alice(), NOW).is_ok());
}

#[test]
fn identity_the_credential_does_not_prove_is_refused() {
    let v = Verifier::with_key(KEY);
    let c = sign(&alice(), NOW);
    assert!(matches!(
        v.verify(Some(&c), &root(), NOW),
        Err(AuthError::IdentityMismatch {
            claimed: 0,
            proven: 1000
        })
    ));
}

#[test]
fn credential_over_the_size_limit_is_refused_before_parsing() {
    let v = Verifier::with_key(KEY);
    let huge = "a".repeat(cred::MAX_CREDENTIAL_LEN + 1);
    assert!(matches!(
        v.verify(Some(&huge), &alice(), NOW),
        Err(AuthError::TooLong { .. })
    ));
}

#[test]
fn over_long_names_and_lifetimes_are_refused_even_when_signed() {
    let v = Verifier::with_key(KEY);
    let mut id = alice();
    id.host = "h".repeat(cred::MAX_NAME_LEN + 1);
    let c = sign(&id, NOW);
    assert!(matches!(
        v.verify(Some(&c), &id, NOW),
        Err(AuthError::Malformed { what: "name" })
    ));
    let c = Signer::with_key(KEY)
        .lifetime(cred::MAX_LIFETIME + 1)
        .sign(&alice(), NOW)
        .unwrap();
    assert!(matches!(
        v.verify(Some(&c), &alice(), NOW),
        Err(AuthError::Malformed { what: "lifetime" })
    ));
}

#[test]
fn garbage_is_malformed_or_badly_signed() {
    let v = Verifier::with_key(KEY);
    for text in ["x", "a.b", "....", "MUNGE:abc:", "\u{0}.\u{0}"] {
        let r = v.verify(Some(text), &alice(), NOW);
        assert!(
            matches!(
                r,
                Err(AuthError::Malformed { .. } | AuthError::BadSignature)
            ),
            "{text:?}: {r:?}"
        );
    }
}

#[test]
fn replay_cache_forgets_only_what_can_no_longer_be_accepted() {
    let mut cache = ReplayCache::new(10);
    cache.insert([1; 16], 100, 0).unwrap();
    cache.insert([2; 16], 200, 0).unwrap();
    assert!(matches!(
        cache.insert([1; 16], 100, 100),
        Err(AuthError::Replayed)
    ));
    cache.prune(150);
    assert_eq!(cache.len(), 1);
    cache.insert([1; 16], 300, 150).unwrap();
}

#[test]
fn full_replay_cache_refuses_instead_of_growing() {
    let v = Verifier::with_key_and_cache(KEY, 2);
    for _ in 0..2 {
        let c = sign(&alice(), NOW);
        v.verify(Some(&c), &alice(), NOW).unwrap();
    }
    let c = sign(&alice(), NOW);
    assert!(matches!(
        v.verify(Some(&c), &alice(), NOW),
        Err(AuthError::ReplayCacheFull { max: 2 })
    ));
    // Once the earlier ones expire there is room again.
    let later = NOW + DEFAULT_LIFETIME + CLOCK_SKEW + 1;
    let c = sign(&alice(), later);
    assert!(v.verify(Some(&c), &alice(), later).is_ok());
}

fn config(text: &str) -> conf::Config {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("slurm.conf");
    std::fs::write(
        &p,
        format!(
            "ClusterName=t\nSlurmctldHost=h\n{text}NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
        ),
    )
    .unwrap();
    conf::load(&p).unwrap().config
}

#[test]
fn settings_come_from_authtype_and_authinfo() {
    let s = AuthSettings::from_config(&config(
        "AuthType=auth/muster\nAuthInfo=key=/k/muster.key,socket=/s/auth.sock,ttl=60\n",
    ))
    .unwrap();
    assert_eq!(s.scheme, Scheme::Key);
    assert_eq!(s.key_path, Path::new("/k/muster.key"));
    assert_eq!(s.socket_path, Path::new("/s/auth.sock"));
    assert_eq!(s.lifetime, 60);
    // Slurm's default AuthType is auth/munge, with munged's socket.
    let s = AuthSettings::from_config(&config("")).unwrap();
    assert_eq!(s.scheme, Scheme::Munge);
    assert_eq!(s.socket_path, Path::new(munge::DEFAULT_SOCKET));
    assert!(matches!(
        AuthSettings::from_config(&config("AuthType=auth/none\n")),
        Err(AuthError::UnsupportedType(_))
    ));
}

#[test]
fn created_key_is_private_and_loads() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("muster.key");
    create_key(&p).unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(load_key(&p).unwrap().len(), NEW_KEY_LEN);
    // Never overwritten.
    assert!(create_key(&p).is_err());
    // Replaced on purpose: another key, still private, nothing left beside it.
    let old = load_key(&p).unwrap();
    replace_key(&p).unwrap();
    assert_ne!(load_key(&p).unwrap(), old);
    let mode = std::fs::metadata(&p).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bootstrap_settings_follow_authinfo() {
    // No AuthInfo: MUNGE at its default socket, as slurmd without --authinfo.
    let s = AuthSettings::bootstrap(None);
    assert_eq!(s.scheme, Scheme::Munge);
    assert_eq!(s.socket_path, PathBuf::from(munge::DEFAULT_SOCKET));
    let s = AuthSettings::bootstrap(Some("socket=/run/m.sock"));
    assert_eq!(s.scheme, Scheme::Munge);
    assert_eq!(s.socket_path, PathBuf::from("/run/m.sock"));
    // A key: the cluster key.
    let s = AuthSettings::bootstrap(Some("key=/etc/slurm/k,ttl=60"));
    assert_eq!(s.scheme, Scheme::Key);
    assert_eq!(s.key_path, PathBuf::from("/etc/slurm/k"));
    assert_eq!(s.lifetime, 60);
}

#[test]
fn key_open_to_others_or_of_the_wrong_length_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k");
    std::fs::write(&p, KEY).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        load_key(&p),
        Err(AuthError::KeyPermissions { mode: 0o644, .. })
    ));
    std::fs::write(&p, b"short").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(matches!(
        load_key(&p),
        Err(AuthError::KeyLength { len: 5, .. })
    ));
}

#[test]
fn client_signs_with_a_readable_key_and_daemon_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("muster.key");
    create_key(&key).unwrap();
    let cfg = config(&format!(
        "AuthType=auth/muster\nAuthInfo=key={},socket={}/auth.sock\n",
        key.display(),
        dir.path().display()
    ));
    let c = credential_for_client(&cfg, &alice(), NOW).unwrap();
    let (_, v) = from_config(&cfg).unwrap();
    assert_eq!(v.verify(Some(&c), &alice(), NOW).unwrap(), alice());
}

#[test]
fn client_without_the_key_asks_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("auth.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let answer = socket_reply(&Ok("the.credential".to_string()));
        s.write_all(answer.as_bytes()).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        let refused: Result<String, AuthError> = Err(AuthError::Missing);
        s.write_all(socket_reply(&refused).as_bytes()).unwrap();
    });
    let cfg = config(&format!(
        "AuthType=auth/muster\nAuthInfo=key={0}/absent.key,socket={0}/auth.sock\n",
        dir.path().display()
    ));
    assert_eq!(
        credential_for_client(&cfg, &alice(), NOW).unwrap(),
        "the.credential"
    );
    let err = credential_for_client(&cfg, &alice(), NOW).unwrap_err();
    assert!(err.to_string().contains("refused a credential"), "{err}");
    server.join().unwrap();
    // Neither key nor socket: both reasons are given.
    std::fs::remove_file(&sock).unwrap();
    let err = credential_for_client(&cfg, &alice(), NOW).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("absent.key") && text.contains("auth.sock"),
        "{text}"
    );
}
