//! hostile14: `--verify`'s stack addresses as both sides see them (`outcome.rs`, `state.rs`):
//! a stack address is compared as (frame, slot, offset), the frame by its place among the live
//! frames that have slots, on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// `%rec_own` and `%rec_outer`, of signature `(i64 d, i64 outer) -> i64`: each stores `d` into
/// its 8-byte slot and recurses on `d + 1` until `d` is `bottom`, threading down the slot of
/// the frame where `d` was 0; at the bottom it returns what the import `%use` returns for a
/// pointer: `%rec_own` passes its own slot (which holds `bottom`), `%rec_outer` the top
/// frame's (which holds 0).
fn recursions(bottom: u32) -> String {
    let rec = |name: &str, passed: &str| {
        format!(
            "function %{name}(i64, i64) -> i64 {{
    ss0 = explicit_slot 8
    sig0 = (i64) -> i64 system_v
    sig1 = (i64, i64) -> i64 system_v
    fn0 = %use sig0
    fn1 = %{name} sig1
block0(v0: i64, v1: i64):
    v2 = stack_addr.i64 ss0
    store v0, v2
    v3 = iconst.i64 0
    v4 = icmp eq v0, v3
    v5 = select v4, v2, v1
    v6 = iconst.i64 {bottom}
    v7 = icmp eq v0, v6
    brif v7, block1, block2
block1:
    v8 = call fn0({passed})
    return v8
block2:
    v11 = iconst.i64 1
    v9 = iadd v0, v11
    v10 = call fn1(v9, v5)
    return v10
}}
"
        )
    };
    rec("rec_own", "v2") + &rec("rec_outer", "v5")
}

/// A body of signature `() -> i64`: what `callee` returns from the top, `(0, 0)`.
fn calls_from_the_top(callee: &str) -> String {
    format!(
        "    sig0 = (i64, i64) -> i64 system_v
    fn0 = %{callee} sig0
block0:
    v0 = iconst.i64 0
    v1 = call fn0(v0, v0)
    return v1"
    )
}

/// The planted merge gives `%g`, whose recursion passes `%use` the top frame's slot, `%f`'s
/// body, whose recursion passes the bottom frame's: 257 frames apart in the check, 256 with
/// `%f` (which has no slots) left out, so both are "frame 1 slot 0 + 0" (a frame's place is
/// a `u8`), every store the same, and the wrong merge passes. Natively `%use` sees two
/// pointers to other words: with `int64_t use(int64_t *p) { return *p; }` linked in, `%f`
/// returns 256 and `%g` 0 (the planted module compiled with `clif-merge -o` and gcc).
/// (Fixed: a frame's place is a `u32`.)
#[test]
fn a_slot_of_a_frame_256_places_up_is_not_the_innermost_frames() {
    let (reported, summary) = planted(
        "() -> i64",
        &calls_from_the_top("rec_own"),
        &calls_from_the_top("rec_outer"),
        &recursions(256),
    );
    assert!(reported, "{summary}");
}

/// The same recursion 255 calls deep: the two frames have other places, and the planted merge
/// is reported (the places tell frames apart below 256).
#[test]
fn a_slot_of_a_frame_255_places_up_is_not_the_innermost_frames() {
    let (reported, summary) = planted(
        "() -> i64",
        &calls_from_the_top("rec_own"),
        &calls_from_the_top("rec_outer"),
        &recursions(255),
    );
    assert!(reported, "{summary}");
}

/// `%above`, of signature `(i64 p) -> i64`: whether `p` is above its own slot's address.
const ABOVE: &str = "
function %above(i64) -> i64 {
    ss0 = explicit_slot 8
block0(v0: i64):
    v1 = stack_addr.i64 ss0
    v2 = icmp ugt v0, v1
    v3 = uextend.i64 v2
    return v3
}
";

/// The planted merge gives `%g`, which returns 0, `%f`'s body, which returns whether its own
/// slot is above its callee's (`%above`). In the check frames are laid out upwards, a
/// callee's above its caller's, so `%f` returns 0 and the wrong merge passes; natively the
/// stack grows down and `%f` returns 1 (the module compiled with `clif-merge -o` for x86_64
/// and aarch64, linked by gcc, run natively and under qemu-aarch64).
/// (Fixed: the check's stack grows down, each frame below its caller's.)
#[test]
fn a_callers_slot_is_above_its_callees() {
    let f_body = "    ss0 = explicit_slot 8
    sig0 = (i64) -> i64 system_v
    fn0 = %above sig0
block0:
    v0 = stack_addr.i64 ss0
    v1 = call fn0(v0)
    return v1";
    let g_body = "block0:\n    v0 = iconst.i64 0\n    return v0";
    let (reported, summary) = planted("() -> i64", f_body, g_body, ABOVE);
    assert!(reported, "{summary}");
}
