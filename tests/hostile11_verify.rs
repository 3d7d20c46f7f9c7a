//! hostile11: `--verify` after today's whole-fuel retries and byte fills (`first_fill`), on
//! wrong merges planted by hand (`tests/common/planted.rs`): the mismatch names the fill it was
//! found on, and the check does not depend on the order of the module's functions.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::verify::{Fill, VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{MergeReport, Mode};
use wrong_merges::{loaded_body, merged, read};

/// `%name(p)`: the `ty` at `p`, sign-extended; with `told_apart`, 7 where that is
/// `told_apart`.
fn loaded(name: &str, ty: &str, told_apart: Option<i64>) -> String {
    let body = loaded_body(ty, told_apart);
    format!("function %{name}(i64) -> i64 {{\n{body}\n}}\n\n")
}

/// The original `{%f, %g}` (`%g` told apart where the `ty` loaded is `k`), the planted merge
/// (`%g` given `%f`'s body), in the order `f_first` says, and the real merge's report.
fn planted_pair(ty: &str, k: i64, f_first: bool) -> (String, String, MergeReport) {
    let (f, g, wrong_g) = (
        loaded("f", ty, None),
        loaded("g", ty, Some(k)),
        loaded("g", ty, None),
    );
    let (original, wrong) = match f_first {
        true => (f.clone() + &g, f + &wrong_g),
        false => (g + &f, wrong_g + &f),
    };
    let report = merged(&read(&original), Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    (original, wrong, report)
}

fn check(original: &str, wrong: &str, report: &MergeReport) -> VerifyReport {
    verify_merge(
        &read(original),
        &read(wrong),
        report,
        &VerifyOptions::default(),
    )
}

/// `%g` differs from `%f` only where the value loaded is all ones (-1): hashed memory does
/// not show it, the `0xFF` fill does, but only runs 31 and 63 start on it, and only where
/// their pointer argument is mapped memory (below 16 MiB). They took their own random
/// arguments, and for a load of `i8` or `i64` neither pointer was mapped: both sides trapped,
/// 64 runs, 0 mismatches, `%g` "fully checked" (hostile11). Natively the two differ wherever
/// the value is -1. Now a byte-fill run takes the arguments of an earlier run that returned
/// on hashed memory: every width, and under other names (other arguments), is reported.
#[test]
fn a_wrong_merge_told_apart_by_a_loaded_all_ones_value_is_reported_for_every_width() {
    for ty in ["i8", "i16", "i32", "i64"] {
        let (original, wrong, report) = planted_pair(ty, -1, true);
        let checked = check(&original, &wrong, &report);
        assert!(!checked.is_ok(), "{ty}: {}", checked.summary());
        for k in 0..6 {
            let (f, g) = (format!("f{k}"), format!("g{k}"));
            let original = loaded(&f, ty, None) + &loaded(&g, ty, Some(-1));
            let wrong = loaded(&f, ty, None) + &loaded(&g, ty, None);
            let report = merged(&read(&original), Mode::Aliases).0;
            assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
            let checked = check(&original, &wrong, &report);
            assert!(!checked.is_ok(), "{ty} {g}: {}", checked.summary());
        }
    }
}

/// The held neighbour: loads of `i16` and `i32` are told apart (a byte-fill run reads a mapped
/// pointer, or a guided run pins the word loaded to the -1 compared with), and each mismatch
/// names what memory read, the fill `Byte(0xff)` or the pinned words, so that it can be run
/// again.
#[test]
fn a_wrong_merge_told_apart_by_the_all_ones_fill_is_reported_with_that_fill() {
    for ty in ["i16", "i32"] {
        let (original, wrong, report) = planted_pair(ty, -1, true);
        let checked = check(&original, &wrong, &report);
        assert!(!checked.is_ok(), "{ty}: {}", checked.summary());
        for m in &checked.mismatches {
            assert!(
                m.memory == Fill::Byte(0xff) || !m.pinned.is_empty(),
                "{ty}: {:?} on {:?}",
                m.args,
                m.memory
            );
        }
    }
}

/// The same with the two functions in the other order: the same mismatches (by arguments and
/// fill) and the same summary; and the same check run twice gives the same report.
#[test]
fn the_check_does_not_depend_on_the_order_of_functions() {
    let described = |r: &VerifyReport| {
        let mut m: Vec<String> = (r.mismatches.iter())
            .map(|m| format!("{} {:?} {:?}", m.function, m.args, m.memory))
            .collect();
        m.sort();
        (r.summary(), m)
    };
    for (ty, k) in [("i16", -1), ("i64", -1), ("i32", 0), ("i64", 0x1234)] {
        let (original, wrong, report) = planted_pair(ty, k, true);
        let first = described(&check(&original, &wrong, &report));
        assert_eq!(first, described(&check(&original, &wrong, &report)));
        let (original, wrong, report) = planted_pair(ty, k, false);
        assert_eq!(
            first,
            described(&check(&original, &wrong, &report)),
            "{ty} {k}"
        );
    }
}

/// `%name(p)`: the two `ty` at `p` and `p + 8` (two words of memory), sign-extended and or-ed;
/// with `told_apart`, 7 where both are 0.
fn loaded_pair(name: &str, ty: &str, told_apart: bool) -> String {
    let load = |v: &str, offset: u32| match ty {
        "i64" => format!("    {v} = load.i64 v0+{offset}\n"),
        _ => format!("    {v}8 = load.{ty} v0+{offset}\n    {v} = sextend.i64 {v}8\n"),
    };
    let body = match told_apart {
        false => "    return v3".to_string(),
        true => {
            "    v9 = iconst.i64 0\n    v4 = icmp eq v3, v9\n    v5 = iconst.i64 7\n    v6 = select v4, v5, v3\n    \
                 return v6"
                .to_string()
        }
    };
    format!(
        "function %{name}(i64) -> i64 {{\nblock0(v10: i64):\n    v11 = iconst.i64 -8\n    \
         v0 = band v10, v11\n{}{}    v3 = bor v1, v2\n{body}\n}}\n\n",
        load("v1", 0),
        load("v2", 8)
    )
}

/// The neighbour on cleared memory: `%g` differs from `%f` only where the two aligned words at
/// its pointer argument both read 0, which hashed memory shows once in about 380 runs (each
/// word is 0 once in about 19) and the `0x00` fill shows wherever the pointer is mapped: a
/// byte-fill run must take a pointer that reaches memory. Over every width and several names
/// (a function's name seeds its arguments: other names, other pointers on the byte-fill runs).
#[test]
fn a_wrong_merge_told_apart_by_two_loaded_zero_words_is_reported_for_every_width() {
    for ty in ["i8", "i16", "i32", "i64"] {
        for k in 0..6 {
            let (f, g) = (format!("f{k}"), format!("g{k}"));
            let (f_body, g_body, wrong_g) = (
                loaded_pair(&f, ty, false),
                loaded_pair(&g, ty, true),
                loaded_pair(&g, ty, false),
            );
            let original = f_body.clone() + &g_body;
            let wrong = f_body + &wrong_g;
            let report = merged(&read(&original), Mode::Aliases).0;
            assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
            let checked = check(&original, &wrong, &report);
            assert!(!checked.is_ok(), "{ty} {g}: {}", checked.summary());
        }
    }
}
