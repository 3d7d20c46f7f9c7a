//! hostile11: `--verify` after today's whole-fuel retries and byte fills (`first_fill`), on
//! wrong merges planted by hand (`tests/common/planted.rs`): the mismatch names the fill it was
//! found on, and the check does not depend on the order of the module's functions.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::verify::{Fill, VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{MergeReport, Mode};
use wrong_merges::{merged, read};

/// `%name(p)`: the `ty` at `p`, sign-extended; with `told_apart`, 7 where that is
/// `told_apart`.
fn loaded(name: &str, ty: &str, told_apart: Option<i64>) -> String {
    let load = match ty {
        "i64" => "    v1 = load.i64 v0\n".to_string(),
        _ => format!("    v8 = load.{ty} v0\n    v1 = sextend.i64 v8\n"),
    };
    let body = match told_apart {
        None => "    return v1".to_string(),
        Some(k) => format!(
            "    v9 = iconst.i64 {k}\n    v3 = icmp eq v1, v9\n    v4 = iconst.i64 7\n    \
             v5 = select v3, v4, v1\n    return v5"
        ),
    };
    format!("function %{name}(i64) -> i64 {{\nblock0(v0: i64):\n{load}{body}\n}}\n\n")
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
/// their pointer argument is mapped memory (below 16 MiB): a random pointer traps on both
/// sides. For a load of `i8` or `i64` neither run's pointer is mapped (other loads make other
/// steering values, so other arguments): 64 runs, 0 mismatches, `%g` "fully checked". Natively
/// the two differ wherever the value is -1.
#[test]
#[ignore = "defect: the 0xFF fill starts only runs 31 and 63, whose pointer arguments may trap: a merge told apart by a loaded -1 (i8, i64) is reported ok and fully checked"]
fn a_wrong_merge_told_apart_by_a_loaded_all_ones_value_is_reported_for_every_width() {
    for ty in ["i8", "i64"] {
        let (original, wrong, report) = planted_pair(ty, -1, true);
        let checked = check(&original, &wrong, &report);
        assert!(!checked.is_ok(), "{ty}: {}", checked.summary());
    }
}

/// The held neighbour: loads of `i16` and `i32` are told apart (a byte-fill run reads a mapped
/// pointer), and each mismatch names the fill its runs read, `Byte(0xff)`, so that it can be
/// run again.
#[test]
fn a_wrong_merge_told_apart_by_the_all_ones_fill_is_reported_with_that_fill() {
    for ty in ["i16", "i32"] {
        let (original, wrong, report) = planted_pair(ty, -1, true);
        let checked = check(&original, &wrong, &report);
        assert!(!checked.is_ok(), "{ty}: {}", checked.summary());
        for m in &checked.mismatches {
            assert_eq!(m.memory, Fill::Byte(0xff), "{ty}: {:?}", m.args);
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
