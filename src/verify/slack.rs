//! What a merge may add to a run without changing what it does: the frames and instructions of
//! the forwarders on the way (a thunk of an exact merge, a similar member's thunk passing its
//! constants). The merged side's limits grow with them, or a right merge whose calls pass
//! through several thunks, or whose thunks pass many constants in a loop of cheap calls, would
//! hit the limits where the original ended and be called a mismatch.

use crate::module::{ClifModule, FuncName};
use cranelift_codegen::ir::{Function, InstructionData, Opcode};
use rustc_hash::FxHashMap;

/// The most a forwarder chain of the merged module adds to each call of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MergedSlack {
    /// Frames a call of the original may become: one, plus the longest chain of forwarders
    /// (a forwarder calling a forwarder …) before a body that is not one.
    pub(super) frames_per_call: usize,
    /// Instructions those frames may add to one call: the chain's length times the most
    /// instructions of a forwarder.
    pub(super) instructions_per_call: u64,
}

impl MergedSlack {
    /// The slack of `merged`'s forwarders.
    pub(super) fn of(merged: &ClifModule) -> MergedSlack {
        let forwarders: FxHashMap<FuncName, (u64, Option<FuncName>)> = (merged.functions())
            .filter_map(|mf| Some((mf.name.clone(), forwarder(&mf.func)?)))
            .collect();
        let mut longest = 0;
        for start in forwarders.keys() {
            // A chain longer than the forwarders are many is a cycle: it never ends, on both
            // sides alike or on the merged side only, which the limits must still catch.
            let mut at = Some(start);
            let mut length = 0;
            while let Some((_, next)) = at.and_then(|n| forwarders.get(n)) {
                length += 1;
                if length > forwarders.len() {
                    break;
                }
                at = next.as_ref();
            }
            longest = longest.max(length);
        }
        let widest = forwarders.values().map(|&(n, _)| n).max().unwrap_or(0);
        MergedSlack {
            frames_per_call: 1 + longest,
            instructions_per_call: widest * longest as u64,
        }
    }

    /// The merged side's fuel for a run whose original ran `steps` instructions, from the
    /// merged side's own limit `fuel`: each of those instructions may be a call through the
    /// chain.
    pub(super) fn fuel_after(&self, fuel: u64, steps: u64) -> u64 {
        fuel.saturating_add(steps.saturating_mul(self.instructions_per_call))
    }
}

/// Whether `func` only forwards: one block of constants, addresses, loads (of a record's
/// constants) and at most one call, then its return (or a tail call). Its instruction count and
/// the callee it calls by name.
fn forwarder(func: &Function) -> Option<(u64, Option<FuncName>)> {
    let entry = func.layout.entry_block()?;
    if func.layout.blocks().nth(1).is_some() {
        return None;
    }
    let mut count = 0u64;
    let mut callee = None;
    let mut calls = 0;
    for inst in func.layout.block_insts(entry) {
        count += 1;
        let data = &func.dfg.insts[inst];
        match data.opcode() {
            Opcode::Iconst
            | Opcode::F16const
            | Opcode::F32const
            | Opcode::F64const
            | Opcode::F128const
            | Opcode::Vconst
            | Opcode::SymbolValue
            | Opcode::FuncAddr
            | Opcode::Load
            | Opcode::Return => {}
            Opcode::Call | Opcode::ReturnCall => {
                calls += 1;
                if let InstructionData::Call { func_ref, .. } = data {
                    callee = FuncName::of_external(&func.dfg.ext_funcs[*func_ref].name, func);
                }
            }
            Opcode::CallIndirect | Opcode::ReturnCallIndirect => calls += 1,
            _ => return None,
        }
    }
    (calls <= 1).then_some((count, callee))
}
