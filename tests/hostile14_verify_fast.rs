//! hostile14: the fast path of `--verify`'s runs (`src/verify/run/fast.rs`): integer
//! arithmetic, comparisons and branches run on the frame, their results then read by
//! instructions `step` runs (extensions, returns), at narrow and wide types; on wrong merges
//! planted by hand (`tests/common/planted.rs`) and on a planted pair that natively agrees.

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// `iadd.i8` wraps at 127 before `sextend` (run by `step`) reads it; adding after extending
/// does not: the planted merge is reported (at the edge argument 127).
#[test]
fn an_i8_sum_wraps_before_it_is_extended() {
    let f_body = "block0(v0: i8):
    v1 = iconst.i8 1
    v2 = iadd v0, v1
    v3 = sextend.i64 v2
    return v3";
    let g_body = "block0(v0: i8):
    v1 = sextend.i64 v0
    v2 = iconst.i64 1
    v3 = iadd v1, v2
    return v3";
    let (reported, summary) = planted("(i8) -> i64", f_body, g_body, "");
    assert!(reported, "{summary}");
}

/// `imul.i16` wraps, and `ushr` (run by `step`) shifts its 16 bits: against the product of
/// the zero-extended operands the planted merge is reported.
#[test]
fn an_i16_product_wraps_before_it_is_shifted() {
    let f_body = "block0(v0: i16, v1: i16):
    v2 = imul v0, v1
    v3 = iconst.i16 8
    v4 = ushr v2, v3
    v5 = uextend.i64 v4
    return v5";
    let g_body = "block0(v0: i16, v1: i16):
    v6 = uextend.i64 v0
    v7 = uextend.i64 v1
    v2 = imul v6, v7
    v3 = iconst.i64 8
    v4 = ushr v2, v3
    v8 = iconst.i64 0xffff
    v5 = band v4, v8
    return v5";
    let (reported, summary) = planted("(i16, i16) -> i64", f_body, g_body, "");
    assert!(reported, "{summary}");
}

/// Each unsigned comparison of two `i8`s against its signed twin (and `eq` against `ne`):
/// they differ where the signs differ, which the edge arguments reach; each planted merge is
/// reported.
#[test]
fn i8_comparisons_of_every_condition_are_told_apart() {
    let pairs = [
        ("ult", "slt"),
        ("ule", "sle"),
        ("ugt", "sgt"),
        ("uge", "sge"),
        ("eq", "ne"),
    ];
    for (a, b) in pairs {
        let body = |cond: &str| {
            format!(
                "block0(v0: i8, v1: i8):
    v2 = icmp {cond} v0, v1
    v3 = uextend.i64 v2
    return v3"
            )
        };
        let (reported, summary) = planted("(i8, i8) -> i64", &body(a), &body(b), "");
        assert!(reported, "{a} against {b}: {summary}");
    }
}

/// `brif` on an `i128` (a `bor` of it, run on the frame too) whose low 64 bits are zero (the
/// edge argument MIN) takes the nonzero side; on its low half reduced to `i64` it does not:
/// the planted merge is reported.
#[test]
fn brif_on_an_i128_tests_its_high_half() {
    let body = |cond: &str| {
        format!(
            "block0(v0: i128):
{cond}    brif v9, block1, block2
block1:
    v1 = iconst.i64 1
    return v1
block2:
    v2 = iconst.i64 0
    return v2"
        )
    };
    let f_body = body("    v9 = bor v0, v0\n");
    let g_body = body("    v9 = ireduce.i64 v0\n");
    let (reported, summary) = planted("(i128) -> i64", &f_body, &g_body, "");
    assert!(reported, "{summary}");
}

/// Two bodies that agree natively: the sign bit of an `i8` tested by `band` with 0x80 then
/// `brif` on the `i8`, and by `icmp slt` with 0; block parameters passed through `brif` and
/// `jump` swapped. The planted "merge" passes: no false mismatch.
#[test]
fn a_sign_bit_tested_two_ways_is_one_behaviour() {
    let tail = "block1(v5: i8, v6: i8):
    jump block3(v6, v5)
block2(v7: i8, v8: i8):
    jump block3(v7, v8)
block3(v9: i8, v10: i8):
    v11 = isub v9, v10
    v12 = sextend.i64 v11
    return v12";
    let f_body = format!(
        "block0(v0: i8, v1: i8):
    v2 = iconst.i8 0x80
    v3 = band v0, v2
    brif v3, block1(v0, v1), block2(v0, v1)
{tail}"
    );
    let g_body = format!(
        "block0(v0: i8, v1: i8):
    v2 = iconst.i8 0
    v3 = icmp slt v0, v2
    brif v3, block1(v0, v1), block2(v0, v1)
{tail}"
    );
    let (reported, summary) = planted("(i8, i8) -> i64", &f_body, &g_body, "");
    assert!(!reported, "{summary}");
}
