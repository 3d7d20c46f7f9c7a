//! hostile9: `--similar`'s judge (a group's members measured once for both ways of writing it)
//! against the rule "never a byte more than exact merging" with `-o`.
//!
//! The judge counts members of equal machine code once (the object folds them anyway), but
//! only among the group's own members: a member whose machine code equals a function outside
//! the group is free in the exact object (folded into that function) and is still credited as
//! removed bytes. The group is then kept, the member becomes a thunk, the outside function
//! can no longer fold into anything, and the object grows.

use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target};
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{ClifModule, MergeOptions, Mode, ReadOptions, SimilarOptions, read_module_text};
use std::path::Path;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
const TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

fn object(target: &str, mode: Mode) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: IsaSettings::default(),
        function_sections: false,
        mode,
        fold_machine_code: true,
    }
}

/// `.text` bytes of `module` merged in `mode` for `target`, with `--similar` or without, and
/// the number of similar groups merged.
fn text_bytes(module: &ClifModule, target: &str, mode: Mode, similar: bool) -> (u64, usize) {
    let options = PipelineOptions {
        merge: MergeOptions {
            mode,
            similar: similar.then(SimilarOptions::default),
            ..MergeOptions::default()
        },
        object: Some(object(target, mode)),
        ..Default::default()
    };
    let out = run(module.clone(), &options).expect("the module compiles");
    let groups = out.report.similar.iter().flatten().count();
    (out.object.expect("an object").report.text_bytes, groups)
}

/// `%name(x, a)`: twelve steps `x ← (x·a ⊕ k) + x`, and, with `dead`, an unused constant at
/// the end (the CLIF differs, the machine code does not).
fn steps(name: &str, k: i64, dead: bool) -> String {
    let mut t = format!("function %{name}(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n");
    t += &format!("    v2 = iconst.i64 {k}\n");
    let (mut prev, mut n) = ("v0".to_string(), 3);
    for _ in 0..12 {
        t += &format!("    v{n} = imul {prev}, v1\n");
        t += &format!("    v{} = bxor v{n}, v2\n", n + 1);
        t += &format!("    v{} = iadd v{}, {prev}\n", n + 2, n + 1);
        prev = format!("v{}", n + 2);
        n += 3;
    }
    if dead {
        t += &format!("    v{n} = iconst.i64 99\n");
    }
    t + &format!("    return {prev}\n}}\n\n")
}

/// `%a` and `%b` differ only in a constant: a similar group. `%c` is `%a` with an unused
/// constant: not equal to it as CLIF (no exact merge, no member of the group), but the same
/// machine code, folded into `%a`'s in the exact object. x86_64: exact 359 bytes (safe; 354
/// aliases), `--similar` 380; aarch64: 328 (324), `--similar` 372. `clif-merge fold.clif -o
/// x.o` against the same with `--similar`.
#[test]
#[ignore = "defect: a member whose machine code an outside function shares is credited as removed; --similar grows the object"]
fn similar_never_gives_more_text_when_a_member_folds_with_an_outside_function() {
    let text = steps("a", 5, false) + &steps("b", 7, false) + &steps("c", 5, true);
    let module = read_module_text(Path::new("fold.clif"), &text, ReadOptions::default()).unwrap();
    let mut grown = Vec::new();
    for target in TARGETS {
        for mode in MODES {
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            if similar > exact {
                grown.push(format!(
                    "{target} {mode:?}: exact {exact}, --similar {similar} ({groups} groups)"
                ));
            }
        }
    }
    assert!(grown.is_empty(), "{grown:#?}");
}

/// The held neighbour: without `%c`, the same group saves on both targets in every mode.
#[test]
fn the_group_alone_saves() {
    let text = steps("a", 5, false) + &steps("b", 7, false);
    let module = read_module_text(Path::new("two.clif"), &text, ReadOptions::default()).unwrap();
    for target in TARGETS {
        for mode in MODES {
            let (exact, _) = text_bytes(&module, target, mode, false);
            let (similar, groups) = text_bytes(&module, target, mode, true);
            assert_eq!(groups, 1, "{target} {mode:?}");
            assert!(similar < exact, "{target} {mode:?}: {exact} -> {similar}");
        }
    }
}
