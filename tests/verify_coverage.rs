//! `--verify`'s coverage figures: of all functions, the share fully checked and the share fully
//! checked or *unchanged with all they call* (`VerifyReport::fully_checked_or_unchanged`). A
//! function counts as unchanged only when its body and everything it may call are the same on
//! both sides; one whose body the merge left alone but that calls, however deep, a function
//! the merge changed is run, and counts only when fully checked.

use clif_merge::verify::{VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{FuncName, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

/// `%b` and `%c` are the same: the merge keeps `%b` and makes `%c` a thunk of it or removes it.
/// `%a` calls `%c`, `%top` calls `%a`: their bodies stay as they were, what they call changes.
/// `%e` calls `%d`, which nothing changes.
const MODULE: &str = "
function %b(i64) -> i64 {
block0(v0: i64):
    v1 = imul v0, v0
    v9 = iconst.i64 3
    v2 = iadd v1, v9
    return v2
}

function %c(i64) -> i64 {
block0(v0: i64):
    v1 = imul v0, v0
    v9 = iconst.i64 3
    v2 = iadd v1, v9
    return v2
}

function %a(i64) -> i64 {
    fn0 = %c(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    v9 = iconst.i64 1
    v2 = iadd v1, v9
    return v2
}

function %top(i64) -> i64 {
    fn0 = %a(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}

function %d(i64) -> i64 {
block0(v0: i64):
    v1 = isub v0, v0
    return v1
}

function %e(i64) -> i64 {
    fn0 = %d(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    v9 = iconst.i64 5
    v2 = iadd v1, v9
    return v2
}
";

/// The check of the merge of [`MODULE`] in `mode`, of the functions `only` (all: None).
fn checked(mode: Mode, only: Option<&[&str]>) -> VerifyReport {
    let options = VerifyOptions {
        only: only.map(|names| {
            (names.iter())
                .map(|n| FuncName::parse(n).unwrap())
                .collect()
        }),
        ..VerifyOptions::default()
    };
    checked_with(mode, &options)
}

/// The check of the merge of [`MODULE`] in `mode` with `options`.
fn checked_with(mode: Mode, options: &VerifyOptions) -> VerifyReport {
    let original = read_module_text(Path::new("t.clif"), MODULE, ReadOptions::default()).unwrap();
    let mut merged = original.clone();
    let (report, _) = merge_module(&mut merged, mode);
    assert_eq!(report.merged, 1, "%c merges into %b");
    verify_merge(&original, &merged, &report, options)
}

#[test]
fn an_unchanged_function_calling_a_changed_one_is_not_counted_unchanged() {
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for caller in ["%a", "%top"] {
            let v = checked(mode, Some(&[caller]));
            assert!(v.is_ok(), "{}", v.summary());
            assert_eq!(
                (v.functions, v.unchanged, v.fully_checked),
                (1, 0, 1),
                "{mode:?} {caller}: {}",
                v.summary()
            );
            assert_eq!(v.fully_checked_or_unchanged(), 1);
        }
        let v = checked(mode, Some(&["%e"]));
        assert_eq!(
            (v.unchanged, v.fully_checked, v.fully_checked_or_unchanged()),
            (1, 0, 1),
            "{mode:?} %e, which calls only %d: {}",
            v.summary()
        );
    }
}

#[test]
fn the_summary_gives_both_shares_of_all_functions() {
    let v = checked(Mode::Safe, None);
    assert!(v.is_ok(), "{}", v.summary());
    // %a, %top and the merged %c are run; %b, %d and %e are unchanged with all they call.
    assert_eq!(v.all_functions(), 6, "{}", v.summary());
    assert_eq!((v.fully_checked, v.unchanged), (3, 3), "{}", v.summary());
    assert_eq!(v.fully_checked_or_unchanged(), 6);
    assert!(
        v.summary().contains(
            "; of 6 functions: 3 (50.0 %) fully checked, 6 (100.0 %) fully checked or unchanged \
             with all they call"
        ),
        "{}",
        v.summary()
    );
}

#[test]
fn functions_unchanged_with_all_they_call_are_run_when_asked() {
    let options = VerifyOptions {
        run_unchanged: true,
        ..VerifyOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let v = checked_with(mode, &options);
        assert!(v.is_ok(), "{}", v.summary());
        // %b, %d and %e are run too, and their runs end: all six fully checked, none vouched
        // for as unchanged.
        assert_eq!(
            (v.all_functions(), v.fully_checked, v.unchanged),
            (6, 6, 0),
            "{mode:?}: {}",
            v.summary()
        );
        let default = checked(mode, None);
        assert!(
            v.runs > default.runs,
            "{} against {}",
            v.summary(),
            default.summary()
        );
    }
}
