//! Phase 3: machine-code folding, as `crate::fold` decides it, applied to the code table.

use super::code::{Code, Target};
use super::slots::{SlotKind, Slots};
use crate::fold::{self, MachineCode, MachineReloc, RelocTarget};
use crate::module::{ClifModule, FunctionId};
use crate::policy::{Action, Mode};
use crate::refs::ModuleRefs;
use cranelift_entity::PrimaryMap;
use rustc_hash::FxHashMap;

/// Phase 3: folds compiled functions with identical code as `fold::fold` decides; returns the
/// folds made.
pub(super) fn fold_machine_code(
    module: &ClifModule,
    refs: &ModuleRefs,
    slots: &Slots,
    code: &mut PrimaryMap<FunctionId, Code>,
    mode: Mode,
) -> Vec<fold::Fold> {
    let machine_relocs = machine_relocs(slots, code);
    let machine_code = machine_codes(code, &machine_relocs);
    let folds = fold::fold(module, refs, &machine_code, mode);
    let mut retarget: FxHashMap<u32, u32> = FxHashMap::default();
    for f in &folds {
        let kept_slot = slots.index[&module.function(f.kept).name];
        code[f.replaced] = match f.action {
            Action::Removed => {
                retarget.insert(slots.index[&module.function(f.replaced).name], kept_slot);
                Code::Removed
            }
            Action::Thunk => Code::Thunk(kept_slot),
            Action::Alias => Code::AliasOf(kept_slot),
        };
    }
    // A removed function's callers, and thunks of it, go to the kept one (its code is the same).
    for c in code.values_mut() {
        match c {
            Code::Compiled { relocs, .. } => {
                for r in relocs {
                    if let Target::Slot(s) = &mut r.target
                        && let Some(&k) = retarget.get(s)
                    {
                        *s = k;
                    }
                }
            }
            Code::Thunk(s) | Code::AliasOf(s) => {
                if let Some(&k) = retarget.get(s) {
                    *s = k;
                }
            }
            Code::Removed => {}
        }
    }
    folds
}

/// Each compiled function's relocations as folding compares them: a defined function by id,
/// another symbol by its slot.
fn machine_relocs(slots: &Slots, code: &PrimaryMap<FunctionId, Code>) -> Vec<Vec<MachineReloc>> {
    code.values()
        .map(|c| match c {
            Code::Compiled { relocs, .. } => relocs
                .iter()
                .map(|r| MachineReloc {
                    offset: r.offset,
                    kind: r.kind,
                    addend: r.addend,
                    target: match &r.target {
                        Target::Slot(s) => match slots.slots[*s as usize].kind {
                            SlotKind::Defined(id) => RelocTarget::Function(id),
                            _ => RelocTarget::Symbol(*s),
                        },
                        Target::SelfOffset(off) => RelocTarget::SelfOffset(*off),
                        Target::Other(other) => RelocTarget::External(format!("{other:?}")),
                    },
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Each function's machine code (None: not compiled), its relocations from `relocs`.
fn machine_codes<'a>(
    code: &'a PrimaryMap<FunctionId, Code>,
    relocs: &'a [Vec<MachineReloc>],
) -> PrimaryMap<FunctionId, Option<MachineCode<'a>>> {
    code.values()
        .zip(relocs)
        .map(|(c, relocs)| match c {
            Code::Compiled {
                bytes, alignment, ..
            } => Some(MachineCode {
                bytes,
                alignment: *alignment,
                relocs,
            }),
            _ => None,
        })
        .collect()
}

/// The classes of equal code of the functions compiled in `code` ([`fold::equal_code_classes`]).
pub(super) fn code_classes(
    module: &ClifModule,
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
) -> crate::similar::CodeClasses {
    let relocs = machine_relocs(slots, code);
    fold::equal_code_classes(module, &machine_codes(code, &relocs))
}
