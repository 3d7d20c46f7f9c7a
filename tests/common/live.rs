//! Corruptions that change what a function does, for the mutation check of `--verify`: one
//! field of one *live* instruction changed (`mutate::mutate_one_field`), never in a way that
//! leaves the instruction's result the same.
//!
//! - Live: the instruction's result reaches something observable (a return, a store, a call
//!   that is not run, an indirect call, a branch condition, an instruction that may trap), through
//!   other instructions, block parameters and the parameters of the module's functions it calls
//!   (a parameter no path of the callee observes is dead). An instruction without results that
//!   is itself observable (a store, a trap, a branch, a return) is live; for a call, the changed
//!   argument must be live in the callee.
//! - Not equivalent: the instruction alone (its constant operands kept, the others made
//!   parameters) is run before and after on a grid of edge values; one that computes the same
//!   on every point (`x | 0` made `x ^ 0`) is not used. Memory flags that the machine does not
//!   observe (alignment, `readonly`, `can_move`, alias regions, whether an access that does
//!   not fault may trap) are not changed, nor the trap code of an access (it shows only when
//!   the access faults).
//! - Not proven equivalent: by demanded bits (`demanded.rs`: a pure instruction's result, or a
//!   call's argument, changed only in bits no path demands — a parameter the callee never
//!   reads) or by evaluating the function and the mutant symbolically over the module
//!   (`equivalence.rs`). Each such mutant is shown to the caller with its [`Proof`].

use super::equivalence::proven_equivalent;
use super::r#gen::Choices;
use super::mutate::{Kind, mutate_one_field, reachable_insts};
use clif_merge::verify::demanded::{
    DemandedParams, call_change_is_undemanded, change_is_undemanded, demanded_values,
};
use clif_merge::verify::{VerifyOptions, run_function};
use clif_merge::{ClifModule, FuncName, SymbolLinkage};
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    AbiParam, BlockArg, Function, Inst, InstructionData, Opcode, Signature, Type, UserFuncName,
    Value, ValueDef, types,
};
use cranelift_codegen::isa::CallConv;
use std::collections::{BTreeMap, HashSet};

/// The kinds that corrupt one instruction (the others change a signature or the frame).
pub const INSTRUCTION_KINDS: [Kind; 12] = [
    Kind::IntImmediate,
    Kind::FloatImmediate,
    Kind::Offset,
    Kind::IntCond,
    Kind::FloatCond,
    Kind::Opcode,
    Kind::TypeWidth,
    Kind::MemFlag,
    Kind::TrapCode,
    Kind::SwapOperands,
    Kind::Operand,
    Kind::BranchTarget,
];

/// The proof by which a mutant is left out as equivalent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proof {
    /// A pure instruction's result changed in bits no path demands (`demanded.rs`).
    DemandedBits,
    /// A call's argument changed in bits the callee's parameter does not demand: a
    /// parameter it never reads, or reads only masked (`call_change_is_undemanded`).
    UndemandedArgument,
    /// The function and the mutant evaluated symbolically over the module (`equivalence.rs`).
    Symbolic,
}

/// Which parameters of each function of a module some path observes.
pub struct LiveParams {
    by_name: BTreeMap<FuncName, Vec<bool>>,
    /// Which bits of each parameter some path observes (see `demanded.rs`).
    demanded: DemandedParams,
}

impl LiveParams {
    /// The fixed point over the module: a parameter is live when its function observes it,
    /// directly or through a live parameter of a function it calls. `module` as the check runs
    /// it, whose functions of `entries` the check calls with any arguments.
    pub fn of(module: &ClifModule, entries: &ClifModule) -> LiveParams {
        let mut params = LiveParams {
            by_name: BTreeMap::new(),
            demanded: DemandedParams::of(module, entries),
        };
        for mf in module.functions() {
            let n = mf.func.signature.params.len();
            params.by_name.insert(mf.name.clone(), vec![false; n]);
        }
        loop {
            let mut changed = false;
            for mf in module.functions() {
                let live = live_values(&mf.func, module, &params);
                let Some(entry) = mf.func.layout.entry_block() else {
                    continue;
                };
                let now: Vec<bool> = mf
                    .func
                    .dfg
                    .block_params(entry)
                    .iter()
                    .map(|v| live.contains(v))
                    .collect();
                let before = params.by_name.get_mut(&mf.name).unwrap();
                if *before != now {
                    *before = now;
                    changed = true;
                }
            }
            if !changed {
                return params;
            }
        }
    }

    /// The functions whose address parameter `k` of `name` only ever holds, when it is so.
    pub fn targets_of(&self, name: &FuncName, k: usize) -> Option<Vec<FuncName>> {
        self.demanded.targets_of(name, k)
    }

    /// Whether argument `k` of a call from `func` to `callee` is observed: always for a
    /// function the module does not define.
    fn argument(&self, module: &ClifModule, callee: Option<FuncName>, k: usize) -> bool {
        let defined = callee.and_then(|name| module.resolve(&name).map(|id| module.function(id)));
        match defined {
            Some(mf) => self
                .by_name
                .get(&mf.name)
                .is_none_or(|p| p.get(k) != Some(&false)),
            None => true,
        }
    }
}

/// The callee's name of a direct call `inst` (None for an indirect one).
fn callee_of(func: &Function, inst: Inst) -> Option<FuncName> {
    match func.dfg.insts[inst] {
        InstructionData::Call { func_ref, .. } => {
            FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
        }
        _ => None,
    }
}

/// Whether value operand `k` (of `inst_args`) of `inst` is observed where it is used, any
/// change of it: returned, stored (or the address), passed to a function that is not run or
/// observes that parameter, or called through. (Not a branch's or a trap's condition: a
/// change of it may keep it non-zero, and a branch taken the other way may end the same, as
/// a loop computing only dead values does.)
fn argument_is_root(
    func: &Function,
    module: &ClifModule,
    params: &LiveParams,
    inst: Inst,
    k: usize,
) -> bool {
    let op = func.dfg.insts[inst].opcode();
    match op {
        Opcode::Call | Opcode::ReturnCall => params.argument(module, callee_of(func, inst), k),
        Opcode::CallIndirect | Opcode::ReturnCallIndirect => true,
        _ => op.is_return() || op.can_store(),
    }
}

/// Whether any change of operand `k` of `inst` changes its result: the operations that are
/// one-to-one in each operand (the others kept).
fn one_to_one(func: &Function, inst: Inst, k: usize) -> bool {
    match func.dfg.insts[inst].opcode() {
        Opcode::Iadd
        | Opcode::Isub
        | Opcode::Bxor
        | Opcode::Bnot
        | Opcode::Ineg
        | Opcode::Uextend
        | Opcode::Sextend
        | Opcode::Bitrev
        | Opcode::Bswap
        | Opcode::Fneg => true,
        Opcode::Rotl | Opcode::Rotr => k == 0,
        _ => false,
    }
}

/// The values of `func` any change of which some path observes: operands observed where they
/// are used (see `argument_is_root`), and the operands of one-to-one operations and the block
/// arguments that make such a value.
pub fn live_values(func: &Function, module: &ClifModule, params: &LiveParams) -> HashSet<Value> {
    let insts = reachable_insts(func);
    // Each block's incoming arguments, by parameter.
    let mut incoming: BTreeMap<cranelift_codegen::ir::Block, Vec<Vec<Value>>> = BTreeMap::new();
    let mut work: Vec<Value> = Vec::new();
    for &inst in &insts {
        for (k, &v) in func.dfg.inst_args(inst).iter().enumerate() {
            if argument_is_root(func, module, params, inst, k) {
                work.push(v);
            }
        }
        let dfg = &func.dfg;
        for call in dfg.insts[inst].branch_destination(&dfg.jump_tables, &dfg.exception_tables) {
            let block = call.block(&dfg.value_lists);
            let slots = incoming
                .entry(block)
                .or_insert_with(|| vec![Vec::new(); dfg.num_block_params(block)]);
            for (i, arg) in call.args(&dfg.value_lists).enumerate() {
                if let (BlockArg::Value(v), Some(slot)) = (arg, slots.get_mut(i)) {
                    slot.push(v);
                }
            }
        }
    }
    let mut live = HashSet::new();
    while let Some(v) = work.pop() {
        let v = func.dfg.resolve_aliases(v);
        if !live.insert(v) {
            continue;
        }
        match func.dfg.value_def(v) {
            ValueDef::Result(inst, _) => {
                for (k, &a) in func.dfg.inst_args(inst).iter().enumerate() {
                    if one_to_one(func, inst, k) {
                        work.push(a);
                    }
                }
            }
            ValueDef::Param(block, i) => {
                if let Some(args) = incoming.get(&block).and_then(|s| s.get(i)) {
                    work.extend_from_slice(args);
                }
            }
            _ => {}
        }
    }
    live
}

/// The first instruction (in layout order) that reads differently in `mutant`.
fn changed_inst(func: &Function, mutant: &Function) -> Option<Inst> {
    func.layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b))
        .find(|&i| func.dfg.display_inst(i).to_string() != mutant.dfg.display_inst(i).to_string())
}

/// Whether the change of `inst` (from `func` to `mutant`) reaches something observable: a
/// result that is live, an observed operand, a store's address, width or byte order, a trap
/// that is no longer conditional the same way (`trapz` made `trapnz`) or an unconditional
/// trap's code. (Not a branch target or a branch's order: see `argument_is_root`.)
fn change_is_live(
    func: &Function,
    mutant: &Function,
    inst: Inst,
    module: &ClifModule,
    params: &LiveParams,
    live: &HashSet<Value>,
) -> bool {
    let op = func.dfg.insts[inst].opcode();
    let results = func.dfg.inst_results(inst);
    if !op.is_call() && !results.is_empty() {
        return results.iter().any(|r| live.contains(r));
    }
    let (before, after) = (func.dfg.inst_args(inst), mutant.dfg.inst_args(inst));
    let changed: Vec<usize> = (0..before.len().min(after.len()))
        .filter(|&k| before[k] != after[k])
        .collect();
    if !changed.is_empty() {
        return changed
            .iter()
            .any(|&k| argument_is_root(func, module, params, inst, k));
    }
    op.can_store() || matches!(op, Opcode::Trap | Opcode::Trapz | Opcode::Trapnz)
}

/// Whether a `MemFlag` or `TrapCode` change of `inst` can show: only the byte order of an
/// access wider than a byte, or the code of a trap instruction.
fn flag_change_shows(func: &Function, mutant: &Function, inst: Inst, kind: Kind) -> bool {
    match kind {
        Kind::MemFlag => {
            let (Some(a), Some(b)) = (
                func.dfg.insts[inst].memflags(),
                mutant.dfg.insts[inst].memflags(),
            ) else {
                return false;
            };
            let (a, b) = (func.dfg.mem_flags[a], mutant.dfg.mem_flags[b]);
            let width = match func.dfg.insts[inst] {
                InstructionData::Store { args, .. } => func.dfg.value_type(args[0]).bytes(),
                _ => func.dfg.ctrl_typevar(inst).bytes(),
            };
            let order = |f: cranelift_codegen::ir::MemFlagsData| {
                f.endianness(cranelift_codegen::ir::Endianness::Little)
            };
            width > 1 && order(a) != order(b)
        }
        Kind::TrapCode => func.dfg.insts[inst].opcode() == Opcode::Trap,
        _ => true,
    }
}

/// The formats whose instruction alone is compared (operands inline, one result).
fn local_data(
    data: InstructionData,
    mut map: impl FnMut(Value) -> Value,
) -> Option<InstructionData> {
    let mut data = data;
    match &mut data {
        InstructionData::Binary { args, .. }
        | InstructionData::IntCompare { args, .. }
        | InstructionData::FloatCompare { args, .. } => args.iter_mut().for_each(|a| *a = map(*a)),
        InstructionData::Ternary { args, .. } => args.iter_mut().for_each(|a| *a = map(*a)),
        InstructionData::Unary { arg, .. } => *arg = map(*arg),
        InstructionData::UnaryImm { .. }
        | InstructionData::UnaryIeee32 { .. }
        | InstructionData::UnaryIeee64 { .. } => {}
        _ => return None,
    }
    Some(data)
}

/// Whether `v` is a constant of `func`: the constant instruction.
fn constant_def(func: &Function, v: Value) -> Option<Inst> {
    match func.dfg.value_def(v) {
        ValueDef::Result(i, _)
            if matches!(
                func.dfg.insts[i].opcode(),
                Opcode::Iconst | Opcode::F32const | Opcode::F64const
            ) =>
        {
            Some(i)
        }
        _ => None,
    }
}

/// The instruction `inst` of `func` alone as a function of `inputs` (the non-constant operands
/// of the instruction before and after the change): its constant operands are copied.
fn alone(func: &Function, inst: Inst, inputs: &[Value]) -> Option<Function> {
    let results = func.dfg.inst_results(inst);
    if results.len() != 1 {
        return None;
    }
    let mut sig = Signature::new(CallConv::SystemV);
    for &v in inputs {
        sig.params.push(AbiParam::new(func.dfg.value_type(v)));
    }
    sig.returns
        .push(AbiParam::new(func.dfg.value_type(results[0])));
    let mut new = Function::with_name_signature(UserFuncName::testcase("alone"), sig);
    let block = new.dfg.make_block();
    new.layout.append_block(block);
    let params: Vec<Value> = inputs
        .iter()
        .map(|&v| new.dfg.append_block_param(block, func.dfg.value_type(v)))
        .collect();
    let mut constants = Vec::new();
    let mut unsupported = false;
    let data = local_data(func.dfg.insts[inst], |v| {
        if let Some(i) = inputs.iter().position(|&x| x == v) {
            return params[i];
        }
        match constant_def(func, v) {
            Some(c) => {
                let ni = new.dfg.make_inst(func.dfg.insts[c]);
                new.dfg.make_inst_results(ni, func.dfg.ctrl_typevar(c));
                new.layout.append_inst(ni, block);
                constants.push(ni);
                new.dfg.first_result(ni)
            }
            None => {
                unsupported = true;
                v
            }
        }
    })?;
    if unsupported {
        return None;
    }
    let ni = new.dfg.make_inst(data);
    new.dfg.make_inst_results(ni, func.dfg.ctrl_typevar(inst));
    new.layout.append_inst(ni, block);
    let r = new.dfg.first_result(ni);
    let args = cranelift_codegen::ir::ValueList::from_slice(&[r], &mut new.dfg.value_lists);
    let ret = new.dfg.make_inst(InstructionData::MultiAry {
        opcode: Opcode::Return,
        args,
    });
    new.layout.append_inst(ret, block);
    Some(new)
}

/// Edge values of a scalar type.
fn edges(ty: Type) -> Vec<DataValue> {
    match ty {
        types::F32 => [
            0.0f32,
            1.0,
            -1.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            2.5,
            f32::MAX,
        ]
        .iter()
        .map(|&x| DataValue::F32(Ieee32::with_float(x)))
        .collect(),
        types::F64 => [0.0, 1.0, -1.0, -0.0, f64::NAN, f64::INFINITY, 2.5, f64::MAX]
            .iter()
            .map(|&x| DataValue::F64(Ieee64::with_float(x)))
            .collect(),
        _ => {
            let bits = ty.bits();
            let max = if bits >= 128 {
                i128::MAX
            } else {
                (1i128 << (bits - 1)) - 1
            };
            [0, 1, -1, 2, 7, 100, max, -max - 1]
                .iter()
                .filter_map(|&x: &i128| int_value(ty, x))
                .collect()
        }
    }
}

/// `x` (truncated) as a value of the integer type `ty`.
fn int_value(ty: Type, x: i128) -> Option<DataValue> {
    Some(match ty {
        types::I8 => DataValue::I8(x as i8),
        types::I16 => DataValue::I16(x as i16),
        types::I32 => DataValue::I32(x as i32),
        types::I64 => DataValue::I64(x as i64),
        types::I128 => DataValue::I128(x),
        _ => return None,
    })
}

/// Whether the instruction alone computes the same before and after on every point of a grid
/// of edge values of its non-constant operands. False when it cannot be run alone.
fn locally_equivalent(func: &Function, mutant: &Function, inst: Inst) -> bool {
    let mut inputs: Vec<Value> = Vec::new();
    for f in [func, mutant] {
        for &v in f.dfg.inst_args(inst) {
            if constant_def(f, v).is_none() && !inputs.contains(&v) {
                inputs.push(v);
            }
        }
    }
    if inputs.len() > 3 {
        return false;
    }
    let (Some(a), Some(b)) = (alone(func, inst, &inputs), alone(mutant, inst, &inputs)) else {
        return false;
    };
    if a.signature != b.signature {
        return false;
    }
    let name = FuncName::parse("%alone").unwrap();
    let module_of = |f: Function| {
        let mut m = ClifModule::new();
        m.define(f, SymbolLinkage::Export, None).ok()?;
        Some(m)
    };
    let (Some(ma), Some(mb)) = (module_of(a), module_of(b)) else {
        return false;
    };
    let grids: Vec<Vec<DataValue>> = inputs
        .iter()
        .map(|&v| edges(func.dfg.value_type(v)))
        .collect();
    let options = VerifyOptions::default();
    let points: usize = grids.iter().map(Vec::len).product();
    (0..points).all(|mut p| {
        let args: Vec<DataValue> = grids
            .iter()
            .map(|g| {
                let x = g[p % g.len()].clone();
                p /= g.len();
                x
            })
            .collect();
        let ra = run_function(&ma, &name, &args, &options);
        let rb = run_function(&mb, &name, &args, &options);
        ra.outcome.to_string() == rb.outcome.to_string()
    })
}

/// A copy of `func` (a function of `module`) with one live instruction changed so that its
/// result changes (see the module docs), and the kind of change; None when none of a few dozen
/// attempts finds one. `reached` tells whether the runs of the check reach the changed
/// instruction of a mutant with a value the change changes (see [`with_probe`]): a change no
/// run reaches, or that computes the same on every input run, is equivalent on those inputs.
/// A mutant proven equivalent (by demanded bits, by an argument its callee does not demand, or
/// symbolically: [`Proof`]) is not made; `proven` is shown it with the proof, so that a test
/// can count it and check the proof against runs.
pub fn corrupt_live(
    func: &Function,
    module: &ClifModule,
    params: &LiveParams,
    ch: &mut Choices,
    reached: &mut dyn FnMut(&Function, Inst) -> bool,
    proven: &mut dyn FnMut(&Function, Proof),
) -> Option<(Kind, Function)> {
    let live = live_values(func, module, params);
    let demand = demanded_values(func, module, &params.demanded);
    for attempt in 0..48 {
        let kind = INSTRUCTION_KINDS[(ch.below(INSTRUCTION_KINDS.len()) + attempt) % 12];
        let Some(mutant) = mutate_one_field(func, kind, ch) else {
            continue;
        };
        let Some(inst) = changed_inst(func, &mutant) else {
            continue;
        };
        if !change_is_live(func, &mutant, inst, module, params, &live)
            || !flag_change_shows(func, &mutant, inst, kind)
            || locally_equivalent(func, &mutant, inst)
        {
            continue;
        }
        let name = FuncName::of_function(func);
        let targets = |k: usize| params.targets_of(&name, k);
        let proof = if change_is_undemanded(func, &mutant, inst, &demand) {
            Some(Proof::DemandedBits)
        } else if call_change_is_undemanded(func, &mutant, inst, module, &params.demanded, &demand)
        {
            Some(Proof::UndemandedArgument)
        } else if proven_equivalent(func, &mutant, module, &targets) {
            Some(Proof::Symbolic)
        } else {
            None
        };
        if let Some(proof) = proof {
            proven(&mutant, proof);
            continue;
        }
        if reached(&mutant, inst) {
            return Some((kind, mutant));
        }
    }
    None
}

/// `mutant` with a trap of `code` before or after the changed instruction `inst`, taken when
/// the change changes a value on the way: the result, against the instruction before the
/// change computed beside it (one of the inline formats), else the changed operand against
/// the one it replaced; a trap before `inst` when there is no such value (a run that reaches
/// `inst` traps).
pub fn with_probe(
    func: &Function,
    mutant: &Function,
    inst: Inst,
    code: cranelift_codegen::ir::TrapCode,
) -> Function {
    let mut probe = mutant.clone();
    let results = func.dfg.inst_results(inst);
    let (before, after) = (func.dfg.inst_args(inst), mutant.dfg.inst_args(inst));
    let changed = (0..before.len().min(after.len())).find(|&k| before[k] != after[k]);
    let inline = local_data(func.dfg.insts[inst], |v| v).is_some();
    let same_type = results.len() == 1
        && mutant.dfg.inst_results(inst).len() == 1
        && func.dfg.value_type(results[0])
            == mutant.dfg.value_type(mutant.dfg.inst_results(inst)[0]);
    let condition = if inline && same_type {
        // The instruction as it was, after the changed one.
        let old = probe.dfg.make_inst(func.dfg.insts[inst]);
        probe
            .dfg
            .make_inst_results(old, func.dfg.ctrl_typevar(inst));
        let next = probe.layout.next_inst(inst).expect("not a terminator");
        probe.layout.insert_inst(old, next);
        let (a, b) = (probe.dfg.first_result(old), probe.dfg.inst_results(inst)[0]);
        Some((differ(&mut probe, a, b, next), next))
    } else if let Some(k) = changed {
        let (a, b) = (before[k], after[k]);
        Some((differ(&mut probe, a, b, inst), inst))
    } else {
        None
    };
    let (cond, at) = condition.unwrap_or_else(|| {
        let one = constant(&mut probe, inst, 1);
        (one, inst)
    });
    let trap = probe.dfg.make_inst(InstructionData::CondTrap {
        opcode: Opcode::Trapnz,
        arg: cond,
        code,
    });
    probe.dfg.make_inst_results(trap, types::INVALID);
    probe.layout.insert_inst(trap, at);
    probe
}

/// An `iconst.i8 x` before `at`.
fn constant(func: &mut Function, at: Inst, x: i64) -> Value {
    let c = func.dfg.make_inst(InstructionData::UnaryImm {
        opcode: Opcode::Iconst,
        imm: cranelift_codegen::ir::immediates::Imm64::new(x),
    });
    func.dfg.make_inst_results(c, types::I8);
    func.layout.insert_inst(c, at);
    func.dfg.first_result(c)
}

/// Whether `a` and `b` differ (floats by their bits), computed before `at`.
fn differ(func: &mut Function, a: Value, b: Value, at: Inst) -> Value {
    let ty = func.dfg.value_type(a);
    let bits = |func: &mut Function, v: Value| -> Value {
        if !ty.is_float() {
            return v;
        }
        let int = Type::int(ty.bits() as u16).unwrap();
        let flags = func
            .dfg
            .mem_flags
            .insert(cranelift_codegen::ir::MemFlagsData::new())
            .unwrap();
        let cast = func.dfg.make_inst(InstructionData::LoadNoOffset {
            opcode: Opcode::Bitcast,
            arg: v,
            flags,
        });
        func.dfg.make_inst_results(cast, int);
        func.layout.insert_inst(cast, at);
        func.dfg.first_result(cast)
    };
    let (a, b) = (bits(func, a), bits(func, b));
    let cmp = func.dfg.make_inst(InstructionData::IntCompare {
        opcode: Opcode::Icmp,
        cond: cranelift_codegen::ir::condcodes::IntCC::NotEqual,
        args: [a, b],
    });
    let int = func.dfg.value_type(a);
    func.dfg.make_inst_results(cmp, int);
    func.layout.insert_inst(cmp, at);
    func.dfg.first_result(cmp)
}
