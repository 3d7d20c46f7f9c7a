//! `.text` sizes of merged modules, for the tests of the rule "`-o --similar` never writes a
//! byte more of `.text` than exact merging": the object options of a target and mode, the
//! pipeline run that writes the object, and the comparison in every target and mode.
//!
//! Included on its own (`#[path]`) by the size tests, which need nothing else from
//! `tests/common`.

// Each test file uses some of these.
#![allow(dead_code)]

use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target};
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{ClifModule, MergeOptions, MergeReport, Mode, ReadOptions, SimilarOptions};
use std::path::Path;

/// Every merging mode, as the objects write them.
pub const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
/// The targets the objects are written for.
pub const TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

/// The CLI's object options for `target` in `mode`: `opt_level=speed`, the ISA's default
/// flags, one text section, machine-code folding on.
pub fn object(target: &str, mode: Mode) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: IsaSettings::default(),
        function_sections: false,
        mode,
        fold_machine_code: true,
    }
}

/// `.text` bytes of `module` merged with `merge` (its mode is the object's) for `target`, and
/// the merge's report.
pub fn merged_text(module: &ClifModule, target: &str, merge: MergeOptions) -> (u64, MergeReport) {
    let options = PipelineOptions {
        object: Some(object(target, merge.mode)),
        merge,
        ..Default::default()
    };
    let out = run(module.clone(), &options).expect("the module compiles");
    (out.object.expect("an object").report.text_bytes, out.report)
}

/// `.text` bytes of `module` merged in `mode` for `target`, with `--similar` or without, and
/// the number of similar groups merged.
pub fn text_bytes(module: &ClifModule, target: &str, mode: Mode, similar: bool) -> (u64, usize) {
    let merge = MergeOptions {
        mode,
        similar: similar.then(SimilarOptions::default),
        ..MergeOptions::default()
    };
    let (text, report) = merged_text(module, target, merge);
    (text, report.similar.iter().flatten().count())
}

/// Every (target, mode) where `-o --similar` writes more `.text` than exact merging.
pub fn grown(module: &ClifModule, targets: &[&str], modes: &[Mode]) -> Vec<String> {
    let mut grown = Vec::new();
    for &target in targets {
        for &mode in modes {
            let (exact, _) = text_bytes(module, target, mode, false);
            let (similar, groups) = text_bytes(module, target, mode, true);
            if similar > exact {
                grown.push(format!(
                    "{target} {mode:?}: exact {exact}, --similar {similar} ({groups} groups)"
                ));
            }
        }
    }
    grown
}

/// The module of CLIF `text`, named `name` in messages.
pub fn read(name: &str, text: &str) -> ClifModule {
    clif_merge::read_module_text(Path::new(name), text, ReadOptions::default()).unwrap()
}

/// Whether the object `-o --similar` writes for `module` in `object`'s mode (the code of
/// unchanged functions taken from the size judge's compile) equals, byte for byte, the merged
/// module's object compiled afresh; and whether any similar group was merged. `None` where the
/// module does not merge or compile (files written to be refused, or for other targets).
pub fn cached_object_is_fresh(module: &ClifModule, object: &ObjectOptions) -> Option<(bool, bool)> {
    use clif_merge::emit::object::write_object_with_records;
    let options = PipelineOptions {
        merge: MergeOptions {
            mode: object.mode,
            similar: Some(SimilarOptions::default()),
            ..MergeOptions::default()
        },
        object: Some(object.clone()),
        ..Default::default()
    };
    let out = run(module.clone(), &options).ok()?;
    let records: Vec<_> = (out.report.similar.iter().flatten())
        .flat_map(|g| g.records.iter().cloned())
        .collect();
    let fresh =
        write_object_with_records(&out.module, out.report.removed(), object, &records).unwrap();
    let groups = out.report.similar.iter().flatten().count() > 0;
    Some((out.object.expect("an object").bytes == fresh.bytes, groups))
}
