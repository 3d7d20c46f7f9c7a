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
//! A difference in those bits is what the callee *may* observe, not yet what it does: a callee
//! can hide it in ways the analysis does not model (`x * 0`, a call that always traps before
//! the argument matters). So two calls that differ are a mismatch only where the callee,
//! run alone on each call's arguments, behaves otherwise on some memory
//! (`alone.rs`): then the merged body passes a value the callee tells apart.
//!
//! What a merge may change on the way, and how it is not recorded:
//! - *Forwarders* are frames the original may not have: the first body is the first function
//!   entered that is not one, and a call of one is recorded at its call site. A forwarder is a
//!   function that passes its parameters, in order, to one direct call and returns its results
//!   (a thunk of an exact merge, on either side alike), and on the merged side a similar
//!   group's member (a thunk passing its constants to the shared body, or its stand-in). A
//!   function of the original that passes constants too is a body: so is the shared body made
//!   of it (unless every member of its group forwards as a thunk does).
//! - A similar group's shared body takes the member's arguments then the group's own (its
//!   constants, callees and record): only the member's are recorded, since a call of a removed
//!   member becomes a call of the shared body with those added.

use super::demanded::{Demand, DemandedParams, call_argument_demand, demanded_values};
use super::outcome::{ModuleCall, Observed};
use crate::edit::thunk::is_forwarding_thunk;
use crate::module::{ClifModule, FuncName};
use crate::pass::MergeReport;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// What a call of one function is to the record of calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallRole {
    /// It forwards: the body it reaches stands for it.
    Forwarder,
    /// A body, taking `extra` parameters past its callers' own (a shared body: its group's).
    Body { extra: usize },
}

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
    /// Whether calls are recorded ([`VerifyOptions::module_calls`](super::VerifyOptions)).
    enabled: bool,
    /// The roles the merge report gives (similar groups' members and shared bodies), by address;
    /// each other function's, found at its first call.
    roles: FxHashMap<usize, CallRole>,
    /// The demanded bits of each first body's values, and of each call's arguments in it.
    value_demand: FxHashMap<usize, Demand>,
    call_demand: FxHashMap<(usize, Inst), Vec<u128>>,
    first_body: FirstBody,
    calls: Vec<ModuleCall>,
    merged_as: Arc<MergedAs>,
}

/// What the merge made of each function it merged: a member of an exact class that is not kept
/// became its kept function, a member of a similar group its shared body (followed through
/// both: a class's kept function may be a group's member). Two sides' calls are one function's
/// where their callees stand for the same function: a right merge may call the kept function
/// where the original called another member, or a shared body where it called a member.
#[derive(Debug, Default)]
pub(super) struct MergedAs(FxHashMap<FuncName, FuncName>);

impl MergedAs {
    /// What the merge of `report` made of the functions it merged.
    pub(super) fn of(report: &MergeReport) -> MergedAs {
        let mut made = FxHashMap::default();
        for class in &report.classes {
            for replaced in &class.replaced {
                made.insert(replaced.name.clone(), class.kept.clone());
            }
        }
        for group in report.similar.iter().flatten() {
            for member in &group.members {
                made.insert(member.name.clone(), group.shared.clone());
            }
        }
        MergedAs(made)
    }

    /// The function `name` stands for after the merge.
    pub(super) fn stand_in_of(&self, name: &FuncName) -> FuncName {
        let mut at = name;
        // A name is merged once per round; the bound only keeps a cyclic report finite.
        for _ in 0..MERGE_ROUNDS_FOLLOWED {
            match self.0.get(at) {
                Some(next) if next != at => at = next,
                _ => break,
            }
        }
        at.clone()
    }
}

/// How many merges of one name [`MergedAs::stand_in_of`] follows at most.
const MERGE_ROUNDS_FOLLOWED: usize = 8;

impl<'a> CallRecorder<'a> {
    /// The recorder of `module`'s side, whose parameters demand `demanded`, with the roles the
    /// merge report gives (by address).
    pub(super) fn new(
        module: &'a ClifModule,
        demanded: Arc<DemandedParams>,
        roles: FxHashMap<usize, CallRole>,
        (enabled, merged_as): (bool, Arc<MergedAs>),
    ) -> CallRecorder<'a> {
        CallRecorder {
            module,
            demanded,
            enabled,
            roles,
            value_demand: FxHashMap::default(),
            call_demand: FxHashMap::default(),
            first_body: FirstBody::NotYet,
            calls: Vec::new(),
            merged_as,
        }
    }

    /// The function `name` of this side's module.
    pub(super) fn function(&self, name: &FuncName) -> Option<&'a Function> {
        let id = self.module.resolve(name)?;
        Some(&self.module.function(id).func)
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
        if self.first_body == FirstBody::NotYet && self.role(func) != CallRole::Forwarder {
            let func = address(func);
            self.first_body = FirstBody::At { depth, func };
        }
    }

    fn role(&mut self, func: &Function) -> CallRole {
        *(self.roles.entry(address(func))).or_insert_with(|| match is_forwarding_thunk(func) {
            true => CallRole::Forwarder,
            false => CallRole::Body { extra: 0 },
        })
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
        if !self.enabled {
            return;
        }
        if self.first_body
            != (FirstBody::At {
                depth,
                func: address(caller),
            })
        {
            return;
        }
        let tail = matches!(
            caller.dfg.insts[inst].opcode(),
            Opcode::ReturnCall | Opcode::ReturnCallIndirect
        );
        if tail {
            self.first_body = FirstBody::Left;
        }
        let extra = match self.role(callee) {
            CallRole::Body { extra } => extra,
            CallRole::Forwarder => 0,
        };
        let own = args.len().saturating_sub(extra);
        let mut demanded = self.argument_demand(caller, inst);
        demanded.resize(own, u128::MAX);
        let values = &self.value_demand[&address(caller)];
        let results_demanded = match tail {
            true => vec![u128::MAX; callee.signature.returns.len()],
            false => (caller.dfg.inst_results(inst).iter())
                .map(|r| values.get(r).copied().unwrap_or(0))
                .collect(),
        };
        let name = FuncName::of_function(callee);
        self.calls.push(ModuleCall {
            stands_for: self.merged_as.stand_in_of(&name),
            callee: name,
            args: args[..own].iter().map(observe).collect(),
            demanded,
            results_demanded,
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

/// The address `func` is known by in the maps of roles.
pub(super) fn address(func: &Function) -> usize {
    func as *const Function as usize
}

/// The callee of `func` when `func` passes its parameters, in order, then constants and
/// addresses, to one direct call of a function `original` does not define (one the merge made:
/// a shared body) and returns its results: a member's thunk, whatever report it comes from.
pub(super) fn thunk_to_made_body(func: &Function, original: &ClifModule) -> Option<FuncName> {
    let mut blocks = func.layout.blocks();
    let (Some(entry), None) = (blocks.next(), blocks.next()) else {
        return None;
    };
    let params = func.dfg.block_params(entry);
    let mut made = Vec::new();
    let mut insts = func.layout.block_insts(entry);
    for inst in insts.by_ref().take(FORWARDER_MAX_INSTS) {
        let data = &func.dfg.insts[inst];
        match data.opcode() {
            Opcode::Iconst
            | Opcode::F32const
            | Opcode::F64const
            | Opcode::SymbolValue
            | Opcode::FuncAddr => made.extend_from_slice(func.dfg.inst_results(inst)),
            Opcode::Call | Opcode::ReturnCall => {
                let InstructionData::Call {
                    args,
                    opcode,
                    func_ref,
                } = *data
                else {
                    return None;
                };
                let args = args.as_slice(&func.dfg.value_lists);
                let forwards = args.len() >= params.len()
                    && args[..params.len()] == *params
                    && args[params.len()..].iter().all(|v| made.contains(v));
                let callee = FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)?;
                let ends = match opcode {
                    Opcode::ReturnCall => insts.next().is_none(),
                    _ => {
                        let ret = insts.next();
                        ret.is_some_and(|ret| {
                            func.dfg.insts[ret].opcode() == Opcode::Return
                                && func.dfg.inst_args(ret) == func.dfg.inst_results(inst)
                        }) && insts.next().is_none()
                    }
                };
                let made_by_merge = original.resolve(&callee).is_none();
                return (forwards && ends && made_by_merge).then_some(callee);
            }
            _ => return None,
        }
    }
    None
}

/// The most instructions a member's thunk has: a call, its return, and a constant or an address
/// for each extra argument.
const FORWARDER_MAX_INSTS: usize = 64;
