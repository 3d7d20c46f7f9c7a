//! How a run ends, the calls it made to functions that are not run and the stores it made, and
//! a difference between the two sides, with the text they are reported in.

use super::memory::{Fill, Pin};
use crate::module::FuncName;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Signature, TrapCode, Type};
use cranelift_interpreter::step::CraneliftTrap;
use std::fmt;

/// A trap, as the interpreter reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trap {
    /// A trap instruction, a trapping memory access or arithmetic: its trap code.
    Code(TrapCode),
    /// An indirect call whose signature does not match.
    BadSignature,
    /// Code marked unreachable was reached.
    UnreachableCodeReached,
    /// A misaligned heap access.
    HeapMisaligned,
    /// A `debugtrap`.
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

/// A value as the other side must see it: a stack address is its slot's place, not a number
/// (the frames of the two sides need not be at the same place), and never equal to a number.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// A value that is no address in a live frame's stack slots.
    Value(DataValue),
    /// An address in a live frame's stack slot.
    Stack(StackAddress),
}

/// Where a stack address points, as both sides of a run agree on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackAddress {
    /// The address's type (`i64`, or `i32` for 32-bit addresses).
    pub ty: Type,
    /// The frame's place among the live frames that have stack slots, from the run's first
    /// frame: a merged side's forwarders (thunks) have none, and a merged body has the slots of
    /// the body it stands for. (Mod 256, a pointer into a frame 256 places up was one into the
    /// innermost: hostile14.)
    pub frame: u32,
    /// The slot's number in its function.
    pub slot: u32,
    /// The offset in the slot.
    pub offset: u32,
}

impl StackAddress {
    /// The number calls not run hash for it (so that what they return does not depend on where
    /// the frames are): this tag in bits 56 to 63, then the frame mod 256 (48–55), the slot
    /// (32–47) and the offset. (A call is compared by its arguments as observed, whole; this
    /// only seeds what it returns.)
    pub(super) fn hashed(&self) -> u64 {
        const TAG: u64 = 0x53 << 56;
        let frame = u64::from(self.frame as u8);
        TAG | frame << 48 | u64::from(self.slot) << 32 | u64::from(self.offset)
    }
}

impl Observed {
    /// Whether the two are the same: values of one type, bit for bit (floats too, NaN payloads
    /// included), or the same place in the stack.
    pub fn same_as(&self, other: &Observed) -> bool {
        match (self, other) {
            (Observed::Value(a), Observed::Value(b)) => same_value(a, b),
            (Observed::Stack(a), Observed::Stack(b)) => a == b,
            _ => false,
        }
    }

    /// The value, when it is no stack address.
    pub fn value(&self) -> Option<&DataValue> {
        match self {
            Observed::Value(v) => Some(v),
            Observed::Stack(_) => None,
        }
    }
}

impl fmt::Display for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Observed::Value(v) => write_value(f, v),
            Observed::Stack(a) => write!(
                f,
                "{} stack frame {} slot {} + {}",
                a.ty, a.frame, a.slot, a.offset
            ),
        }
    }
}

/// How one run ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It returned these values.
    Returned(Vec<Observed>),
    /// It trapped.
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

    /// Whether the interpreter could not run something on the way.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Outcome::Unsupported(_))
    }

    /// The same end: results equal bit for bit, or the same trap.
    pub(super) fn same_as(&self, other: &Outcome) -> bool {
        match (self, other) {
            (Outcome::Returned(a), Outcome::Returned(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y))
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
                write_observed(f, values)
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

fn write_observed(f: &mut fmt::Formatter<'_>, values: &[Observed]) -> fmt::Result {
    write!(f, "(")?;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{v}")?;
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

/// A function a call reached that is not run, but answered with a hash of its identity and
/// arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A name the module refers to but does not define.
    Import(FuncName),
    /// A libcall (or a known symbol), by name.
    LibCall(String),
    /// A `call_indirect` target that is no function of the module: the address called.
    Address(u64),
}

impl fmt::Display for Callee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Callee::Import(name) => write!(f, "{name}"),
            Callee::LibCall(name) => write!(f, "libcall {name}"),
            Callee::Address(a) => write!(f, "*0x{a:x}"),
        }
    }
}

/// A call to a function that is not run, as recorded.
#[derive(Clone, Debug)]
pub struct ImportCall {
    /// What was called.
    pub callee: Callee,
    /// The signature the call site declares: the callee sees its arguments, and the caller
    /// its results, as its extensions, purposes and convention place them, so two calls of one
    /// callee with other signatures are other calls.
    pub signature: Signature,
    /// Its arguments.
    pub args: Vec<Observed>,
    /// How many stores the run made before it: calls and stores are one sequence.
    pub stores_before: usize,
}

/// A call of a function of the module that runs (a body, not a forwarder), as recorded: see
/// `module_calls.rs` for which calls are recorded on each side.
#[derive(Clone, Debug)]
pub struct ModuleCall {
    /// The function called (in the module of its side).
    pub callee: FuncName,
    /// The function the merge made of the callee: its class's kept function, its similar
    /// group's shared body, else itself. Two sides call one function where these are equal.
    pub stands_for: FuncName,
    /// The callee's own arguments (a shared body's: its member's, without the group's).
    pub args: Vec<Observed>,
    /// Of each argument, the bits the callee may observe (see `demanded.rs`): the two sides are
    /// compared in the bits both say it may.
    pub demanded: Vec<u128>,
    /// Of each result, the bits the caller may observe (all of a tail call's).
    pub results_demanded: Vec<u128>,
    /// How many calls of functions not run the run made before it.
    pub imports_before: usize,
    /// How many stores the run made before it.
    pub stores_before: usize,
}

impl ModuleCall {
    fn same_as(&self, other: &ModuleCall) -> bool {
        self.imports_before == other.imports_before
            && self.stores_before == other.stores_before
            && self.same_arguments(other)
    }

    /// Whether both calls pass the same arguments, in the bits both say the callee may observe.
    pub(super) fn same_arguments(&self, other: &ModuleCall) -> bool {
        let demanded = self
            .demanded
            .iter()
            .zip(&other.demanded)
            .map(|(a, b)| a & b);
        self.args.len() == other.args.len()
            && (self.args.iter().zip(&other.args).zip(demanded))
                .all(|((a, b), bits)| same_in_bits(a, b, bits))
    }
}

impl fmt::Display for ModuleCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.callee)?;
        write_observed(f, &self.args)?;
        write!(
            f,
            " after {} calls not run and {} stores",
            self.imports_before, self.stores_before
        )
    }
}

/// A store to memory, as recorded: a stack address, as the address or as the value stored, is
/// its slot's place ([`Observed::Stack`]).
#[derive(Clone, Debug)]
pub struct Store {
    /// Where.
    pub address: Observed,
    /// What.
    pub value: Observed,
}

impl Store {
    fn same_as(&self, other: &Store) -> bool {
        self.address.same_as(&other.address) && self.value.same_as(&other.value)
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] = {}", self.address, self.value)
    }
}

/// One run: how it ended, the functions it called that are not run, and its stores.
#[derive(Clone, Debug)]
pub struct Run {
    /// How it ended.
    pub outcome: Outcome,
    /// The calls to functions not run (imports, libcalls, unknown addresses), in order.
    pub imports: Vec<ImportCall>,
    /// The calls of the module's functions that run, past the run's first body, in order.
    pub calls: Vec<ModuleCall>,
    /// The stores to memory, in order.
    pub stores: Vec<Store>,
}

impl Run {
    /// A run that did not start.
    pub(super) fn not_run(outcome: Outcome) -> Run {
        Run {
            outcome,
            imports: Vec::new(),
            calls: Vec::new(),
            stores: Vec::new(),
        }
    }

    /// Whether both runs ended the same way having called the same functions not run with the
    /// same arguments and stored the same values at the same addresses in the same order,
    /// whatever calls into the module they recorded (see `module_calls::difference_shows`).
    pub(super) fn same_effects(&self, other: &Run) -> bool {
        self.outcome.same_as(&other.outcome) && self.same_side_effects(other)
    }

    /// [`Run::same_effects`], where returned values are compared only in `bits` of each (what
    /// a caller looks at; all bits of a result past them).
    pub(super) fn same_effects_seen(&self, other: &Run, bits: &[u128]) -> bool {
        let bits = bits.iter().copied().chain(std::iter::repeat(u128::MAX));
        let outcome = match (&self.outcome, &other.outcome) {
            (Outcome::Returned(a), Outcome::Returned(b)) => {
                a.len() == b.len()
                    && (a.iter().zip(b).zip(bits)).all(|((x, y), m)| same_in_bits(x, y, m))
            }
            (a, b) => a.same_as(b),
        };
        outcome && self.same_side_effects(other)
    }

    /// Whether the two runs' effects part ways before the shorter sequence stops: a store or a
    /// call not run that is another at the same place (for runs that may not have ended: what
    /// either did up to there is what it did, on these arguments and this memory).
    pub(super) fn effects_part_ways(&self, other: &Run) -> bool {
        (self.stores.iter().zip(&other.stores)).any(|(a, b)| !a.same_as(b))
            || (self.imports.iter().zip(&other.imports)).any(|(x, y)| !same_import(x, y))
    }

    /// Whether the run stored anything or called a function not run.
    pub(super) fn has_effects(&self) -> bool {
        !self.stores.is_empty() || !self.imports.is_empty()
    }

    /// Whether `self`, a run that did not end, did more than `other` did in all (more stores
    /// or more calls not run) where `other` would never do more: it ended (a trap, a return),
    /// or it hit the limits of a merged side, larger than those `self` stopped in (a right
    /// merge does there all `self` did, forwarders included), or it was stopped in a cycle
    /// that stores nothing. `cycle_stored`: whether `other` was stopped in a cycle that
    /// stores; such a cycle may be found a pass sooner on one side than on the other, so its
    /// stores say nothing. An unsupported run stopped where the interpreter could not go on.
    pub(super) fn did_more_than_stopped(&self, other: &Run, cycle_stored: bool) -> bool {
        let for_good = match &other.outcome {
            Outcome::Unsupported(_) => false,
            Outcome::OutOfFuel | Outcome::TooDeep => !cycle_stored,
            _ => true,
        };
        for_good
            && (self.stores.len() > other.stores.len() || self.imports.len() > other.imports.len())
    }

    /// Whether both runs called the same functions not run and stored the same.
    fn same_side_effects(&self, other: &Run) -> bool {
        same_imports(&self.imports, &other.imports)
            && self.stores.len() == other.stores.len()
            && self
                .stores
                .iter()
                .zip(&other.stores)
                .all(|(a, b)| a.same_as(b))
    }
}

/// Whether `a` and `b` are the same in the integer bits `bits` (nothing to compare when none;
/// whole otherwise: stack places, floats, vectors).
fn same_in_bits(a: &Observed, b: &Observed, bits: u128) -> bool {
    if bits == 0 {
        return true;
    }
    match (a.value().and_then(int_bits), b.value().and_then(int_bits)) {
        (Some(x), Some(y)) => {
            a.value().map(DataValue::ty) == b.value().map(DataValue::ty) && (x ^ y) & bits == 0
        }
        _ => a.same_as(b),
    }
}

/// An integer's bits, zero-extended.
fn int_bits(v: &DataValue) -> Option<u128> {
    Some(match *v {
        DataValue::I8(x) => u128::from(x as u8),
        DataValue::I16(x) => u128::from(x as u16),
        DataValue::I32(x) => u128::from(x as u32),
        DataValue::I64(x) => u128::from(x as u64),
        DataValue::I128(x) => x as u128,
        _ => return None,
    })
}

fn same_value(a: &DataValue, b: &DataValue) -> bool {
    a.ty() == b.ty() && a.bitwise_eq(b)
}

/// The first call of the module's functions that differs between `a` and `b` (one side's may
/// be missing).
fn first_other_call(a: &[ModuleCall], b: &[ModuleCall]) -> Option<usize> {
    let first = a.iter().zip(b).position(|(x, y)| !x.same_as(y));
    first.or_else(|| (a.len() != b.len()).then_some(a.len().min(b.len())))
}

fn same_imports(a: &[ImportCall], b: &[ImportCall]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_import(x, y))
}

fn same_import(x: &ImportCall, y: &ImportCall) -> bool {
    x.callee == y.callee
        && x.stores_before == y.stores_before
        && x.signature == y.signature
        && x.args.len() == y.args.len()
        && x.args.iter().zip(&y.args).all(|(p, q)| p.same_as(q))
}

/// A function that does not behave the same before and after.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The function's name in the original module.
    pub function: FuncName,
    /// What ran in the merged module when it is not the same name (the kept function of a
    /// removed one).
    pub ran_as: Option<FuncName>,
    /// The arguments.
    pub args: Vec<DataValue>,
    /// What memory nothing stored to read as in both runs.
    pub memory: Fill,
    /// Words of memory nothing stored to that read as pinned in both runs (a guided run).
    pub pinned: Vec<Pin>,
    /// The run in the original module.
    pub original: Run,
    /// The run in the merged module.
    pub merged: Run,
}

impl Mismatch {
    /// A mismatch found without running: the merged module's `name` is wrong because `why`.
    pub(super) fn unrun(name: &FuncName, why: String) -> Mismatch {
        let not_run = |why: String| Run::not_run(Outcome::NotRunnable(why));
        Mismatch {
            function: name.clone(),
            ran_as: None,
            args: Vec::new(),
            memory: Fill::default(),
            pinned: Vec::new(),
            original: not_run("not run".into()),
            merged: not_run(why),
        }
    }
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
        if let Fill::Byte(_) = self.memory {
            write!(f, " (memory nothing stored to reads {})", self.memory)?;
        }
        for pin in &self.pinned {
            write!(f, " (memory reads {pin})")?;
        }
        write!(
            f,
            ": original {}, merged {}",
            self.original.outcome, self.merged.outcome
        )?;
        if !self.original.outcome.same_as(&self.merged.outcome) {
            return Ok(());
        }
        if !same_imports(&self.original.imports, &self.merged.imports) {
            return write!(
                f,
                "; calls differ: original {}, merged {}",
                describe_imports(&self.original.imports),
                describe_imports(&self.merged.imports)
            );
        }
        if let Some(i) = first_other_call(&self.original.calls, &self.merged.calls) {
            let shown = |c: Option<&ModuleCall>| c.map_or("none".to_string(), |c| c.to_string());
            return write!(
                f,
                "; calls into the module differ: {} and {} calls, call {i}: original {}, merged {}",
                self.original.calls.len(),
                self.merged.calls.len(),
                shown(self.original.calls.get(i)),
                shown(self.merged.calls.get(i))
            );
        }
        let (a, b) = (&self.original.stores, &self.merged.stores);
        let first = a.iter().zip(b).position(|(x, y)| !x.same_as(y));
        let shown = |s: Option<&Store>| s.map_or("none".to_string(), |s| s.to_string());
        let i = first.unwrap_or(a.len().min(b.len()));
        write!(
            f,
            "; stores differ: {} and {} stores, store {i}: original {}, merged {}",
            a.len(),
            b.len(),
            shown(a.get(i)),
            shown(b.get(i))
        )
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
                write!(f, "{}", c.callee)?;
                write_observed(f, &c.args)?;
                write!(f, " as {}", c.signature)?;
            }
            write!(f, "]")
        }
    }
    Calls(calls).to_string()
}
