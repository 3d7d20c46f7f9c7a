//! Cranelift's run tests (`../shared/runtests/`) through the object writer, where
//! `tests/runtests` goes through the JIT: every file merged (each mode, without and with
//! `--similar`), written as an x86_64 ELF object with machine-code folding and one-jump thunks
//! as `clif-merge -o` writes it, linked with a C driver that makes each run line's call and
//! prints the result's bits, and run natively. The merged program must print what the
//! unmerged one prints (the unmerged object: the same writer, nothing merged, no folding).
//!
//! Run lines of scalar signatures only (`i8`–`i64`, `f32`, `f64`, at most one result, no
//! special parameters); a file whose unmerged program cannot be built or run (a feature the
//! host lacks, a libcall C cannot give) is counted and skipped. Without `../shared`, or off
//! x86_64 Linux, the test says so and passes. The aarch64 run (under qemu) is the same.

#[path = "runtests/cases.rs"]
#[allow(dead_code)]
mod cases;
#[path = "common/files.rs"]
mod files;
#[path = "common/runtest_objects.rs"]
mod runtest_objects;

use clif_merge::{Mode, SimilarOptions};
use runtest_objects::{AARCH64, Arch, Build, Checked, X86_64, every_file, unmerged};
use std::path::Path;

/// Every configuration merged: the differences, and whether the file ran at all.
fn check_file(arch: Arch, path: &Path) -> Checked {
    let text = std::fs::read_to_string(path).unwrap();
    let file = match unmerged(arch, Build::default(), path, &text) {
        Ok(file) => file,
        Err(checked) => return checked,
    };
    let mut differences = Vec::new();
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(SimilarOptions::default())] {
            let tag = format!(
                "{mode:?}{}",
                if similar.is_some() { "-similar" } else { "" }
            );
            differences.extend(file.compare_merged(&tag, mode, similar.as_ref()));
        }
    }
    (differences, true)
}

#[test]
fn runtests_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    every_file(X86_64, "runtests", 100, |p| check_file(X86_64, p));
}

/// The same for aarch64 under qemu (the files' aarch64 targets: `use_bti`, `sign_return_address`
/// and the like as their `target` lines set them). About two minutes under qemu on a loaded
/// machine: `cargo test --test hostile4_runtests_objects -- --ignored`.
#[test]
#[ignore = "slow: every run-test file linked and run under qemu-aarch64 seven times"]
fn runtests_through_aarch64_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: skipping: the run tests' aarch64 objects run under qemu on Linux");
        return;
    }
    every_file(AARCH64, "runtests", 100, |p| check_file(AARCH64, p));
}
