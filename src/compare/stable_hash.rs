//! Hashes that mean the same on every machine and in every build, integers as little-endian
//! bytes:
//!
//! - [`ContentHash`] (BLAKE3, 128 bits of its output): names of shared bodies that the linker
//!   keeps once among several units (global merging's `clifmerge_…`). Such a name is a promise
//!   that equal names are equal content, which a unit made by anyone must not be able to break:
//!   the hash must resist collisions that are *made*, not only those that happen.
//! - [`StableHash`] (FNV-1a, 128 bits): names that stay inside one unit (the `similar_…` bodies
//!   of similar merging, local symbols), where a collision is only ever with the unit's own
//!   functions and is seen there.
//! - [`GroupingHash`]: keys that only group functions (summaries).

/// What the content-naming hashes take: bytes, integers and strings, in order.
pub trait NameHasher {
    /// Adds bytes.
    fn bytes(&mut self, bytes: &[u8]);

    /// Adds an integer, as its 8 little-endian bytes.
    fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    /// Adds a string, preceded by its length (so that two strings never read as one).
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    /// The hash.
    fn finish(self) -> u128;
}

/// A collision-resistant 128-bit hash being computed: the first 16 bytes of BLAKE3's output,
/// read as a big-endian number (so its hexadecimal spelling is BLAKE3's).
#[derive(Clone, Debug, Default)]
pub struct ContentHash(blake3::Hasher);

impl ContentHash {
    /// A new hash.
    pub fn new() -> ContentHash {
        ContentHash(blake3::Hasher::new())
    }
}

impl NameHasher for ContentHash {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(self) -> u128 {
        let digest = self.0.finalize();
        let first: [u8; 16] = digest.as_bytes()[..16].try_into().expect("32 bytes");
        u128::from_be_bytes(first)
    }
}

impl NameHasher for StableHash {
    fn bytes(&mut self, bytes: &[u8]) {
        StableHash::bytes(self, bytes);
    }

    fn finish(self) -> u128 {
        StableHash::finish(self)
    }
}

/// A 128-bit FNV-1a hash being computed.
#[derive(Clone, Copy, Debug)]
pub struct StableHash(u128);

impl Default for StableHash {
    fn default() -> Self {
        StableHash::new()
    }
}

impl StableHash {
    /// FNV-1a's 128-bit offset basis.
    pub fn new() -> StableHash {
        StableHash(0x6c62272e07bb014262b821756295c58d)
    }

    /// Adds bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(0x0000000001000000000000000000013B);
        }
    }

    /// The hash.
    pub fn finish(self) -> u128 {
        self.0
    }
}

/// A fast 128-bit hash for keys that only *group* functions (a summary's keys): two 64-bit
/// multiply-rotate lanes over 64-bit words, the same on every machine and build. Not for names
/// that must pin content (those use [`StableHash`]): a collision here only puts two functions
/// in one group, which round 2 then tells apart by their content.
#[derive(Clone, Copy, Debug)]
pub struct GroupingHash {
    a: u64,
    b: u64,
}

impl Default for GroupingHash {
    fn default() -> Self {
        GroupingHash::new()
    }
}

impl GroupingHash {
    /// The initial state.
    pub fn new() -> GroupingHash {
        GroupingHash {
            a: 0x243F_6A88_85A3_08D3,
            b: 0x1319_8A2E_0370_7344,
        }
    }

    /// Adds a 64-bit word.
    #[inline]
    pub fn u64(&mut self, x: u64) {
        self.a = (self.a ^ x)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
        self.b = (self.b ^ x.rotate_left(32))
            .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            .rotate_left(31);
    }

    /// Adds 32-bit words, preceded by their count. Long runs (a function's tokens) go through
    /// four independent lanes of eight words each, folded into the state at the end: one lane
    /// would wait on its own multiplications; four keep the multiplier busy (the run is hashed
    /// about three times as fast).
    pub fn words(&mut self, words: &[u32]) {
        self.u64(words.len() as u64);
        let mut blocks = words.chunks_exact(8);
        let mut lanes = [
            0x4528_21E6_38D0_1377,
            0xBE54_66CF_34E9_0C6C,
            0xC0AC_29B7_C97C_50DD,
            0x3F84_D5B5_B547_0917,
        ];
        for block in &mut blocks {
            for (lane, pair) in lanes.iter_mut().zip(block.chunks_exact(2)) {
                let word = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
                *lane = (*lane ^ word)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(27);
            }
        }
        for lane in lanes {
            self.u64(lane);
        }
        let mut pairs = blocks.remainder().chunks_exact(2);
        for pair in &mut pairs {
            self.u64(u64::from(pair[0]) | (u64::from(pair[1]) << 32));
        }
        for &w in pairs.remainder() {
            self.u64(u64::from(w));
        }
    }

    /// Adds a string, preceded by its length.
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        let mut chunks = s.as_bytes().chunks(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.u64(u64::from_le_bytes(word));
        }
    }

    /// The hash: both lanes, each mixed with the other.
    pub fn finish(self) -> u128 {
        let avalanche = |mut x: u64| {
            x ^= x >> 33;
            x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
            x ^= x >> 33;
            x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
            x ^ (x >> 33)
        };
        let a = avalanche(self.a ^ self.b.rotate_left(17));
        let b = avalanche(self.b ^ self.a.rotate_left(41));
        (u128::from(a) << 64) | u128::from(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The hashes are part of the summary format: these values are the same on every machine
    // and in every build, and change only with `SUMMARY_VERSION` (grouping keys) or
    // `ENCODING_VERSION`-named content (shared bodies' names).
    #[test]
    fn hashes_are_pinned() {
        let words: Vec<u32> = (0..21).map(|i| i * 0x0101_0101).collect();
        let mut g = GroupingHash::new();
        g.str("clif-merge");
        g.words(&words);
        assert_eq!(g.finish(), 0x800bfddf_3a3f127d_1431f71a_26fd6732);
        let mut s = StableHash::new();
        s.str("clif-merge");
        s.u64(0x0123_4567_89ab_cdef);
        assert_eq!(s.finish(), 0x05bf15bd_d8ffcb57_12ca1edc_b719cd1e);
        // BLAKE3's own test vector: the empty input.
        assert_eq!(
            ContentHash::new().finish(),
            0xaf1349b9_f5f9a1a6_a0404dea_36dcc949
        );
        let mut c = ContentHash::new();
        c.str("clif-merge");
        c.u64(0x0123_4567_89ab_cdef);
        assert_ne!(c.finish(), 0);
    }

    #[test]
    fn every_word_of_a_long_run_counts() {
        let words: Vec<u32> = (0..37).collect();
        let hash = |w: &[u32]| {
            let mut g = GroupingHash::new();
            g.words(w);
            g.finish()
        };
        let base = hash(&words);
        for i in 0..words.len() {
            let mut changed = words.clone();
            changed[i] ^= 1 << (i % 32);
            assert_ne!(hash(&changed), base, "word {i}");
        }
        assert_ne!(hash(&words[..36]), base);
    }
}
