//! One `MergeOptions`, every entry point: the same module and options give the same merges
//! through `merge_module_with_options`, `pipeline::run` (without an object, so without the size
//! judge that only an object brings) and `batch::merge_functions_with`; the same merged CLIF
//! through the first two; and options an entry point cannot honour are refused, not ignored.
//! Modules are modgen's (generated, with every similar hole family), each mode, with and without
//! similar merging (every group that fits forced, so that groups occur in these small modules).

mod common;

use clif_merge::batch::{Entry, merge_functions_with};
use clif_merge::emit::clif::module_to_clif;
use clif_merge::global::Summary;
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{
    ClifModule, Error, MergeOptions, MergeReport, Mode, SimilarOptions, merge_module_with_options,
};
use common::generator::pseudo_random_choices;
use common::modgen::{ModGenConfig, generate_module};
use std::num::NonZeroUsize;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
const CASES: usize = 40;

/// Generated modules without aliases (a batch of entries has none).
fn modules() -> Vec<ClifModule> {
    let mut seed = 0x00e7_0417_0000_0002u64;
    let cfg = ModGenConfig::interpreter().with_similar_holes();
    (0..CASES)
        .map(|_| {
            let gm = generate_module(&pseudo_random_choices(&mut seed, 3000), &cfg);
            let mut module = ClifModule::new();
            for (f, linkage) in &gm.functions {
                module.define(f.clone(), *linkage, None).unwrap();
            }
            module
        })
        .collect()
}

fn options(mode: Mode, similar: bool, threads: Option<usize>) -> MergeOptions {
    MergeOptions {
        mode,
        similar: similar.then(|| SimilarOptions {
            min_saving: i64::MIN / 2,
            ..SimilarOptions::default()
        }),
        summary: None,
        threads: threads.and_then(NonZeroUsize::new),
    }
}

fn through_the_module(module: &ClifModule, options: &MergeOptions) -> (MergeReport, String) {
    let mut module = module.clone();
    let (report, _) = merge_module_with_options(&mut module, options);
    (report, module_to_clif(&module))
}

fn through_the_pipeline(module: &ClifModule, options: &MergeOptions) -> (MergeReport, String) {
    let pipeline = PipelineOptions {
        merge: options.clone(),
        emit_clif: true,
        ..Default::default()
    };
    let out = run(module.clone(), &pipeline).unwrap();
    (out.report, out.clif.unwrap())
}

fn through_the_batch(module: &ClifModule, options: &MergeOptions) -> MergeReport {
    let entries: Vec<Entry<'_, usize>> = module
        .functions()
        .enumerate()
        .map(|(key, mf)| Entry {
            key,
            func: &mf.func,
            linkage: mf.linkage,
        })
        .collect();
    merge_functions_with(&entries, options).unwrap().report
}

#[test]
fn every_entry_point_merges_the_same() {
    let (mut merged, mut groups) = (0, 0);
    for (case, module) in modules().iter().enumerate() {
        for mode in MODES {
            for similar in [false, true] {
                let options = options(mode, similar, None);
                let what = format!("case {case}, {mode:?}, similar {similar}");
                let (report, clif) = through_the_module(module, &options);
                let (piped, piped_clif) = through_the_pipeline(module, &options);
                assert_eq!(report, piped, "{what}: module and pipeline reports differ");
                assert_eq!(clif, piped_clif, "{what}: module and pipeline CLIF differ");
                let batch = through_the_batch(module, &options);
                assert_eq!(report, batch, "{what}: module and batch reports differ");
                merged += report.merged;
                groups += report.similar.as_ref().map_or(0, Vec::len);
            }
        }
    }
    // The comparison is only as good as the merges it sees.
    assert!(
        merged > 100,
        "only {merged} merges in the generated modules"
    );
    assert!(
        groups > 10,
        "only {groups} similar groups in the generated modules"
    );
}

#[test]
fn threads_do_not_change_what_any_entry_point_merges() {
    for (case, module) in modules().iter().enumerate().step_by(4) {
        for mode in MODES {
            for similar in [false, true] {
                let one = options(mode, similar, Some(1));
                let what = format!("case {case}, {mode:?}, similar {similar}");
                let expected = through_the_module(module, &one);
                for threads in [2, 5] {
                    let many = options(mode, similar, Some(threads));
                    assert_eq!(through_the_module(module, &many), expected, "{what}");
                    assert_eq!(through_the_pipeline(module, &many), expected, "{what}");
                    assert_eq!(through_the_batch(module, &many), expected.0, "{what}");
                }
            }
        }
    }
}

#[test]
fn the_batch_refuses_a_summary_and_says_why() {
    let module = &modules()[0];
    let mut options = options(Mode::Safe, false, None);
    options.summary = Some(Summary::default());
    let entries: Vec<Entry<'_, usize>> = module
        .functions()
        .enumerate()
        .map(|(key, mf)| Entry {
            key,
            func: &mf.func,
            linkage: mf.linkage,
        })
        .collect();
    match merge_functions_with(&entries, &options) {
        Err(Error::Unsupported(why)) => assert!(why.contains("summary"), "{why}"),
        other => panic!("a summary in batch merging: {:?}", other.map(|m| m.report)),
    }
}
