//! The arguments of each run: edge values first, then pseudo-random ones from a seed, so that
//! the whole check is deterministic; and the hashing that the imports' results come from.
//!
//! Random numbers rarely take the other side of `icmp eq v0, 1234` or reach the fifth entry of
//! a `br_table`: a share of the random arguments are *steering values* instead, the constants
//! the function tests its parameters for equality with, and the indices it switches over.

use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    ArgumentPurpose, Function, InstructionData, Opcode, Type, Value, ValueDef, types,
};
use std::collections::BTreeSet;

/// Steering values kept per function at most.
const MAX_STEERING: usize = 64;

/// The integer constants `func` tests one of its parameters for equality with, and the indices of a `br_table` over a parameter (every entry and the first one
/// past them): in increasing order, at most [`MAX_STEERING`]. Only what random numbers miss:
/// both sides of `v0 < 1000` are taken by small and by random arguments, one side of
/// `v0 == 1234` only by 1234. Only tests of parameters (or their extensions, truncations and
/// masks): a loop's bound compared with its counter says nothing of the arguments, and as one
/// it makes loops run out of fuel (ordered comparisons as well: lengths as large as the
/// bounds a function checks them against).
pub(super) fn steering_values(func: &Function) -> Vec<i128> {
    let mut found = BTreeSet::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            match func.dfg.insts[inst] {
                InstructionData::IntCompare {
                    args,
                    cond: IntCC::Equal | IntCC::NotEqual,
                    ..
                } => {
                    for (c, other) in [(args[0], args[1]), (args[1], args[0])] {
                        if let Some(c) = constant(func, c)
                            && is_from_parameter(func, other, 3)
                        {
                            found.insert(c);
                        }
                    }
                }
                InstructionData::BranchTable { arg, table, .. }
                    if is_from_parameter(func, arg, 3) =>
                {
                    let len = func.dfg.jump_tables[table].as_slice().len();
                    found.extend(0..=len.min(MAX_STEERING) as i128);
                }
                _ => {}
            }
        }
    }
    found.into_iter().take(MAX_STEERING).collect()
}

/// The integer constant `v` is, when it is one.
fn constant(func: &Function, v: Value) -> Option<i128> {
    let ValueDef::Result(inst, _) = func.dfg.value_def(func.dfg.resolve_aliases(v)) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(i128::from(imm.bits())),
        _ => None,
    }
}

/// Whether `v` is a parameter of `func`, or (up to `depth` steps) an extension, truncation or
/// mask of one.
fn is_from_parameter(func: &Function, v: Value, depth: u32) -> bool {
    match func.dfg.value_def(func.dfg.resolve_aliases(v)) {
        ValueDef::Param(block, _) => Some(block) == func.layout.entry_block(),
        ValueDef::Result(inst, _) if depth > 0 => {
            matches!(
                func.dfg.insts[inst].opcode(),
                Opcode::Uextend | Opcode::Sextend | Opcode::Ireduce | Opcode::Band
            ) && func
                .dfg
                .inst_args(inst)
                .iter()
                .any(|&a| is_from_parameter(func, a, depth - 1))
        }
        _ => false,
    }
}

/// A value of type `ty` made of `lo` (and `hi` for 128 bits).
pub(super) fn value_of_bits(ty: Type, lo: u64, hi: u64) -> Option<DataValue> {
    Some(match ty {
        types::I8 => DataValue::I8(lo as i8),
        types::I16 => DataValue::I16(lo as i16),
        types::I32 => DataValue::I32(lo as i32),
        types::I64 => DataValue::I64(lo as i64),
        types::I128 => DataValue::I128(((u128::from(hi) << 64) | u128::from(lo)) as i128),
        types::F32 => DataValue::F32(Ieee32::with_bits(lo as u32)),
        types::F64 => DataValue::F64(Ieee64::with_bits(lo)),
        // A vector of up to 128 bits: its lanes are the low bits, in memory order.
        ty if ty.is_vector() && ty.bits() <= 128 => {
            let bytes = ((u128::from(hi) << 64) | u128::from(lo)).to_le_bytes();
            DataValue::read_from_slice_le(&bytes, ty)
        }
        _ => return None,
    })
}

/// The vector of type `ty` whose every lane is `lane` (a value of `ty`'s lane type).
fn splat(ty: Type, lane: &DataValue) -> DataValue {
    let lane_bytes = ty.lane_type().bytes() as usize;
    let mut bytes = [0u8; 16];
    for at in (0..ty.bytes() as usize).step_by(lane_bytes) {
        lane.write_to_slice_le(&mut bytes[at..at + lane_bytes]);
    }
    DataValue::read_from_slice_le(&bytes, ty)
}

/// The runs on edge values of every parameter (see [`arguments`]): 0, 1, -1, MIN, MAX, NaN/2.
pub(super) const EDGE_RUNS: usize = 6;

/// Arguments of run number `run`: the first six tuples are edge values for every parameter (0,
/// 1, -1, MIN, MAX, NaN/2), parameter `k` of run `r` the edge value `(r + k) mod 6`: were they
/// the same for every parameter, two parameters of one type would be equal in each of them,
/// and a merge that returns or passes one for the other would go unseen. Then each parameter
/// is an edge value, a small number, one of the function's `steering` values (integers), or
/// random bits; only small non-negative numbers when `small`.
pub(super) fn arguments(
    types: &[Type],
    run: usize,
    small: bool,
    steering: &[i128],
    rng: &mut Rng,
) -> Vec<DataValue> {
    types
        .iter()
        .enumerate()
        .map(|(k, &ty)| {
            let edges = edge_values(ty);
            if run < EDGE_RUNS && !small {
                return edges[(run + k) % EDGE_RUNS].clone();
            }
            let pick = if small { 4 } else { rng.next() % 10 };
            match pick {
                0..=2 => edges[(rng.next() % edges.len() as u64) as usize].clone(),
                3..=5 => {
                    let small = if small {
                        (rng.next() % 17) as i64
                    } else {
                        (rng.next() % 33) as i64 - 16
                    };
                    let lane = ty.lane_type();
                    let value = if lane.is_float() {
                        float_of(lane, small as f64)
                    } else {
                        value_of_bits(lane, small as u64, if small < 0 { u64::MAX } else { 0 })
                            .expect("a scalar type")
                    };
                    if ty.is_vector() {
                        splat(ty, &value)
                    } else {
                        value
                    }
                }
                6..=7 if ty.is_int() && !steering.is_empty() => {
                    // As many draws as random bits take: the arguments after it are the same
                    // as without steering values.
                    let (pick, _) = (rng.next(), rng.next());
                    let x = steering[(pick % steering.len() as u64) as usize] as u128;
                    value_of_bits(ty, x as u64, (x >> 64) as u64).expect("an integer type")
                }
                _ => {
                    let (lo, hi) = (rng.next(), rng.next());
                    value_of_bits(ty, lo, hi).expect("a scalar type")
                }
            }
        })
        .collect()
}

/// The parameters of `func` that are a context pointer (`vmctx`).
pub(super) fn context_parameters(func: &Function) -> Vec<bool> {
    (func.signature.params.iter())
        .map(|p| p.purpose == ArgumentPurpose::VMContext)
        .collect()
}

/// `args` with each argument of a context parameter (`contexts`, by index) made a multiple of
/// [`CONTEXT_ALIGNMENT`]. A `vmctx` is the address of a structure whose fields the code loads
/// as `aligned` words (a heap's base, the stack pointer's global): at an odd address each such
/// load reads across two lazily filled words, and the top byte of a pointer read that way is
/// another word's low byte (a heap base of `0x0c00_0000_0000_0000`), so that the first heap
/// access traps. No caller passes such a context; other values of it are other contexts.
pub(super) fn with_aligned_contexts(contexts: &[bool], mut args: Vec<DataValue>) -> Vec<DataValue> {
    for (arg, _) in args.iter_mut().zip(contexts).filter(|(_, c)| **c) {
        *arg = match *arg {
            DataValue::I64(x) => DataValue::I64(x & !(CONTEXT_ALIGNMENT - 1)),
            DataValue::I32(x) => DataValue::I32(x & !(CONTEXT_ALIGNMENT as i32 - 1)),
            ref other => other.clone(),
        };
    }
    args
}

/// What a context argument is a multiple of.
const CONTEXT_ALIGNMENT: i64 = 16;

fn float_of(ty: Type, x: f64) -> DataValue {
    if ty == types::F32 {
        DataValue::F32(Ieee32::with_float(x as f32))
    } else {
        DataValue::F64(Ieee64::with_float(x))
    }
}

/// 0, 1, -1, MIN, MAX, then NaN (floats) or 2, then more for floats; a vector's are its lane
/// type's, in every lane.
fn edge_values(ty: Type) -> Vec<DataValue> {
    if ty.is_vector() {
        edge_values(ty.lane_type())
            .iter()
            .map(|lane| splat(ty, lane))
            .collect()
    } else if ty.is_float() {
        let mut v: Vec<DataValue> = [0.0, 1.0, -1.0, f64::MIN, f64::MAX, f64::NAN]
            .iter()
            .map(|&x| float_of(ty, x))
            .collect();
        if ty == types::F32 {
            v[3] = DataValue::F32(Ieee32::with_float(f32::MIN));
            v[4] = DataValue::F32(Ieee32::with_float(f32::MAX));
        }
        v.extend(
            [-0.0, f64::INFINITY, f64::NEG_INFINITY, 0.5]
                .iter()
                .map(|&x| float_of(ty, x)),
        );
        v
    } else {
        // Arithmetic shifts, which do not overflow at 128 bits.
        let unused = 128 - ty.bits();
        let (min, max) = (i128::MIN >> unused, i128::MAX >> unused);
        [0, 1, -1, min, max, 2]
            .iter()
            .map(|&x| {
                let x = x as u128;
                value_of_bits(ty, x as u64, (x >> 64) as u64).expect("an integer type")
            })
            .collect()
    }
}

/// splitmix64.
#[derive(Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
}

/// A value made from the hash `h`: one in eight is `h` itself (all bits random), one in four
/// zero, the others a small number (0 to 16). For what a run reads from memory and what
/// functions not run return: real code uses them as lengths, counts and pointers, and random
/// ones would make most loops run out of fuel. Zero is what real code most often tests such a
/// value against (a call's `Ok`, a null pointer, an empty length): one draw in seventeen would
/// keep most runs from the paths past such tests.
pub(super) fn small_mostly(h: u64) -> u64 {
    match h & 7 {
        0 => h,
        1 | 2 => 0,
        _ => (h >> 32) % 17,
    }
}

pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
