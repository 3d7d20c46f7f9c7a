//! hostile9: the batch API's promise that the result does not depend on the order of the
//! entries, with exact and similar merging (forced, so that groups form), in every mode, on a
//! genmod module with duplicates, near-duplicates and caller classes (`../shared`, skipped with
//! a note without it): the entries in file order, reversed, and rotated give each key the same
//! decision (thunks and private copies compared as CLIF text).

#[path = "common/genmod.rs"]
mod genmod;

use clif_merge::batch::{Body, Decision, Entry, Merged, merge_functions_with};
use clif_merge::{MergeOptions, Mode, SimilarOptions, SymbolLinkage};
use cranelift_codegen::ir::Function;
use std::collections::BTreeMap;

/// Each key's decision as text: a function compiled is its CLIF, a body in a private copy is
/// that copy's CLIF (its index depends on nothing the embedder sees).
fn decisions(merged: &Merged<usize>) -> BTreeMap<usize, String> {
    let body = |b: &Body<usize>| match b {
        Body::Entry(k) => format!("entry {k}"),
        Body::PrivateCopy(i) => format!("copy {}", merged.private_copies[*i]),
    };
    (merged.decisions.iter())
        .map(|(k, d)| {
            let text = match d {
                Decision::Compile(f) => format!("compile {f}"),
                Decision::AliasOf(b) => format!("alias of {}", body(b)),
                Decision::Removed(b) => format!("removed for {}", body(b)),
            };
            (*k, text)
        })
        .collect()
}

fn merge(funcs: &[Function], order: &[usize], options: &MergeOptions) -> BTreeMap<usize, String> {
    let entries: Vec<Entry<usize>> = (order.iter())
        .map(|&key| Entry {
            key,
            func: &funcs[key],
            linkage: if key % 3 == 0 {
                SymbolLinkage::Local
            } else {
                SymbolLinkage::Export
            },
        })
        .collect();
    decisions(&merge_functions_with(&entries, options).expect("the batch merges"))
}

#[test]
fn batch_decisions_do_not_depend_on_the_order_of_the_entries() {
    let Some(genmod) = genmod::genmod() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--functions",
        "120",
        "--dup-rate",
        "0.3",
        "--near-rate",
        "0.3",
        "--transitive-frac",
        "0.3",
        "--seed",
        "9",
    ];
    let (clif, _, line) = genmod::generate(&genmod, dir.path(), &args);
    let text = std::fs::read_to_string(&clif).unwrap();
    let funcs = cranelift_reader::parse_functions(&text).expect(&line);
    let n = funcs.len();
    let forward: Vec<usize> = (0..n).collect();
    let backward: Vec<usize> = (0..n).rev().collect();
    let rotated: Vec<usize> = (0..n).map(|i| (i + n / 3) % n).collect();
    let forced = SimilarOptions {
        min_saving: i64::MIN / 2,
        ..SimilarOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(forced.clone())] {
            let options = MergeOptions {
                mode,
                similar: similar.clone(),
                ..MergeOptions::default()
            };
            let first = merge(&funcs, &forward, &options);
            // Entries merged away, and entries compiled as thunks or bodies of a private copy.
            let away = first.values().filter(|d| !d.starts_with("compile")).count();
            let thunks = first.values().filter(|d| d.contains("call fn")).count();
            assert!(away + thunks > 0, "{line}: something merges");
            for order in [&backward, &rotated] {
                let other = merge(&funcs, order, &options);
                let differ: Vec<usize> = (0..n).filter(|k| first[k] != other[k]).collect();
                assert!(
                    differ.is_empty(),
                    "{line}, {mode:?}, similar {}: keys {differ:?} decided otherwise, e.g.\n{}\n--- against ---\n{}",
                    similar.is_some(),
                    first[&differ[0]],
                    other[&differ[0]]
                );
            }
        }
    }
}
