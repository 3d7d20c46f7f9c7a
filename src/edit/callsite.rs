//! Call sites that pass more arguments: a call to a member of a group of *similar* functions
//! becomes a call to the group's shared body, with the member's own constants and addresses as
//! extra arguments (see `compare`'s holes). Exact merging never adds arguments; this is the
//! rewrite similar merging builds on.

use crate::compare::Hole;
use crate::module::FuncName;
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    ExtFuncData, FuncRef, Function, GlobalValueData, Inst, InstBuilder, InstructionData, Opcode,
    Signature, Type, Value,
};

/// A value a call site adds: a constant, or the address of a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraArgument {
    /// Its type: the integer type of an `iconst`, `f32`/`f64`, or the pointer type.
    pub ty: Type,
    /// Its value.
    pub value: Hole,
    /// For a [`Hole::Callee`], the callee's signature: the address is taken with `func_addr`
    /// of a declaration with this signature.
    pub signature: Option<Signature>,
    /// For a [`Hole::Callee`] or a [`Hole::Name`], whether that declaration or symbol is
    /// `colocated` (the address is PC-relative). A module function's is; an import's is what the
    /// member's call declared (otherwise a GOT load under PIC: a PC-relative address of a
    /// function in another shared object would not link); a similar group's read-only record
    /// is, being local data of the same object.
    pub colocated: bool,
}

/// Why a call could not be rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallSiteError {
    /// Only `call` and `return_call` are rewritten (a `try_call`'s exception table names the
    /// callee's signature too).
    #[error("only direct `call` and `return_call` instructions can take extra arguments")]
    NotADirectCall,
    /// The new signature must take the call's arguments followed by the extra ones.
    #[error("the signature does not take the call's arguments followed by the extra ones")]
    SignatureMismatch,
}

/// Rewrites the direct call `inst` of `func` into a call of `callee`, whose signature is
/// `signature`, passing the call's own arguments followed by `extra`, each materialized just
/// before the call. The results stay the call's results. (Similar merging rewrites whole
/// functions instead; this one call at a time is what the tests check the building blocks with.)
#[cfg(test)]
pub fn call_with_extra_arguments(
    func: &mut Function,
    inst: Inst,
    callee: &FuncName,
    signature: Signature,
    extra: &[ExtraArgument],
) -> Result<(), CallSiteError> {
    let InstructionData::Call {
        opcode: Opcode::Call | Opcode::ReturnCall,
        args,
        ..
    } = func.dfg.insts[inst]
    else {
        return Err(CallSiteError::NotADirectCall);
    };
    let own: Vec<Type> = args
        .as_slice(&func.dfg.value_lists)
        .iter()
        .map(|&v| func.dfg.value_type(v))
        .collect();
    let wanted: Vec<Type> = own
        .iter()
        .copied()
        .chain(extra.iter().map(|e| e.ty))
        .collect();
    let takes: Vec<Type> = signature.params.iter().map(|p| p.value_type).collect();
    if takes != wanted {
        return Err(CallSiteError::SignatureMismatch);
    }
    let values: Vec<Value> = extra.iter().map(|e| materialize(func, inst, e)).collect();
    let name = callee.to_external(func);
    let sig_ref = func.import_signature(signature);
    let new_ref = func.import_function(ExtFuncData {
        name,
        signature: sig_ref,
        colocated: true,
        patchable: false,
    });
    // One borrow of the data-flow graph (`Function` derefs to its stencil), split in two.
    let dfg = &mut func.dfg;
    if let InstructionData::Call { func_ref, args, .. } = &mut dfg.insts[inst] {
        *func_ref = new_ref;
        args.extend(values, &mut dfg.value_lists);
    }
    Ok(())
}

/// Makes the declaration `func_ref` of `func` name `callee`, of signature `signature`, and every
/// call through it pass `extra` after its own arguments: `call_with_extra_arguments` for
/// every call of one declaration at once, leaving no declaration of the old callee behind (an
/// unused declaration would still be an undefined symbol of the object). Every use of
/// `func_ref` must be a `call` or a `return_call`; nothing is changed otherwise.
pub fn redirect_declaration(
    func: &mut Function,
    func_ref: FuncRef,
    callee: &FuncName,
    signature: Signature,
    extra: &[ExtraArgument],
) -> Result<(), CallSiteError> {
    let mut calls = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            let uses = match func.dfg.insts[inst] {
                InstructionData::Call {
                    opcode: Opcode::Call | Opcode::ReturnCall,
                    func_ref: f,
                    ..
                } if f == func_ref => {
                    calls.push(inst);
                    false
                }
                InstructionData::Call { func_ref: f, .. }
                | InstructionData::FuncAddr { func_ref: f, .. }
                | InstructionData::TryCall { func_ref: f, .. } => f == func_ref,
                _ => false,
            };
            if uses {
                return Err(CallSiteError::NotADirectCall);
            }
        }
    }
    let takes: Vec<Type> = signature.params.iter().map(|p| p.value_type).collect();
    let old = &func.dfg.signatures[func.dfg.ext_funcs[func_ref].signature];
    let wanted: Vec<Type> = old
        .params
        .iter()
        .map(|p| p.value_type)
        .chain(extra.iter().map(|e| e.ty))
        .collect();
    if takes != wanted {
        return Err(CallSiteError::SignatureMismatch);
    }
    let name = callee.to_external(func);
    let sig_ref = func.import_signature(signature);
    let ext = &mut func.dfg.ext_funcs[func_ref];
    ext.name = name;
    ext.signature = sig_ref;
    for inst in calls {
        let values: Vec<Value> = extra.iter().map(|e| materialize(func, inst, e)).collect();
        let dfg = &mut func.dfg;
        if let InstructionData::Call { args, .. } = &mut dfg.insts[inst] {
            args.extend(values, &mut dfg.value_lists);
        }
    }
    Ok(())
}

/// The instruction that makes `arg`'s value, inserted before `inst`.
pub fn materialize(func: &mut Function, inst: Inst, arg: &ExtraArgument) -> Value {
    let mut pos = FuncCursor::new(func).at_inst(inst);
    match &arg.value {
        Hole::Int(bits) => pos.ins().iconst(arg.ty, *bits as i64),
        Hole::F32(bits) => pos.ins().f32const(Ieee32::with_bits(*bits)),
        Hole::F64(bits) => pos.ins().f64const(Ieee64::with_bits(*bits)),
        Hole::Name(name) => {
            let name = name.to_external(pos.func);
            let gv = pos.func.create_global_value(GlobalValueData::Symbol {
                name,
                offset: 0.into(),
                colocated: arg.colocated,
                tls: false,
            });
            pos.ins().symbol_value(arg.ty, gv)
        }
        Hole::Callee(name) => {
            let name = name.to_external(pos.func);
            let signature = arg
                .signature
                .clone()
                .unwrap_or_else(|| Signature::new(cranelift_codegen::isa::CallConv::SystemV));
            let signature = pos.func.import_signature(signature);
            let callee = pos.func.import_function(ExtFuncData {
                name,
                signature,
                colocated: arg.colocated,
                patchable: false,
            });
            pos.ins().func_addr(arg.ty, callee)
        }
        Hole::SelfCall => {
            unreachable!("a member passes its own name as Hole::Callee for a call of itself")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::types::{F64, I32, I64};
    use cranelift_codegen::ir::{AbiParam, Block};
    use cranelift_codegen::isa::CallConv;
    use cranelift_codegen::settings;

    fn parse(text: &str) -> Function {
        cranelift_reader::parse_functions(text)
            .expect("valid CLIF")
            .remove(0)
    }

    fn first_call(func: &Function) -> Inst {
        let entry: Block = func.layout.entry_block().unwrap();
        func.layout
            .block_insts(entry)
            .find(|&i| func.dfg.insts[i].opcode().is_call())
            .unwrap()
    }

    fn shared_signature(params: &[Type]) -> Signature {
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.push(AbiParam::new(I32));
        sig
    }

    #[test]
    fn a_call_passes_its_own_arguments_then_the_extra_ones() {
        let mut func = parse(
            "function %caller(i32) -> i32 system_v {
                sig0 = (i32) -> i32 system_v
                fn0 = colocated %member sig0
            block0(v0: i32):
                v1 = call fn0(v0)
                return v1
            }",
        );
        let call = first_call(&func);
        let extra = [
            ExtraArgument {
                ty: I64,
                value: Hole::Int(7),
                signature: None,
                colocated: true,
            },
            ExtraArgument {
                ty: F64,
                value: Hole::F64(2.5f64.to_bits()),
                signature: None,
                colocated: true,
            },
            ExtraArgument {
                ty: I64,
                value: Hole::Name(FuncName::parse("%table").unwrap()),
                signature: None,
                colocated: false,
            },
        ];
        let shared = FuncName::parse("%shared").unwrap();
        let sig = shared_signature(&[I32, I64, F64, I64]);
        call_with_extra_arguments(&mut func, call, &shared, sig, &extra).unwrap();
        cranelift_codegen::verify_function(&func, &settings::Flags::new(settings::builder()))
            .unwrap_or_else(|e| panic!("{e}\n{}", func.display()));
        let text = func.display().to_string();
        for expected in [
            "iconst.i64 7",
            "f64const 0x1.4000000000000p1",
            "symbol_value.i64 gv0",
            "gv0 = symbol %table",
            "= colocated %shared sig1",
            "call fn1(v0, v2, v3, v4)",
        ] {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
    }

    #[test]
    fn a_wrong_signature_or_an_indirect_call_is_refused() {
        let mut func = parse(
            "function %caller(i32, i64) -> i32 system_v {
                sig0 = (i32) -> i32 system_v
                fn0 = colocated %member sig0
            block0(v0: i32, v1: i64):
                v2 = call fn0(v0)
                v3 = call_indirect sig0, v1(v2)
                return v3
            }",
        );
        let call = first_call(&func);
        let shared = FuncName::parse("%shared").unwrap();
        let extra = [ExtraArgument {
            ty: I64,
            value: Hole::Int(1),
            signature: None,
            colocated: true,
        }];
        let before = func.display().to_string();
        let wrong = shared_signature(&[I32, I32]);
        assert_eq!(
            call_with_extra_arguments(&mut func, call, &shared, wrong, &extra),
            Err(CallSiteError::SignatureMismatch)
        );
        let indirect = func.layout.next_inst(call).unwrap();
        let sig = shared_signature(&[I32, I64]);
        assert_eq!(
            call_with_extra_arguments(&mut func, indirect, &shared, sig, &extra),
            Err(CallSiteError::NotADirectCall)
        );
        assert_eq!(
            func.display().to_string(),
            before,
            "a refused call is left as it was"
        );
    }
}
