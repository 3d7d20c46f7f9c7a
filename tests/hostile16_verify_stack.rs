//! hostile16: `--verify`'s stack (`src/verify/state.rs`) against what Cranelift compiles:
//! natively a frame is only as aligned as the stack pointer, 16 bytes on x86_64 and aarch64,
//! whatever a slot's `align=` says, so the check lays slots out to their declared alignment up
//! to 16 bytes only (`MAX_SLOT_ALIGN`; it was 4 KiB when hostile16 found the first two tests).
//! Wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// A body of signature `(i64) -> i64`: the low bits under `mask` of the address of an 8-byte
/// slot aligned to `align`.
fn low_bits_of_a_slot(align: u32, mask: u32) -> String {
    format!(
        "    ss0 = explicit_slot 8, align = {align}
block0(v0: i64):
    v1 = stack_addr.i64 ss0
    v2 = iconst.i64 {mask}
    v3 = band v1, v2
    return v3"
    )
}

/// Returns 0.
const ZERO: &str = "block0(v0: i64):\n    v1 = iconst.i64 0\n    return v1";

/// `%g` returns the low 12 bits of its slot's address, declared 4,096-aligned; the planted
/// merge makes it return 0. Compiled by Cranelift for x86_64 or aarch64 the frame is only
/// 16-aligned and `%g` returns the stack pointer's low bits (3,632, 3,584, 3,520, 3,440 on
/// x86_64 called from C at four stack depths, 1,600 ... on aarch64 under qemu; hostile16's
/// report), never 0 in those calls. The check laid the slot out on a multiple of 4,096, so `%g`
/// returned 0 on every run and the wrong merge passed; laid out 16-aligned, it is reported.
#[test]
fn a_wrong_merge_reading_the_low_bits_of_an_over_aligned_slot_is_reported() {
    let (reported, summary) = planted("(i64) -> i64", ZERO, &low_bits_of_a_slot(4096, 4095), "");
    assert!(reported, "{summary}");
}

/// The same at 32 bytes: natively bit 4 of the slot's address is the stack pointer's, 0 or 16
/// from one call to the next; the check placed the slot on an odd multiple of 32 (bit 4 always
/// 0), and now on an odd multiple of 16.
#[test]
fn a_wrong_merge_reading_bit_4_of_a_32_aligned_slot_is_reported() {
    let (reported, summary) = planted("(i64) -> i64", ZERO, &low_bits_of_a_slot(32, 16), "");
    assert!(reported, "{summary}");
}

/// The held neighbour: at 16 bytes (what the stack pointer natively keeps) the check's slot
/// has the low bits natively seen, and a merge that reads bit 3 of a 16-aligned slot's
/// address as 0 is right: it passes. Natively bit 3 of a 16-aligned slot is 0 on both
/// targets.
#[test]
fn the_low_bits_of_a_16_aligned_slot_are_zero_as_natively() {
    let (reported, summary) = planted("(i64) -> i64", ZERO, &low_bits_of_a_slot(16, 15), "");
    // `planted` asks whether the check reports the planted merge; here it is a right one.
    assert!(!reported, "{summary}");
}

/// A body of signature `(i64) -> i64` with an 8-byte slot, passing `v1` to the import `%use`
/// (while the frame is live) and returning what it returns.
fn passes_to_an_import(v1: &str) -> String {
    format!(
        "    ss0 = explicit_slot 8
    sig0 = (i64) -> i64 system_v
    fn0 = %use sig0
block0(v0: i64):
    v1 = {v1}
    v2 = call fn0(v1)
    return v2"
    )
}

/// `%f` passes the import `%use` the address of its slot; `%g` passes the number
/// `0x7eff_ffe0`, which the check's 32-bit address of that slot is (`STACK_TOP_32` less the
/// frame's 32 bytes): `observed` takes any number in the live stack's range below either top
/// for a place, so the planted merge that gives `%g` `%f`'s body passes `%use` the same place.
/// Natively `%f` passes an address on the stack (`0x7ffc...` on x86_64 Linux), never that
/// number. (A stack address "is a place, which no number equals", docs/testing.md.)
#[test]
#[ignore = "defect: a number in the check's 32-bit stack range is taken for a stack address, so a wrong merge passing a slot's address for it passes"]
fn a_number_passed_is_not_taken_for_a_stack_address_below_the_32_bit_top() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &passes_to_an_import("stack_addr.i64 ss0"),
        &passes_to_an_import("iconst.i64 0x7eff_ffe0"),
        "",
    );
    assert!(reported, "{summary}");
}

/// A body of signature `(i64) -> i64` with an 8-byte slot, returning `v1`.
fn with_a_slot(v1: &str) -> String {
    format!("    ss0 = explicit_slot 8\nblock0(v0: i64):\n    v1 = {v1}\n    return v1")
}

/// `%f` returns the address of its slot, `%g` the number `0x7fef_ffff_ffe0`: the frame is gone
/// when the results are compared, so the address is compared as the number it is in the
/// check's layout (`STACK_TOP_64` less the frame's 32 bytes), which `%g`'s is. Natively the
/// address is the stack pointer's, never that number.
#[test]
#[ignore = "defect: a returned address of the entry's own slot is compared as the check's raw number, so a wrong merge returning it for that number passes"]
fn a_returned_number_is_not_taken_for_a_slot_address_below_the_64_bit_top() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &with_a_slot("stack_addr.i64 ss0"),
        &with_a_slot("iconst.i64 0x7fef_ffff_ffe0"),
        "",
    );
    assert!(reported, "{summary}");
}

/// The held neighbour: a number 16 below the frame (just past the live stack) is a number,
/// and the same wrong merge with an import is reported.
#[test]
fn a_number_passed_below_the_live_stack_is_a_number() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &passes_to_an_import("stack_addr.i64 ss0"),
        &passes_to_an_import("iconst.i64 0x7eff_ffd0"),
        "",
    );
    assert!(reported, "{summary}");
}
