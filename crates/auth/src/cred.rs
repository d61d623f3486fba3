//! The credential itself and the replay cache: pure (no clock, no
//! randomness, no I/O; `now` and the nonce are arguments).
//!
//! ```text
//!   base64url(JSON {v, uid, gid, user, host, iat, exp, nonce}) "." base64url(HMAC-SHA256(key, first part))
//! ```
//!
//! The MAC covers the encoded text, so the receiver checks it before it
//! parses anything: a forged or tampered credential is refused as
//! `BadSignature` without its JSON ever being read.

use crate::AuthError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use proto::Identity;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet};

/// Version of the payload's layout (`v`).
pub const CREDENTIAL_VERSION: u32 = 1;

/// Longest credential text a receiver looks at (a muster credential with a
/// 255-byte host name is well under 1 KiB; a MUNGE one of the same payload
/// under 2 KiB).
pub const MAX_CREDENTIAL_LEN: usize = 4096;

/// Longest user or host name a credential may carry.
pub const MAX_NAME_LEN: usize = 255;

/// Random bytes per credential; the replay cache's key.
pub const NONCE_LEN: usize = 16;

/// Longest lifetime (`exp - iat`) a receiver accepts, so that the replay
/// cache never has to remember a nonce for longer.
pub const MAX_LIFETIME: i64 = 3600;

/// A nonce.
pub type Nonce = [u8; NONCE_LEN];

/// What a credential says: who, from where, and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    /// [`CREDENTIAL_VERSION`].
    pub v: u32,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// User name.
    pub user: String,
    /// Host the credential was made on.
    pub host: String,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expires at (seconds since the epoch).
    pub exp: i64,
    /// base64url of [`NONCE_LEN`] random bytes.
    pub nonce: String,
}

impl Payload {
    /// A payload for `identity`, valid from `now` for `lifetime` seconds.
    pub fn new(identity: &Identity, now: i64, lifetime: i64, nonce: &Nonce) -> Payload {
        Payload {
            v: CREDENTIAL_VERSION,
            uid: identity.uid,
            gid: identity.gid,
            user: identity.user.clone(),
            host: identity.host.clone(),
            iat: now,
            exp: now.saturating_add(lifetime),
            nonce: B64.encode(nonce),
        }
    }

    /// The identity the payload names.
    pub fn identity(&self) -> Identity {
        Identity {
            uid: self.uid,
            gid: self.gid,
            user: self.user.clone(),
            host: self.host.clone(),
        }
    }

    /// The nonce's bytes.
    pub fn nonce(&self) -> Result<Nonce, AuthError> {
        let bytes = B64
            .decode(&self.nonce)
            .map_err(|_| AuthError::Malformed { what: "nonce" })?;
        bytes
            .try_into()
            .map_err(|_| AuthError::Malformed { what: "nonce" })
    }

    /// Parses and checks the fields that do not depend on time.
    pub fn from_json(bytes: &[u8]) -> Result<Payload, AuthError> {
        let p: Payload =
            serde_json::from_slice(bytes).map_err(|_| AuthError::Malformed { what: "payload" })?;
        if p.v != CREDENTIAL_VERSION {
            return Err(AuthError::UnsupportedVersion { found: p.v });
        }
        if p.user.len() > MAX_NAME_LEN || p.host.len() > MAX_NAME_LEN {
            return Err(AuthError::Malformed { what: "name" });
        }
        if p.exp < p.iat || p.exp - p.iat > MAX_LIFETIME {
            return Err(AuthError::Malformed { what: "lifetime" });
        }
        p.nonce()?;
        Ok(p)
    }

    /// Valid at `now`, give or take `skew` seconds of clock difference.
    pub fn check_time(&self, now: i64, skew: i64) -> Result<(), AuthError> {
        if now < self.iat.saturating_sub(skew) {
            return Err(AuthError::NotYetValid { iat: self.iat, now });
        }
        if now > self.exp.saturating_add(skew) {
            return Err(AuthError::Expired { exp: self.exp, now });
        }
        Ok(())
    }
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; new_from_slice cannot fail for it.
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts keys of any length")
}

/// The credential text for `payload`, signed with `key`.
pub fn sign(key: &[u8], payload: &Payload) -> String {
    let json = serde_json::to_vec(payload).expect("a payload always serializes");
    let body = B64.encode(json);
    let mut m = mac(key);
    m.update(body.as_bytes());
    let tag = m.finalize().into_bytes();
    format!("{body}.{}", B64.encode(tag))
}

/// Checks the size, then the signature, then the payload's fields (not
/// its times: see [`Payload::check_time`]).
pub fn open(key: &[u8], text: &str) -> Result<Payload, AuthError> {
    check_len(text)?;
    let (body, tag) = text
        .split_once('.')
        .ok_or(AuthError::Malformed { what: "credential" })?;
    let tag = B64
        .decode(tag)
        .map_err(|_| AuthError::Malformed { what: "signature" })?;
    let mut m = mac(key);
    m.update(body.as_bytes());
    m.verify_slice(&tag).map_err(|_| AuthError::BadSignature)?;
    let json = B64
        .decode(body)
        .map_err(|_| AuthError::Malformed { what: "payload" })?;
    Payload::from_json(&json)
}

/// Refuses credential text over [`MAX_CREDENTIAL_LEN`] before any work.
pub fn check_len(text: &str) -> Result<(), AuthError> {
    if text.len() > MAX_CREDENTIAL_LEN {
        return Err(AuthError::TooLong {
            len: text.len(),
            max: MAX_CREDENTIAL_LEN,
        });
    }
    Ok(())
}

/// The nonces of the credentials a receiver accepted, each kept until its
/// credential can no longer be accepted anyway (expiry plus clock skew).
///
/// Bounded: when `max` nonces are still live, a new credential is refused
/// (`ReplayCacheFull`) rather than the cache grown or an entry forgotten
/// early, since forgetting would let that credential be replayed. Only
/// credentials with a valid signature reach the cache, so filling it takes
/// the cluster key; at the default lifetime of 300 s plus 60 s skew the
/// default bound (`DEFAULT_REPLAY_CACHE`) allows about 2,900 requests a
/// second, sustained, in about 100 MiB at the worst.
#[derive(Debug)]
pub struct ReplayCache {
    by_nonce: BTreeMap<Nonce, i64>,
    by_expiry: BTreeSet<(i64, Nonce)>,
    max: usize,
}

/// Default bound of a [`ReplayCache`].
pub const DEFAULT_REPLAY_CACHE: usize = 1 << 20;

impl ReplayCache {
    /// An empty cache holding at most `max` live nonces.
    pub fn new(max: usize) -> ReplayCache {
        ReplayCache {
            by_nonce: BTreeMap::new(),
            by_expiry: BTreeSet::new(),
            max,
        }
    }

    /// Live nonces.
    pub fn len(&self) -> usize {
        self.by_nonce.len()
    }

    /// True when no nonce is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_nonce.is_empty()
    }

    /// Forgets the nonces whose `keep_until` is before `now`.
    pub fn prune(&mut self, now: i64) {
        while let Some(&(until, nonce)) = self.by_expiry.first() {
            if until >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.by_nonce.remove(&nonce);
        }
    }

    /// Records `nonce` until `keep_until`; refuses one already seen.
    pub fn insert(&mut self, nonce: Nonce, keep_until: i64, now: i64) -> Result<(), AuthError> {
        self.prune(now);
        if self.by_nonce.contains_key(&nonce) {
            return Err(AuthError::Replayed);
        }
        if self.by_nonce.len() >= self.max {
            return Err(AuthError::ReplayCacheFull { max: self.max });
        }
        self.by_nonce.insert(nonce, keep_until);
        self.by_expiry.insert((keep_until, nonce));
        Ok(())
    }
}
