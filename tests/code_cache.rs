//! The object `-o --similar` writes takes the code of unchanged functions from the size judge's
//! compile (`emit::object::CodeCache`). Whatever it takes from there must be what compiling the
//! merged module afresh gives: the pipeline's object is compared, byte for byte, with the
//! object written from its own merged module without the cache, on every CLIF file of the
//! repository that compiles, x86_64 and aarch64, every mode.

#[path = "common/files.rs"]
mod files;
#[path = "common/sizes.rs"]
mod sizes;

use clif_merge::{ReadOptions, read_files};
use sizes::{MODES, TARGETS, cached_object_is_fresh, object};
use std::path::Path;

#[test]
fn objects_from_cached_code_are_the_objects_compiling_gives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files::clif_files(&root.join("tests"));
    files.extend(files::clif_files(&root.join("examples")));
    let (mut compared, mut with_groups) = (0, 0);
    for file in &files {
        // Files written to be refused, or for other targets, are not this test's.
        let Ok(module) = read_files(std::slice::from_ref(file), ReadOptions::default()) else {
            continue;
        };
        for target in TARGETS {
            for mode in MODES {
                let Some((same, groups)) = cached_object_is_fresh(&module, &object(target, mode))
                else {
                    continue;
                };
                assert!(
                    same,
                    "{} {target} {mode:?}: the object differs from the merged module compiled afresh",
                    file.display()
                );
                compared += 1;
                with_groups += usize::from(groups);
            }
        }
    }
    assert!(compared > 300, "only {compared} objects compared");
    assert!(with_groups > 30, "only {with_groups} with similar groups");
    eprintln!("{compared} objects compared, {with_groups} with similar groups");
}
