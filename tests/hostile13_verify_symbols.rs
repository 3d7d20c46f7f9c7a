//! hostile13: `--verify`'s data symbols (`symbol_pages.rs`): each symbol had a page of its own,
//! and an offset of a page or more left it, on wrong merges planted by hand
//! (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// `%d337081` and `%d523190`: their hashes agree in a page number's 32 bits, so the second (in
/// the order of names) takes the page after the first's.
const AGREEING: [&str; 2] = ["%d337081", "%d523190"];

/// A body of signature `() -> i64`: the word at `symbol`.
fn loads(symbol: &str) -> String {
    format!(
        "    gv0 = symbol {symbol}\nblock0:\n    v0 = symbol_value.i64 gv0\n    \
         v1 = load.i64 v0\n    return v1"
    )
}

/// The planted merge gives `%g`, which loads the word at `%d523190`, `%f`'s body, which loads
/// the word 4096 bytes past `%d337081`: another object, or another word of the first one, in
/// any link. In the check the first was one page past the second's (pages of 4 KiB chosen by
/// the name's hash, the next free one where hashes agree), the page of `%d523190`, so both
/// bodies loaded the same word and the wrong merge passed. Now each symbol has a region of
/// up to 4 GiB.
#[test]
fn a_symbol_a_page_past_another_is_not_the_other() {
    let f_body = loads(&format!("{}+4096", AGREEING[0]));
    let (reported, summary) = planted("() -> i64", &f_body, &loads(AGREEING[1]), "");
    assert!(reported, "{summary}");
}

/// The same with the offset small: both load within their own pages, and the planted merge is
/// reported.
#[test]
fn a_symbol_plus_a_small_offset_is_not_another_symbol() {
    let f_body = loads(&format!("{}+8", AGREEING[0]));
    let (reported, summary) = planted("() -> i64", &f_body, &loads(AGREEING[1]), "");
    assert!(reported, "{summary}");
}

/// `%a` and `%b`, two functions of the module (the first and second names in order).
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

/// The planted merge gives `%g`, which returns the address of `%b`, `%f`'s body, which returns
/// the address one byte into `%a`'s code. In the check a function's address was its slot and an
/// offset moved it to the next name's slot, `%b`'s, so both bodies returned the same number.
/// Now slots are 16 MiB apart, and an address between two is no function's.
#[test]
fn a_function_symbol_plus_an_offset_is_not_the_next_function() {
    let f_body = "    gv0 = symbol %a+1\nblock0:\n    v0 = symbol_value.i64 gv0\n    return v0";
    let g_body = "    fn0 = %b() -> i64\nblock0:\n    v0 = func_addr.i64 fn0\n    return v0";
    let (reported, summary) = planted("() -> i64", f_body, g_body, TWO_FUNCTIONS);
    assert!(reported, "{summary}");
}
