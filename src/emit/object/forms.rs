//! What each defined function became in the object, with its bytes: what size attribution
//! (`crate::sizes`) measures.

use super::code::Code;
use super::target::JumpThunk;
use crate::fold::Fold;
use crate::module::{ClifModule, FuncName, FunctionId};
use cranelift_entity::PrimaryMap;

/// The form a defined function takes in the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeForm {
    /// Code compiled by Cranelift.
    Compiled,
    /// One jump.
    Thunk,
    /// A symbol at another function's code, no bytes of its own.
    Alias,
    /// No symbol and no bytes.
    Removed,
}

/// One defined function of the module written, in module order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCode {
    /// Its name, as in CLIF.
    pub name: FuncName,
    /// What it became.
    pub form: CodeForm,
    /// Its bytes without alignment padding (0 for an alias or a removed function).
    pub bytes: u64,
    /// When machine-code folding took its code: the function whose code it shares.
    pub folded_into: Option<FuncName>,
}

/// Every defined function of `module` with the form `code` gives it.
pub(super) fn function_codes(
    module: &ClifModule,
    code: &PrimaryMap<FunctionId, Code>,
    folds: &[Fold],
    jump: &JumpThunk,
) -> Vec<FunctionCode> {
    let folded_into: rustc_hash::FxHashMap<FunctionId, FunctionId> =
        folds.iter().map(|f| (f.replaced, f.kept)).collect();
    module
        .iter()
        .map(|(id, mf)| {
            let (form, bytes) = match &code[id] {
                Code::Compiled { bytes, .. } => (CodeForm::Compiled, bytes.len() as u64),
                Code::Thunk(_) => (CodeForm::Thunk, jump.bytes.len() as u64),
                Code::AliasOf(_) => (CodeForm::Alias, 0),
                Code::Removed => (CodeForm::Removed, 0),
            };
            let folded_into = folded_into
                .get(&id)
                .map(|&kept| module.function(kept).name.clone());
            FunctionCode {
                name: mf.name.clone(),
                form,
                bytes,
                folded_into,
            }
        })
        .collect()
}
