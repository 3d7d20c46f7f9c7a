//! The parameters of a shared body: which hole positions become parameters, and in what order.
//!
//! A *position* is a hole of the fingerprint, in walk order; its *column* is the vector of the
//! members' values at that position. A position whose column holds one value is not a parameter
//! (the shared body keeps the constant). Positions with equal columns (and types) share one
//! parameter. Parameters are numbered in the order of their first position, so the layout is a
//! function of the members' content alone.

use super::find::Member;
use crate::compare::{Fingerprint, Hole};
use cranelift_codegen::ir::{
    Function, Inst, InstructionData, Opcode, Type, Value, ValueDef, types,
};
use rustc_hash::FxHashMap;

/// The type of an address parameter (a callee or a symbol): the 64-bit targets' pointer.
pub const POINTER: Type = types::I64;

/// Where each hole of a group goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ParamLayout {
    /// For each position: the parameter it reads, or None when every member has one value.
    pub(super) param_of_position: Vec<Option<u32>>,
    /// Each parameter's type.
    pub(super) types: Vec<Type>,
    /// Each member's value of each parameter, in member order.
    pub(super) values: Vec<Vec<Hole>>,
}

impl ParamLayout {
    /// The layout of `members` (equal fingerprints with holes); `first` is the function of
    /// `members[0]`, whose instructions give the positions' types.
    pub(super) fn of(members: &[&Member], first: &Function) -> ParamLayout {
        let positions = members[0].fingerprint.holes.len();
        let position_types = position_types(first, &members[0].fingerprint);
        let mut param_of_position = Vec::with_capacity(positions);
        let mut types = Vec::new();
        let mut index: FxHashMap<(Type, Vec<&Hole>), u32> = FxHashMap::default();
        for (p, &ty) in position_types.iter().enumerate() {
            let column: Vec<&Hole> = members.iter().map(|m| &m.fingerprint.holes[p]).collect();
            if column.iter().all(|&v| v == column[0]) {
                param_of_position.push(None);
                continue;
            }
            let next = types.len() as u32;
            let param = *index.entry((ty, column)).or_insert(next);
            if param == next {
                types.push(ty);
            }
            param_of_position.push(Some(param));
        }
        let values = members
            .iter()
            .map(|m| {
                let mut values: Vec<Option<Hole>> = vec![None; types.len()];
                for (p, param) in param_of_position.iter().enumerate() {
                    if let Some(param) = param {
                        values[*param as usize] = Some(m.fingerprint.holes[p].clone());
                    }
                }
                values
                    .into_iter()
                    .map(|v| v.expect("every parameter has a position"))
                    .collect()
            })
            .collect();
        ParamLayout {
            param_of_position,
            types,
            values,
        }
    }

    /// How many parameters the shared body adds.
    pub(super) fn count(&self) -> usize {
        self.types.len()
    }
}

/// The type of the value each hole of `fp` (a fingerprint of `func`) stands for.
pub(super) fn position_types(func: &Function, fp: &Fingerprint) -> Vec<Type> {
    let slots = constant_use_slots(func, fp);
    (fp.hole_sites.iter().zip(slots))
        .map(|(&site, slot)| match slot {
            Some(slot) => func.dfg.value_type(operand(func, site, slot)),
            None => position_type(func, site),
        })
        .collect()
}

/// The type of the value the hole of the instruction `site` itself stands for.
fn position_type(func: &Function, site: Inst) -> Type {
    match func.dfg.insts[site] {
        InstructionData::Call { .. } | InstructionData::CallIndirect { .. } => POINTER,
        InstructionData::TryCall { .. } => POINTER,
        _ => match func.dfg.insts[site].opcode() {
            Opcode::F32const => types::F32,
            Opcode::F64const => types::F64,
            _ => func.dfg.value_type(func.dfg.first_result(site)),
        },
    }
}

/// Whether `inst` makes a constant (`iconst`, `f32const`, `f64const`).
pub(super) fn is_constant(func: &Function, inst: Inst) -> bool {
    matches!(
        func.dfg.insts[inst],
        InstructionData::UnaryImm { .. }
            | InstructionData::UnaryIeee32 { .. }
            | InstructionData::UnaryIeee64 { .. }
    )
}

/// Whether `v` is made by a constant instruction (through its aliases).
fn is_constant_value(func: &Function, v: Value) -> bool {
    match func.dfg.value_def(func.dfg.resolve_aliases(v)) {
        ValueDef::Result(inst, _) => is_constant(func, inst),
        _ => false,
    }
}

/// The `slot`th value operand of `inst` (in [`cranelift_codegen::ir::DataFlowGraph::inst_values`]
/// order).
pub(super) fn operand(func: &Function, inst: Inst, slot: usize) -> Value {
    func.dfg
        .inst_values(inst)
        .nth(slot)
        .expect("a slot of the instruction")
}

/// For each hole of `fp` (a fingerprint of `func`) that is a use of a constant
/// ([`HoleKinds::CONSTANT_USES`](crate::compare::HoleKinds::CONSTANT_USES)): which value operand
/// of its site it is, in `inst_values` order. The walk writes a site's operands in that order
/// (but for a `try_call`'s exception contexts, which `shared::check` refuses), so the `k`th use
/// of a constant at a site is the `k`th operand a constant makes.
pub(super) fn constant_use_slots(func: &Function, fp: &Fingerprint) -> Vec<Option<usize>> {
    let mut slots = Vec::with_capacity(fp.holes.len());
    let mut at: Option<(Inst, usize)> = None;
    for (hole, &site) in fp.holes.iter().zip(&fp.hole_sites) {
        let constant = matches!(hole, Hole::Int(_) | Hole::F32(_) | Hole::F64(_));
        if !constant || is_constant(func, site) {
            slots.push(None);
            continue;
        }
        let k = match at {
            Some((s, k)) if s == site => k + 1,
            _ => 0,
        };
        at = Some((site, k));
        let slot = (func.dfg.inst_values(site).enumerate())
            .filter(|&(_, v)| is_constant_value(func, v))
            .nth(k)
            .map(|(slot, _)| slot)
            .expect("the walk met as many constant operands");
        slots.push(Some(slot));
    }
    slots
}
