//! The IR merge: finds the classes of equal functions (LLVM's `MergeFunctions`, with its
//! `FnTree` and `Deferred` worklist), decides what becomes of each member (`policy`, `plan`) and
//! rewrites the module (`apply`).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | this essay, [`find_classes`], [`PassTimes`] |
//! | `resolve.rs` | how names are compared: by class or by identity |
//! | `plan.rs` | the decisions for a whole module ([`MergePlan`]), private copies named |
//! | `apply.rs` | the rewrite: calls redirected, thunks written, aliases and removals |
//!
//! It is one of the ways of merging, a sibling of similar merging (`crate::similar`): both stand
//! on the rules of `crate::policy` ([`Mode`], [`Action`], which member keeps the body) and the
//! IR edits of `crate::edit` (thunks, call sites), and neither uses the other. The pass on top
//! (`crate::pass`: [`merge_module`], [`merge_module_with`]) runs them in turn and writes the one
//! [`MergeReport`]; they are re-exported here, where they were before.
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
//! each class is chosen by a rule on linkage and name (`crate::policy::kept_order`), not by position.
//!
//! Differences from LLVM:
//! - Recursive and mutually recursive equal functions merge.
//! - Callers need no rewriting to become equal: a class reference compares the callee's class, so
//!   the callers of merged functions are equal from the start, and the rewriting (`apply`)
//!   happens once, at the end.
//! - The result does not depend on the order of functions in the input.

mod apply;
pub(crate) mod plan;
mod resolve;

use crate::compare::{self, Fingerprint, FingerprintWriter};
use crate::module::{ClifModule, FunctionId};
use crate::parallel;
use crate::partition::{self, Classes};
use crate::refs::ModuleRefs;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

pub use apply::apply;
pub use plan::{ClassPlan, Kept, MergePlan};
use resolve::DeclaredResolver;
pub use resolve::ModuleResolver;

// Public paths from before the layering (issue 22): the rules and edits this merge shares with
// similar merging, and the pass's entry points and report.
pub use crate::edit::thunk;
pub use crate::pass::{MergeReport, MergedClass, Replacement, merge_module, merge_module_with};
pub use crate::policy::frame;
pub use crate::policy::{Action, Mode};

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

/// [`analyse`], and the shape hash of every function with a body (what similar merging after
/// this merge reuses).
pub(crate) fn analyse_with_shapes(
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
    shape_count.reserve(module.len());
    for &shape in shapes.values().flatten() {
        *shape_count.entry(shape).or_default() += 1;
    }
    // Each fingerprint is hashed as soon as it is written, while its tokens are in the cache.
    let (fingerprints, hashes): (Vec<Fingerprint>, Vec<u64>) =
        parallel::map(&ids, FingerprintWriter::new, |writer, _, &f| {
            let fingerprint = match shapes[f].map(|s| shape_count[&s]) {
                Some(2..) => {
                    let resolver = DeclaredResolver {
                        module: &resolver,
                        callees: &refs.of_function(f).callees,
                    };
                    writer.write(&module.function(f).func, &resolver)
                }
                _ => Fingerprint::unique(),
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
