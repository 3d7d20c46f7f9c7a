//! The IR merge: finds the classes of equal functions (LLVM's `MergeFunctions`, with its
//! `FnTree` and `Deferred` worklist), decides what becomes of each member (`policy`, `plan`) and
//! rewrites the module (`apply`).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | this essay, [`Mode`], [`find_classes`], [`merge_module`] |
//! | `resolve.rs` | how names are compared: by class or by identity |
//! | `policy.rs` | the rules: which member keeps the body, what the others become (shared with `fold`) |
//! | `plan.rs` | the decisions for a whole module ([`MergePlan`]), private copies named |
//! | `apply.rs` | the rewrite: calls redirected, thunks written, aliases and removals |
//! | `thunk.rs` | writing and recognizing thunks |
//! | `callsite.rs` | calls that pass extra arguments (for similar merging) |
//! | `report.rs` | [`MergeReport`]: what was merged, by name, with the redirect map |
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
//!    What every function refers to is found once ([`crate::refs`]) and read by every step.
//! 2. `fn_tree` (in `crate::partition`, shared with machine-code folding): an ordered set keyed by (hash, fingerprint tokens), class references
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
//! each class is chosen by a rule on linkage and name (`policy::kept_order`), not by position.
//!
//! Differences from LLVM:
//! - Recursive and mutually recursive equal functions merge.
//! - Callers need no rewriting to become equal: a class reference compares the callee's class, so
//!   the callers of merged functions are equal from the start, and the rewriting (`apply`)
//!   happens once, at the end.
//! - The result does not depend on the order of functions in the input.

mod apply;
pub(crate) mod callsite;
pub mod frame;
pub(crate) mod plan;
pub(crate) mod policy;
mod report;
mod resolve;
pub mod thunk;

use crate::compare::{self, Fingerprint, FingerprintWriter};
use crate::module::{ClifModule, FunctionId};
use crate::parallel;
use crate::partition::{self, Classes};
use crate::refs::ModuleRefs;
use crate::similar::SimilarOptions;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

pub use apply::apply;
pub use plan::{ClassPlan, Kept, MergePlan};
pub use policy::Action;
pub use report::{MergeReport, MergedClass, Replacement};
use resolve::DeclaredResolver;
pub use resolve::ModuleResolver;

/// What the addresses of merged functions must preserve. With the `cli` feature, also a
/// [`clap::ValueEnum`] (the command line's `--mode`), each variant's first line its help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Mode {
    /// Every symbol keeps a distinct address: a merged function that others may reach or whose
    /// address is taken becomes a thunk; a local one nobody takes the address of is removed.
    #[default]
    Safe,
    /// Addresses of merged functions are not significant: they become aliases.
    Aliases,
    /// Every merged function keeps its symbol as a thunk; nothing of the input is deleted.
    Thunks,
}

impl Mode {
    /// The word the command line uses.
    pub fn keyword(self) -> &'static str {
        match self {
            Mode::Safe => "safe",
            Mode::Aliases => "aliases",
            Mode::Thunks => "thunks",
        }
    }

    /// The mode a word names.
    pub fn from_keyword(word: &str) -> Option<Mode> {
        Some(match word {
            "safe" => Mode::Safe,
            "aliases" => Mode::Aliases,
            "thunks" => Mode::Thunks,
            _ => return None,
        })
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
    /// Similar merging, when asked for.
    pub similar: Duration,
}

impl PassTimes {
    /// The whole pass.
    pub fn total(&self) -> Duration {
        self.hashing + self.comparing + self.merging + self.similar
    }
}

/// Finds the classes of equal functions (steps 1 to 3 of the module docs).
pub fn find_classes(module: &ClifModule, mode: Mode, times: &mut PassTimes) -> Classes {
    analyse(module, mode, times).0
}

/// The classes of equal functions of `module`, and the module's references.
fn analyse(module: &ClifModule, mode: Mode, times: &mut PassTimes) -> (Classes, ModuleRefs) {
    let (classes, refs, _) = analyse_with_shapes(module, mode, times);
    (classes, refs)
}

/// [`analyse`], and the shape hash of every function with a body.
fn analyse_with_shapes(
    module: &ClifModule,
    mode: Mode,
    times: &mut PassTimes,
) -> (Classes, ModuleRefs, SecondaryMap<FunctionId, Option<u64>>) {
    let start = Instant::now();
    let resolver = ModuleResolver::new(module, mode);
    let ids: Vec<FunctionId> = (0..module.id_count())
        .map(cranelift_entity::EntityRef::new)
        .collect();
    // A function whose shape hash no other function has is equal to none: it needs no
    // fingerprint, only a token of its own that keeps it alone in its class. A function that a
    // merge took away is alone too. Shapes are hashed in the pass that finds the references,
    // while each function is in the cache.
    let (refs, shapes) = ModuleRefs::of_with(module, FingerprintWriter::new, |writer, func| {
        writer.shape_hash(func)
    });
    let mut shape_count: FxHashMap<u64, u32> = FxHashMap::default();
    for &shape in shapes.values().flatten() {
        *shape_count.entry(shape).or_default() += 1;
    }
    // Each fingerprint is hashed as soon as it is written, while its tokens are in the cache.
    let (fingerprints, hashes): (Vec<Fingerprint>, Vec<u64>) =
        parallel::map(&ids, FingerprintWriter::new, |writer, i, &f| {
            let fingerprint = match shapes[f].map(|s| shape_count[&s]) {
                Some(2..) => {
                    let resolver = DeclaredResolver {
                        module: &resolver,
                        callees: &refs.of_function(f).callees,
                    };
                    writer.write(&module.function(f).func, &resolver)
                }
                _ => Fingerprint::unique(i as u32),
            };
            let hash = compare::hash(&fingerprint);
            (fingerprint, hash)
        })
        .into_iter()
        .unzip();
    times.hashing += start.elapsed();

    let start = Instant::now();
    let fingerprints = PrimaryMap::from(fingerprints);
    let hashes = PrimaryMap::from(hashes);
    let classes = partition::refine(&fingerprints, &hashes);
    times.comparing += start.elapsed();
    (classes, refs, shapes)
}

/// Merges every class of equal functions in `module` and says what was done.
pub fn merge_module(module: &mut ClifModule, mode: Mode) -> (MergeReport, PassTimes) {
    merge_module_with(module, mode, None)
}

/// [`merge_module`], then, with `similar`, similar merging of what remains (see
/// [`crate::similar`]).
///
/// With `similar`, the two merges take turns until neither finds anything: similar merging can
/// make functions equal (a shared body equal to a function that was there; the thunks of a
/// removed kept function, which now pass the same values to the same body), and each merge can
/// leave the other something (one group's merge changes the calls the cost model counted for
/// another). So the module that comes out is one that both merges leave alone: a second run on
/// it merges nothing.
pub fn merge_module_with(
    module: &mut ClifModule,
    mode: Mode,
    similar: Option<&SimilarOptions>,
) -> (MergeReport, PassTimes) {
    let mut times = PassTimes::default();
    let input_ids = module.id_count();
    let (mut report, mut prior) = merge_exactly(module, mode, input_ids, &mut times);
    let Some(options) = similar else {
        return (report, times);
    };
    report.similar = Some(Vec::new());
    loop {
        let start = Instant::now();
        let groups = crate::similar::merge_similar_after(module, mode, options, prior, input_ids);
        let merged_something = !groups.is_empty();
        report.add_similar_round(groups);
        times.similar += start.elapsed();
        if !merged_something {
            break;
        }
        let (exact, next) = merge_exactly(module, mode, input_ids, &mut times);
        report.add_exact_round(exact, module, input_ids);
        prior = next;
    }
    report.count_merged(module, input_ids);
    (report, times)
}

/// One exact merge of `module`, in a run that made the functions with ids from `input_ids` on:
/// what it did, and what the similar merge after it may reuse.
fn merge_exactly(
    module: &mut ClifModule,
    mode: Mode,
    input_ids: usize,
    times: &mut PassTimes,
) -> (MergeReport, crate::similar::Prior) {
    let (classes, refs, shapes) = analyse_with_shapes(module, mode, times);
    let start = Instant::now();
    let plan = MergePlan::decide_in_run(module, &classes, &refs, mode, input_ids);
    let report = MergeReport::of_plan(module, &plan);
    apply(module, &refs, &plan);
    times.merging += start.elapsed();
    let unchanged = plan.classes.is_empty();
    let prior = crate::similar::Prior {
        shapes,
        refs: unchanged.then_some(refs),
    };
    (report, prior)
}
