//! Calls into the module: which calls of functions run for real a run records, and with which
//! of their arguments, so that the two sides record the same calls of a right merge.
//!
//! A callee runs, so what it does with its arguments shows in what the run returns, stores and
//! calls — unless it uses them only past a test of memory this run never passes, or the run
//! ends first. The arguments themselves are what every such use starts from: a merged body that
//! passes another value than the original, in bits the callee may observe, is wrong whether or
//! not the callee's use of them is reached. So the calls the run's *first body* makes (the
//! function checked, or the body its merged counterpart forwards to) are recorded with their
//! arguments, and the two sides' must be the same:
//! - in the bits the callee may observe (`demanded.rs`: its parameter's demanded bits, for its
//!   effects and the results the caller looks at), on both sides — a parameter it never reads
//!   (Wasmtime's caller `vmctx`), or bits it masks away, are no difference;
//! - only from the first body's own frame: deeper calls pass what that body's calls passed,
//!   and their demand would have to follow from the entry's (a value a callee only returns,
//!   passed on where the result is dropped, is not observed).
//!
//! What a merge may change on the way, and how it is not recorded:
//! - *Forwarders* (a thunk of an exact merge, a similar member's thunk passing its constants to
//!   the shared body) are frames the original does not have: the first body is the first
//!   function entered that is not one, and a call of one is recorded at its call site.
//! - A similar group's shared body takes the member's arguments then the group's own (its
//!   constants, callees and record): only the member's are recorded, since a call of a removed
//!   member becomes a call of the shared body with those added.
//!
//! A function of the original that only forwards is a forwarder on both sides alike.

use super::demanded::{Demand, DemandedParams, call_argument_demand, demanded_values};
use super::outcome::{ModuleCall, Observed};
use crate::module::ClifModule;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode, Value};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// How many instructions a forwarder may have: a call, its return, and a constant or an
/// address for each extra argument (a similar group adds a handful).
const FORWARDER_MAX_INSTS: usize = 64;

/// Where a run stands with its first body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FirstBody {
    /// Only forwarders were entered yet.
    NotYet,
    /// Its frame is at this depth (frames below it), running this function (by address).
    At { depth: usize, func: usize },
    /// It left by a tail call: what runs next is not the body checked.
    Left,
}

/// One module's side of the record of calls: what it knows of the module, and the record of the
/// run in progress.
pub(super) struct CallRecorder<'a> {
    module: &'a ClifModule,
    demanded: Arc<DemandedParams>,
    /// The shared bodies of similar groups, by address: how many parameters each takes past
    /// its members' own.
    extra_params: FxHashMap<usize, usize>,
    /// Whether each function (by address) is a forwarder, found at its first call.
    forwarders: FxHashMap<usize, bool>,
    /// The demanded bits of each first body's values, and of each call's arguments in it.
    value_demand: FxHashMap<usize, Demand>,
    call_demand: FxHashMap<(usize, Inst), Vec<u128>>,
    first_body: FirstBody,
    calls: Vec<ModuleCall>,
}

impl<'a> CallRecorder<'a> {
    /// The recorder of `module`'s side, whose parameters demand `demanded`, and whose similar
    /// groups' shared bodies take `extra_params` (by address).
    pub(super) fn new(
        module: &'a ClifModule,
        demanded: Arc<DemandedParams>,
        extra_params: FxHashMap<usize, usize>,
    ) -> CallRecorder<'a> {
        CallRecorder {
            module,
            demanded,
            extra_params,
            forwarders: FxHashMap::default(),
            value_demand: FxHashMap::default(),
            call_demand: FxHashMap::default(),
            first_body: FirstBody::NotYet,
            calls: Vec::new(),
        }
    }

    /// A new run starts.
    pub(super) fn reset(&mut self) {
        self.first_body = FirstBody::NotYet;
        self.calls.clear();
    }

    /// The run's calls, which it ended with.
    pub(super) fn take(&mut self) -> Vec<ModuleCall> {
        std::mem::take(&mut self.calls)
    }

    /// `func` is entered in a frame at `depth`: the first body, when it is the first function
    /// entered that does not forward.
    pub(super) fn entered(&mut self, func: &Function, depth: usize) {
        let at = address(func);
        if self.first_body == FirstBody::NotYet
            && !*self.forwarders.entry(at).or_insert_with(|| is_forwarder(func))
        {
            self.first_body = FirstBody::At { depth, func: at };
        }
    }

    /// The call `inst` of `caller`, whose frame is at `depth`, of the module's function `callee`
    /// with `args`: recorded when the caller is the first body (`observe` makes the arguments
    /// what the other side sees), after `imports_before` calls not run and `stores_before`
    /// stores. A tail call leaves the first body.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call(
        &mut self,
        (caller, inst, depth): (&Function, Inst, usize),
        callee: &Function,
        args: &[DataValue],
        observe: impl Fn(&DataValue) -> Observed,
        imports_before: usize,
        stores_before: usize,
    ) {
        if self.first_body != (FirstBody::At { depth, func: address(caller) }) {
            return;
        }
        let tail = matches!(
            caller.dfg.insts[inst].opcode(),
            Opcode::ReturnCall | Opcode::ReturnCallIndirect
        );
        if tail {
            self.first_body = FirstBody::Left;
        }
        let extra = self.extra_params.get(&address(callee)).copied().unwrap_or(0);
        let own = args.len().saturating_sub(extra);
        let mut demanded = self.argument_demand(caller, inst);
        demanded.resize(own, u128::MAX);
        self.calls.push(ModuleCall {
            args: args[..own].iter().map(observe).collect(),
            demanded,
            imports_before,
            stores_before,
        });
    }

    /// What the callee of the call `inst` of `caller` may observe of each argument.
    fn argument_demand(&mut self, caller: &Function, inst: Inst) -> Vec<u128> {
        let at = address(caller);
        let (module, demanded) = (self.module, &*self.demanded);
        let values = (self.value_demand.entry(at))
            .or_insert_with(|| demanded_values(caller, module, demanded));
        (self.call_demand.entry((at, inst)))
            .or_insert_with(|| call_argument_demand(caller, inst, module, demanded, values))
            .clone()
    }
}

fn address(func: &Function) -> usize {
    func as *const Function as usize
}

/// Whether `func` only passes its parameters, in order, then constants and addresses, to one
/// direct call and returns its results (or tail-calls): a thunk, of an exact or a similar merge.
pub(super) fn is_forwarder(func: &Function) -> bool {
    let mut blocks = func.layout.blocks();
    let (Some(entry), None) = (blocks.next(), blocks.next()) else {
        return false;
    };
    let params = func.dfg.block_params(entry);
    let mut made: Vec<Value> = Vec::new();
    let mut insts = func.layout.block_insts(entry);
    for (count, inst) in insts.by_ref().enumerate() {
        if count >= FORWARDER_MAX_INSTS {
            return false;
        }
        let data = &func.dfg.insts[inst];
        match data.opcode() {
            Opcode::Iconst
            | Opcode::F32const
            | Opcode::F64const
            | Opcode::SymbolValue
            | Opcode::FuncAddr => made.extend_from_slice(func.dfg.inst_results(inst)),
            Opcode::Call | Opcode::ReturnCall => {
                let InstructionData::Call { args, opcode, .. } = data else {
                    return false;
                };
                let args = args.as_slice(&func.dfg.value_lists);
                let forwards = args.len() >= params.len()
                    && args[..params.len()] == *params
                    && args[params.len()..].iter().all(|v| made.contains(v));
                if !forwards {
                    return false;
                }
                if *opcode == Opcode::ReturnCall {
                    return insts.next().is_none();
                }
                let returns_results = insts.next().is_some_and(|ret| {
                    matches!(
                        func.dfg.insts[ret],
                        InstructionData::MultiAry { opcode: Opcode::Return, args }
                            if args.as_slice(&func.dfg.value_lists) == func.dfg.inst_results(inst)
                    )
                });
                return returns_results && insts.next().is_none();
            }
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{ReadOptions, read_module_text};
    use std::path::Path;

    fn first_function(text: &str) -> Function {
        let module = read_module_text(Path::new("t.clif"), text, ReadOptions::default());
        let module = module.expect("valid module");
        let first = module.functions().next().expect("a function");
        (*first.func).clone()
    }

    #[test]
    fn thunks_forward_with_or_without_constants() {
        let exact = "function %t(i64) -> i64 {\n    fn0 = %b(i64) -> i64\n\
                     block0(v0: i64):\n    v1 = call fn0(v0)\n    return v1\n}\n";
        let member = "function %t(i64) -> i64 {\n    fn0 = %s(i64, i32, i64) -> i64\n\
                      fn1 = %imp(i64) -> i64\nblock0(v0: i64):\n    v1 = iconst.i32 7\n    \
                      v2 = func_addr.i64 fn1\n    return_call fn0(v0, v1, v2)\n}\n";
        assert!(is_forwarder(&first_function(exact)));
        assert!(is_forwarder(&first_function(member)));
    }

    #[test]
    fn bodies_do_not_forward() {
        let bodies = [
            // Its parameters in another order.
            "function %t(i64, i64) -> i64 {\n    fn0 = %b(i64, i64) -> i64\n\
             block0(v0: i64, v1: i64):\n    v2 = call fn0(v1, v0)\n    return v2\n}\n",
            // A value computed from a parameter.
            "function %t(i64) -> i64 {\n    fn0 = %b(i64, i64) -> i64\n\
             block0(v0: i64):\n    v1 = iadd_imm v0, 1\n    v2 = call fn0(v0, v1)\n    \
             return v2\n}\n",
            // Not the call's result.
            "function %t(i64) -> i64 {\n    fn0 = %b(i64) -> i64\n\
             block0(v0: i64):\n    v1 = call fn0(v0)\n    return v0\n}\n",
            // Two calls.
            "function %t(i64) -> i64 {\n    fn0 = %b(i64) -> i64\n\
             block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = call fn0(v0)\n    return v2\n}\n",
            // No call.
            "function %t(i64) -> i64 {\nblock0(v0: i64):\n    return v0\n}\n",
        ];
        for text in bodies {
            assert!(!is_forwarder(&first_function(text)), "{text}");
        }
    }
}
