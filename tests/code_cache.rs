//! The object `-o --similar` writes takes the code of unchanged functions from the size judge's
//! compile (`emit::object::CodeCache`). Whatever it takes from there must be what compiling the
//! merged module afresh gives: the pipeline's object is compared, byte for byte, with the
//! object written from its own merged module without the cache, on every CLIF file of the
//! repository that compiles, x86_64 and aarch64, every mode.

use clif_merge::emit::object::{
    IsaSettings, ObjectOptions, OptLevel, parse_target, write_object_with_records,
};
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{MergeOptions, Mode, ReadOptions, SimilarOptions, read_files};
use std::path::{Path, PathBuf};

fn clif_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            clif_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "clif") {
            out.push(path);
        }
    }
}

fn object_options(target: &str, mode: Mode) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: IsaSettings::default(),
        function_sections: false,
        mode,
        fold_machine_code: true,
    }
}

#[test]
fn objects_from_cached_code_are_the_objects_compiling_gives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    clif_files(&root.join("tests"), &mut files);
    clif_files(&root.join("examples"), &mut files);
    files.sort();
    let (mut compared, mut with_groups) = (0, 0);
    for file in &files {
        // Files written to be refused, or for other targets, are not this test's.
        let Ok(module) = read_files(std::slice::from_ref(file), ReadOptions::default()) else {
            continue;
        };
        for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
            for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                let object = object_options(target, mode);
                let options = PipelineOptions {
                    merge: MergeOptions {
                        mode,
                        similar: Some(SimilarOptions::default()),
                        ..MergeOptions::default()
                    },
                    object: Some(object.clone()),
                    ..Default::default()
                };
                let Ok(out) = run(module.clone(), &options) else {
                    continue;
                };
                let records: Vec<_> = (out.report.similar.iter().flatten())
                    .flat_map(|g| g.records.iter().cloned())
                    .collect();
                let fresh =
                    write_object_with_records(&out.module, out.report.removed(), &object, &records)
                        .unwrap();
                let piped = out.object.expect("an object");
                assert!(
                    piped.bytes == fresh.bytes,
                    "{} {target} {mode:?}: the object differs from the merged module compiled afresh",
                    file.display()
                );
                compared += 1;
                with_groups += usize::from(out.report.similar.iter().flatten().count() > 0);
            }
        }
    }
    assert!(compared > 300, "only {compared} objects compared");
    assert!(with_groups > 30, "only {with_groups} with similar groups");
    eprintln!("{compared} objects compared, {with_groups} with similar groups");
}
