//! The driver: finds the classes of equal functions (LLVM's `MergeFunctions`, with its
//! `FnTree` and `Deferred` worklist) and applies the merges (`actions`).
//!
//! # What "equal" means
//!
//! Two functions are equal when their fingerprints (see `compare`) are equal and every module
//! function they call is, in turn, equal to its counterpart. That definition refers to itself;
//! its *greatest* solution is the one we want, because it makes equal the self-recursive `fact0`
//! and `fact1` and the mutually recursive `ping`/`pong` and `ping2`/`pong2`: assuming them equal
//! is consistent (each body is equal given that the callees are), and running them cannot tell
//! them apart. LLVM gives these up: it merges one pair at a time and only once the callees are
//! already merged, which never happens inside a cycle.
//!
//! # How it is found (partition refinement, as lld's ICF does)
//!
//! 1. Fingerprint every function once. A call to a module function that may be redirected leaves
//!    a *class reference*; everything else is compared by identity (see [`ModuleResolver`]).
//! 2. `fn_tree`: an ordered set keyed by (hash, fingerprint tokens), class references
//!    ignored. Functions with the same key form the first classes; lookup is O(log N), and most
//!    comparisons end at the hash.
//! 3. `deferred`: a worklist of classes to split. A class splits by the classes of its members'
//!    class references (compared in order, as part of the total order). When a function moves to
//!    a new class, the classes of its callers go back on the worklist, as LLVM's `removeUsers`
//!    sends callers back to `Deferred`. Repeat until the worklist is empty.
//!
//! Classes only ever split, and a split happens only between functions that differ given the
//! current classes, so the result is the coarsest partition that is stable: the greatest
//! solution. It is unique, so it does not depend on the order of the input; the kept function of
//! each class is chosen by a rule on linkage and name (`actions::kept_order`), not by position.
//!
//! Differences from LLVM:
//! - Recursive and mutually recursive equal functions merge.
//! - Callers need no rewriting to become equal: a class reference compares the callee's class, so
//!   the callers of merged functions are equal from the start, and the rewriting (`actions`)
//!   happens once, at the end.
//! - The result does not depend on the order of functions in the input.

pub mod actions;

use crate::compare::{self, Fingerprint, FingerprintWriter, NameKey, RefKind, Resolver};
use crate::module::{self, ClifModule, FunctionId, Symbol};
use crate::parallel;
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{ExternalName, FuncRef, Function};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use actions::{Action, MergeReport, MergedClass, Replacement};

/// What the addresses of merged functions must preserve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Every symbol keeps a distinct address: a merged function that others may reach or whose
    /// address is taken becomes a thunk; a local one nobody takes the address of is removed.
    #[default]
    Safe,
    /// Addresses of merged functions are not significant: they become aliases.
    Aliases,
    /// Every merged function keeps its symbol as a thunk; nothing is deleted.
    Thunks,
}

impl Mode {
    pub fn keyword(self) -> &'static str {
        match self {
            Mode::Safe => "safe",
            Mode::Aliases => "aliases",
            Mode::Thunks => "thunks",
        }
    }

    pub fn from_keyword(word: &str) -> Option<Mode> {
        Some(match word {
            "safe" => Mode::Safe,
            "aliases" => Mode::Aliases,
            "thunks" => Mode::Thunks,
            _ => return None,
        })
    }
}

/// How the driver compares names inside module functions.
///
/// - A call to a module function that is not preemptible compares the callee's *class*: the
///   call will be redirected to the class's kept function, which does the same thing.
/// - A preemptible callee is compared by identity: another definition may replace it at link
///   time, so a call to it is not a call to its class.
/// - An address (`func_addr`) is identity: after merging, a thunk keeps its own address. Only in
///   [`Mode::Aliases`], where merged functions share one address, does it compare the class.
/// - Imports, libcalls and symbols are identity.
pub struct ModuleResolver<'m> {
    module: &'m ClifModule,
    mode: Mode,
}

impl<'m> ModuleResolver<'m> {
    pub fn new(module: &'m ClifModule, mode: Mode) -> Self {
        ModuleResolver { module, mode }
    }
}

impl ModuleResolver<'_> {
    /// How a reference to `symbol` (None: not a module symbol) is compared.
    fn key_for(&self, symbol: Option<Symbol>, kind: RefKind) -> NameKey {
        let Some(symbol) = symbol else {
            return NameKey::Identity;
        };
        let preemptible = match symbol {
            Symbol::Function(id) => self.module.function(id).linkage.is_preemptible(),
            Symbol::Alias(i) => self.module.aliases()[i].linkage.is_preemptible(),
        };
        if preemptible {
            return NameKey::Identity;
        }
        let by_class = match kind {
            RefKind::Call => true,
            RefKind::Address => self.mode == Mode::Aliases,
        };
        match (by_class, self.module.resolve_symbol(symbol)) {
            (true, Some(id)) => NameKey::Class(id),
            _ => NameKey::Identity,
        }
    }
}

impl Resolver for ModuleResolver<'_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        self.key_for(self.module.lookup_external(name, func), kind)
    }
}

/// A [`ModuleResolver`] for one function whose declarations were looked up already.
struct DeclaredResolver<'r, 'm> {
    module: &'r ModuleResolver<'m>,
    /// What each `FuncRef` of the function stands for.
    callees: &'r [Option<Symbol>],
}

impl Resolver for DeclaredResolver<'_, '_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        self.module.resolve(func, name, kind)
    }

    fn resolve_func_ref(&self, _: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        self.module.key_for(self.callees[func_ref.index()], kind)
    }
}

/// What the external functions declared in each module function stand for, and whether it uses
/// `func_addr`: found once per pass, used to compare and then to redirect calls.
pub(crate) struct Callees {
    symbols: Vec<Box<[Option<Symbol>]>>,
    takes_address: Vec<bool>,
}

impl Callees {
    /// `f`'s declarations, indexed by `FuncRef`.
    pub(crate) fn of(&self, f: FunctionId) -> &[Option<Symbol>] {
        &self.symbols[f.index()]
    }

    /// Whether `f` uses `func_addr`.
    pub(crate) fn takes_address(&self, f: FunctionId) -> bool {
        self.takes_address[f.index()]
    }
}

/// Time spent in each phase of the pass.
#[derive(Clone, Debug, Default)]
pub struct PassTimes {
    /// Writing fingerprints and hashes.
    pub hashing: Duration,
    /// Building the tree and refining classes.
    pub comparing: Duration,
    /// Deciding and applying the merges.
    pub merging: Duration,
}

impl PassTimes {
    pub fn total(&self) -> Duration {
        self.hashing + self.comparing + self.merging
    }
}

/// The classes of equal functions: each a list of two or more functions, in module order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classes {
    pub classes: Vec<Vec<FunctionId>>,
}

/// Finds the classes of equal functions (steps 1 to 3 of the module docs).
pub fn find_classes(module: &ClifModule, mode: Mode, times: &mut PassTimes) -> Classes {
    analyse(module, mode, times).0
}

/// The classes, and the callee declarations looked up on the way.
fn analyse(module: &ClifModule, mode: Mode, times: &mut PassTimes) -> (Classes, Callees) {
    let start = Instant::now();
    let resolver = ModuleResolver::new(module, mode);
    let functions = module.functions();
    // A function whose shape hash no other function has is equal to none: it needs no
    // fingerprint, only a token of its own that keeps it alone in its class.
    let mut shapes = Vec::with_capacity(functions.len());
    let mut callees = Callees {
        symbols: Vec::with_capacity(functions.len()),
        takes_address: Vec::with_capacity(functions.len()),
    };
    let walked = parallel::map(functions, FingerprintWriter::new, |writer, _, mf| {
        let shape = writer.shape_hash(&mf.func);
        let symbols = module.callee_symbols(&mf.func);
        (shape, symbols, module::uses_func_addr(&mf.func))
    });
    for (shape, symbols, takes_address) in walked {
        shapes.push(shape);
        callees.symbols.push(symbols);
        callees.takes_address.push(takes_address);
    }
    let mut shape_count: FxHashMap<u64, u32> = FxHashMap::default();
    for &shape in &shapes {
        *shape_count.entry(shape).or_default() += 1;
    }
    // Each fingerprint is hashed as soon as it is written, while its tokens are in the cache.
    let (fingerprints, hashes): (Vec<Fingerprint>, Vec<u64>) =
        parallel::map(functions, FingerprintWriter::new, |writer, i, mf| {
            let fingerprint = match shape_count[&shapes[i]] {
                1 => Fingerprint::unique(i as u32),
                _ => {
                    let resolver = DeclaredResolver {
                        module: &resolver,
                        callees: callees.of(FunctionId(i as u32)),
                    };
                    writer.write(&mf.func, &resolver)
                }
            };
            let hash = compare::hash(&fingerprint);
            (fingerprint, hash)
        })
        .into_iter()
        .unzip();
    times.hashing += start.elapsed();

    let start = Instant::now();
    let classes = refine_classes(&fingerprints, &hashes);
    times.comparing += start.elapsed();
    (classes, callees)
}

/// The classes of equal fingerprints, where class references are equal when they refer to
/// functions of one class (steps 2 and 3 of the module docs). `fingerprints[i]` is function
/// `FunctionId(i)`; `hashes[i]` its hash.
pub fn refine_classes(fingerprints: &[Fingerprint], hashes: &[u64]) -> Classes {
    let mut refiner = Refiner::new(fingerprints, hashes);
    refiner.refine();
    refiner.classes()
}

/// A key in `fn_tree`: the order of fingerprints with class references ignored.
struct FnKey<'a> {
    hash: u64,
    fingerprint: &'a Fingerprint,
}

impl Ord for FnKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.hash.cmp(&other.hash).then_with(|| {
            let (a, b) = (&self.fingerprint.tokens, &other.fingerprint.tokens);
            // Keys with equal hashes are almost always equal: an equality test (a `memcmp`)
            // settles that several times faster than the element-by-element order.
            if a == b {
                std::cmp::Ordering::Equal
            } else {
                a.cmp(b)
            }
        })
    }
}

impl PartialOrd for FnKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for FnKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for FnKey<'_> {}

/// The partition refinement of step 3.
struct Refiner<'a> {
    fingerprints: &'a [Fingerprint],
    hashes: &'a [u64],
    /// The class of each function.
    class_of: Vec<u32>,
    /// The members of each class.
    members: Vec<Vec<FunctionId>>,
    /// For each function, the functions holding a class reference to it.
    referrers: Vec<Vec<FunctionId>>,
    /// Classes to split again (LLVM's `Deferred`), and whether each is queued.
    deferred: Vec<u32>,
    queued: Vec<bool>,
}

impl<'a> Refiner<'a> {
    fn new(fingerprints: &'a [Fingerprint], hashes: &'a [u64]) -> Self {
        let n = fingerprints.len();
        let mut referrers = vec![Vec::new(); n];
        for (i, fp) in fingerprints.iter().enumerate() {
            for &callee in &fp.class_refs {
                let list: &mut Vec<FunctionId> = &mut referrers[callee.index()];
                if list.last() != Some(&FunctionId(i as u32)) {
                    list.push(FunctionId(i as u32));
                }
            }
        }
        Refiner {
            fingerprints,
            hashes,
            class_of: vec![0; n],
            members: Vec::new(),
            referrers,
            deferred: Vec::new(),
            queued: Vec::new(),
        }
    }

    /// Phase 1 of 2: the first classes, from `fn_tree`.
    fn initial_classes(&mut self) {
        let mut fn_tree: BTreeMap<FnKey<'a>, u32> = BTreeMap::new();
        for (i, fp) in self.fingerprints.iter().enumerate() {
            if fp.is_unique() {
                // Alone by construction: no need to look it up.
                self.class_of[i] = self.members.len() as u32;
                self.members.push(vec![FunctionId(i as u32)]);
                continue;
            }
            let key = FnKey {
                hash: self.hashes[i],
                fingerprint: fp,
            };
            let next = self.members.len() as u32;
            let class = *fn_tree.entry(key).or_insert(next);
            if class == next {
                self.members.push(Vec::new());
            }
            self.members[class as usize].push(FunctionId(i as u32));
            self.class_of[i] = class;
        }
        self.queued = vec![false; self.members.len()];
        for class in 0..self.members.len() as u32 {
            let members = &self.members[class as usize];
            let has_refs = members
                .iter()
                .any(|f| !self.fingerprints[f.index()].class_refs.is_empty());
            if members.len() > 1 && has_refs {
                self.defer(class);
            }
        }
    }

    fn defer(&mut self, class: u32) {
        if !self.queued[class as usize] {
            self.queued[class as usize] = true;
            self.deferred.push(class);
        }
    }

    /// Phase 2 of 2: split classes until every class is stable.
    fn refine(&mut self) {
        self.initial_classes();
        while let Some(class) = self.deferred.pop() {
            self.queued[class as usize] = false;
            self.split(class);
        }
    }

    /// Splits `class` by the classes its members refer to; queues the referrers of every
    /// function that moved.
    fn split(&mut self, class: u32) {
        let mut members = std::mem::take(&mut self.members[class as usize]);
        if members.len() < 2 {
            self.members[class as usize] = members;
            return;
        }
        let class_of = &self.class_of;
        let refs_of = |f: FunctionId| {
            self.fingerprints[f.index()]
                .class_refs
                .iter()
                .map(|r| class_of[r.index()])
        };
        members.sort_by(|&a, &b| refs_of(a).cmp(refs_of(b)).then(a.cmp(&b)));
        let mut runs: Vec<Vec<FunctionId>> = Vec::new();
        for &f in &members {
            match runs.last_mut() {
                Some(run) if refs_of(run[0]).eq(refs_of(f)) => run.push(f),
                _ => runs.push(vec![f]),
            }
        }
        let mut runs = runs.into_iter();
        let mut first = runs.next().unwrap_or_default();
        first.sort();
        self.members[class as usize] = first;
        let mut moved = Vec::new();
        for mut run in runs {
            run.sort();
            let new_class = self.members.len() as u32;
            self.queued.push(false);
            for &f in &run {
                self.class_of[f.index()] = new_class;
                moved.push(f);
            }
            self.members.push(run);
        }
        for f in moved {
            for i in 0..self.referrers[f.index()].len() {
                let referrer = self.referrers[f.index()][i];
                let c = self.class_of[referrer.index()];
                if self.members[c as usize].len() > 1 {
                    self.defer(c);
                }
            }
        }
    }

    /// The classes of two or more, each in module order, ordered by their first member.
    fn classes(&self) -> Classes {
        let mut classes: Vec<Vec<FunctionId>> = self
            .members
            .iter()
            .filter(|m| m.len() > 1)
            .cloned()
            .collect();
        for c in &mut classes {
            c.sort();
        }
        classes.sort();
        Classes { classes }
    }
}

/// Merges every class of equal functions in `module` and says what was done.
pub fn merge_module(module: &mut ClifModule, mode: Mode) -> (MergeReport, PassTimes) {
    let mut times = PassTimes::default();
    let (classes, callees) = analyse(module, mode, &mut times);
    let start = Instant::now();
    let report = actions::apply(module, &classes, &callees, mode);
    times.merging += start.elapsed();
    (report, times)
}
