//! Phase 4, definitions: functions declared and defined in cranelift-object. Aliases are
//! declared as imports, so that references to them get relocations (`symbols.rs` then turns
//! them into symbols).

use super::code::{Code, Target};
use super::error::ObjectError;
use super::slots::{SlotKind, Slots};
use super::symbols::module_linkage;
use super::target::JumpThunk;
use crate::module::{ClifModule, FunctionId};
use cranelift_entity::PrimaryMap;
use cranelift_module::{FuncId, Linkage, Module as _, ModuleReloc, ModuleRelocTarget};
use cranelift_object::ObjectModule;

/// What was defined, for the report.
#[derive(Default)]
pub(super) struct Defined {
    /// Functions compiled by Cranelift.
    pub(super) compiled: usize,
    /// Functions whose code is one jump.
    pub(super) thunks: usize,
    /// Functions without a symbol.
    pub(super) removed: usize,
}

/// Declares every slot that gets a symbol; returns each slot's id (None: no symbol).
pub(super) fn declare(
    object_module: &mut ObjectModule,
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
) -> Result<Vec<Option<FuncId>>, ObjectError> {
    let mut ids = vec![None; slots.slots.len()];
    for (i, slot) in slots.slots.iter().enumerate() {
        let linkage = match &slot.kind {
            SlotKind::Defined(id) => match code[*id] {
                Code::Removed => continue,
                Code::AliasOf(_) => Linkage::Import,
                _ => module_linkage(slot.linkage),
            },
            SlotKind::Alias(_) | SlotKind::Import => Linkage::Import,
        };
        let id = object_module
            .declare_function(&slot.symbol, linkage, &slot.signature)
            .map_err(|source| ObjectError::Declare {
                name: slot.name.to_string(),
                source: Box::new(source),
            })?;
        ids[i] = Some(id);
    }
    Ok(ids)
}

/// Defines the code of every function with code, in layout order.
pub(super) fn define(
    object_module: &mut ObjectModule,
    module: &ClifModule,
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
    id_of: impl Fn(u32) -> FuncId,
    jump: &JumpThunk,
) -> Result<Defined, ObjectError> {
    let mut defined = Defined::default();
    for (id, mf) in module.iter() {
        let slot = slots.index[&mf.name];
        match &code[id] {
            Code::Compiled {
                bytes,
                alignment,
                relocs,
            } => {
                let relocs: Vec<ModuleReloc> = relocs
                    .iter()
                    .map(|r| ModuleReloc {
                        offset: r.offset,
                        kind: r.kind,
                        addend: r.addend,
                        name: match &r.target {
                            Target::Slot(s) => ModuleRelocTarget::user(0, id_of(*s).as_u32()),
                            Target::SelfOffset(off) => {
                                ModuleRelocTarget::FunctionOffset(id_of(slot), *off)
                            }
                            Target::Other(other) => other.clone(),
                        },
                    })
                    .collect();
                object_module.define_function_bytes(id_of(slot), *alignment, bytes, &relocs)?;
                defined.compiled += 1;
            }
            Code::Thunk(target) => {
                let reloc = ModuleReloc {
                    offset: jump.reloc_offset,
                    kind: jump.kind,
                    addend: jump.addend,
                    name: ModuleRelocTarget::user(0, id_of(*target).as_u32()),
                };
                object_module.define_function_bytes(
                    id_of(slot),
                    jump.alignment,
                    jump.bytes,
                    &[reloc],
                )?;
                defined.thunks += 1;
            }
            Code::AliasOf(_) => {}
            Code::Removed => defined.removed += 1,
        }
    }
    Ok(defined)
}
