//! hostile13: `--verify`'s stack slots (`state.rs`): which slots a function not run may write,
//! on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// A body of signature `() -> i64`: stores 5 into its 16-byte slot, passes the slot's end
/// (one past its last byte, as a `begin, end` pair's end) to the import `%use`, then returns
/// `returned` (`v4` is the slot's first word read back).
fn passes_the_end(returned: &str) -> String {
    format!(
        "    ss0 = explicit_slot 16
    sig0 = (i64) system_v
    fn0 = %use sig0
block0:
    v1 = stack_addr.i64 ss0
    v2 = iconst.i64 5
    store v2, v1
    v9 = iconst.i64 16
    v3 = iadd v1, v9
    call fn0(v3)
{returned}"
    )
}

/// The planted merge gives `%g`, which reads its slot back after `%use(end)`, `%f`'s body,
/// which returns the 5 it stored: natively `%use` may write `end[-2]` (its `begin`), and with
/// `void use(int64_t *end) { end[-2] = 7; }` linked in the first returns 7 and the second 5
/// (checked with `clif-merge -o` and gcc). In the check the end's address was the stack's end,
/// in no slot, so the slot was not taken to have escaped and `%use` left it as it was:
/// reported ok. Now a pointer just past a slot makes that slot escape too.
#[test]
fn a_slot_whose_end_is_passed_out_may_be_written() {
    let f_body = passes_the_end("    v4 = iconst.i64 5\n    return v4");
    let g_body = passes_the_end("    v4 = load.i64 v1\n    return v4");
    let (reported, summary) = planted("() -> i64", &f_body, &g_body, "");
    assert!(reported, "{summary}");
}

/// The same with the slot's start passed: the slot escaped, and the planted merge is reported.
#[test]
fn a_slot_whose_start_is_passed_out_may_be_written() {
    let body = |returned: &str| passes_the_end(returned).replace("call fn0(v3)", "call fn0(v1)");
    let f_body = body("    v4 = iconst.i64 5\n    return v4");
    let g_body = body("    v4 = load.i64 v1\n    return v4");
    let (reported, summary) = planted("() -> i64", &f_body, &g_body, "");
    assert!(reported, "{summary}");
}

/// A body of signature `() -> i64`: stores 5 into `ss0`, stores `ss0`'s address into `ss1` as
/// the first lane of an `i64x2` (a struct of a pointer and a length copied in one vector
/// store, as optimized code copies it), passes `ss1`'s address to the import `%use2`, then
/// returns `returned`.
fn passes_a_pointer_in_a_vector(returned: &str) -> String {
    format!(
        "    ss0 = explicit_slot 16
    ss1 = explicit_slot 16
    sig0 = (i64) system_v
    fn0 = %use2 sig0
block0:
    v1 = stack_addr.i64 ss0
    v2 = iconst.i64 5
    store v2, v1
    v5 = scalar_to_vector.i64x2 v1
    v6 = stack_addr.i64 ss1
    store v5, v6
    call fn0(v6)
{returned}"
    )
}

/// The planted merge gives `%g`, which reads `ss0` back after `%use2(&ss1)`, `%f`'s body,
/// which returns the 5 it stored: with `void use2(int64_t **pp) { (*pp)[0] = 7; }` linked in
/// the first returns 7 and the second 5 natively (checked with `clif-merge -o` and gcc). In
/// the check a stack address stored inside a vector did not make its slot escape (only
/// `i32` and `i64` values were looked at), so `%use2` left `ss0` as it was: reported ok.
/// Now each 32- and 64-bit lane of a value stored or passed is looked at.
#[test]
fn a_slot_whose_address_is_stored_in_a_vector_may_be_written() {
    let f_body = passes_a_pointer_in_a_vector("    v4 = iconst.i64 5\n    return v4");
    let g_body = passes_a_pointer_in_a_vector("    v4 = load.i64 v1\n    return v4");
    let (reported, summary) = planted("() -> i64", &f_body, &g_body, "");
    assert!(reported, "{summary}");
}
