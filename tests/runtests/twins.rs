//! Why a function of the module twice over may stay apart from its twin: the rules of the merge
//! that keep equal-looking functions as they are. A run line whose function was merged
//! under neither name must be explained by one of them.

use clif_merge::merge::frame::reads_own_frame;
use clif_merge::merge::thunk::is_forwarding_thunk;
use clif_merge::{ClifModule, FuncName, Mode};
use cranelift_codegen::ir::{GlobalValueData, InstructionData};
use std::collections::BTreeSet;

/// Why `name` of `module` (unmerged) may be merged with its twin under neither name in `mode`;
/// None when nothing explains it.
pub fn why_apart(module: &ClifModule, name: &FuncName, mode: Mode) -> Option<&'static str> {
    if mode == Mode::Aliases {
        return None;
    }
    let func = &module.function(module.resolve(name)?).func;
    if is_forwarding_thunk(func) {
        return Some("already a forwarding thunk: kept as it is, its call redirected");
    }
    if reads_own_frame(func) {
        return Some("reads its own frame: never a thunk, kept as it is outside aliases");
    }
    if reaches_an_address(module, name) {
        return Some("takes a function's address (or calls what does): kept apart outside aliases");
    }
    None
}

/// Whether `name`, or a function it calls directly or indirectly, takes the address of a
/// module function (`func_addr`, or a `symbol` global value): outside `--mode aliases` two
/// addresses stay distinct, so the functions that take them differ.
fn reaches_an_address(module: &ClifModule, name: &FuncName) -> bool {
    let mut seen = BTreeSet::new();
    let mut work = vec![name.clone()];
    while let Some(name) = work.pop() {
        let Some(id) = module.resolve(&name) else {
            continue;
        };
        if !seen.insert(name) {
            continue;
        }
        let func = &module.function(id).func;
        let in_module =
            |n: &Option<FuncName>| n.as_ref().is_some_and(|n| module.resolve(n).is_some());
        let symbols = func.global_values.values().any(|gv| match gv {
            GlobalValueData::Symbol { name, .. } => in_module(&FuncName::of_external(name, func)),
            _ => false,
        });
        let func_addr =
            func.layout
                .blocks()
                .flat_map(|b| func.layout.block_insts(b))
                .any(|i| match func.dfg.insts[i] {
                    InstructionData::FuncAddr { func_ref, .. } => in_module(
                        &FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func),
                    ),
                    _ => false,
                });
        if symbols || func_addr {
            return true;
        }
        let callees = func.dfg.ext_funcs.values();
        work.extend(callees.filter_map(|e| FuncName::of_external(&e.name, func)));
    }
    false
}
