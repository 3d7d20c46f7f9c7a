//! Guided arguments: a small deterministic search for arguments that take the sides of branches
//! and conditional traps no run of a function took yet.
//!
//! The original side of every run records, at each `brif`, `br_table`, `trapz` and `trapnz` it
//! executes, the side it took and the values the decision was made on: the two operands of the
//! `icmp`, `icmp_imm` or `fcmp` the condition is (a float as its bits), else the condition and
//! zero; a `br_table`'s index. Every `icmp` and `fcmp` is a decision of its own too (equal or
//! not, on its operands): a comparison's result may be returned or stored rather than branched
//! on.
//! After the run, for each such decision with a side no run took yet, an argument of the run
//! that *is* one of the operands (its low bits equal it, up to a small difference, as a
//! parameter minus one or a truncated parameter is) is replaced by the other operand (and its
//! neighbours, for ordered comparisons), the difference kept; a `br_table`'s index by the index
//! of the side missed. Those new tuples are queued, and some of the function's runs take them
//! instead of random ones (`check_function`). This is input-to-state correspondence, as
//! Redqueen does it: a constant a parameter is compared with after a few steps of arithmetic,
//! a value another function computed, reach the other side without random luck.

use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode, Type, Value, ValueDef};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// A side of a decision: the function (by address), the instruction, the side (0 or 1 for
/// `brif` and traps, the entry for `br_table`, its length for the default).
type Side = (usize, Inst, u32);

/// Operand pairs kept per decision and run.
const PAIRS_PER_DECISION: usize = 4;
/// Decisions a run records with their operands at most (a loop's decisions repeat).
const DECISIONS_PER_RUN: usize = 256;
/// Tuples queued at most.
const QUEUED: usize = 64;
/// How far an argument may be from the operand it became (`v0 - 1`, `v0 + 8`).
const NEAR: i128 = 8;

/// One decision a run made, with the operands it was made on.
struct Decision {
    func: usize,
    inst: Inst,
    /// The sides it has (2, or a `br_table`'s entries and its default).
    sides: u32,
    /// Whether it is a `br_table` (its pairs are the index and nothing).
    table: bool,
    /// The operands seen, as signed numbers, with their width in bits.
    pairs: Vec<(i128, i128, u32)>,
}

/// What the original side of one run recorded.
#[derive(Default)]
pub(super) struct Trace {
    taken: Vec<Side>,
    taken_set: FxHashSet<Side>,
    decisions: Vec<Decision>,
    /// Where each decision is in `decisions`.
    decision_at: FxHashMap<(usize, Inst), usize>,
}

impl Trace {
    /// Forgets the last run.
    pub(super) fn clear(&mut self) {
        self.taken.clear();
        self.taken_set.clear();
        self.decisions.clear();
        self.decision_at.clear();
    }

    /// Records the decision `inst` of `func` (when it is one) before it runs; `get` reads a
    /// value of the current frame.
    pub(super) fn record(&mut self, func: &Function, inst: Inst, get: impl Fn(Value) -> DataValue) {
        let (side, sides, table, pair) = match func.dfg.insts[inst] {
            InstructionData::Brif { arg, .. } => {
                let c = get(arg);
                (
                    u32::from(is_zero(&c)),
                    2,
                    false,
                    operands(func, arg, c, &get),
                )
            }
            InstructionData::CondTrap { opcode, arg, .. } => {
                let c = get(arg);
                let traps = is_zero(&c) == (opcode == Opcode::Trapz);
                (u32::from(traps), 2, false, operands(func, arg, c, &get))
            }
            InstructionData::BranchTable { arg, table, .. } => {
                let len = func.dfg.jump_tables[table].as_slice().len() as u32;
                let index = get(arg);
                let Some((i, width)) = signed(&index) else {
                    return;
                };
                let unsigned = (i as u128) & mask(width);
                let side = u32::try_from(unsigned).map_or(len, |u| u.min(len));
                (side, len + 1, true, Some((i, 0, width)))
            }
            // A comparison whose result is no branch's condition (a value returned, stored,
            // selected on) decides too: its sides are "equal" and "not equal", and the
            // neighbours an aimed tuple also tries take an ordered one's both ways.
            InstructionData::IntCompare { args, .. }
            | InstructionData::FloatCompare { args, .. } => {
                let (a, b) = (get(args[0]), get(args[1]));
                let (Some((a, width)), Some((b, _))) = (signed(&a), signed(&b)) else {
                    return;
                };
                (u32::from(a != b), 2, false, Some((a, b, width)))
            }
            _ => return,
        };
        let func_id = func as *const Function as usize;
        if self.taken_set.insert((func_id, inst, side)) {
            self.taken.push((func_id, inst, side));
        }
        let Some(pair) = pair else {
            return;
        };
        match self.decision_at.get(&(func_id, inst)) {
            Some(&at) => {
                let d = &mut self.decisions[at];
                if d.pairs.len() < PAIRS_PER_DECISION && !d.pairs.contains(&pair) {
                    d.pairs.push(pair);
                }
            }
            None if self.decisions.len() < DECISIONS_PER_RUN => {
                self.decision_at
                    .insert((func_id, inst), self.decisions.len());
                self.decisions.push(Decision {
                    func: func_id,
                    inst,
                    sides,
                    table,
                    pairs: vec![pair],
                });
            }
            None => {}
        }
    }
}

/// The two values a condition was decided on: an `icmp`'s operands, else the condition and
/// zero; None when they are not integers of at most 128 bits.
fn operands(
    func: &Function,
    cond: Value,
    c: DataValue,
    get: &impl Fn(Value) -> DataValue,
) -> Option<(i128, i128, u32)> {
    let def = func.dfg.value_def(func.dfg.resolve_aliases(cond));
    let compared = match def {
        ValueDef::Result(inst, _) => match func.dfg.insts[inst] {
            InstructionData::IntCompare { args, .. }
            | InstructionData::FloatCompare { args, .. } => Some((get(args[0]), get(args[1]))),
            _ => None,
        },
        _ => None,
    };
    let (a, b) = compared.unwrap_or_else(|| {
        let zero = DataValue::from_integer(0, c.ty()).unwrap_or(DataValue::I8(0));
        (c, zero)
    });
    let ((a, width), (b, _)) = (signed(&a)?, signed(&b)?);
    Some((a, b, width))
}

/// The search over one function's runs: the sides taken so far, the tuples tried, the tuples
/// queued (each with the side it aims at).
#[derive(Default)]
pub(super) struct Search {
    covered: FxHashSet<Side>,
    tried: FxHashSet<Vec<u128>>,
    /// Each tuple with the side it aims at; None for a tuple beside the operand (an ordered
    /// comparison's boundary), run even when another tuple took that side first.
    queue: VecDeque<(Option<Side>, Vec<DataValue>)>,
}

impl Search {
    /// Takes in a run of the original on `args` and what it recorded: its sides count as
    /// covered, and tuples aimed at the sides its decisions missed are queued.
    pub(super) fn absorb(&mut self, args: &[DataValue], trace: &Trace) {
        self.tried.insert(key(args));
        self.covered.extend(trace.taken.iter().copied());
        for d in &trace.decisions {
            for side in 0..d.sides {
                let aim = (d.func, d.inst, side);
                if self.covered.contains(&aim) {
                    continue;
                }
                for &(a, b, width) in &d.pairs {
                    let targets = if d.table {
                        vec![(a, i128::from(side))]
                    } else {
                        vec![(a, b), (b, a)]
                    };
                    for (from, to) in targets {
                        self.aim(aim, args, from, to, width, d.table);
                    }
                }
            }
        }
    }

    /// Queues `args` with each integer argument that is `from` (in its low `width` bits, up to
    /// [`NEAR`]) made `to` (and, for a comparison, its neighbours), the difference kept. When no
    /// argument is that near, each argument is shifted by `to - from` instead, as if the
    /// operand were the argument plus a constant (`x + 1000`, `x + 1.0`), and a float argument
    /// is also made `to` itself, converted (`fpromote(x) == c`).
    fn aim(
        &mut self,
        aim: Side,
        args: &[DataValue],
        from: i128,
        to: i128,
        width: u32,
        table: bool,
    ) {
        let nudges: &[i128] = if table { &[0] } else { &[0, 1, -1] };
        let mut near = false;
        for (k, arg) in args.iter().enumerate() {
            let Some((x, arg_width)) = signed(arg) else {
                continue;
            };
            let w = width.min(arg_width);
            let m = mask(w);
            let diff = sign_extend(((x as u128).wrapping_sub(from as u128)) & m, w);
            if diff.abs() > NEAR {
                continue;
            }
            near = true;
            for &nudge in nudges {
                let low = (to.wrapping_add(nudge).wrapping_add(diff) as u128) & m;
                let new = ((x as u128) & !m) | low;
                self.queue_with(aim, nudge, args, k, of_bits(arg.ty(), new));
            }
        }
        if near || table {
            return;
        }
        for (k, arg) in args.iter().enumerate() {
            for (nudge, value) in shifted(arg, from, to, width) {
                self.queue_with(aim, nudge, args, k, value);
            }
        }
    }

    /// Queues `args` with argument `k` made `value` (when there is one), aimed at `aim`, or
    /// beside it for a `nudge`.
    fn queue_with(
        &mut self,
        aim: Side,
        nudge: i128,
        args: &[DataValue],
        k: usize,
        value: Option<DataValue>,
    ) {
        let Some(value) = value else {
            return;
        };
        let mut tuple = args.to_vec();
        tuple[k] = value;
        if self.queue.len() < QUEUED && self.tried.insert(key(&tuple)) {
            self.queue.push_back(((nudge == 0).then_some(aim), tuple));
        }
    }

    /// The next queued tuple whose side is still not covered.
    pub(super) fn next(&mut self) -> Option<Vec<DataValue>> {
        while let Some((aim, tuple)) = self.queue.pop_front() {
            if aim.is_none_or(|aim| !self.covered.contains(&aim)) {
                return Some(tuple);
            }
        }
        None
    }
}

/// `arg` moved as an operand `from` would move to `to` if it were `arg` plus a constant, with
/// its neighbours (each with its nudge): an integer shifted by `to - from` in its width; a float
/// shifted by the difference of the operands read as floats of `width` bits, and made `to`
/// itself converted to its type.
fn shifted(arg: &DataValue, from: i128, to: i128, width: u32) -> Vec<(i128, Option<DataValue>)> {
    let Some((x, arg_width)) = signed(arg) else {
        return Vec::new();
    };
    if arg.ty().is_int() {
        let m = mask(arg_width);
        return [0, 1, -1]
            .into_iter()
            .map(|nudge| {
                let new = (x.wrapping_add(to - from).wrapping_add(nudge) as u128) & m;
                (nudge, of_bits(arg.ty(), new))
            })
            .collect();
    }
    let as_float = |bits: i128| match width {
        32 => Some(f64::from(f32::from_bits(bits as u32))),
        64 => Some(f64::from_bits(bits as u64)),
        _ => None,
    };
    let (Some(from), Some(to)) = (as_float(from), as_float(to)) else {
        return Vec::new();
    };
    let x = match *arg {
        DataValue::F32(v) => f64::from(f32::from_bits(v.bits())),
        DataValue::F64(v) => f64::from_bits(v.bits()),
        _ => return Vec::new(),
    };
    let float = |f: f64| -> Option<(i128, u32)> {
        match arg.ty().bits() {
            32 => Some((i128::from((f as f32).to_bits() as i32), 32)),
            64 => Some((i128::from(f.to_bits() as i64), 64)),
            _ => None,
        }
    };
    let mut found = Vec::new();
    for target in [to, x + (to - from)] {
        let Some((bits, w)) = float(target) else {
            continue;
        };
        for nudge in [0, 1, -1] {
            let new = (bits.wrapping_add(nudge) as u128) & mask(w);
            found.push((nudge, of_bits(arg.ty(), new)));
        }
    }
    found
}

/// A tuple's bits, to tell tuples tried apart.
fn key(args: &[DataValue]) -> Vec<u128> {
    args.iter()
        .map(|a| {
            let mut bytes = [0u8; 16];
            let n = (a.ty().bytes() as usize).min(16);
            a.write_to_slice_le(&mut bytes[..n]);
            u128::from_le_bytes(bytes)
                ^ u128::from(a.ty().bits()) << 120
                ^ u128::from(a.ty().is_float()) << 127
        })
        .collect()
}

fn is_zero(v: &DataValue) -> bool {
    signed(v).is_some_and(|(x, _)| x == 0)
}

/// An integer as a signed number, with its width; a float as its bits, so that a float
/// compared with a constant is aimed at the constant's bits (and, nudged by one, at the floats
/// beside it).
fn signed(v: &DataValue) -> Option<(i128, u32)> {
    Some(match *v {
        DataValue::I8(x) => (i128::from(x), 8),
        DataValue::I16(x) => (i128::from(x), 16),
        DataValue::I32(x) => (i128::from(x), 32),
        DataValue::I64(x) => (i128::from(x), 64),
        DataValue::I128(x) => (x, 128),
        DataValue::F32(x) => (i128::from(x.bits() as i32), 32),
        DataValue::F64(x) => (i128::from(x.bits() as i64), 64),
        _ => return None,
    })
}

fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

fn sign_extend(x: u128, width: u32) -> i128 {
    let unused = 128 - width.min(128);
    ((x << unused) as i128) >> unused
}

/// The integer or float of type `ty` with these low bits.
fn of_bits(ty: Type, bits: u128) -> Option<DataValue> {
    super::inputs::value_of_bits(ty, bits as u64, (bits >> 64) as u64)
        .filter(|_| ty.is_int() || ty.is_float())
}
