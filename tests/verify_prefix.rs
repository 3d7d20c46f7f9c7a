//! `--verify` on runs that do not end: what the original stored or called before its fuel ran
//! out is what it did, so the merged side must do the same up to there (`prefix_parts_ways` in
//! `src/verify/mod.rs`). Before, such a run was compared in nothing, and a wrong merge whose
//! every run enters a long loop passed (the corpus's mutation check: a loop's start corrupted
//! in a shared body, each pass of it storing elsewhere).

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, verify_merge};
use wrong_merges::{merged, read};

/// A short fuel: every run here takes all of it.
fn short() -> VerifyOptions {
    VerifyOptions {
        fuel: 2_000,
        ..VerifyOptions::default()
    }
}

/// A loop that never ends, each pass storing its counter at `%buf + offset` (a data symbol,
/// always mapped) and adding `x`.
fn endless_stores(offset: u32) -> String {
    format!(
        "    gv0 = symbol %buf
block0(v0: i64):
    v1 = symbol_value.i64 gv0
    v2 = iconst.i64 0
    jump block1(v2)
block1(v3: i64):
    store v3, v1+{offset}
    v4 = iadd v3, v0
    jump block1(v4)"
    )
}

/// `%g` storing elsewhere than `%f` from the loop's first pass, "merged" into `%f`: no run of
/// either ends, and the first store tells them apart.
#[test]
fn a_wrong_merge_whose_runs_never_end_is_reported_by_what_they_stored() {
    let module = |g: &str| {
        format!(
            "function %f(i64) {{\n{}\n}}\n\nfunction %g(i64) {{\n{g}\n}}\n",
            endless_stores(0)
        )
    };
    let original = read(&module(&endless_stores(8)));
    let (report, _) = merged(&original, Mode::Aliases);
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    let checked = verify_merge(
        &original,
        &read(&module(&endless_stores(0))),
        &report,
        &short(),
    );
    assert!(
        !checked.is_ok(),
        "the wrong merge passed: {}",
        checked.summary()
    );
    assert_eq!(
        checked.runs,
        checked.inconclusive,
        "no run ended: {}",
        checked.summary()
    );
}

/// `%f`, whose runs store on and never end, given `%g`'s body, which traps at once: the merged
/// side ended having done less than the original did before it stopped.
#[test]
fn a_wrong_merge_that_ends_where_the_original_goes_on_is_reported() {
    let traps = "block0(v0: i64):\n    trap user1";
    let module =
        |f: &str| format!("function %f(i64) {{\n{f}\n}}\n\nfunction %g(i64) {{\n{traps}\n}}\n");
    let original = read(&module(&endless_stores(0)));
    let (report, _) = merged(&original, Mode::Aliases);
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    let checked = verify_merge(&original, &read(&module(traps)), &report, &short());
    assert!(
        !checked.is_ok(),
        "the wrong merge passed: {}",
        checked.summary()
    );
}

/// Two equal loops merged for real (the second a thunk, an alias or removed: every mode) are no
/// mismatch, though no run ends: the merged side's stores, as far as the original's went, are
/// the same.
#[test]
fn a_right_merge_whose_runs_never_end_is_not_reported() {
    let body = endless_stores(0);
    let module = format!(
        "function %f(i64) {{\n{body}\n}}\n\nfunction %g(i64) {{\n{body}\n}}\n\n\
         function %h(i64) {{\nblock0(v0: i64):\n    call fn0(v0)\n    return\n}}\n"
    );
    let module = module.replace(
        "function %h(i64) {\n",
        "function %h(i64) {\n    fn0 = %g(i64)\n",
    );
    let original = read(&module);
    for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
        let (report, after) = merged(&original, mode);
        assert_eq!(report.merged, 1, "{mode:?}: %g merges into %f");
        let checked = verify_merge(&original, &after, &report, &short());
        assert!(
            checked.is_ok(),
            "{mode:?}: the right merge was reported: {}",
            checked.summary()
        );
        assert!(checked.inconclusive > 0, "{mode:?}: {}", checked.summary());
    }
}
