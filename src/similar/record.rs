//! Read-only records: when an object is written, a group whose constants would go to the stack
//! may instead give each member a record of its constants (a data object in `.rodata`), pass
//! its address as one argument, and let the shared body load each constant where it is used.
//!
//! Only constants go into a record: an address in a record is a relocation the linker keeps
//! for a position-independent output (24 bytes of `.rela.dyn` on x86_64 and aarch64), more
//! than the `lea`/`adrp` it replaces (`benches/records_probe.sh`). CLIF text has no data
//! objects, so records exist only for the object writer ([`super::SimilarOptions::records`]);
//! `--emit-clif`, the JIT and `MergingModule` keep stack arguments. `--verify` defines each
//! record's bytes at its symbol's address and runs the merge as the object holds it.

use super::params::{POINTER, ParamLayout};
use crate::compare::Hole;
use crate::edit::callsite::ExtraArgument;
use crate::module::FuncName;
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::{AbiParam, Function, InstBuilder, MemFlagsData, Type, Value};
use rustc_hash::FxHashMap;

/// A member's record: its constants, at the offsets the shared body loads them from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstantRecord {
    /// The data object's name (a local symbol of the object).
    pub name: FuncName,
    /// The constants, in offset order.
    pub fields: Vec<RecordField>,
}

/// One constant of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordField {
    /// Its offset in the record, a multiple of its size.
    pub offset: u32,
    /// Its type (`i8`…`i64`, `f32`, `f64`): the load's type.
    pub ty: Type,
    /// Its bits (an integer's, or a float's IEEE bits): the low `ty.bytes()` bytes are stored.
    pub bits: u64,
}

impl ConstantRecord {
    /// The record's alignment: its widest field's.
    pub fn alignment(&self) -> u64 {
        (self.fields.iter())
            .map(|f| u64::from(f.ty.bytes()))
            .max()
            .unwrap_or(1)
    }

    /// The record's bytes, little- or big-endian as the target is.
    pub fn bytes(&self, little_endian: bool) -> Vec<u8> {
        let size = (self.fields.iter())
            .map(|f| f.offset + f.ty.bytes())
            .max()
            .unwrap_or(0);
        let mut bytes = vec![0u8; size as usize];
        for field in &self.fields {
            let width = field.ty.bytes() as usize;
            let start = field.offset as usize;
            let value = if little_endian {
                field.bits.to_le_bytes()[..width].to_vec()
            } else {
                field.bits.to_be_bytes()[8 - width..].to_vec()
            };
            bytes[start..start + width].copy_from_slice(&value);
        }
        bytes
    }

    /// The bytes it takes in the object, padding to the next record included.
    pub fn footprint(&self) -> u64 {
        (self.bytes(true).len() as u64).next_multiple_of(8)
    }
}

/// Which parameters of a group go into its records, and where.
#[derive(Clone, Debug)]
pub(super) struct RecordLayout {
    /// (parameter, offset), parameters ascending.
    pub(super) fields: Vec<(usize, u32)>,
}

impl RecordLayout {
    /// The record layout of `layout`: every parameter whose values are constants in every
    /// member, each aligned to its size, widest first (no padding between them); None when
    /// fewer than two are, as one constant is no cheaper in a record than as an argument.
    pub(super) fn of(layout: &ParamLayout) -> Option<RecordLayout> {
        let mut constant: Vec<usize> = (0..layout.count())
            .filter(|&p| {
                let ty = layout.types[p];
                (ty.is_int() && ty.bits() <= 64 || ty.is_float())
                    && (layout.values.iter()).all(|values| {
                        matches!(values[p], Hole::Int(_) | Hole::F32(_) | Hole::F64(_))
                    })
            })
            .collect();
        if constant.len() < 2 {
            return None;
        }
        constant.sort_by_key(|&p| (std::cmp::Reverse(layout.types[p].bytes()), p));
        let mut offset = 0u32;
        let mut fields: Vec<(usize, u32)> = constant
            .into_iter()
            .map(|p| {
                let at = offset;
                offset += layout.types[p].bytes();
                (p, at)
            })
            .collect();
        fields.sort_unstable();
        Some(RecordLayout { fields })
    }

    /// Whether parameter `p` is in the record.
    fn holds(&self, p: usize) -> bool {
        self.fields.binary_search_by_key(&p, |&(q, _)| q).is_ok()
    }

    /// Member `m`'s record, named `name`.
    pub(super) fn record(&self, layout: &ParamLayout, m: usize, name: FuncName) -> ConstantRecord {
        let mut fields: Vec<RecordField> = (self.fields.iter())
            .map(|&(p, offset)| RecordField {
                offset,
                ty: layout.types[p],
                bits: match layout.values[m][p] {
                    Hole::Int(bits) | Hole::F64(bits) => bits,
                    Hole::F32(bits) => u64::from(bits),
                    _ => unreachable!("a record holds constants"),
                },
            })
            .collect();
        fields.sort_by_key(|f| f.offset);
        ConstantRecord { name, fields }
    }

    /// A member's arguments with the record's parameters replaced by one: the record's
    /// address, last.
    pub(super) fn arguments(
        &self,
        args: &[ExtraArgument],
        record: &FuncName,
    ) -> Vec<ExtraArgument> {
        let mut kept: Vec<ExtraArgument> = (args.iter().enumerate())
            .filter(|(p, _)| !self.holds(*p))
            .map(|(_, a)| a.clone())
            .collect();
        kept.push(ExtraArgument {
            ty: POINTER,
            value: Hole::Name(record.clone()),
            signature: None,
            colocated: true,
        });
        kept
    }

    /// Makes `shared` (a shared body whose last `added` parameters are the group's) take the
    /// record's address, last, in place of the record's parameters, and load each of them,
    /// `readonly notrap aligned`, with its exact type, just before each instruction that uses
    /// it (a load per use: a value loaded once at the entry would stay live in a register or
    /// a spill slot across the whole body).
    pub(super) fn load_in(&self, shared: &mut Function, added: usize) {
        let entry = shared
            .layout
            .entry_block()
            .expect("a shared body has a body");
        let params: Vec<Value> = shared.dfg.block_params(entry).to_vec();
        let own = params.len() - added;
        let record = shared.dfg.append_block_param(entry, POINTER);
        shared.signature.params.push(AbiParam::new(POINTER));
        let moved: FxHashMap<Value, (Type, u32)> = (self.fields.iter())
            .map(|&(p, offset)| {
                let value = params[own + p];
                (value, (shared.dfg.value_type(value), offset))
            })
            .collect();
        let flags = MemFlagsData::trusted().with_readonly();
        let mut cursor = FuncCursor::new(shared);
        while cursor.next_block().is_some() {
            while let Some(inst) = cursor.next_inst() {
                let mut uses: Vec<Value> = (cursor.func.dfg.inst_values(inst))
                    .filter(|v| moved.contains_key(v))
                    .collect();
                uses.sort_unstable();
                uses.dedup();
                for used in uses {
                    let (ty, offset) = moved[&used];
                    let loaded = cursor.ins().load(ty, flags, record, offset as i32);
                    cursor
                        .func
                        .dfg
                        .map_inst_values(inst, |v| if v == used { loaded } else { v });
                }
            }
        }
        for &(p, _) in self.fields.iter().rev() {
            shared.dfg.remove_block_param(params[own + p]);
            shared.signature.params.remove(own + p);
        }
    }

    /// How many parameters the shared body adds with records: those not in the record, and
    /// the record's address.
    pub(super) fn parameters(&self, layout: &ParamLayout) -> usize {
        layout.count() - self.fields.len() + 1
    }

    /// The types of the parameters added with records, in order.
    pub(super) fn types(&self, layout: &ParamLayout) -> Vec<Type> {
        let mut types: Vec<Type> = (0..layout.count())
            .filter(|&p| !self.holds(p))
            .map(|p| layout.types[p])
            .collect();
        types.push(POINTER);
        types
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::types;

    /// A record stores each constant's low bytes at its offset, in the target's byte order.
    #[test]
    fn a_record_holds_each_constants_exact_bits() {
        let record = ConstantRecord {
            name: FuncName::Testcase("r".into()),
            fields: vec![
                RecordField {
                    offset: 0,
                    ty: types::I64,
                    bits: 0x0102_0304_0506_0708,
                },
                RecordField {
                    offset: 8,
                    ty: types::F32,
                    bits: 0x3f80_0000,
                },
                RecordField {
                    offset: 12,
                    ty: types::I8,
                    bits: 0xff,
                },
            ],
        };
        assert_eq!(
            record.bytes(true),
            [8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0x80, 0x3f, 0xff]
        );
        assert_eq!(
            record.bytes(false),
            [1, 2, 3, 4, 5, 6, 7, 8, 0x3f, 0x80, 0, 0, 0xff]
        );
        assert_eq!((record.alignment(), record.footprint()), (8, 16));
    }
}
