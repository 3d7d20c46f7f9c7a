//! hostile12: wrong merges told apart only by a value loaded from memory (neighbours of
//! hostile11's loaded all-ones value, which verify8 fixes): what hashed memory holds, as the
//! fills make it (`memory.rs`), on merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::{loaded_body, planted};

/// Whether the planted merge of `%g` (told apart where the `ty` loaded is `k`) into `%f`'s
/// body is reported, with the summary.
fn reported(ty: &str, k: i64) -> (bool, String) {
    planted(
        "(i64) -> i64",
        &loaded_body(ty, None),
        &loaded_body(ty, Some(k)),
        "",
    )
}

/// A tag compared with a constant after it is loaded (`if p->kind == 17`), the most common
/// test of real code: hashed memory reads words of 0 to 16 seven times in eight
/// (`small_mostly`) and random bits once, and no fill or guided argument makes a loaded value
/// one of the constants the function compares it with (the guide steers arguments only). At
/// 17, for a byte or a word: 64 runs, 0 mismatches, `%g` fully checked; natively the two
/// differ wherever the tag is 17.
#[test]
#[ignore = "defect: a loaded value is never made a constant the function compares it with: a wrong merge told apart by a loaded tag of 17 (just above the 0 to 16 hashed memory mostly reads) is reported ok and fully checked"]
fn a_wrong_merge_told_apart_by_a_loaded_tag_above_16_is_reported() {
    for ty in ["i8", "i32"] {
        let (reported, summary) = reported(ty, 17);
        assert!(reported, "{ty}: {summary}");
    }
}

/// At 16, within what hashed memory mostly holds, the same wrong merges were found when
/// hostile12 wrote this, by the luck of the draw: a word reads 16 in about one draw in twenty,
/// and only runs whose pointer argument is mapped read it. After today's byte-fill arguments
/// (verify8) and the zero share (mutation8) moved the draws, neither width is found: the same
/// defect as the tag of 17.
#[test]
#[ignore = "defect: a loaded value is never steered towards a constant the function compares it with: a tag of 16 is found only by the luck of the draw"]
fn a_wrong_merge_told_apart_by_a_loaded_tag_of_16_is_reported() {
    for ty in ["i8", "i32"] {
        let (reported, summary) = reported(ty, 16);
        assert!(reported, "{ty}: {summary}");
    }
}
