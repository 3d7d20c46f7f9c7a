//! hostile15: the shared body of global merging is named after the build, for every code
//! generation flag a unit may be compiled with: the optimization level, probestack, frame
//! pointers, unwind info, ISA features (`has_avx`, `--target-cpu native`), and aarch64's
//! return address signing (either key) and BTI. Units built with any two of these must never
//! define one symbol (the linker would keep one unit's code for both), while the same flags,
//! spelled out or left at `-o`'s default, give the same symbol (the check can fail).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

const UNIT: &str = "function %x(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 7
    v2 = imul v0, v1
    v3 = iconst.i64 5
    v4 = iadd v2, v3
    return v4
}
";

fn run(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
}

/// The `clifmerge_` symbol the unit's object defines when compiled with `flags`.
fn shared_symbol(dir: &Path, flags: &[&str]) -> String {
    use object::{Object as _, ObjectSymbol as _};
    let args = [
        &["unit.clif", "--summary", "all.sum", "-o", "unit.o"][..],
        flags,
    ]
    .concat();
    run(dir, &args);
    let bytes = std::fs::read(dir.join("unit.o")).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let names: Vec<String> = file
        .symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| n.starts_with("clifmerge_"))
        .collect();
    assert_eq!(names.len(), 1, "{flags:?}: {names:?}");
    names[0].clone()
}

/// Each build's symbol; builds that must agree are checked here, every other pair must differ.
fn symbols_of(target: &str, builds: &[&[&str]], same_as_default: &[&[&str]]) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("unit.clif"), UNIT).unwrap();
    std::fs::write(dir.join("twin.clif"), UNIT.replace("%x", "%y")).unwrap();
    run(dir, &["summarize", "unit.clif", "-o", "unit.sum"]);
    run(dir, &["summarize", "twin.clif", "-o", "twin.sum"]);
    run(dir, &["combine", "unit.sum", "twin.sum", "-o", "all.sum"]);
    let default = shared_symbol(dir, &["--target", target]);
    for flags in same_as_default {
        assert_eq!(
            shared_symbol(dir, &[&["--target", target][..], flags].concat()),
            default,
            "{flags:?}"
        );
    }
    let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    seen.insert(default, vec!["(default)"]);
    for flags in builds {
        let symbol = shared_symbol(dir, &[&["--target", target][..], flags].concat());
        if let Some(other) = seen.insert(symbol, flags.to_vec()) {
            panic!("{target}: {flags:?} and {other:?} define one shared body symbol");
        }
    }
}

#[test]
fn every_x86_64_codegen_flag_names_its_own_shared_body() {
    symbols_of(
        "x86_64",
        &[
            &["--opt-level", "none"],
            &["--opt-level", "speed_and_size"],
            &[
                "--set",
                "enable_probestack",
                "--set",
                "probestack_strategy=inline",
            ],
            &["--set", "preserve_frame_pointers=false"],
            &["--set", "unwind_info=false"],
            &["--set", "has_avx"],
            &["--set", "has_avx", "--set", "has_avx2"],
            &["--target-cpu", "native"],
        ],
        &[&["--opt-level", "speed"], &["--target-cpu", "baseline"]],
    );
}

#[test]
fn every_aarch64_codegen_flag_names_its_own_shared_body() {
    symbols_of(
        "aarch64",
        &[
            &["--opt-level", "none"],
            &["--set", "sign_return_address"],
            &[
                "--set",
                "sign_return_address",
                "--set",
                "sign_return_address_with_bkey",
            ],
            &["--set", "use_bti"],
            &["--set", "preserve_frame_pointers=false"],
            &[
                "--set",
                "enable_probestack",
                "--set",
                "probestack_strategy=inline",
            ],
        ],
        // `-o` preserves frame pointers already.
        &[&["--set", "preserve_frame_pointers=true"]],
    );
}
