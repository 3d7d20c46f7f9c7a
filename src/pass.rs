//! The pass as every entry point runs it, the top layer: one [`MergeOptions`], then global
//! merging's round 2 (with a summary), the exact merge and similar merging (with similar
//! options) in turn, on a pool of the threads asked for, and one [`MergeReport`] of them all.
//!
//! The layers, each using only those below it (`tests/module_cycles.rs` checks it):
//! 1. the rules and IR edits every merge shares: `crate::policy` ([`Mode`], [`crate::Action`],
//!    which member keeps the body, what the others become, functions that read their own frame)
//!    and `crate::edit` (thunks, call sites with extra arguments, free names);
//! 2. the ways of merging, siblings that never use each other: the exact merge
//!    (`crate::merge`), similar merging (`crate::similar`), global merging (`crate::global`);
//! 3. this pass, which runs them and reports; the entry points ([`crate::pipeline`],
//!    [`crate::batch`], [`crate::MergingModule`]) and `crate::verify` use it and its report.

mod report;

pub use report::{MergeReport, MergedClass, Replacement};

use crate::global::Summary;
use crate::merge::{MergePlan, PassTimes, analyse_with_shapes, apply};
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::policy::Mode;
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
    /// Threads for the parallel phases: a pool of this many, at most 8 (no phase uses more), is
    /// made for the call. `None`: the pool the caller runs on (rayon's global pool, one thread
    /// per core, unless the caller installed another). The result does not depend on it.
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
                .num_threads(threads.get().min(crate::parallel::MAX_THREADS))
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

/// [`MergeReport::stand_ins`] by the id of the member each stands for in `cm`, the module the
/// report is of (merged-away functions keep their ids and names): for an embedder that compiles
/// each function of the input itself and may still call a removed member by its own key.
pub(crate) fn stand_ins_by_id(
    cm: &ClifModule,
    report: &MergeReport,
) -> FxHashMap<FunctionId, Function> {
    let stand_ins = report.stand_ins(cm);
    if stand_ins.is_empty() {
        return FxHashMap::default();
    }
    // Every function by name, merged-away ones included (a removed member may be a held body
    // or a private copy the exact merge made).
    let by_name: FxHashMap<FuncName, FunctionId> = (0..cm.id_count())
        .map(FunctionId::new)
        .map(|f| (cm.function(f).name.clone(), f))
        .collect();
    stand_ins
        .into_iter()
        .map(|func| (by_name[&FuncName::of_function(&func)], func))
        .collect()
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
        // No phase uses more than eight: a pool of more would only start idle threads.
        assert_eq!(options(100_000).in_pool(rayon::current_num_threads), 8);
        let current = rayon::current_num_threads();
        assert_eq!(options(0).in_pool(rayon::current_num_threads), current);
    }

    /// The one set of stand-ins (the report's, which `verify` defines by name) serves the
    /// embedders too, which compile them under the member's id: each has the signature of the
    /// member it stands for, whatever the convention and parameter types.
    #[test]
    fn a_stand_in_has_its_members_name_and_signature() {
        let text = "
            function %a(i64) -> i64 fast {
            block0(v0: i64):
                v1 = iconst.i64 3
                v2 = imul v0, v1
                v3 = iadd v2, v0
                v4 = imul v3, v2
                return v4
            }
            function %b(i64) -> i64 fast {
            block0(v0: i64):
                v1 = iconst.i64 5
                v2 = imul v0, v1
                v3 = iadd v2, v0
                v4 = imul v3, v2
                return v4
            }
            function %c(i32, f64) -> f64 tail {
            block0(v0: i32, v1: f64):
                v2 = f64const 0x1.8p1
                v3 = fmul v1, v2
                v4 = fcvt_from_sint.f64 v0
                v5 = fadd v3, v4
                v6 = fmul v5, v3
                return v6
            }
            function %d(i32, f64) -> f64 tail {
            block0(v0: i32, v1: f64):
                v2 = f64const 0x1.4p2
                v3 = fmul v1, v2
                v4 = fcvt_from_sint.f64 v0
                v5 = fadd v3, v4
                v6 = fmul v5, v3
                return v6
            }
            function %main(i64, i32, f64) -> i64, f64 fast {
                fn0 = %a(i64) -> i64 fast
                fn1 = %b(i64) -> i64 fast
                fn2 = %c(i32, f64) -> f64 tail
                fn3 = %d(i32, f64) -> f64 tail
            block0(v0: i64, v1: i32, v2: f64):
                v3 = call fn0(v0)
                v4 = call fn1(v3)
                v5 = call fn2(v1, v2)
                v6 = call fn3(v1, v5)
                return v4, v6
            }
        ";
        let mut module = ClifModule::new();
        for func in cranelift_reader::parse_functions(text).unwrap() {
            let linkage = match FuncName::of_function(&func).to_string().as_str() {
                "%main" => crate::SymbolLinkage::Export,
                _ => crate::SymbolLinkage::Local,
            };
            module.define(func, linkage, None).unwrap();
        }
        let options = MergeOptions {
            similar: Some(SimilarOptions {
                min_saving: i64::MIN / 2,
                ..SimilarOptions::default()
            }),
            ..MergeOptions::default()
        };
        let original = module.clone();
        let (report, _) = merge_module_with_options(&mut module, &options);
        assert_eq!(report.similar.as_ref().map(Vec::len), Some(2), "{report:?}");
        let stand_ins = stand_ins_by_id(&module, &report);
        let mut names: Vec<String> = stand_ins
            .iter()
            .map(|(&id, func)| {
                let member = original.function(id);
                assert_eq!(func.signature, member.func.signature, "{}", member.name);
                assert_eq!(FuncName::of_function(func), member.name);
                member.name.to_string()
            })
            .collect();
        names.sort();
        assert_eq!(names, ["%a", "%b", "%c", "%d"]);
    }
}
