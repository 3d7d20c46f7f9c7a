//! hostile18: `--verify`'s comparison of runs that do not end up to where they stopped
//! (`prefix_parts_ways` in `src/verify/mod.rs`, `Run::effects_part_ways` and
//! `Run::did_more_than_stopped` in `src/verify/outcome.rs`), attacked with planted wrong merges
//! (`tests/common/planted.rs`) and real merges. The first four wrong merges passed when only a
//! merged side that *ended* having done less was a mismatch; now so is one that stops for good
//! (its own, larger limits, or a cycle that stores nothing).

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, verify_merge};
use wrong_merges::{merged, planted, read};

/// A loop that never ends, each pass storing its counter at `%buf` (a data symbol, always
/// mapped) and adding `x`.
const STORES_FOREVER: &str = "    gv0 = symbol %buf
block0(v0: i64):
    v1 = symbol_value.i64 gv0
    v2 = iconst.i64 0
    jump block1(v2)
block1(v3: i64):
    store v3, v1
    v4 = iadd v3, v0
    jump block1(v4)";

/// A loop that never ends, each pass calling the import `%tick` with its counter.
const CALLS_FOREVER: &str = "    fn0 = %tick(i64)
block0(v0: i64):
    v2 = iconst.i64 0
    jump block1(v2)
block1(v3: i64):
    call fn0(v3)
    v4 = iadd v3, v0
    jump block1(v4)";

/// A wait that never ends and does nothing: a true cycle.
const WAITS_SILENTLY: &str = "block0(v0: i64):
    jump block1
block1:
    jump block1";

/// A count that never ends and does nothing (no state repeats: the fuel stops it).
const COUNTS_SILENTLY: &str = "block0(v0: i64):
    v2 = iconst.i64 1
    jump block1(v2)
block1(v3: i64):
    v4 = iadd v3, v2
    jump block1(v4)";

/// `%g` stores forever (a progress counter another thread reads); the planted merge gives it
/// `%f`'s body, which hangs in a silent cycle and never stores at all. The original stored
/// thousands of times before its fuel ran out; the merged side, stopped as a cycle (or by its
/// four times larger fuel), stored nothing. The prefix rule compares only the stores both
/// sides made (none), and the "did less" rule took only a merged side that *ended*: the wrong
/// merge passed.
#[test]
fn a_merged_side_that_hangs_silently_where_the_original_stores_forever_is_reported() {
    let (reported, summary) = planted("(i64)", WAITS_SILENTLY, STORES_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
}

/// As above, the merged side counting silently in a loop whose state never repeats: it runs
/// four times the original's fuel and stores nothing where the original stored on every pass.
#[test]
fn a_merged_side_that_counts_silently_where_the_original_stores_forever_is_reported() {
    let (reported, summary) = planted("(i64)", COUNTS_SILENTLY, STORES_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
}

/// `%g` calls the import `%tick` forever (a server's poll loop); merged, it hangs silently.
#[test]
fn a_merged_side_that_hangs_where_the_original_calls_an_import_forever_is_reported() {
    let (reported, summary) = planted("(i64)", WAITS_SILENTLY, CALLS_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
}

/// `%g` stores on every pass forever; merged, it stores the same first value once and then
/// hangs in a silent cycle. Equal up to the merged side's one store, so the prefix rule passed
/// it, though the merged side had four times the fuel and stopped in a cycle.
#[test]
fn a_merged_side_that_stores_once_then_hangs_is_reported() {
    let once = "    gv0 = symbol %buf
block0(v0: i64):
    v1 = symbol_value.i64 gv0
    v2 = iconst.i64 0
    store v2, v1
    jump block1
block1:
    jump block1";
    let (reported, summary) = planted("(i64)", once, STORES_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
}

/// A control: a merged side that *returns* at once where the original stores forever is
/// reported (`did_more_than_stopped`).
#[test]
fn control_a_merged_side_that_returns_where_the_original_stores_forever_is_reported() {
    let returns = "block0(v0: i64):\n    return";
    let (reported, summary) = planted("(i64)", returns, STORES_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
    let (reported, summary) = planted("(i64)", returns, CALLS_FOREVER, "");
    assert!(reported, "the wrong merge passed: {summary}");
}

/// Real merges of two equal endless loops (every mode), the functions called through thunks
/// and by a caller that loops calling them: no mismatch.
#[test]
fn right_merges_of_endless_loops_in_every_mode_pass() {
    for body in [STORES_FOREVER, CALLS_FOREVER] {
        let module = format!(
            "function %f(i64) {{\n{body}\n}}\n\nfunction %g(i64) {{\n{body}\n}}\n\n\
             function %h(i64) {{\n    fn0 = %g(i64)\n    fn1 = %f(i64)\n\
             block0(v0: i64):\n    call fn0(v0)\n    call fn1(v0)\n    return\n}}\n"
        );
        let original = read(&module);
        for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
            // Fuels of no special form, large and small (the default's 50,000 took most of
            // a minute in a debug build for what 12,289 shows: where each side's cycle check
            // stands when the fuel runs out).
            for fuel in [12_289, 2_000, 97] {
                let (report, after) = merged(&original, mode);
                let options = VerifyOptions {
                    fuel,
                    ..VerifyOptions::default()
                };
                let checked = verify_merge(&original, &after, &report, &options);
                assert!(
                    checked.is_ok(),
                    "{mode:?} fuel {fuel}: the right merge was reported: {}",
                    checked.summary()
                );
            }
        }
    }
}
