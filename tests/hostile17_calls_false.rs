//! Hostile pass on `--verify`'s calls into the module (`src/verify/alone.rs`): right
//! rewrites of a body — each confirmed natively: linked and run, `%g` returns the same before
//! and after — that make the two sides' calls into the module differ, and the check's runs
//! alone of the callee, which do not see what the caller did before the call nor which call
//! stands for which, report as mismatches. These are planted (clif-merge's own merges pass the
//! same values to the same callees, but for `hostile17_call_records.rs`'s), as an optimizer
//! before the merge, or a later merge that reorders independent calls, would write them; the
//! record's own rules say calls in another order or number do not run alone.

#[path = "common/planted.rs"]
mod wrong_merges;

#[path = "common/cc.rs"]
mod cc;

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, Mode};
use wrong_merges::{merged, read, x86_64_object};

/// A module of `%f` of `rewritten` and `%g` of `body` (both of signature `sig`) and `callees`,
/// and the same module with `%g` given `rewritten`, with the report of the real merge of the
/// original (which merges nothing).
fn rewrite(
    sig: &str,
    body: &str,
    rewritten: &str,
    callees: &str,
) -> (ClifModule, ClifModule, clif_merge::MergeReport) {
    let module = |g: &str| {
        format!("function %f{sig} {{\n{rewritten}\n}}\n\nfunction %g{sig} {{\n{g}\n}}\n{callees}")
    };
    let original = read(&module(body));
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ");
    (original, read(&module(rewritten)), report)
}

/// The first mismatch `--verify` reports for the rewrite, if any.
fn first_mismatch(planted: &(ClifModule, ClifModule, clif_merge::MergeReport)) -> Option<String> {
    let (original, rewritten, report) = planted;
    let checked = verify_merge(original, rewritten, report, &VerifyOptions::default());
    checked.mismatches.first().map(|m| m.to_string())
}

/// What `main` prints, linked with `module`'s object, where `prelude` declares `g` (and
/// whatever `main` needs) and `main` prints what `g` returns; None without `cc`.
fn native(module: &ClifModule, prelude: &str, main: &str) -> Option<String> {
    let driver = format!(
        "#include <stdio.h>\n#include <stdint.h>\n{prelude}\nint main(void) {{\n{main}\n  \
         return 0;\n}}\n"
    );
    cc::link_and_run(&x86_64_object(module), &driver)
}

/// Asserts that `%g` prints the same natively before and after the rewrite (and prints
/// something).
fn assert_right_natively(
    planted: &(ClifModule, ClifModule, clif_merge::MergeReport),
    prelude: &str,
    main: &str,
) {
    let (original, rewritten, _) = planted;
    let Some(before) = native(original, prelude, main) else {
        return;
    };
    assert!(before.lines().count() >= 3, "{before}");
    assert_eq!(native(rewritten, prelude, main).unwrap(), before);
}

/// `%g(i64) -> i64` on a few arguments, each on its own line.
const I64_PRELUDE: &str = "int64_t g(int64_t);";
const I64_MAIN: &str = "  int64_t a[] = {0, 1, -1, 7, -7, 1000, 0x7fffffffffffffffLL};\n  \
     for (int i = 0; i < 7; i++) printf(\"%lld\\n\", (long long)g(a[i]));";

/// `%read(p)`: the word at `p`.
const READ: &str = "
function %read(i64) -> i64 {
block0(v0: i64):
    v1 = load.i64 v0
    return v1
}
";

/// A body of `(i64) -> i64` that stores 5 at `p` and at `p + 8`, then returns `%read(p + off)`.
fn stores_then_reads(off: i64) -> String {
    format!(
        "    fn0 = %read(i64) -> i64\nblock0(v0: i64):\n    v1 = iconst.i64 5\n    \
         store v1, v0\n    store v1, v0+8\n    v2 = iconst.i64 {off}\n    v3 = iadd v0, v2\n    \
         v4 = call fn0(v3)\n    return v4"
    )
}

#[test]
#[ignore = "defect: the callee runs alone on a fill, not on the caller's stores: two pointers \
            to words the caller set to the same value read other words there, a false mismatch \
            (replaying the caller's stores loses the memory its other paths leave: see \
            hostile17_calls_hidden; no merge the project makes passes other pointers)"]
fn pointers_to_words_the_caller_set_alike_are_no_difference() {
    let planted = rewrite(
        "(i64) -> i64",
        &stores_then_reads(0),
        &stores_then_reads(8),
        READ,
    );
    assert_right_natively(
        &planted,
        "int64_t g(int64_t *);",
        "  int64_t w[2] = {1, 2};\n  printf(\"%lld\\n\", (long long)g(w));\n  \
         printf(\"%lld %lld\\n\", (long long)w[0], (long long)w[1]);\n  \
         int64_t v[2] = {-1, 0};\n  printf(\"%lld\\n\", (long long)g(v));",
    );
    let mismatch = first_mismatch(&planted);
    assert!(mismatch.is_none(), "{}", mismatch.unwrap());
}

/// `%triple(x) = 3x` and `%plus(x) = x + 100`, both pure.
const PURE: &str = "
function %triple(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 3
    v2 = imul v0, v1
    return v2
}

function %plus(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 100
    v2 = iadd v0, v1
    return v2
}
";

/// A body of `(i64) -> i64`: `%triple(x) - %plus(x + 1)`, the calls in that order or the other.
fn two_pure_calls(triple_first: bool) -> String {
    let (first, second) = match triple_first {
        true => ("    v1 = call fn0(v0)\n", "    v3 = call fn1(v2)\n"),
        false => ("    v3 = call fn1(v2)\n", "    v1 = call fn0(v0)\n"),
    };
    format!(
        "    fn0 = %triple(i64) -> i64\n    fn1 = %plus(i64) -> i64\nblock0(v0: i64):\n    \
         v9 = iconst.i64 1\n    v2 = iadd v0, v9\n{first}{second}    v4 = isub v1, v3\n    \
         return v4"
    )
}

#[test]
fn two_pure_calls_in_the_other_order_are_no_difference() {
    let planted = rewrite(
        "(i64) -> i64",
        &two_pure_calls(true),
        &two_pure_calls(false),
        PURE,
    );
    assert_right_natively(&planted, I64_PRELUDE, I64_MAIN);
    let mismatch = first_mismatch(&planted);
    assert!(mismatch.is_none(), "{}", mismatch.unwrap());
}

/// `%nonzero(x)`: `x`, trapping where it is 0.
const NONZERO: &str = "
function %nonzero(i64) -> i64 {
block0(v0: i64):
    trapz v0, user1
    return v0
}
";

/// A body of `(i64) -> i64`: with `dead_call`, a call of `%nonzero(x | 1)` whose result is
/// dropped (it never traps: a call an optimizer removes), then `%plus(x + 1)`.
fn maybe_a_dead_call(dead_call: bool) -> String {
    let dead = match dead_call {
        true => "    v5 = iconst.i64 1\n    v6 = bor v0, v5\n    v7 = call fn0(v6)\n",
        false => "",
    };
    format!(
        "    fn0 = %nonzero(i64) -> i64\n    fn1 = %plus(i64) -> i64\nblock0(v0: i64):\n{dead}    \
         v9 = iconst.i64 1\n    v2 = iadd v0, v9\n    v3 = call fn1(v2)\n    return v3"
    )
}

#[test]
fn a_dead_call_removed_is_no_difference() {
    let planted = rewrite(
        "(i64) -> i64",
        &maybe_a_dead_call(true),
        &maybe_a_dead_call(false),
        &(NONZERO.to_owned() + PURE),
    );
    assert_right_natively(&planted, I64_PRELUDE, I64_MAIN);
    let mismatch = first_mismatch(&planted);
    assert!(mismatch.is_none(), "{}", mismatch.unwrap());
}

/// `%spill(x)`: stores `x` to a stack slot of its own, then returns 0.
const SPILL: &str = "
function %spill(i64) -> i64 {
    ss0 = explicit_slot 8
block0(v0: i64):
    v2 = stack_addr.i64 ss0
    store v0, v2
    v1 = iconst.i64 0
    return v1
}
";

/// A body of `(i64) -> i64`: `%spill(x + add) + x`.
fn spills(add: i64) -> String {
    format!(
        "    fn0 = %spill(i64) -> i64\nblock0(v0: i64):\n    v1 = iconst.i64 {add}\n    \
         v2 = iadd v0, v1\n    v3 = call fn0(v2)\n    v4 = iadd v3, v0\n    return v4"
    )
}

#[test]
#[ignore = "defect: the runs compare stores to the stack of callees' frames, dead once they \
            return: another value a callee only spills is a false mismatch of the caller's own \
            runs (a store's difference, not the calls': no merge the project makes stores \
            otherwise, a planted rewrite does)"]
fn another_value_a_callee_only_spills_to_its_own_frame_is_no_difference() {
    let planted = rewrite("(i64) -> i64", &spills(0), &spills(1), SPILL);
    assert_right_natively(&planted, I64_PRELUDE, I64_MAIN);
    let mismatch = first_mismatch(&planted);
    assert!(mismatch.is_none(), "{}", mismatch.unwrap());
}

/// `%same(x) = x`.
const SAME: &str = "
function %same(i64) -> i64 {
block0(v0: i64):
    return v0
}
";

/// A body of `(i64) -> i64`: bit 0 of `%same(x + add)`, masked after the call.
fn masked_after(add: i64) -> String {
    format!(
        "    fn0 = %same(i64) -> i64\nblock0(v0: i64):\n    v1 = iconst.i64 {add}\n    \
         v2 = iadd v0, v1\n    v3 = call fn0(v2)\n    v4 = iconst.i64 1\n    v5 = band v3, v4\n    \
         return v5"
    )
}

#[test]
fn another_value_in_bits_the_caller_masks_after_the_call_is_no_difference() {
    // `%same`'s parameter is demanded in full (it returns it), but `%same` run alone returns
    // values that differ only in bits the caller's `band` drops.
    let planted = rewrite("(i64) -> i64", &masked_after(0), &masked_after(2), SAME);
    assert_right_natively(&planted, I64_PRELUDE, I64_MAIN);
    let mismatch = first_mismatch(&planted);
    assert!(mismatch.is_none(), "{}", mismatch.unwrap());
}
