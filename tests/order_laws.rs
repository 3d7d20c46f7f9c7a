//! Property tests: the comparator is a total order, and it is exact, over generated functions.
//!
//! - Order laws (reflexivity, antisymmetry, transitivity) on *families* of related functions:
//!   a generated function, renumbered copies, single-field mutations of it and of its copies,
//!   and functions generated from nearby choice sequences (so that many pairs share long
//!   prefixes and some pairs are equal).
//! - Hash consistency: functions that compare `Equal` have equal hashes and equal shape hashes.
//! - Exactness against an independent oracle (`common::canon`): two functions compare `Equal`
//!   exactly when their canonical texts are equal.
//! - A renumbered copy (values, blocks, stack slots, signatures, function references renumbered,
//!   blocks laid out in another order) always compares `Equal`.
//! - A copy that differs in exactly one behaviour-relevant field never compares `Equal`; one test
//!   per kind of field, each counting how often its mutation applied.
//! - `merge::find_classes` gives the same classes, by name, whatever the order of the module's
//!   functions (generated modules of functions calling one another, with renamed copies, mutated
//!   copies, and copies calling the mutated ones), in every mode; and they are the classes an
//!   independent partition refinement over canonical texts finds.
//!
//! Cases per property: 256, or `ORDER_LAWS_CASES`.

mod common;

use clif_merge::compare::{Fingerprint, FingerprintWriter, IdentityResolver, hash};
use clif_merge::merge::{Mode, PassTimes, find_classes};
use clif_merge::{ClifModule, SymbolLinkage};
use common::canon::{canonical, canonical_with_names};
use common::generator::{
    Callee, Choices, GenConfig, assert_valid, fixed_externals, generate, generate_with,
    random_signature,
};
use common::mutate::{ALL_KINDS, Kind, mutate_one_field, renumber};
use cranelift_codegen::ir::{ExternalName, Function, Inst, Opcode, UserFuncName, ValueDef};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use std::cell::Cell;
use std::cmp::Ordering::{self, Equal, Greater, Less};
use std::collections::BTreeSet;

fn cases() -> u32 {
    std::env::var("ORDER_LAWS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // Keep failures in the test output, not in files next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A choice sequence (see `common::gen`).
fn choices(max_len: usize) -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<u32>(), 0..max_len)
}

fn cmp(a: &Function, b: &Function) -> Ordering {
    clif_merge::compare(a, b)
}

fn fingerprint_hash(f: &Function) -> u64 {
    hash(&Fingerprint::of(f, &IdentityResolver))
}

/// Two functions as CLIF, for failure messages.
fn show(a: &Function, b: &Function) -> String {
    format!("--- a ---\n{}--- b ---\n{}", a.display(), b.display())
}

/// A family of related functions (see the module docs).
fn family(base_data: &[u32], aux: &[u32]) -> Vec<Function> {
    let cfg = GenConfig::default();
    let mut ch = Choices::new(aux);
    let base = generate(base_data, &cfg);
    let mut fam = vec![base.clone(), renumber(&base, &mut ch)];
    for _ in 0..3 {
        let kind = ch.pick(&ALL_KINDS);
        if let Some(m) = mutate_one_field(&base, kind, &mut ch) {
            let kind2 = ch.pick(&ALL_KINDS);
            if let Some(mm) = mutate_one_field(&m, kind2, &mut ch) {
                fam.push(mm);
            }
            fam.push(renumber(&m, &mut ch));
            fam.push(m);
        }
    }
    // Nearby choice sequences: one number changed, and the first half only.
    if !base_data.is_empty() {
        let mut near = base_data.to_vec();
        let i = ch.below(near.len());
        near[i] = ch.next();
        fam.push(generate(&near, &cfg));
    }
    fam.push(generate(&base_data[..base_data.len() / 2], &cfg));
    for f in &fam {
        assert_valid(f, "family member");
    }
    fam
}

fn matrix(fam: &[Function]) -> Vec<Vec<Ordering>> {
    fam.iter()
        .map(|a| fam.iter().map(|b| cmp(a, b)).collect())
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn reflexivity(data in choices(600), aux in choices(64)) {
        for f in family(&data, &aux) {
            prop_assert_eq!(cmp(&f, &f), Equal, "compare(a, a)\n{}", f.display());
            let copy = f.clone();
            prop_assert_eq!(cmp(&f, &copy), Equal, "compare(a, a.clone())\n{}", f.display());
        }
    }

    #[test]
    fn antisymmetry(data in choices(600), aux in choices(64)) {
        let fam = family(&data, &aux);
        let m = matrix(&fam);
        for i in 0..fam.len() {
            for j in 0..fam.len() {
                prop_assert_eq!(
                    m[i][j], m[j][i].reverse(),
                    "compare(a, b) != compare(b, a).reverse()\n{}", show(&fam[i], &fam[j])
                );
            }
        }
    }

    #[test]
    fn transitivity(data in choices(600), aux in choices(64)) {
        let fam = family(&data, &aux);
        let m = matrix(&fam);
        let n = fam.len();
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let (ij, jk, ik) = (m[i][j], m[j][k], m[i][k]);
                    let expected = match (ij, jk) {
                        (Equal, x) | (x, Equal) => Some(x),
                        (Less, Less) => Some(Less),
                        (Greater, Greater) => Some(Greater),
                        _ => None,
                    };
                    if let Some(e) = expected {
                        prop_assert_eq!(
                            ik, e,
                            "a ? b = {:?}, b ? c = {:?}, but a ? c = {:?}\n--- a ---\n{}--- b ---\n{}--- c ---\n{}",
                            ij, jk, ik, fam[i].display(), fam[j].display(), fam[k].display()
                        );
                    }
                }
            }
        }
        // Sorting agrees with the matrix: a sorted family is ordered pairwise.
        let mut sorted: Vec<&Function> = fam.iter().collect();
        sorted.sort_by(|a, b| cmp(a, b));
        for i in 0..n {
            for j in i + 1..n {
                prop_assert_ne!(cmp(sorted[i], sorted[j]), Greater);
            }
        }
    }

    /// Both hashes: the fingerprint hash, and the shape hash the driver filters with first.
    #[test]
    fn equal_functions_have_equal_hashes(data in choices(600), aux in choices(64)) {
        let fam = family(&data, &aux);
        let hashes: Vec<u64> = fam.iter().map(fingerprint_hash).collect();
        let mut writer = FingerprintWriter::new();
        let shapes: Vec<u64> = fam.iter().map(|f| writer.shape_hash(f)).collect();
        let mut equal_pairs = 0;
        for i in 0..fam.len() {
            for j in 0..fam.len() {
                if cmp(&fam[i], &fam[j]) == Equal {
                    equal_pairs += 1;
                    prop_assert_eq!(
                        hashes[i], hashes[j],
                        "equal functions, different hashes\n{}", show(&fam[i], &fam[j])
                    );
                    prop_assert_eq!(
                        shapes[i], shapes[j],
                        "equal functions, different shape hashes\n{}", show(&fam[i], &fam[j])
                    );
                }
            }
        }
        // At least the base and its renumbered copy.
        prop_assert!(equal_pairs > fam.len());
    }

    /// The comparator against the oracle: `Equal` exactly when the canonical texts are equal.
    /// Also: the fingerprint order (`Fingerprint::compare_with`) is `compare`.
    #[test]
    fn equal_exactly_when_canonically_identical(data in choices(600), aux in choices(64)) {
        let fam = family(&data, &aux);
        let texts: Vec<String> = fam.iter().map(canonical).collect();
        let fps: Vec<Fingerprint> =
            fam.iter().map(|f| Fingerprint::of(f, &IdentityResolver)).collect();
        for i in 0..fam.len() {
            for j in 0..fam.len() {
                let c = cmp(&fam[i], &fam[j]);
                prop_assert_eq!(
                    c == Equal, texts[i] == texts[j],
                    "compare says {:?}; canonical texts equal: {}\n{}\n--- canonical a ---\n{}--- canonical b ---\n{}",
                    c, texts[i] == texts[j], show(&fam[i], &fam[j]), texts[i], texts[j]
                );
                prop_assert_eq!(fps[i].compare_with(&fps[j], |f| f.as_u32()), c);
            }
        }
    }

    #[test]
    fn renumbered_copies_compare_equal(data in choices(600), aux in choices(64)) {
        let base = generate(&data, &GenConfig::default());
        let mut ch = Choices::new(&aux);
        let copy = renumber(&base, &mut ch);
        assert_valid(&copy, "renumbered copy");
        // The copy really is renumbered: its text differs.
        prop_assert_ne!(base.display().to_string(), copy.display().to_string());
        prop_assert_eq!(canonical(&base), canonical(&copy));
        prop_assert_eq!(cmp(&base, &copy), Equal, "renumbered copy\n{}", show(&base, &copy));
        prop_assert_eq!(cmp(&copy, &base), Equal);
        prop_assert_eq!(fingerprint_hash(&base), fingerprint_hash(&copy));
        // And a copy of the copy.
        let again = renumber(&copy, &mut ch);
        assert_valid(&again, "renumbered copy of a renumbered copy");
        prop_assert_eq!(cmp(&base, &again), Equal, "renumbered twice\n{}", show(&base, &again));
    }
}

// ---------------------------------------------------------------------------------------------
// Single-field mutations: one test per kind.

/// Runs the mutation law for one kind and checks that the mutation applied in at least
/// `min_applied` of the cases (it does not apply when the generated function has no such field
/// in a reachable block, or when the mutated function would not verify).
fn mutation_never_equal(kind: Kind, min_applied: f64) {
    let total = Cell::new(0usize);
    let applied = Cell::new(0usize);
    let no_ops = Cell::new(0usize);
    let mut runner = TestRunner::new(config());
    let result = runner.run(&(choices(600), choices(64)), |(data, aux)| {
        total.set(total.get() + 1);
        let base = generate(&data, &GenConfig::default());
        let mut ch = Choices::new(&aux);
        let Some(m) = mutate_one_field(&base, kind, &mut ch) else {
            return Ok(());
        };
        assert_valid(&m, "mutated function");
        if canonical(&base) == canonical(&m) {
            // The mutation made an isomorphic function. Only control flow can do that: a
            // retargeted branch (the old target becomes unreachable and an identical block
            // takes its place) or a `brif` whose two targets are identical blocks, swapped.
            // Then the two must compare equal.
            prop_assert!(
                matches!(kind, Kind::BranchTarget | Kind::SwapOperands),
                "the {:?} mutator changed nothing\n{}",
                kind,
                show(&base, &m)
            );
            prop_assert_eq!(cmp(&base, &m), Equal, "isomorphic\n{}", show(&base, &m));
            no_ops.set(no_ops.get() + 1);
            return Ok(());
        }
        applied.set(applied.get() + 1);
        prop_assert_ne!(
            cmp(&base, &m),
            Equal,
            "{:?} mutation compares Equal\n{}",
            kind,
            show(&base, &m)
        );
        prop_assert_ne!(
            cmp(&m, &base),
            Equal,
            "{:?} (reversed)\n{}",
            kind,
            show(&base, &m)
        );
        // Independent of the numbering: a renumbered copy of the original differs too.
        let copy = renumber(&base, &mut ch);
        prop_assert_ne!(
            cmp(&copy, &m),
            Equal,
            "{:?} mutation equals a renumbered original\n{}",
            kind,
            show(&copy, &m)
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{kind:?}: {e}");
    }
    let rate = applied.get() as f64 / total.get().max(1) as f64;
    eprintln!(
        "mutation {kind:?}: applied in {}/{} cases ({:.0}%), {} isomorphic no-ops",
        applied.get(),
        total.get(),
        rate * 100.0,
        no_ops.get()
    );
    // With few cases (a small `ORDER_LAWS_CASES`) the rate says little.
    assert!(
        total.get() < 64 || rate >= min_applied,
        "{kind:?} applied in only {:.0}% of the cases (want at least {:.0}%)",
        rate * 100.0,
        min_applied * 100.0
    );
}

macro_rules! mutation_tests {
    ($($name:ident: $kind:ident, $min:expr;)*) => {
        $(
            #[test]
            fn $name() {
                mutation_never_equal(Kind::$kind, $min);
            }
        )*
        /// Every kind has its test.
        #[test]
        fn every_mutation_kind_is_tested() {
            let tested: BTreeSet<Kind> = [$(Kind::$kind),*].into_iter().collect();
            let all: BTreeSet<Kind> = ALL_KINDS.into_iter().collect();
            assert_eq!(tested, all);
        }
    };
}

// The minimum rates are about half of what 256 cases show, so that they do not fail by chance.
mutation_tests! {
    mutation_int_immediate: IntImmediate, 0.6;
    mutation_float_immediate: FloatImmediate, 0.5;
    mutation_offset: Offset, 0.35;
    mutation_int_cond: IntCond, 0.12;
    mutation_float_cond: FloatCond, 0.15;
    mutation_opcode: Opcode, 0.5;
    mutation_type_width: TypeWidth, 0.3;
    mutation_mem_flag: MemFlag, 0.35;
    mutation_trap_code: TrapCode, 0.35;
    mutation_call_conv: CallConv, 0.9;
    mutation_extension: Extension, 0.9;
    mutation_swap_operands: SwapOperands, 0.35;
    mutation_operand: Operand, 0.5;
    mutation_branch_target: BranchTarget, 0.12;
    mutation_stack_slot_size: StackSlotSize, 0.12;
    mutation_stack_slot_align: StackSlotAlign, 0.12;
    mutation_stack_slot_order: StackSlotOrder, 0.01;
    mutation_unused_stack_slot: UnusedStackSlot, 0.9;
    mutation_colocated: Colocated, 0.3;
    mutation_callee_name: CalleeName, 0.3;
}

// ---------------------------------------------------------------------------------------------
// Modules: the classes do not depend on the order of the functions, and they are the ones an
// independent partition refinement finds.

/// A generated module, as functions with their linkage. With `k` originals `f0..`:
/// - `g_i`: `f_i` renumbered, calling `g_j` where `f_i` calls `f_j` (equal to `f_i`);
/// - `h_i`: `f_i` with one field changed (a different function), calling `f_j`;
/// - `k_i`: `f_i` renumbered, calling `h_j` where `f_i` calls `f_j` (the same tokens as `f_i`,
///   different only through its callees' classes: the refinement must split it off);
/// - `p_i`: `f_i` renumbered, calling `k_j` (two levels of refinement).
struct GeneratedModule {
    functions: Vec<(Function, SymbolLinkage)>,
    k: usize,
    /// Which `h`s differ from their `f` (a control-flow mutation may give an isomorphic one).
    h_differs: Vec<bool>,
}

fn testcase_name(name: &ExternalName) -> Option<String> {
    match name {
        ExternalName::TestCase(t) => Some(String::from_utf8_lossy(t.raw()).into_owned()),
        _ => None,
    }
}

/// A renumbered copy of `f` named `{prefix}{i}`, calling `{callee_prefix}j` where `f` calls `fj`.
fn redirected_copy(f: &Function, name: String, callee_prefix: char, ch: &mut Choices) -> Function {
    let mut g = renumber(f, ch);
    g.name = UserFuncName::testcase(name);
    for ext in g.dfg.ext_funcs.values_mut() {
        if let Some(n) = testcase_name(&ext.name)
            && let Some(j) = n.strip_prefix('f')
        {
            ext.name = ExternalName::testcase(format!("{callee_prefix}{j}"));
        }
    }
    assert_valid(&g, "redirected copy");
    g
}

fn generate_module(data: &[u32]) -> GeneratedModule {
    let mut ch = Choices::new(data);
    let k = 2 + ch.below(3);
    let sigs: Vec<_> = (0..k).map(|_| random_signature(&mut ch, true)).collect();
    let linkages: Vec<SymbolLinkage> = (0..k)
        .map(|_| {
            if ch.chance(25) {
                ch.pick(&[
                    SymbolLinkage::Hidden,
                    SymbolLinkage::Local,
                    SymbolLinkage::Preemptible,
                ])
            } else {
                SymbolLinkage::Export
            }
        })
        .collect();
    let mut callees = fixed_externals();
    let fixed = callees.len();
    // The module functions twice, so that calls go to them more often than to externals.
    for _ in 0..2 {
        for (i, sig) in sigs.iter().enumerate() {
            callees.push(Callee {
                name: format!("f{i}"),
                sig: sig.clone(),
                colocated: ch.chance(50),
            });
        }
    }
    let mut fs = Vec::new();
    for (i, sig) in sigs.iter().enumerate() {
        let cfg = GenConfig {
            max_blocks: 4,
            max_insts: 6,
            callees: callees.clone(),
            // Only external addresses: a module function's address is compared by identity
            // in most modes, which the expectations below leave out.
            addr_callees: (0..fixed).collect(),
            name: UserFuncName::testcase(format!("f{i}")),
            signature: Some(sig.clone()),
        };
        let f = generate_with(&mut ch, &cfg);
        assert_valid(&f, "module function");
        fs.push(f);
    }
    let mut functions: Vec<(Function, SymbolLinkage)> =
        fs.iter().cloned().zip(linkages.iter().copied()).collect();
    for i in 0..k {
        let g = redirected_copy(&fs[i], format!("g{i}"), 'g', &mut ch);
        functions.push((g, linkages[i]));
    }
    let mut h_differs = Vec::new();
    for i in 0..k {
        let kind = ch.pick(&ALL_KINDS);
        let mut h = mutate_one_field(&fs[i], kind, &mut ch).unwrap_or_else(|| fs[i].clone());
        h_differs.push(canonical(&h) != canonical(&fs[i]));
        h.name = UserFuncName::testcase(format!("h{i}"));
        functions.push((h, linkages[i]));
    }
    for i in 0..k {
        let copy = redirected_copy(&fs[i], format!("k{i}"), 'h', &mut ch);
        functions.push((copy, linkages[i]));
    }
    for i in 0..k {
        let copy = redirected_copy(&fs[i], format!("p{i}"), 'k', &mut ch);
        functions.push((copy, linkages[i]));
    }
    GeneratedModule {
        functions,
        k,
        h_differs,
    }
}

type NamedClasses = BTreeSet<BTreeSet<String>>;

fn classes_by_name(
    functions: &[(Function, SymbolLinkage)],
    order: &[usize],
    mode: Mode,
) -> NamedClasses {
    let mut module = ClifModule::new();
    for &i in order {
        let (f, linkage) = &functions[i];
        module.define(f.clone(), *linkage, None).unwrap();
    }
    let classes = find_classes(&module, mode, &mut PassTimes::default());
    classes
        .classes
        .iter()
        .map(|c| {
            c.iter()
                .map(|&id| module.function(id).name.to_string())
                .collect()
        })
        .collect()
}

/// The expected classes, found independently of `merge`: Moore-style partition refinement on
/// canonical texts. Start with every function in one class; repeatedly group the functions by
/// their canonical text in which each call to a (non-preemptible) module function names the
/// callee's current class; stop when the number of classes stops growing. This gives the
/// coarsest stable partition, the greatest solution `merge` documents. (Module functions are
/// only called here, never have their address taken, so the mode does not matter.)
fn expected_classes(functions: &[(Function, SymbolLinkage)]) -> NamedClasses {
    let names: Vec<String> = functions
        .iter()
        .map(|(f, _)| f.name.to_string().trim_start_matches('%').to_string())
        .collect();
    let by_class: std::collections::HashMap<&str, SymbolLinkage> = names
        .iter()
        .zip(functions)
        .map(|(n, (_, l))| (n.as_str(), *l))
        .collect();
    let mut class_of: std::collections::HashMap<String, usize> =
        names.iter().map(|n| (n.clone(), 0)).collect();
    let mut count = 1;
    loop {
        let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut next_class = std::collections::HashMap::new();
        for (name, (f, _)) in names.iter().zip(functions) {
            let text = canonical_with_names(f, &|callee: &str| match by_class.get(callee) {
                Some(l) if *l != SymbolLinkage::Preemptible => {
                    format!("<class {}>", class_of[callee])
                }
                _ => callee.to_string(),
            });
            let n = ids.len();
            let id = *ids.entry(text).or_insert(n);
            next_class.insert(name.clone(), id);
        }
        let new_count = ids.len();
        class_of = next_class;
        if new_count == count {
            break;
        }
        count = new_count;
    }
    let mut classes: std::collections::BTreeMap<usize, BTreeSet<String>> = Default::default();
    for n in &names {
        classes
            .entry(class_of[n])
            .or_default()
            .insert(format!("%{n}"));
    }
    classes.into_values().filter(|c| c.len() > 1).collect()
}

fn class_of<'a>(classes: &'a NamedClasses, name: &str) -> Option<&'a BTreeSet<String>> {
    classes.iter().find(|c| c.contains(name))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn module_classes_do_not_depend_on_function_order(
        data in choices(1500),
        shuffles in prop::collection::vec(choices(32), 2..4),
    ) {
        let gm = generate_module(&data);
        let n = gm.functions.len();
        let identity: Vec<usize> = (0..n).collect();
        let mut reversed = identity.clone();
        reversed.reverse();
        let oracle = expected_classes(&gm.functions);
        let no_preemptible = gm.functions.iter().all(|(_, l)| *l != SymbolLinkage::Preemptible);
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            let expected = classes_by_name(&gm.functions, &identity, mode);
            prop_assert_eq!(
                &expected, &oracle,
                "mode {:?}: find_classes differs from the partition-refinement oracle", mode
            );
            let mut orders = vec![reversed.clone()];
            orders.extend(shuffles.iter().map(|s| Choices::new(s).permutation(n)));
            for order in &orders {
                let got = classes_by_name(&gm.functions, order, mode);
                prop_assert_eq!(
                    &got, &expected,
                    "mode {:?}: classes differ for order {:?}", mode, order
                );
            }
            for i in 0..gm.k {
                let (f, g, h) = (format!("%f{i}"), format!("%g{i}"), format!("%h{i}"));
                let class = class_of(&expected, &f);
                // A copy calling the copies of the callees is the same function (the greatest
                // solution merges them), when no callee may be replaced at link time.
                if no_preemptible {
                    prop_assert!(
                        class.is_some_and(|c| c.contains(&g)),
                        "mode {:?}: {} and {} are not in one class: {:?}", mode, f, g, expected
                    );
                }
                // A copy with one field changed is not.
                if gm.h_differs[i] {
                    prop_assert!(
                        !class.is_some_and(|c| c.contains(&h)),
                        "mode {:?}: {} and its mutation {} are in one class", mode, f, h
                    );
                }
            }
        }
    }
}

/// The generated modules are worth testing: their functions call one another (recursion
/// included), renamed copies merge with their originals, and copies calling mutated callees
/// are split off by the refinement.
#[test]
fn generated_modules_have_calls_between_functions_and_classes() {
    let mut seed = 0x9e37_79b9_u64;
    let mut with_module_calls = 0;
    let mut with_recursion = 0;
    let mut with_classes = 0;
    let mut with_refinement = 0;
    for _ in 0..60 {
        let data = common::generator::pseudo_random_choices(&mut seed, 1500);
        let gm = generate_module(&data);
        let mut calls = 0;
        let mut recursive = false;
        for (f, _) in &gm.functions[..gm.k] {
            let own = f.name.to_string();
            for ext in f.dfg.ext_funcs.values() {
                if let Some(n) = testcase_name(&ext.name)
                    && n.starts_with('f')
                {
                    calls += 1;
                    recursive |= format!("%{n}") == own;
                }
            }
        }
        with_module_calls += (calls > 0) as usize;
        with_recursion += recursive as usize;
        let identity: Vec<usize> = (0..gm.functions.len()).collect();
        let classes = classes_by_name(&gm.functions, &identity, Mode::Safe);
        with_classes += !classes.is_empty() as usize;
        // Some `k_i` has the tokens of `f_i` but is not in its class.
        let split = (0..gm.k).any(|i| {
            let f = &gm.functions[i].0;
            let k = &gm.functions[3 * gm.k + i].0;
            // The same text with every name blanked out: the same tokens but for callees.
            let same_tokens = canonical_with_names(f, &|_| String::new())
                == canonical_with_names(k, &|_| String::new());
            same_tokens
                && !class_of(&classes, &format!("%f{i}"))
                    .is_some_and(|c| c.contains(&format!("%k{i}")))
        });
        with_refinement += split as usize;
    }
    eprintln!(
        "60 modules: {with_module_calls} with calls between functions, {with_recursion} with \
         recursion, {with_classes} with classes, {with_refinement} where the refinement splits"
    );
    assert!(
        with_module_calls >= 30,
        "{with_module_calls}/60 modules with calls between functions"
    );
    assert!(
        with_recursion >= 10,
        "{with_recursion}/60 modules with a recursive function"
    );
    assert!(with_classes >= 50, "{with_classes}/60 modules with a class");
    assert!(
        with_refinement >= 10,
        "{with_refinement}/60 modules where the refinement splits"
    );
}

// ---------------------------------------------------------------------------------------------
// Similar merging: a field that may not become a parameter keeps two functions apart.

/// `func` under the testcase name `name`.
fn named(func: &Function, name: &str) -> Function {
    let mut f = func.clone();
    f.name = UserFuncName::testcase(name);
    f
}

/// Whether `%a` and `%b`, alone in a module, end up merged with `--similar` forced on every
/// group that fits (exactly or as similar functions).
fn merge_with_similar(a: &Function, b: &Function) -> bool {
    let mut module = ClifModule::new();
    module
        .define(named(a, "a"), SymbolLinkage::Export, None)
        .unwrap();
    module
        .define(named(b, "b"), SymbolLinkage::Export, None)
        .unwrap();
    let similar = clif_merge::SimilarOptions {
        min_saving: i64::MIN,
        ..Default::default()
    };
    let (report, _) = clif_merge::merge_module_with(&mut module, Mode::Safe, Some(&similar));
    report.merged > 0
}

/// Whether `m` is `base` with operands changed (swapped or replaced) only where both the old and
/// the new operand are constants: with similar merging each use of a constant is a hole, so that
/// is a change of constants, not of data flow.
fn changes_only_constant_operands(base: &Function, m: &Function) -> bool {
    let constant = |f: &Function, v| match f.dfg.value_def(f.dfg.resolve_aliases(v)) {
        ValueDef::Result(inst, _) => matches!(
            f.dfg.insts[inst].opcode(),
            Opcode::Iconst | Opcode::F32const | Opcode::F64const
        ),
        _ => false,
    };
    let insts = |f: &Function| -> Vec<Inst> {
        (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b).collect::<Vec<_>>())
            .collect()
    };
    let (a, b) = (insts(base), insts(m));
    a.len() == b.len()
        && a.iter().zip(&b).all(|(&i, &j)| {
            let (x, y) = (base.dfg.inst_args(i), m.dfg.inst_args(j));
            x.len() == y.len()
                && x.iter().zip(y).all(|(&u, &v)| {
                    base.dfg.resolve_aliases(u) == m.dfg.resolve_aliases(v)
                        || (constant(base, u) && constant(m, v))
                })
        })
}

/// `canonical(f)` as similar merging sees it: each use of an integer or float constant is a hole
/// of its type (the constant's instruction goes, a use reads `const.TYPE`, so two uses of one
/// constant and uses of two equal constants read alike), the other values numbered again in
/// order of first appearance. A mutation of another kind (a branch target, an operand) can make
/// a function that differs from the original only there: a branch to another block that passes
/// another constant to the same place.
fn canonical_constants_as_holes(f: &Function) -> String {
    let mut constants: std::collections::HashMap<String, String> = Default::default();
    let mut lines = Vec::new();
    let text = canonical(f);
    for line in text.lines() {
        // Cranelift's printer comments a constant's uses with its value.
        let code = line.split(';').next().unwrap_or("").trim_end();
        if let Some((def, rhs)) = code.trim_start().split_once(" = ") {
            let op = rhs.split_whitespace().next().unwrap_or("");
            let ty = match op {
                "f32const" => Some("f32"),
                "f64const" => Some("f64"),
                _ => op.strip_prefix("iconst."),
            };
            if let Some(ty) = ty {
                constants.insert(def.to_string(), format!("const.{ty}"));
                continue;
            }
        }
        lines.push(code);
    }
    let mut numbers: std::collections::HashMap<String, usize> = Default::default();
    let mut out = String::new();
    for line in lines {
        let mut word = String::new();
        for c in line.chars().chain(['\n']) {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            let is_value = word.len() > 1
                && word.starts_with('v')
                && word[1..].bytes().all(|b| b.is_ascii_digit());
            if let Some(hole) = constants.get(&word) {
                out.push_str(hole);
            } else if is_value {
                let next = numbers.len();
                out.push_str(&format!("v{}", numbers.entry(word.clone()).or_insert(next)));
            } else {
                out.push_str(&word);
            }
            word.clear();
            out.push(c);
        }
    }
    out
}

/// The case a branch-target mutation made (proptest, 2026-11-26): `block1` loops back through
/// `block2`, which passes the entry's constant -1, or through `block3`, which passes its own 0.
/// As similar merging sees them they differ only in a constant, and they merge; a branch to a
/// block that passes a parameter instead is another function.
#[test]
fn a_branch_to_a_block_passing_another_constant_differs_only_in_a_constant() {
    let function = |target: &str| {
        let text = format!(
            "function %gen(i64, f32, i8) -> f32 system_v {{
block0(v0: i64, v1: f32, v2: i8):
    v6 = iconst.i16 -1
    jump block1(v6)
block1(v3: i16):
    v7 = iconst.i8 0
    jump {target}
block2:
    jump block1(v6)
block3:
    v11 = iconst.i16 0
    jump block1(v11)
block4(v4: i8, v5: i8):
    v12 = iconst.i16 0
    jump block1(v3)
}}"
        );
        cranelift_reader::parse_functions(&text).unwrap().remove(0)
    };
    let (a, b) = (function("block2"), function("block3"));
    assert_ne!(canonical(&a), canonical(&b));
    let holes = canonical_constants_as_holes;
    assert_eq!(holes(&a), holes(&b));
    assert!(merge_with_similar(&a, &b), "they differ only in a constant");
    let elsewhere = function("block4(v7, v7)");
    assert_ne!(holes(&a), holes(&elsewhere));
    assert!(!merge_with_similar(&a, &elsewhere));
}

/// Mutations of every kind that may not become a parameter never merge, with similar merging;
/// integer and float constants do (the law is not vacuous), and so may a swap or replacement of
/// constant operands (each use of a constant is a hole) and a callee's name (a callee of the
/// same signature, an import or a module function, is a parameter).
#[test]
fn with_similar_merging_only_constants_may_differ() {
    let merged_constants = Cell::new(0usize);
    for kind in ALL_KINDS {
        let mut runner = TestRunner::new(config());
        let applied = Cell::new(0usize);
        let result = runner.run(&(choices(600), choices(64)), |(data, aux)| {
            let base = generate(&data, &GenConfig::default());
            let mut ch = Choices::new(&aux);
            let Some(m) = mutate_one_field(&base, kind, &mut ch) else {
                return Ok(());
            };
            if canonical(&base) == canonical(&m) {
                return Ok(());
            }
            applied.set(applied.get() + 1);
            let merged = merge_with_similar(&base, &m);
            let constants_only = (matches!(kind, Kind::SwapOperands | Kind::Operand)
                && changes_only_constant_operands(&base, &m))
                || canonical_constants_as_holes(&base) == canonical_constants_as_holes(&m);
            let may_merge = matches!(
                kind,
                Kind::IntImmediate | Kind::FloatImmediate | Kind::CalleeName
            );
            if may_merge || constants_only {
                merged_constants.set(merged_constants.get() + merged as usize);
            } else {
                prop_assert!(!merged, "{:?} mutation merged\n{}", kind, show(&base, &m));
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{kind:?}: {e}");
        }
        assert!(applied.get() > 0, "{kind:?} never applied");
    }
    assert!(
        merged_constants.get() > 0,
        "no function differing in a constant merged"
    );
}
