//! hostile10: `--similar`'s judge against the rule "`-o --similar` never writes a byte more of
//! `.text` than exact merging", where the judge's code classes (folding) and callers meet the
//! object writer's jump thunks and machine-code folding.
//!
//! Two defects, fixed: a caller of a removed member that the object writes as one jump (a
//! forwarding thunk) was measured compiled, before and after, so its growth from a 5-byte jump
//! to a compiled call was priced at a fraction (now a caller without code of its own counts
//! nothing before); and a member merged where a caller of it folds with a caller of the
//! member's machine-code twin made those callers' code differ (they no longer fold), which no
//! measure counted (now a group with a member folded with an outside function is refused).
//! One group shows the second alone (`twins`).

#[path = "common/sizes.rs"]
mod sizes;

use clif_merge::ClifModule;
use sizes::{MODES, TARGETS, grown, read, text_bytes};

/// Local `%m{i}(x, a)`: `steps` times `x ← x·a ⊕ k`, with `k` its own constant; and the
/// exported `%t{i}`, which only forwards to it (the object writes it as one jump).
fn member_and_forwarder(i: usize, steps: usize) -> String {
    let mut t = format!(
        "; linkage: %m{i} local\nfunction %m{i}(i64, i64) -> i64 {{\n\
         block0(v0: i64, v1: i64):\n    v2 = iconst.i64 {}\n",
        1000 + 7 * i
    );
    let (mut prev, mut n) = ("v0".to_string(), 3);
    for _ in 0..steps {
        t += &format!(
            "    v{n} = imul {prev}, v1\n    v{} = bxor v{n}, v2\n",
            n + 1
        );
        prev = format!("v{}", n + 1);
        n += 2;
    }
    t += &format!("    return {prev}\n}}\n\n");
    t + &format!(
        "function %t{i}(i64, i64) -> i64 {{\n    fn0 = %m{i}(i64, i64) -> i64\n\
         block0(v0: i64, v1: i64):\n    v2 = call fn0(v0, v1)\n    return v2\n}}\n\n"
    )
}

fn forwarded_members(count: usize, steps: usize) -> ClifModule {
    let text: String = (0..count).map(|i| member_and_forwarder(i, steps)).collect();
    read("forwarders.clif", &text)
}

/// Four local members of one step each, differing in a constant, each called only by an
/// exported forwarder. Exact: four 22-byte members and four 5-byte jumps, 108 bytes on x86_64
/// (128 on aarch64). `--similar` removes the members, and each forwarder becomes a compiled
/// call passing the constant (24 bytes): 115 bytes (152 on aarch64), in safe and aliases
/// modes. The judge measures each forwarder compiled as it was (16 bytes, not the 5-byte jump
/// the object writes) and as it becomes, and credits the group a saving it does not make.
/// `clif-merge fwd.clif --similar -o s.o` against the same without `--similar`.
#[test]
fn similar_never_gives_more_text_when_the_callers_are_forwarding_thunks() {
    let module = forwarded_members(4, 1);
    let grown = grown(&module, &TARGETS, &MODES);
    assert!(grown.is_empty(), "{grown:#?}");
}

/// The held neighbour: with three steps a member the group saves more than the forwarders
/// grow, on both targets in every mode, and the group is merged.
#[test]
fn forwarded_members_of_three_steps_save() {
    let module = forwarded_members(4, 3);
    for target in TARGETS {
        for mode in MODES {
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 1, "{target} {mode:?}");
            assert!(similar < exact, "{target} {mode:?}: {exact} -> {similar}");
        }
    }
}

/// `%name(x, a)`: `steps` times `x ← (x·a ⊕ k) + x`; `dead` adds unused constants (other CLIF,
/// the same machine code).
fn body(name: &str, k: i64, dead: bool, local: bool) -> String {
    let mut t = String::new();
    if local {
        t += &format!("; linkage: %{name} local\n");
    }
    t += &format!("function %{name}(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n");
    t += &format!("    v2 = iconst.i64 {k}\n");
    let (mut prev, mut n) = ("v0".to_string(), 3);
    for _ in 0..20 {
        t += &format!("    v{n} = imul {prev}, v1\n");
        t += &format!("    v{} = bxor v{n}, v2\n", n + 1);
        t += &format!("    v{} = iadd v{}, {prev}\n", n + 2, n + 1);
        prev = format!("v{}", n + 2);
        n += 3;
    }
    if dead {
        t += &format!("    v{n} = iconst.i64 99\n    v99 = iconst.i64 77\n");
    }
    t + &format!("    return {prev}\n}}\n\n")
}

/// `%name` calls `%callee`, complements the result (`bnot`, or with `xor_minus_one` an
/// exclusive or with -1: other CLIF, not similar, the same machine code) and runs forty steps
/// on it with the constant 1000.
fn caller_of(name: &str, callee: &str, xor_minus_one: bool) -> String {
    let mut t = format!(
        "function %{name}(i64, i64) -> i64 {{\n    fn0 = %{callee}(i64, i64) -> i64\n\
         block0(v0: i64, v1: i64):\n    v2 = call fn0(v0, v1)\n"
    );
    t += match xor_minus_one {
        true => "    v4 = iconst.i64 -1\n    v5 = bxor v2, v4\n",
        false => "    v5 = bnot v2\n",
    };
    t += "    v3 = iconst.i64 1000\n";
    let mut prev = "v5".to_string();
    for j in 0..40 {
        let op = ["iadd", "imul", "bxor"][j % 3];
        t += &format!("    v{} = {op} {prev}, v3\n", 10 + j);
        prev = format!("v{}", 10 + j);
    }
    t + &format!("    return {prev}\n}}\n\n")
}

/// Local `%m1` and `%m2` differ in a constant (a similar group); exported `%x` is `%m1` with
/// unused constants (other CLIF, the same machine code: the exact object folds `%m1` into it).
/// `%c0` calls `%m1`, `%d0` calls `%x`, otherwise alike in machine code but not in CLIF (not
/// similar): in aliases mode the exact object folds them too, `%d0` an alias of `%c0`.
fn twins(with_m2: bool) -> ClifModule {
    let mut text = body("m1", 5, false, true);
    if with_m2 {
        text += &body("m2", 7, false, true);
    }
    text += &body("x", 5, true, false);
    text += &caller_of("c0", "m1", true);
    text += &caller_of("d0", "x", false);
    read("twins.clif", &text)
}

/// x86_64, aliases mode: exact 866 bytes (`%m2`, `%x`, and `%c0` with `%d0` its alias).
/// `--similar` merges the one group `{%m1, %m2}`: `%m1` counts nothing (its code is `%x`'s),
/// `%m2` saves a little over the shared body, `%c0`'s call site is measured; but `%c0` now
/// calls the shared body and no longer folds with `%d0`, which keeps a body of its own: 1,139
/// bytes. `clif-merge twins.clif --mode aliases --target x86_64 --similar -o s.o`.
#[test]
fn similar_never_gives_more_text_when_callers_fold_through_a_member() {
    let grown = grown(&twins(true), &TARGETS, &MODES);
    assert!(grown.is_empty(), "{grown:#?}");
}

/// The held neighbour: without `%m2` there is no group of members, the callers' group alone
/// is measured as one body and left alone, in every mode on both targets.
#[test]
fn folded_callers_alone_are_left_alone() {
    let module = twins(false);
    for target in TARGETS {
        for mode in MODES {
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 0, "{target} {mode:?}");
            assert_eq!(similar, exact, "{target} {mode:?}");
        }
    }
}
