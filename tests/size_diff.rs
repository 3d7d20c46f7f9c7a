//! `clif-merge diff BEFORE.o AFTER.o` agrees with binutils: its text totals with `size -A`'s
//! text sections, its symbol totals and every symbol's bytes with `nm -S` (each address once:
//! aliases share their target's code; `readelf -sW` says which symbols share a place). Objects of modgen modules, unmerged and merged, ELF for
//! x86_64 and aarch64, with and without function sections; Mach-O objects add up to their
//! text sections too. Skipped with a note where `size` or `nm` is missing (Debian package
//! `binutils`).

mod common;

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::sizes::{PADDING_ROW, diff_objects};
use clif_merge::{ClifModule, MergeOptions, Mode};
use common::generator::pseudo_random_choices;
use common::modgen::{ModGenConfig, generate_module};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

fn object_options(target: &str, mode: Mode, function_sections: bool) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections,
        mode,
        fold_machine_code: true,
    }
}

/// The module unmerged and merged (`mode`), as objects.
fn before_and_after(
    module: &ClifModule,
    target: &str,
    mode: Mode,
    function_sections: bool,
) -> (Vec<u8>, Vec<u8>) {
    let options = object_options(target, mode, function_sections);
    let unmerged = ObjectOptions {
        fold_machine_code: false,
        ..options.clone()
    };
    let before = write_object(module, 0, &unmerged).unwrap().bytes;
    let pipeline = PipelineOptions {
        merge: MergeOptions {
            mode,
            ..MergeOptions::default()
        },
        object: Some(options),
        ..Default::default()
    };
    let after = run(module.clone(), &pipeline)
        .unwrap()
        .object
        .unwrap()
        .bytes;
    (before, after)
}

fn tool(name: &str) -> bool {
    let found = Command::new(name).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs {name} (binutils)"
        );
        let _ = writeln!(std::io::stderr(), "note: skipping: {name} is not installed");
    }
    found
}

fn run_tool(name: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(name).args(args).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `size -A`: the bytes of the sections named `.text` or `.text.*`.
fn size_text(file: &Path) -> u64 {
    run_tool("size", &["-A"], file)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, size) = (words.next()?, words.next()?);
            (name == ".text" || name.starts_with(".text.")).then(|| size.parse::<u64>().ok())?
        })
        .sum()
}

/// `nm -S --size-sort`: every function symbol's bytes, the symbols at one place counted once
/// under the first name — diff's rule for aliases; the places (section index and value) come
/// from `readelf -sW`, since `nm` names every function section alike. Returns (name to bytes,
/// their sum).
fn nm_symbols(file: &Path) -> (BTreeMap<String, u64>, u64) {
    let mut size_of = BTreeMap::new();
    for line in run_tool("nm", &["-S", "--size-sort", "--defined-only"], file).lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [_, size, kind, name] = words[..]
            && matches!(kind, "t" | "T" | "w" | "W")
        {
            size_of.insert(name.to_string(), u64::from_str_radix(size, 16).unwrap());
        }
    }
    let mut by_place: BTreeMap<(String, u64), Vec<String>> = BTreeMap::new();
    for line in run_tool("readelf", &["-sW"], file).lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if let [_, value, _, "FUNC", _, _, ndx, name] = words[..]
            && ndx != "UND"
        {
            let value = u64::from_str_radix(value, 16).unwrap();
            by_place
                .entry((ndx.to_string(), value))
                .or_default()
                .push(name.to_string());
        }
    }
    let mut symbols = BTreeMap::new();
    let mut total = 0;
    for mut names in by_place.into_values() {
        names.sort();
        for (at, name) in names.into_iter().enumerate() {
            // nm leaves out symbols of size 0 with --size-sort.
            let size = size_of.get(&name).copied().unwrap_or(0);
            let bytes = if at == 0 { size } else { 0 };
            total += bytes;
            symbols.insert(name, bytes);
        }
    }
    (symbols, total)
}

/// The `[symbols]` and `[text sections]` rows of `clif-merge diff`'s output: (before, after).
fn diff_totals(before: &Path, after: &Path) -> BTreeMap<String, (u64, u64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .arg("diff")
        .arg(before)
        .arg(after)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter(|l| l.trim_end().ends_with(']'))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let row = words[3..].join(" ");
            (row, (words[0].parse().unwrap(), words[1].parse().unwrap()))
        })
        .collect()
}

fn modules() -> Vec<ClifModule> {
    let mut seed = 0xd1ff_u64;
    (0..3)
        .map(|case| {
            let config = if case % 2 == 0 {
                ModGenConfig::native(cranelift_codegen::isa::CallConv::SystemV)
            } else {
                ModGenConfig::interpreter()
            };
            generate_module(&pseudo_random_choices(&mut seed, 4096), &config).module()
        })
        .collect()
}

#[test]
fn diff_agrees_with_size_and_nm_on_elf() {
    if !tool("size") || !tool("nm") || !tool("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (before_path, after_path) = (dir.path().join("before.o"), dir.path().join("after.o"));
    for (case, module) in modules().iter().enumerate() {
        for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
            for mode in [Mode::Safe, Mode::Aliases] {
                for function_sections in [false, true] {
                    let what = format!("case {case} {target} {mode:?} fs={function_sections}");
                    let (before, after) = before_and_after(module, target, mode, function_sections);
                    std::fs::write(&before_path, &before).unwrap();
                    std::fs::write(&after_path, &after).unwrap();
                    let totals = diff_totals(&before_path, &after_path);
                    let sections = (size_text(&before_path), size_text(&after_path));
                    assert_eq!(totals["[text sections]"], sections, "{what}: size -A");
                    let (nm_before, nm_before_total) = nm_symbols(&before_path);
                    let (nm_after, nm_after_total) = nm_symbols(&after_path);
                    assert_eq!(
                        totals["[symbols]"],
                        (nm_before_total, nm_after_total),
                        "{what}: nm"
                    );
                    let diff = diff_objects(&before, &after).unwrap();
                    for s in diff.symbols.iter().filter(|s| s.name != PADDING_ROW) {
                        assert_eq!(
                            s.before,
                            nm_before.get(&s.name).copied(),
                            "{what}: {}",
                            s.name
                        );
                        assert_eq!(
                            s.after,
                            nm_after.get(&s.name).copied(),
                            "{what}: {}",
                            s.name
                        );
                    }
                }
            }
        }
    }
}

/// Mach-O records no symbol sizes: a symbol's bytes reach to the next one, and the rows add up
/// to the text sections exactly.
#[test]
fn diff_rows_add_up_to_the_text_sections_on_macho() {
    for module in modules() {
        for target in ["x86_64-apple-darwin", "aarch64-apple-darwin"] {
            let (before, after) = before_and_after(&module, target, Mode::Aliases, false);
            let diff = diff_objects(&before, &after).unwrap();
            let sum = |f: fn(&clif_merge::sizes::SymbolChange) -> Option<u64>| -> u64 {
                diff.symbols.iter().filter_map(f).sum()
            };
            assert_eq!(sum(|s| s.before), diff.text_before, "{target}");
            assert_eq!(sum(|s| s.after), diff.text_after, "{target}");
            let text = |b: &[u8]| clif_merge::emit::object::text_bytes(b).unwrap();
            assert_eq!(
                (diff.text_before, diff.text_after),
                (text(&before), text(&after))
            );
        }
    }
}

/// What is not an object is refused with its name, exit status 1.
#[test]
fn diff_refuses_what_is_not_an_object() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("m.clif");
    std::fs::write(&text, "function %f() {\nblock0:\n    return\n}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .arg("diff")
        .arg(&text)
        .arg(&text)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("m.clif: not an ELF or Mach-O object"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
