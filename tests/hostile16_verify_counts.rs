//! hostile16: the counts of `--verify`'s summary (`src/verify/report.rs`): every function the
//! check looked at is fully, partly or not checked, or unchanged, once.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use wrong_merges::{merged, read};

/// Fully, partly, not checked and unchanged, against every function looked at.
fn counted(report: &VerifyReport) -> (usize, usize) {
    let each = report.fully_checked + report.partly_checked + report.unchecked + report.unchanged;
    (each, report.all_functions())
}

const TWO: &str = "function %f(i64) -> i64 {
block0(v0: i64):
    return v0
}

function %g(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 1
    v2 = iadd v0, v1
    return v2
}
";

const ONE: &str = "function %f(i64) -> i64 {
block0(v0: i64):
    return v0
}
";

/// `%g` is missing from the merged module (the report does not say the merge removed it): a
/// mismatch, and `%g` is among the functions; it must be counted as not checked, or the
/// summary's shares are of counts that do not add up.
#[test]
fn a_function_with_no_counterpart_is_counted_as_not_checked() {
    let original = read(TWO);
    let report = merged(&original, Mode::Safe).0;
    for run_unchanged in [false, true] {
        let options = VerifyOptions {
            run_unchanged,
            ..VerifyOptions::default()
        };
        let checked = verify_merge(&original, &read(ONE), &report, &options);
        assert!(!checked.is_ok(), "{}", checked.summary());
        let (each, all) = counted(&checked);
        assert_eq!(each, all, "{}", checked.summary());
    }
}
