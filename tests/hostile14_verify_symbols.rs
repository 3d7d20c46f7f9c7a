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
/// (Fixed: a region of no name below the first symbol is mapped.)
#[test]
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

/// A function naming the symbols `%s0000` … up to `count` of them (its body returns 0).
fn names_symbols(count: usize) -> String {
    let gvs: String = (0..count)
        .map(|i| format!("    gv{i} = symbol %s{i:04}\n"))
        .collect();
    format!("function %names() -> i64 {{\n{gvs}block0:\n    v0 = iconst.i64 0\n    return v0\n}}\n")
}

/// The planted merge gives `%g`, which loads the word at `%s0001`, `%f`'s body, which loads
/// the word 2 GiB past `%s0000`, with 4,096 symbols named: `symbol_pages.rs` promises each a
/// region of 4 GiB "for up to 4,096 names", but it sizes regions by the bit length of the
/// count (13 for 4,096), so each has 2 GiB and `%s0000 + 2^31` is `%s0001`: both load one word
/// and the wrong merge passes. (Natively an object 2 GiB past another is another object or
/// none; the offset is large, the promise is what fails.)
/// (Fixed: regions sized by the count of regions, one below the first included.)
#[test]
fn with_4096_symbols_a_symbol_plus_2_gib_is_not_the_next() {
    let f_body = loads("%s0000+2147483648", "notrap");
    let g_body = loads("%s0001", "notrap");
    let (reported, summary) = planted("() -> i64", &f_body, &g_body, &names_symbols(4096));
    assert!(reported, "{summary}");
}

/// The same with 4,095 symbols: regions of 4 GiB, and the planted merge is reported.
#[test]
fn with_4095_symbols_a_symbol_plus_2_gib_is_not_the_next() {
    let f_body = loads("%s0000+2147483648", "notrap");
    let g_body = loads("%s0001", "notrap");
    let (reported, summary) = planted("() -> i64", &f_body, &g_body, &names_symbols(4095));
    assert!(reported, "{summary}");
}
