//! A fast, fixed hasher for keys the programs make themselves.

/// A hasher that takes its input a word at a time (FxHash's mixing:
/// rotate, xor, multiply), for keys made by the programs themselves (job
/// descriptions pooled by the engine, job shapes numbered by the
/// scheduler), which SipHash took a byte-oriented while over. Not keyed:
/// never for keys an outsider chooses to collide. Fixed, so the same on
/// every run; equal keys are still told apart by comparing them.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordHasher(u64);

/// `WordHasher` for a `HashMap`.
pub type WordHash = std::hash::BuildHasherDefault<WordHasher>;

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash, Hasher};

    /// Equal keys hash alike; different ones (here) apart; the same on
    /// every run.
    #[test]
    fn word_hasher_is_fixed_and_tells_keys_apart() {
        let h = |k: &(u32, &str)| WordHash::default().hash_one(k);
        assert_eq!(h(&(1, "a")), h(&(1, "a")));
        assert_ne!(h(&(1, "a")), h(&(2, "a")));
        assert_ne!(h(&(1, "a")), h(&(1, "b")));
        let mut w = WordHasher::default();
        7u64.hash(&mut w);
        let mut v = WordHasher::default();
        v.write_u64(7);
        assert_eq!(w.finish(), v.finish());
    }
}
