//! hostile14: function addresses (`state.rs`, `function_stride_bits`): 32-bit addresses stored,
//! loaded back and called; on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// `%a` and `%b`, of signature `() -> i64`, returning 1 and 2.
const TWO_FUNCTIONS: &str = "
function %a() -> i64 {
block0:
    v0 = iconst.i64 1
    return v0
}

function %b() -> i64 {
block0:
    v0 = iconst.i64 2
    return v0
}
";

/// A body of signature `() -> i64`: `callee`'s 32-bit address stored into a slot, loaded
/// back and called.
fn calls_through_a_stored_i32(callee: &str) -> String {
    format!(
        "    ss0 = explicit_slot 4
    sig0 = () -> i64 system_v
    fn0 = %{callee} sig0
block0:
    v0 = func_addr.i32 fn0
    v1 = stack_addr.i64 ss0
    store v0, v1
    v2 = load.i32 v1
    v3 = call_indirect sig0, v2()
    return v3"
    )
}

/// The planted merge gives `%g`, which calls `%b` through its stored 32-bit address, `%f`'s
/// body, which calls `%a` so: each address should run its own function (1 and 2) and the
/// planted merge be reported. Every run is unsupported instead (`call_indirect`): the
/// interpreter's `step` widens an `i32` target to an `i64` address, whose top bits name the
/// stack region, and finds no function there; `opaque_callee` decodes the 32-bit address
/// right but hands a function's to `step`. Not a false "ok": the summary says both functions
/// were checked "not at all" (but `is_ok`). Calls through 32-bit function addresses (wasm
/// tables, 32-bit targets) are never checked.
#[test]
#[ignore = "defect: a call_indirect through a func_addr.i32 address is unsupported on every run (step reads it as a 64-bit stack address), so it is never checked"]
fn a_stored_i32_function_address_calls_its_own_function() {
    let (reported, summary) = planted(
        "() -> i64",
        &calls_through_a_stored_i32("a"),
        &calls_through_a_stored_i32("b"),
        TWO_FUNCTIONS,
    );
    assert!(reported, "{summary}");
}

/// A body of signature `() -> i64`: the difference of two 32-bit function addresses, each
/// zero-extended, compared unsigned: whether `%first` is below `%second`.
fn orders(first: &str, second: &str) -> String {
    format!(
        "    sig0 = () -> i64 system_v
    fn0 = %{first} sig0
    fn1 = %{second} sig0
block0:
    v0 = func_addr.i32 fn0
    v1 = func_addr.i32 fn1
    v2 = icmp ult v0, v1
    v3 = uextend.i64 v2
    return v3"
    )
}

/// Comparing `%a`'s address with `%b`'s and the other way round: 32-bit addresses of two
/// functions are two numbers, ordered; the planted merge is reported.
#[test]
fn i32_function_addresses_are_ordered_numbers() {
    let (reported, summary) = planted(
        "() -> i64",
        &orders("a", "b"),
        &orders("b", "a"),
        TWO_FUNCTIONS,
    );
    assert!(reported, "{summary}");
}
