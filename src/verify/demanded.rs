//! Demanded bits (as LLVM's `DemandedBits`): which bits of each value some path of a module may
//! observe, so that the mutation check of `--verify` can prove a corruption equivalent by
//! construction and leave it out — a change of bits nothing demands cannot show, whatever the
//! inputs (`iconst -1` made `iconst -4294967297`, added to a value that every callee masks
//! with `band _, 3`).
//!
//! The analysis over-approximates: a bit is demanded unless every use is known not to look
//! at it. Observable uses (a return, a store, a call that is not run, an indirect call's
//! address, a branch or trap condition, an operand of an instruction that may trap) demand
//! every bit; a call to a function of the module demands what the callee's parameter demands
//! for its effects, and for each of its results the caller looks at (a least fixed point over
//! the module: a value the callee only returns, passed to a call whose results are dropped, is
//! not demanded); a block argument what the block parameter demands;
//! a pure operation what its result's demanded bits need of the operand (`iadd`: the bits up
//! to the highest demanded one; `band x, 3`: bits 0 and 1 of `x`; `ireduce`: the low bits;
//! none for `icmp`, `isub` or `bxor` of a value with itself, nor for the condition of a
//! `select` between a value and itself; anything else: all bits once any bit of the result is
//! demanded).
//!
//! An unsigned division by a divisor known not to be zero (see below) cannot trap: its
//! dividend is demanded only through its result, its divisor in full.
//!
//! Instructions after a trap that always fires where it stands are never run, and demand
//! nothing (`executed_insts`): `trap`, `trapz` of zero, `trapnz` of a value known not to be
//! zero there (a nonzero constant; the condition of the `brif` whose taken side is the only way
//! into the block; `umax`, `bor` or an extension of one; `band x, (band x, m)`, which is
//! `band x, m`; a product of one by a constant that cannot wrap to zero, the factor bounded by
//! a mask). Each fact rests only on values that the trap's condition demands in full, so a
//! corruption of bits nothing demands leaves the trap firing as before.

use crate::module::{ClifModule, FuncName};
use cranelift_codegen::ir::{
    Block, Function, Inst, InstructionData, Opcode, Type, Value, ValueDef, immediates::Imm64,
};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// The demanded bits of a function's values (absent: none).
pub type Demand = FxHashMap<Value, u128>;

/// What a function's entry parameters demand, apart by what observes them: its effects (stores,
/// calls, traps, branches: anything but its results), and each of its results. A call whose
/// results the caller never looks at demands of its arguments only what the callee's effects
/// do (an argument the callee only returns, passed to a call whose results are dropped, is
/// never observed).
#[derive(Clone, PartialEq, Eq)]
struct ParamDemand {
    /// By parameter.
    effects: Vec<u128>,
    /// By result, then by parameter: besides `effects`.
    results: Vec<Vec<u128>>,
}

/// Which of a function's outputs the demand of its values starts from.
#[derive(Clone, Copy)]
enum Observed {
    /// Everything: its effects and every result (a function the check calls itself).
    All,
    /// Its effects only.
    Effects,
    /// Its effects and result `r`.
    Result(usize),
}

/// The demanded bits of the entry parameters of every function of a module (none known: every
/// bit, by default).
#[derive(Default)]
pub struct DemandedParams {
    by_name: BTreeMap<FuncName, ParamDemand>,
    /// The functions whose address a parameter may hold, for the parameters that only ever
    /// hold function addresses (see [`indirect_targets`]).
    targets: BTreeMap<(FuncName, usize), BTreeSet<FuncName>>,
}

impl DemandedParams {
    /// The least fixed point over `module` (as the check runs it), whose functions of `entries`
    /// the check calls with any arguments: nothing demanded, then grown until stable.
    pub fn of(module: &ClifModule, entries: &ClifModule) -> DemandedParams {
        let mut params = DemandedParams {
            by_name: module
                .functions()
                .map(|mf| {
                    let n = mf.func.signature.params.len();
                    let results = mf.func.signature.returns.len();
                    let none = ParamDemand {
                        effects: vec![0; n],
                        results: vec![vec![0; n]; results],
                    };
                    (mf.name.clone(), none)
                })
                .collect(),
            targets: indirect_targets(module, entries),
        };
        // A worklist: a function's demand is found again only when that of a function it
        // names (calls, takes the address of, or receives as a parameter's target) grew. The
        // least fixed point is the same whatever the order.
        let functions: Vec<&crate::module::ModuleFunction> = module.functions().collect();
        let index: FxHashMap<&FuncName, usize> = functions
            .iter()
            .enumerate()
            .map(|(i, mf)| (&mf.name, i))
            .collect();
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
        for (i, mf) in functions.iter().enumerate() {
            let named = (mf.func.dfg.ext_funcs.values())
                .filter_map(|ext| FuncName::of_external(&ext.name, &mf.func));
            let targets = (params.targets.range((mf.name.clone(), 0)..))
                .take_while(|((name, _), _)| *name == mf.name)
                .flat_map(|(_, set)| set.iter().cloned());
            for name in named.chain(targets) {
                let defined = module.resolve(&name).map(|id| &module.function(id).name);
                if let Some(&j) = defined.and_then(|name| index.get(name)) {
                    dependents[j].push(i);
                }
            }
        }
        let mut queued = vec![true; functions.len()];
        let mut work: std::collections::VecDeque<usize> = (0..functions.len()).collect();
        while let Some(i) = work.pop_front() {
            queued[i] = false;
            let mf = functions[i];
            let Some(entry) = mf.func.layout.entry_block() else {
                continue;
            };
            let of_entry = |observed| -> Vec<u128> {
                let demand = demanded_from(&mf.func, module, &params, observed);
                mf.func
                    .dfg
                    .block_params(entry)
                    .iter()
                    .map(|v| demand.get(v).copied().unwrap_or(0))
                    .collect()
            };
            let now = ParamDemand {
                effects: of_entry(Observed::Effects),
                results: (0..mf.func.signature.returns.len())
                    .map(|r| of_entry(Observed::Result(r)))
                    .collect(),
            };
            let before = params.by_name.get_mut(&mf.name).unwrap();
            if *before != now {
                *before = now;
                for &d in &dependents[i] {
                    if !std::mem::replace(&mut queued[d], true) {
                        work.push_back(d);
                    }
                }
            }
        }
        params
    }

    /// The functions whose address parameter `k` of `name` only ever holds, when it is so (see
    /// `indirect_targets`).
    pub fn targets_of(&self, name: &FuncName, k: usize) -> Option<Vec<FuncName>> {
        let set = self.targets.get(&(name.clone(), k))?;
        Some(set.iter().cloned().collect())
    }

    /// What argument `k` of a call to `callee` demands, when the caller looks at the results
    /// `looked_at` (a set of result indices): all of `full` for a function the module does not
    /// define.
    fn argument(
        &self,
        module: &ClifModule,
        callee: Option<FuncName>,
        k: usize,
        full: u128,
        looked_at: &Results,
    ) -> u128 {
        let defined = callee.and_then(|name| module.resolve(&name).map(|id| module.function(id)));
        let Some(p) = defined.and_then(|mf| self.by_name.get(&mf.name)) else {
            return full;
        };
        let Some(&effects) = p.effects.get(k) else {
            return full;
        };
        let results = p.results.iter().enumerate();
        let by_results = results
            .filter(|(r, _)| looked_at.contains(*r))
            .fold(0, |acc, (_, d)| acc | d.get(k).copied().unwrap_or(full));
        (effects | by_results) & full
    }
}

/// The parameters of `module`'s functions that only ever hold the address of a function of the
/// module, with those functions: a parameter of a function that the check never calls itself
/// (not in `entries`), whose address is never taken (no `func_addr`, `symbol_value` or alias
/// of it), and to which every call of the module passes a `func_addr` there. (A shared body of
/// similar merging, to which each member passes its callee's address.)
fn indirect_targets(
    module: &ClifModule,
    entries: &ClifModule,
) -> BTreeMap<(FuncName, usize), BTreeSet<FuncName>> {
    let defined = |name: &FuncName| {
        module
            .resolve(name)
            .map(|id| module.function(id).name.clone())
    };
    let mut taken: BTreeSet<FuncName> = BTreeSet::new();
    let mut passed: BTreeMap<(FuncName, usize), Option<BTreeSet<FuncName>>> = BTreeMap::new();
    for alias in module.aliases() {
        taken.extend([&alias.name, &alias.target].into_iter().filter_map(defined));
    }
    for mf in module.functions() {
        let func = &mf.func;
        for gv in func.global_values.values() {
            if let cranelift_codegen::ir::GlobalValueData::Symbol { name, .. } = gv {
                taken.extend(FuncName::of_external(name, func).as_ref().and_then(defined));
            }
        }
        for block in func.layout.blocks() {
            for inst in func.layout.block_insts(block) {
                match func.dfg.insts[inst] {
                    InstructionData::FuncAddr { func_ref, .. } => taken.extend(
                        FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
                            .as_ref()
                            .and_then(defined),
                    ),
                    InstructionData::Call { .. } => {
                        let Some(callee) = callee_of(func, inst).as_ref().and_then(defined) else {
                            continue;
                        };
                        for (k, &arg) in func.dfg.inst_args(inst).iter().enumerate() {
                            let target = address_of(func, arg).as_ref().and_then(defined);
                            let set = passed
                                .entry((callee.clone(), k))
                                .or_insert_with(|| Some(BTreeSet::new()));
                            match (target, set.as_mut()) {
                                (Some(t), Some(s)) => {
                                    s.insert(t);
                                }
                                _ => *set = None,
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    passed
        .into_iter()
        .filter(|((callee, _), _)| entries.resolve(callee).is_none() && !taken.contains(callee))
        .filter_map(|(key, set)| Some((key, set?)))
        .collect()
}

/// All the bits of a value of type `ty`.
fn full_mask(ty: Type) -> u128 {
    match ty.bits() {
        0 => 0,
        b if b >= 128 => u128::MAX,
        b => (1u128 << b) - 1,
    }
}

/// The bits from 0 to the highest bit of `d` (what an addition's result bits `d` need).
fn up_to_highest(d: u128) -> u128 {
    match d {
        0 => 0,
        _ => u128::MAX >> d.leading_zeros(),
    }
}

/// The integer constant `v` is, when it is one (its bits in its type).
fn constant(func: &Function, v: Value) -> Option<u128> {
    let v = func.dfg.resolve_aliases(v);
    let ValueDef::Result(inst, _) = func.dfg.value_def(v) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm_bits(imm) & full_mask(func.dfg.value_type(v))),
        _ => None,
    }
}

fn imm_bits(imm: Imm64) -> u128 {
    imm.bits() as u64 as u128
}

/// Bits known to be zero in `v` (a few levels of constants, masks and zero extensions).
fn known_zero(func: &Function, v: Value, depth: u32) -> u128 {
    let v = func.dfg.resolve_aliases(v);
    let full = full_mask(func.dfg.value_type(v));
    if let Some(c) = constant(func, v) {
        return !c & full;
    }
    let ValueDef::Result(inst, _) = func.dfg.value_def(v) else {
        return 0;
    };
    if depth == 0 {
        return 0;
    }
    let args = func.dfg.inst_args(inst);
    match func.dfg.insts[inst].opcode() {
        Opcode::Band => known_zero(func, args[0], depth - 1) | known_zero(func, args[1], depth - 1),
        Opcode::Uextend => full & !full_mask(func.dfg.value_type(args[0])),
        _ => 0,
    }
}

/// Whether an operand of `op` is observed whatever the result: the instruction has an effect
/// of its own (stores, traps, calls, branches, returns).
fn observed_anyway(op: Opcode) -> bool {
    op.is_call()
        || op.is_branch()
        || op.is_terminator()
        || op.can_trap()
        || op.can_store()
        || op.can_load()
        || op.other_side_effects()
}

/// Whether the unsigned division `inst` cannot trap: its divisor is known not to be zero.
fn cannot_trap(func: &Function, inst: Inst, preds: &Predecessors) -> bool {
    let divisor = func.dfg.inst_args(inst)[1];
    func.layout
        .inst_block(inst)
        .is_some_and(|block| nonzero(func, divisor, block, preds, 6))
}

/// The bits of operand `k` of the pure instruction `inst` that its result's demanded bits `d`
/// need.
fn operand_demand(func: &Function, inst: Inst, k: usize, d: u128) -> u128 {
    let args = func.dfg.inst_args(inst);
    let ty = func.dfg.value_type(args[k]);
    let full = full_mask(ty);
    if d == 0 {
        return 0;
    }
    let other = || args[1 - k];
    // A vector shifts each lane by the amount modulo the lane's width, bits never crossing
    // lanes: not the whole vector's bits moved, so a vector's shift demands all its bits.
    let shift = || {
        let amount = constant(func, args[1]).filter(|_| !ty.is_vector())?;
        Some((amount % u128::from(ty.bits().max(1))) as u32)
    };
    let same = |a: usize, b: usize| {
        args.len() > a.max(b)
            && func.dfg.resolve_aliases(args[a]) == func.dfg.resolve_aliases(args[b])
    };
    let op = func.dfg.insts[inst].opcode();
    // A value compared with itself, or subtracted from or xored with itself, gives a constant;
    // a `select` between a value and itself does not look at its condition.
    if (same(0, 1) && matches!(op, Opcode::Icmp | Opcode::Isub | Opcode::Bxor))
        || (op == Opcode::Select && k == 0 && same(1, 2))
    {
        return 0;
    }
    match op {
        Opcode::Iadd | Opcode::Isub | Opcode::Imul | Opcode::Ineg => up_to_highest(d) & full,
        Opcode::Bxor | Opcode::Bnot => d & full,
        Opcode::Band if args.len() == 2 => d & full & !known_zero(func, other(), 4),
        Opcode::Bor if args.len() == 2 => d & full & !constant(func, other()).unwrap_or(0),
        Opcode::Ireduce | Opcode::Uextend => d & full,
        Opcode::Sextend => {
            let sign = 1u128 << (ty.bits() - 1);
            (d & full) | if d & !full != 0 { sign } else { 0 }
        }
        Opcode::Ishl if k == 0 => match shift() {
            Some(s) => (d >> s) & full,
            None => full,
        },
        Opcode::Ushr if k == 0 => match shift() {
            Some(s) => (d << s) & full,
            None => full,
        },
        Opcode::Select if k > 0 => d & full,
        _ => full,
    }
}

/// The results of a call the caller looks at.
enum Results {
    All,
    These(Vec<usize>),
}

impl Results {
    fn contains(&self, r: usize) -> bool {
        match self {
            Results::All => true,
            Results::These(rs) => rs.contains(&r),
        }
    }
}

/// The demanded bits of every value of `func` (absent: none), given what the parameters of
/// the module's functions demand, when all it does is observed (a function the check runs).
pub fn demanded_values(func: &Function, module: &ClifModule, params: &DemandedParams) -> Demand {
    demanded_from(func, module, params, Observed::All)
}

/// [`demanded_values`] when only what `observed` says of `func` is observed.
fn demanded_from(
    func: &Function,
    module: &ClifModule,
    params: &DemandedParams,
    observed: Observed,
) -> Demand {
    let insts = executed_insts(func);
    let preds = predecessors(func);
    let mut demand = Demand::default();
    let get = |demand: &Demand, v: Value| {
        demand
            .get(&func.dfg.resolve_aliases(v))
            .copied()
            .unwrap_or(0)
    };
    loop {
        let mut changed = false;
        let mut add = |demand: &mut Demand, v: Value, bits: u128| {
            if bits == 0 {
                return;
            }
            let entry = demand.entry(func.dfg.resolve_aliases(v)).or_insert(0);
            if *entry | bits != *entry {
                *entry |= bits;
                changed = true;
            }
        };
        for &inst in insts.iter().rev() {
            let dfg = &func.dfg;
            let op = dfg.insts[inst].opcode();
            let args = dfg.inst_args(inst);
            let result_demand = dfg
                .inst_results(inst)
                .iter()
                .fold(0, |acc, &r| acc | get(&demand, r));
            // The callee's results the caller looks at: a tail call's are this function's.
            let looked_at = |demand: &Demand| match (op, observed) {
                (Opcode::ReturnCall | Opcode::ReturnCallIndirect, Observed::All) => Results::All,
                (Opcode::ReturnCall | Opcode::ReturnCallIndirect, Observed::Effects) => {
                    Results::These(Vec::new())
                }
                (Opcode::ReturnCall | Opcode::ReturnCallIndirect, Observed::Result(r)) => {
                    Results::These(vec![r])
                }
                _ => Results::These(
                    (dfg.inst_results(inst).iter().enumerate())
                        .filter(|&(_, &r)| get(demand, r) != 0)
                        .map(|(i, _)| i)
                        .collect(),
                ),
            };
            for (k, &a) in args.iter().enumerate() {
                let full = full_mask(dfg.value_type(a));
                let bits = match op {
                    Opcode::Call | Opcode::ReturnCall => {
                        params.argument(module, callee_of(func, inst), k, full, &looked_at(&demand))
                    }
                    Opcode::CallIndirect | Opcode::ReturnCallIndirect if k > 0 => {
                        match possible_callees(func, args[0], params) {
                            Some(callees) => callees.iter().fold(0, |acc, callee| {
                                let callee = Some(callee.clone());
                                acc | params.argument(
                                    module,
                                    callee,
                                    k - 1,
                                    full,
                                    &looked_at(&demand),
                                )
                            }),
                            None => full,
                        }
                    }
                    Opcode::Return => match observed {
                        Observed::All => full,
                        Observed::Effects => 0,
                        Observed::Result(r) if r == k => full,
                        Observed::Result(_) => 0,
                    },
                    // A division by a divisor known not to be zero cannot trap: only its
                    // result observes the dividend (the divisor, which the fact rests on, is
                    // demanded in full, as a trap's condition is).
                    Opcode::Udiv | Opcode::Urem if k == 0 && cannot_trap(func, inst, &preds) => {
                        operand_demand(func, inst, k, result_demand)
                    }
                    _ if observed_anyway(op) => full,
                    _ => operand_demand(func, inst, k, result_demand),
                };
                add(&mut demand, a, bits);
            }
            for call in dfg.insts[inst].branch_destination(&dfg.jump_tables, &dfg.exception_tables)
            {
                let block = call.block(&dfg.value_lists);
                let block_params = dfg.block_params(block);
                for (i, arg) in call.args(&dfg.value_lists).enumerate() {
                    if let (cranelift_codegen::ir::BlockArg::Value(v), Some(&p)) =
                        (arg, block_params.get(i))
                    {
                        let bits = get(&demand, p);
                        add(&mut demand, v, bits);
                    }
                }
            }
        }
        if !changed {
            return demand;
        }
    }
}

/// What the callee may observe of each argument of the call `inst` of `func` (an indirect
/// call's address left out), given `demand`, the demanded bits of `func`'s values
/// ([`demanded_values`]): what its parameter demands for its effects and for the results the
/// caller looks at (all of them for a tail call), over every callee the call may reach; every
/// bit where the callee is not known or not defined.
pub fn call_argument_demand(
    func: &Function,
    inst: Inst,
    module: &ClifModule,
    params: &DemandedParams,
    demand: &Demand,
) -> Vec<u128> {
    let dfg = &func.dfg;
    let op = dfg.insts[inst].opcode();
    let args = dfg.inst_args(inst);
    let looked_at = match op {
        Opcode::ReturnCall | Opcode::ReturnCallIndirect => Results::All,
        _ => Results::These(
            (dfg.inst_results(inst).iter().enumerate())
                .filter(|&(_, r)| demand.get(r).is_some_and(|&d| d != 0))
                .map(|(i, _)| i)
                .collect(),
        ),
    };
    let indirect = matches!(op, Opcode::CallIndirect | Opcode::ReturnCallIndirect);
    let callees = match indirect {
        true => args
            .first()
            .and_then(|&a| possible_callees(func, a, params)),
        false => callee_of(func, inst).map(|callee| vec![callee]),
    };
    let first_parameter = usize::from(indirect);
    (first_parameter..args.len())
        .map(|k| {
            let full = full_mask(dfg.value_type(args[k]));
            let Some(callees) = &callees else {
                return full;
            };
            callees.iter().fold(0, |acc, callee| {
                let callee = Some(callee.clone());
                acc | params.argument(module, callee, k - first_parameter, full, &looked_at)
            })
        })
        .collect()
}

/// The instructions of `func` that some run may execute, in the order of their blocks from
/// the entry: a block's instructions up to a trap that always fires there (included), and the
/// blocks its branches reach when it has none.
pub fn executed_insts(func: &Function) -> Vec<Inst> {
    let Some(entry) = func.layout.entry_block() else {
        return Vec::new();
    };
    let preds = predecessors(func);
    let mut seen: BTreeSet<Block> = [entry].into_iter().collect();
    let mut queue = std::collections::VecDeque::from([entry]);
    let mut insts = Vec::new();
    while let Some(block) = queue.pop_front() {
        let mut completes = true;
        for inst in func.layout.block_insts(block) {
            insts.push(inst);
            if always_traps(func, inst, block, &preds) {
                completes = false;
                break;
            }
        }
        let Some(last) = func.layout.last_inst(block).filter(|_| completes) else {
            continue;
        };
        let dfg = &func.dfg;
        for call in dfg.insts[last].branch_destination(&dfg.jump_tables, &dfg.exception_tables) {
            let next = call.block(&dfg.value_lists);
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    insts
}

/// Every block's ways in: the branch and which of its destinations.
type Predecessors = FxHashMap<Block, Vec<(Inst, usize)>>;

fn predecessors(func: &Function) -> Predecessors {
    let dfg = &func.dfg;
    let mut preds = Predecessors::default();
    for block in func.layout.blocks() {
        let Some(last) = func.layout.last_inst(block) else {
            continue;
        };
        let dests = dfg.insts[last].branch_destination(&dfg.jump_tables, &dfg.exception_tables);
        for (k, call) in dests.iter().enumerate() {
            preds
                .entry(call.block(&dfg.value_lists))
                .or_default()
                .push((last, k));
        }
    }
    preds
}

/// Whether `inst`, in `block`, is a trap that fires whenever it runs.
fn always_traps(func: &Function, inst: Inst, block: Block, preds: &Predecessors) -> bool {
    match func.dfg.insts[inst] {
        InstructionData::Trap { .. } => true,
        InstructionData::CondTrap {
            opcode: Opcode::Trapz,
            arg,
            ..
        } => constant(func, arg) == Some(0),
        InstructionData::CondTrap {
            opcode: Opcode::Trapnz,
            arg,
            ..
        } => nonzero(func, arg, block, preds, 6),
        _ => false,
    }
}

/// Whether the integer `v` is known not to be zero wherever it is used in `block` (see the
/// module docs), looking `depth` definitions deep.
fn nonzero(func: &Function, v: Value, block: Block, preds: &Predecessors, depth: u32) -> bool {
    let v = func.dfg.resolve_aliases(v);
    if depth == 0 || !func.dfg.value_type(v).is_int() {
        return false;
    }
    if let Some(c) = constant(func, v) {
        return c != 0;
    }
    if tested_nonzero(func, v, block, preds) {
        return true;
    }
    let ValueDef::Result(inst, _) = func.dfg.value_def(v) else {
        return false;
    };
    let args = func.dfg.inst_args(inst);
    let deeper = |a: Value| nonzero(func, a, block, preds, depth - 1);
    match func.dfg.insts[inst].opcode() {
        Opcode::Bor | Opcode::Umax => args.iter().any(|&a| deeper(a)),
        Opcode::Uextend | Opcode::Sextend => deeper(args[0]),
        Opcode::Band => (0..2).any(|k| {
            // `band x, y` where `y` is `band x, m`: that is `y`.
            let (x, y) = (func.dfg.resolve_aliases(args[k]), args[1 - k]);
            is_band_of(func, y, x) && deeper(y)
        }),
        Opcode::Imul => (0..2).any(|k| {
            let Some(c) = constant(func, args[1 - k]) else {
                return false;
            };
            let width = func.dfg.value_type(v).bits();
            let magnitude = sign_extend(c, width).unsigned_abs();
            let fits = |bound: u128| {
                bound
                    .checked_mul(magnitude)
                    .is_some_and(|p| width >= 128 || p >> width == 0)
            };
            c != 0 && upper_bound(func, args[k], 6).is_some_and(fits) && deeper(args[k])
        }),
        _ => false,
    }
}

/// Whether `block` (and each block on its one way in, a few steps up) is entered only through
/// the taken side of a `brif` of `v`.
fn tested_nonzero(func: &Function, v: Value, block: Block, preds: &Predecessors) -> bool {
    let mut at = block;
    for _ in 0..8 {
        let Some(&[(branch, side)]) = preds.get(&at).map(Vec::as_slice) else {
            return false;
        };
        if let InstructionData::Brif { arg, .. } = func.dfg.insts[branch]
            && side == 0
            && func.dfg.resolve_aliases(arg) == v
        {
            return true;
        }
        match func.layout.inst_block(branch) {
            Some(b) => at = b,
            None => return false,
        }
    }
    false
}

/// Whether `y` is `band x, m` (either order).
fn is_band_of(func: &Function, y: Value, x: Value) -> bool {
    let ValueDef::Result(inst, _) = func.dfg.value_def(func.dfg.resolve_aliases(y)) else {
        return false;
    };
    func.dfg.insts[inst].opcode() == Opcode::Band
        && func
            .dfg
            .inst_args(inst)
            .iter()
            .any(|&a| func.dfg.resolve_aliases(a) == x)
}

/// A bound on the unsigned value of `v`: a constant's value, the least of a mask's operands'
/// bounds, an unsigned extension's operand's.
fn upper_bound(func: &Function, v: Value, depth: u32) -> Option<u128> {
    if let Some(c) = constant(func, v) {
        return Some(c);
    }
    let ValueDef::Result(inst, _) = func.dfg.value_def(func.dfg.resolve_aliases(v)) else {
        return None;
    };
    if depth == 0 {
        return None;
    }
    let args = func.dfg.inst_args(inst);
    match func.dfg.insts[inst].opcode() {
        Opcode::Band => args
            .iter()
            .filter_map(|&a| upper_bound(func, a, depth - 1))
            .min(),
        Opcode::Uextend => upper_bound(func, args[0], depth - 1),
        _ => None,
    }
}

fn sign_extend(c: u128, width: u32) -> i128 {
    let unused = 128 - width.min(128);
    ((c << unused) as i128) >> unused
}

/// The callee's name of a direct call `inst`.
fn callee_of(func: &Function, inst: Inst) -> Option<FuncName> {
    match func.dfg.insts[inst] {
        InstructionData::Call { func_ref, .. } => {
            FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
        }
        _ => None,
    }
}

/// The functions an indirect call through `v` in `func` may run, when they are known: the one
/// whose address `v` is, those an entry parameter of `func` may hold, or those of either
/// operand of a `select`.
fn possible_callees(func: &Function, v: Value, params: &DemandedParams) -> Option<Vec<FuncName>> {
    if let Some(name) = address_of(func, v) {
        return Some(vec![name]);
    }
    match func.dfg.value_def(func.dfg.resolve_aliases(v)) {
        ValueDef::Param(block, i) if Some(block) == func.layout.entry_block() => {
            let set = params.targets.get(&(FuncName::of_function(func), i))?;
            Some(set.iter().cloned().collect())
        }
        ValueDef::Result(inst, _) if func.dfg.insts[inst].opcode() == Opcode::Select => {
            let args = func.dfg.inst_args(inst);
            let mut both = possible_callees(func, args[1], params)?;
            both.extend(possible_callees(func, args[2], params)?);
            Some(both)
        }
        _ => None,
    }
}

/// The function whose address `v` is, when it is a `func_addr` of a name.
fn address_of(func: &Function, v: Value) -> Option<FuncName> {
    let ValueDef::Result(inst, _) = func.dfg.value_def(func.dfg.resolve_aliases(v)) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::FuncAddr { func_ref, .. } => {
            FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
        }
        _ => None,
    }
}

/// The bits in which the value `a` of `func` may differ from `b` of `mutant` (the operand
/// before and after a change): their difference for two constants, the bits a mask clears
/// when one is the other masked (`band b, 3` against `b`), else all.
fn operand_difference(func: &Function, a: Value, mutant: &Function, b: Value) -> u128 {
    let full = full_mask(func.dfg.value_type(a));
    if let (Some(x), Some(y)) = (constant(func, a), constant(mutant, b)) {
        return x ^ y;
    }
    let masked = |f: &Function, v: Value, other: Value| -> Option<u128> {
        let ValueDef::Result(inst, _) = f.dfg.value_def(f.dfg.resolve_aliases(v)) else {
            return None;
        };
        let args = f.dfg.inst_args(inst);
        (f.dfg.insts[inst].opcode() == Opcode::Band && args.len() == 2)
            .then(|| {
                (0..2).find_map(|k| {
                    (f.dfg.resolve_aliases(args[k]) == other)
                        .then(|| constant(f, args[1 - k]))
                        .flatten()
                })
            })
            .flatten()
            .map(|c| !c & full)
    };
    masked(func, a, b)
        .or_else(|| masked(mutant, b, a))
        .unwrap_or(full)
}

/// Whether the change of `inst` from `func` to `mutant` (one field, in place) changes no bit
/// that any path demands, so that no input can tell the two apart: a pure instruction whose
/// results may differ only in bits `demand` (from [`demanded_values`] over `func`) has none
/// of. Conservative: false whenever the difference is not known to be that small.
pub fn change_is_undemanded(
    func: &Function,
    mutant: &Function,
    inst: Inst,
    demand: &Demand,
) -> bool {
    let (before, after) = (&func.dfg.insts[inst], &mutant.dfg.insts[inst]);
    let op = before.opcode();
    if observed_anyway(op) || observed_anyway(after.opcode()) {
        return false;
    }
    let results = func.dfg.inst_results(inst);
    if results.len() != 1 || mutant.dfg.inst_results(inst).len() != 1 {
        return false;
    }
    let r = results[0];
    let full = full_mask(func.dfg.value_type(r));
    if func.dfg.value_type(r) != mutant.dfg.value_type(mutant.dfg.inst_results(inst)[0]) {
        return false;
    }
    let difference = if let (
        InstructionData::UnaryImm {
            imm: x,
            opcode: Opcode::Iconst,
        },
        InstructionData::UnaryImm {
            imm: y,
            opcode: Opcode::Iconst,
        },
    ) = (before, after)
    {
        (imm_bits(*x) ^ imm_bits(*y)) & full
    } else if before.opcode() == after.opcode() {
        let (a, b) = (func.dfg.inst_args(inst), mutant.dfg.inst_args(inst));
        let changed: Vec<usize> = (0..a.len().min(b.len()))
            .filter(|&k| a[k] != b[k])
            .collect();
        match (op, changed.as_slice()) {
            (Opcode::Iadd | Opcode::Isub | Opcode::Imul, &[k]) if a.len() == b.len() => {
                // Bits below the lowest differing bit of an operand stay the same.
                match operand_difference(func, a[k], mutant, b[k]) {
                    0 => 0,
                    m => (u128::MAX << m.trailing_zeros()) & full,
                }
            }
            (Opcode::Bxor | Opcode::Band | Opcode::Bor, &[k]) if a.len() == b.len() => {
                operand_difference(func, a[k], mutant, b[k])
            }
            _ => full,
        }
    } else {
        full
    };
    let demanded = demand
        .get(&func.dfg.resolve_aliases(r))
        .copied()
        .unwrap_or(0);
    difference & demanded == 0
}

/// Whether the change of `inst` from `func` to `mutant` changes only arguments of a call to
/// functions of the module (the callee kept: the same `func_ref`, or the same signature and
/// address of an indirect call whose possible callees are known) in bits that the callees'
/// parameters do not demand, so that no input can tell the two apart: a parameter the callee
/// never reads (Wasmtime's caller `vmctx`), or reads only masked. What the callee demands for
/// its results counts only for the results the caller looks at (`demand`, from
/// [`demanded_values`] over `func`); a tail call's results are the function's own, all
/// observed. Conservative: false for a call to a function the module does not define, or
/// through an address whose callees are not known.
pub fn call_change_is_undemanded(
    func: &Function,
    mutant: &Function,
    inst: Inst,
    module: &ClifModule,
    params: &DemandedParams,
    demand: &Demand,
) -> bool {
    let (before, after) = (&func.dfg.insts[inst], &mutant.dfg.insts[inst]);
    let op = before.opcode();
    let same_callee = match (before, after) {
        (InstructionData::Call { func_ref: x, .. }, InstructionData::Call { func_ref: y, .. }) => {
            x == y && op == after.opcode()
        }
        (
            InstructionData::CallIndirect { sig_ref: x, .. },
            InstructionData::CallIndirect { sig_ref: y, .. },
        ) => x == y && op == after.opcode(),
        _ => false,
    };
    let (a, b) = (func.dfg.inst_args(inst), mutant.dfg.inst_args(inst));
    if !same_callee || a.len() != b.len() {
        return false;
    }
    let indirect = matches!(op, Opcode::CallIndirect | Opcode::ReturnCallIndirect);
    if indirect && a[0] != b[0] {
        return false;
    }
    let callees = match indirect {
        true => match possible_callees(func, a[0], params) {
            Some(callees) => callees,
            None => return false,
        },
        false => match callee_of(func, inst) {
            Some(callee) => vec![callee],
            None => return false,
        },
    };
    if callees.iter().any(|c| module.resolve(c).is_none()) {
        return false;
    }
    let looked_at = match op {
        Opcode::ReturnCall | Opcode::ReturnCallIndirect => Results::All,
        _ => Results::These(
            (func.dfg.inst_results(inst).iter().enumerate())
                .filter(|&(_, r)| demand.get(r).is_some_and(|&d| d != 0))
                .map(|(i, _)| i)
                .collect(),
        ),
    };
    let first_parameter = usize::from(indirect);
    (first_parameter..a.len())
        .filter(|&k| a[k] != b[k])
        .all(|k| {
            let full = full_mask(func.dfg.value_type(a[k]));
            let demanded = callees.iter().fold(0, |acc, callee| {
                let k = k - first_parameter;
                acc | params.argument(module, Some(callee.clone()), k, full, &looked_at)
            });
            operand_difference(func, a[k], mutant, b[k]) & demanded == 0
        })
}
