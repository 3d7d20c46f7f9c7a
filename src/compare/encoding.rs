//! The stable encoding of fingerprint tokens: numbers that mean the same on every machine, in
//! every build and with every Cranelift version that keeps the names, so that fingerprints (and
//! their hashes) can be compared across separately compiled units.
//!
//! Cranelift's own numbers are not stable: `Type` and `Opcode` are numbered by generated code,
//! and condition codes and atomic operations by declaration order. Tokens use instead:
//!
//! | entity | token |
//! |---|---|
//! | type | `kind | log2(lane bits) << 4 | log2(lanes) << 8 | dynamic << 12`; kind 1 integer, 2 float, 0 invalid; lanes are the minimum lanes of a dynamic vector |
//! | opcode, condition code, atomic operation, relocation kind | the 32-bit FNV-1a hash of its CLIF name (`iadd`, `slt`, `xchg`) or, for relocations, its Rust name (`X86CallPLTRel4`); no two names of one kind share a hash (a unit test checks every opcode, condition and operation) |
//! | calling convention, stack slot kind, argument purpose and extension | a fixed table in `walk.rs` |
//! | everything else | the value itself: immediates, offsets, sizes, bytes four to a little-endian token |
//!
//! [`ENCODING_VERSION`] changes whenever any of this does, or the walk writes a field it did not
//! (or in another place): a fingerprint or hash from another version means nothing.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{AtomicRmwOp, Opcode, Type};
use std::sync::LazyLock;

/// The version of the token encoding and of the walk that writes it.
pub const ENCODING_VERSION: u32 = 2;

/// The 32-bit FNV-1a hash of `bytes`.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Types whose Cranelift number is below this are looked up in a table (filled from every lane
/// type and lane count); any other type is encoded when it is met.
const TYPE_TABLE_SIZE: usize = 0x400;

/// Marks a table entry that no type of the table fills.
const NOT_IN_TABLE: u32 = u32::MAX;

static TYPE_NUMBERS: LazyLock<Box<[u32]>> = LazyLock::new(|| {
    use cranelift_codegen::ir::types::*;
    let mut table = vec![NOT_IN_TABLE; TYPE_TABLE_SIZE];
    for ty in all_types() {
        if let Some(slot) = table.get_mut(ty.index()) {
            *slot = encode_type(ty);
        }
    }
    table[INVALID.index()] = 0;
    table.into_boxed_slice()
});

/// Every lane type in every lane count, fixed and dynamic.
fn all_types() -> Vec<Type> {
    use cranelift_codegen::ir::types::*;
    let mut types = Vec::new();
    for lane in [I8, I16, I32, I64, I128, F16, F32, F64, F128] {
        let mut ty = Some(lane);
        while let Some(t) = ty {
            types.push(t);
            if t.is_vector() {
                types.extend(t.vector_to_dynamic());
            }
            ty = t.by(2);
        }
    }
    types
}

/// The lookup tables, for a hot loop to hold (a table behind a `LazyLock` is checked for
/// initialization at every use).
#[derive(Clone, Copy, Debug)]
pub struct Tables {
    types: &'static [u32],
    opcodes: &'static [u32],
    int_ccs: &'static [u32],
    float_ccs: &'static [u32],
    atomic_ops: &'static [u32],
}

impl Tables {
    /// The tables, built on first use.
    pub fn get() -> Tables {
        Tables {
            types: &TYPE_NUMBERS,
            opcodes: &OPCODE_NUMBERS,
            int_ccs: &INT_CC_NUMBERS,
            float_ccs: &FLOAT_CC_NUMBERS,
            atomic_ops: &ATOMIC_RMW_NUMBERS,
        }
    }

    /// [`type_number`].
    #[inline]
    pub fn type_number(self, ty: Type) -> u32 {
        match self.types.get(ty.index()) {
            Some(&n) if n != NOT_IN_TABLE => n,
            _ => encode_type(ty),
        }
    }

    /// [`opcode_number`].
    #[inline]
    pub fn opcode_number(self, op: Opcode) -> u32 {
        self.opcodes[op as usize]
    }

    /// [`int_cc_number`].
    #[inline]
    pub fn int_cc_number(self, cc: IntCC) -> u32 {
        self.int_ccs[cc as usize]
    }

    /// [`float_cc_number`].
    #[inline]
    pub fn float_cc_number(self, cc: FloatCC) -> u32 {
        self.float_ccs[cc as usize]
    }

    /// [`atomic_rmw_number`].
    #[inline]
    pub fn atomic_rmw_number(self, op: AtomicRmwOp) -> u32 {
        self.atomic_ops[op as usize]
    }
}

fn encode_type(ty: Type) -> u32 {
    if ty.is_invalid() {
        return 0;
    }
    let lane = ty.lane_type();
    let kind = if lane.is_int() {
        1
    } else if lane.is_float() {
        2
    } else {
        3
    };
    let dynamic = u32::from(ty.is_dynamic_vector());
    kind | lane.log2_lane_bits() << 4 | ty.log2_min_lane_count() << 8 | dynamic << 12
}

/// A table from each value of a fieldless enum (by `as usize`) to the hash of its name.
fn name_table<T: Copy + std::fmt::Display>(all: &[T], index: impl Fn(T) -> usize) -> Box<[u32]> {
    let mut table = vec![0; all.iter().map(|&t| index(t) + 1).max().unwrap_or(0)];
    for &t in all {
        table[index(t)] = fnv1a32(t.to_string().as_bytes());
    }
    table.into_boxed_slice()
}

static OPCODE_NUMBERS: LazyLock<Box<[u32]>> =
    LazyLock::new(|| name_table(Opcode::all(), |op| op as usize));
static INT_CC_NUMBERS: LazyLock<Box<[u32]>> =
    LazyLock::new(|| name_table(IntCC::all(), |cc| cc as usize));
static FLOAT_CC_NUMBERS: LazyLock<Box<[u32]>> =
    LazyLock::new(|| name_table(FloatCC::all(), |cc| cc as usize));
static ATOMIC_RMW_NUMBERS: LazyLock<Box<[u32]>> =
    LazyLock::new(|| name_table(AtomicRmwOp::all(), |op| op as usize));

/// A relocation kind's stable number.
#[cfg(feature = "object")]
pub fn reloc_number(kind: cranelift_codegen::binemit::Reloc) -> u32 {
    fnv1a32(format!("{kind:?}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn distinct(numbers: impl Iterator<Item = u32>) -> bool {
        let numbers: Vec<u32> = numbers.collect();
        numbers.iter().collect::<HashSet<_>>().len() == numbers.len()
    }

    #[test]
    fn names_hash_to_distinct_numbers() {
        assert!(distinct(
            Opcode::all()
                .iter()
                .map(|&op| Tables::get().opcode_number(op))
        ));
        assert!(distinct(
            IntCC::all()
                .iter()
                .map(|&cc| Tables::get().int_cc_number(cc))
        ));
        assert!(distinct(
            FloatCC::all()
                .iter()
                .map(|&cc| Tables::get().float_cc_number(cc))
        ));
        assert!(distinct(
            AtomicRmwOp::all()
                .iter()
                .map(|&op| Tables::get().atomic_rmw_number(op))
        ));
    }

    #[test]
    fn every_type_has_its_own_number_and_the_table_agrees() {
        let types = all_types();
        assert!(types.len() > 60, "{}", types.len());
        assert!(distinct(
            types.iter().map(|&t| Tables::get().type_number(t))
        ));
        for &t in &types {
            assert_eq!(Tables::get().type_number(t), encode_type(t), "{t}");
        }
    }

    /// The numbers are fixed by names: these are the values every build must write.
    #[test]
    fn numbers_are_the_documented_ones() {
        use cranelift_codegen::ir::types::*;
        assert_eq!(Tables::get().type_number(I32), 1 | 5 << 4);
        assert_eq!(Tables::get().type_number(F64X2), 2 | 6 << 4 | 1 << 8);
        assert_eq!(Tables::get().opcode_number(Opcode::Iadd), fnv1a32(b"iadd"));
        assert_eq!(
            Tables::get().int_cc_number(IntCC::SignedLessThan),
            fnv1a32(b"slt")
        );
        assert_eq!(
            Tables::get().float_cc_number(FloatCC::Unordered),
            fnv1a32(b"uno")
        );
        assert_eq!(
            Tables::get().atomic_rmw_number(AtomicRmwOp::Xchg),
            fnv1a32(b"xchg")
        );
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
    }
}
