//! Hostile inputs for `--verify` (seventh pass), against the sixth pass's fixes: address slots
//! per side, aliases checked by their own names, import calls that clobber memory and are
//! sequenced with stores, aligned stack slots and guided `fcmp`s. A wrong merge is planted by
//! hand (a module the merge did not write, checked against the report of the real merge); a
//! correct merge is the real one, which must pass.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{Observed, VerifyOptions, verify_merge};
use cranelift_codegen::data_value::DataValue;
use wrong_merges::{in_order, merged, passes, planted, read, real_merge_passes};

// ---------------------------------------------------------------------------------------------
// Import calls and memory.

/// A slot's address given to an import, and the slot loaded after the call against before it:
/// natively the import may write the slot (it has its address), so the two differ. `--verify`
/// clobbers memory outside the caller's frames only: the slot reads the same in both orders.
#[test]
fn verify_reports_a_load_of_an_escaped_stack_slot_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0(v2)";
        let (first, second) = in_order(load_first, load, call);
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (reported, summary) = planted("(i64) -> i64", &body(true), &body(false), "");
    assert!(
        reported,
        "a load of an escaped slot moved across an import call passes: {summary}"
    );
}

/// The same slot, its address given to the import through memory (stored in a heap word the
/// import can read), then loaded on the other side of the call.
#[test]
fn verify_reports_a_load_of_a_stack_slot_escaped_through_memory_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0()";
        let (first, second) = in_order(load_first, load, call);
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill() -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n    store.i64 notrap aligned v2, v1\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (reported, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(
        reported,
        "a load of an escaped slot moved across an import call passes: {summary}"
    );
}

/// A store to an escaped slot moved across the import call is another sequence of stores and
/// calls: found (held).
#[test]
fn verify_reports_a_store_to_an_escaped_stack_slot_moved_across_an_import_call() {
    let body = |store_first: bool| {
        let store = "    store.i64 notrap aligned v1, v2";
        let call = "    v4 = call fn0(v2)";
        let (first, second) = in_order(store_first, store, call);
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v3 = load.i64 notrap aligned v2\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (reported, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(
        reported,
        "a store moved across an import call passes: {summary}"
    );
}

/// A load of a heap word through a pointer loaded from a parameter, moved across an import
/// call that gets neither: natively the import may still write it (any memory outside the
/// frames). Found (held).
#[test]
fn verify_reports_a_load_of_unrelated_memory_moved_across_an_argumentless_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i32 notrap aligned v0+16";
        let call = "    v4 = call fn0()";
        let (first, second) = in_order(load_first, load, call);
        format!(
            "    fn0 = %tick() -> i32\nblock0(v0: i64):\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (reported, summary) = planted("(i64) -> i32", &body(true), &body(false), "");
    assert!(
        reported,
        "a load moved across an import call passes: {summary}"
    );
}

// ---------------------------------------------------------------------------------------------
// Aliases and address slots.

/// `%f` (`x * 3`) and `%f2` (`x * 5`), and `rest`.
fn two_bodies(rest: &str) -> String {
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
{rest}"
    )
}

/// An exported alias the wrong merge drops: other objects calling `%z` no longer link.
#[test]
fn verify_reports_an_exported_alias_the_merge_dropped() {
    let (ok, summary) = passes(
        &two_bodies("; alias: %z = %f2\n"),
        &two_bodies(""),
        Mode::Safe,
    );
    assert!(!ok, "a dropped alias passes: {summary}");
}

/// `%same` compares the addresses of `%z` and `%f2`: one symbol in the original (`%z` an alias
/// of `%f2`), two in the wrong merge, which makes `%z` a function of its own with `%f2`'s body.
#[test]
fn verify_reports_an_alias_made_a_copy_of_its_target_when_addresses_are_compared() {
    let same = "
function %same() -> i8 {
    fn0 = %z(i32) -> i32
    fn1 = %f2(i32) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = func_addr.i64 fn1
    v2 = icmp eq v0, v1
    return v2
}
";
    let original = two_bodies(&format!("{same}; alias: %z = %f2\n"));
    let copy = "function %z(i32) -> i32 {\nblock0(v0: i32):\n    v1 = iconst.i32 5\n    v2 = imul v0, v1\n    return v2\n}\n";
    let wrong = two_bodies(&format!("{same}{copy}"));
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(!ok, "an alias made a copy passes: {summary}");
}

/// The wrong merge defines an alias named like an import the original calls: natively the
/// call then binds to the module's own function instead of the other object's.
#[test]
fn verify_reports_an_alias_named_like_an_import() {
    let user = "
function %user(i32) -> i32 {
    fn0 = %ext(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}
";
    let original = two_bodies(user);
    let wrong = two_bodies(&format!("{user}; alias: %ext = %f\n"));
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(!ok, "an alias that captures an import passes: {summary}");
}

/// The same, the import's address passed to another import instead of called: natively the
/// other object receives the module's `%f` rather than the real `%ext`. `--verify` numbers an
/// address slot by its smallest name: `%ext` sorts before `%f`, so the joined slot keeps
/// `%ext`'s number and the import receives the same value on both sides. (Named `%zext`, the
/// slot takes `%f`'s number and the wrong merge is found: see the test below.)
#[test]
fn verify_reports_an_alias_named_like_an_import_whose_address_is_passed_on() {
    let user = "
function %user() -> i32 {
    fn0 = %ext(i32) -> i32
    fn1 = %register(i64) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = call fn1(v0)
    return v1
}
";
    let original = two_bodies(user);
    let wrong = two_bodies(&format!("{user}; alias: %ext = %f\n"));
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(
        !ok,
        "an alias that captures a passed import address passes: {summary}"
    );
}

/// A correct merge with aliases everywhere: input aliases of a member that becomes an
/// alias and of the kept function, addresses of each compared, stored to memory and passed to an import; `--mode
/// aliases`, and safe and thunks for contrast. Every real merge passes (no false alarm).
#[test]
fn real_merges_of_alias_chains_whose_addresses_are_compared_stored_and_passed_pass() {
    let body = "block0(v0: i32):\n    v1 = iconst.i32 7\n    v2 = bitrev v0\n    v3 = imul v2, v1\n    return v3";
    let module = format!(
        "; alias: %zz = %g
; alias: %a0 = %f
function %f(i32) -> i32 {{\n{body}\n}}

function %g(i32) -> i32 {{\n{body}\n}}

function %h(i32) -> i32 {{\n{body}\n}}

function %addrs(i64) -> i64 {{
    fn0 = %zz(i32) -> i32
    fn1 = %f(i32) -> i32
    fn2 = %h(i32) -> i32
    fn3 = %a0(i32) -> i32
    fn4 = %register(i64) -> i64
block0(v0: i64):
    v1 = func_addr.i64 fn0
    v2 = func_addr.i64 fn1
    v3 = func_addr.i64 fn2
    v4 = func_addr.i64 fn3
    v5 = icmp eq v1, v2
    v6 = icmp eq v3, v4
    v7 = bor v5, v6
    store.i64 notrap aligned v1, v0
    store.i64 notrap aligned v4, v0+8
    v8 = call fn4(v3)
    v9 = uextend.i64 v7
    v10 = iadd v8, v9
    return v10
}}

function %calls(i32) -> i32 {{
    sig0 = (i32) -> i32
    fn0 = %zz(i32) -> i32
    fn1 = %a0(i32) -> i32
block0(v0: i32):
    v1 = func_addr.i64 fn0
    v2 = call_indirect sig0, v1(v0)
    v3 = call fn1(v2)
    return v3
}}
"
    );
    for mode in [Mode::Aliases, Mode::Safe, Mode::Thunks] {
        let (ok, summary, merged) = real_merge_passes(&module, mode);
        assert!(merged >= 2, "{mode:?}: %g and %h merge into %f");
        assert!(ok, "{mode:?}: a correct merge is reported: {summary}");
    }
}

/// The previous case with the import named `%zext`, after `%f`: the joined slot takes `%f`'s
/// number, and the wrong merge is found (held): whether it is depends on the names' order.
#[test]
fn verify_reports_an_alias_named_like_a_later_import_whose_address_is_passed_on() {
    let user = "
function %user() -> i32 {
    fn0 = %zext(i32) -> i32
    fn1 = %register(i64) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = call fn1(v0)
    return v1
}
";
    let original = two_bodies(user);
    let wrong = two_bodies(&format!("{user}; alias: %zext = %f\n"));
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(
        !ok,
        "an alias that captures a passed import address passes: {summary}"
    );
}

/// An import's address returned, the wrong merge defining an alias of that name (`%ext`, which
/// sorts before its target `%f`): natively the function returns the address of the module's
/// `%f` instead of the other object's `%ext`.
#[test]
fn verify_reports_an_alias_named_like_an_import_whose_address_is_returned() {
    let user = "
function %user() -> i64 {
    fn0 = %ext(i32) -> i32
block0:
    v0 = func_addr.i64 fn0
    return v0
}
";
    let original = two_bodies(user);
    let wrong = two_bodies(&format!("{user}; alias: %ext = %f\n"));
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(
        !ok,
        "an alias that captures a returned import address passes: {summary}"
    );
}

// ---------------------------------------------------------------------------------------------
// Stack slots and their alignment.

/// `n` one-byte slots aligned to `align`; the function returns the distance from the first
/// slot's address to the last's: at least the bytes its frame takes.
fn aligned_slots(n: usize, align: u32) -> String {
    let slots: String = (0..n)
        .map(|i| format!("    ss{i} = explicit_slot 1, align = {align}\n"))
        .collect();
    format!(
        "function %spread() -> i64 {{
{slots}block0:
    v0 = stack_addr.i64 ss0
    v1 = stack_addr.i64 ss{last}
    v2 = isub v1, v0
    return v2
}}
",
        last = n - 1
    )
}

/// `max_stack_bytes` bounds the bytes of stack slots live at once, but a frame's size is
/// estimated as its slots' sizes (plus 16 each) while its slots are laid out with their
/// alignment: 256 one-byte slots aligned to 4 KiB take 2 MiB (an estimate of 4 KiB), so a run
/// under a 1 MiB limit allocates twice the limit (with 20 000 such slots, a 200 KB module
/// makes `--verify` allocate 160 MB a frame and take a minute in a debug build).
#[test]
fn a_frame_of_aligned_slots_is_held_to_the_stack_limit() {
    let module = read(&aligned_slots(256, 4096));
    let options = VerifyOptions {
        max_stack_bytes: 1 << 20,
        ..VerifyOptions::default()
    };
    let name = module.functions().next().unwrap().name.clone();
    let run = clif_merge::verify::run_function(&module, &name, &[], &options);
    if let clif_merge::verify::Outcome::Returned(values) = &run.outcome {
        let spread = match values[..] {
            [Observed::Value(DataValue::I64(spread))] => spread as u64,
            _ => panic!("returns {values:?}"),
        };
        assert!(
            spread < options.max_stack_bytes as u64,
            "a frame of {spread} bytes ran under a limit of {} bytes",
            options.max_stack_bytes
        );
    }
}

/// The slots' addresses keep the alignment a frame natively has (held): each of 8 slots
/// declared 4 KiB-aligned is a multiple of 16 and no two share an address. (Until hostile16 they
/// were laid out as multiples of 4 KiB, which Cranelift's frames, 16-aligned, do not give.)
#[test]
fn slots_aligned_to_4_kib_are_distinct_and_16_aligned_as_natively() {
    let module = read(&aligned_slots(8, 4096).replace(
        "    v2 = isub v1, v0\n    return v2",
        "    v3 = bor v0, v1\n    v4 = iconst.i64 15\n    v5 = band v3, v4\n    v6 = icmp eq v0, v1\n    v7 = uextend.i64 v6\n    v2 = bor v5, v7\n    return v2",
    ));
    let name = module.functions().next().unwrap().name.clone();
    let run = clif_merge::verify::run_function(&module, &name, &[], &VerifyOptions::default());
    assert_eq!(
        format!("{:?}", run.outcome),
        "Returned([Value(I64(0))])",
        "slots aligned to 4 KiB"
    );
}

// ---------------------------------------------------------------------------------------------
// Float comparisons.

/// Whether a wrong merge of `%f`'s and `%g`'s bodies, each `prep` then a comparison of
/// `operand` with the constant `k_f` (`k_g`) of type `ty`, returning the flag, is reported.
fn float_equality_planted(
    ty: &str,
    (prep, operand): (&str, &str),
    cc: &str,
    k_f: &str,
    k_g: &str,
) -> (bool, String) {
    let body = |k: &str| {
        format!(
            "block0(v0: {ty}):\n{prep}    v2 = {ty}const {k}\n    v3 = fcmp {cc} {operand}, v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    let (reported, summary) = planted(&format!("({ty}) -> i32"), &body(k_f), &body(k_g), "");
    (reported, summary)
}

/// `f32` parameters compared directly with a constant for equality: found (held).
#[test]
fn verify_reports_wrong_merges_of_f32_equality_with_constants() {
    for cc in ["eq", "ne", "ueq", "one"] {
        let (seen, summary) = float_equality_planted("f32", ("", "v0"), cc, "0x1.6p1", "0x1.7p1");
        assert!(seen, "fcmp {cc}: a wrong merge passes: {summary}");
    }
}

/// `f32` parameters compared with `lt` or `ge` against 2.875 in the original, 2.75 in the wrong
/// merge: they differ on `[2.75, 2.875)`. The guided tuple hits 2.875 (both alike); its
/// neighbour below, where they differ, is aimed at the same side ("equal") and dropped once
/// the first covers it (see the integer case below).
#[test]
fn verify_reports_wrong_merges_of_f32_ordered_comparisons_with_constants() {
    for cc in ["lt", "ge"] {
        let (seen, summary) = float_equality_planted("f32", ("", "v0"), cc, "0x1.6p1", "0x1.7p1");
        assert!(seen, "fcmp {cc}: a wrong merge passes: {summary}");
    }
}

/// A parameter plus a constant compared with a constant (`x + 1.0 == 3.5` against `3.75`): the
/// operand is a computed float whose bits are far from the parameter's, so no argument is
/// aimed. (The integer case `x + 5 == c` is found: an argument a small difference away from an
/// operand is aimed at.)
#[test]
fn verify_reports_a_wrong_merge_of_computed_float_equality() {
    let prep = "    v5 = f64const 0x1.0p0\n    v1 = fadd v0, v5\n";
    let (seen, summary) = float_equality_planted("f64", (prep, "v1"), "eq", "0x1.cp1", "0x1.ep1");
    assert!(seen, "a wrong merge of x + 1.0 == c passes: {summary}");
}

/// `x + k == c` for `i64`, `%g` given `%f`'s constant.
fn computed_integer_planted(k: i64) -> (bool, String) {
    let body = |c: u32| {
        format!(
            "block0(v0: i64):\n    v5 = iconst.i64 {k}\n    v1 = iadd v0, v5\n    v2 = iconst.i64 {c}\n    v3 = icmp eq v1, v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    let (reported, summary) = planted("(i64) -> i32", &body(7_654_321), &body(7_654_322), "");
    (reported, summary)
}

/// The integer case beside it, a parameter plus 5 (within the eight a guided argument may be
/// from an operand): found (held).
#[test]
fn verify_reports_a_wrong_merge_of_a_parameter_plus_five_compared() {
    let (seen, summary) = computed_integer_planted(5);
    assert!(seen, "a wrong merge of x + 5 == c passes: {summary}");
}

/// A parameter plus 1000 compared with a constant: the operand is 1000 from the parameter,
/// beyond the eight (`NEAR`) a guided argument may be off by, so no argument is aimed at it.
#[test]
fn verify_reports_a_wrong_merge_of_a_parameter_plus_a_thousand_compared() {
    let (seen, summary) = computed_integer_planted(1000);
    assert!(seen, "a wrong merge of x + 1000 == c passes: {summary}");
}

/// `x == 0.0` (true for -0.0 too) against "the bits of `x` are 0" (false for -0.0): the two
/// differ on -0.0 alone.
#[test]
fn verify_reports_a_wrong_merge_that_tells_negative_zero_apart() {
    let f = "block0(v0: f64):\n    v1 = f64const 0.0\n    v2 = fcmp eq v0, v1\n    v3 = uextend.i32 v2\n    return v3";
    let g = "block0(v0: f64):\n    v1 = bitcast.i64 v0\n    v4 = iconst.i64 0\n    v2 = icmp eq v1, v4\n    v3 = uextend.i32 v2\n    return v3";
    let (reported, summary) = planted("(f64) -> i32", g, f, "");
    assert!(reported, "-0.0 told apart from 0.0 passes: {summary}");
}

/// `x` is a NaN with a given payload (bits compared) against `x` is a NaN (`fcmp uno`): they
/// differ on every other NaN.
#[test]
fn verify_reports_a_wrong_merge_of_a_nan_payload_test() {
    let f = "block0(v0: f32):\n    v1 = fcmp uno v0, v0\n    v3 = uextend.i32 v1\n    return v3";
    let g = "block0(v0: f32):\n    v1 = bitcast.i32 v0\n    v4 = iconst.i32 0x7fc0_0001\n    v2 = icmp eq v1, v4\n    v3 = uextend.i32 v2\n    return v3";
    let (reported, summary) = planted("(f32) -> i32", g, f, "");
    assert!(
        reported,
        "a NaN payload test passes for fcmp uno: {summary}"
    );
}

/// Integer ordered comparisons returned (not branched on) with constants ten apart: the
/// original's constant is aimed at, where both answer alike; its neighbour (one below), where
/// they differ, is queued aimed at the same side, "equal", which the first tuple covers, and is
/// then dropped.
#[test]
fn verify_reports_a_wrong_merge_of_integer_ordered_comparisons_ten_apart() {
    let body = |k: i64| {
        format!(
            "block0(v0: i64):\n    v1 = iconst.i64 {k}\n    v2 = icmp slt v0, v1\n    v3 = uextend.i32 v2\n    return v3"
        )
    };
    let (reported, summary) = planted("(i64) -> i32", &body(1_000_000), &body(1_000_010), "");
    assert!(reported, "slt 1000000 for slt 1000010 passes: {summary}");
}

// ---------------------------------------------------------------------------------------------
// Addresses other objects see.

/// Two exported functions with one body (`%f`, `%g`) and `rest`; with `g_alias`, `%g` is an
/// alias of `%f` instead.
fn twins(rest: &str, g_alias: bool) -> String {
    let body = "block0(v0: i32):\n    v1 = iconst.i32 7\n    v2 = bitrev v0\n    v3 = imul v2, v1\n    return v3";
    let g = if g_alias {
        "; alias: %g = %f\n".to_string()
    } else {
        format!("function %g(i32) -> i32 {{\n{body}\n}}\n")
    };
    format!("function %f(i32) -> i32 {{\n{body}\n}}\n\n{g}{rest}")
}

/// In `--mode safe` every exported symbol keeps its own address: the report says `%g` becomes
/// a thunk. A planted module that makes `%g` an alias of `%f` gives another object that
/// compares `&f` with `&g` (both exported) another answer, but nothing inside the module takes
/// an address, and the alias runs as `%f` by its own name: it passes.
#[test]
fn verify_reports_an_exported_function_made_an_alias_in_safe_mode() {
    let original = twins("", false);
    let (report, _) = merged(&read(&original), Mode::Safe);
    assert_eq!(report.merged, 1, "%g merges into %f");
    let (ok, summary) = passes(&original, &twins("", true), Mode::Safe);
    assert!(!ok, "an alias in safe mode passes: {summary}");
}

/// The same, `&f` handed to another object (an import): it may compare it with `&g`, which it
/// takes itself. The slot `%f` and `%g` share in the wrong merge is numbered by `%f`, so the
/// import receives the same number on both sides.
#[test]
fn verify_reports_a_safe_mode_alias_when_the_kept_address_is_passed_out() {
    let user = "
function %user() -> i32 {
    fn0 = %f(i32) -> i32
    fn1 = %register(i64) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = call fn1(v0)
    return v1
}
";
    let (ok, summary) = passes(&twins(user, false), &twins(user, true), Mode::Safe);
    assert!(!ok, "an alias in safe mode passes: {summary}");
}

/// The other way round (`&g`, the alias, passed out): its number changes from `%g`'s to
/// `%f`'s, and the wrong merge is found (held).
#[test]
fn verify_reports_a_safe_mode_alias_when_the_alias_address_is_passed_out() {
    let user = "
function %user() -> i32 {
    fn0 = %g(i32) -> i32
    fn1 = %register(i64) -> i32
block0:
    v0 = func_addr.i64 fn0
    v1 = call fn1(v0)
    return v1
}
";
    let (ok, summary) = passes(&twins(user, false), &twins(user, true), Mode::Safe);
    assert!(!ok, "an alias in safe mode passes: {summary}");
}

/// A trap moved before an import call: natively the other object's call happens, then the trap,
/// in one order, and no call in the other. Found (held).
#[test]
fn verify_reports_a_trap_moved_before_an_import_call() {
    let body = |call_first: bool| {
        let trap = "    trapz v0, user1";
        let call = "    v2 = call fn0(v0)";
        let (first, second) = in_order(call_first, call, trap);
        format!("    fn0 = %note(i64) -> i64\nblock0(v0: i64):\n{first}\n{second}\n    return v2")
    };
    let (reported, summary) = planted("(i64) -> i64", &body(true), &body(false), "");
    assert!(
        reported,
        "a trap moved before an import call passes: {summary}"
    );
}

/// An `f32` parameter widened to `f64` and compared with a constant (`fpromote(x) == 2.75`
/// against `2.875`): the integer case beside it (a parameter extended, then compared) is aimed
/// at through its low bits, but an `f64`'s low bits are not the `f32`'s.
#[test]
fn verify_reports_a_wrong_merge_of_widened_float_equality() {
    let body = |k: &str| {
        format!(
            "block0(v0: f32):\n    v1 = fpromote.f64 v0\n    v2 = f64const {k}\n    v3 = fcmp eq v1, v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    let (reported, summary) = planted("(f32) -> i32", &body("0x1.6p1"), &body("0x1.7p1"), "");
    assert!(
        reported,
        "a wrong merge of fpromote(x) == c passes: {summary}"
    );
}

/// The integer case: an `i32` parameter sign-extended to `i64` and compared (held).
#[test]
fn verify_reports_a_wrong_merge_of_widened_integer_equality() {
    let body = |k: i64| {
        format!(
            "block0(v0: i32):\n    v1 = sextend.i64 v0\n    v2 = iconst.i64 {k}\n    v3 = icmp eq v1, v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    let (reported, summary) = planted("(i32) -> i32", &body(7_654_321), &body(7_654_322), "");
    assert!(
        reported,
        "a wrong merge of sextend(x) == c passes: {summary}"
    );
}

/// In `--mode safe` the exported `%g` becomes a thunk; a planted module with the same thunk made
/// local gives other objects no `g` to link against (and a `preemptible` one lets them
/// replace it), but `--verify` runs bodies by name and never looks at linkage: it passes.
#[test]
fn verify_reports_an_exported_function_made_local() {
    let original = twins("", false);
    let (report, merged_module) = merged(&read(&original), Mode::Safe);
    assert_eq!(report.merged, 1, "%g merges into %f");
    let text = clif_merge::emit::clif::module_to_clif(&merged_module);
    let wrong = format!(
        "; linkage: %g local\n{}",
        text.replace("; linkage: %g export\n", "")
    );
    let (ok, summary) = passes(&original, &wrong, Mode::Safe);
    assert!(!ok, "an exported thunk made local passes: {summary}");
}

// ---------------------------------------------------------------------------------------------
// Generated correct merges: no false alarm.

/// A small deterministic generator (SplitMix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// `%f{i}(p, x)`: an aligned slot written, an import given the slot's address or `p`, a heap
/// word written through `p`, a second import given another slot or `p`, loads of both after
/// the calls, and the slot's low address bits; a few constants and shapes, so that exact and
/// similar classes form.
fn import_and_slot_function(name: &str, rng: &mut Mix) -> String {
    let k1 = rng.pick(&[11, 12, 13]);
    let k2 = rng.pick(&[5, 6]);
    let align = rng.pick(&[16, 64]);
    let shape = rng.pick(&[0u32, 3, 7]);
    let first = if shape & 1 != 0 { "v2" } else { "v0" };
    let second = if shape & 2 != 0 { "v3, v0" } else { "v0, v1" };
    let tail = if shape & 4 != 0 {
        "    v14 = band v2, v4\n    v15 = iadd v13, v14\n    return v15"
    } else {
        "    return v13"
    };
    format!(
        "function %{name}(i64, i64) -> i64 {{
    ss0 = explicit_slot 16, align = {align}
    ss1 = explicit_slot 8
    fn0 = %ext(i64) -> i64
    fn1 = %ext2(i64, i64) -> i64
block0(v0: i64, v1: i64):
    v2 = stack_addr.i64 ss0
    v3 = stack_addr.i64 ss1
    v4 = iconst.i64 {k1}
    store.i64 notrap aligned v4, v2
    v5 = call fn0({first})
    v6 = iconst.i64 {k2}
    v7 = imul v1, v6
    store.i64 notrap aligned v7, v0+8
    v8 = call fn1({second})
    v9 = load.i64 notrap aligned v2
    v10 = load.i64 notrap aligned v0+8
    v11 = iadd v9, v10
    v12 = iadd v11, v5
    v13 = iadd v12, v8
{tail}
}}
"
    )
}

/// A module of such functions, some with linkage directives, and a caller that passes its own
/// slot to each in turn.
fn import_and_slot_module(seed: u64) -> String {
    let mut rng = Mix(seed);
    let n = 3 + (rng.next() % 4) as usize;
    let mut text = String::new();
    for i in 0..n {
        if rng.next().is_multiple_of(2) {
            let linkage = rng.pick(&["export", "local", "hidden", "preemptible"]);
            text += &format!("; linkage: %f{i} {linkage}\n");
        }
    }
    for i in 0..n {
        text += &import_and_slot_function(&format!("f{i}"), &mut rng);
        text += "\n";
    }
    text += "function %caller(i64) -> i64 {\n    ss0 = explicit_slot 64, align = 32\n";
    for i in 0..n {
        text += &format!("    fn{i} = %f{i}(i64, i64) -> i64\n");
    }
    text +=
        "block0(v0: i64):\n    v1 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v1+8\n";
    let mut acc = "v0".to_string();
    for i in 0..n {
        text += &format!("    v{} = call fn{i}(v1, {acc})\n", 10 + i);
        acc = format!("v{}", 10 + i);
    }
    text + &format!("    return {acc}\n}}\n")
}

/// Generated modules whose functions pass stack slots and heap words to imports around stores
/// and loads: every real merge (each mode, exact and similar) passes `--verify`, and merges
/// happen in most of them.
#[test]
fn real_merges_of_functions_passing_slots_to_imports_pass() {
    let mut merged_somewhere = 0;
    for seed in 0..24 {
        let text = import_and_slot_module(seed);
        let original = read(&text);
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            for similar in [false, true] {
                let options = clif_merge::MergeOptions {
                    mode,
                    similar: similar.then(clif_merge::SimilarOptions::default),
                    ..clif_merge::MergeOptions::default()
                };
                let out = clif_merge::pipeline::run(
                    original.clone(),
                    &clif_merge::pipeline::PipelineOptions {
                        merge: options,
                        ..Default::default()
                    },
                )
                .unwrap();
                merged_somewhere += usize::from(out.report.merged > 0);
                let checked = verify_merge(
                    &original,
                    &out.module,
                    &out.report,
                    &VerifyOptions::default(),
                );
                assert!(
                    checked.is_ok(),
                    "seed {seed} {mode:?} similar {similar}: {}\n{text}",
                    checked.summary()
                );
            }
        }
    }
    assert!(
        merged_somewhere > 24,
        "merges happen: {merged_somewhere} of 144"
    );
}

/// A vector parameter compared lane by lane with a constant vector (all lanes equal): random
/// vectors never match every lane. Fixed: a vector `icmp` is a guided decision lane by lane,
/// and a vector argument that is one operand is made the other as a whole (`guide.rs`).
#[test]
fn verify_reports_a_wrong_merge_of_a_vector_equality_test() {
    let body = |last: u32| {
        format!(
            "block0(v0: i32x4):\n    v1 = vconst.i32x4 [1 2 3 {last}]\n    v2 = icmp eq v0, v1\n    v3 = vall_true v2\n    v4 = uextend.i32 v3\n    return v4"
        )
    };
    let (reported, summary) = planted("(i32x4) -> i32", &body(4), &body(5), "");
    assert!(
        reported,
        "a wrong merge of a vector equality test passes: {summary}"
    );
}
