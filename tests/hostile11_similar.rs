//! hostile11: `--similar`'s judge against the rule "`-o --similar` never writes a byte more of
//! `.text` than exact merging", where the first refusal (a member folded with a function outside
//! its group) did not reach: members that fold with each other inside the group (defects,
//! fixed: a group with a member whose machine code any other function shares is refused).
//!
//! `%m1` shifts by 1 and `%m1b` by 65: other CLIF (exact merging keeps both), the same machine
//! code (Cranelift masks a constant shift amount to the type's width), so the object folds
//! them, and in aliases mode also `%c` and `%cb`, which call them (other CLIF: `bnot` against
//! `bxor` with -1, so not similar). `%m2` shifts by 3: `{%m1, %m1b, %m2}` is a similar group
//! whose every class lies inside it, so the judge does not refuse it; `%m1` and `%m1b` are
//! exported and stay as thunks passing 1 and 65, which differ, and `%cb` no longer folds with
//! `%c`: it gets a body of its own, which no measure counted.

#[path = "common/sizes.rs"]
mod sizes;

use clif_merge::{ClifModule, MergeOptions, Mode, SimilarOptions};
use sizes::{MODES, TARGETS, grown, read, text_bytes};

/// `%name(x, a)`: `x << shift`, then twenty times `x ← (x·a ⊕ a) + x`.
fn shifter(name: &str, shift: i64, linkage: Option<&str>) -> String {
    let mut t = linkage.map_or(String::new(), |l| format!("; linkage: %{name} {l}\n"));
    t += &format!(
        "function %{name}(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n\
         \x20   v2 = iconst.i64 {shift}\n    v3 = ishl v0, v2\n"
    );
    let (mut prev, mut n) = ("v3".to_string(), 4);
    for _ in 0..20 {
        t += &format!(
            "    v{n} = imul {prev}, v1\n    v{} = bxor v{n}, v1\n",
            n + 1
        );
        t += &format!("    v{} = iadd v{}, {prev}\n", n + 2, n + 1);
        prev = format!("v{}", n + 2);
        n += 3;
    }
    t + &format!("    return {prev}\n}}\n\n")
}

/// `%name` calls `%callee`, complements the result (`bnot`, or with `xor_minus_one` an
/// exclusive or with -1: other CLIF, not similar, the same machine code) and runs `steps`
/// steps on it with the constant 1000.
fn caller_of(name: &str, callee: &str, xor_minus_one: bool, steps: usize) -> String {
    caller_with(name, callee, xor_minus_one, steps, 1000)
}

/// [`caller_of`] with the constant `k`.
fn caller_with(name: &str, callee: &str, xor_minus_one: bool, steps: usize, k: i64) -> String {
    let mut t = format!(
        "function %{name}(i64, i64) -> i64 {{\n    fn0 = %{callee}(i64, i64) -> i64\n\
         block0(v0: i64, v1: i64):\n    v2 = call fn0(v0, v1)\n    v3 = iconst.i64 {k}\n"
    );
    t += match xor_minus_one {
        true => "    v4 = iconst.i64 -1\n    v5 = bxor v2, v4\n",
        false => "    v5 = bnot v2\n",
    };
    let mut prev = "v5".to_string();
    for j in 0..steps {
        let op = ["iadd", "imul", "bxor"][j % 3];
        t += &format!("    v{} = {op} {prev}, v3\n", 10 + j);
        prev = format!("v{}", 10 + j);
    }
    t + &format!("    return {prev}\n}}\n\n")
}

/// Exported `%m1` (shift 1) and `%m1b` (shift 65), local `%m2` (shift 3); with `callers`,
/// `%c` calls `%m1` and `%cb` calls `%m1b`, `steps` steps each.
fn shift_twins(callers: bool, m1b_shift: i64, steps: usize) -> ClifModule {
    let mut text = shifter("m1", 1, None) + &shifter("m1b", m1b_shift, None);
    text += &shifter("m2", 3, Some("local"));
    if callers {
        text += &caller_of("c", "m1", false, steps);
        text += &caller_of("cb", "m1b", true, steps);
    }
    read("shift_twins.clif", &text)
}

/// Aliases mode, 80 steps: x86_64 exact 1,102 bytes, `--similar` 1,424; aarch64 876 -> 1,020.
/// The group `{%m1, %m1b, %m2}` saves `%m2`'s body, but `%m1`'s and `%m1b`'s thunks pass 1
/// and 65, and `%cb` (an alias of `%c` in the exact object) gets its own body. More callers
/// pairs, or longer ones, grow it without bound.
/// `clif-merge twins.clif --mode aliases --target x86_64 --similar -o s.o`.
#[test]
fn similar_never_gives_more_text_when_members_fold_with_each_other() {
    let grown = grown(&shift_twins(true, 65, 80), &TARGETS, &MODES);
    assert!(grown.is_empty(), "{grown:#?}");
}

/// The neighbours. With `%m1b` shifting by 2 (other machine code: nothing folds) the group is
/// merged and saves, in every mode on both targets. Without callers the folded members would
/// save too, but the judge refuses any group with a member whose machine code another function
/// shares (it cannot see which functions fold through it): never more `.text` than exact.
#[test]
fn members_folded_inside_a_group_are_refused_and_others_save() {
    for target in TARGETS {
        for mode in MODES {
            let module = shift_twins(true, 2, 80);
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 1, "{target} {mode:?}");
            assert!(similar < exact, "{target} {mode:?}: {exact} -> {similar}");
            let module = shift_twins(false, 65, 0);
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 0, "{target} {mode:?}");
            assert_eq!(similar, exact, "{target} {mode:?}");
        }
    }
}

/// Local `%m1` (shift 1), `%m1b` (shift 65) and `%m2` (shift 3), all removed by the group;
/// `%c` calls `%m1` and `%cb` calls `%m1b` (two steps; alike in machine code, not similar);
/// with `outer`, exported `%g` calls `%c` and `%gb` calls `%cb` (`outer` steps each, alike
/// in machine code, not similar).
fn removed_shift_twins(outer: Option<usize>) -> ClifModule {
    let mut text = shifter("m1", 1, Some("local")) + &shifter("m1b", 65, Some("local"));
    text += &shifter("m2", 3, Some("local"));
    text += &caller_with("c", "m1", false, 2, 1000);
    text += &caller_with("cb", "m1b", true, 2, 1000);
    if let Some(steps) = outer {
        text += &caller_with("g", "c", false, steps, 3);
        text += &caller_with("gb", "cb", true, steps, 3);
    }
    read("removed_shift_twins.clif", &text)
}

/// Aliases mode, 120 steps: x86_64 exact 1,204 bytes, `--similar` 1,600; aarch64 1,080 ->
/// 1,388. The members are removed and `%c`, `%cb` call the shared body passing 1 and 65: the
/// judge counts them as grown by all they become (they shared one body), but `%g` and `%gb`,
/// one body in the exact object because `%c` and `%cb` were, now call functions that differ
/// and are two bodies, which no measure counts.
/// `clif-merge t.clif --mode aliases --target x86_64 --similar -o s.o`.
#[test]
fn similar_never_gives_more_text_when_callers_of_folded_callers_unfold() {
    let grown = grown(&removed_shift_twins(Some(120)), &TARGETS, &MODES);
    assert!(grown.is_empty(), "{grown:#?}");
}

/// The neighbour: without `%g` and `%gb` the group would save, but its members fold with each
/// other, so it is refused (the judge cannot see which functions fold through them): no group,
/// and `-o --similar` writes no more than exact merging, in every mode on both targets.
#[test]
fn folded_removed_twins_without_outer_callers_are_refused() {
    let module = removed_shift_twins(None);
    for target in TARGETS {
        for mode in MODES {
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 0, "{target} {mode:?}");
            assert!(similar <= exact, "{target} {mode:?}: {exact} -> {similar}");
        }
    }
}

/// `.text` bytes of `module` merged with global merging's round 2 (the summary of `units`), in
/// aliases mode for `target`, with `--similar` or without.
fn round_two_text_bytes(
    module: &ClifModule,
    units: &[ClifModule],
    target: &str,
    similar: bool,
) -> u64 {
    use clif_merge::global::Summary;
    let summary = Summary::combine(units.iter().map(Summary::of_module));
    let merge = MergeOptions {
        mode: Mode::Aliases,
        summary: Some(summary),
        similar: similar.then(SimilarOptions::default),
        ..MergeOptions::default()
    };
    sizes::merged_text(module, target, merge).0
}

/// Both cases with global merging's round 2 (the summary of the module alone, and with a
/// second unit holding `%m1`): x86_64 1,102 -> 1,424 and 1,204 -> 1,600, aarch64 876 -> 1,020
/// and 1,080 -> 1,388, as without a summary.
#[test]
fn similar_never_gives_more_text_in_round_two_when_members_fold_with_each_other() {
    let mut grown = Vec::new();
    for module in [shift_twins(true, 65, 80), removed_shift_twins(Some(120))] {
        let other = read("other.clif", &shifter("m1", 1, None));
        for units in [vec![module.clone()], vec![module.clone(), other]] {
            for target in TARGETS {
                let exact = round_two_text_bytes(&module, &units, target, false);
                let similar = round_two_text_bytes(&module, &units, target, true);
                if similar > exact {
                    grown.push(format!(
                        "{} units {target}: {exact} -> {similar}",
                        units.len()
                    ));
                }
            }
        }
    }
    assert!(grown.is_empty(), "{grown:#?}");
}
