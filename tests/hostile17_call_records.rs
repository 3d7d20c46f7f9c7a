//! Hostile pass on `--verify`'s record of calls into the module (`src/verify/module_calls.rs`)
//! and the callees it runs alone (`src/verify/alone.rs`): the two sides' records are compared
//! pair by pair, so a right merge whose two sides record other *sequences* of calls pairs a
//! call of one callee with a call of another, and the callee run alone on the other call's
//! arguments makes a false mismatch.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, Mode};
use wrong_merges::{merged, read, x86_64_object};

#[path = "common/cc.rs"]
mod cc;

/// `%h(x) = 3x`, `%g(x) = %h(x + 1)`; `%fwd` forwards to `%g` (a thunk's shape), and `%body`
/// does the same with an unreachable block besides. The comparator does not look at
/// unreachable blocks, so the two are one class; but only `%fwd` has a thunk's shape
/// (`is_forwarding_thunk`: one block, two instructions), so the original's run of `%body`
/// records its call of `%g`, while the merged side's, through the kept forwarder, records
/// `%g`'s call of `%h`.
const FORWARDER_AND_BODY: &str = "
function %h(i64) -> i64 {
block0(v0: i64):
    v2 = iconst.i64 3
    v1 = imul v0, v2
    return v1
}

function %g(i64) -> i64 {
    fn0 = %h(i64) -> i64
block0(v0: i64):
    v3 = iconst.i64 1
    v1 = iadd v0, v3
    v2 = call fn0(v1)
    return v2
}

function %NAME_FWD(i64) -> i64 {
    fn0 = %g(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}

function %NAME_BODY(i64) -> i64 {
    fn0 = %g(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
block1:
    v2 = iconst.i64 0
    return v2
}
";

/// The module with the forwarder and the body named `fwd` and `body` (the kept one is the
/// least name).
fn forwarder_and_body(fwd: &str, body: &str) -> String {
    FORWARDER_AND_BODY
        .replace("NAME_FWD", fwd)
        .replace("NAME_BODY", body)
}

/// The mismatches of the real merge of `text` in `mode` (and how many functions it merged).
fn real_merge_mismatches(text: &str, mode: Mode) -> (Vec<String>, usize) {
    let original = read(text);
    let (report, merged) = merged(&original, mode);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    let mismatches = checked.mismatches.iter().map(|m| m.to_string()).collect();
    (mismatches, report.merged)
}

/// What a C driver calling each of `names` (of `(i64) -> i64`) on a few arguments prints,
/// linked with `module`'s object; None without `cc`.
fn native_results(module: &ClifModule, names: &[&str]) -> Option<String> {
    let mut driver = String::from("#include <stdio.h>\n#include <stdint.h>\n");
    for name in names {
        driver += &format!("int64_t {name}(int64_t);\n");
    }
    driver += "int main(void) {\n  int64_t args[] = {0, 1, -1, 7, 1000, -123456789};\n  \
               for (int i = 0; i < 6; i++) {\n";
    for name in names {
        driver += &format!(
            "    printf(\"{name}(%lld) = %lld\\n\", (long long)args[i], (long long){name}(args[i]));\n"
        );
    }
    driver += "  }\n  return 0;\n}\n";
    cc::link_and_run(&x86_64_object(module), &driver)
}

/// Whether the real merge of `fwd` and `body` passes `--verify` in every mode (the panic names
/// the mode and the first mismatches).
fn assert_no_mismatch(fwd: &str, body: &str) {
    let text = forwarder_and_body(fwd, body);
    for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
        let (mismatches, merged) = real_merge_mismatches(&text, mode);
        assert!(merged <= 1, "{fwd}/{body} {mode:?}");
        assert!(
            mismatches.is_empty(),
            "{fwd}/{body} {mode:?}: {} mismatches, first: {}",
            mismatches.len(),
            mismatches[0]
        );
    }
}

#[test]
fn a_body_merged_into_an_equal_forwarder_adds_no_mismatch() {
    // The forwarder kept (`%a_fwd` < `%b_body`): the merged run of `%b_body` passes through it.
    assert_no_mismatch("a_fwd", "b_body");
}

#[test]
fn a_forwarder_merged_into_an_equal_body_adds_no_mismatch() {
    // The body kept: a name that forwards in the original forwards on the merged side too
    // (`Resolved::with_similar_groups`), so both sides record `%g`'s call of `%h`.
    assert_no_mismatch("b_fwd", "a_body");
}

#[test]
fn the_forwarder_and_the_body_are_the_same_natively() {
    // The merge is right: linked and run, the merged module's functions return what the
    // original's do.
    let text = forwarder_and_body("a_fwd", "b_body");
    let original = read(&text);
    let names = ["a_fwd", "b_body"];
    let Some(before) = native_results(&original, &names) else {
        return;
    };
    for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
        let (_, merged) = merged(&original, mode);
        assert_eq!(native_results(&merged, &names).unwrap(), before, "{mode:?}");
    }
    assert!(before.contains("b_body(7) = 24"), "{before}");
}
