//! The driver on synthetic modules from `../shared/tools/genmod.py`: the classes it finds must be
//! exactly the duplicate classes genmod planted (`X.expect.json`, `classes[].members`).
//!
//! The 1k-function tests run with every `cargo test` (they need `python3`). The large ones are
//! ignored by default:
//!
//!     cargo test --release --test scale -- --ignored

use clif_merge::merge::find_classes;
use clif_merge::{Mode, PassTimes, ReadOptions, read_files};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A class as a sorted list of names without `%`.
type Class = Vec<String>;

/// Runs genmod with `args` into `dir`; returns the `.clif` and `.expect.json` paths and the
/// command line (for messages).
fn generate(dir: &Path, args: &[&str]) -> (PathBuf, PathBuf, String) {
    let genmod = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/genmod.py");
    let clif = dir.join("m.clif");
    let ll = dir.join("m.ll");
    let expect = dir.join("m.expect.json");
    let mut cmd = Command::new("python3");
    cmd.arg(&genmod)
        .args(args)
        .arg("--out-ll")
        .arg(&ll)
        .arg("--out-clif")
        .arg(&clif)
        .arg("--out-expect")
        .arg(&expect);
    let line = format!("python3 ../shared/tools/genmod.py {}", args.join(" "));
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{line}` (python3 is needed): {e}"));
    assert!(
        out.status.success(),
        "`{line}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (clif, expect, line)
}

fn planted_classes(expect: &Path) -> BTreeSet<Class> {
    let text = std::fs::read_to_string(expect).expect("read expect.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("parse expect.json");
    json["classes"]
        .as_array()
        .expect("classes[] in expect.json")
        .iter()
        .map(|c| {
            let mut members: Class = c["members"]
                .as_array()
                .expect("classes[].members")
                .iter()
                .map(|m| m.as_str().expect("member name").to_string())
                .collect();
            members.sort();
            members
        })
        .collect()
}

fn found_classes(clif: &Path) -> BTreeSet<Class> {
    let module =
        read_files(&[clif.to_path_buf()], ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let classes = find_classes(&module, Mode::Safe, &mut PassTimes::default());
    classes
        .classes
        .iter()
        .map(|class| {
            let mut members: Class = class
                .iter()
                .map(|&id| {
                    let name = module.function(id).name.to_string();
                    name.strip_prefix('%').unwrap_or(&name).to_string()
                })
                .collect();
            members.sort();
            members
        })
        .collect()
}

/// Generates a module and checks that the classes found are exactly the planted ones.
fn check(args: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (clif, expect, line) = generate(dir.path(), args);
    let planted = planted_classes(&expect);
    let found = found_classes(&clif);
    if found == planted {
        assert!(!planted.is_empty(), "`{line}` planted no classes");
        return;
    }
    let missed: Vec<&Class> = planted.difference(&found).collect();
    let extra: Vec<&Class> = found.difference(&planted).collect();
    let show = |classes: &[&Class]| {
        classes
            .iter()
            .take(20)
            .map(|c| format!("    {{{}}}\n", c.join(", ")))
            .collect::<String>()
    };
    panic!(
        "classes differ from the planted ones for `{line}`\n\
         found {} classes, planted {}\n\
         planted but not found ({}, first 20):\n{}\
         found but not planted ({}, first 20):\n{}",
        found.len(),
        planted.len(),
        missed.len(),
        show(&missed),
        extra.len(),
        show(&extra)
    );
}

#[test]
fn planted_classes_1k() {
    check(&["--functions", "1000", "--dup-rate", "0.3", "--seed", "1"]);
}

#[test]
fn planted_classes_1k_recursive() {
    check(&[
        "--functions",
        "1000",
        "--dup-rate",
        "0.3",
        "--seed",
        "1",
        "--recursive-frac",
        "0.2",
    ]);
}

#[test]
#[ignore = "large: cargo test --release --test scale -- --ignored"]
fn planted_classes_10k() {
    check(&["--functions", "10000", "--dup-rate", "0.3", "--seed", "1"]);
}

#[test]
#[ignore = "large: cargo test --release --test scale -- --ignored"]
fn planted_classes_10k_recursive() {
    check(&[
        "--functions",
        "10000",
        "--dup-rate",
        "0.3",
        "--seed",
        "2",
        "--recursive-frac",
        "0.2",
    ]);
}

#[test]
#[ignore = "large: cargo test --release --test scale -- --ignored"]
fn planted_classes_100k() {
    check(&["--functions", "100000", "--dup-rate", "0.3", "--seed", "1"]);
}

#[test]
#[ignore = "large: cargo test --release --test scale -- --ignored"]
fn planted_classes_100k_recursive() {
    check(&[
        "--functions",
        "100000",
        "--dup-rate",
        "0.3",
        "--seed",
        "3",
        "--recursive-frac",
        "0.2",
    ]);
}
