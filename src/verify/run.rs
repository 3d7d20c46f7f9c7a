//! One module ready to run, and one run of a function in it: the interpreter's loop, with calls
//! followed here so that every run ends.

mod fast;
#[cfg(test)]
mod fast_tests;

use super::guide::Trace;
use super::inputs::{fnv, mix, small_mostly, value_of_bits};
use super::memory::{Fill, Pin};
use super::module_calls::CallRecorder;
use super::names::{Names, Resolved, StubKind, Unchanged};
use super::options::VerifyOptions;
use super::outcome::{Callee, ImportCall, Observed, Outcome, Run, Trap};
use super::state::cycle::CycleWatch;
use super::state::{Machine, raw_of};
use crate::module::FuncName;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{
    Block, ExternalName, Function, Inst, InstructionData, Opcode, Signature,
};
use cranelift_interpreter::address::{Address, AddressFunctionEntry, AddressRegion};
use cranelift_interpreter::instruction::DfgInstructionContext;
use cranelift_interpreter::state::State;
use cranelift_interpreter::step::{ControlFlow, step};
use rustc_hash::FxHashMap;

/// One module, ready to run.
pub(super) struct Side<'a> {
    state: Machine<'a>,
    /// The stand-ins, by address.
    stubs: FxHashMap<usize, (&'a FuncName, &'a StubKind)>,
    /// The calls of the module's functions the run's first body makes (`module_calls.rs`).
    calls: CallRecorder<'a>,
    /// The instruction running (to name what the interpreter could not run).
    at: Option<(&'a Function, Inst)>,
    /// What the last unsupported run stopped at: an opcode, or what else it was.
    pub(super) unsupported_at: String,
    /// The decisions of the last run, when they are recorded (the original side).
    pub(super) trace: Option<Trace>,
    /// The instructions the last run executed.
    pub(super) steps: u64,
    /// Whether the last run was stopped in a cycle that stores (a silent one would never
    /// store or call again).
    pub(super) stopped_in_storing_cycle: bool,
}

impl<'a> Side<'a> {
    pub(super) fn new(resolved: &Resolved<'a>, names: &'a Names) -> Side<'a> {
        Side {
            state: Machine::new(
                resolved.by_name.clone(),
                names,
                resolved.slot_of.clone(),
                resolved.slot_fn.clone(),
            ),
            stubs: resolved.stubs.clone(),
            calls: CallRecorder::new(
                resolved.module,
                resolved.demanded.clone(),
                resolved.roles.clone(),
                (resolved.module_calls, resolved.merged_as.clone()),
            ),
            at: None,
            unsupported_at: String::new(),
            trace: None,
            steps: 0,
            stopped_in_storing_cycle: false,
        }
    }

    /// The function `name` of this side's module.
    pub(super) fn function(&self, name: &FuncName) -> Option<&'a Function> {
        self.calls.function(name)
    }

    /// Defines the read-only data object `name` with `bytes` for every run of this side.
    pub(super) fn define_data(&mut self, name: &FuncName, bytes: &[u8]) {
        self.state.define_data(&name.to_string(), bytes);
    }

    /// The index of `name` among the names both sides know.
    pub(super) fn name_index(&self, name: &FuncName) -> usize {
        self.state.name_index(name)
    }

    /// Whether the last run resolved only names and address slots that are `unchanged`.
    pub(super) fn resolved_only(&self, unchanged: &Unchanged) -> bool {
        self.state.resolved_only(&unchanged.names, &unchanged.slots)
    }

    /// Makes the words of `pins` read as pinned in every run from now on (see [`Pin`]).
    pub(super) fn pin(&mut self, pins: &[Pin]) {
        self.state.memory.pin(pins);
    }

    /// Logs the loads of unwritten memory of each run (for the guided search).
    pub(super) fn log_loads(&mut self) {
        self.state.memory.log_loads();
    }

    /// The loads of unwritten memory the last run logged (see `Memory::loads`).
    pub(super) fn loads(&self) -> Vec<Pin> {
        self.state.memory.loads()
    }

    /// Runs `entry` on `args` for at most `fuel` instructions, memory nothing stored to read as
    /// `fill` makes it; a panic inside the interpreter is an unsupported run.
    pub(super) fn run(
        &mut self,
        entry: &'a Function,
        args: &[DataValue],
        options: &VerifyOptions,
        fuel: u64,
        fill: Fill,
    ) -> Run {
        let mut imports = Vec::new();
        self.state.reset(fill);
        self.at = None;
        self.calls.reset();
        if let Some(trace) = &mut self.trace {
            trace.clear();
            self.state.memory.clear_loads();
        }
        self.steps = 0;
        self.stopped_in_storing_cycle = false;
        let result = crate::guard::catch(|| self.execute(entry, args, options, fuel, &mut imports));
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(panic) => Outcome::Unsupported(
                crate::guard::panic_message(&*panic).unwrap_or_else(|| "panic".to_string()),
            ),
        };
        if let Outcome::Unsupported(why) = &outcome {
            self.unsupported_at = match self.at {
                Some((func, inst)) => func.dfg.insts[inst].opcode().to_string(),
                None => why.split(':').next().unwrap_or(why).to_string(),
            };
        }
        let stores = std::mem::take(&mut self.state.stores);
        self.state.release();
        Run {
            outcome,
            imports,
            calls: self.calls.take(),
            stores,
        }
    }

    /// The interpreter's loop (`Interpreter::call` and `block`), with calls kept on an explicit
    /// stack so that deep recursion neither overflows the host's stack nor goes unbounded.
    fn execute(
        &mut self,
        entry: &'a Function,
        args: &[DataValue],
        options: &VerifyOptions,
        fuel: u64,
        imports: &mut Vec<ImportCall>,
    ) -> Outcome {
        // The call instruction each frame but the innermost returns to.
        let mut returns_to: Vec<Inst> = Vec::new();
        let mut pc = match self.enter(entry, args.to_vec(), options, 0) {
            Ok(pc) => pc,
            Err(outcome) => return outcome,
        };
        // A run in a state it was in before never ends: out of fuel, whatever the fuel.
        let mut watch = CycleWatch::default();
        loop {
            if self.steps == fuel {
                return Outcome::OutOfFuel;
            }
            if watch.repeats(self.steps, pc, &returns_to, imports.len(), &mut self.state) {
                self.stopped_in_storing_cycle = watch.stored(&self.state);
                return Outcome::OutOfFuel;
            }
            self.steps += 1;
            match self.run_inst(pc, options, &mut returns_to, imports) {
                Ok(inst) => pc = inst,
                Err(Outcome::Returned(values)) => {
                    let observed = (values.iter())
                        .map(|v| match v {
                            Observed::Value(v) => self.state.observed(v),
                            stack => stack.clone(),
                        })
                        .collect();
                    return Outcome::Returned(observed);
                }
                Err(outcome) => return outcome,
            }
        }
    }

    /// Runs the instruction `pc` of the current frame: the next instruction to run, or `Err`
    /// with how the run ends.
    fn run_inst(
        &mut self,
        pc: Inst,
        options: &VerifyOptions,
        returns_to: &mut Vec<Inst>,
        imports: &mut Vec<ImportCall>,
    ) -> Result<Inst, Outcome> {
        let func = self.state.current_frame().function();
        self.at = Some((func, pc));
        if let Some(trace) = &mut self.trace
            && (func.dfg.insts[pc].opcode().is_branch()
                || matches!(
                    func.dfg.insts[pc].opcode(),
                    Opcode::Trapz | Opcode::Trapnz | Opcode::Icmp | Opcode::Fcmp
                ))
        {
            let frame = self.state.current_frame();
            trace.record(func, pc, |v| frame.get(v).clone());
        }
        if let Some((callee, sig, args)) = self.opaque_callee(func, pc) {
            let rets = self.not_run(callee, sig, args, imports)?;
            return if matches!(
                func.dfg.insts[pc].opcode(),
                Opcode::ReturnCall | Opcode::ReturnCallIndirect
            ) {
                self.leave(rets, returns_to)
            } else {
                self.state
                    .current_frame_mut()
                    .set_all(func.dfg.inst_results(pc), rets);
                next_inst(pc, func)
            };
        }
        match fast::run(self.state.current_frame_mut(), func, pc) {
            Some(fast::Next::Inst) => return next_inst(pc, func),
            Some(fast::Next::Block(block)) => return first_inst(block, func),
            None => {}
        }
        let flow = step(&mut self.state, DfgInstructionContext::new(pc, &func.dfg))
            .map_err(|e| Outcome::Unsupported(error_chain(&e)))?;
        match flow {
            ControlFlow::Assign(values) => {
                set_each(&mut self.state, func.dfg.inst_results(pc), values);
                next_inst(pc, func)
            }
            ControlFlow::Continue => next_inst(pc, func),
            ControlFlow::ContinueAt(block, values) => {
                set_each(&mut self.state, func.dfg.block_params(block), values);
                first_inst(block, func)
            }
            ControlFlow::Call(callee, values) => {
                self.call(pc, callee, values.to_vec(), options, returns_to, imports)
            }
            ControlFlow::ReturnCall(callee, values) => {
                self.return_call(pc, callee, values.to_vec(), options, returns_to, imports)
            }
            ControlFlow::Return(values) => self.leave(values.to_vec(), returns_to),
            ControlFlow::Trap(trap) => Err(Outcome::Trapped(trap.into())),
        }
    }

    /// The call at `pc`: an import returns at once, a name this module does not have ends the
    /// run, a defined function gets a frame.
    fn call(
        &mut self,
        pc: Inst,
        callee: &'a Function,
        args: Vec<DataValue>,
        options: &VerifyOptions,
        returns_to: &mut Vec<Inst>,
        imports: &mut Vec<ImportCall>,
    ) -> Result<Inst, Outcome> {
        match self.stub(callee) {
            Some((name, StubKind::Import)) => {
                let func = self.state.current_frame().function();
                let sig = call_site_signature(func, pc, callee);
                let rets = self.not_run(Callee::Import(name.clone()), sig, args, imports)?;
                self.state
                    .current_frame_mut()
                    .set_all(func.dfg.inst_results(pc), rets);
                next_inst(pc, func)
            }
            Some((name, StubKind::Absent)) => Err(Outcome::Dangling(name.clone())),
            None => {
                // Through an address, a function of another signature may be called: a trap,
                // as a signature check of the call would make it.
                let caller = self.state.current_frame().function();
                if caller.dfg.inst_results(pc).len() != callee.signature.returns.len() {
                    return Err(Outcome::Trapped(Trap::BadSignature));
                }
                self.record_call((pc, returns_to.len()), callee, &args, imports.len());
                returns_to.push(pc);
                if returns_to.len() >= options.max_depth {
                    Err(Outcome::TooDeep)
                } else {
                    self.enter(callee, args, options, returns_to.len())
                }
            }
        }
    }

    /// A call of a function that is not run ([`opaque_call`]), placed among the run's stores
    /// (a store moved across it is another run). The callee may write any memory but the
    /// caller's frames: what the run reads there after the call is read anew, so that a load
    /// moved across the call reads something else.
    fn not_run(
        &mut self,
        callee: Callee,
        sig: &Signature,
        args: Vec<DataValue>,
        imports: &mut Vec<ImportCall>,
    ) -> Result<Vec<DataValue>, Outcome> {
        let stores_before = self.state.stores.len();
        for arg in &args {
            self.state.escape(arg);
        }
        let args = self.observed(args);
        let rets = opaque_call(callee, sig, args, stores_before, imports)?;
        self.state.memory.clobber(imports.len() as u64);
        self.state.clobber_escaped(imports.len() as u64);
        Ok(rets)
    }

    /// A tail call: as [`Side::call`], but the current frame is left first.
    fn return_call(
        &mut self,
        pc: Inst,
        callee: &'a Function,
        args: Vec<DataValue>,
        options: &VerifyOptions,
        returns_to: &mut Vec<Inst>,
        imports: &mut Vec<ImportCall>,
    ) -> Result<Inst, Outcome> {
        match self.stub(callee) {
            Some((name, StubKind::Import)) => {
                let sig = call_site_signature(self.state.current_frame().function(), pc, callee);
                let rets = self.not_run(Callee::Import(name.clone()), sig, args, imports)?;
                self.leave(rets, returns_to)
            }
            Some((name, StubKind::Absent)) => Err(Outcome::Dangling(name.clone())),
            None => {
                self.record_call((pc, returns_to.len()), callee, &args, imports.len());
                self.state.pop_frame();
                self.enter(callee, args, options, returns_to.len())
            }
        }
    }

    /// The call at `pc`, when it reaches a function that is not run although the module may
    /// define it: a libcall, a known symbol, or a `call_indirect` whose address is no function
    /// of the module. Its callee, signature and arguments as the other side must see them.
    fn opaque_callee(
        &self,
        func: &'a Function,
        pc: Inst,
    ) -> Option<(Callee, &'a Signature, Vec<DataValue>)> {
        // Raw: `not_run` marks the stack slots they point into, then observes them.
        let args = || -> Vec<DataValue> {
            let values = func.dfg.inst_args(pc);
            self.state.collect_values(values).into_vec()
        };
        match func.dfg.insts[pc] {
            InstructionData::Call { func_ref, .. } => {
                let ext = &func.dfg.ext_funcs[func_ref];
                let callee = match &ext.name {
                    ExternalName::LibCall(lc) => Callee::LibCall(lc.to_string()),
                    ExternalName::KnownSymbol(ks) => Callee::LibCall(ks.to_string()),
                    _ => return None,
                };
                Some((callee, &func.dfg.signatures[ext.signature], args()))
            }
            InstructionData::CallIndirect { sig_ref, .. } => {
                let mut all = args();
                let target = self.state.current_frame().get(func.dfg.inst_args(pc)[0]);
                let raw = match target {
                    DataValue::I64(x) => *x as u64,
                    DataValue::I32(x) => u64::from(*x as u32),
                    _ => return None,
                };
                let address = Address::try_from(raw).ok()?;
                let callee = match (
                    address.region,
                    AddressFunctionEntry::from(address.entry & 1),
                ) {
                    (AddressRegion::Function, AddressFunctionEntry::UserFunction)
                        if self
                            .state
                            .get_function_from_address(address.clone())
                            .is_some() =>
                    {
                        return None;
                    }
                    (AddressRegion::Function, AddressFunctionEntry::LibCall) => {
                        match cranelift_codegen::ir::LibCall::all_libcalls()
                            .get(address.offset as usize)
                        {
                            Some(lc) => Callee::LibCall(lc.to_string()),
                            None => Callee::Address(raw_of(&address)),
                        }
                    }
                    _ => match all[0] {
                        DataValue::I64(x) => Callee::Address(x as u64),
                        _ => Callee::Address(raw),
                    },
                };
                all.remove(0);
                Some((callee, &func.dfg.signatures[sig_ref], all))
            }
            _ => None,
        }
    }

    /// `values` as the other side must see them (stack addresses as slot and offset).
    fn observed(&self, values: Vec<DataValue>) -> Vec<Observed> {
        values.iter().map(|v| self.state.observed(v)).collect()
    }

    fn stub(&self, func: &Function) -> Option<(&'a FuncName, &'a StubKind)> {
        self.stubs.get(&(func as *const Function as usize)).copied()
    }

    /// Pushes a frame for `func` at `depth` (frames below it) with its parameters set; the
    /// first instruction.
    fn enter(
        &mut self,
        func: &'a Function,
        args: Vec<DataValue>,
        options: &VerifyOptions,
        depth: usize,
    ) -> Result<Inst, Outcome> {
        let entry = func
            .layout
            .entry_block()
            .ok_or_else(|| Outcome::Unsupported(format!("{} has no body", func.name)))?;
        let params = func.dfg.block_params(entry);
        if params.len() != args.len() {
            return Err(Outcome::Trapped(Trap::BadSignature));
        }
        // The interpreter allocates a frame's bytes when it enters the function: check the
        // limit first (a frame of gigabytes would be allocated, and the u32 sum Cranelift
        // computes it with could overflow).
        let frame = super::state::frame_bound(func);
        let limit = options.max_stack_bytes as u64;
        if frame > limit {
            self.at = None;
            let why = format!("a stack frame of {frame} bytes (the limit is {limit})");
            return Err(Outcome::Unsupported(why));
        }
        if self.state.stack_bytes() + frame > limit {
            return Err(Outcome::TooDeep);
        }
        self.calls.entered(func, depth);
        self.state.push_frame(func);
        self.state.current_frame_mut().set_all(params, args);
        func.layout
            .first_inst(entry)
            .ok_or_else(|| Outcome::Unsupported("empty entry block".into()))
    }

    /// Records the call at `pc` of the module's function `callee` with `args`, made from a
    /// frame at `depth` (see `module_calls.rs`), before the callee's frame is pushed: a stack
    /// address among the arguments is one into a caller's frame.
    fn record_call(
        &mut self,
        (pc, depth): (Inst, usize),
        callee: &Function,
        args: &[DataValue],
        imports_before: usize,
    ) {
        let caller = self.state.current_frame().function();
        let state = &self.state;
        self.calls.call(
            (caller, pc, depth),
            callee,
            args,
            |v| state.observed(v),
            imports_before,
            state.stores.len(),
        );
    }

    /// Pops the current frame and returns `values` to the caller; `Err` with the outcome when
    /// the entry function returns.
    fn leave(
        &mut self,
        values: Vec<DataValue>,
        returns_to: &mut Vec<Inst>,
    ) -> Result<Inst, Outcome> {
        self.state.pop_frame();
        let Some(call) = returns_to.pop() else {
            // Observed by `execute`, which ends the run.
            return Err(Outcome::Returned(
                values.into_iter().map(Observed::Value).collect(),
            ));
        };
        let caller = self.state.current_frame().function();
        self.state
            .current_frame_mut()
            .set_all(caller.dfg.inst_results(call), values);
        caller
            .layout
            .next_inst(call)
            .ok_or_else(|| Outcome::Unsupported("a call ends its block".into()))
    }
}

/// Sets `names` to `values` in the current frame, one by one: `Frame::set_all` takes a `Vec`,
/// and making one of each instruction's results was an allocation per instruction run.
fn set_each(
    state: &mut Machine,
    names: &[cranelift_codegen::ir::Value],
    values: impl IntoIterator<Item = DataValue, IntoIter: ExactSizeIterator>,
) {
    let values = values.into_iter();
    assert_eq!(names.len(), values.len(), "a value for each result");
    let frame = state.current_frame_mut();
    for (&name, value) in names.iter().zip(values) {
        frame.set(name, value);
    }
}

/// The instruction after `inst`, which does not end its block.
fn next_inst(inst: Inst, func: &Function) -> Result<Inst, Outcome> {
    func.layout
        .next_inst(inst)
        .ok_or_else(|| Outcome::Unsupported("fell off the end of a block".into()))
}

/// The first instruction of `block`, which a branch entered.
fn first_inst(block: Block, func: &Function) -> Result<Inst, Outcome> {
    func.layout
        .first_inst(block)
        .ok_or_else(|| Outcome::Unsupported("empty block".into()))
}

/// The signature the call at `pc` declares (its `FuncRef`'s or its `SigRef`'s), or for a call
/// of another form `callee`'s own.
fn call_site_signature<'f>(func: &'f Function, pc: Inst, callee: &'f Function) -> &'f Signature {
    match func.dfg.insts[pc] {
        InstructionData::Call { func_ref, .. } => {
            &func.dfg.signatures[func.dfg.ext_funcs[func_ref].signature]
        }
        InstructionData::CallIndirect { sig_ref, .. } => &func.dfg.signatures[sig_ref],
        _ => &callee.signature,
    }
}

/// A call to a function that is not run: recorded, and answered with a hash of the callee,
/// the signature its call site declares (`sig`) and its arguments, one value per return of
/// `sig`.
fn opaque_call(
    callee: Callee,
    sig: &Signature,
    args: Vec<Observed>,
    stores_before: usize,
    calls: &mut Vec<ImportCall>,
) -> Result<Vec<DataValue>, Outcome> {
    let mut h = fnv(callee.to_string().as_bytes());
    h = mix(h ^ fnv(sig.to_string().as_bytes()));
    for a in &args {
        // A stack address is hashed as the i64 of its place, whatever its type.
        let a = match a {
            Observed::Value(v) => v,
            Observed::Stack(at) => &DataValue::I64(at.hashed() as i64),
        };
        h = mix(h ^ u64::from(a.ty().bits()) ^ (u64::from(a.ty().is_float()) << 32));
        let mut bytes = [0u8; 16];
        let n = a.ty().bytes() as usize;
        if n > 16 {
            return Err(Outcome::Unsupported(format!("argument of type {}", a.ty())));
        }
        a.write_to_slice_le(&mut bytes[..n]);
        h = mix(h ^ u64::from_le_bytes(bytes[..8].try_into().unwrap()));
        h = mix(h ^ u64::from_le_bytes(bytes[8..].try_into().unwrap()));
    }
    calls.push(ImportCall {
        callee,
        signature: sig.clone(),
        args,
        stores_before,
    });
    sig.returns
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let bits = small_mostly(mix(h ^ (i as u64 + 1)));
            value_of_bits(r.value_type, bits, bits.rotate_left(17)).ok_or_else(|| {
                Outcome::Unsupported(format!("a function not run returns {}", r.value_type))
            })
        })
        .collect()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
