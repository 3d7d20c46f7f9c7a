//! The names a function a merge makes (a private copy, a shared body) may not take: every name
//! the module defines or refers to.

use crate::module::{ClifModule, FuncName};
use cranelift_codegen::ir::GlobalValueData;
use rustc_hash::FxHashSet;

/// Every name the module defines or refers to: a new name must be none of them, or a call to an
/// imported function could end up calling the new one.
pub(crate) fn names_in_use(module: &ClifModule) -> FxHashSet<FuncName> {
    let mut names: FxHashSet<FuncName> = FxHashSet::default();
    for mf in module.functions() {
        names.insert(mf.name.clone());
        let func = &mf.func;
        for ext in func.dfg.ext_funcs.values() {
            names.extend(FuncName::of_external(&ext.name, func));
        }
        for gv in func.global_values.values() {
            if let GlobalValueData::Symbol { name, .. } = gv {
                names.extend(FuncName::of_external(name, func));
            }
        }
    }
    names.extend(
        module
            .aliases()
            .iter()
            .flat_map(|a| [a.name.clone(), a.target.clone()]),
    );
    names
}

/// Whether a new function may take `name`: the module neither defines nor refers to it
/// ([`names_in_use`], computed at the first question and kept in `in_use`: asked between
/// definitions, it still holds every name referred to before them, and the module's own
/// lookup sees the definitions).
pub(crate) fn name_is_free(
    module: &ClifModule,
    in_use: &mut Option<FxHashSet<FuncName>>,
    name: &FuncName,
) -> bool {
    module.lookup(name).is_none()
        && !in_use
            .get_or_insert_with(|| names_in_use(module))
            .contains(name)
}
