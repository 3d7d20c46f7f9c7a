//! hostile16: the fuel rules of `--verify` (`src/verify/mod.rs`): `OWN_FILL_FIRST` (a run that
//! does not end in the short fuel is run on its own fill in a quarter of the fuel before the
//! other fills, until one such run of the function did not end) and `EDGE_RUNS_SAY_LITTLE`
//! (runs on edge values that do not end neither make later arguments small nor keep later runs
//! from the whole fuel). Wrong merges planted by hand (`tests/common/planted.rs`): `%g` is
//! given `%f`'s body, where natively the two differ.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use wrong_merges::{merged, read};

/// `%f(x)` (`(i64) -> i64`): loads the word at `%flag`; when it is zero returns 0 at once, else
/// sums `i` for `i` below `n`, where `n` is `x`'s low four bits plus `long` when bit 4 of `x`
/// is set (six instructions a pass). With `differs` it adds one to the sum when `n` is at least
/// 2,048 (`summing_loop`). `head` runs first, before the flag (it may jump to `block2(v1, v1)`
/// or to `block8` for the flag); `tail` blocks follow.
fn flagged_sum(long: u32, differs: bool, head: &str, tail: &str) -> String {
    format!(
        "    gv0 = symbol %flag
block0(v0: i64):
    v1 = iconst.i64 0
    v11 = iconst.i64 1
    v12 = iconst.i64 15
    v13 = iconst.i64 16
    v14 = iconst.i64 {long}
    v15 = band v0, v12
    v16 = band v0, v13
    v18 = icmp ne v16, v1
    v19 = select v18, v14, v1
    v4 = bor v15, v19
{head}
block8:
    v30 = symbol_value.i64 gv0
    v31 = load.i64 v30
    brif v31, block2(v1, v1), block9
block9:
    return v1
{}
{tail}",
        wrong_merges::summing_loop("", differs)
    )
}

/// `%f` and `%g` (both `(i64) -> i64`).
fn module(f_body: &str, g_body: &str) -> String {
    format!(
        "function %f(i64) -> i64 {{\n{f_body}\n}}\n\nfunction %g(i64) -> i64 {{\n{g_body}\n}}\n"
    )
}

/// The check of `%g` given `%f`'s body, with `make(false)` for `%f` and `make(true)` for the
/// original `%g` (the real merge of which merges nothing).
fn check_planted(make: impl Fn(bool) -> String, options: &VerifyOptions) -> VerifyReport {
    let original = read(&module(&make(false), &make(true)));
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    let wrong = read(&module(&make(false), &make(false)));
    verify_merge(&original, &wrong, &report, options)
}

/// Goes straight to the flag.
const TO_FLAG: &str = "    jump block8";

/// A loop of 4,096+ passes, 24,600+ instructions: more than a quarter of the fuel (12,500),
/// less than the whole (50,000).
const PAST_A_QUARTER: u32 = 4096;

/// `%g` differs from `%f` where bit 4 of `x` is set and the flag is not zero (natively: every
/// negative `x`, 16, MAX...). Such a run takes 24,600+ instructions on hashed memory that
/// reads the flag non-zero: more than its short fuel (1,562), and more than the quarter of the
/// fuel it is run in on its own fill (`OWN_FILL_FIRST`); then on the other fills in the short
/// fuel the `0x00` fill ends it at once (the flag reads 0) and that run is taken, the merged
/// side on the cleared flag too. The whole fuel, in which the loop ends, is never tried.
#[test]
#[ignore = "defect: a wrong merge behind a loop longer than a quarter of the fuel but shorter than the whole is reported ok, fully checked, when another fill exits early"]
fn a_wrong_merge_behind_a_loop_past_a_quarter_of_the_fuel_is_reported() {
    let make = |differs| flagged_sum(PAST_A_QUARTER, differs, TO_FLAG, "");
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: the same with the loop under a quarter of the fuel (2,048 passes,
/// 12,300 instructions) is found on the flag's own fill (hostile12's rule).
#[test]
fn a_wrong_merge_behind_a_loop_under_a_quarter_of_the_fuel_is_reported() {
    let make = |differs| flagged_sum(2048, differs, TO_FLAG, "");
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// On `x == 0` (the first edge run) counts up forever (no cycle stops it), else goes to the
/// flag.
const COUNTS_FOREVER_ON_0: &str = "    brif v0, block8, block5(v1)
block5(v42: i64):
    v43 = iadd v42, v11
    jump block5(v43)";

/// The loop under a quarter of the fuel (found above), but run 0 (`x == 0`, an edge value)
/// counts forever: run on its own fill in a quarter of the fuel it does not end, which marks
/// the function's own-fill run lost (`own_fill_lost` is set on edge runs too, which
/// `EDGE_RUNS_SAY_LITTLE` says tell little), so no later run is tried on its own fill longer:
/// each run with bit 4 set ends at once on the `0x00` fill instead.
#[test]
fn a_wrong_merge_is_found_after_an_endless_edge_run_on_its_own_fill() {
    let make = |differs| flagged_sum(2048, differs, COUNTS_FOREVER_ON_0, "");
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// `%f(x)`: where `x` is 0x5eed_1234 (a constant the function tests `x` for, a steering value
/// and a guided operand), sums `i` for `i` below `passes` (six instructions a pass), plus one
/// with `differs`; else returns `x`. No memory is read: no fill can stand in for the loop.
fn loop_at_a_constant(passes: u32, differs: bool) -> String {
    let end = if differs {
        "    v23 = iadd v3, v11\n    return v23"
    } else {
        "    return v3"
    };
    format!(
        "block0(v0: i64):
    v1 = iconst.i64 0
    v11 = iconst.i64 1
    v4 = iconst.i64 {passes}
    v8 = iconst.i64 0x5eed_1234
    v9 = icmp eq v0, v8
    brif v9, block2(v1, v1), block9
block9:
    return v0
block2(v2: i64, v3: i64):
    v5 = icmp ult v2, v4
    brif v5, block3, block4
block3:
    v6 = iadd v3, v2
    v7 = iadd v2, v11
    jump block2(v7, v6)
block4:
{end}"
    )
}

/// `%g` differs from `%f` on `x == 0x5eed_1234` only, after a loop of 24,600 instructions
/// (over a quarter of the fuel, under the whole). The steering value and the guided tuple
/// both aim at it; the steered run does not end in the short fuel, nor on its own fill in a
/// quarter of the fuel, and is dropped for the run's random arguments; the guided one does not
/// end in its eighth, nor in the quarter, and is dropped too. No memory is read, so no fill
/// is involved: the one input that tells the merge apart is never run to its end, and every
/// run that is taken ends.
#[test]
#[ignore = "defect: a wrong merge told apart only at a steered constant, past a loop longer than a quarter of the fuel, is reported ok and fully checked"]
fn a_wrong_merge_at_a_steered_constant_past_a_quarter_of_the_fuel_is_reported() {
    let make = |differs| loop_at_a_constant(PAST_A_QUARTER, differs);
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: the same loop under a quarter of the fuel (2,048 passes) is found.
#[test]
fn a_wrong_merge_at_a_steered_constant_under_a_quarter_of_the_fuel_is_reported() {
    let make = |differs| loop_at_a_constant(2048, differs);
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// `%f(x)`, of no edge value nor small argument: counts up forever when bits 4 to 6 of `x` are
/// `010` (with `endless`, else returns 0 there); sums `i` below 2,048 (12,300 instructions, under a quarter of the fuel) behind the
/// flag when they are `001` (16 among the small arguments, and one random `x` in eight); else
/// returns 0.
fn endless_or_flagged(endless: bool, differs: bool) -> String {
    let counting = if endless {
        "jump block5(v43)"
    } else {
        "return v43"
    };
    let head = format!(
        "    v40 = iconst.i64 0x70
    v41 = band v0, v40
    v44 = iconst.i64 0x20
    v45 = icmp eq v41, v44
    brif v45, block5(v1), block6
block5(v42: i64):
    v43 = iadd v42, v11
    {counting}
block6:
    v46 = iconst.i64 0x10
    v47 = icmp eq v41, v46
    brif v47, block8, block9"
    );
    flagged_sum(2048, differs, &head, "")
}

/// The loop under a quarter of the fuel behind the flag (found above on its own), but the
/// function has runs that count forever on random arguments: the first such run, on its own
/// fill in a quarter of the fuel, does not end, and no later run is tried on its own fill
/// longer (`OWN_FILL_FIRST`: "until one such run of the function did not end"): each later run
/// through the loop ends at once on the `0x00` fill instead, where the flag reads 0.
#[test]
#[ignore = "defect: one endless run spends the function's own-fill run, so a wrong merge behind a loop under a quarter of the fuel, met by later runs only, is reported ok"]
fn a_wrong_merge_behind_a_flag_is_found_after_an_endless_run_on_its_own_fill() {
    let make = |differs| endless_or_flagged(true, differs);
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: with the same arguments and no endless run (0 is returned where the
/// count was), the runs through the loop are run on their own fill longer and the same wrong
/// merge is found.
#[test]
fn a_wrong_merge_behind_a_flag_is_found_with_no_endless_run() {
    let make = |differs| endless_or_flagged(false, differs);
    let checked = check_planted(make, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}
