//! Guided arguments for vector comparisons (`src/verify/guide.rs`): a vector `icmp` or `fcmp`
//! decides lane by lane, a vector argument that is one operand (lane by lane, up to a small
//! difference) is made the other as a whole, and a lane taken out of a vector argument and
//! compared with a scalar is aimed at as an argument of its own. Each test plants a wrong merge
//! (`%g` given `%f`'s body, whose constant differs) that only the constant itself tells apart,
//! and the real merge of the same module, which must pass.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// `%f` and `%g` of signature `sig` with bodies `body(f)` and `body(g)`: whether the wrong
/// merge (`%g` given `%f`'s body) is reported, with the summary, after checking that the real
/// merge passes.
fn wrong_merge_is_reported(sig: &str, body: impl Fn(&str) -> String, f: &str, g: &str) {
    let module = |g_body: &str| {
        format!(
            "function %f{sig} {{\n{}\n}}\n\nfunction %g{sig} {{\n{g_body}\n}}\n",
            body(f)
        )
    };
    let original = read(&module(&body(g)));
    let mut merged = original.clone();
    let report = merge_module(&mut merged, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the bodies differ");
    let options = VerifyOptions::default();
    let real = verify_merge(&original, &merged, &report, &options);
    assert!(real.is_ok(), "the real merge: {}", real.summary());
    let wrong = verify_merge(&original, &read(&module(&body(f))), &report, &options);
    assert!(!wrong.is_ok(), "a wrong merge passes: {}", wrong.summary());
}

#[test]
fn an_i8x16_equality_with_a_constant_is_guided() {
    let body = |k: &str| {
        format!(
            "block0(v0: i8x16):\n    v1 = vconst.i8x16 [{k}]\n    v2 = icmp eq v0, v1\n    v3 = vall_true v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    wrong_merge_is_reported(
        "(i8x16) -> i32",
        body,
        "3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3",
        "3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 4",
    );
}

/// The parameter plus a splat of 3, compared with a constant: the argument is the operand up to
/// a difference in every lane, kept when it is made the other operand.
#[test]
fn an_i64x2_equality_of_a_shifted_parameter_is_guided() {
    let body = |k: &str| {
        format!(
            "block0(v0: i64x2):\n    v5 = iconst.i64 3\n    v6 = splat.i64x2 v5\n    v7 = iadd v0, v6\n    v1 = vconst.i64x2 [{k}]\n    v2 = icmp eq v7, v1\n    v3 = vall_true v2\n    brif v3, block1, block2\nblock1:\n    v8 = iconst.i32 1\n    return v8\nblock2:\n    v9 = iconst.i32 0\n    return v9"
        )
    };
    wrong_merge_is_reported(
        "(i64x2) -> i32",
        body,
        "123456789 987654321",
        "123456789 987654320",
    );
}

/// A float vector compared with a constant: lanes as their bits.
#[test]
fn an_f32x4_equality_with_a_constant_is_guided() {
    let body = |k: &str| {
        format!(
            "block0(v0: f32x4):\n    v1 = vconst.f32x4 [{k}]\n    v2 = fcmp eq v0, v1\n    v3 = vall_true v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    wrong_merge_is_reported(
        "(f32x4) -> i32",
        body,
        "0x1.5p3 0x1.8p-2 -0x1.4p5 0x1.0p10",
        "0x1.5p3 0x1.8p-2 -0x1.4p5 0x1.2p10",
    );
}

/// One lane taken out of a vector parameter and compared with a scalar constant.
#[test]
fn a_lane_of_a_vector_compared_with_a_scalar_is_guided() {
    let body = |k: &str| {
        format!(
            "block0(v0: i32x4):\n    v1 = extractlane v0, 2\n    v5 = iconst.i32 {k}\n    v2 = icmp eq v1, v5\n    v4 = uextend.i32 v2\n    return v4"
        )
    };
    wrong_merge_is_reported("(i32x4) -> i32", body, "7340031", "7340032");
}
