//! Hostile pass on `--verify`'s calls into the module (`src/verify/module_calls.rs`,
//! `src/verify/alone.rs`): wrong merges whose only trace in the runs is another argument to a
//! callee that tells it apart only on memory the caller never gives it (a word the caller set
//! to 1 before the call, and that the callee tests for 0). The check finds such a merge by
//! running the callee alone on both argument vectors, on memory that reads 0 among others; here
//! it never does so for the call that shows it. Each wrong merge is confirmed natively: linked
//! and called with the one key that skips the caller's store, on a word that holds 0, the two
//! sides return other values.

#[path = "common/planted.rs"]
mod wrong_merges;

#[path = "common/cc.rs"]
mod cc;

use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{ClifModule, Mode};
use wrong_merges::{merged, read, x86_64_object};

/// The key whose product with the odd constant the callers multiply by is 0x1234: the one
/// argument that skips their store of 1 (no run of the check takes it).
const KEY: i64 = -4145380280844307868;

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

/// `%leaf(p, k)`: `k` when the word at `p`, times an odd constant, is 0x1234 (on no memory
/// the check fills), else 0: a callee that hides `k` wherever it runs alone.
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

/// The start of a body whose first parameter `v0` is a pointer and whose parameter `key` is
/// the key: it stores 1 at the pointer unless the key times an odd constant is 0x1234, then
/// goes on in `block2`.
fn store_unless_key(params: &str, key: &str) -> String {
    format!(
        "block0({params}):\n    v90 = iconst.i64 0x9e37_79b9_7f4a_7c15\n    \
         v91 = imul {key}, v90\n    v92 = iconst.i64 0x1234\n    v93 = icmp eq v91, v92\n    \
         brif v93, block2, block1\n\
         block1:\n    v94 = iconst.i64 1\n    store v94, v0\n    jump block2\n"
    )
}

/// A module of `%f` (with `k` = 7) and `%g` (with `k` = 8) of `body(k)` and `callees`, and the
/// same module with `%g`'s `k` made 7: a merge that wrongly took `%f` for `%g`; with the
/// report of the real merge of the original (which merges nothing).
fn wrong_merge(
    body: &dyn Fn(i64) -> String,
    callees: &str,
) -> (ClifModule, ClifModule, clif_merge::MergeReport) {
    let module = |g: i64| {
        format!(
            "function %f{}\n\nfunction %g{}\n{callees}",
            body(7),
            body(g)
        )
    };
    let original = read(&module(8));
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ");
    (original, read(&module(7)), report)
}

/// The check of the planted wrong merge.
fn check(planted: &(ClifModule, ClifModule, clif_merge::MergeReport)) -> VerifyReport {
    let (original, wrong, report) = planted;
    verify_merge(original, wrong, report, &VerifyOptions::default())
}

/// What `%g(p, rest…)` returns natively in `module`, `p` pointing to a word that holds 0 (the
/// rest of the C arguments `rest`, of `int64_t` parameters `params` past `p`); None without
/// `cc`.
fn native_g(module: &ClifModule, params: usize, rest: &str) -> Option<String> {
    let types = vec!["int64_t"; params].join(", ");
    let driver = format!(
        "#include <stdio.h>\n#include <stdint.h>\nint64_t g(int64_t *, {types});\n\
         int main(void) {{\n  int64_t word = 0;\n  \
         printf(\"%lld\\n\", (long long)g(&word, {rest}));\n  return 0;\n}}\n"
    );
    cc::link_and_run(&x86_64_object(module), &driver)
}

/// Asserts that the planted merge is wrong natively: `%g` returns 8 in the original, 7 in the
/// planted module.
fn assert_wrong_natively(
    planted: &(ClifModule, ClifModule, clif_merge::MergeReport),
    params: usize,
    rest: &str,
) {
    let (original, wrong, _) = planted;
    let Some(before) = native_g(original, params, rest) else {
        return;
    };
    assert_eq!(before.trim(), "8");
    assert_eq!(native_g(wrong, params, rest).unwrap().trim(), "7");
}

/// `(p, key) -> i64`: `hidden` calls of `%leaf(p, k)`, then one of `%if_clear(p, k)`, summed.
fn calls_leaf_then_if_clear(hidden: usize, k: i64) -> String {
    let mut body = format!(
        "(i64, i64) -> i64 {{\n    fn0 = %leaf(i64, i64) -> i64\n    \
         fn1 = %if_clear(i64, i64) -> i64\n{}block2:\n    v2 = iconst.i64 {k}\n    \
         v3 = iconst.i64 0\n",
        store_unless_key("v0: i64, v1: i64", "v1")
    );
    let mut sum = "v3".to_string();
    for i in 0..hidden {
        body += &format!("    v{} = call fn0(v0, v2)\n", 10 + i);
        body += &format!("    v{} = iadd {sum}, v{}\n", 40 + i, 10 + i);
        sum = format!("v{}", 40 + i);
    }
    body + &format!("    v99 = call fn1(v0, v2)\n    v98 = iadd {sum}, v99\n    return v98\n}}")
}

#[test]
fn a_differing_call_the_callee_shows_is_reported_after_three_it_hides() {
    // Three calls that differ where the callee hides it, then the one that shows: reported.
    let planted = wrong_merge(
        &|k| calls_leaf_then_if_clear(3, k),
        &(LEAF.to_owned() + IF_CLEAR),
    );
    let checked = check(&planted);
    assert!(!checked.is_ok(), "{}", checked.summary());
    assert_wrong_natively(&planted, 1, &KEY.to_string());
}

#[test]
fn a_differing_call_the_callee_shows_is_reported_after_four_it_hides() {
    let planted = wrong_merge(
        &|k| calls_leaf_then_if_clear(4, k),
        &(LEAF.to_owned() + IF_CLEAR),
    );
    assert_wrong_natively(&planted, 1, &KEY.to_string());
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}

/// `(p, sel, key) -> i64`: where `sel` is not 0, the sum of `hidden` calls of `%leaf(p, k)`;
/// where it is, `%if_clear(p, k)`. The edge values give `sel` 0 in the sixth run only.
fn leaf_runs_then_if_clear(hidden: usize, k: i64) -> String {
    let mut body = format!(
        "(i64, i64, i64) -> i64 {{\n    fn0 = %leaf(i64, i64) -> i64\n    \
         fn1 = %if_clear(i64, i64) -> i64\n{}block2:\n    v2 = iconst.i64 {k}\n    \
         brif v1, block3, block4\n\
         block4:\n    v99 = call fn1(v0, v2)\n    return v99\n\
         block3:\n    v3 = iconst.i64 0\n",
        store_unless_key("v0: i64, v1: i64, v5: i64", "v5")
    );
    let mut sum = "v3".to_string();
    for i in 0..hidden {
        body += &format!("    v{} = call fn0(v0, v2)\n", 10 + i);
        body += &format!("    v{} = iadd {sum}, v{}\n", 40 + i, 10 + i);
        sum = format!("v{}", 40 + i);
    }
    body + &format!("    return {sum}\n}}")
}

#[test]
fn a_differing_call_the_callee_shows_is_reported_after_runs_that_hide_one() {
    // Five runs of one hidden differing call each (32 runs alone each: 16 fills, both
    // vectors), then the run whose call shows: within the budget of 256, reported.
    let planted = wrong_merge(
        &|k| leaf_runs_then_if_clear(1, k),
        &(LEAF.to_owned() + IF_CLEAR),
    );
    let checked = check(&planted);
    assert!(!checked.is_ok(), "{}", checked.summary());
    assert_wrong_natively(&planted, 2, &format!("0, {KEY}"));
}

#[test]
#[ignore = "defect: the 256 runs alone of a function are spent by its first two runs of four \
            hidden differing calls, so a later run's call that shows a wrong merge is never run \
            alone: the merge passes --verify, its function counted fully checked"]
fn a_differing_call_the_callee_shows_is_reported_after_runs_that_hide_four() {
    let planted = wrong_merge(
        &|k| leaf_runs_then_if_clear(4, k),
        &(LEAF.to_owned() + IF_CLEAR),
    );
    assert_wrong_natively(&planted, 2, &format!("0, {KEY}"));
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}

/// `%vshow(p, v)`: where the word at `p` is 0, lane 0 of `v` shifted right by 100 twice —
/// by 4 twice, as Cranelift takes a vector's shift amount modulo its lane's bits — else 0.
const VSHOW: &str = "
function %vshow(i64, i32x4) -> i64 {
block0(v0: i64, v1: i32x4):
    v2 = load.i64 v0
    brif v2, block2, block1
block1:
    v3 = iconst.i32 SHIFT
    v4 = ushr v1, v3
    v5 = ushr v4, v3
    v6 = extractlane v5, 0
    v7 = uextend.i64 v6
    return v7
block2:
    v8 = iconst.i64 0
    return v8
}
";

/// `(p, key) -> i64`: `%vshow(p, splat(k << 8))`.
fn passes_a_vector(k: i64) -> String {
    format!(
        "(i64, i64) -> i64 {{\n    fn0 = %vshow(i64, i32x4) -> i64\n{}block2:\n    \
         v2 = iconst.i32 {}\n    v3 = splat.i32x4 v2\n    v4 = call fn0(v0, v3)\n    \
         return v4\n}}",
        store_unless_key("v0: i64, v1: i64", "v1"),
        k << 8
    )
}

#[test]
fn another_vector_shifted_by_less_than_a_lane_is_reported() {
    let planted = wrong_merge(&passes_a_vector, &VSHOW.replace("SHIFT", "4"));
    let checked = check(&planted);
    assert!(!checked.is_ok(), "{}", checked.summary());
    assert_wrong_natively(&planted, 1, &KEY.to_string());
}

#[test]
fn another_vector_shifted_by_more_than_a_lane_is_reported() {
    let planted = wrong_merge(&passes_a_vector, &VSHOW.replace("SHIFT", "100"));
    assert_wrong_natively(&planted, 1, &KEY.to_string());
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}

/// `%set_if_clear(p, q)`: stores 1 at `p` when the word at `q` is 0; returns 0.
const SET_IF_CLEAR: &str = "
function %set_if_clear(i64, i64) -> i64 {
block0(v0: i64, v1: i64):
    v2 = load.i64 v1
    brif v2, block2, block1
block1:
    v3 = iconst.i64 1
    store v3, v0
    jump block2
block2:
    v4 = iconst.i64 0
    return v4
}
";

/// `(q, key) -> i64`: two stack slots set to 0, `%set_if_clear(slot, q)` on the first slot
/// (`k` = 8) or the second (7), then the first slot's word plus 7: 8 where the callee set the
/// first, else 7.
fn passes_a_slot(k: i64) -> String {
    let slot = if k == 8 { "v10" } else { "v11" };
    format!(
        "(i64, i64) -> i64 {{\n    ss0 = explicit_slot 8\n    ss1 = explicit_slot 8\n    \
         fn0 = %set_if_clear(i64, i64) -> i64\n{}block2:\n    v10 = stack_addr.i64 ss0\n    \
         v11 = stack_addr.i64 ss1\n    v12 = iconst.i64 0\n    store v12, v10\n    \
         store v12, v11\n    v13 = call fn0({slot}, v0)\n    v14 = load.i64 v10\n    \
         v16 = iconst.i64 7\n    v15 = iadd v14, v16\n    return v15\n}}",
        store_unless_key("v0: i64, v1: i64", "v1")
    )
}

#[test]
#[ignore = "defect (by the record's rule): another stack address passed is never run alone, \
            so a merge that passes the callee another of the caller's slots, which it writes \
            only on memory no run gives it, passes --verify fully checked"]
fn another_stack_slot_passed_is_reported() {
    let planted = wrong_merge(&passes_a_slot, SET_IF_CLEAR);
    assert_wrong_natively(&planted, 1, &KEY.to_string());
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}

/// `(p, key) -> i64`: 7 plus `%if_clear(p, 1)` (`k` = 8), or 7 plus 0 without the call (7).
fn calls_if_clear_or_not(k: i64) -> String {
    let value = match k {
        8 => "    v3 = iconst.i64 1\n    v2 = call fn0(v0, v3)\n",
        _ => "    v2 = iconst.i64 0\n",
    };
    format!(
        "(i64, i64) -> i64 {{\n    fn0 = %if_clear(i64, i64) -> i64\n{}block2:\n{value}    \
         v4 = iconst.i64 7\n    v5 = iadd v2, v4\n    return v5\n}}",
        store_unless_key("v0: i64, v1: i64", "v1")
    )
}

#[test]
#[ignore = "defect (by the record's rule): calls in another number are not run alone, so a \
            merge that drops a call whose result shows only on memory no run gives it passes \
            --verify fully checked"]
fn a_call_dropped_is_reported() {
    let planted = wrong_merge(&calls_if_clear_or_not, IF_CLEAR);
    assert_wrong_natively(&planted, 1, &KEY.to_string());
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}

/// `%h7(p, key)` and `%h8(p, key)`: `%if_clear(p, 7)` and `%if_clear(p, 8)`.
const H7_H8: &str = "
function %h7(i64, i64) -> i64 {
    fn0 = %if_clear(i64, i64) -> i64
block0(v0: i64, v1: i64):
    v2 = iconst.i64 7
    v3 = call fn0(v0, v2)
    return v3
}

function %h8(i64, i64) -> i64 {
    fn0 = %if_clear(i64, i64) -> i64
block0(v0: i64, v1: i64):
    v2 = iconst.i64 8
    v3 = call fn0(v0, v2)
    return v3
}
";

/// `(p, key) -> i64`: `%h{k}(p, key)`, after the store unless the key.
fn calls_h(k: i64) -> String {
    format!(
        "(i64, i64) -> i64 {{\n    fn0 = %h{k}(i64, i64) -> i64\n{}block2:\n    \
         v2 = call fn0(v0, v1)\n    return v2\n}}",
        store_unless_key("v0: i64, v1: i64", "v1")
    )
}

#[test]
#[ignore = "defect: two calls into the module are compared by their arguments, not their \
            callees, so a merge that redirects a call to another function with the same \
            arguments, which differs only on memory no run gives it, passes fully checked"]
fn a_call_redirected_to_another_callee_is_reported() {
    let planted = wrong_merge(&calls_h, &(H7_H8.to_owned() + IF_CLEAR));
    assert_wrong_natively(&planted, 1, &KEY.to_string());
    let checked = check(&planted);
    assert!(
        !checked.is_ok(),
        "the wrong merge passes: {}",
        checked.summary()
    );
}
