//! `VerifyOptions::module_calls` compares the arguments of calls into the module (`src/verify/module_calls.rs`): a
//! merged body that passes another value to a function of the module is wrong even where the
//! callee's use of it lies past a test of memory no run passes. And a right merge's forwarders
//! (exact thunks, similar members' thunks, callers redirected to a shared body with extra
//! arguments) add no call the original does not make.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::ClifModule;
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{MergeOptions, Mode, SimilarOptions, merge_module_with_options};
use wrong_merges::{merged, read};

/// The check with calls into the module compared (`VerifyOptions::module_calls`).
fn with_calls() -> VerifyOptions {
    VerifyOptions {
        module_calls: true,
        ..VerifyOptions::default()
    }
}

/// Whether the real merge of `text` in `mode` passes the check with calls compared, with its
/// summary and how many functions it merged.
fn real_merge_passes(text: &str, mode: Mode) -> (bool, String, usize) {
    let original = read(text);
    let (report, merged) = merged(&original, mode);
    let checked = verify_merge(&original, &merged, &report, &with_calls());
    (checked.is_ok(), checked.summary(), report.merged)
}

/// `%leaf(p, k)`: `k` when the word at `p`, times an odd constant, is 0x1234 — a word no fill
/// of memory nothing stored to holds, and no steering reaches through the multiplication —
/// else 0. So it returns 0 on every run, whatever `k`.
const LEAF: &str = "
function %leaf(i64, i64) -> i64 {
block0(v0: i64, v1: i64):
    v2 = load.i64 v0
    v6 = iconst.i64 0x9e37_79b9_7f4a_7c15
    v3 = imul v2, v6
    v7 = iconst.i64 0x1234
    v4 = icmp eq v3, v7
    brif v4, block1, block2
block1:
    return v1
block2:
    v5 = iconst.i64 0
    return v5
}
";

/// A body of `(i64) -> i64` passing its pointer and `k` to `%leaf`.
fn calls_leaf_with(k: i64) -> String {
    format!(
        "    fn0 = %leaf(i64, i64) -> i64\nblock0(v0: i64):\n    v1 = iconst.i64 {k}\n    \
         v2 = call fn0(v0, v1)\n    return v2"
    )
}

/// `%if_clear(p, k)`: `k` when the word at `p` is 0, else 0.
const IF_CLEAR: &str = "
function %if_clear(i64, i64) -> i64 {
block0(v0: i64, v1: i64):
    v2 = load.i64 v0
    brif v2, block2, block1
block1:
    return v1
block2:
    v3 = iconst.i64 0
    return v3
}
";

/// A body of `(i64, i64) -> i64` that stores 1 at its pointer — unless its second argument,
/// times an odd constant, is 0x1234 (no argument of the check's, steered or not) — then
/// passes the pointer and `k` to `%if_clear`. So every run sees 0 returned whatever `k`, but
/// on memory that reads 0, the one argument no run takes returns `k`.
fn clears_then_calls_with(k: i64) -> String {
    format!(
        "    fn0 = %if_clear(i64, i64) -> i64\n\
         block0(v0: i64, v1: i64):\n    v2 = iconst.i64 0x9e37_79b9_7f4a_7c15\n    \
         v3 = imul v1, v2\n    v4 = iconst.i64 0x1234\n    v5 = icmp eq v3, v4\n    \
         brif v5, block2, block1\n\
         block1:\n    v6 = iconst.i64 1\n    store v6, v0\n    jump block2\n\
         block2:\n    v7 = iconst.i64 {k}\n    v8 = call fn0(v0, v7)\n    return v8"
    )
}

/// A module of `%f` and `%g` (of `body(k)`, `body(k_g)`) and `callees`, merged in aliases mode
/// as the original (`k_g` = 8) is, then with `%g`'s body put back with `k` = 7: a merge that
/// wrongly took `%f` for `%g`.
fn wrong_merge(
    body: fn(i64) -> String,
    k_g: i64,
    callees: &str,
) -> (ClifModule, ClifModule, clif_merge::MergeReport) {
    let module = |g: &str| format!("function %f{}\n\nfunction %g{g}\n{callees}", body(7));
    let original = read(&module(&body(k_g)));
    let report = merged(&original, Mode::Aliases).0;
    let wrong: ClifModule = read(&module(&body(7)));
    (original, wrong, report)
}

#[test]
fn another_argument_to_a_module_function_is_reported() {
    // What the mismatch says: the call, not an outcome (every run returns 0 on both sides):
    // `%if_clear`, run alone on both calls' arguments, returns 8 and 7 where memory reads 0.
    let body = |k| format!("(i64, i64) -> i64 {{\n{}\n}}", clears_then_calls_with(k));
    let (original, wrong, report) = wrong_merge(body, 8, IF_CLEAR);
    let unseen = verify_merge(
        &original,
        &wrong,
        &report,
        &VerifyOptions {
            module_calls: false,
            ..VerifyOptions::default()
        },
    );
    assert!(unseen.is_ok(), "{}", unseen.summary());
    let checked = verify_merge(&original, &wrong, &report, &with_calls());
    let first = checked.mismatches.first().expect("a mismatch").to_string();
    assert!(first.contains("calls into the module differ"), "{first}");
    assert!(
        first.contains("i64 8") && first.contains("i64 7"),
        "{first}"
    );
}

#[test]
fn another_argument_no_memory_shows_is_not_reported() {
    // `%leaf` returns `k` only on memory no fill gives: run alone on both calls' arguments, it
    // returns 0 on each; and a callee that never looks at the argument: the two sides' calls
    // differ in bits the callee's demanded bits see, but nothing the check runs tells them
    // apart, so no mismatch (a callee may hide a difference as no analysis sees).
    let leaf = |k| format!("(i64) -> i64 {{\n{}\n}}", calls_leaf_with(k));
    let (original, wrong, report) = wrong_merge(leaf, 8, LEAF);
    let checked = verify_merge(&original, &wrong, &report, &with_calls());
    assert!(checked.is_ok(), "{}", checked.summary());
    let times_zero = "
function %times_zero(i64, i64) -> i64 {
block0(v0: i64, v1: i64):
    v2 = iconst.i64 0
    v3 = imul v1, v2
    v4 = iadd v0, v3
    return v4
}
";
    let body = |k| {
        format!(
            "(i64) -> i64 {{\n    fn0 = %times_zero(i64, i64) -> i64\nblock0(v0: i64):\n    \
             v1 = iconst.i64 {k}\n    v2 = call fn0(v0, v1)\n    return v2\n}}"
        )
    };
    let (original, wrong, report) = wrong_merge(body, 8, times_zero);
    let checked = verify_merge(&original, &wrong, &report, &with_calls());
    assert!(checked.is_ok(), "{}", checked.summary());
}

#[test]
fn an_exact_merge_through_thunks_adds_no_call() {
    // `%f` and `%g` are the same; `%g` is exported, so safe mode makes it a thunk to `%f`,
    // and `%main` calls it: the merged side's call of `%g` goes on to `%f`.
    let text = format!(
        "function %f(i64) -> i64 {{\n{body}\n}}\n\nfunction %g(i64) -> i64 {{\n{body}\n}}\n\n\
         function %main(i64) -> i64 {{\n    fn0 = %g(i64) -> i64\n\
         block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = iadd v1, v0\n    return v2\n}}\n{LEAF}",
        body = calls_leaf_with(7)
    );
    for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
        let (ok, summary, merged) = real_merge_passes(&text, mode);
        assert_eq!(merged, 1, "{mode:?}");
        assert!(ok, "{mode:?}: {summary}");
    }
}

#[test]
fn a_similar_merge_adds_no_call_whatever_it_passes() {
    // `%a` and `%b` differ in a constant: one shared body takes it as a parameter. Local
    // members are removed and `%main`'s calls of them pass the constant to the shared body;
    // exported ones become thunks passing it.
    for linkage in ["local", "export"] {
        let member = |name: &str, k: i64| {
            format!(
                "; linkage: %{name} {linkage}\nfunction %{name}(i64) -> i64 {{\n    fn0 = %leaf(i64, i64) -> i64\n\
                 block0(v0: i64):\n    v1 = iconst.i64 {k}\n    v2 = call fn0(v0, v1)\n    \
                 v3 = imul v2, v0\n    v4 = iadd v3, v1\n    v5 = call fn0(v4, v2)\n    \
                 v6 = iadd v5, v1\n    return v6\n}}\n\n"
            )
        };
        let text = member("a", 3)
            + &member("b", 5)
            + "function %main(i64) -> i64 {\n    fn0 = %a(i64) -> i64\n    fn1 = %b(i64) -> i64\n\
               block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = call fn1(v1)\n    return v2\n}\n"
            // A forwarder of a member: its call of a removed member passes the shared body's
            // extra arguments, and it still forwards.
            + "function %forwards(i64) -> i64 {\n    fn0 = %b(i64) -> i64\n\
               block0(v0: i64):\n    v1 = call fn0(v0)\n    return v1\n}\n"
            + LEAF;
        let original = read(&text);
        let similar = SimilarOptions {
            min_saving: i64::MIN / 2,
            ..SimilarOptions::default()
        };
        for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
            let mut merged = original.clone();
            let options = MergeOptions {
                mode,
                similar: Some(similar.clone()),
                ..MergeOptions::default()
            };
            let (report, _) = merge_module_with_options(&mut merged, &options);
            let groups = report.similar.as_ref().map_or(0, Vec::len);
            assert_eq!(groups, 1, "{mode:?}: the two members share a body");
            let checked = verify_merge(&original, &merged, &report, &with_calls());
            assert!(checked.is_ok(), "{mode:?}: {}", checked.summary());
        }
    }
}
