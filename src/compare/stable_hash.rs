//! A 128-bit hash that means the same on every machine and in every build: FNV-1a over bytes,
//! integers as little-endian bytes. Names derived from content (shared bodies of similar
//! functions, global merging's shared bodies) and summaries use it; 128 bits make a collision
//! among the functions of any program impractical.

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

    /// Adds an integer, as its 8 little-endian bytes.
    pub fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    /// Adds a string, preceded by its length (so that two strings never read as one).
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    /// The hash.
    pub fn finish(self) -> u128 {
        self.0
    }
}
