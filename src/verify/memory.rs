//! Memory outside the stack, as a run sees it: a deterministic, lazily filled space. A byte that
//! nothing stored to reads as the run's [`Fill`] makes it: a hash of its address and the run's
//! seed, or one byte everywhere; the same on both sides of a run. Stored bytes are kept (in
//! 8-byte words) until the run ends. Every address is valid: real code reaches memory through
//! pointers the check cannot know (a `vmctx`, a heap's base), so the pointers it loads are just
//! more addresses.

use super::inputs::{mix, small_mostly};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::fmt;

/// Loads of unwritten memory one run records at most (for [`Memory::loads`]).
const LOADS_LOGGED: usize = 64;

/// A word of memory nothing stored to made to read `value` (its low `width` bytes, little
/// endian) at `address`, before any call not run: a guided run steers a loaded value towards
/// what it is compared with (`guide.rs`), the same on both sides of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pin {
    /// Where the word is.
    pub address: u64,
    /// What it reads (its low `width` bytes).
    pub value: u64,
    /// In bytes: 1, 2, 4 or 8.
    pub width: u8,
}

impl Pin {
    /// The byte at `at`, if the pin covers it.
    fn byte_at(&self, at: u64) -> Option<u8> {
        let i = at.wrapping_sub(self.address);
        (i < u64::from(self.width)).then(|| self.value.to_le_bytes()[i as usize])
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = u32::from(self.width) * 8;
        write!(f, "i{bits} 0x{:x} at 0x{:x}", self.value, self.address)
    }
}

/// What the bytes nothing stored to read as in one run, the same on both sides of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// A hash of the byte's address and this seed: words of mostly small numbers, so that
    /// lengths and counts read from memory make loops end and pointers read from memory stay
    /// near each other. A call not run derives a new seed.
    Hashed(u64),
    /// This byte everywhere: `0x00` as a cleared heap reads (null pointers, empty lists, zero
    /// lengths), `0xFF` as erased memory reads (every bit set: a hash table's empty control
    /// bytes, a search's sentinel).
    Byte(u8),
}

impl fmt::Display for Fill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fill::Hashed(seed) => write!(f, "hashed from seed 0x{seed:x}"),
            Fill::Byte(byte) => write!(f, "0x{byte:02x} everywhere"),
        }
    }
}

impl Default for Fill {
    fn default() -> Self {
        Fill::Hashed(0)
    }
}

/// The stored bytes of one aligned 8-byte word, and which of them were stored.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Word {
    bytes: [u8; 8],
    stored: u8,
}

/// The lazily filled memory of one run.
#[derive(Default)]
pub(super) struct Memory {
    /// What unwritten bytes read as: one fill per run, the same on both sides.
    fill: Fill,
    words: FxHashMap<u64, Word>,
    /// Read-only data the module defines (a similar group's records): read where nothing was
    /// stored, kept across runs and calls.
    data: FxHashMap<u64, Word>,
    /// Words that read as pinned until the first call not run (see [`Pin`]).
    pins: Vec<Pin>,
    /// Whether no call not run happened yet in this run: the pins hold and loads are logged.
    fresh: bool,
    /// The loads of unwritten memory before any call not run, when logged (the original side
    /// of a guided search).
    loads: Option<RefCell<Vec<Pin>>>,
}

/// What a run's memory holds at one point (see [`Memory::image`]).
pub(super) struct MemoryImage {
    fill: Fill,
    fresh: bool,
    words: FxHashMap<u64, Word>,
}

impl Memory {
    /// A copy of what the run stored and what unwritten bytes derive from; the read-only data
    /// is the same for every run.
    pub(super) fn image(&self) -> MemoryImage {
        MemoryImage {
            fill: self.fill,
            fresh: self.fresh,
            words: self.words.clone(),
        }
    }

    /// Whether every byte reads as it did when `image` was taken.
    pub(super) fn is(&self, image: &MemoryImage) -> bool {
        self.fill == image.fill && self.fresh == image.fresh && self.words == image.words
    }

    /// Makes the words of `pins` read as pinned in every run from now on (none: as the fill
    /// makes them).
    pub(super) fn pin(&mut self, pins: &[Pin]) {
        self.pins.clear();
        self.pins.extend_from_slice(pins);
    }

    /// Logs the loads of unwritten memory of each run from now on (see [`Memory::loads`]).
    pub(super) fn log_loads(&mut self) {
        self.loads = Some(RefCell::default());
    }

    /// Forgets the loads logged.
    pub(super) fn clear_loads(&mut self) {
        if let Some(loads) = &mut self.loads {
            loads.get_mut().clear();
        }
    }

    /// The loads of 1, 2, 4 or 8 bytes nothing stored to (nor pinned) the run made before any
    /// call not run, each with the value it read (the first of each address and width), at
    /// most [`LOADS_LOGGED`].
    pub(super) fn loads(&self) -> Vec<Pin> {
        self.loads
            .as_ref()
            .map_or_else(Vec::new, |loads| loads.borrow().clone())
    }

    /// Bytes the stored words take, about.
    pub(super) fn stored_bytes(&self) -> usize {
        self.words.len() * std::mem::size_of::<(u64, Word)>()
    }

    /// Forgets every store; unwritten bytes read as `fill` makes them from now on.
    pub(super) fn reset(&mut self, fill: Fill) {
        self.fill = fill;
        self.fresh = true;
        self.words.clear();
    }

    /// What a call of a function that is not run leaves: it may have written anything, so
    /// every byte reads anew, as the fill makes it after `call` (the calls so far), the same
    /// on both sides: from a seed derived from the last and `call`, or the fill's byte.
    pub(super) fn clobber(&mut self, call: u64) {
        if let Fill::Hashed(seed) = &mut self.fill {
            *seed = mix(*seed ^ call.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        self.fresh = false;
        self.words.clear();
    }

    /// Fills `dst` as unwritten bytes read, `tag` (and each byte's place) in the place of an
    /// address.
    pub(super) fn fill(&self, tag: u64, dst: &mut [u8]) {
        for (i, chunk) in dst.chunks_mut(8).enumerate() {
            let word = self.unwritten_from(mix(tag ^ i as u64));
            chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
        }
    }

    /// The bytes at `address..address + dst.len()` (addresses wrap).
    pub(super) fn read(&self, address: u64, dst: &mut [u8]) {
        let mut unwritten = true;
        for (i, byte) in dst.iter_mut().enumerate() {
            let at = address.wrapping_add(i as u64);
            let (word, lane) = (at & !7, (at & 7) as usize);
            let stored = |w: Option<&Word>| w.filter(|w| w.stored & (1 << lane) != 0).copied();
            let pinned = || match self.fresh && !self.pins.is_empty() {
                true => self.pins.iter().find_map(|p| p.byte_at(at)),
                false => None,
            };
            *byte = match stored(self.words.get(&word)).or_else(|| stored(self.data.get(&word))) {
                Some(w) => {
                    unwritten = false;
                    w.bytes[lane]
                }
                None => pinned()
                    .inspect(|_| unwritten = false)
                    .unwrap_or_else(|| self.unwritten(word).to_le_bytes()[lane]),
            };
        }
        if unwritten && self.fresh && self.loads.is_some() {
            self.log_load(address, dst);
        }
    }

    /// Logs a load of unwritten `bytes` at `address`, if loads are logged and it is a word.
    fn log_load(&self, address: u64, bytes: &[u8]) {
        let Some(loads) = &self.loads else {
            return;
        };
        if !matches!(bytes.len(), 1 | 2 | 4 | 8) {
            return;
        }
        let mut loads = loads.borrow_mut();
        let width = bytes.len() as u8;
        if loads.len() >= LOADS_LOGGED
            || loads
                .iter()
                .any(|l| l.address == address && l.width == width)
        {
            return;
        }
        let mut value = [0u8; 8];
        value[..bytes.len()].copy_from_slice(bytes);
        loads.push(Pin {
            address,
            value: u64::from_le_bytes(value),
            width,
        });
    }

    /// Stores `src` at `address` (addresses wrap).
    pub(super) fn write(&mut self, address: u64, src: &[u8]) {
        put(&mut self.words, address, src);
    }

    /// Defines read-only data `bytes` at `address`, for every run from now on.
    pub(super) fn define(&mut self, address: u64, bytes: &[u8]) {
        put(&mut self.data, address, bytes);
    }

    /// The value of the aligned word at `word` nothing stored to.
    fn unwritten(&self, word: u64) -> u64 {
        self.unwritten_from(mix(word))
    }

    /// The value of a word nothing stored to, `place` a hash of where it is.
    fn unwritten_from(&self, place: u64) -> u64 {
        match self.fill {
            Fill::Hashed(seed) => small_mostly(mix(seed ^ place)),
            Fill::Byte(byte) => u64::from_le_bytes([byte; 8]),
        }
    }
}

/// Writes `src` at `address` into `words` (addresses wrap).
fn put(words: &mut FxHashMap<u64, Word>, address: u64, src: &[u8]) {
    for (i, &byte) in src.iter().enumerate() {
        let at = address.wrapping_add(i as u64);
        let (word, lane) = (at & !7, (at & 7) as usize);
        let w = words.entry(word).or_default();
        w.bytes[lane] = byte;
        w.stored |= 1 << lane;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_bytes_depend_on_the_address_and_seed_only() {
        let mut a = Memory::default();
        let mut b = Memory::default();
        a.reset(Fill::Hashed(7));
        b.reset(Fill::Hashed(7));
        b.write(0x1000, &[1, 2, 3]);
        let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
        a.read(0x2000, &mut x);
        b.read(0x2000, &mut y);
        assert_eq!(x, y);
        // Another width reads the same bytes.
        let mut four = [0u8; 4];
        a.read(0x2004, &mut four);
        assert_eq!(four, x[4..8]);
        b.reset(Fill::Hashed(8));
        let mut z = [0u8; 64];
        let mut w = [0u8; 64];
        a.read(0x3000, &mut z);
        b.read(0x3000, &mut w);
        assert_ne!(z, w, "another seed, other bytes");
    }

    #[test]
    fn a_byte_fill_reads_as_its_byte_everywhere_even_after_a_call_not_run() {
        let mut m = Memory::default();
        m.reset(Fill::Byte(0xff));
        m.write(0x1000, &[1, 2]);
        let mut read = [0u8; 4];
        m.read(0x0fff, &mut read);
        assert_eq!(read, [0xff, 1, 2, 0xff]);
        m.clobber(1);
        m.read(0x0fff, &mut read);
        assert_eq!(read, [0xff; 4], "a call not run may have written anything");
        let mut slot = [0u8; 12];
        m.fill(7, &mut slot);
        assert_eq!(
            slot, [0xff; 12],
            "an escaped stack slot reads as memory does"
        );
        let image = m.image();
        m.reset(Fill::Byte(0x00));
        assert!(!m.is(&image), "another fill is another state");
    }

    #[test]
    fn stored_bytes_read_back_across_words() {
        let mut m = Memory::default();
        m.reset(Fill::Hashed(1));
        m.write(0x1006, &[9, 8, 7, 6]);
        let mut back = [0u8; 4];
        m.read(0x1006, &mut back);
        assert_eq!(back, [9, 8, 7, 6]);
        m.write(u64::MAX, &[5, 4]);
        let mut wrapped = [0u8; 2];
        m.read(u64::MAX, &mut wrapped);
        assert_eq!(wrapped, [5, 4]);
    }
}
