//! hostile12: the merged side's limits (`slack.rs`, `MergedSlack`): the depth and fuel a merged
//! side may take grow with the merged module's forwarder chains. The growth is counted here by
//! what a wrong merge that recurses forever did before its limit stopped it: one store per
//! call.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{Outcome, VerifyOptions, verify_merge};
use wrong_merges::{merged, read};

/// `%f(x)` stores `x` at 0x1000 and calls itself on `x + 1`, forever (a new state at every
/// call: no cycle stops it); `%g(x)` returns `x`. Then `rest`.
fn module(g_is_f: bool, rest: &str) -> String {
    let recurses = "    fn0 = %f(i64) -> i64
block0(v0: i64):
    v1 = iconst.i64 0x1000
    store v0, v1
    v4 = iconst.i64 1
    v2 = iadd v0, v4
    v3 = call fn0(v2)
    return v3";
    let g = if g_is_f {
        recurses
    } else {
        "block0(v0: i64):\n    return v0"
    };
    format!(
        "function %f(i64) -> i64 {{\n{recurses}\n}}\n\nfunction %g(i64) -> i64 {{\n{g}\n}}\n\n{rest}"
    )
}

/// `%p` and `%q`, forwarders that call each other (no run calls them), and `n` forwarders to
/// imports of their own.
fn forwarders(n: usize) -> String {
    let mut text = "function %p() {
    fn0 = %q(i32)
block0:
    v0 = iconst.i32 1
    call fn0(v0)
    return
}

function %q(i32) {
    fn0 = %p()
block0(v0: i32):
    call fn0()
    return
}
"
    .to_string();
    for i in 0..n {
        text.push_str(&format!(
            "\nfunction %fw{i}(i64) -> i64 {{\n    fn0 = %ext{i}(i64) -> i64\nblock0(v0: i64):\n    \
             v1 = call fn0(v0)\n    return v1\n}}\n"
        ));
    }
    text
}

/// The planted merge gives `%g` `%f`'s body (with `rest` in both modules), and the stores
/// its merged side made in the first mismatch before a limit stopped it, with how it ended.
fn stores_before_the_limit(rest: &str) -> (usize, Outcome) {
    let original = read(&module(false, rest));
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "nothing merges");
    let options = VerifyOptions {
        runs: 1,
        ..VerifyOptions::default()
    };
    let checked = verify_merge(&original, &read(&module(true, rest)), &report, &options);
    let m = (checked.mismatches.first()).unwrap_or_else(|| panic!("{}", checked.summary()));
    (m.merged.stores.len(), m.merged.outcome.clone())
}

/// Without forwarders the merged side stops `2 × 512 + 2` calls deep (1,026 stores, too
/// deep). Forwarders that no run passes, `%p` and `%q` calling each other and 8 others, make
/// `MergedSlack` count the cycle as a chain as long as the forwarders are many plus one (11),
/// and every merged side of the module may go 12 times deeper: 12,312 stores, and at N
/// forwarders N + 4 times (a wrong merge that recurses forever takes 20 s at N = 100
/// instead of 1 s). The limit of a run should not depend on functions it never calls, and a
/// cycle of two forwarders adds two frames per call at most.
#[test]
fn unrelated_forwarders_do_not_deepen_the_merged_sides_limit() {
    let (alone, how) = stores_before_the_limit("");
    assert!(matches!(how, Outcome::TooDeep), "{how}");
    let (with_cycle, how) = stores_before_the_limit(&forwarders(8));
    assert!(matches!(how, Outcome::TooDeep), "{how}");
    assert!(
        with_cycle <= 3 * alone,
        "{alone} stores alone, {with_cycle} with the cycle"
    );
}

/// The held part: without forwarders the merged side stops at the depth limit, `2 × 512 + 2`
/// calls deep, one store per call.
#[test]
fn the_merged_side_stops_at_twice_the_depth_limit() {
    let (alone, how) = stores_before_the_limit("");
    assert!(matches!(how, Outcome::TooDeep), "{how}");
    assert!((1_000..=1_030).contains(&alone), "{alone}");
}
