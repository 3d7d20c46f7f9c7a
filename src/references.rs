//! References between a function's own declarations that cranelift-reader accepts without
//! checking and the CLIF verifier does not check either. Every other part of the library indexes
//! a function's tables directly, so a dangling reference would panic there; [`ClifModule::define`]
//! refuses it instead.
//!
//! Checked here (each one was seen to get through the reader and the verifier): the stack limit,
//! the base of a `load` or `iadd_imm` global value, the scale of a dynamic type, the type of a
//! dynamic stack slot, the signature of an external function, and user names (`u1:2`, or the
//! reader's raw `userextname7`) in external functions and `symbol` global values. References
//! made by instructions (values, blocks, slots, constants, `fnN`, `sigN`, alias regions) are the
//! verifier's: a function that reaches the module unverified must have passed it.
//!
//! [`ClifModule::define`]: crate::ClifModule::define

use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::entities::AnyEntity;
use cranelift_codegen::ir::{ExternalName, Function, GlobalValueData};
use cranelift_codegen::packed_option::ReservedValue;

/// The first reference of `func` to a declaration it does not have: the declaration that makes
/// it (for its line in the source) and a message.
pub fn undeclared_reference(func: &Function) -> Option<(AnyEntity, String)> {
    let gv_ok = |gv| func.global_values.is_valid(gv);
    // The reader's own spelling of a user name it has no declaration for.
    let undeclared_name = |name: &ExternalName| match name {
        ExternalName::User(r) if !func.params.user_named_funcs().is_valid(*r) => {
            Some(format!("userextname{}", r.as_u32()))
        }
        _ => None,
    };
    if let Some(gv) = func.stack_limit.filter(|&gv| !gv_ok(gv)) {
        let msg = format!("stack_limit names {gv}, which is not declared");
        return Some((AnyEntity::Function, msg));
    }
    for (gv, data) in func.global_values.iter() {
        match data {
            GlobalValueData::Load { base, .. } | GlobalValueData::IAddImm { base, .. }
                if !gv_ok(*base) =>
            {
                let msg = format!("{gv} is based on {base}, which is not declared");
                return Some((gv.into(), msg));
            }
            GlobalValueData::Symbol { name, .. } => {
                if let Some(name) = undeclared_name(name) {
                    let msg = format!("{gv} names {name}, which is not a declared user name");
                    return Some((gv.into(), msg));
                }
            }
            _ => {}
        }
    }
    for (dt, data) in func.dfg.dynamic_types.iter() {
        if !gv_ok(data.dynamic_scale) {
            let gv = data.dynamic_scale;
            let msg = format!("{dt} is scaled by {gv}, which is not declared");
            return Some((dt.into(), msg));
        }
    }
    for (slot, data) in func.dynamic_stack_slots.iter() {
        if !func.dfg.dynamic_types.is_valid(data.dyn_ty) {
            let dt = data.dyn_ty;
            let msg = format!("{slot} has type {dt}, which is not declared");
            return Some((slot.into(), msg));
        }
    }
    for (fref, data) in func.dfg.ext_funcs.iter() {
        // cranelift-reader fills a gap in the numbers (`fn1` declared, `fn0` not) with an
        // entry that has no signature; later steps need every entry to be a declaration.
        if data.signature.is_reserved_value() {
            let declared = func
                .dfg
                .ext_funcs
                .keys()
                .skip(fref.index() + 1)
                .find(|&later| !func.dfg.ext_funcs[later].signature.is_reserved_value());
            let later = declared.map_or_else(|| "a later one".to_string(), |f| f.to_string());
            let msg = format!(
                "{later} is declared but {fref} is not: function references are numbered \
                 from fn0 without gaps"
            );
            let at = declared.map_or(AnyEntity::Function, AnyEntity::from);
            return Some((at, msg));
        }
        if !func.dfg.signatures.is_valid(data.signature) {
            let sig = data.signature;
            let msg = format!("{fref} has signature {sig}, which is not declared");
            return Some((fref.into(), msg));
        }
        if let Some(name) = undeclared_name(&data.name) {
            let msg = format!("{fref} names {name}, which is not a declared user name");
            return Some((fref.into(), msg));
        }
    }
    None
}
