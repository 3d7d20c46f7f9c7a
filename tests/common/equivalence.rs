//! Equivalence of a function of a module and a mutant of it, proven by evaluating both
//! symbolically, for the mutation check of `--verify`: a mutant whose every behaviour is the
//! original's, whatever the inputs, is not made.
//!
//! Both are run over the module (the mutant in the original's place wherever the module calls
//! it) on symbolic inputs: each value is a term over the parameters (hash-consed, so two equal
//! terms are one), with the bits known of it. What the run does that anything outside may see
//! is a tree: calls of functions the module does not define (or through an address it does not
//! know), loads and stores, each with its operands and in order; where a condition is not known,
//! a fork on it (a fork whose two sides do the same is no fork); at the end a return of terms
//! or a trap with its code. Calls of the module's own functions are run, so a callee sees the
//! caller's known values (the depth a caller passes decides the callee's branches). The result
//! of a call that is not run, or of a load, is a term of its own, the same in both runs when all
//! that came before is. Two equal trees behave the same on every input: the proof.
//!
//! The parameters masked somewhere in the module with a small constant (`band v0, 3`) are split
//! by those bits: each case is run apart, with those bits known, so that branches on them are
//! decided (a case split covers every input, so it stays a proof). Anything the evaluation does
//! not model (an instruction that may trap other than those below, a global value, exceptions,
//! too many steps or forks) leaves the mutant unproven.
//!
//! Traps: `trap`; `trapz`/`trapnz` fire or fork on their condition; a division only when its
//! divisor is known not to be zero (and, signed, not to be -1), else unproven; loads and stores
//! are in the tree, so whether they fault is the same on both sides.

use clif_merge::{ClifModule, FuncName};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    BlockArg, Function, Inst, InstructionData, Opcode, StackSlot, TrapCode, Type, Value, types,
};
use std::collections::HashMap;

/// A term, by its number in the [`Terms`] that made it.
type Term = u32;

/// What a term is.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Node {
    Const(Type, u128),
    Param(usize),
    /// A pure operation (its opcode, immediates and types) of terms.
    Op(String, Vec<Term>),
    /// Result `k` of the tree's event `n` (a call not run, a load).
    Result(usize, usize),
    /// The address of a function, by name.
    Func(FuncName),
    /// The address of stack slot `slot` of the `frame`th frame made, plus an offset.
    Slot(usize, u32, i32),
    /// What a load (its kind) from a stack slot of its own frame (the address) reads after
    /// the first `n` events of the run.
    Loaded(String, Term, usize),
}

/// The terms of one proof, shared by the original's and the mutant's runs.
#[derive(Default)]
struct Terms {
    ids: HashMap<Node, Term>,
    nodes: Vec<Node>,
}

impl Terms {
    fn of(&mut self, node: Node) -> Term {
        if let Some(&t) = self.ids.get(&node) {
            return t;
        }
        let t = self.nodes.len() as Term;
        self.nodes.push(node.clone());
        self.ids.insert(node, t);
        t
    }
}

/// What a run does that can be seen (see the module docs).
#[derive(Clone, PartialEq, Eq)]
enum Tree {
    Return(Vec<Term>),
    Trap(String),
    /// A call not run, a load or a store (its kind), on its operands, and what follows.
    Event(String, Vec<Term>, Box<Tree>),
    /// Whether a term is not zero: the then side, the else side.
    Fork(Term, Box<Tree>, Box<Tree>),
}

/// A value: its term, its type, and the bits of it known (`known`) with their values (`bits`).
#[derive(Clone, Copy)]
struct Known {
    term: Term,
    ty: Type,
    known: u128,
    bits: u128,
}

impl Known {
    fn constant(&self) -> Option<u128> {
        (self.known == full_mask(self.ty)).then_some(self.bits)
    }

    /// Whether the value is known to be zero (`Some(true)`), not zero, or not known.
    fn is_zero(&self) -> Option<bool> {
        if self.known & self.bits != 0 {
            return Some(false);
        }
        self.constant().map(|c| c == 0)
    }
}

#[derive(Clone)]
struct Frame<'a> {
    func: &'a Function,
    values: HashMap<Value, Known>,
    next: Option<Inst>,
    /// Where the caller takes the results.
    results_to: Vec<Value>,
    ordinal: usize,
}

#[derive(Clone)]
struct State<'a> {
    frames: Vec<Frame<'a>>,
    events: usize,
    frames_made: usize,
}

/// How much one run may do before it gives up (unproven).
const STEPS: usize = 200_000;
const FORKS: usize = 256;
const FRAMES: usize = 200;
const NESTING: usize = 64;
/// The most cases a proof splits into.
const CASES: usize = 64;

struct Run<'a, 't> {
    module: &'a ClifModule,
    name: FuncName,
    body: &'a Function,
    terms: &'t mut Terms,
    steps: usize,
    forks: usize,
    /// How many runs (forks) are open, one inside another.
    nesting: usize,
}

fn full_mask(ty: Type) -> u128 {
    match ty.bits() {
        0 => 0,
        b if b >= 128 => u128::MAX,
        b => (1u128 << b) - 1,
    }
}

fn signed_min(ty: Type) -> i128 {
    signed(1u128 << (ty.bits().clamp(1, 128) - 1), ty)
}

fn signed(c: u128, ty: Type) -> i128 {
    let unused = 128 - ty.bits().clamp(1, 128);
    ((c << unused) as i128) >> unused
}

/// The low bits of an addition or subtraction that are known: up to the lowest bit unknown in
/// either operand.
fn low_known(a: &Known, b: &Known) -> u128 {
    let both = a.known & b.known;
    match (!both).trailing_zeros() {
        128.. => u128::MAX,
        n => (1u128 << n) - 1,
    }
}

/// The value of the pure integer operation `op` on known operands, when it is one this folds.
fn fold(data: &InstructionData, ty: Type, args: &[(u128, Type)]) -> Option<u128> {
    let full = full_mask(ty);
    let a = |k: usize| args[k].0;
    let sa = |k: usize| signed(args[k].0, args[k].1);
    let width = u128::from(ty.bits().max(1));
    let shift = || (a(1) % width) as u32;
    let v = match data.opcode() {
        Opcode::Iadd => a(0).wrapping_add(a(1)),
        Opcode::Isub => a(0).wrapping_sub(a(1)),
        Opcode::Imul => a(0).wrapping_mul(a(1)),
        Opcode::Ineg => a(0).wrapping_neg(),
        Opcode::Band => a(0) & a(1),
        Opcode::Bor => a(0) | a(1),
        Opcode::Bxor => a(0) ^ a(1),
        Opcode::Bnot => !a(0),
        Opcode::Ishl => a(0) << shift(),
        Opcode::Ushr => a(0) >> shift(),
        Opcode::Sshr => (sa(0) >> shift()) as u128,
        Opcode::Rotl | Opcode::Rotr => {
            let s = shift();
            let s = if data.opcode() == Opcode::Rotr {
                (width as u32 - s) % width as u32
            } else {
                s
            };
            if s == 0 {
                a(0)
            } else {
                (a(0) << s) | (a(0) >> (width as u32 - s))
            }
        }
        Opcode::Uextend => a(0),
        Opcode::Sextend => sa(0) as u128,
        Opcode::Ireduce => a(0),
        Opcode::Umin => a(0).min(a(1)),
        Opcode::Umax => a(0).max(a(1)),
        Opcode::Smin => sa(0).min(sa(1)) as u128,
        Opcode::Smax => sa(0).max(sa(1)) as u128,
        Opcode::Popcnt => u128::from(a(0).count_ones()),
        Opcode::Clz => u128::from(a(0).leading_zeros() - (128 - ty.bits())),
        Opcode::Ctz => u128::from(a(0).trailing_zeros().min(ty.bits())),
        Opcode::Udiv if a(1) != 0 => a(0) / a(1),
        Opcode::Urem if a(1) != 0 => a(0) % a(1),
        Opcode::Sdiv if a(1) != 0 && !(sa(1) == -1 && sa(0) == signed_min(args[0].1)) => {
            sa(0).wrapping_div(sa(1)) as u128
        }
        // `srem` of the least value by -1 traps as `sdiv` does, in the interpreter the check
        // runs on.
        Opcode::Srem if a(1) != 0 && !(sa(1) == -1 && sa(0) == signed_min(args[0].1)) => {
            sa(0).wrapping_rem(sa(1)) as u128
        }
        Opcode::Icmp => {
            let cond = data.cond_code()?;
            let (x, y, sx, sy) = (a(0), a(1), sa(0), sa(1));
            u128::from(match cond {
                IntCC::Equal => x == y,
                IntCC::NotEqual => x != y,
                IntCC::UnsignedLessThan => x < y,
                IntCC::UnsignedLessThanOrEqual => x <= y,
                IntCC::UnsignedGreaterThan => x > y,
                IntCC::UnsignedGreaterThanOrEqual => x >= y,
                IntCC::SignedLessThan => sx < sy,
                IntCC::SignedLessThanOrEqual => sx <= sy,
                IntCC::SignedGreaterThan => sx > sy,
                IntCC::SignedGreaterThanOrEqual => sx >= sy,
            })
        }
        _ => return None,
    };
    Some(v & full)
}

/// The bits of the float `fcvt_from_uint` or `fcvt_from_sint` makes of a known integer of at
/// most 64 bits (rounded to the nearest, as Rust's `as` and the interpreter do).
fn fold_conversion(data: &InstructionData, ty: Type, args: &[(u128, Type)]) -> Option<u128> {
    let &[(x, from)] = args else {
        return None;
    };
    if !from.is_int() || from.bits() > 64 {
        return None;
    }
    let from_signed = match data.opcode() {
        Opcode::FcvtFromUint => false,
        Opcode::FcvtFromSint => true,
        _ => return None,
    };
    let (u, i) = (x as u64, signed(x, from) as i64);
    Some(match (ty, from_signed) {
        (types::F32, false) => u128::from((u as f32).to_bits()),
        (types::F32, true) => u128::from((i as f32).to_bits()),
        (types::F64, false) => u128::from((u as f64).to_bits()),
        (types::F64, true) => u128::from((i as f64).to_bits()),
        _ => return None,
    })
}

/// The bits of the result of `op` known from what is known of its operands (short of all).
fn known_bits(data: &InstructionData, ty: Type, args: &[Known]) -> (u128, u128) {
    let full = full_mask(ty);
    let (known, bits) = match data.opcode() {
        Opcode::Band => {
            let zeros = (args[0].known & !args[0].bits) | (args[1].known & !args[1].bits);
            let ones = args[0].known & args[0].bits & args[1].known & args[1].bits;
            (zeros | ones, ones)
        }
        Opcode::Bor => {
            let ones = (args[0].known & args[0].bits) | (args[1].known & args[1].bits);
            let zeros = args[0].known & !args[0].bits & args[1].known & !args[1].bits;
            (zeros | ones, ones)
        }
        Opcode::Bxor => {
            let known = args[0].known & args[1].known;
            (known, (args[0].bits ^ args[1].bits) & known)
        }
        Opcode::Bnot => (args[0].known, !args[0].bits & args[0].known),
        Opcode::Iadd | Opcode::Isub => {
            let low = low_known(&args[0], &args[1]);
            let v = if data.opcode() == Opcode::Iadd {
                args[0].bits.wrapping_add(args[1].bits)
            } else {
                args[0].bits.wrapping_sub(args[1].bits)
            };
            (low, v & low)
        }
        Opcode::Ireduce => (args[0].known, args[0].bits),
        // The high half of a product by `c` is less than `c`.
        Opcode::Umulhi => match args.iter().filter_map(Known::constant).min() {
            Some(c) => {
                let below = u128::MAX.checked_shr(c.saturating_sub(1).leading_zeros());
                (full & !below.unwrap_or(0), 0)
            }
            None => (0, 0),
        },
        Opcode::Uextend => {
            let high = full & !full_mask(args[0].ty);
            (args[0].known | high, args[0].bits)
        }
        Opcode::Icmp => {
            let differ = args[0].known & args[1].known & (args[0].bits ^ args[1].bits) != 0;
            match data.cond_code() {
                Some(IntCC::Equal) if differ => (full, 0),
                Some(IntCC::NotEqual) if differ => (full, 1),
                _ => (0, 0),
            }
        }
        _ => (0, 0),
    };
    (known & full, bits & known & full)
}

/// None: a run took more than its share of `what` (`EQUIV_DEBUG` says so).
fn limit<T>(what: &str) -> Option<T> {
    if std::env::var_os("EQUIV_DEBUG").is_some() {
        eprintln!("equivalence: too many {what}");
    }
    None
}

/// What an integer division does (see `Run::division`).
enum Division {
    Computes,
    Traps(String),
    /// It traps when the divisor is zero, else computes.
    TrapsIfZero,
    /// Signed, it traps when it divides the least value by -1, else as `TrapsIfZero`.
    MayOverflow,
}

fn is_division(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Udiv | Opcode::Sdiv | Opcode::Urem | Opcode::Srem
    )
}

/// The values an integer may have when all but at most two of its bits are known.
fn few_values(k: &Known) -> Option<Vec<u128>> {
    let unknown = full_mask(k.ty) & !k.known;
    (k.ty.is_int() && unknown.count_ones() <= 2).then(|| {
        (0..1u128 << unknown.count_ones())
            .map(|n| k.bits | spread(n, unknown))
            .collect()
    })
}

/// The immediates of a pure instruction of one of the formats evaluated, as text.
fn immediates(func: &Function, data: &InstructionData) -> Option<String> {
    Some(match *data {
        InstructionData::Unary { .. }
        | InstructionData::Binary { .. }
        | InstructionData::Ternary { .. } => String::new(),
        InstructionData::IntCompare { cond, .. } => cond.to_string(),
        InstructionData::FloatCompare { cond, .. } => cond.to_string(),
        InstructionData::BinaryImm8 { imm, .. } => imm.to_string(),
        InstructionData::LoadNoOffset {
            opcode: Opcode::Bitcast,
            flags,
            ..
        } => func.dfg.mem_flags[flags]
            .with_alias_region(None)
            .to_string(),
        _ => return None,
    })
}

/// Whether an instruction does nothing but compute its results (it cannot trap).
fn pure(op: Opcode) -> bool {
    !(op.is_call()
        || op.is_branch()
        || op.is_terminator()
        || op.can_trap()
        || op.can_store()
        || op.can_load()
        || op.other_side_effects())
}

impl<'a> Run<'a, '_> {
    fn term(&mut self, node: Node) -> Term {
        self.terms.of(node)
    }

    fn unknown(&mut self, node: Node, ty: Type) -> Known {
        Known {
            term: self.term(node),
            ty,
            known: 0,
            bits: 0,
        }
    }

    fn constant(&mut self, ty: Type, c: u128) -> Known {
        let c = c & full_mask(ty);
        Known {
            term: self.term(Node::Const(ty, c)),
            ty,
            known: full_mask(ty),
            bits: c,
        }
    }

    /// The body that runs for `name` in the module: the one under proof for its own name.
    fn function(&self, name: &FuncName) -> Option<(FuncName, &'a Function)> {
        let mf = self.module.function(self.module.resolve(name)?);
        if mf.name == self.name {
            Some((mf.name.clone(), self.body))
        } else {
            Some((mf.name.clone(), &mf.func))
        }
    }

    fn func_name(func: &Function, inst: Inst) -> Option<FuncName> {
        match func.dfg.insts[inst] {
            InstructionData::Call { func_ref, .. } | InstructionData::FuncAddr { func_ref, .. } => {
                FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
            }
            _ => None,
        }
    }

    /// A new frame running `func` from its entry with `args`.
    fn enter(
        &mut self,
        st: &mut State<'a>,
        func: &'a Function,
        args: &[Known],
        results_to: Vec<Value>,
    ) -> Option<()> {
        let entry = func.layout.entry_block()?;
        let params = func.dfg.block_params(entry);
        if params.len() != args.len() || st.frames.len() >= FRAMES {
            return limit("frames");
        }
        let mut values = HashMap::new();
        for (&p, a) in params.iter().zip(args) {
            if func.dfg.value_type(p) != a.ty {
                return None;
            }
            values.insert(p, *a);
        }
        st.frames.push(Frame {
            func,
            values,
            next: func.layout.first_inst(entry),
            results_to,
            ordinal: st.frames_made,
        });
        st.frames_made += 1;
        Some(())
    }

    /// Runs `st` to its end: the tree of what it does; None when it cannot be modelled.
    fn run(&mut self, st: State<'a>) -> Option<Tree> {
        self.nesting += 1;
        let mut events = Vec::new();
        let end = if self.nesting > NESTING {
            limit("nesting")
        } else {
            self.run_to_end(st, &mut events)
        };
        self.nesting -= 1;
        let end = end?;
        Some(
            events
                .into_iter()
                .rev()
                .fold(end, |rest, (kind, operands)| {
                    Tree::Event(kind, operands, Box::new(rest))
                }),
        )
    }

    /// Runs `st` until it ends or forks, its events pushed on `events`: what follows them.
    fn run_to_end(
        &mut self,
        mut st: State<'a>,
        events: &mut Vec<(String, Vec<Term>)>,
    ) -> Option<Tree> {
        loop {
            self.steps += 1;
            if self.steps > STEPS {
                return limit("steps");
            }
            let frame = st.frames.last()?;
            let func = frame.func;
            let inst = frame.next?;
            let dfg = &func.dfg;
            let get = |st: &State<'a>, v: Value| -> Option<Known> {
                st.frames
                    .last()?
                    .values
                    .get(&dfg.resolve_aliases(v))
                    .copied()
            };
            let args: Vec<Known> = dfg
                .inst_args(inst)
                .iter()
                .map(|&v| get(&st, v))
                .collect::<Option<_>>()?;
            let data = dfg.insts[inst];
            let op = data.opcode();
            let results = dfg.inst_results(inst).to_vec();
            let advance = |st: &mut State<'a>| {
                let frame = st.frames.last_mut().unwrap();
                frame.next = frame.func.layout.next_inst(inst);
            };
            let set = |st: &mut State<'a>, v: Value, k: Known| {
                st.frames.last_mut().unwrap().values.insert(v, k);
            };
            match data {
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm,
                } => {
                    let ty = dfg.value_type(results[0]);
                    let k = self.constant(ty, imm.bits() as u64 as u128);
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                InstructionData::UnaryIeee32 { imm, .. } => {
                    let ty = dfg.value_type(results[0]);
                    let k = self.constant(ty, u128::from(imm.bits()));
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                InstructionData::UnaryIeee64 { imm, .. } => {
                    let ty = dfg.value_type(results[0]);
                    let k = self.constant(ty, u128::from(imm.bits()));
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                InstructionData::FuncAddr { .. } => {
                    let name = Self::func_name(func, inst)?;
                    let name = self.function(&name).map_or(name, |(n, _)| n);
                    let ty = dfg.value_type(results[0]);
                    let k = self.unknown(Node::Func(name), ty);
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                InstructionData::StackAddr {
                    stack_slot, offset, ..
                } => {
                    let ordinal = st.frames.last().unwrap().ordinal;
                    let node = Node::Slot(ordinal, stack_slot.as_u32(), i32::from(offset));
                    let ty = dfg.value_type(results[0]);
                    let k = self.unknown(node, ty);
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                _ if op == Opcode::Select => {
                    let k = match args[0].is_zero() {
                        Some(true) => args[2],
                        Some(false) => args[1],
                        None if args[1].term == args[2].term => args[1],
                        None => self.operation(func, inst, &args)?,
                    };
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                _ if is_division(op) => {
                    let on_zero = || Tree::Trap(TrapCode::INTEGER_DIVISION_BY_ZERO.to_string());
                    match Self::division(op, &args) {
                        Division::Traps(code) => return Some(Tree::Trap(code)),
                        Division::Computes => {
                            let k = self.operation(func, inst, &args)?;
                            set(&mut st, results[0], k);
                            advance(&mut st);
                        }
                        Division::TrapsIfZero => {
                            let k = self.operation(func, inst, &args)?;
                            set(&mut st, results[0], k);
                            advance(&mut st);
                            let on = self.run(st)?;
                            return self.fork(args[1].term, on, on_zero());
                        }
                        Division::MayOverflow => {
                            let k = self.operation(func, inst, &args)?;
                            set(&mut st, results[0], k);
                            advance(&mut st);
                            let on = self.run(st)?;
                            let on = self.fork(args[1].term, on, on_zero())?;
                            // Whether it is the least value by -1: a term of the operands.
                            let ty = args[0].ty;
                            let key = format!("least_by_minus_one.{ty}");
                            let overflow =
                                self.term(Node::Op(key, vec![args[0].term, args[1].term]));
                            let trap = Tree::Trap(TrapCode::INTEGER_OVERFLOW.to_string());
                            return self.fork(overflow, trap, on);
                        }
                    }
                }
                _ if pure(op) => {
                    if results.len() != 1 {
                        return None;
                    }
                    let k = self.operation(func, inst, &args)?;
                    set(&mut st, results[0], k);
                    advance(&mut st);
                }
                InstructionData::Trap { code, .. } => return Some(Tree::Trap(code.to_string())),
                InstructionData::CondTrap { code, .. } => {
                    let fires = match (op, args[0].is_zero()) {
                        (_, None) => None,
                        (Opcode::Trapz, Some(z)) => Some(z),
                        (_, Some(z)) => Some(!z),
                    };
                    match fires {
                        Some(true) => return Some(Tree::Trap(code.to_string())),
                        Some(false) => advance(&mut st),
                        None => {
                            advance(&mut st);
                            let trap = Tree::Trap(code.to_string());
                            let on = self.run(st)?;
                            let (then, other) = match op {
                                Opcode::Trapz => (on, trap),
                                _ => (trap, on),
                            };
                            return self.fork(args[0].term, then, other);
                        }
                    }
                }
                InstructionData::Jump { .. }
                | InstructionData::Brif { .. }
                | InstructionData::BranchTable { .. } => {
                    let dests = data.branch_destination(&dfg.jump_tables, &dfg.exception_tables);
                    // Where a condition or index `c` goes: the table's default first, then its
                    // entries.
                    let target = |c: u128| match data {
                        InstructionData::Jump { .. } => 0,
                        InstructionData::Brif { .. } => usize::from(c == 0),
                        _ if c < (dests.len() - 1) as u128 => c as usize + 1,
                        _ => 0,
                    };
                    let taken = match data {
                        InstructionData::Jump { .. } => Some(0),
                        InstructionData::Brif { .. } => args[0].is_zero().map(usize::from),
                        _ => args[0].constant().map(target),
                    };
                    if let Some(k) = taken {
                        // The same run goes on (no fork: no nesting).
                        self.branch(&mut st, func, dests[k])?;
                        continue;
                    }
                    if let Some(values) = few_values(&args[0]) {
                        return self.each_value(st, func, &args[0], &values, &|c| dests[target(c)]);
                    }
                    if !matches!(data, InstructionData::Brif { .. }) {
                        return self.not_modelled(func, inst);
                    }
                    let mut other = st.clone();
                    self.branch(&mut st, func, dests[0])?;
                    self.branch(&mut other, func, dests[1])?;
                    let then = self.run(st)?;
                    let other = self.run(other)?;
                    return self.fork(args[0].term, then, other);
                }
                InstructionData::MultiAry {
                    opcode: Opcode::Return,
                    ..
                } => {
                    let frame = st.frames.pop().unwrap();
                    if st.frames.is_empty() {
                        return Some(Tree::Return(args.iter().map(|a| a.term).collect()));
                    }
                    if frame.results_to.len() != args.len() {
                        return None;
                    }
                    for (&r, a) in frame.results_to.iter().zip(&args) {
                        set(&mut st, r, *a);
                    }
                    // The caller's call (a tail call's frame was replaced) goes on.
                    let caller = st.frames.last_mut().unwrap();
                    let at = caller.next?;
                    caller.next = caller.func.layout.next_inst(at);
                }
                InstructionData::Call { .. } | InstructionData::CallIndirect { .. } => {
                    let (named, callee_term, call_args) = match data {
                        InstructionData::Call { .. } => {
                            let name = Self::func_name(func, inst)?;
                            let term = self.term(Node::Func(name.clone()));
                            (Some(name), term, &args[..])
                        }
                        _ => (None, args[0].term, &args[1..]),
                    };
                    let called = match &named {
                        Some(name) => self.function(name),
                        None => self.known_target(callee_term),
                    };
                    let tail = matches!(op, Opcode::ReturnCall | Opcode::ReturnCallIndirect);
                    match called {
                        Some((_, callee)) => {
                            let results_to = if tail {
                                st.frames.pop().unwrap().results_to
                            } else {
                                results.clone()
                            };
                            self.enter(&mut st, callee, call_args, results_to)?;
                        }
                        None => {
                            let types = call_result_types(func, inst);
                            let end =
                                self.event(&mut st, events, callee_term, call_args, &types, tail)?;
                            if end.is_some() {
                                return end;
                            }
                        }
                    }
                }
                InstructionData::Load { offset, flags, .. } => {
                    let flags = func.dfg.mem_flags[flags].with_alias_region(None);
                    let ty = dfg.value_type(results[0]);
                    let kind = format!("load.{ty} {flags} {offset}");
                    let addr = args[0].term;
                    if self.in_own_slot(&st, addr, i32::from(offset), ty) {
                        // It cannot fault, and what it reads is what the events so far left.
                        let node = Node::Loaded(kind, addr, st.events);
                        let k = self.unknown(node, ty);
                        set(&mut st, results[0], k);
                        advance(&mut st);
                    } else {
                        self.event_at(&mut st, events, kind, vec![addr], &[ty], results)?;
                    }
                }
                InstructionData::Store { offset, flags, .. } => {
                    let flags = func.dfg.mem_flags[flags].with_alias_region(None);
                    let kind = format!("store.{} {flags} {offset}", args[0].ty);
                    let operands = vec![args[1].term, args[0].term];
                    self.event_at(&mut st, events, kind, operands, &[], results)?;
                }
                _ if matches!(op, Opcode::FcvtToUint | Opcode::FcvtToSint)
                    && args[0].constant().is_some()
                    && dfg.value_type(results[0]).bits() <= 64 =>
                {
                    let ty = dfg.value_type(results[0]);
                    match convert(op, &args[0], ty) {
                        Ok(c) => {
                            let k = self.constant(ty, c);
                            set(&mut st, results[0], k);
                            advance(&mut st);
                        }
                        Err(trap) => return Some(Tree::Trap(trap)),
                    }
                }
                _ => return self.not_modelled(func, inst),
            }
        }
    }

    /// Whether an access of a `ty` at `addr + offset` is inside a stack slot of the running
    /// frame: `addr` is the slot's address (`stack_addr`) plus a constant, and the access ends
    /// within the slot. Such a load cannot fault, and nothing but the run's stores and the
    /// calls it does not run (events) changes what it reads.
    fn in_own_slot(&self, st: &State<'a>, addr: Term, offset: i32, ty: Type) -> bool {
        let Some(frame) = st.frames.last() else {
            return false;
        };
        let Node::Slot(ordinal, slot, base) = self.terms.nodes[addr as usize] else {
            return false;
        };
        let Some(data) = (frame.func.sized_stack_slots).get(StackSlot::from_u32(slot)) else {
            return false;
        };
        let start = i64::from(base) + i64::from(offset);
        ordinal == frame.ordinal
            && start >= 0
            && start + i64::from(ty.bytes()) <= i64::from(data.size)
    }

    /// None: `inst` is not modelled (`EQUIV_DEBUG` names it).
    fn not_modelled(&self, func: &Function, inst: Inst) -> Option<Tree> {
        if std::env::var_os("EQUIV_DEBUG").is_some() {
            eprintln!("equivalence: not modelled: {}", func.dfg.display_inst(inst));
        }
        None
    }

    /// What the integer division `op` (`udiv`, `sdiv`, `urem`, `srem`) of `args` does as the
    /// interpreter the check runs on does it (a signed one of the least value by -1 traps,
    /// `srem` too).
    fn division(op: Opcode, args: &[Known]) -> Division {
        let (dividend, divisor) = (&args[0], &args[1]);
        if matches!(op, Opcode::Sdiv | Opcode::Srem) {
            // A known bit that -1 or the least value does not have: no overflow.
            let full = full_mask(divisor.ty);
            let not_minus_one = divisor.known & !divisor.bits & full != 0;
            let least = signed_min(dividend.ty) as u128 & full_mask(dividend.ty);
            let not_least = dividend.known & (dividend.bits ^ least) != 0;
            if !(not_minus_one || not_least) {
                // Both known: the least value by -1.
                let known = dividend.constant().and(divisor.constant()).is_some();
                return match known {
                    true => Division::Traps(TrapCode::INTEGER_OVERFLOW.to_string()),
                    false => Division::MayOverflow,
                };
            }
        }
        match divisor.is_zero() {
            Some(true) => Division::Traps(TrapCode::INTEGER_DIVISION_BY_ZERO.to_string()),
            Some(false) => Division::Computes,
            None => Division::TrapsIfZero,
        }
    }

    /// The value of the pure instruction `inst` on `args`.
    fn operation(&mut self, func: &Function, inst: Inst, args: &[Known]) -> Option<Known> {
        let data = func.dfg.insts[inst];
        let ty = func.dfg.value_type(func.dfg.first_result(inst));
        let ints = args.iter().all(|a| a.ty.is_int()) && ty.is_int();
        let constants: Option<Vec<(u128, Type)>> =
            args.iter().map(|a| Some((a.constant()?, a.ty))).collect();
        if let Some(c) = constants
            .as_deref()
            .and_then(|c| fold_conversion(&data, ty, c))
        {
            return Some(self.constant(ty, c));
        }
        if ints && let Some(c) = constants.and_then(|c| fold(&data, ty, &c)) {
            return Some(self.constant(ty, c));
        }
        let types: Vec<String> = args.iter().map(|a| a.ty.to_string()).collect();
        let key = format!(
            "{}.{ty} {} ({})",
            data.opcode(),
            immediates(func, &data)?,
            types.join(",")
        );
        let term = self.term(Node::Op(key, args.iter().map(|a| a.term).collect()));
        let (known, bits) = if ints {
            known_bits(&data, ty, args)
        } else {
            (0, 0)
        };
        Some(Known {
            term,
            ty,
            known,
            bits,
        })
    }

    /// `st` past the branch to `dest`, its block's parameters bound.
    fn branch(
        &mut self,
        st: &mut State<'a>,
        func: &Function,
        dest: cranelift_codegen::ir::BlockCall,
    ) -> Option<()> {
        let dfg = &func.dfg;
        let block = dest.block(&dfg.value_lists);
        let frame = st.frames.last_mut().unwrap();
        let mut bound = Vec::new();
        for (arg, &p) in dest.args(&dfg.value_lists).zip(dfg.block_params(block)) {
            let BlockArg::Value(v) = arg else {
                return None;
            };
            bound.push((p, *frame.values.get(&dfg.resolve_aliases(v))?));
        }
        frame.values.extend(bound);
        frame.next = func.layout.first_inst(block);
        Some(())
    }

    /// `st` run past a branch on `value` once for each of its possible `values`, the value
    /// known in each (wherever the frame holds it), to the destination `dest` gives: forks on
    /// whether it is each value but the last.
    fn each_value(
        &mut self,
        st: State<'a>,
        func: &Function,
        value: &Known,
        values: &[u128],
        dest: &dyn Fn(u128) -> cranelift_codegen::ir::BlockCall,
    ) -> Option<Tree> {
        let mut sides = Vec::new();
        for &c in values {
            let mut st = st.clone();
            let known = self.constant(value.ty, c);
            for v in st.frames.last_mut()?.values.values_mut() {
                if v.term == value.term {
                    *v = known;
                }
            }
            self.branch(&mut st, func, dest(c))?;
            sides.push((known.term, self.run(st)?));
        }
        let (_, mut tree) = sides.pop()?;
        let ty = value.ty;
        for (c, side) in sides.into_iter().rev() {
            let key = format!("icmp.i8 eq ({ty},{ty})");
            let is = self.term(Node::Op(key, vec![value.term, c]));
            tree = self.fork(is, side, tree)?;
        }
        Some(tree)
    }

    /// A fork on `cond`, or one side when both do the same.
    fn fork(&mut self, cond: Term, then: Tree, other: Tree) -> Option<Tree> {
        if then == other {
            return Some(then);
        }
        self.forks += 1;
        if self.forks > FORKS {
            return limit("forks");
        }
        Some(Tree::Fork(cond, Box::new(then), Box::new(other)))
    }

    /// The function an indirect call through `callee` runs, when its address is known.
    fn known_target(&self, callee: Term) -> Option<(FuncName, &'a Function)> {
        match &self.terms.nodes[callee as usize] {
            Node::Func(name) => self.function(name),
            _ => None,
        }
    }

    /// A call not run: an event, its results new terms; a tail call then returns them (the
    /// end of the run, when it was the first frame's).
    fn event(
        &mut self,
        st: &mut State<'a>,
        events: &mut Vec<(String, Vec<Term>)>,
        callee: Term,
        args: &[Known],
        types: &[Type],
        tail: bool,
    ) -> Option<Option<Tree>> {
        let mut operands = vec![callee];
        operands.extend(args.iter().map(|a| a.term));
        events.push(("call".to_string(), operands));
        let n = st.events;
        st.events += 1;
        let values: Vec<Known> = types
            .iter()
            .enumerate()
            .map(|(k, &ty)| self.unknown(Node::Result(n, k), ty))
            .collect();
        let frame = st.frames.last_mut()?;
        let inst = frame.next?;
        if !tail {
            let results = frame.func.dfg.inst_results(inst).to_vec();
            if results.len() != values.len() {
                return None;
            }
            for (&r, v) in results.iter().zip(&values) {
                frame.values.insert(r, *v);
            }
            frame.next = frame.func.layout.next_inst(inst);
            return Some(None);
        }
        let frame = st.frames.pop()?;
        let Some(caller) = st.frames.last_mut() else {
            return Some(Some(Tree::Return(values.iter().map(|v| v.term).collect())));
        };
        if frame.results_to.len() != values.len() {
            return None;
        }
        for (&r, v) in frame.results_to.iter().zip(&values) {
            caller.values.insert(r, *v);
        }
        let at = caller.next?;
        caller.next = caller.func.layout.next_inst(at);
        Some(None)
    }

    /// A load or store: an event, its results new terms.
    fn event_at(
        &mut self,
        st: &mut State<'a>,
        events: &mut Vec<(String, Vec<Term>)>,
        kind: String,
        operands: Vec<Term>,
        types: &[Type],
        results: Vec<Value>,
    ) -> Option<()> {
        events.push((kind, operands));
        let n = st.events;
        st.events += 1;
        let frame = st.frames.last_mut()?;
        let inst = frame.next?;
        for (k, (&r, &ty)) in results.iter().zip(types).enumerate() {
            let term = self.terms.of(Node::Result(n, k));
            let unknown = Known {
                term,
                ty,
                known: 0,
                bits: 0,
            };
            frame.values.insert(r, unknown);
        }
        frame.next = frame.func.layout.next_inst(inst);
        Some(())
    }
}

/// `fcvt_to_uint` or `fcvt_to_sint` of the constant float `x` to `ty`: its value, or the trap
/// (named by the conversion and the reason, not by a code the interpreter may use, so that it
/// equals only the same trap of a conversion).
fn convert(op: Opcode, x: &Known, ty: Type) -> Result<u128, String> {
    let c = x.constant().unwrap_or(0);
    let v = match x.ty.bits() {
        32 => f64::from(f32::from_bits(c as u32)),
        _ => f64::from_bits(c as u64),
    };
    if v.is_nan() {
        return Err(format!("{op} of NaN"));
    }
    let t = v.trunc();
    let bits = ty.bits() as i32;
    let (low, high) = match op {
        Opcode::FcvtToUint => (0.0, 2f64.powi(bits)),
        _ => (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1)),
    };
    if t < low || t >= high {
        return Err(format!("{op} out of range"));
    }
    Ok((t as i128) as u128 & full_mask(ty))
}

/// The types of the results of a call `inst`, by its signature (a tail call's too).
fn call_result_types(func: &Function, inst: Inst) -> Vec<Type> {
    let sig = match func.dfg.insts[inst] {
        InstructionData::Call { func_ref, .. } => func.dfg.ext_funcs[func_ref].signature,
        InstructionData::CallIndirect { sig_ref, .. } => sig_ref,
        _ => return Vec::new(),
    };
    func.dfg.signatures[sig]
        .returns
        .iter()
        .map(|r| r.value_type)
        .collect()
}

/// The small masks (at most three bits) the module's functions apply to an entry parameter.
fn split_mask(module: &ClifModule) -> u128 {
    let mut mask = 0u128;
    for mf in module.functions() {
        let func = &mf.func;
        let Some(entry) = func.layout.entry_block() else {
            continue;
        };
        let params = func.dfg.block_params(entry);
        for block in func.layout.blocks() {
            for inst in func.layout.block_insts(block) {
                if func.dfg.insts[inst].opcode() != Opcode::Band {
                    continue;
                }
                let args = func.dfg.inst_args(inst);
                for k in 0..args.len().min(2) {
                    let (x, m) = (args[k], args[1 - k]);
                    let c = constant_of(func, m);
                    if params.contains(&func.dfg.resolve_aliases(x))
                        && let Some(c) = c.filter(|c| c.count_ones() <= 3)
                    {
                        mask |= c;
                    }
                }
            }
        }
    }
    mask
}

fn constant_of(func: &Function, v: Value) -> Option<u128> {
    let v = func.dfg.resolve_aliases(v);
    let cranelift_codegen::ir::ValueDef::Result(inst, _) = func.dfg.value_def(v) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm.bits() as u64 as u128 & full_mask(func.dfg.value_type(v))),
        _ => None,
    }
}

/// What a case of the split knows of one parameter.
#[derive(Clone)]
enum ParamCase {
    Free,
    /// These bits (mask, values).
    Bits(u128, u128),
    /// It is the address of this function.
    Address(FuncName),
}

/// The cases of the split, each a case per parameter: a parameter that only ever holds the
/// address of one of a few functions (`targets`) by that function, then an integer parameter
/// by the bits of the module's small masks; at most [`CASES`] cases, the address parameters
/// first (they decide which code runs), then the others in order.
fn cases(
    func: &Function,
    module: &ClifModule,
    targets: &dyn Fn(usize) -> Option<Vec<FuncName>>,
) -> Vec<Vec<ParamCase>> {
    let entry = func.layout.entry_block().expect("an entry block");
    let mask = split_mask(module);
    let params = func.dfg.block_params(entry);
    let options: Vec<Vec<ParamCase>> = (params.iter().enumerate())
        .map(|(i, &p)| {
            let ty = func.dfg.value_type(p);
            let m = mask & full_mask(ty);
            if let Some(names) = targets(i) {
                names.into_iter().map(ParamCase::Address).collect()
            } else if ty.is_int() && m != 0 {
                (0..1u128 << m.count_ones())
                    .map(|n| ParamCase::Bits(m, spread(n, m)))
                    .collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut split = vec![false; params.len()];
    let mut count = 1;
    let addresses =
        (0..params.len()).filter(|&i| matches!(options[i].first(), Some(ParamCase::Address(_))));
    let others =
        (0..params.len()).filter(|&i| !matches!(options[i].first(), Some(ParamCase::Address(_))));
    for i in addresses.chain(others) {
        let n = options[i].len();
        if n > 0 && count * n <= CASES {
            split[i] = true;
            count *= n;
        }
    }
    let mut cases = vec![Vec::new()];
    for (i, options) in options.into_iter().enumerate() {
        if !split[i] {
            cases.iter_mut().for_each(|c| c.push(ParamCase::Free));
            continue;
        }
        cases = cases
            .into_iter()
            .flat_map(|c| {
                options.iter().map(move |o| {
                    let mut c = c.clone();
                    c.push(o.clone());
                    c
                })
            })
            .collect();
    }
    cases
}

/// The bits of `n`, from the lowest, placed at the bits of `mask`, from the lowest.
fn spread(mut n: u128, mask: u128) -> u128 {
    let mut value = 0;
    for b in 0..128 {
        if mask >> b & 1 == 1 {
            value |= (n & 1) << b;
            n >>= 1;
        }
    }
    value
}

/// Whether `mutant` of the function `func` of `module` (as the check runs it) does what `func`
/// does on every input (see the module docs): proven by equal trees in every case of the split.
/// `targets` gives the functions whose address a parameter may only ever hold, when it is so.
pub fn proven_equivalent(
    func: &Function,
    mutant: &Function,
    module: &ClifModule,
    targets: &dyn Fn(usize) -> Option<Vec<FuncName>>,
) -> bool {
    let name = FuncName::of_function(func);
    if module.resolve(&name).is_none() || func.signature != mutant.signature {
        return false;
    }
    let Some(entry) = func.layout.entry_block() else {
        return false;
    };
    let params = func.dfg.block_params(entry);
    let mut terms = Terms::default();
    cases(func, module, targets).into_iter().all(|case| {
        let tree = |body: &Function, terms: &mut Terms| {
            let mut run = Run {
                module,
                name: name.clone(),
                body,
                terms,
                steps: 0,
                forks: 0,
                nesting: 0,
            };
            let args: Vec<Known> = params
                .iter()
                .zip(&case)
                .enumerate()
                .map(|(i, (&p, known))| {
                    let ty = func.dfg.value_type(p);
                    match known {
                        ParamCase::Free => run.unknown(Node::Param(i), ty),
                        &ParamCase::Bits(mask, bits) => Known {
                            known: mask,
                            bits,
                            ..run.unknown(Node::Param(i), ty)
                        },
                        ParamCase::Address(callee) => {
                            let callee = run.function(callee).map_or(callee.clone(), |(n, _)| n);
                            run.unknown(Node::Func(callee), ty)
                        }
                    }
                })
                .collect();
            let mut st = State {
                frames: Vec::new(),
                events: 0,
                frames_made: 0,
            };
            run.enter(&mut st, body, &args, Vec::new())?;
            run.run(st)
        };
        let before = tree(func, &mut terms);
        let after = tree(mutant, &mut terms);
        if std::env::var_os("EQUIV_DEBUG").is_some() && (before.is_none() || before != after) {
            debug_difference(&terms, before.as_ref(), after.as_ref());
        }
        before.is_some() && before == after
    })
}

/// Prints where the trees of a case first differ (`EQUIV_DEBUG`).
fn debug_difference(terms: &Terms, before: Option<&Tree>, after: Option<&Tree>) {
    let (Some(mut a), Some(mut b)) = (before, after) else {
        let side = if before.is_none() {
            "the original"
        } else {
            "the mutant"
        };
        eprintln!("equivalence: {side} is not modelled");
        return;
    };
    let mut path = Vec::new();
    loop {
        match (a, b) {
            (Tree::Event(x, xs, ra), Tree::Event(y, ys, rb)) if x == y && xs == ys => {
                path.push(x.clone());
                (a, b) = (ra, rb);
            }
            (Tree::Fork(x, ta, ea), Tree::Fork(y, tb, eb)) if x == y => {
                if ta != tb {
                    path.push(format!("if {}", show(terms, *x, 3)));
                    (a, b) = (ta, tb);
                } else {
                    path.push(format!("if not {}", show(terms, *x, 3)));
                    (a, b) = (ea, eb);
                }
            }
            _ => break,
        }
    }
    eprintln!(
        "equivalence: after {path:?}:\n  original: {}\n  mutant:   {}",
        show_tree(terms, a),
        show_tree(terms, b)
    );
}

fn show_tree(terms: &Terms, tree: &Tree) -> String {
    let list = |ts: &[Term]| -> Vec<String> { ts.iter().map(|&t| show(terms, t, 3)).collect() };
    match tree {
        Tree::Return(ts) => format!("return {:?}", list(ts)),
        Tree::Trap(code) => format!("trap {code}"),
        Tree::Event(kind, ts, _) => format!("{kind} {:?} ...", list(ts)),
        Tree::Fork(t, _, _) => format!("fork on {} ...", show(terms, *t, 3)),
    }
}

/// A term as text, `depth` levels deep.
fn show(terms: &Terms, t: Term, depth: usize) -> String {
    match &terms.nodes[t as usize] {
        _ if depth == 0 => format!("t{t}"),
        Node::Const(ty, c) => format!("{ty} {c:#x}"),
        Node::Param(i) => format!("p{i}"),
        Node::Op(key, args) => {
            let args: Vec<String> = args.iter().map(|&a| show(terms, a, depth - 1)).collect();
            format!("({key} {})", args.join(" "))
        }
        Node::Result(n, k) => format!("event{n}.{k}"),
        Node::Func(name) => format!("&{name}"),
        Node::Slot(frame, slot, offset) => format!("frame{frame}.ss{slot}+{offset}"),
        Node::Loaded(kind, addr, n) => {
            format!("({kind} {} after {n})", show(terms, *addr, depth - 1))
        }
    }
}
