//! hostile10: `tests/code_cache.rs`'s oracle on Cranelift's own run tests (`../shared/runtests`)
//! and with the object options it leaves at their defaults: the object `-o --similar` writes
//! (code of unchanged functions taken from the size judge's compile) must equal, byte for
//! byte, the merged module's object written afresh without the cache, with one text section
//! per function, `opt_level=none`, `speed_and_size`, and a CPU preset, x86_64 and aarch64,
//! every mode in turn; and the repository's CLIF files (most of the similar groups) with the
//! same variants. Without `../shared` the test says so and passes.

#[path = "common/files.rs"]
mod files;
#[path = "common/sizes.rs"]
mod sizes;

use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target};
use clif_merge::{Mode, ReadOptions, read_files};
use sizes::{MODES, TARGETS, cached_object_is_fresh};
use std::path::Path;

/// The object options of variant `v` for `target` in `mode`.
fn variant(v: usize, target: &str, mode: Mode) -> ObjectOptions {
    let x86_64 = target.starts_with("x86_64");
    let (opt_level, function_sections, cpu) = match v {
        0 => (OptLevel::Speed, true, None),
        1 => (OptLevel::None, false, None),
        2 => (OptLevel::SpeedAndSize, true, None),
        _ => (
            OptLevel::Speed,
            false,
            Some(if x86_64 { "haswell" } else { "apple-m1" }.to_string()),
        ),
    };
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level,
        isa: IsaSettings { cpu, flags: vec![] },
        function_sections,
        mode,
        fold_machine_code: true,
    }
}

#[test]
fn objects_from_cached_code_are_the_objects_compiling_gives_on_the_run_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("../shared/runtests");
    if !dir.is_dir() {
        eprintln!("note: skipping: ../shared is not beside the repository");
        return;
    }
    // The repository's own CLIF files hold most of the similar groups.
    let mut all = files::clif_files(&dir);
    all.extend(files::clif_files(&root.join("tests")));
    all.extend(files::clif_files(&root.join("examples")));
    let (mut compared, mut with_groups, mut differ) = (0, 0, Vec::new());
    for (i, file) in all.iter().enumerate() {
        let Ok(module) = read_files(std::slice::from_ref(file), ReadOptions::default()) else {
            continue;
        };
        for (t, target) in TARGETS.iter().enumerate() {
            let mode = MODES[(i + t) % 3];
            let object = variant((i + t) % 4, target, mode);
            let Some((same, groups)) = cached_object_is_fresh(&module, &object) else {
                continue;
            };
            if !same {
                differ.push(format!("{} {target} {mode:?}", file.display()));
            }
            compared += 1;
            with_groups += usize::from(groups);
        }
    }
    eprintln!("{compared} objects compared, {with_groups} with similar groups");
    assert!(
        differ.is_empty(),
        "differ from a fresh compile: {differ:#?}"
    );
    assert!(compared > 300, "only {compared} objects compared");
    assert!(with_groups > 30, "only {with_groups} with similar groups");
}
