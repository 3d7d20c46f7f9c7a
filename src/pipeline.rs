//! The whole job, as the command line runs it and as an embedder can: read, merge, verify,
//! compile, and the outputs as data. Nothing is written to disk here (see [`crate::output`]),
//! so a failure at any step leaves no partial output.

use crate::emit::object::{
    CodeCache, ObjectOptions, ObjectOutput, equal_code_classes, target_isa, write_object,
    write_object_using,
};
use crate::error::Result;
use crate::merge::PassTimes;
use crate::module::ClifModule;
use crate::pass::{self, MergeOptions};
use crate::read::{ModuleReader, ReadOptions};
use crate::similar::{FindCodeClasses, SimilarOptions, SizeJudge};
use crate::{MergeReport, emit};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Told the name of each phase as it starts (`reading`, `global merging`, `merging`,
/// `verifying`, `compiling`), from the thread that runs the pipeline: what a command line needs
/// to show progress.
#[derive(Clone)]
pub struct PhaseHook(pub Arc<dyn Fn(&'static str) + Send + Sync>);

impl std::fmt::Debug for PhaseHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PhaseHook")
    }
}

/// What the pipeline does after merging.
#[derive(Clone, Debug, Default)]
pub struct PipelineOptions {
    /// The merge: mode, similar merging, global merging's summary, threads (which the reading
    /// and verifying of [`run_files`] run on too).
    pub merge: MergeOptions,
    /// Run every function before and after merging in cranelift-interpreter; a difference is an
    /// error ([`crate::Error::VerifyFailed`]).
    #[cfg(feature = "verify")]
    pub verify: Option<crate::verify::VerifyOptions>,
    /// Compile the merged module into an object.
    pub object: Option<ObjectOptions>,
    /// With `object`, also compile the module unmerged, for `text_bytes_unmerged` and the size
    /// attribution ([`crate::sizes`], in the object's report).
    pub size_baseline: bool,
    /// Write the merged module as CLIF text.
    pub emit_clif: bool,
    /// Told each phase as it starts.
    pub on_phase: Option<PhaseHook>,
}

impl PipelineOptions {
    fn phase(&self, name: &'static str) {
        if let Some(hook) = &self.on_phase {
            (hook.0)(name);
        }
    }
}

/// Everything the pipeline made.
#[derive(Debug)]
pub struct PipelineOutput {
    /// The merged module.
    pub module: ClifModule,
    /// What was merged.
    pub report: MergeReport,
    /// The pass's own phases.
    pub pass_times: PassTimes,
    /// Every step's wall time, in order (`read-and-verify`, `hash`, `compare`, `merge`,
    /// `verify`, `compile-and-object`).
    pub phases: Vec<(&'static str, Duration)>,
    /// What `--verify` found, when it ran (and found nothing wrong).
    #[cfg(feature = "verify")]
    pub verify: Option<crate::verify::VerifyReport>,
    /// The object, when asked for.
    pub object: Option<ObjectOutput>,
    /// The merged module as CLIF, when asked for.
    pub clif: Option<String>,
}

/// Reads `files` as one module and runs [`run`] on it. Functions that the verifier checks
/// only against an ISA are verified with the object's target ISA when there is an object, else
/// with the host's (see [`crate::read::verify_clif`]).
pub fn run_files(
    files: &[PathBuf],
    read_options: ReadOptions,
    options: &PipelineOptions,
) -> Result<PipelineOutput> {
    options
        .merge
        .in_pool(|| read_and_run(files, read_options, options))
}

/// [`run_files`] on the current pool.
fn read_and_run(
    files: &[PathBuf],
    read_options: ReadOptions,
    options: &PipelineOptions,
) -> Result<PipelineOutput> {
    let start = Instant::now();
    options.phase("reading");
    let mut reader = ModuleReader::new(read_options);
    // An ISA that cannot be built is reported by the compile step, with its own message.
    if let Some(isa) = options.object.as_ref().and_then(|o| target_isa(o).ok()) {
        reader = reader.with_isa(isa);
    }
    for file in files {
        reader.read_file(file)?;
    }
    let module = reader.finish()?;
    let read_time = start.elapsed();
    let mut output = merge_and_compile(module, options)?;
    output.phases.insert(0, ("read-and-verify", read_time));
    Ok(output)
}

/// Merges `module`, then verifies, compiles and writes CLIF as `options` say.
///
/// ```
/// use clif_merge::pipeline::{PipelineOptions, run};
/// use clif_merge::{MergeOptions, Mode, ReadOptions, read_module_text};
/// use std::path::Path;
///
/// let text = "
///     function %a(i64) -> i64 {
///     block0(v0: i64):
///         v1 = iconst.i64 40
///         v2 = iadd v0, v1
///         return v2
///     }
///     function %b(i64) -> i64 {
///     block0(v0: i64):
///         v1 = iconst.i64 40
///         v2 = iadd v0, v1
///         return v2
///     }
/// ";
/// let module = read_module_text(Path::new("two.clif"), text, ReadOptions::default()).unwrap();
/// let options = PipelineOptions {
///     merge: MergeOptions { mode: Mode::Thunks, ..MergeOptions::default() },
///     emit_clif: true,
///     ..PipelineOptions::default()
/// };
/// let out = run(module, &options).unwrap();
/// assert_eq!(out.report.merged, 1);
/// // In thunks mode `%b` stays, as a thunk calling `%a`.
/// assert!(out.clif.unwrap().contains("call fn0(v0)"));
/// ```
pub fn run(module: ClifModule, options: &PipelineOptions) -> Result<PipelineOutput> {
    options.merge.in_pool(|| merge_and_compile(module, options))
}

/// [`run`] on the current pool.
fn merge_and_compile(mut module: ClifModule, options: &PipelineOptions) -> Result<PipelineOutput> {
    let mut phases = Vec::new();
    let unmerged = (options.size_baseline && options.object.is_some()).then(|| module.clone());
    #[cfg(feature = "verify")]
    let original = options.verify.as_ref().map(|_| module.clone());
    // The code a size judge compiles, which the object writer takes again where a function is
    // unchanged.
    let code_cache = Arc::new(CodeCache::default());
    let similar = judged(options, &code_cache);
    let merged = pass::run(&mut module, &options.merge, similar.as_ref(), |phase| {
        options.phase(phase)
    });
    let (report, pass_times) = (merged.report, merged.times);
    if let Some(global_time) = merged.global {
        phases.push(("global", global_time));
    }
    phases.push(("hash", pass_times.hashing));
    phases.push(("compare", pass_times.comparing));
    phases.push(("merge", pass_times.merging));
    if options.merge.similar.is_some() {
        phases.push(("similar", pass_times.similar));
    }

    #[cfg(feature = "verify")]
    let verify = match (&original, &options.verify) {
        (Some(original), Some(verify_options)) => {
            options.phase("verifying");
            let start = Instant::now();
            let checked = crate::verify::verify_merge(original, &module, &report, verify_options);
            if !checked.is_ok() {
                return Err(crate::Error::VerifyFailed(Box::new(checked)));
            }
            phases.push(("verify", start.elapsed()));
            Some(checked)
        }
        _ => None,
    };

    let object = match &options.object {
        None => None,
        Some(object_options) => {
            options.phase("compiling");
            let start = Instant::now();
            let summary = options.merge.summary.as_ref();
            let cache = similar.as_ref().map(|_| &*code_cache);
            let object = compile(
                &module,
                &report,
                unmerged.as_ref(),
                summary,
                object_options,
                cache,
            )?;
            phases.push(("compile-and-object", start.elapsed()));
            Some(object)
        }
    };
    let clif = options.emit_clif.then(|| emit::module_to_clif(&module));
    Ok(PipelineOutput {
        module,
        report,
        pass_times,
        phases,
        #[cfg(feature = "verify")]
        verify,
        object,
        clif,
    })
}

/// The similar options the merge runs with: with an object to write, each group is judged by
/// its compiled size with the object's ISA (unless the options already name a judge), not by
/// the cost model alone. An ISA that cannot be built leaves the model the judge (the compile
/// step reports the error). Records ([`SimilarOptions::records`]) where the output is the
/// object alone, unless the options say no.
fn judged(options: &PipelineOptions, code_cache: &Arc<CodeCache>) -> Option<SimilarOptions> {
    let mut similar = options.merge.similar.clone()?;
    if similar.judge.is_none()
        && let Some(object) = &options.object
    {
        let folding = object.fold_machine_code.then(|| {
            let object = object.clone();
            // Each round of similar merging measures the module again, mostly unchanged.
            let cache = code_cache.clone();
            let classes: Arc<FindCodeClasses> =
                Arc::new(move |module| equal_code_classes(module, &object, &cache).ok());
            classes
        });
        similar.judge = target_isa(object).ok().map(|isa| {
            let judge = SizeJudge::new(isa);
            match folding {
                Some(classes) => judge.with_folding(classes),
                None => judge,
            }
        });
    }
    // Records are data objects: only the object holds them (`compile` hands them to the
    // writer), not CLIF text. `--verify` runs them with their bytes (the report's), so that
    // what it checks is what the object holds.
    let object_only = options.object.is_some() && !options.emit_clif;
    similar.records = Some(object_only && similar.records != Some(false));
    Some(similar)
}

/// The merged module's object; with `unmerged`, its size unmerged and unfolded in the report,
/// and where the bytes went ([`crate::sizes`]).
fn compile(
    merged: &ClifModule,
    report: &MergeReport,
    unmerged: Option<&ClifModule>,
    summary: Option<&crate::global::Summary>,
    options: &ObjectOptions,
    cache: Option<&CodeCache>,
) -> Result<ObjectOutput> {
    let records: Vec<_> = (report.similar.iter().flatten())
        .flat_map(|group| group.records.iter().cloned())
        .collect();
    let mut out = write_object_using(merged, report.removed(), options, &records, cache)?;
    if let Some(unmerged) = unmerged {
        let baseline = ObjectOptions {
            fold_machine_code: false,
            ..options.clone()
        };
        let base = write_object(unmerged, 0, &baseline)?;
        out.report.text_bytes_unmerged = Some(base.report.text_bytes);
        let mut sizes = crate::sizes::attribute(report, &out, &base)?;
        if let Some(summary) = summary {
            sizes.global_holders = crate::sizes::global_holders(report, unmerged, summary);
        }
        out.report.sizes = Some(sizes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;
    use std::sync::Mutex;

    /// The hook hears every phase that runs, once, in order, and none that does not.
    #[test]
    fn the_phase_hook_hears_each_phase_in_order() {
        let text = "function %a(i32) -> i32 {\nblock0(v0: i32):\n    v1 = iconst.i32 3\n    \
                    v2 = iadd v0, v1\n    return v2\n}\n";
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.clif");
        std::fs::write(&file, text).unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let record = heard.clone();
        let hook = PhaseHook(Arc::new(move |phase| record.lock().unwrap().push(phase)));
        let object = crate::emit::object::ObjectOptions {
            target: crate::emit::object::parse_target("x86_64-unknown-linux-gnu").unwrap(),
            opt_level: crate::emit::object::OptLevel::Speed,
            isa: Default::default(),
            function_sections: false,
            mode: Mode::Safe,
            fold_machine_code: true,
        };
        let summary = crate::global::Summary::default();
        let options = PipelineOptions {
            merge: MergeOptions {
                summary: Some(summary),
                ..MergeOptions::default()
            },
            object: Some(object),
            on_phase: Some(hook),
            ..Default::default()
        };
        run_files(
            std::slice::from_ref(&file),
            ReadOptions::default(),
            &options,
        )
        .unwrap();
        let expected = ["reading", "global merging", "merging", "compiling"];
        assert_eq!(*heard.lock().unwrap(), expected);
        heard.lock().unwrap().clear();
        let quiet = PipelineOptions {
            on_phase: options.on_phase.clone(),
            ..Default::default()
        };
        run_files(&[file], ReadOptions::default(), &quiet).unwrap();
        assert_eq!(*heard.lock().unwrap(), ["reading", "merging"]);
    }
}
