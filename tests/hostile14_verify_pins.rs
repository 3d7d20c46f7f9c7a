//! hostile14: memory pins (`src/verify/memory.rs`, `guide.rs`): loads of memory nothing stored
//! to steered to what they are compared with, at narrow, unaligned and word-crossing places,
//! one after another; on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// A body of signature `(i64 p) -> i64`: 5 unless the byte at `p + 3` is 17 and the `i16` at
/// `p + 7` (across an 8-byte word's end) is 0x7ff1, then `reached`.
fn two_tags(reached: i64) -> String {
    format!(
        "block0(v0: i64):
    v1 = uload8.i64 v0+3
    v2 = iconst.i64 17
    v3 = icmp eq v1, v2
    brif v3, block1, block3
block1:
    v4 = load.i16 v0+7
    v5 = iconst.i16 0x7ff1
    v6 = icmp eq v4, v5
    brif v6, block2, block3
block2:
    v7 = iconst.i64 {reached}
    return v7
block3:
    v8 = iconst.i64 5
    return v8"
    )
}

/// The planted merge differs only past two loaded tags, an unaligned byte and an `i16` across
/// a word's end (natively, on a buffer holding both tags, `%f` returns 1000 and `%g` 2000:
/// compiled with `clif-merge -o`, linked by gcc). The first tag is pinned and its run reaches
/// the second comparison; the tuple pinning the second tag too must be run within the default
/// 64 runs. hostile14 found it was not (the queue filled with pins of the first tag first);
/// since the guided queue's changes of 2026-11-27 (a pin on a word already pinned replaces it,
/// pinned words count as loaded) it is reported.
#[test]
fn a_second_tag_is_steered_with_the_first_kept() {
    let (reported, summary) = planted("(i64) -> i64", &two_tags(1000), &two_tags(2000), "");
    assert!(reported, "{summary}");
}

/// A body of signature `(i64 p) -> i64`: the byte at `p + 3` is compared with 17, then `p`'s
/// first word is stored 0, over that byte; the sum of the byte read again and `k`.
fn tag_then_stored_over(k: i64) -> String {
    format!(
        "block0(v0: i64):
    v1 = uload8.i64 v0+3
    v2 = iconst.i64 17
    v3 = icmp eq v1, v2
    v4 = iconst.i64 0
    store v4, v0
    v5 = uload8.i64 v0+3
    v6 = iconst.i64 {k}
    v7 = iadd v5, v6
    v8 = uextend.i64 v3
    v9 = iadd v7, v8
    return v9"
    )
}

/// A pinned byte that is stored over reads as stored (0) on both sides, not as pinned: the
/// two bodies differ by `k` only, and the planted merge is reported whatever the pins.
#[test]
fn a_store_over_a_pinned_byte_reads_as_stored() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &tag_then_stored_over(1),
        &tag_then_stored_over(2),
        "",
    );
    assert!(reported, "{summary}");
}
