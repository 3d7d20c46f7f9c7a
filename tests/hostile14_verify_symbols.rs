//! hostile14: `--verify`'s data symbols (`symbol_pages.rs`, `state.rs`): where a symbol plus
//! an offset is, on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// A body of signature `() -> i64`: the word at `symbol`, loaded with `flags`.
fn loads(symbol: &str, flags: &str) -> String {
    format!(
        "    gv0 = symbol {symbol}\nblock0:\n    v0 = symbol_value.i64 gv0\n    \
         v1 = load.i64 {flags} v0\n    return v1"
    )
}

/// The planted merge gives `%g`, which loads the word 16 bytes before `%a`, `%f`'s body, which
/// loads the word 8 bytes before it: the module's only symbol has the first region, at the
/// start of the symbols' space, and below it nothing is mapped, so both loads (which may
/// trap) trap alike and the wrong merge passes. Natively both words are in the data before
/// `a` (with `a` defined after the words 11 and 22, `%f` returns 22 and `%g` 11: the module
/// compiled with `clif-merge -o` and linked by gcc).
#[test]
#[ignore = "defect: a load below the first symbol's region traps, so two loads at other negative offsets from it pass as one"]
fn a_load_before_the_first_symbol_is_not_another_load_before_it() {
    let (reported, summary) = planted("() -> i64", &loads("%a-8", ""), &loads("%a-16", ""), "");
    assert!(reported, "{summary}");
}

/// The same loads marked `notrap`: they read memory, other words, and the planted merge is
/// reported.
#[test]
fn a_notrap_load_before_the_first_symbol_is_not_another_load_before_it() {
    let (reported, summary) = planted(
        "() -> i64",
        &loads("%a-8", "notrap"),
        &loads("%a-16", "notrap"),
        "",
    );
    assert!(reported, "{summary}");
}

/// The same loads from a symbol after the first (`%b`, with `%a` named too): below it is
/// `%a`'s region, mapped, and the planted merge is reported.
#[test]
fn a_load_before_the_second_symbol_is_not_another_load_before_it() {
    let rest = format!("function %h() -> i64 {{\n{}\n}}\n", loads("%a", ""));
    let (reported, summary) = planted("() -> i64", &loads("%b-8", ""), &loads("%b-16", ""), &rest);
    assert!(reported, "{summary}");
}
