//! The driver on synthetic modules with planted duplicate classes: the classes it finds must be
//! exactly the planted ones.
//!
//! - Modules of the project's own generator (`tests/common`): random functions, each made
//!   distinct, and renumbered copies of some. Always run.
//! - Modules of `../shared/tools/genmod.py` (`X.expect.json`, `classes[].members`), which also
//!   plants recursive groups. `../shared` is not part of the repository: without it these tests
//!   print why they skip, except under CI (the environment variable `CI` set), where they fail.
//!
//! The 1k-function tests run with every `cargo test` (genmod's need `python3`). The large ones
//! are ignored by default:
//!
//!     cargo test --release --test scale -- --ignored

mod common;

use common::r#gen::{Choices, GenConfig, generate_with, pseudo_random_choices};
use common::genmod::{generate, genmod};
use common::mutate::renumber;
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::{InstBuilder, UserFuncName, types::I64};

use clif_merge::merge::find_classes;
use clif_merge::{ClifModule, Mode, PassTimes, ReadOptions, SymbolLinkage, read_files};
use std::collections::BTreeSet;
use std::path::Path;

/// A class as a sorted list of names without `%`.
type Class = Vec<String>;

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
    classes_of(&module)
}

fn classes_of(module: &ClifModule) -> BTreeSet<Class> {
    let classes = find_classes(module, Mode::Safe, &mut PassTimes::default());
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

/// Generates a module with genmod and checks that the classes found are exactly the planted
/// ones.
fn check(args: &[&str]) {
    let Some(genmod) = genmod() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (clif, expect, line) = generate(&genmod, dir.path(), args);
    let planted = planted_classes(&expect);
    let found = found_classes(&clif);
    assert_same_classes(found, planted, &line);
}

/// A module of `n` distinct random functions (`b<i>`; each holds a dead `iconst` of its own
/// index, so no two are equal) where about `dup_percent` of them have one to three renumbered
/// copies (`b<i>_c<k>`); returns it with the planted classes.
fn own_module(n: usize, dup_percent: u32, seed: u64) -> (ClifModule, BTreeSet<Class>) {
    let mut seed = seed;
    let mut module = ClifModule::new();
    let mut planted = BTreeSet::new();
    for i in 0..n {
        let data = pseudo_random_choices(&mut seed, 512);
        let mut ch = Choices::new(&data);
        let name = format!("b{i}");
        let config = GenConfig {
            name: UserFuncName::testcase(&name),
            ..GenConfig::default()
        };
        let mut func = generate_with(&mut ch, &config);
        let entry = func.layout.entry_block().unwrap();
        let mut pos = FuncCursor::new(&mut func);
        pos.goto_first_insertion_point(entry);
        pos.ins().iconst(I64, i as i64);
        let mut class = vec![name.clone()];
        if ch.chance(dup_percent) {
            for k in 0..1 + ch.below(3) {
                let mut copy = renumber(&func, &mut ch);
                let copy_name = format!("{name}_c{k}");
                copy.name = UserFuncName::testcase(&copy_name);
                module.define(copy, SymbolLinkage::Export, None).unwrap();
                class.push(copy_name);
            }
            class.sort();
            planted.insert(class);
        }
        module.define(func, SymbolLinkage::Export, None).unwrap();
    }
    (module, planted)
}

#[test]
fn planted_classes_own_generator_1k() {
    let (module, planted) = own_module(1000, 30, 0x5ca1e);
    assert!(planted.len() > 200, "{} classes planted", planted.len());
    assert_same_classes(classes_of(&module), planted, "own generator, 1k");
}

fn assert_same_classes(found: BTreeSet<Class>, planted: BTreeSet<Class>, line: &str) {
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
