//! The rules of `--similar`'s rewrites, over generated modules made hostile in the ways each
//! rule is about (proptest families of similar functions, and `common::modgen` modules):
//! - a rewrite never edits an entity that other instructions still use for another purpose: a
//!   function's `func_addr` goes through the declaration of its own self-call;
//! - a function that a declaration names with another signature is not a member: callers
//!   declare module functions with an extra parameter, and self-calls go through such a
//!   declaration;
//! - a shared body never takes the name of an import: the module calls imports named as the
//!   shared bodies of its groups would be.
//! - `--verify` fails whenever a merged function is not valid CLIF, and a symbol's address the
//!   merged side needs where the original did not is an unsupported run, not a mismatch.
//! - a shared body that a later exact round finds equal to a function of the module is reported
//!   as the function the members call, in every mode, and leaves no function the merge made
//!   that nothing names (thunks mode kept it as a dead thunk).
//!
//! Every module is merged in every mode with every similar group taken; each merged function
//! must pass the CLIF verifier, the emitted CLIF must read back, and `verify_merge` must agree.
//! `SIMILAR_RULES_CASES=n` sets the number of generated modules and of proptest cases (the
//! families of similar functions are proptest strategies, shrunk on failure).

mod common;

// (Marks the shared re-export used in this test crate.)
#[allow(unused_imports)]
use common::generator as _;

use clif_merge::read::read_module_text;
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{
    Action, ClifModule, FuncName, MergeReport, Mode, ReadOptions, SimilarOptions, SymbolLinkage,
    emit, merge_module_with,
};
use common::modgen::{GenModule, ModGenConfig, generate_module};
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, ExtFuncData, FuncRef, Function, Inst, InstBuilder, InstructionData, Opcode,
    UserFuncName,
};
use cranelift_codegen::settings;
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::BTreeSet;
use std::path::Path;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];

fn cases(default: usize) -> usize {
    std::env::var("SIMILAR_RULES_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Choice sequences from a seed (xorshift).
struct Seeds(u64);

impl Seeds {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn data(&mut self, len: usize) -> Vec<u32> {
        (0..len).map(|_| self.next() as u32).collect()
    }
}

/// Every similar group taken, whatever the cost model says.
fn forced() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

fn merged_similar(original: &ClifModule, mode: Mode) -> (ClifModule, MergeReport) {
    let mut merged = original.clone();
    let (report, _) = merge_module_with(&mut merged, mode, Some(&forced()));
    (merged, report)
}

fn name_of(func: &Function) -> FuncName {
    FuncName::of_function(func)
}

/// The instructions of `func` in layout order.
fn insts(func: &Function) -> Vec<Inst> {
    func.layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b).collect::<Vec<_>>())
        .collect()
}

/// The declarations through which `func` calls itself (`call` only).
fn self_call_refs(func: &Function) -> Vec<(Inst, FuncRef)> {
    let me = name_of(func);
    insts(func)
        .into_iter()
        .filter_map(|inst| match func.dfg.insts[inst] {
            InstructionData::Call {
                opcode: Opcode::Call,
                func_ref,
                ..
            } => {
                let name = FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func);
                (name.as_ref() == Some(&me)).then_some((inst, func_ref))
            }
            _ => None,
        })
        .collect()
}

/// Makes the first self-call of `func` go through a declaration of itself that takes one more
/// `i64` (legal CLIF; the call passes its first argument again). Whether it had one.
fn self_call_with_another_signature(func: &mut Function) -> bool {
    let Some(&(call, own)) = self_call_refs(func).first() else {
        return false;
    };
    let mut sig = func.dfg.signatures[func.dfg.ext_funcs[own].signature].clone();
    sig.params.push(AbiParam::new(I64));
    let sig = func.import_signature(sig);
    let other = func.import_function(ExtFuncData {
        signature: sig,
        ..func.dfg.ext_funcs[own].clone()
    });
    let dfg = &mut func.dfg;
    if let InstructionData::Call { func_ref, args, .. } = &mut dfg.insts[call] {
        let first = args.first(&dfg.value_lists).expect("the depth");
        *func_ref = other;
        args.push(first, &mut dfg.value_lists);
    }
    true
}

/// Declares, in `caller`, the function `callee` with one more `i64` parameter than it has
/// (unused: legal CLIF).
fn declare_otherwise(caller: &mut Function, callee: &Function) {
    let mut sig = callee.signature.clone();
    sig.params.push(AbiParam::new(I64));
    let sig = caller.import_signature(sig);
    let name = name_of(callee).to_external(caller);
    caller.import_function(ExtFuncData {
        name,
        signature: sig,
        colocated: true,
        patchable: false,
    });
}

/// A function `%calls_<import>` that calls `import` (of signature `sig`) with its arguments.
fn caller_of(import: &FuncName, sig: &cranelift_codegen::ir::Signature) -> Function {
    let text = import.to_string();
    let own = format!("calls_{}", text.trim_start_matches('%'));
    let mut func = Function::with_name_signature(UserFuncName::testcase(own), sig.clone());
    let callee_name = import.to_external(&mut func);
    let sig_ref = func.import_signature(sig.clone());
    let callee = func.import_function(ExtFuncData {
        name: callee_name,
        signature: sig_ref,
        colocated: false,
        patchable: false,
    });
    let block = func.dfg.make_block();
    for p in &sig.params {
        func.dfg.append_block_param(block, p.value_type);
    }
    let mut pos = FuncCursor::new(&mut func);
    pos.insert_block(block);
    let args = pos.func.dfg.block_params(block).to_vec();
    let call = pos.ins().call(callee, &args);
    let results = pos.func.dfg.inst_results(call).to_vec();
    pos.ins().return_(&results);
    func
}

/// Names `module`'s functions refer to without defining them.
fn imports(module: &ClifModule) -> BTreeSet<FuncName> {
    let mut names = BTreeSet::new();
    for mf in module.functions() {
        for ext in mf.func.dfg.ext_funcs.values() {
            if let Some(name) = FuncName::of_external(&ext.name, &mf.func)
                && module.lookup(&name).is_none()
            {
                names.insert(name);
            }
        }
    }
    names
}

/// The checks every merge must pass: merged functions valid, CLIF that reads back, imports
/// still imports, and the interpreter agreeing.
fn check(what: &str, original: &ClifModule, mode: Mode) -> MergeReport {
    let (merged, report) = merged_similar(original, mode);
    let context = || {
        format!(
            "{what}, mode {}\n--- original ---\n{}--- merged ---\n{}",
            mode.keyword(),
            emit::module_to_clif(original),
            emit::module_to_clif(&merged)
        )
    };
    let flags = settings::Flags::new(settings::builder());
    for mf in merged.functions() {
        if let Err(e) = cranelift_codegen::verify_function(&mf.func, &flags) {
            panic!("{}: {e}\n{}", mf.name, context());
        }
    }
    let text = emit::module_to_clif(&merged);
    if let Err(e) = read_module_text(Path::new("merged.clif"), &text, ReadOptions::default()) {
        panic!("the merged CLIF does not read back: {e}\n{}", context());
    }
    for import in imports(original) {
        assert!(
            merged.lookup(&import).is_none(),
            "the import {import} became a definition\n{}",
            context()
        );
    }
    let options = VerifyOptions {
        runs: 8,
        fuel: 20_000,
        ..VerifyOptions::default()
    };
    let v = verify_merge(original, &merged, &report, &options);
    let mismatches: Vec<String> = v.mismatches.iter().take(5).map(|m| m.to_string()).collect();
    assert!(v.is_ok(), "{}\n{mismatches:#?}\n{}", v.summary(), context());
    report
}

fn similar_groups(report: &MergeReport) -> usize {
    report.similar.as_ref().map_or(0, Vec::len)
}

fn generated(seeds: &mut Seeds) -> GenModule {
    generate_module(&seeds.data(3000), &ModGenConfig::interpreter())
}

fn module_of(functions: Vec<(Function, SymbolLinkage)>, gm: &GenModule) -> ClifModule {
    GenModule {
        functions,
        aliases: gm.aliases.clone(),
        base: gm.base,
    }
    .module()
}

/// One member of a generated family: its constant, its linkage, and whether `%main` also
/// declares it with another signature.
#[derive(Clone, Debug)]
struct FamilyMember {
    constant: i16,
    linkage: &'static str,
    declared_otherwise: bool,
}

/// Families of 2 to 5 members.
fn family() -> impl Strategy<Value = Vec<FamilyMember>> {
    let member =
        (any::<i16>(), 0..3usize, any::<bool>()).prop_map(|(constant, l, d)| FamilyMember {
            constant,
            linkage: ["local", "export", "hidden"][l],
            declared_otherwise: d,
        });
    prop::collection::vec(member, 2..6)
}

/// Whether the members' constants are not all one (they form a similar group, not an exact
/// class).
fn constants_differ(members: &[FamilyMember]) -> bool {
    members.iter().any(|m| m.constant != members[0].constant)
}

/// `%main`, calling every member `%{prefix}j` with its argument and adding the results; with
/// `otherwise`, it also declares (unused) the members that say so with another signature.
fn main_calling(prefix: &str, members: &[FamilyMember], otherwise: bool) -> String {
    let mut text = String::from("function %main(i64) -> i64 system_v {\n");
    text.push_str("    sig0 = (i64) -> i64 system_v\n    sig1 = (i64, i64) -> i64 system_v\n");
    for j in 0..members.len() {
        text.push_str(&format!("    fn{j} = colocated %{prefix}{j} sig0\n"));
    }
    let mut next = members.len();
    for (j, m) in members.iter().enumerate() {
        if otherwise && m.declared_otherwise {
            text.push_str(&format!("    fn{next} = colocated %{prefix}{j} sig1\n"));
            next += 1;
        }
    }
    text.push_str("block0(v0: i64):\n");
    let mut sum = "v0".to_string();
    for j in 0..members.len() {
        text.push_str(&format!("    v{} = call fn{j}(v0)\n", 100 + j));
        text.push_str(&format!("    v{} = iadd {sum}, v{}\n", 200 + j, 100 + j));
        sum = format!("v{}", 200 + j);
    }
    text.push_str(&format!("    return {sum}\n}}\n"));
    text
}

fn linkages(prefix: &str, members: &[FamilyMember]) -> String {
    let mut text = String::new();
    for (j, m) in members.iter().enumerate() {
        text.push_str(&format!("; linkage: %{prefix}{j} {}\n", m.linkage));
    }
    text
}

/// A family of similar self-recursive functions `%r0..`, differing in one constant, each
/// returning `%r0`'s address at depth 0: `%r0` takes it through the declaration of its own
/// self-call, the others through a declaration of `%r0`. With `other_signature`, the self-calls
/// go through a declaration that takes one more `i64`, and `%main` declares some members with
/// another signature.
fn recursive_family(members: &[FamilyMember], other_signature: bool) -> String {
    let mut text = linkages("r", members);
    for (j, m) in members.iter().enumerate() {
        let (self_sig, self_args) = match other_signature {
            true => ("sig1", "v2, v2"),
            false => ("sig0", "v2"),
        };
        let address = if j == 0 { "fn0" } else { "fn1" };
        text.push_str(&format!(
            "function %r{j}(i64) -> i64 system_v {{
    sig0 = (i64) -> i64 system_v
    sig1 = (i64, i64) -> i64 system_v
    fn0 = colocated %r{j} {self_sig}
    fn1 = colocated %r0 sig0
block0(v0: i64):
    v7 = iconst.i64 3
    v1 = band v0, v7
    brif v1, block1, block2
block1:
    v8 = iconst.i64 1
    v2 = isub v1, v8
    v3 = call fn0({self_args})
    v4 = iconst.i64 {constant}
    v5 = iadd v3, v4
    return v5
block2:
    v6 = func_addr.i64 {address}
    return v6
}}

",
            constant = m.constant
        ));
    }
    text + &main_calling("r", members, other_signature)
}

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("family.clif"), text, ReadOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(32) as u32,
        // Keep failures in the test output, not in files next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn func_addr_through_a_self_call_declaration_keeps_the_members_address(
        members in family()
    ) {
        let module = read(&recursive_family(&members, false));
        for mode in MODES {
            let report = check("family", &module, mode);
            prop_assert!(
                similar_groups(&report) == 1 || !constants_differ(&members),
                "no group"
            );
        }
    }

    #[test]
    fn self_calls_through_another_signature_are_not_members(members in family()) {
        let text = recursive_family(&members, true);
        let module = read(&text);
        for mode in MODES {
            let report = check("family", &module, mode);
            prop_assert_eq!(similar_groups(&report), 0, "a group\n{}", text);
        }
    }

    #[test]
    fn a_symbol_address_only_the_merged_side_needs_is_unsupported_not_a_mismatch(
        members in family(),
        rare in any::<i64>(),
    ) {
        let module = read(&symbol_family(&members, rare));
        for mode in MODES {
            prop_assert_eq!(similar_groups(&check("family", &module, mode)), 1);
        }
    }

    #[test]
    fn a_shared_body_equal_to_a_function_is_what_the_report_names(
        members in family(),
        linkage in 0..3usize,
    ) {
        prop_assume!(constants_differ(&members));
        let text = family_with_its_shared_body(&members, ["local", "export", "hidden"][linkage]);
        let module = read(&text);
        for mode in MODES {
            let report = check("family", &module, mode);
            prop_assert!(similar_groups(&report) >= 1, "no group\n{}", text);
            let (merged, _) = merged_similar(&module, mode);
            let clif = emit::module_to_clif(&merged);
            for group in report.similar.iter().flatten() {
                for member in group.members.iter().filter(|m| m.by == Action::Thunk) {
                    prop_assert_eq!(
                        callees(&merged, &member.name),
                        vec![group.shared.clone()],
                        "{:?}: {} calls other than its shared body\n{}", mode, member.name, clif
                    );
                }
            }
            for made in merged.functions().filter(|mf| module.lookup(&mf.name).is_none()) {
                prop_assert!(
                    merged.functions().any(|mf| callees(&merged, &mf.name).contains(&made.name)),
                    "{:?}: nothing calls {}, which the merge made\n{}", mode, made.name, clif
                );
            }
        }
    }
}

#[test]
fn functions_declared_with_another_signature_stay_as_they_are() {
    let n = cases(24);
    let mut seeds = Seeds(0xd1ff_5160_0000_0002);
    let (mut self_calls, mut declared, mut groups) = (0, 0, 0);
    for case in 0..n {
        let gm = generated(&mut seeds);
        let mut functions = gm.functions.clone();
        let count = functions.len();
        for i in 0..count {
            match seeds.next() % 4 {
                0 => {
                    self_calls += usize::from(self_call_with_another_signature(&mut functions[i].0))
                }
                1 => {
                    let callee = functions[(seeds.next() as usize) % count].0.clone();
                    declare_otherwise(&mut functions[i].0, &callee);
                    declared += 1;
                }
                _ => {}
            }
        }
        let module = module_of(functions, &gm);
        for mode in MODES {
            let report = check(&format!("case {case}"), &module, mode);
            groups += similar_groups(&report);
            // No member is a function that a function of the result still declares with
            // another signature. (Not the input's: exact and similar merging take turns, and a
            // turn may remove the declaration that kept a function out of an earlier one.)
            let (merged, _) = merged_similar(&module, mode);
            let otherwise = declared_otherwise(&merged);
            for group in report.similar.iter().flatten() {
                for m in &group.members {
                    assert!(
                        !otherwise.contains(&m.name),
                        "case {case}: {} is declared with another signature, yet a member",
                        m.name
                    );
                }
            }
        }
    }
    eprintln!(
        "{n} modules: {self_calls} self-calls and {declared} declarations with another \
         signature, {groups} groups"
    );
    assert!(self_calls >= 1 && declared >= n, "too few mutations");
    assert!(groups >= n / 2, "only {groups} similar groups");
}

/// The module functions some declaration of `module` names with another signature.
fn declared_otherwise(module: &ClifModule) -> BTreeSet<FuncName> {
    let mut names = BTreeSet::new();
    for mf in module.functions() {
        for ext in mf.func.dfg.ext_funcs.values() {
            let Some(name) = FuncName::of_external(&ext.name, &mf.func) else {
                continue;
            };
            if let Some(id) = module.resolve(&name)
                && mf.func.dfg.signatures[ext.signature] != module.function(id).func.signature
            {
                names.insert(module.function(id).name.clone());
            }
        }
    }
    names
}

#[test]
fn imports_named_as_shared_bodies_stay_imports() {
    let n = cases(24);
    let mut seeds = Seeds(0x1390_5e1f_0000_0003);
    let (mut named, mut groups) = (0, 0);
    for case in 0..n {
        let gm = generated(&mut seeds);
        let plain = gm.module();
        for mode in MODES {
            let (merged, report) = merged_similar(&plain, mode);
            let mut functions = gm.functions.clone();
            // A caller of an import under each shared body's name, with its signature.
            for group in report.similar.iter().flatten() {
                let shared = merged.resolve(&group.shared).expect("a shared body");
                let sig = &merged.function(shared).func.signature;
                functions.push((caller_of(&group.shared, sig), SymbolLinkage::Export));
                named += 1;
            }
            let module = module_of(functions, &gm);
            groups += similar_groups(&check(&format!("case {case}"), &module, mode));
        }
    }
    eprintln!("{n} modules x 3 modes: {named} imports named as shared bodies, {groups} groups");
    assert!(named >= n, "only {named} imports named as shared bodies");
}

/// A family of similar functions `%s0..` that take the address of their own symbol `%data<j>`
/// only for the argument `rare`: a member's thunk takes it before anything runs, which the
/// interpreter cannot do; the original never needs it on other arguments.
fn symbol_family(members: &[FamilyMember], rare: i64) -> String {
    let mut text = linkages("s", members);
    for (j, m) in members.iter().enumerate() {
        text.push_str(&format!(
            "function %s{j}(i64) -> i64 system_v {{
    gv0 = symbol %data{j}
block0(v0: i64):
    v1 = iconst.i64 {rare}
    v2 = icmp eq v0, v1
    brif v2, block1, block2
block1:
    v3 = symbol_value.i64 gv0
    return v3
block2:
    v4 = iconst.i64 {constant}
    v5 = imul v0, v4
    return v5
}}

",
            constant = m.constant
        ));
    }
    text + &main_calling("s", members, false)
}

/// A family of similar functions `%f0..` differing in one constant, and `%u` (of `linkage`),
/// which is exactly their shared body: the constant is its second parameter.
fn family_with_its_shared_body(members: &[FamilyMember], linkage: &str) -> String {
    let body =
        "    v2 = imul v0, v1\n    v3 = iadd v2, v0\n    v4 = imul v3, v2\n    return v4\n}\n\n";
    let mut text = linkages("f", members) + &format!("; linkage: %u {linkage}\n");
    for (j, m) in members.iter().enumerate() {
        text.push_str(&format!(
            "function %f{j}(i64) -> i64 system_v {{\nblock0(v0: i64):\n    v1 = iconst.i64 {}\n{body}",
            m.constant
        ));
    }
    text.push_str("function %u(i64, i64) -> i64 system_v {\nblock0(v0: i64, v1: i64):\n");
    text + body + &main_calling("f", members, false)
}

/// The module functions and imports `name` calls directly, in the order of its instructions.
fn callees(module: &ClifModule, name: &FuncName) -> Vec<FuncName> {
    let func = &module.function(module.resolve(name).unwrap()).func;
    insts(func)
        .into_iter()
        .filter_map(|i| match func.dfg.insts[i] {
            InstructionData::Call { func_ref, .. } => {
                FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
            }
            _ => None,
        })
        .collect()
}

#[test]
fn verify_reports_a_merged_function_that_is_not_valid_clif() {
    let text = "function %f(i64) -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    fn0 = colocated %f sig0
block0(v0: i64):
    brif v0, block1, block2
block1:
    v1 = iconst.i64 1
    v2 = isub v0, v1
    v3 = call fn0(v2)
    return v3
block2:
    return v0
}
";
    let original = read_module_text(Path::new("f.clif"), text, ReadOptions::default()).unwrap();
    // The self-call passes one argument more than its declaration takes: the interpreter runs
    // it all the same (the callee takes what it declares), the verifier refuses it.
    let mut merged = original.clone();
    let id = merged.resolve(&FuncName::parse("%f").unwrap()).unwrap();
    let func = &mut merged.function_mut(id).func;
    let call = insts(func)
        .into_iter()
        .find(|&i| func.dfg.insts[i].opcode() == Opcode::Call)
        .unwrap();
    let dfg = &mut func.dfg;
    if let InstructionData::Call { args, .. } = &mut dfg.insts[call] {
        let first = args.first(&dfg.value_lists).unwrap();
        args.push(first, &mut dfg.value_lists);
    }
    let v = verify_merge(
        &original,
        &merged,
        &MergeReport::default(),
        &VerifyOptions::default(),
    );
    assert!(!v.is_ok(), "{}", v.summary());
    let text = v.mismatches[0].to_string();
    assert!(
        text.starts_with("%f: not valid CLIF after merging: inst")
            && text.contains("mismatched argument count"),
        "{text}"
    );
}
