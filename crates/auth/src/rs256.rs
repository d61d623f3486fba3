//! RS256 signature checks (RSASSA-PKCS1-v1_5 with SHA-256, RFC 8017
//! §8.2.2), for tokens of an identity provider whose public keys a JWKS
//! file holds (`AuthAltParameters=jwks=PATH`).
//!
//! Only verification: every input is public (the key, the token), so the
//! arithmetic need not be constant-time. The modular exponentiation is
//! Montgomery multiplication on 32-bit limbs; moduli of 1024 to 8192 bits
//! are taken.

use sha2::{Digest, Sha256};

/// The DER prefix of a SHA-256 `DigestInfo` (RFC 8017 §9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

/// An RSA public key: modulus and public exponent, big-endian bytes
/// without leading zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    n: Vec<u32>,
    n_bytes: usize,
    e: Vec<u8>,
}

/// Why a key is not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The modulus is even, or outside 1024..=8192 bits.
    #[error("RSA modulus must be odd and of 1024 to 8192 bits")]
    Modulus,
    /// The exponent is zero, even, or longer than 8 bytes.
    #[error("RSA public exponent must be odd and at most 64 bits")]
    Exponent,
}

fn strip(b: &[u8]) -> &[u8] {
    let first = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    &b[first..]
}

/// Little-endian limbs of a big-endian number.
fn limbs(be: &[u8]) -> Vec<u32> {
    be.rchunks(4)
        .map(|c| c.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
        .collect()
}

fn geq(a: &[u32], b: &[u32]) -> bool {
    for i in (0..a.len().max(b.len())).rev() {
        let (x, y) = (
            a.get(i).copied().unwrap_or(0),
            b.get(i).copied().unwrap_or(0),
        );
        if x != y {
            return x > y;
        }
    }
    true
}

/// a -= b, where a >= b and a has at least b's limbs.
fn sub_in_place(a: &mut [u32], b: &[u32]) {
    let mut borrow = 0i64;
    for (i, limb) in a.iter_mut().enumerate() {
        let d = i64::from(*limb) - i64::from(b.get(i).copied().unwrap_or(0)) - borrow;
        if d < 0 {
            *limb = (d + (1i64 << 32)) as u32;
            borrow = 1;
        } else {
            *limb = d as u32;
            borrow = 0;
        }
    }
}

impl PublicKey {
    /// The key of modulus `n` and exponent `e` (big-endian bytes).
    pub fn new(n: &[u8], e: &[u8]) -> Result<PublicKey, KeyError> {
        let n = strip(n);
        let e = strip(e);
        let bits = n.len() * 8 - n.first().map_or(8, |b| b.leading_zeros() as usize);
        if !(1024..=8192).contains(&bits) || !matches!(n.last(), Some(b) if b % 2 == 1) {
            return Err(KeyError::Modulus);
        }
        if e.is_empty() || e.len() > 8 || !matches!(e.last(), Some(b) if b % 2 == 1) {
            return Err(KeyError::Exponent);
        }
        Ok(PublicKey {
            n: limbs(n),
            n_bytes: n.len(),
            e: e.to_vec(),
        })
    }

    /// -n^-1 mod 2^32 (Newton's iteration: each step doubles the bits).
    fn n0_inv(&self) -> u32 {
        let n0 = self.n[0];
        let mut x: u32 = 1;
        for _ in 0..5 {
            x = x.wrapping_mul(2u32.wrapping_sub(n0.wrapping_mul(x)));
        }
        x.wrapping_neg()
    }

    /// a * b * R^-1 mod n (R = 2^(32 s)), for a, b < n.
    fn mont_mul(&self, a: &[u32], b: &[u32], n0_inv: u32) -> Vec<u32> {
        let s = self.n.len();
        let mut t = vec![0u32; s + 2];
        for &bi in b.iter().take(s) {
            let mut carry = 0u64;
            for j in 0..s {
                let v = u64::from(t[j]) + u64::from(a[j]) * u64::from(bi) + carry;
                t[j] = v as u32;
                carry = v >> 32;
            }
            let v = u64::from(t[s]) + carry;
            t[s] = v as u32;
            t[s + 1] = (v >> 32) as u32;
            let m = t[0].wrapping_mul(n0_inv);
            let v = u64::from(t[0]) + u64::from(m) * u64::from(self.n[0]);
            let mut carry = v >> 32;
            for j in 1..s {
                let v = u64::from(t[j]) + u64::from(m) * u64::from(self.n[j]) + carry;
                t[j - 1] = v as u32;
                carry = v >> 32;
            }
            let v = u64::from(t[s]) + carry;
            t[s - 1] = v as u32;
            t[s] = t[s + 1] + (v >> 32) as u32;
            t[s + 1] = 0;
        }
        t.truncate(s + 1);
        if geq(&t, &self.n) {
            sub_in_place(&mut t, &self.n);
        }
        t.truncate(s);
        t
    }

    /// x^e mod n.
    fn pow_e(&self, x: &[u32]) -> Vec<u32> {
        let s = self.n.len();
        let n0_inv = self.n0_inv();
        // R^2 mod n by doubling: 1 -> 2^(64 s) mod n.
        let mut r2 = vec![0u32; s + 1];
        r2[0] = 1;
        for _ in 0..64 * s {
            let mut carry = 0u32;
            for limb in r2.iter_mut() {
                let next = *limb >> 31;
                *limb = (*limb << 1) | carry;
                carry = next;
            }
            if geq(&r2, &self.n) {
                sub_in_place(&mut r2, &self.n);
            }
        }
        r2.truncate(s);
        let mut xs = x.to_vec();
        xs.resize(s, 0);
        let base = self.mont_mul(&xs, &r2, n0_inv);
        let mut acc: Option<Vec<u32>> = None;
        for byte in &self.e {
            for bit in (0..8).rev() {
                if let Some(a) = acc.take() {
                    acc = Some(self.mont_mul(&a, &a, n0_inv));
                }
                if byte >> bit & 1 == 1 {
                    acc = Some(match acc.take() {
                        Some(a) => self.mont_mul(&a, &base, n0_inv),
                        None => base.clone(),
                    });
                }
            }
        }
        let mut one = vec![0u32; s];
        one[0] = 1;
        self.mont_mul(&acc.unwrap_or_else(|| r2.clone()), &one, n0_inv)
    }

    /// Whether `sig` is this key's RS256 signature of `message`.
    pub fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        if sig.len() != self.n_bytes {
            return false;
        }
        let s = limbs(sig);
        if geq(&s, &self.n) {
            return false;
        }
        let m = self.pow_e(&s);
        // The encoded message, big-endian, k bytes.
        let mut em = vec![0u8; self.n_bytes];
        for (i, limb) in m.iter().enumerate() {
            for b in 0..4 {
                let pos = i * 4 + b;
                if pos < self.n_bytes {
                    em[self.n_bytes - 1 - pos] = (limb >> (8 * b)) as u8;
                }
            }
        }
        let hash = Sha256::digest(message);
        let t_len = SHA256_DIGEST_INFO.len() + hash.len();
        if self.n_bytes < t_len + 11 {
            return false;
        }
        let ps_len = self.n_bytes - t_len - 3;
        em[0] == 0
            && em[1] == 1
            && em[2..2 + ps_len].iter().all(|&b| b == 0xff)
            && em[2 + ps_len] == 0
            && em[3 + ps_len..3 + ps_len + SHA256_DIGEST_INFO.len()] == SHA256_DIGEST_INFO
            && em[3 + ps_len + SHA256_DIGEST_INFO.len()..] == hash[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn montgomery_powers_match_plain_arithmetic() {
        // A 1024-bit odd modulus (2^1023 + 1155) and small bases: x^3 mod
        // n for x < 2^300 is x^3 itself, which plain u128 limbs compute.
        let mut n = vec![0u8; 128];
        n[0] = 0x80;
        n[126] = 0x04;
        n[127] = 0x83;
        let k = PublicKey::new(&n, &[3]).unwrap();
        let x = 0x1234_5678_9abc_def0_u64;
        let got = k.pow_e(&limbs(&x.to_be_bytes()));
        let square = u128::from(x) * u128::from(x);
        // (x^2) * x as limbs.
        let mut want = [0u32; 8];
        let mut carry = 0u128;
        for (i, w) in want.iter_mut().enumerate() {
            let part = if i < 4 {
                (square >> (32 * i)) as u32
            } else {
                0
            };
            let v = u128::from(part) * u128::from(x) + carry;
            *w = v as u32;
            carry = v >> 32;
        }
        assert_eq!(&got[..8], &want[..]);
        assert!(got[8..].iter().all(|&l| l == 0));
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(
            PublicKey::new(&[0xff; 64], &[1, 0, 1]),
            Err(KeyError::Modulus)
        );
        assert_eq!(
            PublicKey::new(&[0xfe; 128], &[1, 0, 1]),
            Err(KeyError::Modulus)
        );
        assert_eq!(PublicKey::new(&[0xff; 128], &[2]), Err(KeyError::Exponent));
    }
}
