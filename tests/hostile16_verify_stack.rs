//! hostile16: `--verify`'s stack (`src/verify/state.rs`: slots laid out to their declared
//! alignment up to 4 KiB, `MAX_SLOT_ALIGN`) against what Cranelift compiles: natively a frame
//! is only as aligned as the stack pointer, 16 bytes on x86_64 and aarch64, whatever a slot's
//! `align=` says. Wrong merges planted by hand (`tests/common/planted.rs`).

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
/// merge makes it return 0. The check lays the slot out on a multiple of 4,096 (an odd one),
/// so `%g` returns 0 on every run; compiled by Cranelift for x86_64 or aarch64 the frame is
/// only 16-aligned and `%g` returns the stack pointer's low bits (3,632, 3,584, 3,520, 3,440
/// on x86_64 called from C at four stack depths, 1,600 ... on aarch64 under qemu; hostile16's
/// report), never 0 in those calls.
#[test]
#[ignore = "defect: the check aligns a slot to its declared align= (up to 4 KiB), which Cranelift's frames do not honour past 16 bytes, so a wrong merge reading the address's low bits passes"]
fn a_wrong_merge_reading_the_low_bits_of_an_over_aligned_slot_is_reported() {
    let (reported, summary) = planted("(i64) -> i64", ZERO, &low_bits_of_a_slot(4096, 4095), "");
    assert!(reported, "{summary}");
}

/// The same at 32 bytes: natively bit 4 of the slot's address is the stack pointer's, 0 or 16
/// from one call to the next; the check places the slot on an odd multiple of 32.
#[test]
#[ignore = "defect: the check aligns a slot to its declared align= (up to 4 KiB), which Cranelift's frames do not honour past 16 bytes, so a wrong merge reading the address's low bits passes"]
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
