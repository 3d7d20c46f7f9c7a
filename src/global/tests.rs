//! Unit tests of global merging's keys, summaries and round 2.

use super::apply::keys_by_name;
use super::*;
use crate::module::{ClifModule, FuncName};
use crate::read::{ReadOptions, read_module_text};
use std::path::Path;

fn module(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).expect("valid module")
}

fn name(text: &str) -> FuncName {
    FuncName::parse(text).unwrap()
}

const BODY: &str = "
    v1 = iconst.i32 7
    v2 = imul v0, v1
    v3 = iadd v2, v1
    v4 = bxor v3, v0";

fn unit(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| {
            format!("function {n}(i32) -> i32 {{\nblock0(v0: i32):{BODY}\n    return v4\n}}\n")
        })
        .collect()
}

/// Keys depend on content only: not on the function's name, the numbering of values, or the
/// unit; a call to itself is a self-reference; any other difference changes the key.
#[test]
fn keys_pin_content_not_names() {
    let a = module(&unit(&["%a", "%b"]));
    let keys = keys_by_name(&a);
    assert_eq!(keys[&name("%a")], keys[&name("%b")]);
    let recursive = |n: &str, callee: &str| {
        format!(
            "function {n}(i32) -> i32 {{\n    fn0 = colocated {callee}(i32) -> i32\n\
             block0(v0: i32):\n    v1 = call fn0(v0)\n    return v1\n}}\n"
        )
    };
    let m = module(&(recursive("%r", "%r") + &recursive("%s", "%s") + &recursive("%t", "%r")));
    let keys = keys_by_name(&m);
    assert_eq!(keys[&name("%r")], keys[&name("%s")], "self-recursion");
    assert_ne!(
        keys[&name("%r")],
        keys[&name("%t")],
        "a call to another function"
    );
    let other = module(&unit(&["%c"]).replace("iconst.i32 7", "iconst.i32 8"));
    assert_ne!(
        keys_by_name(&other)[&name("%c")],
        keys_by_name(&a)[&name("%a")]
    );
}

/// The text form reads back to the same summary; combine is commutative, associative and
/// idempotent, byte for byte.
#[test]
fn summaries_round_trip_and_combine_in_any_order() {
    let a = Summary::of_module(&module(&unit(&["%a", "u0:3"])));
    let b = Summary::of_module(&module(&unit(&["%b"])));
    let c = Summary::of_module(&module(
        &unit(&["%c"]).replace("iconst.i32 7", "iconst.i32 9"),
    ));
    assert_eq!(Summary::parse(&a.to_text()).unwrap(), a);
    let abc = Summary::combine([a.clone(), b.clone(), c.clone()]);
    let cba = Summary::combine([c.clone(), b.clone(), a.clone()]);
    let tree = Summary::combine([Summary::combine([b.clone(), a.clone()]), c.clone()]);
    let twice = Summary::combine([abc.clone(), abc.clone()]);
    assert_eq!(abc.to_text(), cba.to_text());
    assert_eq!(abc.to_text(), tree.to_text());
    assert_eq!(abc.to_text(), twice.to_text());
    assert_eq!(abc.entries().len(), 4);
}

/// Summaries of another format or encoding version, unsorted or malformed lines are errors
/// with the line.
#[test]
fn bad_summaries_are_refused_with_the_line() {
    let good = Summary::of_module(&module(&unit(&["%a", "%b"]))).to_text();
    let cases = [
        (good.replace("summary 5", "summary 9"), 1, "version 9"),
        (good.replacen(" i7", " q7", 1), 3, "bad hole value `q7`"),
        (
            good.replacen(" p ", " r ", 1),
            3,
            "expected `p KEY HOLE...`",
        ),
        (good.replace("encoding 2", "encoding 1"), 2, "version 1"),
        (good.replace("export", "exported"), 3, "unknown linkage"),
        (good.replace(" - ", " x "), 3, "expected `a` or `-`"),
        ("hello\n".to_string(), 1, "not a clif-merge summary"),
    ];
    for (text, line, message) in cases {
        let error = Summary::parse(&text).unwrap_err();
        assert_eq!(error.line, line, "{text}");
        assert!(error.to_string().contains(message), "{error}");
    }
    let mut lines: Vec<&str> = good.lines().collect();
    lines.swap(2, 3);
    let error = Summary::parse(&lines.join("\n")).unwrap_err();
    assert!(error.to_string().contains("not sorted"), "{error}");
}

/// Round 2 shares exactly the functions another unit also has, names the body after the
/// content, keeps preemptible and tiny functions out, and leaves a unit alone when the summary
/// only knows the unit itself.
#[test]
fn round_two_shares_what_other_units_hold() {
    let mut text = unit(&["%a", "%b", "%p", "%alone"]);
    text = text.replace(
        "function %alone(i32) -> i32 {\nblock0(v0: i32):",
        "function %alone(i32) -> i32 {\nblock0(v0: i32):\n    v9 = iconst.i32 1",
    );
    text.push_str("; linkage: %p preemptible\n");
    let mut unit_a = module(&text);
    let other = module(&unit(&["%x"]));
    let summary = Summary::combine([Summary::of_module(&unit_a), Summary::of_module(&other)]);
    let alone = merge_with_summary(&mut unit_a.clone(), &Summary::of_module(&unit_a), None);
    assert!(alone.shared.is_empty(), "nothing elsewhere");

    let report = merge_with_summary(&mut unit_a, &summary, None);
    let original = module(&text);
    let x = other.resolve(&name("%x")).unwrap();
    let expected_name = shared_name(&other.function(x).func);
    assert_eq!(report.shared.len(), 1);
    assert_eq!(report.shared[0].shared, expected_name.clone());
    assert_eq!(report.shared[0].members, vec![name("%a"), name("%b")]);
    let shared = unit_a.resolve(&expected_name.clone()).unwrap();
    assert_eq!(
        unit_a.function(shared).linkage,
        crate::SymbolLinkage::LinkOnce
    );
    let a = unit_a.resolve(&name("%a")).unwrap();
    assert!(crate::edit::thunk::is_forwarding_thunk(
        &unit_a.function(a).func
    ));
    let before = super::apply::plain_keys_by_name(&original)[&name("%a")];
    let after = super::apply::plain_keys_by_name(&unit_a)[&expected_name];
    assert_eq!(before, after, "the shared body is %a's content");
}

/// `name(i32) -> i32` that doubles its argument and calls `callee` with it.
fn doubling_caller(name: &str, callee: &str) -> String {
    format!(
        "function {name}(i32) -> i32 {{\n    fn0 = colocated {callee}(i32) -> i32\n\
         block0(v0: i32):\n    v1 = iadd v0, v0\n    v2 = call fn0(v1)\n    return v2\n}}\n"
    )
}

/// A copy of a recursive function that calls the original instead of itself (a unit holds
/// `%r`, calling itself; another holds `%t`, the same body calling `%r`): the one-module merge
/// finds them equal, and so does round 2, through `%r`'s key with its calls of itself written
/// as calls of its name. Both units emit one body under one name, which calls `%r` by name.
#[test]
fn a_copy_calling_the_recursive_original_shares_its_body() {
    let mut unit_a = module(&(doubling_caller("%r", "%r") + &doubling_caller("%u", "%r")));
    let mut unit_b = module(&doubling_caller("%t", "%r"));
    let summary_a = Summary::of_module(&unit_a);
    let summary_b = Summary::of_module(&unit_b);
    let entry = |s: &Summary, n: &str| s.entries().iter().find(|e| e.name == name(n)).cloned();
    let r = entry(&summary_a, "%r").unwrap();
    let t = entry(&summary_b, "%t").unwrap();
    assert_ne!(r.key, t.key, "a call of itself is not a call of %r");
    assert_eq!(r.self_by_name, Some(t.key));
    assert_eq!(entry(&summary_a, "%u").unwrap().key, t.key);
    assert_eq!(t.self_by_name, None, "%t does not call itself");
    assert_eq!(Summary::parse(&summary_a.to_text()).unwrap(), summary_a);

    let summary = Summary::combine([summary_a, summary_b]);
    let report_a = merge_with_summary(&mut unit_a, &summary, None);
    let report_b = merge_with_summary(&mut unit_b, &summary, None);
    assert_eq!(report_a.shared.len(), 1);
    assert_eq!(report_a.shared[0].members, vec![name("%r"), name("%u")]);
    assert_eq!(report_b.shared.len(), 1);
    assert_eq!(report_b.shared[0].members, vec![name("%t")]);
    let shared = report_a.shared[0].shared.clone();
    assert_eq!(report_b.shared[0].shared, shared, "one name in both units");
    let body = |m: &ClifModule| {
        let f = &m.function(m.resolve(&shared).unwrap()).func;
        let callee = f.dfg.ext_funcs.values().next().unwrap();
        FuncName::of_external(&callee.name, f).unwrap()
    };
    assert_eq!(body(&unit_a), name("%r"), "the body calls %r, not itself");
    assert_eq!(body(&unit_b), name("%r"));
    let keys_a = super::apply::plain_keys_by_name(&unit_a);
    let keys_b = super::apply::plain_keys_by_name(&unit_b);
    assert_eq!(keys_a[&shared], keys_b[&shared], "one content");
}

/// A recursive function whose own key another unit also has joins that body, not its copy's:
/// every unit sees this in the summary, so the copy does not become a thunk to a body no other
/// unit makes.
#[test]
fn a_recursive_function_with_an_equal_elsewhere_keeps_to_it() {
    let mut unit_a = module(&doubling_caller("%r", "%r"));
    let mut unit_b = module(&doubling_caller("%t", "%r"));
    let mut unit_c = module(&doubling_caller("%s", "%s"));
    let summary = Summary::combine([&unit_a, &unit_b, &unit_c].map(Summary::of_module));
    let report_a = merge_with_summary(&mut unit_a, &summary, None);
    let report_b = merge_with_summary(&mut unit_b, &summary, None);
    let report_c = merge_with_summary(&mut unit_c, &summary, None);
    assert_eq!(report_a.shared.len(), 1);
    assert_eq!(report_a.shared[0].shared, report_c.shared[0].shared);
    assert!(report_b.shared.is_empty(), "{:?}", report_b.shared);
}

/// Only the unit's own name says what it calls: a `local` recursive function has no key with
/// its calls by name, so a copy elsewhere that calls some `%r` never joins it.
#[test]
fn a_local_recursive_function_is_not_keyed_by_its_name() {
    let text = doubling_caller("%r", "%r") + "; linkage: %r local\n";
    let summary = Summary::of_module(&module(&text));
    assert_eq!(summary.entries()[0].self_by_name, None);
}

/// Keys only group: should two functions of a unit ever share a key without sharing content
/// (a collision), the one whose content is not the body's is left as it is.
#[test]
fn a_member_whose_content_differs_from_the_body_is_not_made_a_thunk() {
    let text = unit(&["%a", "%b"]).replacen("iconst.i32 7", "iconst.i32 8", 1);
    let mut m = module(&text);
    let member = |n: &str| super::apply::Member {
        id: m.resolve(&name(n)).unwrap(),
        self_by_name: false,
    };
    let members = [member("%a"), member("%b")];
    let shared = super::apply::share(&mut m, &members, &mut None).expect("a fresh name");
    assert_eq!(shared.members, vec![name("%a")]);
    let b = &m.function(m.resolve(&name("%b")).unwrap()).func;
    assert!(
        !crate::edit::thunk::is_forwarding_thunk(b),
        "%b keeps its body"
    );
}

/// A damaged summary (any byte replaced, removed or doubled) is refused or read as some other
/// summary, never a panic; what is read writes back to a text that reads the same; and round 2
/// with it leaves a unit whose every function still verifies.
#[test]
fn damaged_summaries_are_refused_or_harmless() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let units = [
        include_str!("../../tests/data/global/unit0.clif"),
        include_str!("../../tests/data/global/unit1.clif"),
        include_str!("../../tests/data/global/unit2.clif"),
    ];
    let modules: Vec<ClifModule> = units.iter().map(|t| module(t)).collect();
    let good = Summary::combine(modules.iter().map(Summary::of_module)).to_text();
    assert!(
        good.contains(" p ") && good.contains(" r "),
        "every field is there"
    );
    let bytes = b"0123456789abcdefx+- \n%:upcidnfr\xc3\xa9".to_vec();
    let edit = (0..good.len(), 0..6u8, proptest::sample::select(bytes));
    let flags = cranelift_codegen::settings::Flags::new(cranelift_codegen::settings::builder());
    let similar = crate::similar::SimilarOptions::default();
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(edit, 1..4), |edits| {
            let mut text = good.clone().into_bytes();
            for (at, how, byte) in edits {
                let at = at.min(text.len().saturating_sub(1));
                match how {
                    0..=3 => text[at] = byte,
                    4 => drop(text.remove(at)),
                    _ => text.insert(at, text[at]),
                }
            }
            let Ok(text) = String::from_utf8(text) else {
                return Ok(());
            };
            let Ok(summary) = Summary::parse(&text) else {
                return Ok(());
            };
            prop_assert_eq!(Summary::parse(&summary.to_text()).unwrap(), summary.clone());
            for (i, unit) in modules.iter().enumerate() {
                let mut unit = unit.clone();
                merge_with_summary(&mut unit, &summary, Some(&similar));
                for id in unit.ids().to_vec() {
                    let func = &unit.function(id).func;
                    let verified = cranelift_codegen::verify_function(func, &flags);
                    prop_assert!(verified.is_ok(), "unit {}: {}", i, func.display());
                }
            }
            Ok(())
        })
        .unwrap();
}

/// A shared body's symbol keeps its name's prefix, changes with the build and with the name,
/// is the same every time, and other names get none.
#[test]
fn shared_symbols_name_the_content_and_the_build() {
    let body = name("%clifmerge_0123456789abcdef0123456789abcdef");
    let with_params = name("%clifmerge_p0123456789abcdef0123456789abcdef");
    let baseline = shared_symbol(&body, "target x86_64\nopt_level=speed").unwrap();
    let haswell = shared_symbol(&body, "target x86_64\nopt_level=speed\nhas_popcnt=1").unwrap();
    assert_eq!(
        Some(&baseline),
        shared_symbol(&body, "target x86_64\nopt_level=speed").as_ref()
    );
    assert_ne!(baseline, haswell);
    assert!(baseline.starts_with("clifmerge_") && baseline.len() == "clifmerge_".len() + 32);
    assert_ne!(baseline, "clifmerge_0123456789abcdef0123456789abcdef");
    let p = shared_symbol(&with_params, "target x86_64\nopt_level=speed").unwrap();
    assert!(p.starts_with("clifmerge_p") && p.len() == "clifmerge_p".len() + 32);
    for other in [
        "%clifmerge_xyz",
        "%clifmerge_0123",
        "%f",
        "u0:3",
        "%similar_0123456789abcdef0123456789abcdef",
    ] {
        assert_eq!(shared_symbol(&name(other), "b"), None, "{other}");
    }
}

/// `%user` calls a function of another object that is named like the shared body round 2
/// would make (an import): defining that body would make the call call it. Round 2 shares
/// nothing under a name the unit already uses, exact or with parameters, and the call still
/// names an import.
#[test]
fn a_shared_body_never_takes_an_imports_name() {
    let caller_of = |callee: &FuncName| {
        format!(
            "function %user(i32) -> i32 {{\n    fn0 = {callee}(i32) -> i32\n\
             block0(v0: i32):\n    v1 = call fn0(v0)\n    return v1\n}}\n"
        )
    };
    let eight = unit(&["%x"]).replace("iconst.i32 7", "iconst.i32 8");
    let cases = [
        (unit(&["%x"]), None),
        // Every group that fits: the rule is about names, not what a group saves.
        (
            eight,
            Some(crate::similar::SimilarOptions {
                min_saving: i64::MIN,
                ..Default::default()
            }),
        ),
    ];
    for (other, similar) in cases {
        let other = module(&other);
        // The name round 2 gives the body, learnt from a unit without the import.
        let mut plain = module(&unit(&["%a"]));
        let summary = Summary::combine([Summary::of_module(&plain), Summary::of_module(&other)]);
        let report = merge_with_summary(&mut plain, &summary, similar.as_ref());
        assert_eq!(report.shared.len(), 1, "{report:?}");
        let taken = report.shared[0].shared.clone();

        let mut unit_a = module(&(unit(&["%a"]) + &caller_of(&taken)));
        let summary = Summary::combine([Summary::of_module(&unit_a), Summary::of_module(&other)]);
        let report = merge_with_summary(&mut unit_a, &summary, similar.as_ref());
        assert!(
            report.shared.iter().all(|s| s.shared != taken),
            "{taken} is taken: {report:?}"
        );
        assert!(unit_a.lookup(&taken).is_none(), "{taken} stays an import");
    }
}

/// `name(i64) -> i64`: a chain of arithmetic whose two uses of constants are `first` and
/// `second`, one `iconst` when they are equal (as GVN leaves them), two otherwise.
fn two_constant_uses(name: &str, first: i64, second: i64) -> String {
    let constants = if first == second {
        format!("    v1 = iconst.i64 {first}\n    v2 = imul v0, v1\n    v3 = iadd v2, v1\n")
    } else {
        format!(
            "    v1 = iconst.i64 {first}\n    v2 = imul v0, v1\n    v9 = iconst.i64 {second}\n    \
             v3 = iadd v2, v9\n"
        )
    };
    let mut text = format!("function {name}(i64) -> i64 {{\nblock0(v0: i64):\n{constants}");
    let mut acc = "v3".to_string();
    for k in 0..24 {
        text += &format!("    v{} = rotl {acc}, v0\n", 20 + k);
        acc = format!("v{}", 20 + k);
    }
    text + &format!("    return {acc}\n}}\n")
}

/// Item 5 of issue 21 across units: each *use* of a constant is a hole of its own, whichever
/// value number it has. A function whose two equal constants are one value (unit A) and its
/// copy with two different constants (unit B) differ only in constants, and with `--similar`
/// share one body, each passing its own.
#[test]
fn a_constant_that_value_numbering_shared_is_a_hole_at_each_use_across_units() {
    let forced = crate::similar::SimilarOptions {
        min_saving: i64::MIN,
        ..crate::similar::SimilarOptions::default()
    };
    let text_a = two_constant_uses("%f", 0, 0);
    let text_b = two_constant_uses("%g", 1, 0);
    let (mut unit_a, mut unit_b) = (module(&text_a), module(&text_b));
    let summary = Summary::combine([Summary::of_module(&unit_a), Summary::of_module(&unit_b)]);
    let report_a = merge_with_summary(&mut unit_a, &summary, Some(&forced));
    let report_b = merge_with_summary(&mut unit_b, &summary, Some(&forced));
    let shared = |r: &GlobalReport| {
        r.shared
            .iter()
            .map(|s| s.shared.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(shared(&report_a).len(), 1, "{report_a:?}\n{text_a}");
    assert_eq!(
        shared(&report_a),
        shared(&report_b),
        "one body for both units"
    );
    let body = unit_a.resolve(&shared(&report_a)[0]).unwrap();
    let body_b = unit_b.resolve(&shared(&report_b)[0]).unwrap();
    assert_eq!(
        unit_a.function(body).func.display().to_string(),
        unit_b.function(body_b).func.display().to_string(),
        "both units write the same shared body"
    );
    for (unit, name_, text) in [(&unit_a, "%f", &text_a), (&unit_b, "%g", &text_b)] {
        let f = unit.resolve(&name(name_)).unwrap();
        assert!(
            unit.function(f).func.dfg.num_insts() < 4,
            "{name_} is a thunk:\n{}\n(was {text})",
            unit.function(f).func.display()
        );
    }
}
