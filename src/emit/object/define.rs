//! Phase 4, definitions: functions declared and defined in cranelift-object. Aliases are
//! declared as imports, so that references to them get relocations (`symbols.rs` then turns
//! them into symbols).

use super::code::{Code, Target};
use super::error::ObjectError;
use super::slots::{SlotKind, Slots};
use super::symbols::module_linkage;
use super::target::JumpThunk;
use crate::module::{ClifModule, FunctionId};
use crate::similar::ConstantRecord;
use cranelift_entity::PrimaryMap;
use cranelift_module::{
    DataDescription, DataId, FuncId, Linkage, Module as _, ModuleReloc, ModuleRelocTarget,
};
use cranelift_object::ObjectModule;
use rustc_hash::FxHashMap;

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
            SlotKind::Record(_) => continue,
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

/// Declares and defines each record of `records` (read-only data, local, aligned to its widest
/// field), in order; returns each record slot's data id.
pub(super) fn define_records(
    object_module: &mut ObjectModule,
    slots: &Slots,
    records: &[ConstantRecord],
) -> Result<FxHashMap<u32, DataId>, ObjectError> {
    let little_endian = matches!(
        object_module.isa().endianness(),
        cranelift_codegen::ir::Endianness::Little
    );
    let mut ids = FxHashMap::default();
    for (i, slot) in slots.slots.iter().enumerate() {
        let SlotKind::Record(r) = slot.kind else {
            continue;
        };
        let record = &records[r];
        let id = object_module
            .declare_data(&slot.symbol, Linkage::Local, false, false)
            .map_err(|source| ObjectError::Declare {
                name: slot.name.to_string(),
                source: Box::new(source),
            })?;
        let mut data = DataDescription::new();
        data.set_align(record.alignment());
        data.define(record.bytes(little_endian).into_boxed_slice());
        object_module.define_data(id, &data)?;
        ids.insert(i as u32, id);
    }
    Ok(ids)
}

/// Defines the code of every function with code, in layout order; a relocation against a
/// record slot names its data object (`records`).
pub(super) fn define(
    object_module: &mut ObjectModule,
    module: &ClifModule,
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
    (id_of, records): (impl Fn(u32) -> FuncId, &FxHashMap<u32, DataId>),
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
                            Target::Slot(s) => match records.get(s) {
                                Some(data) => ModuleRelocTarget::user(1, data.as_u32()),
                                None => ModuleRelocTarget::user(0, id_of(*s).as_u32()),
                            },
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
