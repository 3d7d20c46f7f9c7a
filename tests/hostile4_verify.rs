//! Hostile inputs for `--verify` (fourth pass): wrong merges planted by hand that the check must
//! report. The "merged" module is the original with one function's body replaced by another's
//! (`%g` given `%f`'s body, as `--mode aliases` would make it), and the report says nothing was
//! merged, so `%g` runs its own (wrong) body on the merged side.

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// Asserts that `%g` given `%f`'s body is reported.
fn assert_reported(what: &str, sig: &str, f_body: &str, g_body: &str) {
    let (reported, summary) = planted(sig, f_body, g_body, "");
    assert!(reported, "{what}: a wrong merge passes: {summary}");
}

/// A call to an import as `f` and `g` make it: `%ext` declared with `decl`.
fn calling_ext(decl: &str, ty: &str) -> String {
    format!("    fn0 = %ext{decl}\nblock0(v0: {ty}):\n    v1 = call fn0(v0)\n    return v1")
}

/// The import's argument is sign-extended by `%f`'s call and zero-extended by `%g`'s: natively
/// the callee sees other upper bits (`%ext(i8 sext)` against `%ext(i8 uext)`), but `--verify`
/// models an import call by its callee's name and argument values only, so giving `%g` `%f`'s
/// body passes. (The merge itself keeps the two apart.)
#[test]
fn verify_reports_a_wrong_merge_of_calls_extending_an_argument_otherwise() {
    assert_reported(
        "argument extension",
        "(i8) -> i32",
        &calling_ext("(i8 sext) -> i32", "i8"),
        &calling_ext("(i8 uext) -> i32", "i8"),
    );
}

/// The same for the import's result: `-> i8 sext` against `-> i8 uext` (the caller of an
/// extending callee may rely on the upper bits; the object writer's jump rule was once wrong on
/// exactly this, see `hostile_jumps`).
#[test]
fn verify_reports_a_wrong_merge_of_calls_extending_a_result_otherwise() {
    assert_reported(
        "result extension",
        "(i8) -> i8",
        &calling_ext("(i8) -> i8 sext", "i8"),
        &calling_ext("(i8) -> i8 uext", "i8"),
    );
}

/// And the call's convention: `system_v` against `tail` puts arguments in other places.
#[test]
fn verify_reports_a_wrong_merge_of_calls_in_another_convention() {
    assert_reported(
        "call convention",
        "(i32) -> i32",
        &calling_ext("(i32) -> i32 system_v", "i32"),
        &calling_ext("(i32) -> i32 tail", "i32"),
    );
}

/// An indirect call's signature the same way: `(i32 sext)` against `(i32 uext)`.
#[test]
fn verify_reports_a_wrong_merge_of_indirect_calls_extending_otherwise() {
    let body = |ext: &str| {
        format!(
            "    sig0 = (i8 {ext}) -> i32\nblock0(v0: i64, v1: i8):\n    v2 = call_indirect sig0, v0(v1)\n    return v2"
        )
    };
    assert_reported(
        "indirect call extension",
        "(i64, i8) -> i32",
        &body("sext"),
        &body("uext"),
    );
}

/// A thread-local's address is not the symbol's address (`tls_value` of `%data` against
/// `symbol_value` of `%data`), but both run as the same value.
#[test]
fn verify_reports_a_wrong_merge_of_a_thread_local_and_a_plain_symbol() {
    assert_reported(
        "tls",
        "() -> i64",
        "    gv0 = symbol tls %data\nblock0:\n    v0 = tls_value.i64 gv0\n    return v0",
        "    gv0 = symbol %data\nblock0:\n    v0 = symbol_value.i64 gv0\n    return v0",
    );
}

/// An equality test against a constant the function computes (`0x1234 + 0x1234` against
/// `0x1235 + 0x1235`): steering values take only constants a parameter is compared with
/// directly, and random arguments never hit 0x2468 or 0x246a, so the wrong merge passes.
#[test]

fn verify_reports_a_wrong_merge_of_equality_tests_against_computed_constants() {
    let body = |k: u32| {
        format!(
            "block0(v0: i32):\n    v1 = iconst.i32 {k:#x}\n    v2 = iadd v1, v1\n    v3 = icmp eq v0, v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    assert_reported(
        "computed equality",
        "(i32) -> i32",
        &body(0x1234),
        &body(0x1235),
    );
}

/// What the check does see, so that the cases above fail for their difference alone: a
/// `big` against a `little` load, another trap code, another symbol offset, an `i128` result
/// that differs in its upper half.
#[test]
fn verify_reports_wrong_merges_it_can_see() {
    assert_reported(
        "endianness",
        "(i64) -> i32",
        "block0(v0: i64):\n    v1 = load.i32 big v0\n    return v1",
        "block0(v0: i64):\n    v1 = load.i32 little v0\n    return v1",
    );
    assert_reported(
        "trap code",
        "(i32) -> i32",
        "block0(v0: i32):\n    trapz v0, user1\n    return v0",
        "block0(v0: i32):\n    trapz v0, user2\n    return v0",
    );
    assert_reported(
        "symbol offset",
        "() -> i64",
        "    gv0 = symbol %data+8\nblock0:\n    v0 = symbol_value.i64 gv0\n    return v0",
        "    gv0 = symbol %data+16\nblock0:\n    v0 = symbol_value.i64 gv0\n    return v0",
    );
    assert_reported(
        "i128 upper half",
        "(i64) -> i128",
        "block0(v0: i64):\n    v1 = sextend.i128 v0\n    return v1",
        "block0(v0: i64):\n    v1 = uextend.i128 v0\n    return v1",
    );
    assert_reported(
        "import name",
        "(i8) -> i32",
        &calling_ext("(i8 sext) -> i32", "i8"),
        &calling_ext("(i8 sext) -> i32", "i8").replace("%ext", "%other"),
    );
}
