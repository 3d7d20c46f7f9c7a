//! Differential execution: runs every function of a module before and after merging in
//! cranelift-interpreter, on the same arguments, and checks that both do the same thing.
//!
//! For each function *defined* in the original module whose signature the interpreter can run
//! (integer and float parameters and returns), the function is called by its name in the
//! original module, and the same name in the merged module: the function itself, a thunk, or an
//! alias, or — when the merge removed it — the kept function of its class (from the
//! [`MergeReport`]). Both runs must end the same way: the same results (floats compared by their
//! bits), or the same trap (its trap code), having called the module's imports in the same order
//! with the same arguments.
//!
//! How a module is run:
//! - Every name either module defines, aliases or refers to is known on both sides. A direct
//!   call runs the function of that name (an alias: its target). An address (`func_addr`) is
//!   a *slot* shared by the names that are one symbol — an alias and its target, in either
//!   module — and is the same value on both sides; calling through it runs the slot's function.
//!   (So in `--mode aliases`, where the merge makes `%g` an alias of `%f` and the two addresses
//!   equal, comparing them is not reported as a difference: that is what the mode intends.)
//! - An import (a name the module refers to but does not define) is modelled as a pure function:
//!   its results are a hash of its name and arguments. Every call to an import is recorded, and
//!   the two sequences of calls must be equal.
//! - A name one side does not have at all (a function the merge removed, a private copy it
//!   added) is *absent* on that side: calling it is a *dangling call*, which never matches a
//!   normal end.
//! - Calls are followed by a loop here (not by recursion in the interpreter), with a limit on
//!   the instructions run (`fuel`), on the depth of calls, and on the interpreter's stack, so
//!   that every run ends. A run in which either side hits a limit is *inconclusive*; one in
//!   which the interpreter cannot run an instruction (it panics or reports an error, e.g. for
//!   memory outside its stack) is *unsupported*. Neither counts as a mismatch — but a run
//!   unsupported on one side only does, since both sides run the same bodies. A function whose
//!   runs keep being inconclusive is run with small arguments, then no more.
//!
//! Arguments are pseudo-random from a seed and the function's name, and start with edge values
//! (all 0, 1, -1, MIN, MAX, NaN for floats): the whole check is deterministic.

use crate::merge::{Action, MergeReport};
use crate::module::{ClifModule, FuncName};
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    ArgumentPurpose, ExternalName, FuncRef, Function, GlobalValue, Inst, MemFlagsData, Signature,
    StackSlot, TrapCode, Type, UserFuncName, types,
};
use cranelift_interpreter::address::{Address, AddressFunctionEntry, AddressRegion, AddressSize};
use cranelift_interpreter::environment::FunctionStore;
use cranelift_interpreter::frame::Frame;
use cranelift_interpreter::instruction::DfgInstructionContext;
use cranelift_interpreter::interpreter::{InterpreterState, LibCallHandler};
use cranelift_interpreter::state::{InterpreterFunctionRef, MemoryError, State};
use cranelift_interpreter::step::{ControlFlow, CraneliftTrap, step};
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How much to run.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Argument tuples per function.
    pub runs: usize,
    /// Seed of the pseudo-random arguments.
    pub seed: u64,
    /// Instructions one run may execute (on each side).
    pub fuel: u64,
    /// A function's remaining runs are not done once this many of its runs were inconclusive
    /// (they are costly). After the first two, its arguments are small numbers only, which
    /// more often make loops and recursion end.
    pub max_inconclusive: usize,
    /// Calls that may be in progress at once.
    pub max_depth: usize,
    /// Bytes of stack slots that may be live at once.
    pub max_stack_bytes: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            runs: 64,
            seed: 0x5eed_c11f,
            fuel: 50_000,
            max_inconclusive: 6,
            max_depth: 2_000,
            max_stack_bytes: 16 << 20,
        }
    }
}

/// A trap, as the interpreter reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trap {
    /// A trap instruction, a trapping memory access or arithmetic: its trap code.
    Code(TrapCode),
    BadSignature,
    UnreachableCodeReached,
    HeapMisaligned,
    Debug,
}

impl From<CraneliftTrap> for Trap {
    fn from(t: CraneliftTrap) -> Trap {
        match t {
            CraneliftTrap::User(code) => Trap::Code(code),
            CraneliftTrap::BadSignature => Trap::BadSignature,
            CraneliftTrap::UnreachableCodeReached => Trap::UnreachableCodeReached,
            CraneliftTrap::HeapMisaligned => Trap::HeapMisaligned,
            CraneliftTrap::Debug => Trap::Debug,
        }
    }
}

impl fmt::Display for Trap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trap::Code(code) => write!(f, "trap {code}"),
            Trap::BadSignature => write!(f, "trap (bad signature)"),
            Trap::UnreachableCodeReached => write!(f, "trap (unreachable code)"),
            Trap::HeapMisaligned => write!(f, "trap (misaligned access)"),
            Trap::Debug => write!(f, "debugtrap"),
        }
    }
}

/// How one run ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    Returned(Vec<DataValue>),
    Trapped(Trap),
    /// A call to a name this module does not have.
    Dangling(FuncName),
    /// The function cannot be run at all under this name (reason).
    NotRunnable(String),
    /// Inconclusive: the fuel ran out.
    OutOfFuel,
    /// Inconclusive: too many calls in progress, or too much stack.
    TooDeep,
    /// The interpreter cannot run something on the way (reason).
    Unsupported(String),
}

impl Outcome {
    /// Whether the run hit a limit of the check rather than ending.
    pub fn is_inconclusive(&self) -> bool {
        matches!(self, Outcome::OutOfFuel | Outcome::TooDeep)
    }

    pub fn is_unsupported(&self) -> bool {
        matches!(self, Outcome::Unsupported(_))
    }

    /// The same end: results equal bit for bit, or the same trap.
    fn same_as(&self, other: &Outcome) -> bool {
        match (self, other) {
            (Outcome::Returned(a), Outcome::Returned(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| x.ty() == y.ty() && x.bitwise_eq(y))
            }
            (Outcome::Trapped(a), Outcome::Trapped(b)) => a == b,
            (Outcome::Dangling(a), Outcome::Dangling(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Returned(values) => {
                write!(f, "returns ")?;
                write_values(f, values)
            }
            Outcome::Trapped(trap) => write!(f, "{trap}"),
            Outcome::Dangling(name) => write!(f, "calls {name}, which the module does not have"),
            Outcome::NotRunnable(why) => write!(f, "cannot run: {why}"),
            Outcome::OutOfFuel => write!(f, "runs out of fuel"),
            Outcome::TooDeep => write!(f, "calls too deep"),
            Outcome::Unsupported(why) => write!(f, "unsupported by the interpreter: {why}"),
        }
    }
}

fn write_values(f: &mut fmt::Formatter<'_>, values: &[DataValue]) -> fmt::Result {
    write!(f, "(")?;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write_value(f, v)?;
    }
    write!(f, ")")
}

/// A value with its type; floats also by their bits (NaN payloads matter).
fn write_value(f: &mut fmt::Formatter<'_>, v: &DataValue) -> fmt::Result {
    match v {
        DataValue::F32(x) => write!(f, "f32 {x} (0x{:08x})", x.bits()),
        DataValue::F64(x) => write!(f, "f64 {x} (0x{:016x})", x.bits()),
        other => write!(f, "{} {other}", other.ty()),
    }
}

/// A call to an import, as recorded.
#[derive(Clone, Debug)]
pub struct ImportCall {
    pub name: FuncName,
    pub args: Vec<DataValue>,
}

/// One run: how it ended, and the imports it called.
#[derive(Clone, Debug)]
pub struct Run {
    pub outcome: Outcome,
    pub imports: Vec<ImportCall>,
}

fn same_imports(a: &[ImportCall], b: &[ImportCall]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name
                && x.args.len() == y.args.len()
                && x.args.iter().zip(&y.args).all(|(p, q)| p.bitwise_eq(q))
        })
}

/// A function that does not behave the same before and after.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The function's name in the original module.
    pub function: FuncName,
    /// What ran in the merged module when it is not the same name (the kept function of a
    /// removed one).
    pub ran_as: Option<FuncName>,
    pub args: Vec<DataValue>,
    pub original: Run,
    pub merged: Run,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Outcome::NotRunnable(why) = &self.merged.outcome {
            return write!(f, "{}: {why}", self.function);
        }
        write!(f, "{}", self.function)?;
        if let Some(kept) = &self.ran_as {
            write!(f, " (removed; ran {kept})")?;
        }
        write_values(f, &self.args)?;
        write!(
            f,
            ": original {}, merged {}",
            self.original.outcome, self.merged.outcome
        )?;
        if self.original.outcome.same_as(&self.merged.outcome) {
            write!(
                f,
                "; imports called differ: original {}, merged {}",
                describe_imports(&self.original.imports),
                describe_imports(&self.merged.imports)
            )?;
        }
        Ok(())
    }
}

fn describe_imports(calls: &[ImportCall]) -> String {
    struct Calls<'a>(&'a [ImportCall]);
    impl fmt::Display for Calls<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "[")?;
            for (i, c) in self.0.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{}", c.name)?;
                write_values(f, &c.args)?;
            }
            write!(f, "]")
        }
    }
    Calls(calls).to_string()
}

/// What the check found.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Functions run on both sides.
    pub functions: usize,
    /// Argument tuples run (each on both sides), inconclusive and unsupported ones included.
    pub runs: usize,
    /// Runs in which a side hit the fuel, depth or stack limit.
    pub inconclusive: usize,
    /// Runs the interpreter could not complete on a side.
    pub unsupported: usize,
    /// Defined functions not run: a signature the interpreter cannot call.
    pub skipped: usize,
    /// Functions whose runs stopped early, after `max_inconclusive` inconclusive ones.
    pub cut_short: usize,
    /// Functions every run of which ran to the end on both sides.
    pub fully_checked: usize,
    /// Functions some runs of which ran to the end, not all.
    pub partly_checked: usize,
    /// Functions no run of which ran to the end on both sides (skipped ones included).
    pub unchecked: usize,
    pub mismatches: Vec<Mismatch>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// `verify: N functions, R runs, M mismatches (I inconclusive, U unsupported, S skipped);
    /// F fully checked, P partly, Z not at all`
    pub fn summary(&self) -> String {
        format!(
            "verify: {} functions, {} runs, {} mismatches ({} inconclusive, {} unsupported, \
             {} skipped); {} fully checked, {} partly, {} not at all",
            self.functions,
            self.runs,
            self.mismatches.len(),
            self.inconclusive,
            self.unsupported,
            self.skipped,
            self.fully_checked,
            self.partly_checked,
            self.unchecked
        )
    }

    /// Runs that ran to the end on both sides.
    pub fn completed_runs(&self) -> usize {
        self.runs - self.inconclusive - self.unsupported
    }

    /// A warning when most runs could not be run to the end, so that "0 mismatches" is not
    /// taken for more than it is.
    pub fn coverage_warning(&self) -> Option<String> {
        let done = self.completed_runs();
        (self.runs > 0 && done * 2 < self.runs).then(|| {
            format!(
                "warning: --verify ran only {done} of {} runs to the end ({} inconclusive, {} \
                 unsupported by the interpreter): most of this merge was not checked",
                self.runs, self.inconclusive, self.unsupported
            )
        })
    }
}

/// Runs every function of `original` and its counterpart in `merged` (the result of merging
/// `original`, as `report` says) on `options.runs` argument tuples, and reports every
/// difference. See the module docs.
pub fn verify_merge(
    original: &ClifModule,
    merged: &ClifModule,
    report: &MergeReport,
    options: &VerifyOptions,
) -> VerifyReport {
    install_quiet_panic_hook();
    // The kept function of every removed one.
    let mut removed: FxHashMap<FuncName, FuncName> = FxHashMap::default();
    for class in &report.classes {
        for r in &class.replaced {
            if r.by == Action::Removed {
                removed.insert(r.name.clone(), class.kept.clone());
            }
        }
    }

    let names = Names::new(&[original, merged]);
    let stubs_a = Stubs::new(original, &names.names);
    let stubs_b = Stubs::new(merged, &names.names);
    let mut side_a = Side::new(original, &names, &stubs_a);
    let mut side_b = Side::new(merged, &names, &stubs_b);

    let mut out = VerifyReport::default();
    for mf in original.functions() {
        let func = &mf.func;
        if !runnable_signature(&func.signature) {
            out.skipped += 1;
            out.unchecked += 1;
            continue;
        }
        out.functions += 1;
        // The counterpart: the same name, or the kept function of a removed one.
        let (target, ran_as) = match merged.resolve(&mf.name) {
            Some(id) => (Some(&merged.function(id).func), None),
            None => match removed.get(&mf.name) {
                Some(kept) => (
                    merged.resolve(kept).map(|id| &merged.function(id).func),
                    Some(kept.clone()),
                ),
                None => (None, None),
            },
        };
        let problem = match target {
            None => Some(format!("{} is not in the merged module", mf.name)),
            Some(t) if t.signature != func.signature => Some(format!(
                "its signature is {}, not {}",
                t.signature, func.signature
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            out.mismatches.push(Mismatch {
                function: mf.name.clone(),
                ran_as,
                args: Vec::new(),
                original: Run {
                    outcome: Outcome::NotRunnable("not run".into()),
                    imports: Vec::new(),
                },
                merged: Run {
                    outcome: Outcome::NotRunnable(problem),
                    imports: Vec::new(),
                },
            });
            continue;
        }
        let target = target.expect("checked above");
        let mut rng = Rng::new(options.seed ^ fnv(mf.name.to_string().as_bytes()));
        let types: Vec<Type> = func.signature.params.iter().map(|p| p.value_type).collect();
        let mut inconclusive = 0;
        let runs_before = out.runs;
        let incomplete_before = out.inconclusive + out.unsupported;
        for run in 0..options.runs {
            if inconclusive >= options.max_inconclusive.max(1) {
                out.cut_short += 1;
                break;
            }
            let args = arguments(&types, run, inconclusive >= 2, &mut rng);
            let a = side_a.run(func, &args, options);
            let b = side_b.run(target, &args, options);
            out.runs += 1;
            if a.outcome.is_inconclusive() || b.outcome.is_inconclusive() {
                out.inconclusive += 1;
                inconclusive += 1;
            } else if a.outcome.is_unsupported() && b.outcome.is_unsupported() {
                out.unsupported += 1;
            } else if !a.outcome.same_as(&b.outcome) || !same_imports(&a.imports, &b.imports) {
                // (An unsupported run on one side only is a mismatch: both sides run the same
                // bodies, so the interpreter should fail on both.)
                out.mismatches.push(Mismatch {
                    function: mf.name.clone(),
                    ran_as: ran_as.clone(),
                    args,
                    original: a,
                    merged: b,
                });
            }
        }
        let runs = out.runs - runs_before;
        let incomplete = out.inconclusive + out.unsupported - incomplete_before;
        match (runs, incomplete) {
            (r, 0) if r == options.runs => out.fully_checked += 1,
            (r, i) if i < r => out.partly_checked += 1,
            _ => out.unchecked += 1,
        }
    }
    out
}

/// Runs the function `name` of `module` once on `args`, as `verify_merge` runs each side: for
/// tests that compare the interpreter with compiled code.
pub fn run_function(
    module: &ClifModule,
    name: &FuncName,
    args: &[DataValue],
    options: &VerifyOptions,
) -> Run {
    install_quiet_panic_hook();
    let names = Names::new(&[module]);
    let stubs = Stubs::new(module, &names.names);
    let mut side = Side::new(module, &names, &stubs);
    match module.resolve(name) {
        Some(id) => side.run(&module.function(id).func, args, options),
        None => Run {
            outcome: Outcome::NotRunnable(format!("{name} is not defined")),
            imports: Vec::new(),
        },
    }
}

/// Whether the interpreter can be called with this signature from here: scalar integers and
/// floats only (no vectors, no struct arguments).
pub fn runnable_signature(sig: &Signature) -> bool {
    let scalar = |ty: Type| {
        matches!(
            ty,
            types::I8
                | types::I16
                | types::I32
                | types::I64
                | types::I128
                | types::F32
                | types::F64
        )
    };
    sig.params
        .iter()
        .all(|p| scalar(p.value_type) && !matches!(p.purpose, ArgumentPurpose::StructArgument(_)))
        && sig.returns.iter().all(|p| scalar(p.value_type))
}

/// Every name `module` defines, aliases, or refers to from a function.
fn collect_names(module: &ClifModule, names: &mut BTreeSet<FuncName>) {
    for mf in module.functions() {
        names.insert(mf.name.clone());
        for ext in mf.func.dfg.ext_funcs.values() {
            names.extend(FuncName::of_external(&ext.name, &mf.func));
        }
    }
    for alias in module.aliases() {
        names.insert(alias.name.clone());
        names.insert(alias.target.clone());
    }
}

/// A stand-in in the store for a name the module does not define.
#[derive(Clone, Debug)]
enum StubKind {
    /// Referred to but not defined: modelled as a pure function.
    Import,
    /// Not known to this module at all.
    Absent,
}

/// The stand-ins of one module, owned here so that the store may borrow them.
struct Stubs {
    functions: Vec<(FuncName, StubKind, Function)>,
}

impl Stubs {
    fn new(module: &ClifModule, names: &[FuncName]) -> Stubs {
        // The signature of each import: its first declaration, in module order.
        let mut imports: BTreeMap<FuncName, Signature> = BTreeMap::new();
        for mf in module.functions() {
            let func = &mf.func;
            for ext in func.dfg.ext_funcs.values() {
                if let Some(name) = FuncName::of_external(&ext.name, func)
                    && module.lookup(&name).is_none()
                {
                    imports
                        .entry(name)
                        .or_insert_with(|| func.dfg.signatures[ext.signature].clone());
                }
            }
        }
        let mut functions = Vec::new();
        for name in names {
            if module.resolve(name).is_some() {
                continue;
            }
            let (kind, sig) = match imports.get(name) {
                Some(sig) => (StubKind::Import, sig.clone()),
                None => (
                    StubKind::Absent,
                    Signature::new(cranelift_codegen::isa::CallConv::SystemV),
                ),
            };
            let func = Function::with_name_signature(UserFuncName::default(), sig);
            functions.push((name.clone(), kind, func));
        }
        Stubs { functions }
    }
}

/// The names both sides know, and the *address slot* of each: names that are one symbol (an
/// alias and its target, in either module) share a slot, so that `func_addr` of an alias equals
/// `func_addr` of its target on both sides (in `--mode aliases` that is what the merge intends).
struct Names {
    names: Vec<FuncName>,
    slot_of: FxHashMap<FuncName, u32>,
}

impl Names {
    fn new(modules: &[&ClifModule]) -> Names {
        let mut set = BTreeSet::new();
        for module in modules {
            collect_names(module, &mut set);
        }
        let names: Vec<FuncName> = set.into_iter().collect();
        let index: FxHashMap<&FuncName, usize> =
            names.iter().enumerate().map(|(i, n)| (n, i)).collect();
        // Union-find over aliases; the representative of a group is its smallest name.
        let mut parent: Vec<usize> = (0..names.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for module in modules {
            for alias in module.aliases() {
                let a = root(&mut parent, index[&alias.name]);
                let b = root(&mut parent, index[&alias.target]);
                let (lo, hi) = (a.min(b), a.max(b));
                parent[hi] = lo;
            }
        }
        let slot_of = (0..names.len())
            .map(|i| (names[i].clone(), root(&mut parent, i) as u32))
            .collect();
        Names { names, slot_of }
    }
}

/// The interpreter's state with addresses of functions by slot (see [`Names`]); everything else
/// is `InterpreterState`'s.
struct SlotState<'a> {
    inner: InterpreterState<'a>,
    slot_of: &'a FxHashMap<FuncName, u32>,
    /// The function run by a call through each slot's address.
    slot_fn: Vec<Option<&'a Function>>,
}

impl<'a> State<'a> for SlotState<'a> {
    fn get_function(&self, func_ref: FuncRef) -> Option<&'a Function> {
        self.inner.get_function(func_ref)
    }
    fn get_current_function(&self) -> &'a Function {
        self.inner.get_current_function()
    }
    fn get_libcall_handler(&self) -> LibCallHandler {
        self.inner.get_libcall_handler()
    }
    fn push_frame(&mut self, function: &'a Function) {
        self.inner.push_frame(function)
    }
    fn pop_frame(&mut self) {
        self.inner.pop_frame()
    }
    fn current_frame_mut(&mut self) -> &mut Frame<'a> {
        self.inner.current_frame_mut()
    }
    fn current_frame(&self) -> &Frame<'a> {
        self.inner.current_frame()
    }
    fn stack_address(
        &self,
        size: AddressSize,
        slot: StackSlot,
        offset: u64,
    ) -> Result<Address, MemoryError> {
        self.inner.stack_address(size, slot, offset)
    }
    fn checked_load(
        &self,
        address: Address,
        ty: Type,
        mem_flags: MemFlagsData,
    ) -> Result<DataValue, MemoryError> {
        self.inner.checked_load(address, ty, mem_flags)
    }
    fn checked_store(
        &mut self,
        address: Address,
        v: DataValue,
        mem_flags: MemFlagsData,
    ) -> Result<(), MemoryError> {
        self.inner.checked_store(address, v, mem_flags)
    }
    fn function_address(
        &self,
        size: AddressSize,
        name: &ExternalName,
    ) -> Result<Address, MemoryError> {
        let func = self.get_current_function();
        match FuncName::of_external(name, func).and_then(|n| self.slot_of.get(&n)) {
            Some(&slot) => Address::from_parts(
                size,
                AddressRegion::Function,
                AddressFunctionEntry::UserFunction as u64,
                u64::from(slot),
            ),
            None => self.inner.function_address(size, name),
        }
    }
    fn get_function_from_address(&self, address: Address) -> Option<InterpreterFunctionRef<'a>> {
        if address.region == AddressRegion::Function
            && address.entry == AddressFunctionEntry::UserFunction as u64
        {
            let slot = usize::try_from(address.offset).ok()?;
            return self
                .slot_fn
                .get(slot)
                .copied()
                .flatten()
                .map(InterpreterFunctionRef::Function);
        }
        self.inner.get_function_from_address(address)
    }
    fn resolve_global_value(&self, gv: GlobalValue) -> Result<DataValue, MemoryError> {
        self.inner.resolve_global_value(gv)
    }
    fn get_pinned_reg(&self) -> DataValue {
        self.inner.get_pinned_reg()
    }
    fn set_pinned_reg(&mut self, v: DataValue) {
        self.inner.set_pinned_reg(v)
    }
}

/// One module, ready to run.
struct Side<'a> {
    state: SlotState<'a>,
    /// The stand-ins, by address.
    stubs: FxHashMap<*const Function, (&'a FuncName, &'a StubKind)>,
}

impl<'a> Side<'a> {
    fn new(module: &'a ClifModule, names: &'a Names, stubs: &'a Stubs) -> Side<'a> {
        let stub_of: FxHashMap<&FuncName, &'a Function> =
            stubs.functions.iter().map(|(n, _, f)| (n, f)).collect();
        let mut store = FunctionStore::default();
        let mut slot_fn: Vec<Option<&'a Function>> = vec![None; names.names.len()];
        let mut resolved = Vec::with_capacity(names.names.len());
        for name in &names.names {
            let defined = module.resolve(name).map(|id| &module.function(id).func);
            let func = defined
                .or_else(|| stub_of.get(name).copied())
                .expect("a stand-in for every name the module does not resolve");
            store.add(name.to_string(), func);
            resolved.push((name, defined.is_some(), func));
        }
        // A slot runs the first of its names this module defines, else its first stand-in.
        for defined_first in [true, false] {
            for &(name, defined, func) in &resolved {
                let slot = names.slot_of[name] as usize;
                if defined == defined_first && slot_fn[slot].is_none() {
                    slot_fn[slot] = Some(func);
                }
            }
        }
        let stubs = stubs
            .functions
            .iter()
            .map(|(n, k, f)| (f as *const Function, (n, k)))
            .collect();
        Side {
            state: SlotState {
                inner: InterpreterState::default().with_function_store(store),
                slot_of: &names.slot_of,
                slot_fn,
            },
            stubs,
        }
    }

    /// Runs `entry` on `args`; a panic inside the interpreter is an unsupported run.
    fn run(&mut self, entry: &'a Function, args: &[DataValue], options: &VerifyOptions) -> Run {
        let mut imports = Vec::new();
        let result = quietly(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.execute(entry, args, options, &mut imports)
            }))
        });
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(panic) => Outcome::Unsupported(panic_message(&*panic)),
        };
        self.reset();
        Run { outcome, imports }
    }

    fn reset(&mut self) {
        let inner = &mut self.state.inner;
        inner.frame_stack.clear();
        inner.stack.clear();
        inner.frame_offset = 0;
        inner.pinned_reg = DataValue::I64(0);
    }

    /// The interpreter's loop (`Interpreter::call` and `block`), with calls kept on an explicit
    /// stack so that deep recursion neither overflows the host's stack nor goes unbounded.
    fn execute(
        &mut self,
        entry: &'a Function,
        args: &[DataValue],
        options: &VerifyOptions,
        imports: &mut Vec<ImportCall>,
    ) -> Outcome {
        self.reset();
        // The call instruction each frame but the innermost returns to.
        let mut returns_to: Vec<Inst> = Vec::new();
        let mut fuel = options.fuel;
        let mut pc = match self.enter(entry, args.to_vec(), options) {
            Ok(pc) => pc,
            Err(outcome) => return outcome,
        };
        loop {
            let func = self.state.current_frame().function();
            if fuel == 0 {
                return Outcome::OutOfFuel;
            }
            fuel -= 1;
            let flow = match step(&mut self.state, DfgInstructionContext::new(pc, &func.dfg)) {
                Ok(flow) => flow,
                Err(e) => return Outcome::Unsupported(error_chain(&e)),
            };
            let next = |inst: Inst, func: &Function| {
                func.layout
                    .next_inst(inst)
                    .ok_or_else(|| Outcome::Unsupported("fell off the end of a block".into()))
            };
            let result: Result<Inst, Outcome> = match flow {
                ControlFlow::Assign(values) => {
                    self.state
                        .current_frame_mut()
                        .set_all(func.dfg.inst_results(pc), values.to_vec());
                    next(pc, func)
                }
                ControlFlow::Continue => next(pc, func),
                ControlFlow::ContinueAt(block, values) => {
                    self.state
                        .current_frame_mut()
                        .set_all(func.dfg.block_params(block), values.to_vec());
                    func.layout
                        .first_inst(block)
                        .ok_or_else(|| Outcome::Unsupported("empty block".into()))
                }
                ControlFlow::Call(callee, values) => match self.stub(callee) {
                    Some((name, StubKind::Import)) => {
                        match import_call(name, callee, values.to_vec(), imports) {
                            Ok(rets) => {
                                self.state
                                    .current_frame_mut()
                                    .set_all(func.dfg.inst_results(pc), rets);
                                next(pc, func)
                            }
                            Err(o) => Err(o),
                        }
                    }
                    Some((name, StubKind::Absent)) => Err(Outcome::Dangling(name.clone())),
                    None => {
                        returns_to.push(pc);
                        if returns_to.len() >= options.max_depth {
                            Err(Outcome::TooDeep)
                        } else {
                            self.enter(callee, values.to_vec(), options)
                        }
                    }
                },
                ControlFlow::ReturnCall(callee, values) => match self.stub(callee) {
                    Some((name, StubKind::Import)) => {
                        match import_call(name, callee, values.to_vec(), imports) {
                            Ok(rets) => self.leave(rets, &mut returns_to),
                            Err(o) => Err(o),
                        }
                    }
                    Some((name, StubKind::Absent)) => Err(Outcome::Dangling(name.clone())),
                    None => {
                        self.state.pop_frame();
                        self.enter(callee, values.to_vec(), options)
                    }
                },
                ControlFlow::Return(values) => self.leave(values.to_vec(), &mut returns_to),
                ControlFlow::Trap(trap) => Err(Outcome::Trapped(trap.into())),
            };
            match result {
                Ok(inst) => pc = inst,
                Err(outcome) => return outcome,
            }
        }
    }

    fn stub(&self, func: &Function) -> Option<(&'a FuncName, &'a StubKind)> {
        self.stubs.get(&(func as *const Function)).copied()
    }

    /// Pushes a frame for `func` with its parameters set; the first instruction.
    fn enter(
        &mut self,
        func: &'a Function,
        args: Vec<DataValue>,
        options: &VerifyOptions,
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
        let frame: u64 = func
            .sized_stack_slots
            .values()
            .map(|s| u64::from(s.size))
            .sum();
        let limit = options.max_stack_bytes as u64;
        if frame > limit {
            let why = format!("a stack frame of {frame} bytes (the limit is {limit})");
            return Err(Outcome::Unsupported(why));
        }
        if self.state.inner.stack.len() as u64 + frame > limit {
            return Err(Outcome::TooDeep);
        }
        self.state.push_frame(func);
        self.state.current_frame_mut().set_all(params, args);
        func.layout
            .first_inst(entry)
            .ok_or_else(|| Outcome::Unsupported("empty entry block".into()))
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
            return Err(Outcome::Returned(values));
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

/// The results of a call to an import: a hash of its name and arguments, one value per return.
fn import_call(
    name: &FuncName,
    stub: &Function,
    args: Vec<DataValue>,
    imports: &mut Vec<ImportCall>,
) -> Result<Vec<DataValue>, Outcome> {
    let mut h = fnv(name.to_string().as_bytes());
    for a in &args {
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
    imports.push(ImportCall {
        name: name.clone(),
        args,
    });
    stub.signature
        .returns
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let bits = mix(h ^ (i as u64 + 1));
            value_of_bits(r.value_type, bits, bits.rotate_left(17))
                .ok_or_else(|| Outcome::Unsupported(format!("an import returns {}", r.value_type)))
        })
        .collect()
}

/// A value of type `ty` made of `lo` (and `hi` for 128 bits).
fn value_of_bits(ty: Type, lo: u64, hi: u64) -> Option<DataValue> {
    Some(match ty {
        types::I8 => DataValue::I8(lo as i8),
        types::I16 => DataValue::I16(lo as i16),
        types::I32 => DataValue::I32(lo as i32),
        types::I64 => DataValue::I64(lo as i64),
        types::I128 => DataValue::I128(((u128::from(hi) << 64) | u128::from(lo)) as i128),
        types::F32 => DataValue::F32(Ieee32::with_bits(lo as u32)),
        types::F64 => DataValue::F64(Ieee64::with_bits(lo)),
        _ => return None,
    })
}

/// Arguments of run number `run`: the first tuples are edge values for every parameter (0, 1,
/// -1, MIN, MAX, NaN/2), then each parameter is an edge value, a small number, or random bits;
/// only small non-negative numbers when `small`.
fn arguments(types: &[Type], run: usize, small: bool, rng: &mut Rng) -> Vec<DataValue> {
    const UNIFORM: usize = 6;
    types
        .iter()
        .map(|&ty| {
            let edges = edge_values(ty);
            if run < UNIFORM && !small {
                return edges[run].clone();
            }
            let pick = if small { 4 } else { rng.next() % 10 };
            match pick {
                0..=2 => edges[(rng.next() % edges.len() as u64) as usize].clone(),
                3..=5 => {
                    let small = if small {
                        (rng.next() % 17) as i64
                    } else {
                        (rng.next() % 33) as i64 - 16
                    };
                    if ty.is_float() {
                        float_of(ty, small as f64)
                    } else {
                        value_of_bits(ty, small as u64, if small < 0 { u64::MAX } else { 0 })
                            .expect("a scalar type")
                    }
                }
                _ => {
                    let (lo, hi) = (rng.next(), rng.next());
                    value_of_bits(ty, lo, hi).expect("a scalar type")
                }
            }
        })
        .collect()
}

fn float_of(ty: Type, x: f64) -> DataValue {
    if ty == types::F32 {
        DataValue::F32(Ieee32::with_float(x as f32))
    } else {
        DataValue::F64(Ieee64::with_float(x))
    }
}

/// 0, 1, -1, MIN, MAX, then NaN (floats) or 2, then more for floats.
fn edge_values(ty: Type) -> Vec<DataValue> {
    if ty.is_float() {
        let mut v: Vec<DataValue> = [0.0, 1.0, -1.0, f64::MIN, f64::MAX, f64::NAN]
            .iter()
            .map(|&x| float_of(ty, x))
            .collect();
        if ty == types::F32 {
            v[3] = DataValue::F32(Ieee32::with_float(f32::MIN));
            v[4] = DataValue::F32(Ieee32::with_float(f32::MAX));
        }
        v.extend(
            [-0.0, f64::INFINITY, f64::NEG_INFINITY, 0.5]
                .iter()
                .map(|&x| float_of(ty, x)),
        );
        v
    } else {
        let bits = ty.bits();
        let min: i128 = -(1i128 << (bits - 1));
        let max: i128 = (1i128 << (bits - 1)) - 1;
        [0, 1, -1, min, max, 2]
            .iter()
            .map(|&x| {
                let x = x as u128;
                value_of_bits(ty, x as u64, (x >> 64) as u64).expect("an integer type")
            })
            .collect()
    }
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
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

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

thread_local! {
    /// Set while this thread runs the interpreter: its panics are caught and reported as
    /// unsupported runs, and should not also be printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent on threads running the interpreter and passes
/// every other panic to the hook that was there before.
fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let was = QUIET.with(|q| q.replace(true));
    let result = f();
    QUIET.with(|q| q.set(was));
    result
}
