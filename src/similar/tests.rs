//! The rules of similar merging on small modules: what becomes a parameter, how parameters are
//! shared and ordered, and what the shared body and its name depend on.

use super::{SimilarGroup, SimilarOptions, merge_similar};
use crate::module::{ClifModule, FuncName};
use crate::policy::{Action, Mode};
use crate::read::{ReadOptions, read_module_text};
use std::path::Path;

/// Every group that fits merges, whatever it saves.
fn always() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).expect("valid module")
}

fn merged(text: &str, mode: Mode) -> (ClifModule, Vec<SimilarGroup>) {
    let mut module = read(text);
    let groups = merge_similar(&mut module, mode, &always());
    for mf in module.functions() {
        let flags = cranelift_codegen::settings::Flags::new(cranelift_codegen::settings::builder());
        cranelift_codegen::verify_function(&mf.func, &flags)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", mf.name, mf.func.display()));
    }
    (module, groups)
}

fn shared_text(module: &ClifModule, group: &SimilarGroup) -> String {
    let id = module
        .resolve(&group.shared)
        .expect("the shared body is defined");
    module.function(id).func.display().to_string()
}

/// `%NAME` computing `x * A + B` with `C` unused by the others; the constants are the holes.
fn affine(name: &str, a: i64, b: i64, c: i64) -> String {
    format!(
        "function %{name}(i64) -> i64 system_v {{
        block0(v0: i64):
            v1 = iconst.i64 {a}
            v2 = imul v0, v1
            v3 = iconst.i64 {b}
            v4 = iadd v2, v3
            v5 = iconst.i64 {c}
            v6 = bxor v4, v5
            return v6
        }}\n"
    )
}

#[test]
fn a_position_with_one_value_stays_a_constant_and_equal_columns_share_a_parameter() {
    // `a` and `c` vary together (equal columns), `b` never varies.
    let text = affine("f", 3, 7, 3) + &affine("g", 5, 7, 5) + &affine("h", 9, 7, 9);
    let (module, groups) = merged(&text, Mode::Safe);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].parameters, 1, "one shared parameter for a and c");
    let body = shared_text(&module, &groups[0]);
    assert!(body.contains("iconst.i64 7"), "b stays a constant:\n{body}");
    assert!(
        body.contains("(i64, i64) -> i64"),
        "one added parameter:\n{body}"
    );
}

#[test]
fn parameters_follow_their_first_position_and_members_pass_their_values() {
    let text = affine("f", 3, 10, 20) + &affine("g", 5, 11, 21);
    let (module, groups) = merged(&text, Mode::Safe);
    assert_eq!(groups[0].parameters, 3);
    let values = |name: &str| {
        let m = groups[0]
            .members
            .iter()
            .find(|m| m.name.to_string() == name)
            .unwrap();
        m.arguments
            .iter()
            .map(|a| format!("{:?}", a.value))
            .collect::<Vec<_>>()
    };
    assert_eq!(values("%f"), ["Int(3)", "Int(10)", "Int(20)"]);
    assert_eq!(values("%g"), ["Int(5)", "Int(11)", "Int(21)"]);
    let thunk = module.function(module.resolve(&FuncName::parse("%g").unwrap()).unwrap());
    let text = thunk.func.display().to_string();
    assert!(
        text.contains("iconst.i64 5") && text.contains("iconst.i64 21"),
        "{text}"
    );
}

#[test]
fn the_shared_body_and_its_name_depend_on_content_not_on_names_or_order() {
    let one = affine("f", 3, 10, 20) + &affine("g", 5, 11, 21);
    let other = affine("zz", 5, 11, 21) + &affine("aa", 3, 10, 20);
    let (m1, g1) = merged(&one, Mode::Safe);
    let (m2, g2) = merged(&other, Mode::Safe);
    assert_eq!(g1[0].shared, g2[0].shared);
    assert_eq!(shared_text(&m1, &g1[0]), shared_text(&m2, &g2[0]));
    // Other values of the parameters, the same body and name; a constant that differs, or a
    // position that stops being a parameter, another body and name.
    let same = affine("f", 4, 10, 20) + &affine("g", 5, 11, 22);
    let (_, g3) = merged(&same, Mode::Safe);
    assert_eq!(g1[0].shared, g3[0].shared);
    let fewer = affine("f", 3, 10, 20) + &affine("g", 5, 10, 21);
    let (_, g4) = merged(&fewer, Mode::Safe);
    let other_constant = affine("f", 3, 12, 20) + &affine("g", 5, 12, 21);
    let (_, g5) = merged(&other_constant, Mode::Safe);
    assert_ne!(g1[0].shared, g4[0].shared);
    assert_ne!(g4[0].shared, g5[0].shared);
}

#[test]
fn a_local_member_nobody_takes_the_address_of_is_removed_and_its_callers_pass_its_values() {
    let caller_text = "function %caller(i64) -> i64 system_v {
        sig0 = (i64) -> i64 system_v
        fn0 = colocated %g sig0
    block0(v0: i64):
        v1 = call fn0(v0)
        return v1
    }\n";
    let text = format!(
        "; linkage: %g local\n{}{}{caller_text}",
        affine("f", 3, 10, 20),
        affine("g", 5, 11, 21)
    );
    let (module, groups) = merged(&text, Mode::Safe);
    let by = |name: &str| {
        groups[0]
            .members
            .iter()
            .find(|m| m.name.to_string() == name)
            .unwrap()
            .by
    };
    assert_eq!((by("%f"), by("%g")), (Action::Thunk, Action::Removed));
    assert!(module.resolve(&FuncName::parse("%g").unwrap()).is_none());
    let caller = module.function(
        module
            .resolve(&FuncName::parse("%caller").unwrap())
            .unwrap(),
    );
    let caller = caller.func.display().to_string();
    assert!(caller.contains(&groups[0].shared.to_string()), "{caller}");
    assert!(
        !caller.contains("%g "),
        "no declaration of the removed member is left:\n{caller}"
    );
    // In thunks mode nothing is removed.
    let (_, groups) = merged(&text, Mode::Thunks);
    assert!(groups[0].members.iter().all(|m| m.by == Action::Thunk));
}

#[test]
fn opcodes_offsets_and_libcalls_never_become_parameters() {
    let base = affine("f", 3, 10, 20);
    let isub = affine("g", 5, 11, 21).replace("iadd", "isub");
    let (_, groups) = merged(&(base.clone() + &isub), Mode::Safe);
    assert!(groups.is_empty(), "another opcode");
    let load = |name: &str, offset: u32| {
        format!(
            "function %{name}(i64) -> i64 system_v {{
            block0(v0: i64):
                v1 = load.i64 notrap aligned v0+{offset}
                v2 = iconst.i64 {offset}
                v3 = iadd v1, v2
                return v3
            }}\n"
        )
    };
    let (_, groups) = merged(&(load("f", 8) + &load("g", 16)), Mode::Safe);
    assert!(groups.is_empty(), "another load offset");
    // A libcall has no name a thunk could pass (an import does: see the filetests).
    let libcall = |name: &str, callee: &str| {
        format!(
            "function %{name}(f64) -> f64 system_v {{
                sig0 = (f64) -> f64 system_v
                fn0 = %{callee} sig0
            block0(v0: f64):
                v1 = call fn0(v0)
                v2 = f64const 0x{}.0p0
                v3 = fadd v1, v2
                return v3
            }}\n",
            name.len()
        )
    };
    let (_, groups) = merged(
        &(libcall("f", "CeilF64") + &libcall("gg", "FloorF64")),
        Mode::Safe,
    );
    assert!(groups.is_empty(), "calls to other libcalls");
}

#[test]
fn a_self_recursive_group_calls_its_shared_body_with_the_parameters_passed_through() {
    let fact = |name: &str, k: i64| {
        format!(
            "function %{name}(i64) -> i64 tail {{
                sig0 = (i64) -> i64 tail
                fn0 = colocated %{name} sig0
            block0(v0: i64):
                brif v0, block1, block2
            block1:
                v1 = iconst.i64 1
                v2 = isub v0, v1
                v3 = call fn0(v2)
                v4 = iconst.i64 {k}
                v5 = iadd v3, v4
                return v5
            block2:
                return v0
            }}\n"
        )
    };
    let (module, groups) = merged(&(fact("a", 5) + &fact("b", 7)), Mode::Safe);
    assert_eq!(groups.len(), 1);
    let body = shared_text(&module, &groups[0]);
    let shared = groups[0].shared.to_string();
    assert!(
        body.contains(&format!("colocated {shared}")),
        "calls itself:\n{body}"
    );
    assert!(!body.contains("%a") && !body.contains("%b"), "{body}");
}

#[test]
fn a_second_run_merges_nothing() {
    let text = affine("f", 3, 10, 20) + &affine("g", 5, 11, 21) + &affine("h", 6, 12, 22);
    let (module, groups) = merged(&text, Mode::Safe);
    assert_eq!(groups.len(), 1);
    let mut again = read(&crate::emit::module_to_clif(&module));
    assert!(merge_similar(&mut again, Mode::Safe, &always()).is_empty());
}

#[test]
fn callees_and_symbols_become_address_parameters_and_the_body_names_none_of_them() {
    let member = |name: &str, callee: &str, data: &str| {
        format!(
            "function %{name}(i64) -> i64 system_v {{
                gv0 = symbol colocated %{data}
                sig0 = (i64) -> i64 system_v
                fn0 = colocated %{callee} sig0
            block0(v0: i64):
                v1 = call fn0(v0)
                v2 = symbol_value.i64 gv0
                v3 = load.i64 notrap aligned v2+8
                v4 = iadd v1, v3
                return v4
            }}\n"
        )
    };
    // The callees are similar too, and merge with each other: their own group.
    let text = member("f", "g1", "d1")
        + &member("g", "g2", "d2")
        + &affine("g1", 1, 2, 3)
        + &affine("g2", 1, 2, 4);
    let mut module = read(&text);
    let groups = merge_similar(&mut module, Mode::Safe, &always());
    let group = groups
        .iter()
        .find(|g| g.members.iter().any(|m| m.name.to_string() == "%f"))
        .expect("f and g merge");
    assert_eq!(group.parameters, 2);
    let body = shared_text(&module, group);
    for name in ["%g1", "%g2", "%d1", "%d2", "%f", "%g "] {
        assert!(!body.contains(name), "{name} in\n{body}");
    }
    assert!(body.contains("call_indirect"), "{body}");
    let thunk = module.function(module.resolve(&FuncName::parse("%f").unwrap()).unwrap());
    let thunk = thunk.func.display().to_string();
    assert!(
        thunk.contains("func_addr") && thunk.contains("%g1"),
        "{thunk}"
    );
    assert!(
        thunk.contains("symbol_value") && thunk.contains("%d1"),
        "{thunk}"
    );
}

#[test]
fn a_call_through_a_preemptible_alias_of_itself_is_not_a_self_call() {
    // `%fp` names `%g` today, but may be another definition at run time: `%g`'s call to it is
    // a call to `%fp`, in `%g` as in `%h`, and the shared body must keep calling `%fp`.
    let member = |name: &str, k: i64| {
        format!(
            "function %{name}(i64) -> i64 system_v {{
                sig0 = (i64) -> i64 system_v
                fn0 = colocated %fp sig0
            block0(v0: i64):
                v1 = iconst.i64 7
                v2 = band v0, v1
                brif v2, block1, block2
            block1:
                v3 = iconst.i64 1
                v4 = isub v2, v3
                v5 = call fn0(v4)
                v6 = iconst.i64 {k}
                v7 = iadd v5, v6
                return v7
            block2:
                return v0
            }}\n"
        )
    };
    let text = format!(
        "; alias: %fp = %g\n; linkage: %fp preemptible\n{}{}",
        member("g", 1),
        member("h", 6)
    );
    let (module, groups) = merged(&text, Mode::Safe);
    assert_eq!(groups.len(), 1);
    let body = shared_text(&module, &groups[0]);
    assert!(body.contains("%fp"), "still calls %fp:\n{body}");
    assert!(
        !body.contains(&format!("colocated {}", groups[0].shared)),
        "{body}"
    );
}

#[test]
fn the_shared_body_does_not_depend_on_how_its_member_was_numbered() {
    // The same two functions, one module numbered as written, the other with every value and
    // block renumbered, an unused declaration and an unreachable block added.
    let renumbered = |name: &str, a: i64, b: i64| {
        format!(
            "function %{name}(i64) -> i64 system_v {{
                sig0 = (i64) -> i64 system_v
                fn0 = %unused sig0
            block5(v40: i64):
                v41 = iconst.i64 {a}
                v42 = imul v40, v41
                v43 = iconst.i64 {b}
                v44 = iadd v42, v43
                v45 = iconst.i64 20
                v46 = bxor v44, v45
                return v46
            block9:
                v47 = iconst.i64 0
                return v47
            }}\n"
        )
    };
    let plain = affine("f", 3, 10, 20) + &affine("g", 5, 11, 20);
    let other = renumbered("f", 3, 10) + &renumbered("g", 5, 11);
    let (m1, g1) = merged(&plain, Mode::Safe);
    let (m2, g2) = merged(&other, Mode::Safe);
    assert_eq!(g1[0].shared, g2[0].shared);
    assert_eq!(shared_text(&m1, &g1[0]), shared_text(&m2, &g2[0]));
}
