//! hostile18: right merges `--verify` must pass, where runs do not end (compared up to where
//! they stopped, `prefix_parts_ways`) and where functions run past their planned runs.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{Mode, ReadOptions, SimilarOptions, merge_module_with, read_module_text};
use std::path::Path;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Thunks, Mode::Aliases];

/// `text` merged in `mode` (with `--similar`, every group taken, when `similar`), checked
/// with `fuel`: whether the check passed, its summary with its mismatches, how many merged.
fn check(text: &str, mode: Mode, similar: bool, fuel: u64) -> (bool, String, usize) {
    let original = read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap();
    let mut merged = original.clone();
    let options = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let (report, _) = merge_module_with(&mut merged, mode, similar.then_some(&options));
    let verify = VerifyOptions {
        fuel,
        ..VerifyOptions::default()
    };
    let v = verify_merge(&original, &merged, &report, &verify);
    let text = (v.mismatches.iter()).fold(v.summary(), |t, m| format!("{t}\n{m}"));
    (v.is_ok(), text, report.merged)
}

/// `%name(x)`: a loop that never ends, each pass `x ← x·k + 1` stored at `%buf` and passed to
/// the import `%tick`.
fn endless(name: &str, k: i64) -> String {
    format!(
        "function %{name}(i64) {{
    gv0 = symbol %buf
    fn0 = %tick(i64)
block0(v0: i64):
    v1 = symbol_value.i64 gv0
    v2 = iconst.i64 {k}
    v3 = iconst.i64 1
    jump block1(v0)
block1(v4: i64):
    v5 = imul v4, v2
    v6 = iadd v5, v3
    store v6, v1
    call fn0(v6)
    jump block1(v6)
}}

"
    )
}

/// A caller of each of `names`, in turn, in a loop of its own.
fn caller(names: &[&str]) -> String {
    let decls: String = (names.iter().enumerate())
        .map(|(i, n)| format!("    fn{i} = %{n}(i64)\n"))
        .collect();
    let calls: String = (0..names.len())
        .map(|i| format!("    call fn{i}(v0)\n"))
        .collect();
    format!("function %c(i64) {{\n{decls}block0(v0: i64):\n{calls}    return\n}}\n\n")
}

/// Held: equal (and, with `--similar`, near-equal) endless loops storing and calling an
/// import, merged in every mode, pass at every fuel.
#[test]
fn right_merges_of_endless_loops_pass_exact_and_similar() {
    let exact = endless("a", 3) + &endless("b", 3) + &endless("d", 3) + &caller(&["a", "b", "d"]);
    let similar = endless("a", 3) + &endless("b", 5) + &endless("d", 7) + &caller(&["a", "b", "d"]);
    for (what, text, sim) in [("exact", &exact, false), ("similar", &similar, true)] {
        for mode in MODES {
            for fuel in [3_000, 101, 7] {
                let (ok, summary, merged) = check(text, mode, sim, fuel);
                assert!(merged > 0, "{what} {mode:?}: {summary}");
                assert!(
                    ok,
                    "{what} {mode:?} fuel {fuel}: the right merge was reported: {summary}"
                );
            }
        }
    }
}

/// `%name(x, p)`: stores `x` at `p` (a stack slot's address of its caller, or its own), then
/// calls `%next(x + 1, own slot)`, for ever: a recursion that never ends, each frame storing a
/// stack address of another frame.
fn recursion(name: &str, next: &str, k: i64) -> String {
    format!(
        "function %{name}(i64, i64) {{
    ss0 = explicit_slot 16
    gv0 = symbol %buf
    fn0 = %{next}(i64, i64)
block0(v0: i64, v1: i64):
    v2 = stack_addr.i64 ss0
    store v2, v2
    v3 = symbol_value.i64 gv0
    store v2, v3
    v4 = iconst.i64 {k}
    v5 = iadd v0, v4
    store v5, v3+8
    call fn0(v5, v2)
    return
}}

"
    )
}

/// Held: endless (mutual) recursions storing stack addresses of other frames, merged.
#[test]
fn right_merges_of_endless_recursions_storing_stack_addresses_pass() {
    let exact = recursion("a", "b", 1) + &recursion("b", "a", 1) + &recursion("d", "d", 1);
    let similar = recursion("a", "b", 1) + &recursion("b", "a", 2) + &recursion("d", "d", 3);
    for (what, text, sim) in [("exact", &exact, false), ("similar", &similar, true)] {
        for mode in MODES {
            for fuel in [3_000, 101] {
                let (ok, summary, merged) = check(text, mode, sim, fuel);
                if merged == 0 {
                    println!("{what} {mode:?}: nothing merged");
                    continue;
                }
                assert!(
                    ok,
                    "{what} {mode:?} fuel {fuel}: the right merge was reported: {summary}"
                );
            }
        }
    }
}

/// `%name(x)`: a loop that never ends, each pass calling the import `%{callee}` and storing
/// what it returns.
fn endless_calling(name: &str, callee: &str) -> String {
    format!(
        "function %{name}(i64) {{
    gv0 = symbol %buf
    fn0 = %{callee}(i64) -> i64
block0(v0: i64):
    v1 = symbol_value.i64 gv0
    jump block1(v0)
block1(v4: i64):
    v5 = call fn0(v4)
    v6 = iadd v5, v4
    store v6, v1
    jump block1(v6)
}}

"
    )
}

/// Held: a similar group whose members call other imports (the callee passed), loops that
/// never end.
#[test]
fn right_similar_merges_of_endless_loops_calling_other_imports_pass() {
    let text = endless_calling("a", "ta")
        + &endless_calling("b", "tb")
        + &endless_calling("d", "td")
        + &caller(&["a", "b", "d"]);
    for mode in MODES {
        for fuel in [2_000, 61] {
            let (ok, summary, merged) = check(&text, mode, true, fuel);
            assert_eq!(merged, 3, "{mode:?}: {summary}");
            assert!(
                ok,
                "{mode:?} fuel {fuel}: the right merge was reported: {summary}"
            );
        }
    }
}
