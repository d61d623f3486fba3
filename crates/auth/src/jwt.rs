//! `auth/jwt` as Slurm's alternative authentication: HS256 JSON Web Tokens
//! signed with the key `AuthAltParameters=jwt_key=PATH` names (when
//! `AuthAltTypes` lists `auth/jwt`). The controller mints them
//! (`scontrol token`, `proto::CtldRequest::Token`); the REST daemon checks
//! them. The claims are Slurm's: `iat`, `exp` and `sun` (the user name).
//!
//! `AuthAltParameters=jwks=PATH` adds the RS256 keys of an identity
//! provider (a JSON Web Key Set file): a token whose header says RS256 is
//! checked against the key its `kid` names ([`TokenCheck`]); the user is
//! the claim `userclaimfield=` names (`sun` without it), as in Slurm.
//!
//! The clock is the caller's: `now` is an argument.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::{Path, PathBuf};

/// The lifespan `scontrol token` gives a token without `lifespan=` (Slurm's
/// default: 30 minutes).
pub const DEFAULT_LIFESPAN: u64 = 1800;

/// The longest token this module reads, in bytes.
pub const MAX_TOKEN_LEN: usize = 8192;

/// `{"alg":"HS256","typ":"JWT"}`.
const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// A token's claims.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Claims {
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issue time, seconds since the epoch.
    pub iat: i64,
    /// The user name ("slurm user name").
    pub sun: String,
}

/// Why a token is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not three base64url parts, or not the JSON expected.
    #[error("malformed token")]
    Malformed,
    /// Another algorithm than HS256.
    #[error("unsupported token algorithm")]
    Algorithm,
    /// The signature does not match the key.
    #[error("invalid token signature")]
    BadSignature,
    /// Past `exp`.
    #[error("expired token")]
    Expired,
    /// An RS256 token without a `kid`, or naming no key of the JWKS.
    #[error("no key of the JWKS matches the token's kid")]
    UnknownKey,
    /// The claim naming the user is missing or not a string.
    #[error("the token names no user")]
    NoUser,
    /// A kind of token no key is configured for (RS256 without `jwks=`,
    /// HS256 without `jwt_key=`).
    #[error("no key is configured for this kind of token")]
    NoKey,
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts keys of any length")
}

/// A token for `user`, issued at `now`, valid for `lifespan` seconds.
pub fn mint(key: &[u8], user: &str, now: i64, lifespan: u64) -> String {
    let claims = Claims {
        exp: now.saturating_add(i64::try_from(lifespan).unwrap_or(i64::MAX)),
        iat: now,
        sun: user.to_string(),
    };
    let payload = serde_json::to_vec(&claims).expect("claims serialize");
    let mut token = B64.encode(HEADER);
    token.push('.');
    token.push_str(&B64.encode(payload));
    let mut m = mac(key);
    m.update(token.as_bytes());
    let sig = m.finalize().into_bytes();
    token.push('.');
    token.push_str(&B64.encode(sig));
    token
}

/// The claims of `token` when its signature matches `key` (in constant
/// time), its header says HS256 and it has not expired at `now`.
pub fn verify(key: &[u8], token: &str, now: i64) -> Result<Claims, JwtError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(JwtError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let header: serde_json::Value = B64
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(JwtError::Malformed)?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(JwtError::Algorithm);
    }
    let sig = B64.decode(s).map_err(|_| JwtError::Malformed)?;
    let mut m = mac(key);
    m.update(&token.as_bytes()[..h.len() + 1 + p.len()]);
    m.verify_slice(&sig).map_err(|_| JwtError::BadSignature)?;
    let claims: Claims = B64
        .decode(p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(JwtError::Malformed)?;
    if now >= claims.exp {
        return Err(JwtError::Expired);
    }
    Ok(claims)
}

/// Where the HS256 key is, when slurm.conf enables `auth/jwt`
/// (`AuthAltTypes=auth/jwt`, `AuthAltParameters=jwt_key=PATH`).
pub fn key_path(cfg: &conf::Config) -> Option<PathBuf> {
    alt_parameter(cfg, "jwt_key").map(PathBuf::from)
}

/// `AuthAltParameters`'s `name=` value, when slurm.conf enables `auth/jwt`.
fn alt_parameter(cfg: &conf::Config, name: &str) -> Option<String> {
    let get = |k: &str| cfg.other.get(k).map(|(_, v)| v.trim().to_string());
    let types = get("authalttypes")?;
    if !types.split(',').any(|t| t.trim() == "auth/jwt") {
        return None;
    }
    get("authaltparameters")?.split(',').find_map(|p| {
        p.trim()
            .strip_prefix(name)
            .and_then(|v| v.strip_prefix('='))
            .map(str::to_string)
    })
}

/// Where the JWKS file is (`AuthAltParameters=jwks=PATH`), when slurm.conf
/// enables `auth/jwt`.
pub fn jwks_path(cfg: &conf::Config) -> Option<PathBuf> {
    alt_parameter(cfg, "jwks").map(PathBuf::from)
}

/// The claim that names the user (`AuthAltParameters=userclaimfield=`),
/// `sun` without it.
pub fn user_claim(cfg: &conf::Config) -> String {
    alt_parameter(cfg, "userclaimfield")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "sun".to_string())
}

/// The RS256 keys of a JSON Web Key Set, by `kid`.
#[derive(Clone, Debug, Default)]
pub struct Jwks {
    keys: Vec<(String, crate::rs256::PublicKey)>,
}

impl Jwks {
    /// Parses a JWKS document (`{"keys": [{"kty": "RSA", "alg": "RS256",
    /// "kid", "n", "e"}, ...]}`). Keys of other types or algorithms are
    /// skipped, as Slurm skips them; a set without any RS256 key, or an
    /// RS256 key that cannot be read, is an error naming it.
    pub fn parse(text: &str) -> Result<Jwks, String> {
        let doc: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let list = doc
            .get("keys")
            .and_then(|k| k.as_array())
            .ok_or("no \"keys\" array")?;
        let mut keys = Vec::new();
        for (i, k) in list.iter().enumerate() {
            let field = |name: &str| k.get(name).and_then(|v| v.as_str());
            if field("kty") != Some("RSA") || field("alg").is_some_and(|a| a != "RS256") {
                continue;
            }
            let kid = field("kid").ok_or_else(|| format!("key {i}: no kid"))?;
            let part = |name: &str| {
                field(name)
                    .and_then(|v| B64.decode(v.trim_end_matches('=')).ok())
                    .ok_or_else(|| format!("key {kid}: {name} is not base64url"))
            };
            let key = crate::rs256::PublicKey::new(&part("n")?, &part("e")?)
                .map_err(|e| format!("key {kid}: {e}"))?;
            keys.push((kid.to_string(), key));
        }
        if keys.is_empty() {
            return Err("no RS256 key".into());
        }
        Ok(Jwks { keys })
    }

    /// Reads and parses the file `path`.
    pub fn load(path: &Path) -> std::io::Result<Jwks> {
        let text = std::fs::read_to_string(path)?;
        Jwks::parse(&text).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    /// The key ids, in the file's order.
    pub fn kids(&self) -> Vec<&str> {
        self.keys.iter().map(|(k, _)| k.as_str()).collect()
    }
}

/// How a token is checked: the HS256 key (`jwt_key=`), the identity
/// provider's keys (`jwks=`), or both, and the claim naming the user.
#[derive(Clone, Debug)]
pub struct TokenCheck {
    /// `jwt_key=`'s bytes.
    pub hs256: Option<Vec<u8>>,
    /// `jwks=`'s keys.
    pub jwks: Option<Jwks>,
    /// `userclaimfield=`, or `sun`.
    pub user_claim: String,
}

impl TokenCheck {
    /// From slurm.conf: None when `auth/jwt` is not enabled or names
    /// neither `jwt_key=` nor `jwks=`; an error when a file it names cannot
    /// be read.
    pub fn from_config(cfg: &conf::Config) -> std::io::Result<Option<TokenCheck>> {
        let hs256 = key_path(cfg).map(|p| load_key(&p)).transpose()?;
        let jwks = jwks_path(cfg).map(|p| Jwks::load(&p)).transpose()?;
        if hs256.is_none() && jwks.is_none() {
            return Ok(None);
        }
        Ok(Some(TokenCheck {
            hs256,
            jwks,
            user_claim: user_claim(cfg),
        }))
    }

    /// The claims of `token` when a configured key signed it and it has
    /// not expired at `now`: HS256 with `jwt_key=`, RS256 with the `jwks=`
    /// key its header's `kid` names.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, JwtError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(JwtError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let header: serde_json::Value = B64
            .decode(h)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(JwtError::Malformed)?;
        let signed = &token.as_bytes()[..h.len() + 1 + p.len()];
        match header.get("alg").and_then(|a| a.as_str()) {
            Some("HS256") => {
                let key = self.hs256.as_deref().ok_or(JwtError::NoKey)?;
                let sig = B64.decode(s).map_err(|_| JwtError::Malformed)?;
                let mut m = mac(key);
                m.update(signed);
                m.verify_slice(&sig).map_err(|_| JwtError::BadSignature)?;
            }
            Some("RS256") => {
                let jwks = self.jwks.as_ref().ok_or(JwtError::NoKey)?;
                let kid = header
                    .get("kid")
                    .and_then(|k| k.as_str())
                    .ok_or(JwtError::UnknownKey)?;
                let key = jwks
                    .keys
                    .iter()
                    .find(|(k, _)| k == kid)
                    .map(|(_, key)| key)
                    .ok_or(JwtError::UnknownKey)?;
                let sig = B64.decode(s).map_err(|_| JwtError::Malformed)?;
                if !key.verify(signed, &sig) {
                    return Err(JwtError::BadSignature);
                }
            }
            _ => return Err(JwtError::Algorithm),
        }
        let claims: serde_json::Value = B64
            .decode(p)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(JwtError::Malformed)?;
        let exp = claims
            .get("exp")
            .and_then(|e| e.as_i64())
            .ok_or(JwtError::Malformed)?;
        if now >= exp {
            return Err(JwtError::Expired);
        }
        let sun = claims
            .get(&self.user_claim)
            .and_then(|u| u.as_str())
            .filter(|u| !u.is_empty())
            .ok_or(JwtError::NoUser)?;
        Ok(Claims {
            exp,
            iat: claims.get("iat").and_then(|i| i.as_i64()).unwrap_or(0),
            sun: sun.to_string(),
        })
    }
}

/// Reads the key: not empty, at most 64 KiB.
pub fn load_key(path: &Path) -> std::io::Result<Vec<u8>> {
    let key = std::fs::read(path)?;
    if key.is_empty() || key.len() > 65536 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: a JWT key must be 1 to 65536 bytes", path.display()),
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_verifies_until_it_expires() {
        let t = mint(b"secret", "alice", 1000, 60);
        let c = verify(b"secret", &t, 1059).unwrap();
        assert_eq!(c.sun, "alice");
        assert_eq!((c.iat, c.exp), (1000, 1060));
        assert_eq!(verify(b"secret", &t, 1060), Err(JwtError::Expired));
    }

    #[test]
    fn forged_and_altered_tokens_are_refused() {
        let t = mint(b"secret", "alice", 1000, 60);
        assert_eq!(verify(b"other", &t, 1001), Err(JwtError::BadSignature));
        let forged_payload = B64.encode(r#"{"exp":9999,"iat":1000,"sun":"root"}"#);
        let mut parts: Vec<&str> = t.split('.').collect();
        parts[1] = &forged_payload;
        assert_eq!(
            verify(b"secret", &parts.join("."), 1001),
            Err(JwtError::BadSignature)
        );
        let none = format!("{}.{}.", B64.encode(r#"{"alg":"none"}"#), parts[1]);
        assert_eq!(verify(b"secret", &none, 1001), Err(JwtError::Algorithm));
        assert_eq!(verify(b"secret", "invalid", 1001), Err(JwtError::Malformed));
    }

    #[test]
    fn the_header_is_a_standard_hs256_one() {
        // base64url of {"alg":"HS256","typ":"JWT"}, as every HS256 library
        // writes it.
        let t = mint(b"secret", "alice", 1000, 60);
        assert!(t.starts_with("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."));
    }

    /// An RSA key pair made by the openssl command for the test: signs
    /// with `openssl dgst -sha256 -sign`, publishes `n` from `-modulus`.
    struct Idp {
        dir: tempfile::TempDir,
        n: Vec<u8>,
    }

    fn openssl(args: &[&str]) -> Vec<u8> {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("running openssl");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
        out.stdout
    }

    impl Idp {
        fn new(bits: u32) -> Idp {
            let dir = tempfile::tempdir().unwrap();
            let key = dir.path().join("key.pem");
            let key = key.to_str().unwrap();
            openssl(&["genrsa", "-out", key, &bits.to_string()]);
            let modulus =
                String::from_utf8(openssl(&["rsa", "-in", key, "-noout", "-modulus"])).unwrap();
            let hex = modulus.trim().strip_prefix("Modulus=").unwrap();
            let n = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            Idp { dir, n }
        }

        fn jwk(&self, kid: &str) -> serde_json::Value {
            serde_json::json!({"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
                "n": B64.encode(&self.n), "e": B64.encode([1u8, 0, 1])})
        }

        fn token(&self, kid: Option<&str>, claims: serde_json::Value) -> String {
            let header = match kid {
                Some(k) => serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": k}),
                None => serde_json::json!({"alg": "RS256", "typ": "JWT"}),
            };
            let mut t = B64.encode(header.to_string());
            t.push('.');
            t.push_str(&B64.encode(claims.to_string()));
            let input = self.dir.path().join("input");
            std::fs::write(&input, &t).unwrap();
            let key = self.dir.path().join("key.pem");
            let sig = openssl(&[
                "dgst",
                "-sha256",
                "-sign",
                key.to_str().unwrap(),
                input.to_str().unwrap(),
            ]);
            t.push('.');
            t.push_str(&B64.encode(sig));
            t
        }
    }

    #[test]
    fn rs256_tokens_are_checked_against_the_jwks_key_their_kid_names() {
        let idp = Idp::new(2048);
        let other = Idp::new(2048);
        let set = serde_json::json!({"keys": [
            {"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"},
            idp.jwk("idp-1"),
        ]});
        let jwks = Jwks::parse(&set.to_string()).unwrap();
        assert_eq!(jwks.kids(), vec!["idp-1"]);
        let check = TokenCheck {
            hs256: Some(b"secret".to_vec()),
            jwks: Some(jwks),
            user_claim: "sun".into(),
        };
        let claims = serde_json::json!({"iat": 1000, "exp": 1060, "sun": "alice"});
        let good = idp.token(Some("idp-1"), claims.clone());
        let c = check.verify(&good, 1001).unwrap();
        assert_eq!((c.sun.as_str(), c.iat, c.exp), ("alice", 1000, 1060));
        assert_eq!(check.verify(&good, 1060), Err(JwtError::Expired));
        // Another key under the right kid, an unknown kid, no kid.
        assert_eq!(
            check.verify(&other.token(Some("idp-1"), claims.clone()), 1001),
            Err(JwtError::BadSignature)
        );
        assert_eq!(
            check.verify(&idp.token(Some("idp-2"), claims.clone()), 1001),
            Err(JwtError::UnknownKey)
        );
        assert_eq!(
            check.verify(&idp.token(None, claims.clone()), 1001),
            Err(JwtError::UnknownKey)
        );
        // A payload changed after signing.
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        parts[1] = B64.encode(r#"{"iat":1000,"exp":1060,"sun":"root"}"#);
        assert_eq!(
            check.verify(&parts.join("."), 1001),
            Err(JwtError::BadSignature)
        );
        // HS256 still works beside it.
        let hs = mint(b"secret", "bob", 1000, 60);
        assert_eq!(check.verify(&hs, 1001).unwrap().sun, "bob");
        // Without jwks=, RS256 is refused; without exp, any token.
        let hs_only = TokenCheck {
            jwks: None,
            ..check.clone()
        };
        assert_eq!(hs_only.verify(&good, 1001), Err(JwtError::NoKey));
        let no_exp = idp.token(Some("idp-1"), serde_json::json!({"sun": "alice"}));
        assert_eq!(check.verify(&no_exp, 1001), Err(JwtError::Malformed));
    }

    #[test]
    fn the_user_claim_is_configurable() {
        let idp = Idp::new(1024);
        let check = TokenCheck {
            hs256: None,
            jwks: Some(
                Jwks::parse(&serde_json::json!({"keys": [idp.jwk("k")]}).to_string()).unwrap(),
            ),
            user_claim: "preferred_username".into(),
        };
        let t = idp.token(
            Some("k"),
            serde_json::json!({"exp": 2000, "preferred_username": "carol", "sun": "root"}),
        );
        assert_eq!(check.verify(&t, 1000).unwrap().sun, "carol");
        let t = idp.token(Some("k"), serde_json::json!({"exp": 2000, "sun": "root"}));
        assert_eq!(check.verify(&t, 1000), Err(JwtError::NoUser));
        assert!(Jwks::parse(r#"{"keys": []}"#).is_err());
        assert!(Jwks::parse("not json").is_err());
    }
}
