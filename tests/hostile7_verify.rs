//! Hostile inputs for `--verify` (seventh pass), against the sixth pass's fixes: address slots
//! per side, aliases checked by their own names, import calls that clobber memory and are
//! sequenced with stores, aligned stack slots and guided `fcmp`s. A wrong merge is planted by
//! hand (a module the merge did not write, checked against the report of the real merge); a
//! correct merge is the real one, which must pass.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, MergeReport, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// The report of merging `original` in `mode`, and the module the merge writes.
fn merged(original: &ClifModule, mode: Mode) -> (MergeReport, ClifModule) {
    let mut merged = original.clone();
    let report = merge_module(&mut merged, mode).0;
    (report, merged)
}

/// Whether `verify_merge` passes `wrong` as a merge of `original` with the report of merging
/// `original` in `mode`, with its summary.
fn passes(original: &str, wrong: &str, mode: Mode) -> (bool, String) {
    let original = read(original);
    let (report, _) = merged(&original, mode);
    let checked = verify_merge(&original, &read(wrong), &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary())
}

/// Whether the real merge of `original` in `mode` passes `verify_merge`, with its summary and
/// how many functions it merged.
fn real_merge_passes(original: &str, mode: Mode) -> (bool, String, usize) {
    let original = read(original);
    let (report, merged) = merged(&original, mode);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary(), report.merged)
}

/// `%f` and `%g` with bodies `f_body` and `g_body` (the rest of the module `rest`), and the
/// module with `%g` given `f_body` (nothing merged): whether `verify_merge` passes it.
fn planted(sig: &str, f_body: &str, g_body: &str, rest: &str) -> (bool, String) {
    let module = |g: &str| {
        format!("function %f{sig} {{\n{f_body}\n}}\n\nfunction %g{sig} {{\n{g}\n}}\n{rest}")
    };
    let original = module(g_body);
    let report = merged(&read(&original), Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    passes(&original, &module(f_body), Mode::Aliases)
}

// ---------------------------------------------------------------------------------------------
// Import calls and memory.

/// A slot's address given to an import, and the slot loaded after the call against before it:
/// natively the import may write the slot (it has its address), so the two differ. `--verify`
/// clobbers memory outside the caller's frames only: the slot reads the same in both orders.
#[test]
#[ignore = "defect: a load of a stack slot whose address an import received, moved across the call, passes --verify (stack memory is not clobbered)"]
fn verify_reports_a_load_of_an_escaped_stack_slot_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0(v2)";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64) -> i64", &body(true), &body(false), "");
    assert!(
        !ok,
        "a load of an escaped slot moved across an import call passes: {summary}"
    );
}

/// The same slot, its address given to the import through memory (stored in a heap word the
/// import can read), then loaded on the other side of the call.
#[test]
#[ignore = "defect: a load of a stack slot whose address escaped through memory, moved across an import call, passes --verify"]
fn verify_reports_a_load_of_a_stack_slot_escaped_through_memory_moved_across_an_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i64 notrap aligned v2";
        let call = "    v4 = call fn0()";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill() -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n    store.i64 notrap aligned v2, v1\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(
        !ok,
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
        let (first, second) = if store_first {
            (store, call)
        } else {
            (call, store)
        };
        format!(
            "    ss0 = explicit_slot 8\n    fn0 = %fill(i64) -> i64\nblock0(v0: i64, v1: i64):\n    v2 = stack_addr.i64 ss0\n    store.i64 notrap aligned v0, v2\n{first}\n{second}\n    v3 = load.i64 notrap aligned v2\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64, i64) -> i64", &body(true), &body(false), "");
    assert!(!ok, "a store moved across an import call passes: {summary}");
}

/// A load of a heap word through a pointer loaded from a parameter, moved across an import
/// call that gets neither: natively the import may still write it (any memory outside the
/// frames). Found (held).
#[test]
fn verify_reports_a_load_of_unrelated_memory_moved_across_an_argumentless_import_call() {
    let body = |load_first: bool| {
        let load = "    v3 = load.i32 notrap aligned v0+16";
        let call = "    v4 = call fn0()";
        let (first, second) = if load_first {
            (load, call)
        } else {
            (call, load)
        };
        format!(
            "    fn0 = %tick() -> i32\nblock0(v0: i64):\n{first}\n{second}\n    v5 = iadd v3, v4\n    return v5"
        )
    };
    let (ok, summary) = planted("(i64) -> i32", &body(true), &body(false), "");
    assert!(!ok, "a load moved across an import call passes: {summary}");
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
#[ignore = "defect: an alias named like an import whose address is passed on passes --verify when the import's name sorts before the target's (a slot is numbered by its smallest name)"]
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
#[ignore = "defect: an alias named like an import whose address is returned passes --verify when the import's name sorts before the target's"]
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
#[ignore = "defect: a frame of slots aligned to 4 KiB takes far more stack than max_stack_bytes (the limit counts slot sizes, not alignment padding)"]
fn a_frame_of_aligned_slots_is_held_to_the_stack_limit() {
    let module = read(&aligned_slots(256, 4096));
    let options = VerifyOptions {
        max_stack_bytes: 1 << 20,
        ..VerifyOptions::default()
    };
    let name = module.functions().next().unwrap().name.clone();
    let run = clif_merge::verify::run_function(&module, &name, &[], &options);
    if let clif_merge::verify::Outcome::Returned(values) = &run.outcome {
        let spread = format!("{:?}", values[0]);
        let spread: u64 = spread
            .trim_start_matches("I64(")
            .trim_end_matches(')')
            .parse()
            .unwrap();
        assert!(
            spread < options.max_stack_bytes as u64,
            "a frame of {spread} bytes ran under a limit of {} bytes",
            options.max_stack_bytes
        );
    }
}

/// The slots' addresses keep their alignment (held): each of 8 slots aligned to 4 KiB is a
/// multiple of 4 KiB and no two share an address.
#[test]
fn slots_aligned_to_4_kib_are_distinct_multiples_of_4_kib() {
    let module = read(&aligned_slots(8, 4096).replace(
        "    v2 = isub v1, v0\n    return v2",
        "    v3 = bor v0, v1\n    v4 = iconst.i64 4095\n    v5 = band v3, v4\n    v6 = icmp eq v0, v1\n    v7 = uextend.i64 v6\n    v2 = bor v5, v7\n    return v2",
    ));
    let name = module.functions().next().unwrap().name.clone();
    let run = clif_merge::verify::run_function(&module, &name, &[], &VerifyOptions::default());
    assert_eq!(
        format!("{:?}", run.outcome),
        "Returned([I64(0)])",
        "slots aligned to 4 KiB"
    );
}
