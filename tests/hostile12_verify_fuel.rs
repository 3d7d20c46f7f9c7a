//! hostile12: `--verify`'s fuel policy (verify7): a run first takes `short_fuel` (twice the
//! longest run of its function that ended, at least a 32nd of the fuel) on every fill, and the
//! whole fuel on its first fill only when it ended on none, until two costly whole-fuel runs of
//! the function did not end. Wrong merges planted by hand (`tests/common/planted.rs`).
//!
//! Four defects, fixed by two rules (`src/verify/mod.rs`): a run that does not end in the short
//! fuel is run in the whole fuel on its own fill before the other fills, preferred arguments
//! too, until one such run of the function did not end (`OWN_FILL_FIRST`); runs on edge values
//! that do not end neither make later arguments small nor keep later runs from the whole fuel
//! (`EDGE_RUNS_SAY_LITTLE`). Each test below failed before (its doc says how).

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{Fill, VerifyOptions, VerifyReport, verify_merge};
use wrong_merges::{merged, read};

/// `%f(x)`: sums `i` for `i` below `n`, where `n` is `x`'s low four bits, plus 2,048 when bit 4
/// of `x` is set: a run either ends within 100 instructions or takes 12,300 and more (six a
/// pass), so that runs that end never raise the short fuel to what the long ones take. With
/// `differs` it adds one to the sum when `n` is at least 2,048. `head` runs first (it may
/// return, or jump to `block2(v1, v1)` to start the loop); `tail` blocks follow.
fn bimodal_sum(differs: bool, head: &str, tail: &str) -> String {
    format!(
        "block0(v0: i64):
    v1 = iconst.i64 0
    v11 = iconst.i64 1
    v12 = iconst.i64 15
    v13 = iconst.i64 16
    v14 = iconst.i64 7
    v15 = band v0, v12
    v16 = band v0, v13
    v17 = ishl v16, v14
    v4 = bor v15, v17
{head}
{}
{tail}",
        wrong_merges::summing_loop("", differs)
    )
}

/// The check of `wrong` as a merge of `original` (the real merge's report of `original`, in
/// which nothing merges).
fn check(original: &str, wrong: &str) -> VerifyReport {
    let original = read(original);
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    verify_merge(&original, &read(wrong), &report, &VerifyOptions::default())
}

/// `%f` with `f_body`, `%g` with `g_body` (both `(i64) -> i64`), then `rest`.
fn module(f_body: &str, g_body: &str, rest: &str) -> String {
    format!(
        "function %f(i64) -> i64 {{\n{f_body}\n}}\n\nfunction %g(i64) -> i64 {{\n{g_body}\n}}\n\n{rest}"
    )
}

/// The flag the early exit loads: a data symbol, always mapped.
const FLAG: &str = "    gv0 = symbol %flag\n";

/// Loads the word at `%flag`; when it is zero, returns 0 at once, else starts the loop.
const EXIT_ON_CLEARED_FLAG: &str = "    v30 = symbol_value.i64 gv0
    v31 = load.i64 v30
    brif v31, block2(v1, v1), block9
block9:
    return v1";

/// Starts the loop.
const NO_EXIT: &str = "    jump block2(v1, v1)";

/// With the flag's preamble in the function's head.
fn with_flag(body: &str) -> String {
    format!("{FLAG}{body}")
}

/// `%g` differs from `%f` where bit 4 of `x` is set and the flag is not zero: natively on
/// every such `x` (-1, MAX, 16, every negative small number), whatever the flag holds but 0.
/// Each such run takes 12,300+ instructions on hashed memory, more than its short fuel (1,562:
/// the runs that ended took under 100); on the other fills in that fuel, the `0x00` fill ends
/// it at once (the flag reads 0), and that run is taken: the merged side runs on the cleared
/// flag too, which returns 0 on both sides. The whole fuel was never tried, since a fill ended
/// the run: 64 runs, 0 mismatches, `%g` *fully checked*, having never run the loop that
/// differs (`OWN_FILL_FIRST`).
#[test]
fn a_wrong_merge_behind_a_long_loop_is_not_hidden_by_an_early_exit_on_another_fill() {
    let original = module(
        &with_flag(&bimodal_sum(false, EXIT_ON_CLEARED_FLAG, "")),
        &with_flag(&bimodal_sum(true, EXIT_ON_CLEARED_FLAG, "")),
        "",
    );
    let wrong = module(
        &with_flag(&bimodal_sum(false, EXIT_ON_CLEARED_FLAG, "")),
        &with_flag(&bimodal_sum(false, EXIT_ON_CLEARED_FLAG, "")),
        "",
    );
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: without the early exit (nothing the fills change), the long runs end on
/// no fill in the short fuel and are run again in the whole fuel: the same wrong merge is
/// found, on hashed memory (and on the `0x00` fill of run 15, which starts there).
#[test]
fn a_wrong_merge_behind_a_long_loop_is_found_in_the_whole_fuel() {
    let original = module(
        &bimodal_sum(false, NO_EXIT, ""),
        &bimodal_sum(true, NO_EXIT, ""),
        "",
    );
    let wrong = module(
        &bimodal_sum(false, NO_EXIT, ""),
        &bimodal_sum(false, NO_EXIT, ""),
        "",
    );
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
    assert!(
        (checked.mismatches.iter()).any(|m| matches!(m.memory, Fill::Hashed(_))),
        "{}",
        checked.summary()
    );
}

/// Counts up forever from `x` when `x` is 0 or 1 (a state never seen before at every pass:
/// no cycle stops it, the run takes the whole fuel), else starts the loop.
const COUNTS_FOREVER_ON_0_AND_1: &str = "    v41 = icmp ule v0, v11
    brif v41, block5(v0), block2(v1, v1)
block5(v42: i64):
    v43 = iadd v42, v11
    jump block5(v43)";

/// Runs 0 and 1 (edge values 0 and 1) count forever: each is run in the whole fuel, is costly,
/// and after the second (`MAX_COSTLY_WHOLE_RUNS`) no run of `%g` takes the whole fuel again.
/// Every later run with bit 4 set (-1 at run 2, MAX at run 4, and 16 among the small
/// arguments the runs take after two inconclusive ones) needs 12,300+ instructions, gets
/// 1,562, and is inconclusive: six inconclusive runs cut the function short, and the runs
/// that ended never entered the loop that differs: `is_ok()`, while natively `%g` differs on
/// every `x` with bit 4 set (`EDGE_RUNS_SAY_LITTLE`).
#[test]
fn a_wrong_merge_is_found_after_two_endless_edge_runs() {
    let original = module(
        &bimodal_sum(false, COUNTS_FOREVER_ON_0_AND_1, ""),
        &bimodal_sum(true, COUNTS_FOREVER_ON_0_AND_1, ""),
        "",
    );
    let wrong = module(
        &bimodal_sum(false, COUNTS_FOREVER_ON_0_AND_1, ""),
        &bimodal_sum(false, COUNTS_FOREVER_ON_0_AND_1, ""),
        "",
    );
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// Counts up forever from 0 when `x` is 0, else starts the loop.
const COUNTS_FOREVER_ON_0: &str = "    brif v0, block2(v1, v1), block5(v1)
block5(v42: i64):
    v43 = iadd v42, v11
    jump block5(v43)";

/// The held neighbour: with one costly endless run (on 0 only), later runs still take the
/// whole fuel and the same wrong merge is found.
#[test]
fn a_wrong_merge_is_found_after_one_endless_edge_run() {
    let original = module(
        &bimodal_sum(false, COUNTS_FOREVER_ON_0, ""),
        &bimodal_sum(true, COUNTS_FOREVER_ON_0, ""),
        "",
    );
    let wrong = module(
        &bimodal_sum(false, COUNTS_FOREVER_ON_0, ""),
        &bimodal_sum(false, COUNTS_FOREVER_ON_0, ""),
        "",
    );
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// `%f(x, y)`: sums `i` for `i` below `rounds` (six instructions a pass), then, with `differs`,
/// returns 1000 where `x == 3y + 1000` (a side only a guided tuple takes: random and small
/// arguments do not meet it), else the sum.
fn guarded_by_a_loop(rounds: u32, differs: bool) -> String {
    let end = if differs {
        "    v20 = iconst.i64 3\n    v21 = imul v1, v20\n    v22 = iconst.i64 1000\n    \
         v23 = iadd v21, v22\n    v24 = icmp eq v0, v23\n    v25 = select v24, v22, v3\n    \
         return v25"
    } else {
        "    return v3"
    };
    format!(
        "block0(v0: i64, v1: i64):
    v10 = iconst.i64 0
    v11 = iconst.i64 1
    v4 = iconst.i64 {rounds}
    jump block2(v10, v10)
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

/// The original `{%f, %g}` (`%g` told apart where `x == 3y + 1000`) and the planted merge
/// (`%g` given `%f`'s body), both after a loop of `rounds` passes.
fn guided_pair(rounds: u32) -> (String, String) {
    let module = |g: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{\n{}\n}}\n\nfunction %g(i64, i64) -> i64 {{\n{g}\n}}\n",
            guarded_by_a_loop(rounds, false)
        )
    };
    (
        module(&guarded_by_a_loop(rounds, true)),
        module(&guarded_by_a_loop(rounds, false)),
    )
}

/// `%g` differs from `%f` where `x == 3y + 1000` (natively at `(1003, 1)`), a side only a
/// guided tuple takes, after a loop of 2,000 passes (12,000 instructions: every run of `%g`
/// takes as many, and ends in the whole fuel). A guided tuple takes an eighth of the fuel
/// (`GUIDED_FUEL_SHARE`: 6,250), whatever the function's runs that ended took: it never
/// ends, the run falls back to random arguments, and after two such (`MAX_GUIDED_LOST`) no
/// guided tuple is tried. 64 runs, 0 mismatches, `%g` fully checked.
#[test]
fn a_guided_tuple_reaches_a_side_after_a_loop_longer_than_its_share_of_the_fuel() {
    let (original, wrong) = guided_pair(2000);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: after a loop of 1,000 passes (6,000 instructions, within the guided
/// share) the guide takes the side, and the wrong merge is found at `(1003, 1)`.
#[test]
fn a_guided_tuple_reaches_a_side_after_a_loop_within_its_share_of_the_fuel() {
    let (original, wrong) = guided_pair(1000);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// `%f(x)`: waits forever (a cheap cycle, stopped at once) where `x` is at most `waits_up_to`
/// (unsigned), else returns `x`; with `differs`, `x + 1` where `x >> 10` is above zero (`x`
/// at least 1,024; a shift the guided arguments do not see through).
fn waits_on_small(waits_up_to: u32, differs: bool) -> String {
    let end = if differs {
        "    v4 = iconst.i64 10\n    v8 = sshr v0, v4\n    v9 = iconst.i64 0\n    \
         v5 = icmp sgt v8, v9\n    v6 = uextend.i64 v5\n    v7 = iadd v0, v6\n    return v7"
    } else {
        "    return v0"
    };
    format!(
        "block0(v0: i64):
    v1 = iconst.i64 {waits_up_to}
    v2 = icmp ule v0, v1
    brif v2, block1, block2
block1:
    jump block1
block2:
{end}"
    )
}

/// `%f` and `%g` of [`waits_on_small`], the original and the planted merge.
fn waiting_pair(waits_up_to: u32) -> (String, String) {
    (
        module(
            &waits_on_small(waits_up_to, false),
            &waits_on_small(waits_up_to, true),
            "",
        ),
        module(
            &waits_on_small(waits_up_to, false),
            &waits_on_small(waits_up_to, false),
            "",
        ),
    )
}

/// `%g` differs from `%f` on every `x` from 1,024 (MAX, and half the random numbers), and both
/// wait forever on 0 and 1. Runs 0 and 1 (edge values 0 and 1) are inconclusive, however
/// cheaply (a cycle is stopped at once), and after two inconclusive runs every later argument
/// is a small number, 0 to 16 (`arguments(.., small)`), the edge values -1, MIN and MAX of
/// runs 2 to 4 too; the guided tuples stay near them. No run reaches the side that differs,
/// and 0 and 1 come back among the small numbers until six inconclusive runs cut the function
/// short: `42 runs, 0 mismatches (6 inconclusive)` (`EDGE_RUNS_SAY_LITTLE`).
#[test]
fn a_wrong_merge_is_found_after_two_cheap_endless_edge_runs() {
    let (original, wrong) = waiting_pair(1);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: waiting forever on 0 only, the next edge value (-1) is run as it is and
/// the wrong merge is found.
#[test]
fn a_wrong_merge_is_found_after_one_cheap_endless_edge_run() {
    let (original, wrong) = waiting_pair(0);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// `%f(x)`: `x` at once, but where `x` is 1,234 (a constant the function compares its
/// parameter with: a steering value), sums `i` for `i` below `rounds` first and returns the
/// sum; with `differs`, the sum plus one.
fn steered_into_a_loop(rounds: u32, differs: bool) -> String {
    let end = if differs {
        "    v8 = iadd v3, v11\n    return v8"
    } else {
        "    return v3"
    };
    format!(
        "block0(v0: i64):
    v10 = iconst.i64 0
    v11 = iconst.i64 1
    v4 = iconst.i64 {rounds}
    v12 = iconst.i64 1234
    v13 = icmp eq v0, v12
    brif v13, block2(v10, v10), block1
block1:
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

/// `%f` and `%g` of [`steered_into_a_loop`], the original and the planted merge.
fn steered_pair(rounds: u32) -> (String, String) {
    (
        module(
            &steered_into_a_loop(rounds, false),
            &steered_into_a_loop(rounds, true),
            "",
        ),
        module(
            &steered_into_a_loop(rounds, false),
            &steered_into_a_loop(rounds, false),
            "",
        ),
    )
}

/// `%g` differs from `%f` only at 1,234, after 2,000 passes of a loop (12,000 instructions).
/// Every other run ends at once, so the short fuel is 1,562: a run on the steering value 1,234
/// does not end in it, and `run_original` runs the plain random arguments instead, which then
/// end (no other fill, no whole fuel for the steered tuple). The guided tuple 1,234 takes an
/// eighth of the fuel (6,250) and is lost too, twice: 64 runs, 0 mismatches, `%g` fully
/// checked (`OWN_FILL_FIRST`: the steered tuple is now run in the whole fuel).
#[test]
fn a_wrong_merge_at_a_steering_value_behind_a_long_loop_is_found() {
    let (original, wrong) = steered_pair(2000);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// The held neighbour: after 200 passes (1,200 instructions, within the short fuel) the
/// steering value takes the loop and the wrong merge is found.
#[test]
fn a_wrong_merge_at_a_steering_value_behind_a_short_loop_is_found() {
    let (original, wrong) = steered_pair(200);
    let checked = check(&original, &wrong);
    assert!(!checked.is_ok(), "{}", checked.summary());
}
