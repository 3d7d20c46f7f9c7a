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

use cases::RunFile;
use clif_merge::{Mode, ReadOptions, SimilarOptions, merge_module_with, read_module_text};
use rayon::prelude::*;
use runtest_objects::{
    AARCH64, Arch, Build, X86_64, driver, isa_flags, object, run, runtests_dir, skipped,
};
use std::path::Path;
use std::process::Command;

/// Every configuration merged: the differences, and whether the file ran at all.
fn check_file(arch: Arch, path: &Path) -> (Vec<String>, bool) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let Some(flags) = isa_flags(&text, arch) else {
        return (Vec::new(), false);
    };
    let Ok(Some(file)) = RunFile::read(name.clone(), text.clone()) else {
        return (Vec::new(), false);
    };
    let Some(source) = driver(&file) else {
        return (Vec::new(), false);
    };
    let module = match read_module_text(path, &text, ReadOptions::default()) {
        Ok(module) => module,
        Err(e) => return skipped(&name, &e.to_string()),
    };
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("driver.c");
    std::fs::write(&c, source).unwrap();
    let driver = dir.path().join("driver.o");
    let compiled = Command::new(arch.cc)
        .args(["-O1", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&driver)
        .status()
        .unwrap();
    assert!(compiled.success(), "{name}: the driver does not compile");
    let expected = match object((arch, Build::default()), &module, Mode::Safe, &flags, false)
        .and_then(|unmerged| run(arch, dir.path(), "unmerged", &driver, &unmerged))
    {
        Ok(expected) => expected,
        Err(e) => return skipped(&name, &e),
    };
    let mut differences = Vec::new();
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(SimilarOptions::default())] {
            let tag = format!(
                "{mode:?}{}",
                if similar.is_some() { "-similar" } else { "" }
            );
            let mut merged = module.clone();
            merge_module_with(&mut merged, mode, similar.as_ref());
            let got = object((arch, Build::default()), &merged, mode, &flags, true)
                .and_then(|bytes| run(arch, dir.path(), &tag, &driver, &bytes));
            match got {
                Ok(out) if out == expected => {}
                Ok(out) => {
                    let first = expected
                        .lines()
                        .zip(out.lines())
                        .find(|(a, b)| a != b)
                        .map(|(a, b)| format!("line {a} unmerged, {b} merged"))
                        .unwrap_or_else(|| "another number of lines".into());
                    differences.push(format!("{name} {tag}: {first}"));
                }
                Err(e) => differences.push(format!("{name} {tag}: {e}")),
            }
        }
    }
    (differences, true)
}

/// Every file on `arch`; `at_least` files must run (else the harness is broken).
fn every_file(arch: Arch, at_least: usize) {
    let Some(dir) = runtests_dir() else { return };
    let tools = std::iter::once(arch.cc).chain(arch.runner.first().copied());
    for tool in tools {
        let found = Command::new(tool).arg("--version").output().is_ok();
        if !found {
            assert!(std::env::var_os("CI").is_none(), "CI needs {tool}");
            eprintln!("note: skipping: {tool} is not installed");
            return;
        }
    }
    let paths = files::clif_files(&dir);
    let results: Vec<(Vec<String>, bool)> = paths.par_iter().map(|p| check_file(arch, p)).collect();
    let ran = results.iter().filter(|r| r.1).count();
    let differences: Vec<String> = results.into_iter().flat_map(|r| r.0).collect();
    eprintln!(
        "runtests through {} objects: {ran} of {} files ran",
        arch.name,
        paths.len()
    );
    assert!(
        ran >= at_least,
        "only {ran} files ran: the harness is broken"
    );
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn runtests_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    every_file(X86_64, 100);
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
    every_file(AARCH64, 100);
}
