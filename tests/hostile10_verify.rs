//! hostile10: `--verify`'s fills and the fuel cut after a costly run (`fuel_after_inconclusive`),
//! on wrong merges planted by hand (`tests/common/planted.rs`).
//!
//! Two defects, fixed (a run cut by the reduced fuel that does not end is run again in the whole
//! fuel, twice at most without ending; one run in 16 starts on a byte fill): a first run that never ends without coming back to a state (a
//! counter counting up forever) was a costly run, and cut the fuel of every later run to what
//! the short runs took, so the runs that tell a wrong merge apart were never completed; and the
//! other fills of memory (`0x00`, `0xFF`) were tried only when the original did not end, so a
//! wrong merge told apart only by a loaded value of all ones was never seen, and its function
//! was counted fully checked.

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::{WAITS_FOREVER, planted, sum_below};

/// On 0: a counter counting up forever, in a state it was never in before at every pass (the
/// cycle stop never stops it): the run takes the whole fuel.
const COUNTS_FOREVER: &str = "block1:\n    jump block5(v1)\nblock5(v30: i64):\n    v31 = iadd v30, v11\n    jump block5(v31)";

/// On 0: returns.
const RETURNS: &str = "block1:\n    return v0";

/// hostile9's case (`x == 0` waits forever, cheaply) was fixed by cutting the fuel only after
/// a costly run. A run on 0 that counts forever is costly: the later runs get four times the
/// longest that ended (at least 6,250 instructions), the runs on `x & 0xfff` at least 2,048
/// (12,300 instructions and more) never end in it, six are inconclusive, the rest are not run,
/// and the wrong merge is reported "ok" (`51 runs, 0 mismatches, 6 inconclusive`). Natively
/// both functions end on every argument but 0.
#[test]
fn verify_reports_a_wrong_merge_after_a_first_run_that_counts_forever() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &sum_below(false, COUNTS_FOREVER),
        &sum_below(true, COUNTS_FOREVER),
        "",
    );
    assert!(reported, "{summary}");
}

/// The held neighbours: with a cheap endless run on 0 (a true cycle), or none, the same wrong
/// merge is found.
#[test]
fn verify_reports_the_wrong_merge_after_a_cheap_endless_run_or_none() {
    for endless in [WAITS_FOREVER, RETURNS] {
        let (reported, summary) = planted(
            "(i64) -> i64",
            &sum_below(false, endless),
            &sum_below(true, endless),
            "",
        );
        assert!(reported, "{endless}: {summary}");
    }
}

/// `%f(p)`: the halfword at `p`, zero-extended. `%g` answers 7 where that halfword is `k`.
fn halfword(k: Option<u32>) -> String {
    let load = "block0(v0: i64):\n    v1 = load.i16 v0\n    v2 = uextend.i64 v1\n";
    match k {
        None => format!("{load}    return v2"),
        Some(k) => format!(
            "{load}    v9 = iconst.i64 {k:#x}\n    v3 = icmp eq v2, v9\n    v4 = iconst.i64 7\n    \
             v5 = select v3, v4, v2\n    return v5"
        ),
    }
}

/// The planted merge gives `%g` the body of `%f`: they differ only where memory holds
/// `0xFFFF`, which every byte `0xFF` (the third fill) would show, and hashed memory shows once
/// in 65,536 reads. The original ends on hashed memory, so no other fill is tried: 64 runs,
/// 0 mismatches, `%g` counted fully checked.
#[test]
fn verify_reports_a_wrong_merge_told_apart_by_a_loaded_all_ones_halfword() {
    let (reported, summary) = planted("(i64) -> i64", &halfword(None), &halfword(Some(0xffff)), "");
    assert!(reported, "{summary}");
}

/// The held neighbour: told apart where the halfword is 0, the same wrong merge is found (some
/// runs read a zero there); the all-ones case above differs only in the constant.
#[test]
fn verify_reports_a_wrong_merge_told_apart_by_a_loaded_zero_halfword() {
    let (reported, summary) = planted("(i64) -> i64", &halfword(None), &halfword(Some(0)), "");
    assert!(reported, "{summary}");
}
