//! What a call writes into the order: the callee's whole declaration (its signature, to the
//! extension, purpose and calling convention of each parameter and return, its flags and its
//! name), whatever number the declaration has in each function. Two callers that differ in any
//! part of what they call must stay apart; two that declare the same callee under other numbers,
//! or beside other declarations, must merge. The fingerprint may write a declaration in any
//! form (inline, or as a number standing for it); these cases hold whichever it uses.

use clif_merge::merge::{Mode, PassTimes, find_classes};
use clif_merge::{ReadOptions, read_module_text};
use std::cmp::Ordering;
use std::path::Path;

/// A caller of `%imp` through `fn0`, declared with `SIG`, then `EXTRA` declarations.
const CALLER: &str = "function %NAME(i64, i64) -> i64 system_v {
    sig0 = SIG
    fn0 = FLAGSCALLEE sig0
    EXTRA
block0(v0: i64, v1: i64):
    v2 = call fn0(v0)
    v3 = iadd v2, v1
    return v3
}
";

const SIG: &str = "(i64) -> i64 system_v";

fn caller(name: &str, sig: &str, flags: &str, callee: &str, extra: &str) -> String {
    CALLER
        .replace("NAME", name)
        .replace("SIG", sig)
        .replace("FLAGS", flags)
        .replace("CALLEE", callee)
        .replace("EXTRA", extra)
}

/// Whether the two functions of `text` (`%a` and `%b`) are found equal by the merge, and, as
/// a check of the same rule from the other side, by the order on its own.
fn merged(text: &str) -> bool {
    let module = read_module_text(
        Path::new("callee_declarations.clif"),
        text,
        ReadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let classes = find_classes(&module, Mode::Safe, &mut PassTimes::default());
    let together = classes.classes.iter().any(|class| class.len() == 2);
    let funcs: Vec<_> = module
        .ids()
        .iter()
        .map(|&id| &module.function(id).func)
        .collect();
    let ordered_equal = clif_merge::compare(funcs[0], funcs[1]) == Ordering::Equal;
    assert_eq!(
        together, ordered_equal,
        "the merge and the order disagree on\n{text}"
    );
    together
}

fn pair(a: String, b: String) -> String {
    format!("{a}\n{b}")
}

fn assert_apart(what: &str, sig_b: &str, flags_b: &str, callee_b: &str) {
    let text = pair(
        caller("a", SIG, "", "%imp", ""),
        caller("b", sig_b, flags_b, callee_b, ""),
    );
    assert!(
        !merged(&text),
        "callers of imports differing in {what} merged:\n{text}"
    );
}

#[test]
fn callers_of_imports_that_differ_in_one_part_of_the_signature_stay_apart() {
    assert_apart(
        "a parameter's extension",
        "(i64 uext) -> i64 system_v",
        "",
        "%imp",
    );
    assert_apart(
        "a parameter's extension (sext)",
        "(i64 sext) -> i64 system_v",
        "",
        "%imp",
    );
    assert_apart(
        "a return's extension",
        "(i64) -> i64 uext system_v",
        "",
        "%imp",
    );
    assert_apart(
        "a parameter's purpose",
        "(i64 vmctx) -> i64 system_v",
        "",
        "%imp",
    );
    assert_apart("the calling convention", "(i64) -> i64 fast", "", "%imp");
    assert_apart(
        "the calling convention (tail)",
        "(i64) -> i64 tail",
        "",
        "%imp",
    );
}

#[test]
fn callers_of_imports_that_differ_in_name_or_flags_stay_apart() {
    assert_apart("the callee's name", SIG, "", "%imp2");
    assert_apart("the callee's name (a user name)", SIG, "", "u1:7");
    assert_apart("colocated", SIG, "colocated ", "%imp");
}

#[test]
fn the_same_callee_under_other_declaration_numbers_merges() {
    // `%b` declares two signatures and two functions before the one it calls: its call is
    // `fn2` through `sig2`, where `%a`'s is `fn0` through `sig0`.
    let b = "function %b(i64, i64) -> i64 system_v {
    sig0 = (i32) -> i32 fast
    sig1 = (i64, i64) system_v
    sig2 = (i64) -> i64 system_v
    fn0 = %other sig0
    fn1 = %imp2 sig1
    fn2 = %imp sig2
block0(v0: i64, v1: i64):
    v2 = call fn2(v0)
    v3 = iadd v2, v1
    return v3
}
";
    let text = pair(caller("a", SIG, "", "%imp", ""), b.to_string());
    assert!(
        merged(&text),
        "the same callee under other numbers:\n{text}"
    );
    // One signature shared by two declarations, against a signature of its own for each.
    let shared = "function %a(i64, i64) -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    fn0 = %imp sig0
    fn1 = %imp2 sig0
block0(v0: i64, v1: i64):
    v2 = call fn0(v0)
    v3 = call fn1(v2)
    v4 = iadd v3, v1
    return v4
}
";
    let separate = "function %b(i64, i64) -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    sig1 = (i64) -> i64 system_v
    fn0 = %imp2 sig1
    fn1 = %imp sig0
block0(v0: i64, v1: i64):
    v2 = call fn1(v0)
    v3 = call fn0(v2)
    v4 = iadd v3, v1
    return v4
}
";
    let text = pair(shared.to_string(), separate.to_string());
    assert!(
        merged(&text),
        "one signature for two declarations, or one each:\n{text}"
    );
    // The same two declarations called in the other order are another function.
    let swapped = separate
        .replace("call fn1(v0)", "call fn0(v0)")
        .replace("call fn0(v2)", "call fn1(v2)");
    let text = pair(shared.to_string(), swapped);
    assert!(!merged(&text), "calls in another order merged:\n{text}");
}

#[test]
fn indirect_calls_compare_their_signatures_in_full_whatever_their_numbers() {
    let indirect = |name: &str, sigs: &str, used: &str| {
        format!(
            "function %{name}(i64, i64) -> i64 system_v {{
    {sigs}
block0(v0: i64, v1: i64):
    v2 = call_indirect {used}, v1(v0)
    return v2
}}
"
        )
    };
    let a = indirect("a", "sig0 = (i64) -> i64 system_v", "sig0");
    let same = indirect(
        "b",
        "sig0 = (i32) -> i32 system_v\n    sig1 = (i64) -> i64 system_v",
        "sig1",
    );
    assert!(merged(&pair(a.clone(), same)));
    for (what, sig) in [
        ("extension", "(i64 sext) -> i64 system_v"),
        ("purpose", "(i64 vmctx) -> i64 system_v"),
        ("calling convention", "(i64) -> i64 fast"),
    ] {
        let b = indirect("b", &format!("sig0 = {sig}"), "sig0");
        let text = pair(a.clone(), b);
        assert!(
            !merged(&text),
            "indirect calls differing in {what} merged:\n{text}"
        );
    }
}
