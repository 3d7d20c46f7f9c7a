//! The pass as every entry point runs it: one [`MergeOptions`], then global merging's round 2
//! (with a summary), the exact merge and similar merging (with similar options), on a pool of
//! the threads asked for.

use crate::global::Summary;
use crate::merge::{Action, MergeReport, Mode, PassTimes, merge_module_with};
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::similar::SimilarOptions;
use cranelift_codegen::ir::Function;
use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// What a merge does, the same for every entry point: [`merge_module_with_options`],
/// [`crate::pipeline::run`], [`crate::batch::merge_functions_with`] and
/// [`crate::MergingModule::with_options`]. The default is the exact merge in [`Mode::Safe`]
/// on rayon's current pool, as [`crate::merge_module`] does.
///
/// ```
/// use clif_merge::{MergeOptions, Mode, SimilarOptions};
///
/// let options = MergeOptions {
///     mode: Mode::Aliases,
///     similar: Some(SimilarOptions::default()),
///     threads: std::num::NonZeroUsize::new(2),
///     ..MergeOptions::default()
/// };
/// assert!(options.summary.is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// What addresses of merged functions must preserve.
    pub mode: Mode,
    /// Also merge similar functions (see [`crate::similar`]).
    pub similar: Option<SimilarOptions>,
    /// Global merging's round 2 (see [`crate::global`]): what the other units of the program
    /// hold. Functions another unit also holds become thunks to shared bodies first. The
    /// pipeline and `merge_module_with_options` apply it; `batch` and `MergingModule`, whose
    /// callers define the symbols, refuse it ([`crate::Error::Unsupported`]).
    pub summary: Option<Summary>,
    /// Threads for the parallel phases: a pool of this many is made for the call. `None`: the
    /// pool the caller runs on (rayon's global pool, one thread per core, unless the caller
    /// installed another). The result does not depend on it.
    pub threads: Option<NonZeroUsize>,
}

impl MergeOptions {
    /// Runs `work` on a pool of [`Self::threads`] threads, or on the current pool without
    /// them. A pool that cannot be made (the system refuses threads) leaves the work on the
    /// current pool: every result is the same whatever the number of threads.
    pub(crate) fn in_pool<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        #[cfg(feature = "parallel")]
        if let Some(threads) = self.threads {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads.get())
                .build();
            if let Ok(pool) = pool {
                return pool.install(work);
            }
        }
        work()
    }
}

/// Merges `module` as `options` say: global merging's round 2 with a summary, then the exact
/// merge, and similar merging with similar options ([`merge_module_with`]).
///
/// ```
/// use clif_merge::{MergeOptions, Mode, ReadOptions, merge_module_with_options, read_module_text};
/// use std::path::Path;
///
/// let text = "
///     function %a(i32) -> i32 {
///     block0(v0: i32):
///         v1 = iconst.i32 7
///         v2 = imul v0, v1
///         return v2
///     }
///     function %b(i32) -> i32 {
///     block0(v0: i32):
///         v1 = iconst.i32 7
///         v2 = imul v0, v1
///         return v2
///     }
/// ";
/// let mut module = read_module_text(Path::new("two.clif"), text, ReadOptions::default()).unwrap();
/// let options = MergeOptions { mode: Mode::Aliases, ..MergeOptions::default() };
/// let (report, _times) = merge_module_with_options(&mut module, &options);
/// assert_eq!(report.merged, 1);
/// assert_eq!(report.classes[0].replaced[0].by, clif_merge::Action::Alias);
/// ```
pub fn merge_module_with_options(
    module: &mut ClifModule,
    options: &MergeOptions,
) -> (MergeReport, PassTimes) {
    let merged = options.in_pool(|| run(module, options, options.similar.as_ref(), |_| {}));
    (merged.report, merged.times)
}

/// What [`run`] did.
pub(crate) struct Merged {
    pub report: MergeReport,
    pub times: PassTimes,
    /// Global merging's time, when there was a summary (the pipeline's `global` phase).
    #[cfg_attr(not(feature = "pipeline"), allow(dead_code))]
    pub global: Option<Duration>,
}

/// [`merge_module_with_options`] on the current pool, telling `phase` of `global merging`
/// (with a summary) and `merging` as they start. The module's own similar merging runs with
/// `similar` (the pipeline's has a size judge when it writes an object); global merging with
/// `options.similar`.
pub(crate) fn run(
    module: &mut ClifModule,
    options: &MergeOptions,
    similar: Option<&SimilarOptions>,
    phase: impl Fn(&'static str),
) -> Merged {
    let start = Instant::now();
    let global = options.summary.as_ref().map(|summary| {
        phase("global merging");
        crate::global::merge_with_summary(module, summary, options.similar.as_ref())
    });
    let global_time = global.as_ref().map(|_| start.elapsed());
    phase("merging");
    let (mut report, times) = merge_module_with(module, options.mode, similar);
    if let Some(global) = global {
        report.add_global(global);
    }
    Merged {
        report,
        times,
        global: global_time,
    }
}

/// A thunk for every member a similar merge removed, calling its shared body with its values:
/// cranelift-module has no way to leave a declared function undefined, and an embedder that
/// compiles each function itself may still call the member by its own key.
pub(crate) fn similar_stand_ins(
    cm: &ClifModule,
    report: &MergeReport,
) -> FxHashMap<FunctionId, Function> {
    let mut stand_ins = FxHashMap::default();
    let Some(groups) = &report.similar else {
        return stand_ins;
    };
    // Every function by name, merged-away ones included (a removed member may be a held body
    // or a private copy the exact merge made).
    let by_name: FxHashMap<&FuncName, FunctionId> = (0..cm.id_count())
        .map(FunctionId::new)
        .map(|f| (&cm.function(f).name, f))
        .collect();
    for group in groups {
        let shared = cm.resolve(&group.shared).expect("a shared body is defined");
        let shared_sig = &cm.function(shared).func.signature;
        for member in group.members.iter().filter(|m| m.by == Action::Removed) {
            let fid = by_name[&member.name];
            let sig = &cm.function(fid).func.signature;
            stand_ins.insert(
                fid,
                crate::similar::stand_in(group, member, sig, shared_sig),
            );
        }
    }
    stand_ins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "parallel")]
    fn the_work_runs_on_a_pool_of_the_threads_asked_for() {
        let options = |threads| MergeOptions {
            threads: NonZeroUsize::new(threads),
            ..MergeOptions::default()
        };
        assert_eq!(options(3).in_pool(rayon::current_num_threads), 3);
        assert_eq!(options(1).in_pool(rayon::current_num_threads), 1);
        let current = rayon::current_num_threads();
        assert_eq!(options(0).in_pool(rayon::current_num_threads), current);
    }
}
