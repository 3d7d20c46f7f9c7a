//! Hostile inputs for size attribution and `clif-merge diff` (issue of the sizes session): an
//! object a tool reads is bad input like any other, so a broken one is an error that names it,
//! never a panic or a total that does not add up. Objects are written by clif-merge's own object
//! writer from `examples/basic.clif`, then one field of their symbol table is patched by hand.

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::sizes::diff_objects;
use clif_merge::{ClifModule, Mode, ReadOptions, read_module_text};
use std::path::Path;

fn basic() -> ClifModule {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.clif");
    let text = std::fs::read_to_string(&path).unwrap();
    read_module_text(&path, &text, ReadOptions::default()).unwrap()
}

/// `examples/basic.clif` unmerged, as an object for `target`.
fn basic_object(target: &str) -> Vec<u8> {
    let options = ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: false,
    };
    write_object(&basic(), 0, &options).unwrap().bytes
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize
}
fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The file offsets of an ELF64 object's function symbols (`STT_FUNC`), in table order.
fn elf_function_symbols(b: &[u8]) -> Vec<usize> {
    let (shoff, shentsize, shnum) = (u64_at(b, 0x28) as usize, u16_at(b, 0x3a), u16_at(b, 0x3c));
    let symtab = (0..shnum)
        .map(|i| shoff + i * shentsize)
        .find(|&h| u32_at(b, h + 4) == 2)
        .expect("a symbol table");
    let (offset, size) = (u64_at(b, symtab + 0x18) as usize, u64_at(b, symtab + 0x20));
    (offset..offset + size as usize)
        .step_by(24)
        .filter(|&s| b[s + 4] & 0xf == 2)
        .collect()
}

/// The file offsets of a 64-bit Mach-O object's symbols (`nlist_64`), in table order.
fn macho_symbols(b: &[u8]) -> Vec<usize> {
    let mut command = 32;
    for _ in 0..u32_at(b, 16) {
        if u32_at(b, command) == 2 {
            let (symoff, nsyms) = (u32_at(b, command + 8), u32_at(b, command + 12));
            return (0..nsyms).map(|k| symoff + 16 * k).collect();
        }
        command += u32_at(b, command + 4);
    }
    panic!("no LC_SYMTAB");
}

/// `diff` of a good object against `broken` must refuse it (or, if it reads it, add up: the
/// symbols' and the padding's bytes are the text sections' bytes); it must not panic.
fn assert_diff_refuses_or_adds_up(good: &[u8], broken: &[u8]) {
    let result = std::panic::catch_unwind(|| diff_objects(good, broken));
    let diff = match result {
        Err(_) => panic!("diff_objects panicked on a broken object instead of refusing it"),
        Ok(Err(_)) => return,
        Ok(Ok(diff)) => diff,
    };
    let after: u64 = diff.symbols.iter().filter_map(|s| s.after).sum();
    assert_eq!(
        after, diff.text_after,
        "the rows of the broken object add up to {after}, its text sections to {}",
        diff.text_after
    );
}

/// A Mach-O symbol whose address lies past the end of its section (one byte of `n_value`
/// changed): the symbol before it "reaches to the next symbol", past the section's end, so its
/// bytes would exceed the section's and the padding row underflow (it did: a panic in debug
/// builds, a wrapped huge number in release builds); such an object is refused.
#[test]
fn diff_refuses_a_macho_symbol_past_its_section_end() {
    let good = basic_object("x86_64-apple-darwin");
    let mut broken = good.clone();
    let symbols = macho_symbols(&broken);
    // n_value of the last symbol: far past the 129 bytes of __text.
    let value = symbols[symbols.len() - 1] + 8;
    broken[value..value + 8].copy_from_slice(&0xe100u64.to_le_bytes());
    assert_diff_refuses_or_adds_up(&good, &broken);
}

/// The ELF form of the same: a function symbol past its section's end, and the symbol before it
/// with an `st_size` larger than the section. Its bytes are capped at the next symbol, which is
/// past the end, not at the section's end.
#[test]
fn diff_refuses_an_elf_symbol_past_its_section_end() {
    let good = basic_object("x86_64");
    let mut broken = good.clone();
    let symbols = elf_function_symbols(&broken);
    let (first, last) = (symbols[0], symbols[symbols.len() - 1]);
    // st_value of the first function (at 0) past the end, st_size of the last one huge.
    broken[first + 8..first + 16].copy_from_slice(&0x1000u64.to_le_bytes());
    broken[last + 16..last + 24].copy_from_slice(&0x10000u64.to_le_bytes());
    assert_diff_refuses_or_adds_up(&good, &broken);
}

/// Every single-byte corruption of a small ELF and Mach-O object's first kilobyte: `diff`
/// refuses it or reads it with totals that add up, and never panics.
#[test]
fn diff_never_panics_on_one_corrupted_byte() {
    for target in [
        "x86_64",
        "aarch64",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
    ] {
        let good = basic_object(target);
        for at in 0..good.len().min(1024) {
            for value in [0x00u8, 0x41, 0xe1, 0xff] {
                let mut broken = good.clone();
                if broken[at] == value {
                    continue;
                }
                broken[at] = value;
                let result = std::panic::catch_unwind(|| diff_objects(&good, &broken));
                assert!(
                    result.is_ok(),
                    "{target}: byte {at} set to {value:#x} makes diff_objects panic"
                );
            }
        }
    }
}

/// The untouched objects still diff without complaint (the patching helpers above find what
/// they patch; a test of a broken object is only as good as its good one).
#[test]
fn the_unbroken_objects_diff_and_add_up() {
    for target in ["x86_64", "x86_64-apple-darwin"] {
        let good = basic_object(target);
        assert_diff_refuses_or_adds_up(&good, &good);
        let diff = diff_objects(&good, &good).unwrap();
        assert!(diff.symbols.iter().all(|s| s.delta() == 0));
        assert_eq!(diff.text_before, 238, "{target}");
    }
    let elf = basic_object("x86_64");
    assert_eq!(elf_function_symbols(&elf).len(), 6);
    let macho = basic_object("x86_64-apple-darwin");
    assert_eq!(macho_symbols(&macho).len(), 6);
}

/// `clif-merge diff` has no parallel phase; it accepted `--threads N` (an option declared
/// global for `summarize` and `combine`) and ignored it. An option a command cannot honour is
/// refused as a usage error (exit 2), as `diff --report json` is.
#[test]
fn diff_refuses_threads_as_it_refuses_report() {
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("m.o");
    std::fs::write(&object, basic_object("x86_64")).unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_clif-merge"))
            .arg("diff")
            .args(extra)
            .arg(&object)
            .arg(&object)
            .output()
            .unwrap()
    };
    assert_eq!(run(&["--report", "json"]).status.code(), Some(2));
    let threads = run(&["--threads", "3"]);
    assert_eq!(
        threads.status.code(),
        Some(2),
        "diff --threads 3: {}",
        String::from_utf8_lossy(&threads.stdout)
    );
}

/// On the command line the refusal names the files and the symbol, and exits non-zero.
#[test]
fn the_cli_names_the_files_of_a_refused_diff() {
    let good = basic_object("x86_64-apple-darwin");
    let mut broken = good.clone();
    let symbols = macho_symbols(&broken);
    let value = symbols[symbols.len() - 1] + 8;
    broken[value..value + 8].copy_from_slice(&0xe100u64.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("good.o"), dir.path().join("broken.o"));
    std::fs::write(&before, &good).unwrap();
    std::fs::write(&after, &broken).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .arg("diff")
        .args([&before, &after])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    for needle in [
        "good.o (before)",
        "broken.o (after)",
        "the object after",
        "outside its section",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}

/// Objects of two targets do not line up: Mach-O names carry a leading `_` that ELF's do not,
/// and the same function's bytes differ by instruction set. A diff of them listed every function
/// as gone and come back (or as grown by the other encoding) without a word; it is refused,
/// naming both targets, in the library and on the command line (exit 1, nothing on stdout).
#[test]
fn a_diff_of_two_targets_is_refused() {
    for (before, after) in [
        ("x86_64", "x86_64-apple-darwin"),
        ("x86_64", "aarch64"),
        ("aarch64-apple-darwin", "x86_64-apple-darwin"),
    ] {
        let (b, a) = (basic_object(before), basic_object(after));
        let err = diff_objects(&b, &a)
            .expect_err("two targets diffed")
            .to_string();
        assert!(
            err.contains("different targets"),
            "{before} vs {after}: {err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let (bp, ap) = (dir.path().join("before.o"), dir.path().join("after.o"));
        std::fs::write(&bp, &b).unwrap();
        std::fs::write(&ap, &a).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_clif-merge"))
            .arg("diff")
            .args([&bp, &ap])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{before} vs {after}: {stderr}");
        assert!(out.stdout.is_empty());
        assert!(stderr.contains("before.o (before)"), "{stderr}");
    }
}
