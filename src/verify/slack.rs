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
        let longest = longest_chain(&forwarders);
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

/// The most forwarders a call passes through before a body that is not one, each counted
/// once. A chain that comes back to a forwarder it passed is a cycle: a call into it never
/// ends, on both sides alike or on the merged side only, which the limits must catch. It counts
/// the forwarders it passes, not more: a cycle counted until some bound would multiply every
/// run's limits by that bound (an unrelated `%p` ↔ `%q` pair with N other forwarders made
/// every merged side's depth N + 2 calls per call).
fn longest_chain(forwarders: &FxHashMap<FuncName, (u64, Option<FuncName>)>) -> usize {
    // Each forwarder's chain length, from the end of its chain back; each is walked once.
    let mut length: FxHashMap<&FuncName, usize> = FxHashMap::default();
    // The forwarders of the chain being walked, and where each stands on it.
    let (mut path, mut on_path) = (Vec::new(), FxHashMap::default());
    for start in forwarders.keys() {
        let mut at = Some(start);
        // What the chain is worth past `path`: 0 at a body.
        let mut beyond = 0;
        while let Some(name) = at {
            if let Some(&known) = length.get(name) {
                beyond = known;
                break;
            }
            let Some((_, next)) = forwarders.get(name) else {
                break;
            };
            if let Some(&first) = on_path.get(name) {
                // Every forwarder of the cycle passes all of it, whichever was met first.
                let cycle = path.len() - first;
                for name in path.drain(first..) {
                    length.insert(name, cycle);
                }
                beyond = cycle;
                break;
            }
            on_path.insert(name, path.len());
            path.push(name);
            at = next.as_ref();
        }
        on_path.clear();
        for name in path.drain(..).rev() {
            beyond += 1;
            length.insert(name, beyond);
        }
    }
    length.into_values().max().unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{ReadOptions, read_module_text};
    use std::path::Path;

    /// `%name`, which forwards to `%callee`.
    fn forwarder_to(name: &str, callee: &str) -> String {
        format!(
            "function %{name}(i64) -> i64 {{\n    fn0 = %{callee}(i64) -> i64\n\
             block0(v0: i64):\n    v1 = call fn0(v0)\n    return v1\n}}\n\n"
        )
    }

    fn slack_of(text: &str) -> MergedSlack {
        let module = read_module_text(Path::new("t.clif"), text, ReadOptions::default());
        MergedSlack::of(&module.expect("valid module"))
    }

    const BODY: &str = "function %body(i64) -> i64 {\nblock0(v0: i64):\n    v1 = iadd v0, v0\n    \
                        return v1\n}\n\n";

    #[test]
    fn a_chain_counts_each_forwarder_on_it() {
        let text =
            forwarder_to("f1", "f2") + &forwarder_to("f2", "f3") + &forwarder_to("f3", "body");
        let slack = slack_of(&(text + BODY));
        assert_eq!(
            slack.frames_per_call, 4,
            "a call may become f1, f2, f3 and the body"
        );
        assert_eq!(slack.instructions_per_call, 3 * 2);
    }

    #[test]
    fn a_cycle_counts_its_forwarders_once_whatever_else_forwards() {
        let mut text = forwarder_to("p", "q") + &forwarder_to("q", "p") + BODY;
        for i in 0..10 {
            text += &forwarder_to(&format!("t{i}"), "body");
        }
        let slack = slack_of(&text);
        assert_eq!(slack.frames_per_call, 3, "p, q, and the call itself");
    }

    #[test]
    fn a_chain_into_a_cycle_counts_the_forwarders_it_passes_in_any_order() {
        let parts = [
            forwarder_to("a", "b"),
            forwarder_to("b", "p"),
            forwarder_to("p", "q"),
            forwarder_to("q", "p"),
        ];
        for first in 0..parts.len() {
            let text: String = (0..parts.len())
                .map(|i| parts[(first + i) % parts.len()].as_str())
                .collect();
            let slack = slack_of(&text);
            assert_eq!(slack.frames_per_call, 5, "a, b, p, q, and the call itself");
        }
    }
}
