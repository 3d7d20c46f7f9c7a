//! `--verify`'s runs past the planned ones (`MoreRuns` in `src/verify/mod.rs`): a function with
//! a side of its own branches, traps or comparisons that no run took runs on, a quarter of its
//! planned runs at a time, up to `VerifyOptions::max_runs` (four times `runs` by default); one
//! whose runs took every side stops at its planned runs.

use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

/// The check of `text`'s one function against the real merge (which changes nothing), the
/// function run though unchanged.
fn check(text: &str, options: VerifyOptions) -> VerifyReport {
    let original = read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap();
    let mut merged = original.clone();
    let report = merge_module(&mut merged, Mode::Safe).0;
    let options = VerifyOptions {
        run_unchanged: true,
        ..options
    };
    verify_merge(&original, &merged, &report, &options)
}

/// Both sides of its one branch are taken by the edge values (0 and 1).
const EVERY_SIDE_TAKEN: &str = "function %f(i64) -> i64 {
block0(v0: i64):
    brif v0, block1, block2
block1:
    v1 = iconst.i64 1
    return v1
block2:
    return v0
}";

/// `x & 0` is never true: one side of the branch is taken by no run.
const A_SIDE_NEVER_TAKEN: &str = "function %f(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 0
    v2 = band v0, v1
    brif v2, block1, block2
block1:
    v3 = iconst.i64 1
    return v3
block2:
    return v0
}";

#[test]
fn a_function_whose_runs_take_every_side_runs_its_planned_runs() {
    let checked = check(EVERY_SIDE_TAKEN, VerifyOptions::default());
    assert_eq!(checked.runs, 64, "{}", checked.summary());
    assert_eq!(checked.fully_checked, 1, "{}", checked.summary());
}

#[test]
fn a_function_with_a_side_no_run_takes_runs_on_to_its_most() {
    let checked = check(A_SIDE_NEVER_TAKEN, VerifyOptions::default());
    assert_eq!(checked.runs, 256, "{}", checked.summary());
    assert_eq!(checked.fully_checked, 1, "{}", checked.summary());
    let at_most = VerifyOptions {
        runs: 8,
        max_runs: Some(20),
        ..VerifyOptions::default()
    };
    assert_eq!(check(A_SIDE_NEVER_TAKEN, at_most).runs, 20);
    let planned_only = VerifyOptions {
        max_runs: Some(0),
        ..VerifyOptions::default()
    };
    assert_eq!(check(A_SIDE_NEVER_TAKEN, planned_only).runs, 64);
}
