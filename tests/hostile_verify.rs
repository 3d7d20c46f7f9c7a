//! Hostile inputs for `--verify`: a merge that is wrong is reported, a correct one is not, and
//! no argument type makes the check itself panic. A wrong merge is made by hand: the "merged"
//! module is the original with one function's body replaced by another's.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// Two functions of type `ty` that add 1 and 2 to their argument (floats: -1 and -2; vectors:
/// to every lane); with `same`, both add the first. (An `i128` constant is an `i64` one
/// extended: `iconst` makes no `i128`.)
fn add_one_and_two(ty: &str, same: bool) -> String {
    let constant = |k: i64| match ty {
        "i128" => format!("v1 = iconst.i64 {k}\n    v2 = uextend.i128 v1"),
        "f32" => format!("v1 = f32const 0x{k}.0\n    v2 = fneg v1"),
        "f64" => format!("v1 = f64const 0x{k}.0\n    v2 = fneg v1"),
        "i32x4" | "i64x2" | "i8x16" => {
            let lane = &ty[..ty.find('x').unwrap()];
            format!("v1 = iconst.{lane} {k}\n    v2 = splat.{ty} v1")
        }
        _ => format!("v1 = iconst.{ty} {k}\n    v2 = bor v1, v1"),
    };
    let op = if ty.starts_with('f') { "fadd" } else { "iadd" };
    let add = |name: &str, k: i64| {
        format!(
            "function %{name}({ty}) -> {ty} {{\nblock0(v0: {ty}):\n    {}\n    v3 = {op} v0, v2\n    return v3\n}}\n\n",
            constant(k)
        )
    };
    add("add1", 1) + &add("add2", if same { 1 } else { 2 })
}

/// The merge of `ty`'s pair, correct (they are equal) and verified.
fn verify_a_correct_merge(ty: &str) {
    let original = read(&add_one_and_two(ty, true));
    let mut merged = original.clone();
    let (report, _) = merge_module(&mut merged, Mode::Aliases);
    assert_eq!(report.merged, 1);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    assert!(checked.is_ok(), "{ty}: {}", checked.summary());
}

/// `%add2` given `%add1`'s body by hand: a wrong "merge" the check must report.
fn verify_a_wrong_merge(ty: &str) {
    let original = read(&add_one_and_two(ty, false));
    let mut unmerged = original.clone();
    let (report, _) = merge_module(&mut unmerged, Mode::Aliases);
    assert_eq!(report.merged, 0, "{ty}: adding 1 and adding 2 do not merge");
    let wrong = read(&add_one_and_two(ty, true));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    assert!(
        !checked.is_ok(),
        "{ty}: %add2 now adds 1, and the check says {}",
        checked.summary()
    );
}

#[test]
fn verify_accepts_correct_merges_and_reports_wrong_ones_of_64_bits_and_less() {
    for ty in ["i8", "i16", "i32", "i64", "f32", "f64"] {
        verify_a_correct_merge(ty);
        verify_a_wrong_merge(ty);
    }
}

/// Functions with vector parameters and results are run (they were skipped, so a wrong merge
/// of two of them passed `--verify`): vector arguments are the lane type's edge values in
/// every lane, small numbers splatted, or random bits.
#[test]
fn verify_accepts_correct_merges_and_reports_wrong_ones_of_vectors() {
    for ty in ["i8x16", "i32x4", "i64x2"] {
        verify_a_correct_merge(ty);
        verify_a_wrong_merge(ty);
    }
}

/// The edge values of an `i128` argument were computed as `-(1 << 127)` in `i128`, which
/// overflowed: `--verify` panicked on any module with an `i128` parameter, 47 of Cranelift's
/// own run-test files among them (`clif-merge ../shared/runtests/i128-arithmetic.clif
/// --verify`).
#[test]
fn verify_checks_merges_of_i128_functions() {
    verify_a_correct_merge("i128");
    verify_a_wrong_merge("i128");
}

/// `%add1` and `%add2` as above, read through a pointer parameter: `load`, add, `store`.
fn through_memory(same: bool) -> String {
    let f = |name: &str, k: i64| {
        format!(
            "function %{name}(i64) -> i32 {{
    ss0 = explicit_slot 4
block0(v0: i64):
    v1 = iconst.i32 {k}
    v2 = stack_addr.i64 ss0
    store v1, v2
    v3 = load.i32 v2
    v4 = ireduce.i32 v0
    v5 = iadd v3, v4
    return v5
}}

"
        )
    };
    f("add1", 1) + &f("add2", if same { 1 } else { 2 })
}

/// Stack slots: a constant stored to one and loaded back; the wrong merge is reported.
#[test]
fn verify_reports_a_wrong_merge_through_a_stack_slot() {
    let original = read(&through_memory(false));
    let mut unmerged = original.clone();
    let (report, _) = merge_module(&mut unmerged, Mode::Aliases);
    assert_eq!(report.merged, 0);
    let wrong = read(&through_memory(true));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
    let right = read(&through_memory(true));
    let mut merged = right.clone();
    let (report, _) = merge_module(&mut merged, Mode::Safe);
    assert_eq!(report.merged, 1);
    let checked = verify_merge(&right, &merged, &report, &VerifyOptions::default());
    assert!(checked.is_ok(), "{}", checked.summary());
}

/// When every function is skipped (here: struct arguments, which the interpreter cannot be
/// called with), nothing of the merge was checked, and the report must say so: the warning
/// used to need `runs > 0`, so `verify: 0 functions, 0 runs, ... 2 skipped` came with none.
#[test]
fn verify_warns_when_nothing_was_checked() {
    let text = "
function %v1(i64 sarg(8)) -> i64 {
block0(v0: i64):
    v1 = load.i64 v0
    return v1
}
function %v2(i64 sarg(8)) -> i64 {
block0(v0: i64):
    v1 = load.i64 v0
    return v1
}
";
    let original = read(text);
    let mut merged = original.clone();
    let (report, _) = merge_module(&mut merged, Mode::Safe);
    assert_eq!(report.merged, 1);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    assert_eq!(checked.runs, 0, "{}", checked.summary());
    assert!(
        checked.coverage_warning().is_some(),
        "nothing was checked and nothing says so: {}",
        checked.summary()
    );
}
