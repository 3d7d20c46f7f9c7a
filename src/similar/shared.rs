//! Writing a group's shared body: the first member's body with each parameterized operand
//! replaced by a new parameter, and its calls to itself made calls to the shared body that pass
//! the parameters through.

use super::find::{Member, callee_key};
use super::params::{ParamLayout, constant_use_slots, is_constant, operand};
use crate::compare::{Hole, NameKey, RefKind};
use crate::module::{ClifModule, FuncName, FunctionId};
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    AbiParam, ExceptionTableItem, ExtFuncData, Function, GlobalValueData, Inst, InstBuilder,
    InstructionData, Opcode, Type, Value,
};

/// Why a group cannot have a shared body (it is left alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unsupported {
    /// A parameterized callee is called by an instruction other than `call`/`return_call`.
    CalleeInstruction,
    /// A self-call is not a `call`/`return_call`.
    SelfCallInstruction,
    /// A self-call's declaration has another signature than the function: the shared body
    /// could not pass its parameters through it.
    SelfCallSignature,
    /// A constant is used by a `try_call` whose exception table has contexts (the walk and
    /// `inst_values` order that instruction's operands differently).
    ConstantAtExceptionContexts,
}

/// Whether `first`'s body can become a shared body with `layout`; its calls to itself.
pub(super) fn check(
    module: &ClifModule,
    first: &Member,
    layout: &ParamLayout,
) -> Result<Vec<Inst>, Unsupported> {
    let func = &module.function(first.id).func;
    let sites = &first.fingerprint.hole_sites;
    let slots = constant_use_slots(func, &first.fingerprint);
    for ((&site, param), slot) in sites.iter().zip(&layout.param_of_position).zip(slots) {
        if slot.is_some() {
            let contexts = (func.dfg.insts[site].exception_table()).is_some_and(|table| {
                (func.dfg.exception_tables[table].items())
                    .any(|item| matches!(item, ExceptionTableItem::Context(_)))
            });
            if contexts {
                return Err(Unsupported::ConstantAtExceptionContexts);
            }
            continue;
        }
        let supported = match func.dfg.insts[site] {
            InstructionData::Call { opcode, .. } => {
                matches!(opcode, Opcode::Call | Opcode::ReturnCall)
            }
            InstructionData::TryCall { .. } => false,
            _ => true,
        };
        if param.is_some() && !supported {
            return Err(Unsupported::CalleeInstruction);
        }
    }
    self_calls(module, first.id, func)
}

/// The shared body under `name`, made of `func`, the body of `first` (taken from it: the member
/// becomes a thunk); `self_calls` are its calls to itself ([`check`]'s).
pub(super) fn shared_body(
    mut func: Function,
    first: &Member,
    self_calls: &[Inst],
    layout: &ParamLayout,
    name: &FuncName,
) -> Function {
    func.name = name.to_user_func_name();
    let entry = func.layout.entry_block().expect("candidates have a body");
    let params: Vec<Value> = layout
        .types
        .iter()
        .map(|&ty| func.dfg.append_block_param(entry, ty))
        .collect();
    func.signature
        .params
        .extend(layout.types.iter().map(|&ty| AbiParam::new(ty)));
    let sites = &first.fingerprint.hole_sites;
    // Uses of constants first: the rewrite of a callee rebuilds its call from the arguments.
    let slots = constant_use_slots(&func, &first.fingerprint);
    let constants: Vec<Inst> = if slots.iter().any(Option::is_some) {
        let layout = &func.layout;
        (layout.blocks())
            .flat_map(|b| layout.block_insts(b))
            .filter(|&inst| is_constant(&func, inst))
            .collect()
    } else {
        Vec::new()
    };
    for (p, slot) in slots.iter().enumerate() {
        let Some(slot) = *slot else { continue };
        let site = sites[p];
        let value = match layout.param_of_position[p] {
            Some(param) => params[param as usize],
            None => {
                let ty = func.dfg.value_type(operand(&func, site, slot));
                make_constant(&mut func, site, ty, &first.fingerprint.holes[p])
            }
        };
        let mut values: Vec<Value> = func.dfg.inst_values(site).collect();
        values[slot] = value;
        func.dfg.overwrite_inst_values(site, values.into_iter());
    }
    // Every use of the constants the walk left out was a hole, made again or a parameter.
    for inst in constants {
        func.layout.remove_inst(inst);
    }
    for ((site, param), slot) in sites.iter().zip(&layout.param_of_position).zip(&slots) {
        if let (Some(param), None) = (param, slot) {
            replace_operand(&mut func, *site, params[*param as usize]);
        }
    }
    // The self-calls call the shared body through a new declaration: the member's own
    // declarations may have other uses (a `func_addr` of the member through the declaration a
    // self-call uses is the member's address, and stays so). A declaration left unused is
    // dropped by the renumbering below.
    if !self_calls.is_empty() {
        let own_name = name.to_external(&mut func);
        let signature = func.signature.clone();
        let signature = func.import_signature(signature);
        let own = func.import_function(ExtFuncData {
            name: own_name,
            signature,
            colocated: true,
            patchable: false,
        });
        for &call in self_calls {
            let dfg = &mut func.dfg;
            if let InstructionData::Call { func_ref, args, .. } = &mut dfg.insts[call] {
                *func_ref = own;
                args.extend(params.iter().copied(), &mut dfg.value_lists);
            }
        }
    }
    func.dfg.resolve_all_aliases();
    // Numbered by the walk: the text no longer depends on how the member was numbered, and the
    // declarations the parameters replaced (now unused) are gone.
    super::canonical::canonical_copy(&func)
}

/// The instructions of `func` (the function `me`) that call `me` itself: exactly those the
/// fingerprint wrote as a self-reference ([`callee_key`]).
fn self_calls(
    module: &ClifModule,
    me: FunctionId,
    func: &Function,
) -> Result<Vec<Inst>, Unsupported> {
    let mut calls = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            let Some(func_ref) = called(func, inst) else {
                continue;
            };
            let opcode = func.dfg.insts[inst].opcode();
            let kind = match opcode {
                Opcode::FuncAddr => RefKind::Address,
                _ => RefKind::Call,
            };
            let ext = &func.dfg.ext_funcs[func_ref];
            let symbol = module.lookup_external(&ext.name, func);
            if callee_key(module, me, symbol, kind, ext.patchable) != NameKey::Class(me) {
                continue;
            }
            if func.dfg.signatures[ext.signature] != func.signature {
                return Err(Unsupported::SelfCallSignature);
            }
            match opcode {
                Opcode::Call | Opcode::ReturnCall => calls.push(inst),
                _ => return Err(Unsupported::SelfCallInstruction),
            }
        }
    }
    Ok(calls)
}

/// The declaration `inst` calls or takes the address of.
fn called(func: &Function, inst: Inst) -> Option<cranelift_codegen::ir::FuncRef> {
    match func.dfg.insts[inst] {
        InstructionData::Call { func_ref, .. } | InstructionData::FuncAddr { func_ref, .. } => {
            Some(func_ref)
        }
        InstructionData::TryCall { func_ref, .. } => Some(func_ref),
        _ => None,
    }
}

/// Makes the hole of `site` read `param`. The site was [`check`]ed.
fn replace_operand(func: &mut Function, site: Inst, param: Value) {
    match func.dfg.insts[site] {
        InstructionData::Call {
            opcode,
            func_ref,
            args,
        } => {
            let sig_ref = func.dfg.ext_funcs[func_ref].signature;
            let args: Vec<Value> = args.as_slice(&func.dfg.value_lists).to_vec();
            match opcode {
                Opcode::Call => {
                    func.replace(site).call_indirect(sig_ref, param, &args);
                }
                Opcode::ReturnCall => {
                    func.replace(site)
                        .return_call_indirect(sig_ref, param, &args);
                }
                _ => {
                    unreachable!("checked: a parameterized callee is called by call or return_call")
                }
            }
        }
        InstructionData::UnaryGlobalValue { global_value, .. } => {
            let offset = match func.global_values[global_value] {
                GlobalValueData::Symbol { offset, .. } => offset.bits(),
                _ => 0,
            };
            let result = func.dfg.first_result(site);
            if offset == 0 {
                alias_result(func, site, result, param);
            } else {
                let ty = func.dfg.value_type(result);
                let mut pos = FuncCursor::new(func).at_inst(site);
                let offset = pos.ins().iconst(ty, offset);
                pos.func.replace(site).iadd(param, offset);
            }
        }
        _ => {
            let result = func.dfg.first_result(site);
            alias_result(func, site, result, param);
        }
    }
}

/// A constant `hole` of type `ty` made just before `site`.
fn make_constant(func: &mut Function, site: Inst, ty: Type, hole: &Hole) -> Value {
    let mut pos = FuncCursor::new(func).at_inst(site);
    match *hole {
        Hole::Int(bits) => pos.ins().iconst(ty, bits as i64),
        Hole::F32(bits) => pos.ins().f32const(Ieee32::with_bits(bits)),
        Hole::F64(bits) => pos.ins().f64const(Ieee64::with_bits(bits)),
        _ => unreachable!("a use of a constant holds a constant"),
    }
}

/// Removes `site` and makes its `result` another name for `param`.
fn alias_result(func: &mut Function, site: Inst, result: Value, param: Value) {
    func.dfg.clear_results(site);
    func.dfg.change_to_alias(result, param);
    func.layout.remove_inst(site);
}
