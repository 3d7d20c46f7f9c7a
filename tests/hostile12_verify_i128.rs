//! hostile12: `--verify` on functions that compare an `i128`: the guided arguments
//! (`guide.rs`) compute the distance between an argument and an operand in `i128`, which
//! overflows at 128 bits. Found by merging Cranelift's own run tests (`../shared/runtests`,
//! every function twice over) with `--verify`: `i128-select-float.clif` panicked.

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::real_merge_passes;

/// `%f` and `%g`, the same: whether the `i128` argument equals `operand` (the body of a value
/// `v9`).
fn twins(operand: &str) -> String {
    let f = |name: &str| {
        format!(
            "function %{name}(i128) -> i8 {{\nblock0(v0: i128):\n{operand}\n    v3 = icmp eq v0, v9\n    \
             return v3\n}}\n\n"
        )
    };
    f("f") + &f("g")
}

/// 42, as an `i128`.
const FORTY_TWO: &str = "    v1 = iconst.i64 42\n    v9 = uextend.i128 v1";

/// `i128::MIN`: 1 shifted left 127 times.
const MIN: &str = "    v1 = iconst.i64 1\n    v2 = uextend.i128 v1\n    v4 = iconst.i64 127\n    \
                   v9 = ishl v2, v4";

/// The merge of `%g` into `%f` is right; its check took the `i128` edge value MIN as the
/// argument compared with 42 and aimed it at 42: `to - from` (`shifted`, guide.rs:438) is
/// `42 - i128::MIN`, which overflows (`attempt to subtract with overflow` in a debug build,
/// exit 101 from `clif-merge --verify`; a release build wraps, which is the right value).
#[test]
fn verify_checks_a_merge_of_an_i128_compared_with_a_constant() {
    let (ok, summary, merged) = real_merge_passes(&twins(FORTY_TWO), clif_merge::Mode::Safe);
    assert_eq!(merged, 1);
    assert!(ok, "{summary}");
}

/// The same with `i128::MIN` as the operand: the argument 0 is `2^127` from it, and
/// `near_by`'s `diff.abs()` of `i128::MIN` overflows too.
#[test]
fn verify_checks_a_merge_of_an_i128_compared_with_min() {
    let (ok, summary, merged) = real_merge_passes(&twins(MIN), clif_merge::Mode::Safe);
    assert_eq!(merged, 1);
    assert!(ok, "{summary}");
}

/// The held neighbour: the same twins at 64 bits (compared with 42 and with `i64::MIN`) are
/// checked, and the right merge passes.
#[test]
fn verify_checks_a_merge_of_an_i64_compared_with_a_constant_or_min() {
    for operand in [
        "    v9 = iconst.i64 42",
        "    v1 = iconst.i64 1\n    v4 = iconst.i64 63\n    v9 = ishl v1, v4",
    ] {
        let text = twins(operand).replace("i128", "i64");
        let (ok, summary, merged) = real_merge_passes(&text, clif_merge::Mode::Safe);
        assert_eq!(merged, 1);
        assert!(ok, "{summary}");
    }
}
