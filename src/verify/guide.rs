//! Guided arguments: a small deterministic search for arguments that take the sides of branches
//! and conditional traps no run of a function took yet.
//!
//! The original side of every run records, at each `brif`, `br_table`, `trapz` and `trapnz` it
//! executes, the side it took and the values the decision was made on: the two operands of the
//! `icmp`, `icmp_imm` or `fcmp` the condition is (a float as its bits), else the condition and
//! zero; a `br_table`'s index. Every `icmp` and `fcmp` is a decision of its own too (equal or
//! not, on its operands): a comparison's result may be returned or stored rather than branched
//! on. A vector `icmp` or `fcmp` decides lane by lane (each lane equal or not), its lanes read
//! with the widths the IR gives them (the interpreter's vectors are all `i8x16`).
//! After the run, for each such decision with a side no run took yet, an argument of the run
//! that *is* one of the operands (its low bits equal it, up to a small difference, as a
//! parameter minus one or a truncated parameter is) is replaced by the other operand (and its
//! neighbours, for ordered comparisons), the difference kept; a `br_table`'s index by the index
//! of the side missed. A lane of a vector argument is such an argument of its own (a lane
//! taken out and compared), and a vector argument that is a vector operand, lane by lane, is
//! made the other operand as a whole: every lane equal at once is a side no one lane's decision
//! records, so such a tuple runs even when another took one lane's side first. Those new tuples
//! are queued, and some of the function's runs take them instead of random ones
//! (`check_function`). This is input-to-state correspondence, as Redqueen does it: a constant a
//! parameter is compared with after a few steps of arithmetic, a value another function
//! computed, reach the other side without random luck.

use super::memory::Pin;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode, Type, Value, ValueDef};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// A side of a decision: the function (by address), the instruction, the side (0 or 1 for
/// `brif` and traps, the entry for `br_table`, its length for the default, `2j` or `2j + 1` for
/// lane `j` of a comparison).
type Side = (usize, Inst, u32);

/// Operand pairs kept per decision and run.
const PAIRS_PER_DECISION: usize = 4;
/// Decisions a run records with their operands at most (a loop's decisions repeat).
const DECISIONS_PER_RUN: usize = 256;
/// Tuples queued at most.
const QUEUED: usize = 64;
/// How far an argument may be from the operand it became (`v0 - 1`, `v0 + 8`).
const NEAR: i128 = 8;
/// Words of memory a tuple pins at most.
const PINS_PER_TUPLE: usize = 4;

/// One decision a run made, with the operands it was made on.
struct Decision {
    func: usize,
    inst: Inst,
    /// The sides it has (2, or a `br_table`'s entries and its default, or two per lane of a
    /// vector comparison).
    sides: u32,
    /// Whether it is a `br_table` (its pairs are the index and nothing).
    table: bool,
    /// The operands seen.
    pairs: Vec<Pair>,
}

/// The two operands of a decision. A scalar is one lane: its value as a signed number (a float
/// as its bits). A vector's lanes are packed in `a` and `b` as their bits, lane 0 lowest, each
/// `width` bits wide.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Pair {
    a: i128,
    b: i128,
    /// The width of a lane in bits.
    width: u32,
    lanes: u32,
}

impl Pair {
    fn scalar(a: i128, b: i128, width: u32) -> Pair {
        Pair {
            a,
            b,
            width,
            lanes: 1,
        }
    }

    /// The pair with the operands swapped.
    fn swapped(self) -> Pair {
        Pair {
            a: self.b,
            b: self.a,
            ..self
        }
    }

    /// Lane `j` of `a` and of `b`, as signed numbers.
    fn lane(&self, j: u32) -> (i128, i128) {
        (
            lane_of(self.a, self.width, j),
            lane_of(self.b, self.width, j),
        )
    }
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
                (side, len + 1, true, Some(Pair::scalar(i, 0, width)))
            }
            // A comparison whose result is no branch's condition (a value returned, stored,
            // selected on) decides too: its sides are "equal" and "not equal", and the
            // neighbours an aimed tuple also tries take an ordered one's both ways.
            // A vector comparison decides lane by lane: lane `j` is sides `2j` (equal) and
            // `2j + 1`.
            InstructionData::IntCompare { args, .. }
            | InstructionData::FloatCompare { args, .. } => {
                let ty = func.dfg.value_type(args[0]);
                let Some(pair) = compared(&get(args[0]), &get(args[1]), ty) else {
                    return;
                };
                let func_id = func as *const Function as usize;
                for j in 0..pair.lanes {
                    let (a, b) = pair.lane(j);
                    self.take((func_id, inst, 2 * j + u32::from(a != b)));
                }
                self.keep(func_id, inst, 2 * pair.lanes, false, pair);
                return;
            }
            _ => return,
        };
        let func_id = func as *const Function as usize;
        self.take((func_id, inst, side));
        if let Some(pair) = pair {
            self.keep(func_id, inst, sides, table, pair);
        }
    }

    /// Records that the run took `side`.
    fn take(&mut self, side: Side) {
        if self.taken_set.insert(side) {
            self.taken.push(side);
        }
    }

    /// Keeps `pair` among the operands of the decision `inst` of the function `func_id`.
    fn keep(&mut self, func_id: usize, inst: Inst, sides: u32, table: bool, pair: Pair) {
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
) -> Option<Pair> {
    let def = func.dfg.value_def(func.dfg.resolve_aliases(cond));
    let comparison = match def {
        ValueDef::Result(inst, _) => match func.dfg.insts[inst] {
            InstructionData::IntCompare { args, .. }
            | InstructionData::FloatCompare { args, .. } => {
                Some((get(args[0]), get(args[1]), func.dfg.value_type(args[0])))
            }
            _ => None,
        },
        _ => None,
    };
    let (a, b, ty) = comparison.unwrap_or_else(|| {
        let zero = DataValue::from_integer(0, c.ty()).unwrap_or(DataValue::I8(0));
        let ty = c.ty();
        (c, zero, ty)
    });
    compared(&a, &b, ty)
}

/// How many sides `func`'s own decisions have, as [`Trace::record`] counts them: two for a
/// `brif`, a conditional trap and a scalar comparison, two per lane of a vector one, a
/// `br_table`'s entries and its default.
pub(super) fn sides_in(func: &Function) -> usize {
    let mut sides = 0;
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            sides += match func.dfg.insts[inst] {
                InstructionData::Brif { .. } | InstructionData::CondTrap { .. } => 2,
                InstructionData::BranchTable { table, .. } => {
                    func.dfg.jump_tables[table].as_slice().len() + 1
                }
                InstructionData::IntCompare { args, .. }
                | InstructionData::FloatCompare { args, .. } => {
                    2 * func.dfg.value_type(args[0]).lane_count() as usize
                }
                _ => 0,
            };
        }
    }
    sides
}

/// The operands of a comparison of values of type `ty` as a pair: scalars (integers, floats by
/// their bits), or vectors of those lanes; None for anything else.
fn compared(a: &DataValue, b: &DataValue, ty: Type) -> Option<Pair> {
    if let (Some((a, width)), Some((b, _))) = (signed(a), signed(b)) {
        return Some(Pair::scalar(a, b, width));
    }
    let lane = ty.lane_type();
    if !ty.is_vector() || !(lane.is_int() || lane.is_float()) {
        return None;
    }
    // The interpreter's vectors do not know their lanes (they are all `i8x16`): the IR does.
    let (a, bits) = vector_bits(a)?;
    let (b, _) = vector_bits(b).filter(|&(_, b_bits)| b_bits == bits)?;
    (bits == ty.bits()).then_some(Pair {
        a,
        b,
        width: lane.bits(),
        lanes: ty.lane_count(),
    })
}

/// The search over one function's runs: the sides taken so far, the tuples tried, the tuples
/// queued (each with the side it aims at).
#[derive(Default)]
pub(super) struct Search {
    covered: FxHashSet<Side>,
    tried: FxHashSet<Vec<u128>>,
    /// Each tuple with the side it aims at; None for a tuple beside the operand (an ordered
    /// comparison's boundary), run even when another tuple took that side first.
    queue: VecDeque<(Option<Side>, Guided)>,
    /// The pins of the run being absorbed, kept by the tuples made from it.
    pins: Vec<Pin>,
}

/// A guided run: arguments, and words of memory nothing stored to made to read a value.
#[derive(Clone, Default)]
pub(super) struct Guided {
    pub(super) args: Vec<DataValue>,
    pub(super) pins: Vec<Pin>,
}

impl Search {
    /// Takes in a run of the original on `args` with `pins`, what it recorded and the loads
    /// of unwritten memory it made: its sides count as covered, and tuples aimed at the sides
    /// its decisions missed are queued, first with arguments steered, then with loaded words.
    pub(super) fn absorb(
        &mut self,
        args: &[DataValue],
        pins: &[Pin],
        trace: &Trace,
        loads: &[Pin],
    ) {
        self.pins.clear();
        self.pins.extend_from_slice(pins);
        self.tried.insert(key(args, pins));
        self.covered.extend(trace.taken.iter().copied());
        self.steer_arguments(args, trace, loads);
        if self.pins.len() < PINS_PER_TUPLE {
            self.steer_loads(args, trace, loads);
        }
    }

    /// Queues, for each loaded word that *is* an operand of a decision with a side not
    /// covered (in the word's low bits), `args` with that word pinned to the other operand
    /// (and its neighbours): a tag loaded and compared with a constant (`p->kind == 17`)
    /// reaches the other side as an argument does. Only exact matches: hashed memory reads
    /// small numbers, near most operands. A `br_table`'s index is steered as
    /// [`Search::steer_table_loads`] says.
    fn steer_loads(&mut self, args: &[DataValue], trace: &Trace, loads: &[Pin]) {
        for d in &trace.decisions {
            for side in 0..d.sides {
                let aim = (d.func, d.inst, side);
                if self.covered.contains(&aim) {
                    continue;
                }
                if d.table {
                    self.steer_table_loads(aim, args, d, loads);
                    continue;
                }
                for pair in d.pairs.iter().filter(|p| p.lanes == 1) {
                    for (from, to) in [(pair.a, pair.b), (pair.b, pair.a)] {
                        for load in loads {
                            let w = pair.width.min(u32::from(load.width) * 8);
                            if self.queue.len() >= QUEUED {
                                return;
                            }
                            if (load.value as u128 ^ from as u128) & mask(w) != 0 {
                                continue;
                            }
                            for nudge in [0, 1, -1] {
                                let pin = pinned_low_bits(load, to.wrapping_add(nudge), w);
                                self.queue_pinned(aimed(aim, nudge), args, pin);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Queues, for a `br_table` side `aim` no run took, `args` with each loaded word that is
    /// the index up to a small difference (`br_table load(p) - 1`, Wasm's tables of cases
    /// numbered from one) pinned to the side's index plus that difference. The index is not
    /// compared with anything, so the exact match of [`Search::steer_loads`] would never
    /// meet it. A word the run had pinned counts as loaded too (it is no load logged): a run
    /// that took one case steered queues the cases still missed, which a full queue had
    /// dropped (hostile18: a table behind a pinned tag, whose unpinned runs never reach it).
    fn steer_table_loads(&mut self, aim: Side, args: &[DataValue], d: &Decision, loads: &[Pin]) {
        let pinned = self.pins.clone();
        for pair in &d.pairs {
            for load in loads.iter().chain(&pinned) {
                if self.queue.len() >= QUEUED {
                    return;
                }
                let w = pair.width.min(u32::from(load.width) * 8);
                let Some(diff) = near_by(load.value as i128, pair.a, w) else {
                    continue;
                };
                let index = i128::from(aim.2).wrapping_add(diff);
                let pin = pinned_low_bits(load, index, w);
                self.queue_pinned(Some(aim), args, pin);
            }
        }
    }

    /// Queues `args` with the pins of the run absorbed and `pin` (in place of theirs on the
    /// same word).
    fn queue_pinned(&mut self, aim: Option<Side>, args: &[DataValue], pin: Pin) {
        let mut pins = self.pins.clone();
        match pins
            .iter_mut()
            .find(|p| p.address == pin.address && p.width == pin.width)
        {
            Some(same) => *same = pin,
            None => pins.push(pin),
        }
        if self.queue.len() < QUEUED && self.tried.insert(key(args, &pins)) {
            let args = args.to_vec();
            self.queue.push_back((aim, Guided { args, pins }));
        }
    }

    /// Queues tuples with an argument steered towards another operand of each decision with a
    /// side not covered.
    fn steer_arguments(&mut self, args: &[DataValue], trace: &Trace, loads: &[Pin]) {
        for d in &trace.decisions {
            if d.table && index_is_loaded(d, loads) {
                // Steered by the word ([`Search::steer_table_loads`]): an argument near the
                // index (a pointer of 0 or 1 is near any small one) would queue a tuple per
                // case that leaves the index as it was, and they filled the queue before
                // the word's (hostile18: case 30 of 40 behind a loaded tag, never reached).
                continue;
            }
            // Nothing more is queued once the queue is full (and it only grows here).
            if self.queue.len() >= QUEUED {
                return;
            }
            for side in 0..d.sides {
                let aim = (d.func, d.inst, side);
                if self.covered.contains(&aim) {
                    continue;
                }
                for &pair in &d.pairs {
                    if d.table {
                        let index = Pair::scalar(pair.a, i128::from(side), pair.width);
                        self.aim(aim, args, index, true);
                    } else if pair.lanes > 1 {
                        self.aim_lanes(args, pair);
                        self.aim_lanes(args, pair.swapped());
                    } else {
                        self.aim(aim, args, pair, false);
                        self.aim(aim, args, pair.swapped(), false);
                    }
                }
            }
        }
    }

    /// Queues `args` with each integer argument that is `pair.a` (in its low `width` bits, up
    /// to [`NEAR`]) made `pair.b` (and, for a comparison, its neighbours), the difference kept;
    /// a lane of a vector argument as an argument of its own. When no argument is that near,
    /// each argument is shifted by `b - a` instead, as if the operand were the argument plus a
    /// constant (`x + 1000`, `x + 1.0`), and a float argument is also made `b` itself,
    /// converted (`fpromote(x) == c`).
    fn aim(&mut self, aim: Side, args: &[DataValue], pair: Pair, table: bool) {
        let (from, to, width) = (pair.a, pair.b, pair.width);
        let nudges: &[i128] = if table { &[0] } else { &[0, 1, -1] };
        let mut near = false;
        for (k, arg) in args.iter().enumerate() {
            if let Some((bits, arg_bits)) = vector_bits(arg) {
                // A lane taken out of a vector argument (`extractlane`) and compared: the
                // argument read as lanes of the comparison's width.
                let lane_width = width;
                if arg_bits % lane_width != 0 {
                    continue;
                }
                for j in 0..arg_bits / lane_width {
                    let x = lane_of(bits, lane_width, j);
                    let w = lane_width;
                    let Some(diff) = near_by(x, from, w) else {
                        continue;
                    };
                    near = true;
                    for &nudge in nudges {
                        let lane = with_low_bits(x, to.wrapping_add(nudge).wrapping_add(diff), w);
                        let new = with_lane(bits, lane_width, j, lane);
                        let value = of_bits(arg.ty(), new as u128);
                        self.queue_with(aimed(aim, nudge), args, k, value);
                    }
                }
                continue;
            }
            let Some((x, arg_width)) = signed(arg) else {
                continue;
            };
            let w = width.min(arg_width);
            let Some(diff) = near_by(x, from, w) else {
                continue;
            };
            near = true;
            for &nudge in nudges {
                let new = with_low_bits(x, to.wrapping_add(nudge).wrapping_add(diff), w);
                let value = of_bits(arg.ty(), new as u128);
                self.queue_with(aimed(aim, nudge), args, k, value);
            }
        }
        if near || table {
            return;
        }
        for (k, arg) in args.iter().enumerate() {
            for (nudge, value) in shifted(arg, from, to, width) {
                self.queue_with(aimed(aim, nudge), args, k, value);
            }
        }
    }

    /// Queues `args` with each vector argument of `pair`'s shape whose every lane is the lane
    /// of `pair.a` (up to [`NEAR`], lane by lane) made `pair.b` (and its neighbours, every lane
    /// nudged alike), the differences kept: a vector compared as a whole with a constant
    /// (`icmp eq v0, [1 2 3 4]`) takes the other side at once, where aiming lane by lane would
    /// take a run per lane.
    fn aim_lanes(&mut self, args: &[DataValue], pair: Pair) {
        for (k, arg) in args.iter().enumerate() {
            let (width, lanes) = (pair.width, pair.lanes);
            let Some((bits, arg_bits)) = vector_bits(arg) else {
                continue;
            };
            if arg_bits != width * lanes {
                continue;
            }
            let (from, to) = (0..lanes)
                .map(|j| pair.lane(j))
                .unzip::<_, _, Vec<_>, Vec<_>>();
            let diffs: Option<Vec<i128>> = (0..lanes)
                .map(|j| near_by(lane_of(bits, width, j), from[j as usize], width))
                .collect();
            let Some(diffs) = diffs else {
                continue;
            };
            for nudge in [0, 1, -1] {
                let new = (0..lanes).fold(bits, |new, j| {
                    let lane = to[j as usize]
                        .wrapping_add(nudge)
                        .wrapping_add(diffs[j as usize]);
                    with_lane(new, width, j, lane)
                });
                // Aimed at no one side: every lane's equality at once is a side no lane's
                // decision records, and a tuple that took one lane's side must not drop it.
                self.queue_with(None, args, k, of_bits(arg.ty(), new as u128));
            }
        }
    }

    /// Queues `args` with argument `k` made `value` (when there is one), aimed at `aim` (None:
    /// run even when another tuple took its side first).
    fn queue_with(
        &mut self,
        aim: Option<Side>,
        args: &[DataValue],
        k: usize,
        value: Option<DataValue>,
    ) {
        let Some(value) = value else {
            return;
        };
        let mut tuple = args.to_vec();
        tuple[k] = value;
        if self.queue.len() < QUEUED && self.tried.insert(key(&tuple, &self.pins)) {
            let pins = self.pins.clone();
            self.queue.push_back((aim, Guided { args: tuple, pins }));
        }
    }

    /// How many sides of `func`'s own decisions the runs absorbed took.
    pub(super) fn covered_in(&self, func: &Function) -> usize {
        let id = func as *const Function as usize;
        self.covered.iter().filter(|side| side.0 == id).count()
    }

    /// The next queued tuple whose side is still not covered.
    pub(super) fn next(&mut self) -> Option<Guided> {
        while let Some((aim, tuple)) = self.queue.pop_front() {
            if aim.is_none_or(|aim| !self.covered.contains(&aim)) {
                return Some(tuple);
            }
        }
        None
    }
}

/// Whether a loaded word is the index of the `br_table` decision `d` up to a small difference,
/// in some run's pair ([`Search::steer_table_loads`] steers it).
fn index_is_loaded(d: &Decision, loads: &[Pin]) -> bool {
    d.pairs.iter().any(|pair| {
        loads.iter().any(|load| {
            let w = pair.width.min(u32::from(load.width) * 8);
            near_by(load.value as i128, pair.a, w).is_some()
        })
    })
}

/// The side a tuple made with `nudge` aims at: `aim` itself, or none for a tuple beside the
/// operand.
fn aimed(aim: Side, nudge: i128) -> Option<Side> {
    (nudge == 0).then_some(aim)
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
                let new = (x.wrapping_add(to.wrapping_sub(from)).wrapping_add(nudge) as u128) & m;
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

/// A tuple's bits and its pins, to tell tuples tried apart.
fn key(args: &[DataValue], pins: &[Pin]) -> Vec<u128> {
    let pinned = pins.iter().map(|p| {
        u128::from(p.address) | u128::from(p.value) << 64 ^ u128::from(p.width) << 120 ^ 1 << 126
    });
    args.iter()
        .map(|a| {
            let mut bytes = [0u8; 16];
            let n = (a.ty().bytes() as usize).min(16);
            a.write_to_slice_le(&mut bytes[..n]);
            u128::from_le_bytes(bytes)
                ^ u128::from(a.ty().bits()) << 120
                ^ u128::from(a.ty().is_float()) << 127
        })
        .chain(pinned)
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

/// A vector of at most 128 bits as its bits (lane 0 lowest), with how many bits it has.
fn vector_bits(v: &DataValue) -> Option<(i128, u32)> {
    let ty = v.ty();
    if !v.is_vector() || ty.bits() > 128 {
        return None;
    }
    let mut bytes = [0u8; 16];
    v.write_to_slice_le(&mut bytes[..ty.bytes() as usize]);
    Some((i128::from_le_bytes(bytes), ty.bits()))
}

/// Lane `j` of `width`-bit lanes packed in `bits`, as a signed number.
fn lane_of(bits: i128, width: u32, j: u32) -> i128 {
    sign_extend((bits as u128 >> (width * j)) & mask(width), width)
}

/// `bits` with lane `j` (of `width` bits) made the low bits of `lane`.
fn with_lane(bits: i128, width: u32, j: u32, lane: i128) -> i128 {
    let m = mask(width) << (width * j);
    ((bits as u128 & !m) | ((lane as u128) << (width * j) & m)) as i128
}

/// `x - from` in the low `width` bits, as a signed number, when it is at most [`NEAR`].
fn near_by(x: i128, from: i128, width: u32) -> Option<i128> {
    let diff = sign_extend((x as u128).wrapping_sub(from as u128) & mask(width), width);
    (diff.unsigned_abs() <= NEAR.unsigned_abs()).then_some(diff)
}

/// `load` pinned to what it read with its low `width` bits replaced by `low`'s.
fn pinned_low_bits(load: &Pin, low: i128, width: u32) -> Pin {
    let value =
        with_low_bits(load.value as i128, low, width) as u128 & mask(u32::from(load.width) * 8);
    Pin {
        value: value as u64,
        ..*load
    }
}

/// `x` with its low `width` bits made those of `low`.
fn with_low_bits(x: i128, low: i128, width: u32) -> i128 {
    let m = mask(width);
    (((x as u128) & !m) | ((low as u128) & m)) as i128
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

/// The integer, float or vector of those of type `ty` with these low bits.
fn of_bits(ty: Type, bits: u128) -> Option<DataValue> {
    let lane = ty.lane_type();
    super::inputs::value_of_bits(ty, bits as u64, (bits >> 64) as u64)
        .filter(|_| lane.is_int() || lane.is_float())
}
