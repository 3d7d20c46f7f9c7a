//! The structural hash that filters comparisons (`002_…` in the seeds: a hash consistent with
//! the order lets most lookups end at one integer compare).
//!
//! Law: `a.compare_with(b, c) == Equal` ⇒ `hash(a) == hash(b)`. It holds by construction: the
//! hash reads only the fingerprint's tokens, and equal fingerprints have equal tokens. Class
//! references are left out (their tokens are placeholders), so the hash does not change when the
//! driver refines classes.

use super::Fingerprint;

pub(crate) const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline]
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(SEED)
}

/// The hash of a fingerprint's tokens: one linear pass, no allocation.
pub fn hash(fp: &Fingerprint) -> u64 {
    let mut h = fp.tokens.len() as u64;
    let mut chunks = fp.tokens.chunks_exact(2);
    for pair in &mut chunks {
        h = mix(h, u64::from(pair[0]) | (u64::from(pair[1]) << 32));
    }
    for &t in chunks.remainder() {
        h = mix(h, u64::from(t));
    }
    h ^ (h >> 29)
}
