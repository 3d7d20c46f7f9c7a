//! Hostile inputs for `--verify`'s unchanged functions (sixth pass): a function whose body the
//! merge left as it was is not run when everything it may call is unchanged too
//! (`Unchanged::closed`). Wrong merges are planted by hand in a function such a caller reaches,
//! made so that runs of the changed function alone cannot see them (it differs only on a value
//! it loads from memory its caller wrote): only a run of the unchanged caller reports them.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, Mode, merge_module};
use wrong_merges::{in_order, merged, planted, read};

/// `%probe(p)` is 1 when the word at `p` is the magic number, else 0; the wrong one compares
/// with the magic number plus one. The word is scrambled (times an odd constant, as a hash
/// table's probe does) before it is compared: random pointers read pseudo-random words, and
/// the guided search steers a loaded word only where it is compared as it is, so runs of
/// `%probe` alone never tell the two apart.
fn probe(magic: u32) -> String {
    let scrambled = magic.wrapping_mul(SCRAMBLE);
    format!(
        "function %probe(i64) -> i32 {{
block0(v0: i64):
    v7 = load.i32 notrap aligned v0
    v8 = iconst.i32 {SCRAMBLE:#x}
    v1 = imul v7, v8
    v2 = iconst.i32 {scrambled:#x}
    v3 = iconst.i32 0
    v6 = iadd v2, v3
    v4 = icmp eq v1, v6
    v5 = uextend.i32 v4
    return v5
}}
"
    )
}

const MAGIC: u32 = 0x1357_2468;
/// What `%probe` multiplies the word by before comparing it (odd: one word for each product).
const SCRAMBLE: u32 = 0x9e37_79b1;

/// `%caller()` writes the magic number to a stack slot and asks `%probe` (through `%mid`, a
/// function that only passes its argument on, called with `call_op`), returning its answer.
fn callers(call_op: &str) -> String {
    format!(
        "function %mid(i64) -> i32 {{
    fn0 = %probe(i64) -> i32
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}}

function %caller() -> i32 {{
    ss0 = explicit_slot 4
    fn0 = %mid(i64) -> i32
block0:
    v0 = iconst.i32 {MAGIC:#x}
    v1 = stack_addr.i64 ss0
    store.i32 notrap aligned v0, v1
    {call_op}
}}
"
    )
}

/// Whether `verify_merge` reports `wrong` as a wrong merge of `original` in `%caller`, with
/// its summary. `%probe` alone must not be reported: the wrong merge is one only its caller
/// sees, so the case fails when the caller is not run.
fn reported(original: &str, wrong: &str, mode: Mode) -> (bool, String) {
    let original = read(original);
    let report = merged(&original, mode).0;
    let checked = verify_merge(&original, &read(wrong), &report, &VerifyOptions::default());
    let names: Vec<String> = (checked.mismatches.iter())
        .map(|m| m.function.to_string())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains("probe")),
        "the planted change shows in %probe's own runs: {names:?}"
    );
    (names.iter().any(|n| n == "%caller"), checked.summary())
}

/// The planted change is one `%caller` sees: `%probe` answers 0 where it answered 1.
#[test]
fn a_caller_of_a_changed_function_two_calls_away_is_run() {
    let call = "v2 = call fn0(v1)\n    return v2";
    let original = format!("{}\n{}", probe(MAGIC), callers(call));
    let wrong = format!("{}\n{}", probe(MAGIC + 1), callers(call));
    let (seen, summary) = reported(&original, &wrong, Mode::Safe);
    assert!(seen, "a wrong %probe only %caller sees passes: {summary}");
}

/// The same through a tail call: `%mid` reaches `%probe` with `return_call` (the caller's
/// slot stays live: `%caller` itself makes a plain call).
#[test]
fn a_caller_of_a_changed_function_through_a_tail_call_is_run() {
    let text = |magic| {
        format!(
            "{}\n{}",
            probe(magic),
            callers("v2 = call fn0(v1)\n    return v2")
        )
        .replace(
            "function %probe(i64) -> i32 {",
            "function %probe(i64) -> i32 tail {",
        )
        .replace(
            "function %mid(i64) -> i32 {",
            "function %mid(i64) -> i32 tail {",
        )
        .replace("(i64) -> i32\n", "(i64) -> i32 tail\n")
        .replace("v1 = call fn0(v0)\n    return v1", "return_call fn0(v0)")
    };
    let (seen, summary) = reported(&text(MAGIC), &text(MAGIC + 1), Mode::Safe);
    assert!(
        seen,
        "a wrong %probe reached by a tail call passes: {summary}"
    );
}

/// The changed function is reached through an alias (`%mid` calls `%p`, an alias of
/// `%probe`): the alias resolves to the changed body on the merged side.
#[test]
fn a_caller_of_a_changed_function_through_an_alias_is_run() {
    let text = |magic| {
        format!(
            "{}\n{}\n; alias: %p = %probe\n",
            probe(magic),
            callers("v2 = call fn0(v1)\n    return v2")
        )
        .replace("fn0 = %probe(i64) -> i32", "fn0 = %p(i64) -> i32")
    };
    let (seen, summary) = reported(&text(MAGIC), &text(MAGIC + 1), Mode::Aliases);
    assert!(
        seen,
        "a wrong %probe reached through an alias passes: {summary}"
    );
}

/// The alias itself is re-targeted by the wrong merge (`%p` names `%probe2`, a copy of
/// `%probe` that is wrong), and every body stays as it was.
#[test]
fn a_caller_of_an_alias_the_merge_retargeted_is_run() {
    let text = |target: &str| {
        format!(
            "{}\n{}\n{}\n; alias: %p = {target}\n",
            probe(MAGIC),
            probe(MAGIC + 1).replace("%probe", "%probe2"),
            callers("v2 = call fn0(v1)\n    return v2")
        )
        .replace("fn0 = %probe(i64) -> i32", "fn0 = %p(i64) -> i32")
    };
    let (seen, summary) = reported(&text("%probe"), &text("%probe2"), Mode::Aliases);
    assert!(seen, "a re-targeted alias passes: {summary}");
}

/// `%caller` and `%back` call each other (a recursion of unchanged functions) and `%back`
/// ends in the changed `%probe`: both leave the unchanged set through the cycle.
#[test]
fn a_recursion_of_unchanged_functions_reaching_a_changed_one_is_run() {
    let text = |magic: u32| {
        format!(
            "{}
function %back(i64, i32) -> i32 {{
    fn0 = %caller(i32) -> i32
    fn1 = %probe(i64) -> i32
block0(v0: i64, v1: i32):
    brif v1, block1, block2
block1:
    v7 = iconst.i32 1
    v2 = isub v1, v7
    v3 = call fn0(v2)
    return v3
block2:
    v4 = call fn1(v0)
    return v4
}}

function %caller(i32) -> i32 {{
    ss0 = explicit_slot 4
    fn0 = %back(i64, i32) -> i32
block0(v0: i32):
    v1 = iconst.i32 {MAGIC:#x}
    v2 = stack_addr.i64 ss0
    store.i32 notrap aligned v1, v2
    v5 = iconst.i32 3
    v3 = band v0, v5
    v4 = call fn0(v2, v3)
    return v4
}}
",
            probe(magic)
        )
    };
    let (seen, summary) = reported(&text(MAGIC), &text(MAGIC + 1), Mode::Safe);
    assert!(seen, "a wrong %probe under a recursion passes: {summary}");
}

/// `%same` compares the addresses of `%f` and `%g`, two functions with one body: in the
/// original they are two symbols (0), and `--mode safe` must keep them two (it makes `%g` a
/// thunk). A merged module that makes `%g` an alias of `%f` returns 1 natively, but `--verify`
/// gives the names an alias joins one address on *both* sides, so the original runs as if they
/// were equal too, and the wrong merge passes. (`--verify` is not told the mode: the safe
/// report is the planted module's claim.)
#[test]

fn verify_reports_an_alias_that_makes_two_compared_addresses_equal() {
    let body = "block0(v0: i32):\n    v2 = iconst.i32 3\n    v1 = imul v0, v2\n    return v1";
    let text = |alias: bool| {
        let g = if alias {
            "; alias: %g = %f\n".to_string()
        } else {
            format!("function %g(i32) -> i32 {{\n{body}\n}}\n")
        };
        format!(
            "function %f(i32) -> i32 {{\n{body}\n}}\n\n{g}
function %same() -> i8 {{
    fn0 = %f(i32) -> i32
    fn1 = %g(i32) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = func_addr.i64 fn1
    v2 = icmp eq v0, v1
    return v2
}}
"
        )
    };
    let original = read(&text(false));
    let report = merged(&original, Mode::Safe).0;
    assert_eq!(report.merged, 1, "%g merges into %f");
    // What safe mode does write passes.
    let mut safe = original.clone();
    merge_module(&mut safe, Mode::Safe);
    let ok = verify_merge(&original, &safe, &report, &VerifyOptions::default());
    assert!(ok.is_ok(), "{}", ok.summary());
    let wrong = read(&text(true));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    assert!(
        !checked.is_ok(),
        "an alias in --mode safe that makes %same return 1 passes: {}",
        checked.summary()
    );
}

/// `%same` as above, the two addresses taken through `symbol_value` of global values.
fn same_by_symbols(g_is_alias: bool) -> String {
    let body = "block0(v0: i32):\n    v2 = iconst.i32 3\n    v1 = imul v0, v2\n    return v1";
    let g = if g_is_alias {
        "; alias: %g = %f\n".to_string()
    } else {
        format!("function %g(i32) -> i32 {{\n{body}\n}}\n")
    };
    format!(
        "function %f(i32) -> i32 {{\n{body}\n}}\n\n{g}
function %same() -> i8 {{
    gv0 = symbol %f
    gv1 = symbol %g
block0:
    v0 = symbol_value.i64 gv0
    v1 = symbol_value.i64 gv1
    v2 = icmp eq v0, v1
    return v2
}}
"
    )
}

/// The same wrong alias seen through global values: `%same` declares no function, so only the
/// symbols its global values name tie it to the merge (it must not count as unchanged).
#[test]
fn verify_reports_an_alias_that_makes_two_symbol_values_equal() {
    let original = read(&same_by_symbols(false));
    let report = merged(&original, Mode::Safe).0;
    let wrong = read(&same_by_symbols(true));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    assert!(!checked.is_ok(), "{}", checked.summary());
}

/// In `--mode aliases` the report says `%g` became an alias of `%f`: the equal addresses are
/// what the mode intends, and the merge passes.
#[test]
fn verify_takes_a_reported_alias_as_one_address_on_both_sides() {
    let original = read(&same_by_symbols(false));
    let report = merged(&original, Mode::Aliases).0;
    let mut merged = original.clone();
    merge_module(&mut merged, Mode::Aliases);
    assert_eq!(merged.aliases().len(), 1, "%g is an alias");
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    assert!(checked.is_ok(), "{}", checked.summary());
}

/// A float parameter compared for equality with a constant the function computes
/// (`1.5 + 1.25` against `1.5 + 1.375`): random floats never hit 2.75 or 2.875, steering
/// values take only constants compared directly, and guided tuples aim at `icmp`s of integers
/// only, so giving `%g` `%f`'s body passes. (hostile4's integer case is found since every
/// `icmp` is a guided decision.)
#[test]
fn verify_reports_a_wrong_merge_of_float_equality_tests_against_computed_constants() {
    let body = |k: &str| {
        format!(
            "block0(v0: f64):\n    v1 = f64const 0x1.8p0\n    v2 = f64const {k}\n    v3 = fadd v1, v2\n    v4 = fcmp eq v0, v3\n    v5 = uextend.i32 v4\n    return v5"
        )
    };
    let (seen, summary) = planted("(f64) -> i32", &body("0x1.4p0"), &body("0x1.6p0"), "");
    assert!(seen, "a wrong merge of float comparisons passes: {summary}");
}

/// The integer case beside it, through the same planting: found (guided `icmp`).
#[test]
fn verify_reports_a_wrong_merge_of_integer_equality_tests_against_computed_constants() {
    let body = |k: u32| {
        format!(
            "block0(v0: i64):\n    v1 = iconst.i64 {k}\n    v2 = iconst.i64 77\n    v3 = imul v1, v2\n    v4 = icmp eq v0, v3\n    v5 = uextend.i32 v4\n    return v5"
        )
    };
    let (seen, summary) = planted("(i64) -> i32", &body(1_234_567), &body(1_234_568), "");
    assert!(
        seen,
        "a wrong merge of integer comparisons passes: {summary}"
    );
}

/// Even a float parameter compared directly with a constant (`fcmp eq v0, 2.75` against
/// `2.875`): steering values are taken from integer `icmp`s only.
#[test]
fn verify_reports_a_wrong_merge_of_float_equality_tests_against_constants() {
    let body = |k: &str| {
        format!(
            "block0(v0: f64):\n    v1 = f64const {k}\n    v2 = fcmp eq v0, v1\n    v3 = uextend.i32 v2\n    return v3"
        )
    };
    let (seen, summary) = planted("(f64) -> i32", &body("0x1.6p1"), &body("0x1.7p1"), "");
    assert!(seen, "a wrong merge of float comparisons passes: {summary}");
}

/// A stack slot aligned to 64 bytes (`%f`) against one aligned to 16 (`%g`), each returning its
/// address's low six bits. hostile6 took `%f`'s address for a multiple of 64 natively and
/// asked the check to report giving `%f` `%g`'s body; the check laid slots out to their
/// declared alignment up to 4 KiB to do so. Measured (2026-11-27, Cranelift 0.135, both
/// compiled with `clif-merge -o`, linked with a C driver calling them under 0 to 56 bytes of
/// padding): `%f` and `%g` return the same at every depth, 48, 48, 32, 32, 16, 16, 0, 0 on
/// x86_64 and 16, 16, 0, 0, 48, 48, 32, 32 on aarch64 under qemu, since a frame is only as
/// aligned as the stack pointer (hostile16). The check now lays slots out at most 16-aligned,
/// as natively, and the merge passes, as it behaves the same.
#[test]
fn a_merge_that_drops_an_alignment_cranelift_does_not_give_passes() {
    let body = |align: u32| {
        format!(
            "    ss0 = explicit_slot 4\n    ss1 = explicit_slot 64, align = {align}\nblock0:\n    v0 = stack_addr.i64 ss1\n    v1 = iconst.i64 63\n    v2 = band v0, v1\n    return v2"
        )
    };
    let (seen, summary) = planted("() -> i64", &body(16), &body(64), "");
    assert!(!seen, "dropping a 64-byte alignment is reported: {summary}");
}

/// A store before an import call against the same store after it: the import is given the
/// address, so natively it reads the stored value in one order and the old one in the other.
/// `--verify` records the stores and the import calls in two lists, each in order, but not how
/// they interleave (and models the import as a function of its arguments alone), so giving
/// `%g` `%f`'s body passes.
#[test]
fn verify_reports_a_wrong_merge_that_moves_a_store_across_an_import_call() {
    let body = |store_first: bool| {
        let store = "    store.i64 notrap aligned v1, v0";
        let call = "    v2 = call fn0(v0)";
        let (first, second) = in_order(store_first, store, call);
        format!(
            "    fn0 = %observe(i64) -> i64\nblock0(v0: i64, v1: i64):\n{first}\n{second}\n    return v2"
        )
    };
    let (seen, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(
        seen,
        "a store moved across an import call passes: {summary}"
    );
}

/// A load before an import call against the same load after it: natively the import may write
/// the memory it is given the address of. `--verify` models an import as writing nothing, so
/// the load reads the same on both sides and giving `%g` `%f`'s body passes.
#[test]
fn verify_reports_a_wrong_merge_that_moves_a_load_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v1 = load.i64 notrap aligned v0";
        let call = "    v2 = call fn0(v0)";
        let (first, second) = in_order(load_first, load, call);
        format!(
            "    fn0 = %fill(i64) -> i64\nblock0(v0: i64):\n{first}\n{second}\n    v3 = iadd v1, v2\n    return v3"
        )
    };
    let (seen, summary) = planted("(i64) -> i64", &body(true), &body(false), "");
    assert!(seen, "a load moved across an import call passes: {summary}");
}

/// `%g` is an alias of `%f2` (`x * 5`), and `%h` calls through `%g`'s address; the wrong merge
/// points `%g` at `%f` (`x * 3`) and changes no body. `--verify` joins into one address slot
/// every name an alias joins in *either* module, here `%f`, `%f2` and `%g`, and a call through
/// the slot runs its first defined name, `%f`, on both sides: the original's `%h` runs `x * 3`
/// too, and the wrong merge passes. (An alias is never run by its own name either: only
/// defined functions are.) A direct call to `%g` is found, for contrast.
#[test]
fn verify_reports_an_alias_retargeted_and_called_through_its_address() {
    let text = |target: &str, call: &str| {
        format!(
            "function %f(i32) -> i32 {{
block0(v0: i32):
    v1 = iconst.i32 3
    v2 = imul v0, v1
    return v2
}}

function %f2(i32) -> i32 {{
block0(v0: i32):
    v1 = iconst.i32 5
    v2 = imul v0, v1
    return v2
}}

function %h(i32) -> i32 {{
    sig0 = (i32) -> i32
    fn0 = %g sig0
block0(v0: i32):
{call}
    return v2
}}
; alias: %g = {target}
"
        )
    };
    let check = |call: &str| {
        let original = read(&text("%f2", call));
        let report = merged(&original, Mode::Safe).0;
        assert_eq!(report.merged, 0, "nothing merges");
        let wrong = read(&text("%f", call));
        verify_merge(&original, &wrong, &report, &VerifyOptions::default())
    };
    let direct = check("    v2 = call fn0(v0)");
    assert!(!direct.is_ok(), "a direct call: {}", direct.summary());
    let through_address = check("    v1 = func_addr.i64 fn0\n    v2 = call_indirect sig0, v1(v0)");
    assert!(
        !through_address.is_ok(),
        "an alias re-targeted, called through its address, passes: {}",
        through_address.summary()
    );
}

/// The same alias re-targeted, with no use inside the module: other objects call `g` by its
/// symbol, but `--verify` runs only the functions the original defines, never an alias by its
/// own name, so the wrong merge passes.
#[test]
fn verify_reports_an_exported_alias_retargeted() {
    let text = |target: &str| {
        format!(
            "function %f(i32) -> i32 {{
block0(v0: i32):
    v1 = iconst.i32 3
    v2 = imul v0, v1
    return v2
}}

function %f2(i32) -> i32 {{
block0(v0: i32):
    v1 = iconst.i32 5
    v2 = imul v0, v1
    return v2
}}
; alias: %g = {target}
"
        )
    };
    let original = read(&text("%f2"));
    let report = merged(&original, Mode::Safe).0;
    let wrong = read(&text("%f"));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    assert!(
        !checked.is_ok(),
        "an exported alias re-targeted passes: {}",
        checked.summary()
    );
}

/// `n` functions `%p{i}`: `x * K` when `x & 7` is `i % 8`, else `x + i`; `wrong` gives every
/// third function `K + 1`, a difference only some tuples see.
fn many(n: usize, wrong: bool, reversed: bool) -> ClifModule {
    let mut funcs: Vec<String> = (0..n)
        .map(|i| {
            let k = 1_000 + i + usize::from(wrong && i % 3 == 0);
            format!(
                "function %p{i}(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 7
    v2 = band v0, v1
    v3 = iconst.i64 {sel}
    v4 = icmp eq v2, v3
    brif v4, block1, block2
block1:
    v5 = iconst.i64 {k}
    v6 = imul v0, v5
    return v6
block2:
    v7 = iconst.i64 {i}
    v8 = iadd v0, v7
    return v8
}}
",
                sel = i % 8
            )
        })
        .collect();
    if reversed {
        funcs.reverse();
    }
    read(&funcs.join("\n"))
}

/// The mismatches `verify_merge` finds, as (function, arguments), sorted.
fn verdicts(original: &ClifModule, wrong: &ClifModule, runs: usize) -> Vec<(String, String)> {
    let report = merged(original, Mode::Safe).0;
    let options = VerifyOptions {
        runs,
        ..VerifyOptions::default()
    };
    let checked = verify_merge(original, wrong, &report, &options);
    let mut found: Vec<(String, String)> = (checked.mismatches.iter())
        .map(|m| (m.function.to_string(), format!("{:?}", m.args)))
        .collect();
    found.sort();
    found
}

/// The verdicts do not depend on the order of the functions in the modules (pieces of 64
/// functions checked on the pool, each with its own caches), nor on a repeated run; and with a
/// single tuple (`--verify-runs 1`) the wrong functions are still seen where that tuple hits.
#[test]
fn verdicts_do_not_depend_on_function_order_or_repetition() {
    let n = 200;
    let forward = verdicts(&many(n, false, false), &many(n, true, false), 64);
    assert!(!forward.is_empty(), "the wrong functions are found");
    let wrong: std::collections::BTreeSet<&str> = forward.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        wrong.len(),
        n.div_ceil(3),
        "every third function: {wrong:?}"
    );
    let reversed = verdicts(&many(n, false, true), &many(n, true, true), 64);
    assert_eq!(forward, reversed, "the verdicts depend on the order");
    let again = verdicts(&many(n, false, false), &many(n, true, false), 64);
    assert_eq!(forward, again, "a second run gives other verdicts");
    let one = verdicts(&many(n, false, false), &many(n, true, false), 1);
    let mixed = verdicts(&many(n, false, true), &many(n, true, false), 1);
    assert_eq!(one, mixed, "--verify-runs 1 depends on the order");
}

/// Calls to an import with `i128`, vector and float arguments that differ in one part only: the
/// upper half of an `i128`, one lane of an `i32x4`, the lowest mantissa bit of an `f32` (NaNs
/// among the edge values included), each found.
#[test]
fn verify_reports_wrong_merges_of_import_calls_with_wide_arguments() {
    let call = |ty: &str, prep: &str| {
        format!(
            "    fn0 = %sink({ty}) -> i64\nblock0(v0: {ty}):\n{prep}    v9 = call fn0(v1)\n    return v9"
        )
    };
    let cases = [
        (
            "i128 upper half",
            "i128",
            "    v1 = bnot v0\n".to_string(),
            "    v2 = bnot v0\n    v3 = iconst.i64 -1\n    v4 = uextend.i128 v3\n    v1 = band v2, v4\n"
                .to_string(),
        ),
        (
            "i32x4 lane",
            "i32x4",
            "    v1 = bnot v0\n".to_string(),
            "    v2 = bnot v0\n    v3 = iconst.i32 9\n    v1 = insertlane v2, v3, 3\n".to_string(),
        ),
        (
            "f32 lowest mantissa bit",
            "f32",
            "    v1 = fneg v0\n".to_string(),
            "    v2 = fneg v0\n    v3 = bitcast.i32 v2\n    v4 = iconst.i32 1\n    v5 = bxor v3, v4\n    v1 = bitcast.f32 v5\n"
                .to_string(),
        ),
    ];
    for (what, ty, f, g) in cases {
        let sig = format!("({ty}) -> i64");
        let (seen, summary) = planted(&sig, &call(ty, &f), &call(ty, &g), "");
        assert!(seen, "{what}: a wrong merge passes: {summary}");
    }
}
