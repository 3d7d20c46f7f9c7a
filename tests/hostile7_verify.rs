//! Hostile inputs for `--verify` (seventh pass), against the sixth pass's fixes: address slots
//! per side, aliases checked by their own names, import calls that clobber memory and are
//! sequenced with stores, aligned stack slots and guided `fcmp`s. A wrong merge is planted by
//! hand (a module the merge did not write, checked against the report of the real merge); a
//! correct merge is the real one, which must pass.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, MergeReport, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// The report of merging `original` in `mode`, and the module the merge writes.
fn merged(original: &ClifModule, mode: Mode) -> (MergeReport, ClifModule) {
    let mut merged = original.clone();
    let report = merge_module(&mut merged, mode).0;
    (report, merged)
}

/// Whether `verify_merge` passes `wrong` as a merge of `original` with the report of merging
/// `original` in `mode`, with its summary.
fn passes(original: &str, wrong: &str, mode: Mode) -> (bool, String) {
    let original = read(original);
    let (report, _) = merged(&original, mode);
    let checked = verify_merge(&original, &read(wrong), &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary())
}

/// Whether the real merge of `original` in `mode` passes `verify_merge`, with its summary and
/// how many functions it merged.
fn real_merge_passes(original: &str, mode: Mode) -> (bool, String, usize) {
    let original = read(original);
    let (report, merged) = merged(&original, mode);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary(), report.merged)
}

/// `%f` and `%g` with bodies `f_body` and `g_body` (the rest of the module `rest`), and the
/// module with `%g` given `f_body` (nothing merged): whether `verify_merge` passes it.
fn planted(sig: &str, f_body: &str, g_body: &str, rest: &str) -> (bool, String) {
    let module = |g: &str| {
        format!("function %f{sig} {{\n{f_body}\n}}\n\nfunction %g{sig} {{\n{g}\n}}\n{rest}")
    };
    let original = module(g_body);
    let report = merged(&read(&original), Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    passes(&original, &module(f_body), Mode::Aliases)
}

// ---------------------------------------------------------------------------------------------
// Import calls and memory.

/// A slot's address given to an import, and the slot loaded after the call against before it:
/// natively the import may write the slot (it has its address), so the two differ. `--verify`
/// clobbers memory outside the caller's frames only: the slot reads the same in both orders.
#[test]
#[ignore = "defect: a load of a stack slot whose address an import received, moved across the call, passes --verify (stack memory is not clobbered)"]
fn verify_reports_a_load_of_an_escaped_stack_slot_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0(v2)";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64) -> i64", &body(true), &body(false), "");
    assert!(
        !ok,
        "a load of an escaped slot moved across an import call passes: {summary}"
    );
}

/// The same slot, its address given to the import through memory (stored in a heap word the
/// import can read), then loaded on the other side of the call.
#[test]
#[ignore = "defect: a load of a stack slot whose address escaped through memory, moved across an import call, passes --verify"]
fn verify_reports_a_load_of_a_stack_slot_escaped_through_memory_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0()";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill() -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n    store.i64 notrap aligned v2, v1\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(
        !ok,
        "a load of an escaped slot moved across an import call passes: {summary}"
    );
}

/// A store to an escaped slot moved across the import call is another sequence of stores and
/// calls: found (held).
#[test]
fn verify_reports_a_store_to_an_escaped_stack_slot_moved_across_an_import_call() {
    let body = |store_first: bool| {
        let store = "    store.i64 notrap aligned v1, v2";
        let call = "    v4 = call fn0(v2)";
        let (first, second) = if store_first {
            (store, call)
        } else {
            (call, store)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v3 = load.i64 notrap aligned v2\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(!ok, "a store moved across an import call passes: {summary}");
}

/// A load of a heap word through a pointer loaded from a parameter, moved across an import
/// call that gets neither: natively the import may still write it (any memory outside the
/// frames). Found (held).
#[test]
fn verify_reports_a_load_of_unrelated_memory_moved_across_an_argumentless_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i32 notrap aligned v0+16";
        let call = "    v4 = call fn0()";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    fn0 = %tick() -> i32\nblock0(v0: i64):\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64) -> i32", &body(true), &body(false), "");
    assert!(!ok, "a load moved across an import call passes: {summary}");
}
