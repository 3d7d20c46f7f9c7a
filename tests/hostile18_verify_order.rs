//! hostile18: the same check twice, and with the module's functions in another order, reports
//! the same (the module docs of `src/verify/mod.rs`: "the same report whatever the order of the
//! module's functions"; pieces of 64 functions share their two sides).

use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

/// Function `i` of a mixed module: loaded tags, tables, loops that do not end, stores.
fn function(i: usize) -> String {
    let k = 3 + i as i64 % 23;
    match i % 4 {
        0 => format!(
            "function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = load.i32 v0\n    \
             v2 = iconst.i32 {k}\n    v3 = icmp eq v1, v2\n    v4 = uextend.i64 v3\n    \
             return v4\n}}\n\n"
        ),
        1 => {
            let cases: Vec<&str> = (0..30)
                .map(|c| if c == k as usize { "block2" } else { "block1" })
                .collect();
            format!(
                "function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n    v9 = load.i32 v0\n    \
                 v2 = iconst.i32 1\n    v3 = isub v9, v2\n    br_table v3, block1, [{}]\n\
                 block1:\n    v4 = iconst.i64 5\n    return v4\nblock2:\n    v5 = iconst.i64 6\n    \
                 return v5\n}}\n\n",
                cases.join(", ")
            )
        }
        2 => format!(
            "function %f{i}(i64) {{\n    gv0 = symbol %buf\nblock0(v0: i64):\n    \
             v1 = symbol_value.i64 gv0\n    v2 = iconst.i64 {k}\n    jump block1(v2)\n\
             block1(v3: i64):\n    store v3, v1\n    v4 = iadd v3, v0\n    jump block1(v4)\n}}\n\n"
        ),
        _ => format!(
            "function %f{i}(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n    \
             v2 = iconst.i64 {k}\n    v3 = imul v0, v2\n    v4 = iadd v3, v1\n    \
             v5 = icmp ult v4, v1\n    brif v5, block1, block2\nblock1:\n    return v0\n\
             block2:\n    return v4\n}}\n\n"
        ),
    }
}

/// The check of the module of functions `order` (each twice: `%f{i}` and a copy `%g{i}`, so
/// every one merges) merged in aliases mode: the report, as text to compare.
fn checked(order: &[usize]) -> (String, Vec<String>) {
    let mut text = String::new();
    for &i in order {
        text += &function(i);
        text += &function(i).replacen(&format!("%f{i}"), &format!("%g{i}"), 1);
    }
    let original = read_module_text(Path::new("t.clif"), &text, ReadOptions::default()).unwrap();
    let mut merged = original.clone();
    let report = merge_module(&mut merged, Mode::Aliases).0;
    let options = VerifyOptions {
        run_unchanged: true,
        fuel: 5_000,
        ..VerifyOptions::default()
    };
    let v: VerifyReport = verify_merge(&original, &merged, &report, &options);
    let mut mismatches: Vec<String> = v.mismatches.iter().map(|m| m.to_string()).collect();
    mismatches.sort();
    (v.summary(), mismatches)
}

#[test]
fn the_report_is_the_same_twice_and_in_any_order_of_the_functions() {
    let forward: Vec<usize> = (0..48).collect();
    let backward: Vec<usize> = forward.iter().rev().copied().collect();
    let first = checked(&forward);
    assert!(first.1.is_empty(), "{first:?}");
    assert_eq!(first, checked(&forward), "twice");
    assert_eq!(first, checked(&backward), "reversed");
}
