//! `auth/jwt` as Slurm's alternative authentication: HS256 JSON Web Tokens
//! signed with the key `AuthAltParameters=jwt_key=PATH` names (when
//! `AuthAltTypes` lists `auth/jwt`). The controller mints them
//! (`scontrol token`, `proto::CtldRequest::Token`); the REST daemon checks
//! them. The claims are Slurm's: `iat`, `exp` and `sun` (the user name).
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
    let get = |k: &str| cfg.other.get(k).map(|(_, v)| v.trim().to_string());
    let types = get("authalttypes")?;
    if !types.split(',').any(|t| t.trim() == "auth/jwt") {
        return None;
    }
    get("authaltparameters")?
        .split(',')
        .find_map(|p| p.trim().strip_prefix("jwt_key=").map(PathBuf::from))
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
}
