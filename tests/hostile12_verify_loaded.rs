//! hostile12: wrong merges told apart only by a value loaded from memory (neighbours of
//! hostile11's loaded all-ones value, which verify8 fixes): what hashed memory holds, as the
//! fills make it (`memory.rs`), on merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use wrong_merges::{loaded_body, planted, real_merge_passes};

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
/// (`small_mostly`) and random bits once, so no draw makes a loaded value 17; the guided
/// search pins the loaded word to the constant it was compared with (verify9; before it, 64
/// runs, 0 mismatches, `%g` fully checked).
#[test]
fn a_wrong_merge_told_apart_by_a_loaded_tag_above_16_is_reported() {
    for ty in ["i8", "i32"] {
        let (reported, summary) = reported(ty, 17);
        assert!(reported, "{ty}: {summary}");
    }
}

/// At 16, within what hashed memory mostly holds, the same wrong merges were found when
/// hostile12 wrote this only by the luck of the draw, then not at all once verify8 and
/// mutation8 moved the draws; the loaded word pinned to 16 finds them.
#[test]
fn a_wrong_merge_told_apart_by_a_loaded_tag_of_16_is_reported() {
    for ty in ["i8", "i32"] {
        let (reported, summary) = reported(ty, 16);
        assert!(reported, "{ty}: {summary}");
    }
}

/// Constants no draw of hashed memory comes near (large, negative, every byte set apart), at
/// each width a tag is loaded with: the pin is the constant in the load's width, sign-extended
/// as the body compares it.
#[test]
fn a_wrong_merge_told_apart_by_a_loaded_constant_far_from_small_numbers_is_reported() {
    for (ty, k) in [
        ("i8", -5),
        ("i16", 1000),
        ("i32", -5),
        ("i32", 0x1234_5678),
        ("i64", 1000),
        ("i64", -0x1234_5678_9abc),
    ] {
        let (reported, summary) = reported(ty, k);
        assert!(reported, "{ty} {k}: {summary}");
    }
}

/// A right merge of two copies of a function testing a tag it loads from a symbol (one
/// address in every run): the guided runs pin that word to 17 and its neighbours, and a later
/// plain run must read it as hashed memory on both sides again. verify9's first version left
/// the last guided run's pins on the original side only, and reported right merges of the
/// corpus (7 on dprint, 90 on resvg `--similar`).
#[test]
fn a_right_merge_testing_a_tag_loaded_from_a_symbol_passes() {
    let body = |name: &str| {
        format!(
            "function %{name}(i64) -> i64 {{\n    gv0 = symbol %table\nblock0(v0: i64):\n    \
             v1 = symbol_value.i64 gv0\n    v2 = load.i32 v1\n    v3 = iconst.i32 17\n    \
             v4 = icmp eq v2, v3\n    v5 = uextend.i64 v4\n    v6 = iadd v5, v0\n    \
             return v6\n}}\n\n"
        )
    };
    let module = body("f") + &body("g") + &body("h");
    let (ok, summary, merged) = real_merge_passes(&module, Mode::Safe);
    assert_eq!(merged, 2, "{summary}");
    assert!(ok, "{summary}");
}

/// A `br_table` indexed by a loaded word minus one (Wasm's `br_table` on a tag numbered from
/// one): the case told apart is 30, past what hashed memory mostly reads (0 to 16), and the
/// index is compared with nothing, so only pinning the loaded word to the case's index plus
/// the difference reaches it (before, 256 runs took every side but that one and passed).
#[test]
fn a_wrong_merge_in_a_case_of_a_table_indexed_by_a_loaded_word_is_reported() {
    let body = |k: i64| {
        let cases: Vec<String> = (0..40)
            .map(|i| {
                if i == 30 {
                    "block2".to_string()
                } else {
                    "block1".to_string()
                }
            })
            .collect();
        format!(
            "block0(v0: i64):\n    v1 = load.i32 v0\n    v2 = iconst.i32 1\n    \
             v3 = isub v1, v2\n    br_table v3, block1, [{}]\nblock1:\n    \
             v4 = iconst.i64 5\n    return v4\nblock2:\n    v5 = iconst.i64 {k}\n    \
             return v5",
            cases.join(", ")
        )
    };
    let (reported, summary) = planted("(i64) -> i64", &body(6), &body(7), "");
    assert!(reported, "{summary}");
}
