//! Differential execution: a merged module must do what the original does.
//!
//! - Generated modules (`common::modgen`: functions calling one another, self- and mutually
//!   recursive with a bounded depth, renamed copies and near-copies), merged in every mode, are
//!   run in cranelift-interpreter before and after (`clif_merge::verify::verify_merge`): no
//!   mismatch, and merges did happen.
//! - The same, compiled for the host with cranelift-jit and called directly (all-`i64`
//!   signatures); the interpreter must also agree with the compiled original.
//! - The check can fail: a merged module with a constant of a kept function changed, a wrong
//!   merge, or a call to a dropped function, is reported.
//! - `clif-merge --verify` passes on the bundled example and on every filetest.
//!
//! Cases: a few dozen modules per test; `DIFF_CASES=n` sets the number of generated modules.

mod common;

// (Marks the shared re-export used in this test crate.)
#[allow(unused_imports)]
use common::generator as _;

use clif_merge::verify::{
    Observed, Outcome, Trap, VerifyOptions, VerifyReport, run_function, verify_merge,
};
use clif_merge::{
    Action, ClifModule, FuncName, MergeReport, Mode, SimilarOptions, SymbolLinkage, emit,
    merge_module, merge_module_with,
};
use common::modgen::{DEPTH_MASK, ModGenConfig, generate_module};
use common::split::split_units;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::immediates::Imm64;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    ExternalName, Function, InstructionData, Opcode, TrapCode, UserExternalName, UserFuncName,
};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::Module as _;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];

/// Generated modules per test: `default`, or `DIFF_CASES`.
fn cases(default: usize) -> usize {
    std::env::var("DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Choice sequences from a seed (xorshift).
struct Seeds(u64);

impl Seeds {
    fn data(&mut self, len: usize) -> Vec<u32> {
        (0..len)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 as u32
            })
            .collect()
    }
}

/// Fewer runs than the command line's default, and less fuel: the generated functions finish
/// in a few thousand instructions.
fn test_options() -> VerifyOptions {
    VerifyOptions {
        runs: 12,
        fuel: 20_000,
        ..VerifyOptions::default()
    }
}

fn merged(original: &ClifModule, mode: Mode) -> (ClifModule, MergeReport) {
    let mut m = original.clone();
    let (report, _) = merge_module(&mut m, mode);
    (m, report)
}

fn failure_text(
    what: &str,
    mode: Mode,
    original: &ClifModule,
    merged: &ClifModule,
    v: &VerifyReport,
) -> String {
    let mut text = format!("{what}, mode {}: {}\n", mode.keyword(), v.summary());
    for m in v.mismatches.iter().take(5) {
        text.push_str(&format!("  mismatch: {m}\n"));
    }
    text.push_str("--- original ---\n");
    text.push_str(&emit::module_to_clif(original));
    text.push_str("--- merged ---\n");
    text.push_str(&emit::module_to_clif(merged));
    text
}

/// Whether some base function calls itself, or two call each other.
fn has_recursion(module: &ClifModule, base: usize) -> (bool, bool) {
    let calls = |i: usize| -> Vec<String> {
        let f = &module.function(module.ids()[i]).func;
        f.dfg
            .ext_funcs
            .values()
            .filter_map(|e| match &e.name {
                ExternalName::TestCase(t) => Some(String::from_utf8_lossy(t.raw()).into_owned()),
                _ => None,
            })
            .map(|n| n.replacen('a', "f", 1))
            .collect()
    };
    let mut own = false;
    let mut mutual = false;
    for i in 0..base {
        let ci = calls(i);
        own |= ci.contains(&format!("f{i}"));
        for j in 0..base {
            mutual |=
                i != j && ci.contains(&format!("f{j}")) && calls(j).contains(&format!("f{i}"));
        }
    }
    (own, mutual)
}

#[derive(Default)]
struct Totals {
    modules: usize,
    merged: usize,
    by_action: HashMap<&'static str, usize>,
    functions: usize,
    runs: usize,
    inconclusive: usize,
    unsupported: usize,
    skipped: usize,
    self_recursive: usize,
    mutually_recursive: usize,
    /// Classes kept as a private copy (every member preemptible).
    private_copies: usize,
}

impl Totals {
    fn add(&mut self, report: &MergeReport, v: &VerifyReport) {
        self.merged += report.merged;
        for class in &report.classes {
            self.private_copies += class.kept.to_string().ends_with("_merged") as usize;
            for r in &class.replaced {
                *self.by_action.entry(r.by.keyword()).or_default() += 1;
            }
        }
        self.functions += v.functions;
        self.runs += v.runs;
        self.inconclusive += v.inconclusive;
        self.unsupported += v.unsupported;
        self.skipped += v.skipped;
    }
}

// ---------------------------------------------------------------------------------------------
// (a) Generated modules in the interpreter.

#[test]
fn merged_generated_modules_behave_the_same_in_the_interpreter() {
    let n = cases(40);
    let cfg = ModGenConfig::interpreter();
    let options = test_options();
    let mut seeds = Seeds(0x00d1_ff00_5eed_0001);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    let start = Instant::now();
    for case in 0..n {
        let gm = generate_module(&seeds.data(3000), &cfg);
        let original = gm.module();
        let (own, mutual) = has_recursion(&original, gm.base);
        totals.self_recursive += own as usize;
        totals.mutually_recursive += mutual as usize;
        totals.modules += 1;
        for mode in MODES {
            let (merged, report) = merged(&original, mode);
            let v = verify_merge(&original, &merged, &report, &options);
            totals.add(&report, &v);
            if !v.is_ok() && failures.len() < 2 {
                failures.push(failure_text(
                    &format!("case {case}"),
                    mode,
                    &original,
                    &merged,
                    &v,
                ));
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "differential (interpreter): {} modules x 3 modes in {secs:.1} s = {:.0} modules/minute; \
         {} merged ({:?}); {} functions, {} runs, {} inconclusive, {} unsupported, {} skipped; \
         {} private copies; {} modules with self-recursion, {} with mutual recursion",
        totals.modules,
        totals.modules as f64 * 60.0 / secs,
        totals.merged,
        totals.by_action,
        totals.functions,
        totals.runs,
        totals.inconclusive,
        totals.unsupported,
        totals.skipped,
        totals.private_copies,
        totals.self_recursive,
        totals.mutually_recursive,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The check is worth something: merges happened, of every kind, most runs were conclusive,
    // and the modules recurse.
    assert!(
        totals.merged >= 2 * n,
        "only {} merges in {n} modules",
        totals.merged
    );
    for action in ["removed", "thunk", "alias"] {
        assert!(
            totals.by_action.get(action).copied().unwrap_or(0) >= n / 4,
            "too few `{action}` merges: {:?}",
            totals.by_action
        );
    }
    let conclusive = totals.runs - totals.inconclusive - totals.unsupported;
    assert!(
        conclusive * 10 >= totals.runs * 8,
        "only {conclusive} of {} runs conclusive",
        totals.runs
    );
    assert!(
        totals.private_copies >= n / 20,
        "{} private copies",
        totals.private_copies
    );
    assert!(
        totals.self_recursive >= n / 4,
        "{} self-recursive",
        totals.self_recursive
    );
    assert!(
        totals.mutually_recursive >= n / 8,
        "{} mutually recursive",
        totals.mutually_recursive
    );
}

// ---------------------------------------------------------------------------------------------
// (b) Native code.

fn host_isa() -> OwnedTargetIsa {
    let flags = settings::Flags::new(settings::builder());
    cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(flags)
        .expect("the host ISA")
}

/// A module compiled with cranelift-jit: every defined function, aliases resolved to their
/// targets.
struct Jit {
    module: Option<JITModule>,
    ids: HashMap<FuncName, cranelift_module::FuncId>,
}

/// The host functions generated modules import natively ([`common::modgen::import_name`]):
/// `y{t}_{j}` with `n` parameters is `HOST_IMPORTS[t][n - 1]`, each computing something of its
/// own.
extern "C" fn y0_1(a: i64) -> i64 {
    a.wrapping_mul(3).wrapping_add(1)
}
extern "C" fn y0_2(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b).rotate_left(5)
}
extern "C" fn y0_3(a: i64, b: i64, c: i64) -> i64 {
    (a ^ b).wrapping_add(c)
}
extern "C" fn y1_1(a: i64) -> i64 {
    a ^ 0x5a5a
}
extern "C" fn y1_2(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b) ^ 7
}
extern "C" fn y1_3(a: i64, b: i64, c: i64) -> i64 {
    a.wrapping_sub(b.wrapping_mul(c))
}
extern "C" fn y2_1(a: i64) -> i64 {
    a.wrapping_neg().wrapping_sub(9)
}
extern "C" fn y2_2(a: i64, b: i64) -> i64 {
    b.wrapping_sub(a).wrapping_mul(11)
}
extern "C" fn y2_3(a: i64, b: i64, c: i64) -> i64 {
    c.rotate_right(3) ^ a.wrapping_add(b)
}

const HOST_IMPORTS: [[*const u8; 3]; 3] = [
    [y0_1 as *const u8, y0_2 as *const u8, y0_3 as *const u8],
    [y1_1 as *const u8, y1_2 as *const u8, y1_3 as *const u8],
    [y2_1 as *const u8, y2_2 as *const u8, y2_3 as *const u8],
];

/// The names `m` calls or takes the address of without defining them, with the parameter count
/// of a declaration of each.
fn imports_of(m: &ClifModule) -> BTreeMap<FuncName, usize> {
    let mut imports = BTreeMap::new();
    for mf in m.functions() {
        for ext in mf.func.dfg.ext_funcs.values() {
            let name = FuncName::of_external(&ext.name, &mf.func).expect("a function name");
            if m.resolve(&name).is_none() {
                let params = mf.func.dfg.signatures[ext.signature].params.len();
                imports.insert(name, params);
            }
        }
    }
    imports
}

impl Jit {
    fn compile(m: &ClifModule, isa: OwnedTargetIsa) -> Jit {
        let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        let imports = imports_of(m);
        for (name, &params) in &imports {
            let text = name.to_string();
            let t: usize = text[2..3].parse().expect("an import y{t}_{j}");
            builder.symbol(
                format!("host_{text}").replace('%', ""),
                HOST_IMPORTS[t][params - 1],
            );
        }
        let mut jit = JITModule::new(builder);
        let mut ids = HashMap::new();
        for (name, &params) in &imports {
            let mut sig = jit.make_signature();
            sig.params = vec![cranelift_codegen::ir::AbiParam::new(I64); params];
            sig.returns = vec![cranelift_codegen::ir::AbiParam::new(I64)];
            let symbol = format!("host_{name}").replace('%', "");
            let id = jit
                .declare_function(&symbol, cranelift_module::Linkage::Import, &sig)
                .unwrap();
            ids.insert(name.clone(), id);
        }
        for mf in m.functions() {
            let symbol = format!("clif_{}", mf.name).replace(['%', ':'], "_");
            let id = jit
                .declare_function(
                    &symbol,
                    cranelift_module::Linkage::Local,
                    &mf.func.signature,
                )
                .unwrap();
            ids.insert(mf.name.clone(), id);
        }
        for alias in m.aliases() {
            let target = m
                .resolve(&alias.name)
                .expect("an alias of a defined function");
            ids.insert(alias.name.clone(), ids[&m.function(target).name]);
        }
        let mut ctx = jit.make_context();
        for mf in m.functions() {
            let mut func: Function = (*mf.func).clone();
            let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
            for r in refs {
                let name = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func)
                    .expect("a function name");
                let id = ids
                    .get(&name)
                    .unwrap_or_else(|| panic!("{name} is not defined in the module"));
                let user =
                    func.declare_imported_user_function(UserExternalName::new(0, id.as_u32()));
                func.dfg.ext_funcs[r].name = ExternalName::user(user);
            }
            func.name = UserFuncName::user(0, ids[&mf.name].as_u32());
            ctx.func = func;
            jit.define_function(ids[&mf.name], &mut ctx)
                .unwrap_or_else(|e| panic!("cannot compile {}: {e:?}", mf.name));
            jit.clear_context(&mut ctx);
        }
        jit.finalize_definitions().unwrap();
        Jit {
            module: Some(jit),
            ids,
        }
    }

    /// Calls `name` (all-`i64` parameters, one `i64` result).
    fn call(&self, name: &FuncName, args: &[i64]) -> i64 {
        let jit = self.module.as_ref().unwrap();
        let code = jit.get_finalized_function(self.ids[name]);
        // SAFETY: the generator gives native functions 1 to 3 `i64` parameters and one `i64`
        // result in the host's default calling convention (the C one), and code that neither
        // traps nor recurses without bound.
        unsafe {
            match *args {
                [a] => std::mem::transmute::<*const u8, extern "C" fn(i64) -> i64>(code)(a),
                [a, b] => {
                    std::mem::transmute::<*const u8, extern "C" fn(i64, i64) -> i64>(code)(a, b)
                }
                [a, b, c] => std::mem::transmute::<*const u8, extern "C" fn(i64, i64, i64) -> i64>(
                    code,
                )(a, b, c),
                _ => panic!("unexpected signature"),
            }
        }
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(jit) = self.module.take() {
            // SAFETY: no pointer into this module's code outlives it.
            unsafe { jit.free_memory() };
        }
    }
}

/// What runs in `merged` for the original function `name`: the same name, or the kept function
/// when it was removed.
fn counterpart(merged: &ClifModule, report: &MergeReport, name: &FuncName) -> FuncName {
    if merged.resolve(name).is_some() {
        return name.clone();
    }
    let text = name.to_string();
    for class in &report.classes {
        if class
            .replaced
            .iter()
            .any(|r| r.name.to_string() == text && r.by == Action::Removed)
        {
            return class.kept.clone();
        }
    }
    panic!("{name} is neither in the merged module nor removed");
}

fn native_args(params: usize, run: usize, seeds: &mut Seeds) -> Vec<i64> {
    let edges = [0, 1, -1, i64::MIN, i64::MAX, 2, DEPTH_MASK, -2];
    (0..params)
        .map(|_| {
            if run < edges.len() {
                return edges[run];
            }
            let r = seeds.data(2);
            match r[0] % 3 {
                0 => edges[r[1] as usize % edges.len()],
                1 => (r[1] % 33) as i64 - 16,
                _ => ((u64::from(r[0]) << 32) | u64::from(r[1])) as i64,
            }
        })
        .collect()
}

#[test]
fn merged_generated_modules_behave_the_same_natively() {
    let n = cases(24);
    let isa = host_isa();
    let cfg = ModGenConfig::native(isa.default_call_conv());
    let mut seeds = Seeds(0x00d1_ff00_0a71_0e02);
    let mut calls = 0usize;
    let mut merged_total = 0usize;
    let mut interpreter_agrees = 0usize;
    let start = Instant::now();
    for case in 0..n {
        let gm = generate_module(&seeds.data(3000), &cfg);
        let original = gm.module();
        let native_original = Jit::compile(&original, isa.clone());
        let mut tuples: Vec<(FuncName, Vec<i64>, i64)> = Vec::new();
        for mf in original.functions() {
            let params = mf.func.signature.params.len();
            for run in 0..10 {
                let args = native_args(params, run, &mut seeds);
                let result = native_original.call(&mf.name, &args);
                tuples.push((mf.name.clone(), args, result));
            }
        }
        // The interpreter agrees with the compiled original (the harness checks itself).
        for (name, args, expected) in tuples.iter().step_by(3) {
            let dv: Vec<DataValue> = args.iter().map(|&a| DataValue::I64(a)).collect();
            let run = run_function(&original, name, &dv, &test_options());
            match &run.outcome {
                Outcome::Returned(values) => {
                    assert!(
                        matches!(values[..], [Observed::Value(DataValue::I64(x))] if x == *expected),
                        "case {case}: {name}{args:?}: native {expected}, interpreter {:?}\n{}",
                        values,
                        emit::module_to_clif(&original)
                    );
                    interpreter_agrees += 1;
                }
                other => assert!(
                    other.is_inconclusive(),
                    "case {case}: {name}{args:?}: native {expected}, interpreter {other}"
                ),
            }
        }
        for mode in MODES {
            let (merged, report) = merged(&original, mode);
            merged_total += report.merged;
            let native_merged = Jit::compile(&merged, isa.clone());
            for (name, args, expected) in &tuples {
                let target = counterpart(&merged, &report, name);
                let got = native_merged.call(&target, args);
                calls += 1;
                assert_eq!(
                    got,
                    *expected,
                    "case {case}, mode {}: {name}{args:?} (runs {target}): original {expected}, \
                     merged {got}\n--- original ---\n{}--- merged ---\n{}",
                    mode.keyword(),
                    emit::module_to_clif(&original),
                    emit::module_to_clif(&merged)
                );
            }
        }
    }
    eprintln!(
        "differential (native): {n} modules, {calls} calls compared, {merged_total} merges, \
         interpreter agreed {interpreter_agrees} times, in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        merged_total >= 2 * n,
        "only {merged_total} merges in {n} modules"
    );
    assert!(
        interpreter_agrees >= 10 * n,
        "interpreter agreed only {interpreter_agrees} times"
    );
}

// ---------------------------------------------------------------------------------------------
// (c) The check can fail.

fn module_from_text(text: &str, local: &[&str]) -> ClifModule {
    let mut module = ClifModule::new();
    for func in cranelift_reader::parse_functions(text).unwrap() {
        let name = FuncName::of_function(&func);
        let linkage = if local.contains(&name.to_string().as_str()) {
            SymbolLinkage::Local
        } else {
            SymbolLinkage::Export
        };
        module.define(func, linkage, None).unwrap();
    }
    module
}

/// The `iconst`s of `func` in layout order.
fn iconsts(func: &Function) -> Vec<cranelift_codegen::ir::Inst> {
    func.layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b).collect::<Vec<_>>())
        .filter(|&i| {
            matches!(
                func.dfg.insts[i],
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    ..
                }
            )
        })
        .collect()
}

/// Adds `delta` to the immediate of the `n`th `iconst` of the function `name` of `module`.
fn corrupt_constant(module: &mut ClifModule, name: &FuncName, n: usize, delta: i64) -> bool {
    let Some(id) = module.resolve(name) else {
        return false;
    };
    let func = &mut module.function_mut(id).func;
    let Some(&inst) = iconsts(func).get(n) else {
        return false;
    };
    let ty = func.dfg.ctrl_typevar(inst);
    if let InstructionData::UnaryImm { imm, .. } = &mut func.dfg.insts[inst] {
        let bits = ty.bits();
        let new = imm.bits().wrapping_add(delta);
        let new = if bits >= 64 {
            new
        } else {
            ((new as u64) & ((1u64 << bits) - 1)) as i64
        };
        *imm = Imm64::new(new);
    }
    true
}

const TWO_EQUAL: &str = "
function %a(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 5
    v2 = iadd v0, v1
    return v2
}

function %b(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 5
    v2 = iadd v0, v1
    return v2
}

function %c(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = %b sig0
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = imul v1, v1
    return v2
}

function %near(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 6
    v2 = iadd v0, v1
    return v2
}
";

#[test]
fn a_corrupted_kept_function_is_reported() {
    for mode in MODES {
        for local_b in [false, true] {
            let locals: &[&str] = if local_b { &["%b"] } else { &[] };
            let original = module_from_text(TWO_EQUAL, locals);
            let (mut merged, report) = merged(&original, mode);
            assert_eq!(report.merged, 1, "{report:?}");
            let clean = verify_merge(&original, &merged, &report, &test_options());
            assert!(clean.is_ok(), "{}", clean.summary());
            assert_eq!(clean.functions, 4);
            let kept = report.classes[0].kept.clone();
            assert!(corrupt_constant(&mut merged, &kept, 0, 1));
            let v = verify_merge(&original, &merged, &report, &test_options());
            let wrong: std::collections::BTreeSet<String> = v
                .mismatches
                .iter()
                .map(|m| m.function.to_string())
                .collect();
            // The kept function, the one merged into it (thunk, alias or removed), and the
            // caller of the one merged into it.
            assert_eq!(
                wrong.into_iter().collect::<Vec<_>>(),
                ["%a", "%b", "%c"],
                "mode {}, %b local: {local_b}: {}",
                mode.keyword(),
                v.summary()
            );
            let first = v.mismatches[0].to_string();
            assert!(first.contains("original returns"), "{first}");
            // Deterministic: the same report again.
            let again = verify_merge(&original, &merged, &report, &test_options());
            let text = |v: &VerifyReport| {
                let mut t = v.summary();
                for m in &v.mismatches {
                    t.push_str(&format!("\n{m}"));
                }
                t
            };
            assert_eq!(text(&v), text(&again));
        }
    }
}

#[test]
fn a_wrong_merge_is_reported() {
    // Pretend %near merged with %a: a thunk of %a under the name %near.
    let original = module_from_text(TWO_EQUAL, &[]);
    let (merged_ok, report) = merged(&original, Mode::Safe);
    let mut functions = Vec::new();
    for mf in merged_ok.functions() {
        let mut mf = mf.clone();
        if mf.name.to_string() == "%near" {
            *mf.func = clif_merge::merge::thunk::write_thunk(
                &mf.name,
                &mf.func.signature,
                &FuncName::parse("%a").unwrap(),
            );
        }
        functions.push(mf);
    }
    let mut wrong = ClifModule::new();
    for mf in functions {
        wrong.define(*mf.func, mf.linkage, None).unwrap();
    }
    let v = verify_merge(&original, &wrong, &report, &test_options());
    assert!(!v.is_ok());
    assert!(
        v.mismatches
            .iter()
            .all(|m| m.function.to_string() == "%near"),
        "{:?}",
        v.mismatches
    );
    // Every run of %near differs (5 instead of 6 added).
    assert_eq!(v.mismatches.len(), test_options().runs);
}

#[test]
fn a_call_to_a_dropped_function_is_reported() {
    // The merged module lost %b but %c still calls it.
    let original = module_from_text(TWO_EQUAL, &[]);
    let mut broken = ClifModule::new();
    for mf in original.functions() {
        if mf.name.to_string() != "%b" {
            broken.define((*mf.func).clone(), mf.linkage, None).unwrap();
        }
    }
    let report = MergeReport {
        functions: 4,
        merged: 1,
        classes: vec![clif_merge::merge::MergedClass {
            kept: FuncName::parse("%a").unwrap(),
            replaced: vec![clif_merge::merge::Replacement {
                name: FuncName::parse("%b").unwrap(),
                by: Action::Removed,
            }],
        }],
        ..MergeReport::default()
    };
    let v = verify_merge(&original, &broken, &report, &test_options());
    let names: Vec<String> = v
        .mismatches
        .iter()
        .map(|m| m.function.to_string())
        .collect();
    assert!(names.contains(&"%c".to_string()), "{}", v.summary());
    assert!(
        !names.contains(&"%b".to_string()),
        "%b runs %a, which is right"
    );
}

/// Over generated modules: changing one constant of a kept function is usually caught (not
/// always: the constant may not matter for the arguments tried).
#[test]
fn corrupted_generated_merges_are_reported() {
    let n = cases(30);
    let cfg = ModGenConfig::interpreter();
    let options = test_options();
    let mut seeds = Seeds(0x00d1_ff00_bad0_0003);
    let (mut applied, mut caught) = (0, 0);
    for _ in 0..n {
        let gm = generate_module(&seeds.data(3000), &cfg);
        let original = gm.module();
        let (merged, report) = merged(&original, Mode::Safe);
        for class in &report.classes {
            let kept = class.kept.clone();
            let mut corrupted = merged.clone();
            if !corrupt_constant(&mut corrupted, &kept, 0, 1) {
                continue;
            }
            applied += 1;
            let v = verify_merge(&original, &corrupted, &report, &options);
            caught += !v.is_ok() as usize;
            break;
        }
    }
    eprintln!("corrupted kept functions: {caught} of {applied} caught");
    assert!(applied >= n / 2, "only {applied} corruptions applied");
    assert!(
        caught * 10 >= applied * 6,
        "only {caught} of {applied} caught"
    );
}

// ---------------------------------------------------------------------------------------------
// (d) The command line.

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

#[test]
fn cli_verify_passes_on_the_example() {
    let out = Command::new(BIN)
        .args(["--verify", "--report", "json", "examples/basic.clif"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("verify: 6 functions, 192 runs, 0 mismatches"),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["merged"], 3);
}

#[test]
fn cli_verify_passes_on_every_filetest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = common::clif_files(&root.join("filetests"));
    assert!(files.len() > 50);
    let dir = tempfile::tempdir().unwrap();
    let mut checked_functions = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut args: Vec<String> = vec!["--verify".into()];
        for word in text.lines().next().unwrap_or("").split_whitespace().skip(2) {
            if let Some((key, value)) = word.split_once('=') {
                args.push(format!("--{key}"));
                args.push(value.into());
            }
        }
        let clif = dir.path().join("out.clif");
        let out = Command::new(BIN)
            .args(&args)
            .arg("--emit-clif")
            .arg(&clif)
            .arg(file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", file.display());
        let summary = stderr.lines().find(|l| l.starts_with("verify: ")).unwrap();
        assert!(
            summary.contains(" 0 mismatches"),
            "{}: {summary}",
            file.display()
        );
        checked_functions += summary
            .trim_start_matches("verify: ")
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap();
        assert!(clif.exists(), "{}: --emit-clif not written", file.display());
        std::fs::remove_file(&clif).unwrap();
    }
    assert!(
        checked_functions > 200,
        "{checked_functions} functions checked"
    );
}

// ---------------------------------------------------------------------------------------------
// (d) Similar merging: the same generated modules (near-copies differing in one `iconst`,
// copies calling other callees, self- and mutual recursion, every linkage), merged with
// `--similar` forced on every group that fits.

fn merged_similar(original: &ClifModule, mode: Mode) -> (ClifModule, MergeReport) {
    let mut m = original.clone();
    let similar = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let (report, _) = merge_module_with(&mut m, mode, Some(&similar));
    (m, report)
}

/// `merged` with a stand-in for every member the similar merge removed (a thunk passing its
/// values to the shared body), so that every original name can be called.
fn with_stand_ins(original: &ClifModule, merged: &ClifModule, report: &MergeReport) -> ClifModule {
    let mut out = merged.clone();
    for group in report.similar.iter().flatten() {
        let shared = merged.resolve(&group.shared).expect("a shared body");
        let shared_sig = &merged.function(shared).func.signature;
        for member in group.members.iter().filter(|m| m.by == Action::Removed) {
            // A private copy the exact merge made has no original to stand in for.
            let Some(id) = original.resolve(&member.name) else {
                continue;
            };
            let sig = &original.function(id).func.signature;
            let func = clif_merge::similar::stand_in(group, member, sig, shared_sig);
            out.define(func, SymbolLinkage::Local, None).unwrap();
        }
    }
    out
}

#[derive(Default)]
struct SimilarTotals {
    groups: usize,
    members: usize,
    removed: usize,
    thunks: usize,
    parameters: usize,
    /// Groups of the families of `modgen::similar_hole_families`: imports as callees (two
    /// `m{i}_t`), constants GVN shared (`e{i}` with `n{i}`), a call of itself against a call of
    /// another function (`r{i}` with `s{i}`).
    import_groups: usize,
    shared_constant_groups: usize,
    self_call_groups: usize,
    /// Groups of `modgen`'s many-holes family (`w{i}_{t}`) that add more parameters than the
    /// free argument registers (on x86_64 six, one taken by the members' own): stack arguments.
    stack_argument_groups: usize,
    /// Functions of the input removed in thunks mode (it must remove none; a shared body of an
    /// earlier round may go, the input had no such symbol).
    thunks_mode_removed: usize,
}

impl SimilarTotals {
    fn add(&mut self, report: &MergeReport) {
        for group in report.similar.iter().flatten() {
            self.groups += 1;
            self.parameters += group.parameters;
            let names: Vec<String> = group.members.iter().map(|m| m.name.to_string()).collect();
            let has = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count();
            self.import_groups += (has("%m") >= 2) as usize;
            let pair = |a: char, b: char| {
                names.iter().any(|n| {
                    n.starts_with(&format!("%{a}"))
                        && names.contains(&n.replacen(&format!("%{a}"), &format!("%{b}"), 1))
                })
            };
            self.shared_constant_groups += pair('e', 'n') as usize;
            self.self_call_groups += pair('r', 's') as usize;
            self.stack_argument_groups += (has("%w") >= 2 && group.parameters > 5) as usize;
            for m in &group.members {
                self.members += 1;
                match m.by {
                    Action::Removed => self.removed += 1,
                    _ => self.thunks += 1,
                }
            }
        }
    }

    fn summary(&self) -> String {
        format!(
            "{} groups, {} members ({} removed, {} thunks), {} parameters; {} groups of imports, \
             {} of constants GVN shared, {} of a self-call against another callee, {} with \
             stack arguments",
            self.groups,
            self.members,
            self.removed,
            self.thunks,
            self.parameters,
            self.import_groups,
            self.shared_constant_groups,
            self.self_call_groups,
            self.stack_argument_groups
        )
    }
}

/// How many functions of `original` the merge that `report` describes removed.
fn input_removed(original: &ClifModule, report: &MergeReport) -> usize {
    let exact = report.classes.iter().flat_map(|c| &c.replaced);
    let exact = exact.filter(|r| r.by == Action::Removed).map(|r| &r.name);
    let similar = report.similar.iter().flatten().flat_map(|g| &g.members);
    let similar = similar.filter(|m| m.by == Action::Removed).map(|m| &m.name);
    exact
        .chain(similar)
        .filter(|name| original.lookup(name).is_some())
        .count()
}

/// `n` generated modules of `cfg` from `seed`, merged with similar merging forced in every
/// mode, checked in the interpreter against the original: panics on a mismatch.
fn similar_in_the_interpreter(n: usize, cfg: &ModGenConfig, seed: u64) -> SimilarTotals {
    let options = test_options();
    let mut seeds = Seeds(seed);
    let mut totals = SimilarTotals::default();
    let mut failures = Vec::new();
    for case in 0..n {
        let gm = generate_module(&seeds.data(3000), cfg);
        let original = gm.module();
        for mode in MODES {
            let (merged, report) = merged_similar(&original, mode);
            for mf in merged.functions() {
                let flags = settings::Flags::new(settings::builder());
                cranelift_codegen::verify_function(&mf.func, &flags)
                    .unwrap_or_else(|e| panic!("case {case}: {}: {e}", mf.name));
            }
            let v = verify_merge(&original, &merged, &report, &options);
            totals.add(&report);
            if mode == Mode::Thunks {
                totals.thunks_mode_removed += input_removed(&original, &report);
            }
            if !v.is_ok() && failures.len() < 2 {
                failures.push(failure_text(
                    &format!("similar, case {case}"),
                    mode,
                    &original,
                    &merged,
                    &v,
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    totals
}

#[test]
fn similar_merged_generated_modules_behave_the_same_in_the_interpreter() {
    let n = cases(30);
    let totals = similar_in_the_interpreter(n, &ModGenConfig::interpreter(), 0x5111_1a40_5eed_0003);
    eprintln!(
        "differential (interpreter, similar): {n} modules x 3 modes: {}",
        totals.summary()
    );
    assert!(totals.groups >= n, "only {} similar groups", totals.groups);
    assert!(
        totals.removed >= n / 4,
        "only {} removed members",
        totals.removed
    );
    assert!(totals.thunks >= n, "only {} thunk members", totals.thunks);
    assert_eq!(
        totals.thunks_mode_removed, 0,
        "thunks mode removes nothing of the input"
    );
}

/// `n` generated modules of `cfg` (native) from `seed`, compiled with cranelift-jit before and
/// after similar merging forced in every mode: every function returns what it did.
fn similar_natively(n: usize, cfg: &ModGenConfig, seed: u64) -> (SimilarTotals, usize) {
    let isa = host_isa();
    let mut seeds = Seeds(seed);
    let mut totals = SimilarTotals::default();
    let mut calls = 0usize;
    for case in 0..n {
        let gm = generate_module(&seeds.data(3000), cfg);
        let original = gm.module();
        let native_original = Jit::compile(&original, isa.clone());
        let mut tuples: Vec<(FuncName, Vec<i64>, i64)> = Vec::new();
        for mf in original.functions() {
            let params = mf.func.signature.params.len();
            for run in 0..8 {
                let args = native_args(params, run, &mut seeds);
                let result = native_original.call(&mf.name, &args);
                tuples.push((mf.name.clone(), args, result));
            }
        }
        for mode in MODES {
            let (merged, report) = merged_similar(&original, mode);
            totals.add(&report);
            let runnable = with_stand_ins(&original, &merged, &report);
            let native_merged = Jit::compile(&runnable, isa.clone());
            for (name, args, expected) in &tuples {
                // A similar member that is gone has a stand-in; one that a later exact round
                // removed (a thunk equal to another) runs as its class's kept function.
                let target = match runnable.resolve(name) {
                    Some(_) => name.clone(),
                    None => counterpart(&merged, &report, name),
                };
                assert!(
                    runnable.resolve(&target).is_some(),
                    "case {case}, mode {}: {target} (for {name}) is not in the merged module\n\
                     --- original ---\n{}--- merged ---\n{}",
                    mode.keyword(),
                    emit::module_to_clif(&original),
                    emit::module_to_clif(&merged)
                );
                let got = native_merged.call(&target, args);
                calls += 1;
                assert_eq!(
                    got,
                    *expected,
                    "case {case}, mode {}: {name}{args:?}: original {expected}, merged {got}\n\
                     --- original ---\n{}--- merged ---\n{}",
                    mode.keyword(),
                    emit::module_to_clif(&original),
                    emit::module_to_clif(&merged)
                );
            }
        }
    }
    (totals, calls)
}

#[test]
fn similar_merged_generated_modules_behave_the_same_natively() {
    let n = cases(16);
    let cfg = ModGenConfig::native(host_isa().default_call_conv());
    let (totals, calls) = similar_natively(n, &cfg, 0x5111_1a40_0a71_0e04);
    eprintln!(
        "differential (native, similar): {n} modules, {calls} calls compared, {}",
        totals.summary()
    );
    assert!(totals.groups >= n, "only {} similar groups", totals.groups);
    assert!(totals.removed >= 1, "no member was removed");
}

/// The families of similar merging's kinds of holes (imports as callees, constants GVN shared,
/// a call of itself against another callee) merge, and every merged function does what it did.
fn similar_hole_families(n_interpreter: usize, n_native: usize) {
    let interpreter = ModGenConfig::interpreter().with_similar_holes();
    let totals = similar_in_the_interpreter(n_interpreter, &interpreter, 0x401e_5eed_0000_0021);
    eprintln!(
        "differential (interpreter, similar holes): {n_interpreter} modules x 3 modes: {}",
        totals.summary()
    );
    let native = ModGenConfig::native(host_isa().default_call_conv()).with_similar_holes();
    let (native_totals, calls) = similar_natively(n_native, &native, 0x401e_0a71_0e00_0021);
    eprintln!(
        "differential (native, similar holes): {n_native} modules x 3 modes, {calls} calls \
         compared: {}",
        native_totals.summary()
    );
    for (what, t, n) in [
        ("interpreter", &totals, n_interpreter),
        ("native", &native_totals, n_native),
    ] {
        assert_eq!(
            t.thunks_mode_removed, 0,
            "{what}: thunks mode removes nothing of the input"
        );
        for (family, count) in [
            ("imports as callees", t.import_groups),
            ("constants GVN shared", t.shared_constant_groups),
            ("a self-call against another callee", t.self_call_groups),
        ] {
            assert!(
                count >= n.div_ceil(8),
                "{what}: only {count} groups of {family}"
            );
        }
    }
}

#[test]
fn similar_hole_families_behave_the_same() {
    similar_hole_families(cases(12), cases(8));
}

/// Run on its own: `cargo test --release --test differential -- --ignored thousand`.
#[test]
#[ignore]
fn similar_hole_families_behave_the_same_over_a_thousand_modules() {
    similar_hole_families(cases(1000), cases(1000));
}

/// The family of members that differ in 7 to 20 constants and callees
/// (`modgen::many_differing_holes`): groups whose added parameters go to the stack merge, and
/// every merged function does what it did.
fn similar_many_holes(n_interpreter: usize, n_native: usize) {
    let interpreter = ModGenConfig::interpreter().with_many_holes();
    let totals = similar_in_the_interpreter(n_interpreter, &interpreter, 0x3a17_5eed_0000_0021);
    eprintln!(
        "differential (interpreter, many holes): {n_interpreter} modules x 3 modes: {}",
        totals.summary()
    );
    let native = ModGenConfig::native(host_isa().default_call_conv()).with_many_holes();
    let (native_totals, calls) = similar_natively(n_native, &native, 0x3a17_0a71_0e00_0021);
    eprintln!(
        "differential (native, many holes): {n_native} modules x 3 modes, {calls} calls \
         compared: {}",
        native_totals.summary()
    );
    for (what, t, n) in [
        ("interpreter", &totals, n_interpreter),
        ("native", &native_totals, n_native),
    ] {
        assert_eq!(
            t.thunks_mode_removed, 0,
            "{what}: thunks mode removes nothing of the input"
        );
        assert!(
            t.stack_argument_groups >= n,
            "{what}: only {} groups with stack arguments",
            t.stack_argument_groups
        );
    }
}

#[test]
fn similar_many_holes_behave_the_same() {
    similar_many_holes(cases(8), cases(6));
}

/// Run on its own: `cargo test --release --test differential -- --ignored many_holes`.
#[test]
#[ignore]
fn similar_many_holes_behave_the_same_over_a_thousand_modules() {
    similar_many_holes(cases(1000), cases(1000));
}

// ---------------------------------------------------------------------------------------------
// (e) Global merging: generated modules split into units, each unit's round 2 (with and without
// similar merging forced) against the unit as it was, in the interpreter. Calls to other units
// are imports there, so what is checked is each unit's own rewrite: members that became thunks
// to shared bodies (passing their own callees and constants) behave as before.

#[test]
fn global_round_two_units_behave_the_same_in_the_interpreter() {
    use clif_merge::global::{Summary, merge_with_summary};
    let n = cases(20);
    let cfg = ModGenConfig::interpreter();
    let options = test_options();
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let mut seeds = Seeds(0x610b_a100_5eed_0005);
    let (mut shared, mut with_parameters, mut members) = (0, 0, 0);
    let mut failures = Vec::new();
    for case in 0..n {
        let gm = generate_module(&seeds.data(3000), &cfg);
        let units = split_units(&gm.module(), 3);
        let summary = Summary::combine(units.iter().map(Summary::of_module));
        for (u, unit) in units.iter().enumerate() {
            for mode in MODES {
                for similar in [None, Some(&forced)] {
                    let mut merged = unit.clone();
                    let global = merge_with_summary(&mut merged, &summary, similar);
                    let (mut report, _) = merge_module_with(&mut merged, mode, similar);
                    shared += global.shared.len();
                    with_parameters += global.shared.iter().filter(|s| s.parameters > 0).count();
                    members += global.members();
                    report.add_global(global);
                    for mf in merged.functions() {
                        let flags = settings::Flags::new(settings::builder());
                        cranelift_codegen::verify_function(&mf.func, &flags)
                            .unwrap_or_else(|e| panic!("case {case} unit {u}: {}: {e}", mf.name));
                    }
                    let v = verify_merge(unit, &merged, &report, &options);
                    if !v.is_ok() && failures.len() < 2 {
                        let context = format!(
                            "global, case {case}, unit {u}, similar {}",
                            similar.is_some()
                        );
                        failures.push(failure_text(&context, mode, unit, &merged, &v));
                    }
                }
            }
        }
    }
    eprintln!(
        "differential (global): {n} modules x 3 units x 3 modes x 2: {shared} shared bodies \
         ({with_parameters} with parameters), {members} members"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(shared >= n, "only {shared} shared bodies in {n} modules");
    assert!(
        with_parameters >= n / 2,
        "only {with_parameters} with parameters"
    );
}

// ---------------------------------------------------------------------------------------------
// (e) Real code: memory through pointers, calls not run, stack addresses.

/// Two equal functions in the shape of Wasmtime's code: loads through `vmctx` (lazily filled
/// memory), a store, a `call_indirect` on a loaded pointer (a function not run) and an import
/// given a stack address; %c calls %b.
const REAL_SHAPED: &str = "
function %a(i64 vmctx, i32) -> i32 {
    ss0 = explicit_slot 16
    sig0 = (i64, i32) -> i32
    fn0 = %ext(i64) -> i64
block0(v0: i64, v1: i32):
    v2 = load.i64 notrap aligned v0+8
    v3 = uextend.i64 v1
    v4 = iadd v2, v3
    v5 = load.i32 notrap v4
    v6 = iconst.i32 7
    v7 = iadd v5, v6
    store notrap v7, v4+4
    v8 = load.i64 notrap v0+16
    v9 = call_indirect sig0, v8(v0, v7)
    v10 = stack_addr.i64 ss0
    store notrap v9, v10
    v11 = call fn0(v10)
    v12 = ireduce.i32 v11
    v13 = iadd v9, v12
    return v13
}

function %b(i64 vmctx, i32) -> i32 {
    ss0 = explicit_slot 16
    sig0 = (i64, i32) -> i32
    fn0 = %ext(i64) -> i64
block0(v0: i64, v1: i32):
    v2 = load.i64 notrap aligned v0+8
    v3 = uextend.i64 v1
    v4 = iadd v2, v3
    v5 = load.i32 notrap v4
    v6 = iconst.i32 7
    v7 = iadd v5, v6
    store notrap v7, v4+4
    v8 = load.i64 notrap v0+16
    v9 = call_indirect sig0, v8(v0, v7)
    v10 = stack_addr.i64 ss0
    store notrap v9, v10
    v11 = call fn0(v10)
    v12 = ireduce.i32 v11
    v13 = iadd v9, v12
    return v13
}

function %c(i64 vmctx, i32) -> i32 {
    fn0 = %b(i64 vmctx, i32) -> i32
block0(v0: i64, v1: i32):
    v2 = call fn0(v0, v1)
    return v2
}
";

#[test]
fn real_shaped_code_runs_to_the_end_and_a_correct_merge_matches() {
    let original = module_from_text(REAL_SHAPED, &[]);
    for mode in MODES {
        let (merged, report) = merged(&original, mode);
        assert_eq!(report.merged, 1, "{report:?}");
        let v = verify_merge(&original, &merged, &report, &test_options());
        assert!(v.is_ok(), "{}: {:?}", v.summary(), v.mismatches);
        assert_eq!(v.unsupported, 0, "{}", v.summary());
        assert_eq!(v.inconclusive, 0, "{}", v.summary());
        assert_eq!(v.fully_checked, 3, "{}", v.summary());
    }
}

#[test]
fn a_corrupted_store_in_real_shaped_code_is_reported() {
    let original = module_from_text(REAL_SHAPED, &[]);
    let (mut merged, report) = merged(&original, Mode::Safe);
    let kept = report.classes[0].kept.clone();
    // The constant 7 is stored, and passed to the call_indirect target, which is not run.
    assert!(corrupt_constant(&mut merged, &kept, 0, 1));
    let v = verify_merge(&original, &merged, &report, &test_options());
    assert!(!v.is_ok(), "{}", v.summary());
    let text = v.mismatches[0].to_string();
    assert!(
        text.contains("stores differ") || text.contains("calls differ") || text.contains("returns"),
        "{text}"
    );
}

/// A leaf, a direct caller of it, a caller of that one, and a caller through its address; none
/// equal to another.
const CALL_CHAIN: &str = "
function %leaf(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 3
    v2 = imul v0, v1
    return v2
}

function %direct(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = %leaf sig0
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = iadd v1, v0
    return v2
}

function %two_up(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = %direct sig0
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = bxor v1, v0
    return v2
}

function %through_address(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = %leaf sig0
block0(v0: i64):
    v1 = func_addr.i64 fn0
    v2 = call_indirect sig0, v1(v0)
    v3 = isub v2, v0
    return v3
}

function %apart(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 9
    v2 = udiv v0, v1
    return v2
}
";

/// A function the merge left as it was is run on both sides again when a run of it reaches,
/// by a call or through an address, a function the merge changed: only the runs that reach
/// nothing changed are known to be the same without running the merged side.
#[test]
fn unchanged_callers_of_a_changed_function_are_run_again() {
    let original = module_from_text(CALL_CHAIN, &[]);
    let (mut merged, report) = merged(&original, Mode::Safe);
    assert_eq!(report.merged, 0, "{report:?}");
    let clean = verify_merge(&original, &merged, &report, &test_options());
    assert!(clean.is_ok(), "{}", clean.summary());
    assert!(corrupt_constant(
        &mut merged,
        &FuncName::parse("%leaf").unwrap(),
        0,
        1
    ));
    let v = verify_merge(&original, &merged, &report, &test_options());
    let wrong: std::collections::BTreeSet<String> = v
        .mismatches
        .iter()
        .map(|m| m.function.to_string())
        .collect();
    assert_eq!(
        wrong.into_iter().collect::<Vec<_>>(),
        ["%direct", "%leaf", "%through_address", "%two_up"],
        "{}",
        v.summary()
    );
    // The one function that reaches nothing changed is not run at all.
    assert_eq!((v.fully_checked, v.unchanged), (4, 1), "{}", v.summary());
}

/// A loop of four rounds whose values are dead: only whether it ends shows.
const DEAD_LOOP: &str = "
function %count(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 0
    jump block1(v1)

block1(v2: i64):
    v3 = iconst.i64 1
    v4 = iadd v2, v3
    v7 = iconst.i64 4
    v5 = icmp ult v4, v7
    brif v5, block1(v4), block2

block2:
    v6 = iconst.i64 7
    return v6
}
";

/// A merged function that no longer ends where the original did (its loop made endless) is a
/// mismatch, not an inconclusive run: the merged side has more fuel than the original used.
#[test]
fn a_loop_that_no_longer_ends_is_reported() {
    let original = module_from_text(DEAD_LOOP, &[]);
    let (mut merged, report) = merged(&original, Mode::Safe);
    let clean = verify_merge(&original, &merged, &report, &test_options());
    assert!(clean.is_ok() && clean.unchanged == 1, "{}", clean.summary());
    // `v2 + 1` made `v2 + 0`: the loop never ends.
    assert!(corrupt_constant(
        &mut merged,
        &FuncName::parse("%count").unwrap(),
        1,
        -1
    ));
    let v = verify_merge(&original, &merged, &report, &test_options());
    assert!(!v.is_ok(), "{}", v.summary());
    let text = v.mismatches[0].to_string();
    assert!(text.contains("merged runs out of fuel"), "{text}");
}

#[test]
fn unsupported_runs_are_named_by_opcode() {
    let text = "
function %a(i64) -> i64 {
block0(v0: i64):
    v1 = get_frame_pointer.i64
    v2 = iadd v0, v1
    return v2
}

function %b(i64) -> i64 {
    fn0 = %a(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = imul v1, v0
    return v2
}

function %c(i64) -> i64 {
    fn0 = %a(i64) -> i64
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = imul v1, v0
    return v2
}
";
    // `%c` becomes a thunk of `%b`: its runs reach `%a` (`%a` and `%b`, unchanged, are not run).
    let original = module_from_text(text, &[]);
    let (merged, report) = merged(&original, Mode::Safe);
    let v = verify_merge(&original, &merged, &report, &test_options());
    assert_eq!(v.unsupported, test_options().runs, "{}", v.summary());
    assert!(
        v.summary().ends_with(&format!(
            "; unsupported: get_frame_pointer {}",
            test_options().runs
        )),
        "{}",
        v.summary()
    );
}

// ---------------------------------------------------------------------------------------------
// (f) The mutation check: one instruction of a kept or shared body corrupted after merging.

/// All-zero arguments for `sig`, or `None` when a parameter is not a scalar the interpreter takes.
fn zero_arguments(sig: &cranelift_codegen::ir::Signature) -> Option<Vec<DataValue>> {
    use cranelift_codegen::ir::types;
    sig.params
        .iter()
        .map(|p| match p.value_type {
            types::I8 => Some(DataValue::I8(0)),
            types::I16 => Some(DataValue::I16(0)),
            types::I32 => Some(DataValue::I32(0)),
            types::I64 => Some(DataValue::I64(0)),
            types::I128 => Some(DataValue::I128(0)),
            types::F32 => Some(DataValue::F32(0f32.into())),
            types::F64 => Some(DataValue::F64(0f64.into())),
            _ => None,
        })
        .collect()
}

/// Whether `name` in `module` runs to the end (returns or traps) on all-zero arguments.
fn runs_to_the_end(module: &ClifModule, name: &FuncName, options: &VerifyOptions) -> bool {
    let Some(id) = module.resolve(name) else {
        return false;
    };
    let Some(args) = zero_arguments(&module.function(id).func.signature) else {
        return false;
    };
    let run = run_function(module, name, &args, options);
    matches!(run.outcome, Outcome::Returned(_) | Outcome::Trapped(_))
}

/// The bodies a merge kept or shared, each with an original name whose run reaches it.
fn merged_bodies(report: &MergeReport) -> Vec<(FuncName, FuncName)> {
    let mut bodies: Vec<(FuncName, FuncName)> = report
        .classes
        .iter()
        .map(|c| (c.kept.clone(), c.kept.clone()))
        .collect();
    for group in report.similar.iter().flatten() {
        if let Some(member) = group.members.first() {
            bodies.push((group.shared.clone(), member.name.clone()));
        }
    }
    bodies
}

/// `merged` as `verify_merge` runs it: with a stand-in for every member a similar merge removed
/// (a thunk to the shared body, `clif_merge::similar::stand_in`; also for a private copy, as
/// there, unlike [`with_stand_ins`]), so that the mutation check's analyses see every call the
/// check makes.
fn as_verify_runs(merged: &ClifModule, report: &MergeReport) -> ClifModule {
    let mut module = merged.clone();
    for group in report.similar.iter().flatten() {
        let Some(shared) = merged.resolve(&group.shared) else {
            continue;
        };
        let shared_sig = &merged.function(shared).func.signature;
        for member in group.members.iter().filter(|m| m.by == Action::Removed) {
            let sig = clif_merge::similar::member_signature(group, shared_sig);
            let func = clif_merge::similar::stand_in(group, member, &sig, shared_sig);
            let _ = module.define(func, SymbolLinkage::Local, None);
        }
    }
    module
}

/// What the mutation check counted, by mutation kind.
#[derive(Default)]
struct MutationTally {
    /// Corrupted bodies whose original ran to the end.
    applied: usize,
    /// Of those, reported as a mismatch by the check as the tests run it.
    caught: usize,
    /// Of the uncaught, those that many more arguments tell apart (true misses).
    missed: BTreeMap<String, usize>,
    /// Of the uncaught, those no argument of a long run tells apart (maybe equivalent).
    indistinct: BTreeMap<String, usize>,
    /// Of the uncaught, those no run of which ended on both sides (a loop made endless, ...).
    never_ended: BTreeMap<String, usize>,
    /// Mutants left out as proven equivalent, by proof (`tests/common/live.rs`).
    proven: BTreeMap<common::live::Proof, usize>,
    /// Of those, the ones 256 argument tuples tell apart: a wrong proof.
    refuted: usize,
}

impl MutationTally {
    /// The mutants left out as equivalent, by proof: "n by <proof>, ...".
    fn proofs(&self) -> String {
        let by: Vec<String> = (self.proven.iter())
            .map(|(proof, n)| format!("{n} by {proof:?}"))
            .collect();
        match by.is_empty() {
            true => "none".to_string(),
            false => by.join(", "),
        }
    }

    fn distinguishable(&self) -> usize {
        self.applied
            - self.indistinct.values().sum::<usize>()
            - self.never_ended.values().sum::<usize>()
    }
}

/// Corrupts one field of one kept or shared body of `merged` per body (a random applicable
/// kind), and counts whether `verify_merge` reports it.
fn tally_mutations(
    tally: &mut MutationTally,
    original: &ClifModule,
    merged: &ClifModule,
    report: &MergeReport,
    ch: &mut common::r#gen::Choices,
) {
    tally_with(
        tally,
        original,
        merged,
        report,
        ch,
        &test_options(),
        usize::MAX,
        false,
    );
}

/// [`tally_mutations`] with `options`, for at most `limit` bodies; with `alone`, each check
/// runs only the original function whose run reaches the body (large modules).
#[allow(clippy::too_many_arguments)]
fn tally_with(
    tally: &mut MutationTally,
    original: &ClifModule,
    merged: &ClifModule,
    report: &MergeReport,
    ch: &mut common::r#gen::Choices,
    options: &VerifyOptions,
    limit: usize,
    alone: bool,
) {
    const PROBE: TrapCode = TrapCode::unwrap_user(250);
    let as_run = as_verify_runs(merged, report);
    let params = common::live::LiveParams::of(&as_run, original);
    for (body, entry) in merged_bodies(report) {
        if tally.applied >= limit {
            break;
        }
        let options = &VerifyOptions {
            only: alone.then(|| [entry.clone()].into_iter().collect()),
            ..options.clone()
        };
        let thorough = VerifyOptions {
            runs: 256,
            seed: 0x0dd_5eed,
            ..options.clone()
        };
        if !runs_to_the_end(original, &entry, options) {
            continue;
        }
        let Some(id) = merged.resolve(&body) else {
            continue;
        };
        let func = &merged.function(id).func;
        // Whether a run of the check reaches the change with values it changes: a probe trap
        // shows.
        let mut reached = |mutant: &Function, inst| {
            let mut probed = merged.clone();
            *probed.function_mut(id).func = common::live::with_probe(func, mutant, inst, PROBE);
            verify_merge(original, &probed, report, options)
                .mismatches
                .iter()
                .any(|m| matches!(m.merged.outcome, Outcome::Trapped(Trap::Code(c)) if c == PROBE))
        };
        // A mutant proven equivalent must not be told apart by the runs.
        let (mut proven, mut refuted) = (BTreeMap::new(), 0);
        let mut check_proof = |mutant: &Function, proof| {
            *proven.entry(proof).or_insert(0) += 1;
            let mut corrupted = merged.clone();
            *corrupted.function_mut(id).func = mutant.clone();
            let checked = verify_merge(original, &corrupted, report, &thorough);
            if !checked.is_ok() {
                refuted += 1;
                if let Some(m) = checked.mismatches.first() {
                    eprintln!("told apart: {m}");
                }
                eprintln!("refuted proof of equivalence ({proof:?}):\n{func}\n---\n{mutant}");
                if std::env::var_os("MUT_DUMP_MODULE").is_some() {
                    eprintln!("+++ module\n{}", clif_merge::emit::module_to_clif(merged));
                }
            }
        };
        let corrupt =
            common::live::corrupt_live(func, &as_run, &params, ch, &mut reached, &mut check_proof);
        for (proof, n) in proven {
            *tally.proven.entry(proof).or_default() += n;
        }
        tally.refuted += refuted;
        let Some((kind, mutant)) = corrupt else {
            continue;
        };
        let mut corrupted = merged.clone();
        *corrupted.function_mut(id).func = mutant;
        tally.applied += 1;
        if !verify_merge(original, &corrupted, report, options).is_ok() {
            tally.caught += 1;
            continue;
        }
        let kind = format!("{kind:?}");
        let long = verify_merge(original, &corrupted, report, &thorough);
        if long.completed_runs() == 0 {
            *tally.never_ended.entry(kind).or_default() += 1;
        } else if long.is_ok() {
            if std::env::var_os("MUT_DUMP").is_some() {
                eprintln!(
                    "=== {kind}\n{}\n---\n{}",
                    merged.function(id).func,
                    corrupted.function(id).func
                );
                if std::env::var_os("MUT_DUMP_MODULE").is_some() {
                    eprintln!("+++ module\n{}", clif_merge::emit::module_to_clif(merged));
                }
            }
            save_unsettled(original, &as_run, &corrupted.function(id).func);
            *tally.indistinct.entry(kind).or_default() += 1;
        } else {
            if std::env::var_os("MUT_DUMP").is_some() {
                let told = long
                    .mismatches
                    .first()
                    .map(|m| m.to_string())
                    .unwrap_or_default();
                eprintln!(
                    "=== missed {kind}: {told}\n{}\n---\n{}",
                    merged.function(id).func,
                    corrupted.function(id).func
                );
            }
            *tally.missed.entry(kind).or_default() += 1;
        }
    }
}

/// With `MUT_SAVE=DIR`, writes a mutant no tuple tells apart to `DIR` (`N.original.clif`, the
/// module as the check runs it `N.run.clif`, the mutant `N.mutant.clif`), so that
/// `reprove_saved_mutants` can run the proof of equivalence on it again.
fn save_unsettled(original: &ClifModule, as_run: &ClifModule, mutant: &Function) {
    static SAVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("MUT_SAVE") else {
        return;
    };
    let dir = Path::new(&dir);
    let n = SAVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    std::fs::create_dir_all(dir).unwrap();
    let write = |what: &str, text: String| {
        std::fs::write(dir.join(format!("{n:02}.{what}.clif")), text).unwrap();
    };
    write("original", clif_merge::emit::module_to_clif(original));
    write("run", clif_merge::emit::module_to_clif(as_run));
    write("mutant", mutant.to_string());
}

/// The proof of equivalence on each mutant [`save_unsettled`] wrote to `MUT_SAVE` (with
/// `EQUIV_DEBUG=1`, what it does not model): `MUT_SAVE=DIR cargo test --test differential --
/// --ignored reprove_saved_mutants --nocapture`.
#[test]
#[ignore = "reads MUT_SAVE"]
fn reprove_saved_mutants() {
    let Some(dir) = std::env::var_os("MUT_SAVE") else {
        eprintln!("note: skipping: MUT_SAVE is not set");
        return;
    };
    let dir = Path::new(&dir);
    let read = |path: std::path::PathBuf| {
        clif_merge::read_files(&[path], Default::default()).expect("a saved module reads")
    };
    let mut mutants: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".mutant.clif"))
        .collect();
    mutants.sort();
    let mut proven = 0;
    for path in &mutants {
        let stem = path
            .to_string_lossy()
            .trim_end_matches(".mutant.clif")
            .to_string();
        let original = read(format!("{stem}.original.clif").into());
        let as_run = read(format!("{stem}.run.clif").into());
        let text = std::fs::read_to_string(path).unwrap();
        let mutant = cranelift_reader::parse_functions(&text).unwrap().remove(0);
        let name = FuncName::of_function(&mutant);
        let func = &as_run.function(as_run.resolve(&name).unwrap()).func;
        let params = common::live::LiveParams::of(&as_run, &original);
        let targets = |k: usize| params.targets_of(&name, k);
        let split: Vec<_> = (0..func.signature.params.len()).map(targets).collect();
        eprintln!("{}: address parameters: {split:?}", path.display());
        let ok = common::equivalence::proven_equivalent(func, &mutant, &as_run, &targets);
        proven += usize::from(ok);
        eprintln!(
            "{}: {name}: {}",
            path.display(),
            if ok { "proven" } else { "not proven" }
        );
    }
    eprintln!("{proven} of {} proven equivalent", mutants.len());
}

/// The mutation check of issue 25 over `n` generated modules: after an exact and a similar
/// merge of each, one live instruction of each kept or shared body is corrupted so that a value
/// changes on the check's inputs (`tests/common/live.rs`) and the merge verified. Counted over
/// bodies whose original runs to the end (the figure), and apart, over those that 256
/// more argument tuples (another seed) tell apart.
fn mutation_check(n: usize) -> (MutationTally, usize, usize, usize) {
    let cfg = ModGenConfig::interpreter();
    let mut seeds = Seeds(0x3a7e_d0b0_d1e5_0025);
    let mut tally = MutationTally::default();
    for _ in 0..n {
        let gm = generate_module(&seeds.data(3000), &cfg);
        let original = gm.module();
        let choices = seeds.data(4000);
        let mut ch = common::r#gen::Choices::new(&choices);
        let (merged, report) = merged(&original, Mode::Safe);
        tally_mutations(&mut tally, &original, &merged, &report, &mut ch);
        let (merged, report) = merged_similar(&original, Mode::Safe);
        tally_mutations(&mut tally, &original, &merged, &report, &mut ch);
    }
    let (applied, caught) = (tally.applied, tally.caught);
    let distinct = tally.distinguishable();
    eprintln!(
        "mutation check: {caught} of {applied} corrupted bodies whose original ran to the end \
         reported ({:.1} %); {caught} of {distinct} that 256 more argument tuples tell apart \
         ({:.1} %); missed: {:?}; told apart by no tuple: {:?}; no run ended: {:?}; left out as \
         proven equivalent: {} (told apart by runs: {})",
        100.0 * caught as f64 / applied.max(1) as f64,
        100.0 * caught as f64 / distinct.max(1) as f64,
        tally.missed,
        tally.indistinct,
        tally.never_ended,
        tally.proofs(),
        tally.refuted
    );
    (tally, applied, caught, distinct)
}

/// The mutation check over `../shared/corpus` (release; minutes): per module, exact and
/// `--similar` (safe mode, the command line's threshold), up to `CORPUS_MUTANTS` (default 40)
/// kept or shared bodies whose entry runs to the end are corrupted, each checked by running its
/// entry alone (`VerifyOptions::only`) with the command line's options. Prints the detection
/// rate per module; `benches/verify.sh` runs it.
#[test]
#[ignore = "large: cargo test --release --test differential -- --ignored corpus_mutations"]
fn corpus_mutations_are_reported() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !dir.exists() {
        eprintln!("note: skipping: {} is missing", dir.display());
        return;
    }
    let limit = std::env::var("CORPUS_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let wanted: Option<String> = std::env::var("VERIFY_MODULES")
        .ok()
        .filter(|s| !s.is_empty());
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".clif") || name.ends_with(".clif.xz")
        })
        .collect();
    paths.sort();
    for path in paths {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let stem = file
            .trim_end_matches(".xz")
            .trim_end_matches(".clif")
            .to_string();
        if wanted
            .as_ref()
            .is_some_and(|w| !w.split_whitespace().any(|m| m == stem))
        {
            continue;
        }
        let original = clif_merge::read_files(std::slice::from_ref(&path), Default::default())
            .expect("a corpus module reads");
        for similar in [false, true] {
            // As the command line merges (`--similar` with its default threshold).
            let mut merged = original.clone();
            let similar_options = similar.then(SimilarOptions::default);
            let (report, _) = merge_module_with(&mut merged, Mode::Safe, similar_options.as_ref());
            let mut tally = MutationTally::default();
            let choices =
                Seeds(0x0c0a_9005 ^ (stem.len() as u64) << 8 ^ similar as u64).data(1 << 16);
            let mut ch = common::r#gen::Choices::new(&choices);
            // `VERIFY_RUNS=N`: the check with another number of runs per function.
            let runs = std::env::var("VERIFY_RUNS")
                .ok()
                .and_then(|s| s.parse().ok());
            let options = VerifyOptions {
                runs: runs.unwrap_or(VerifyOptions::default().runs),
                ..VerifyOptions::default()
            };
            tally_with(
                &mut tally, &original, &merged, &report, &mut ch, &options, limit, true,
            );
            let (applied, caught) = (tally.applied, tally.caught);
            let distinct = tally.distinguishable();
            println!(
                "| {stem} | {} | {caught} of {applied} ({:.1} %) | {caught} of {distinct} ({:.1} %) | {:?} | {} | {} |",
                if similar { "--similar" } else { "exact" },
                100.0 * caught as f64 / applied.max(1) as f64,
                100.0 * caught as f64 / distinct.max(1) as f64,
                tally.missed,
                tally.proofs(),
                tally.refuted,
            );
            assert_eq!(
                tally.refuted, 0,
                "{stem}: a proof of equivalence is refuted by runs"
            );
        }
    }
}

/// The demanded-bits proof of the mutation check (`tests/common/demanded.rs`): a change of
/// bits every path masks away is equivalent (and left out), one of a bit some path sees is not.
#[test]
fn demanded_bits_tell_masked_changes_from_seen_ones() {
    let text = |c: i64| {
        format!(
            "function %g(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 3
    v2 = band v0, v1
    return v2
}}
function %f(i64) -> i64 {{
    sig0 = (i64) -> i64
    fn0 = %g sig0
block0(v0: i64):
    v1 = iconst.i64 {c}
    v2 = iadd v0, v1
    v3 = call fn0(v2)
    v4 = func_addr.i64 fn0
    v5 = call_indirect sig0, v4(v2)
    v6 = iadd v3, v5
    return v6
}}"
        )
    };
    let original = module_from_text(&text(-1), &[]);
    let params = clif_merge::verify::demanded::DemandedParams::of(&original, &ClifModule::new());
    let name = FuncName::parse("%f").unwrap();
    let func = &original.function(original.resolve(&name).unwrap()).func;
    let demand = clif_merge::verify::demanded::demanded_values(func, &original, &params);
    let constant = func
        .layout
        .first_inst(func.layout.entry_block().unwrap())
        .unwrap();
    for (c, masked) in [(-4294967297, true), (-2, false), (-5, true), (1, false)] {
        let changed = module_from_text(&text(c), &[]);
        let mutant = &changed.function(changed.resolve(&name).unwrap()).func;
        assert_eq!(
            clif_merge::verify::demanded::change_is_undemanded(func, mutant, constant, &demand),
            masked,
            "iconst -1 made {c}"
        );
    }
}

/// The proof by an argument its callees do not demand (`call_change_is_undemanded`): a
/// call's argument changed where every possible callee never reads that parameter (the
/// caller `vmctx` of Wasmtime's convention), directly or through a `func_addr`, is equivalent;
/// changed where a callee reads it, where the callee is a function the module does not
/// define, or through an address whose callees are not known, it is not.
#[test]
fn an_argument_no_callee_reads_is_proven_equivalent_and_a_read_one_is_not() {
    let text = |call: &str| {
        format!(
            "function %g(i64, i64) -> i64 {{
block0(v0: i64, v1: i64):
    return v0
}}
function %f(i64, i64, i64) -> i64 {{
    sig0 = (i64, i64) -> i64
    fn0 = %g sig0
    fn1 = %import sig0
block0(v0: i64, v1: i64, v2: i64):
    v3 = func_addr.i64 fn0
    v4 = {call}
    return v4
}}"
        )
    };
    let name = FuncName::parse("%f").unwrap();
    let call = |module: &ClifModule| {
        let func = &module.function(module.resolve(&name).unwrap()).func;
        let block = func.layout.entry_block().unwrap();
        let insts: Vec<_> = func.layout.block_insts(block).collect();
        (func.clone(), insts[1])
    };
    for (before, after, proven) in [
        ("call fn0(v0, v1)", "call fn0(v0, v2)", true),
        (
            "call_indirect sig0, v3(v0, v1)",
            "call_indirect sig0, v3(v0, v2)",
            true,
        ),
        ("call fn0(v0, v1)", "call fn0(v2, v1)", false),
        (
            "call_indirect sig0, v3(v0, v1)",
            "call_indirect sig0, v3(v2, v1)",
            false,
        ),
        ("call fn1(v0, v1)", "call fn1(v0, v2)", false),
        (
            "call_indirect sig0, v2(v0, v1)",
            "call_indirect sig0, v2(v0, v0)",
            false,
        ),
    ] {
        let original = module_from_text(&text(before), &[]);
        let changed = module_from_text(&text(after), &[]);
        let params = clif_merge::verify::demanded::DemandedParams::of(&original, &original);
        let (func, inst) = call(&original);
        let (mutant, _) = call(&changed);
        let demand = clif_merge::verify::demanded::demanded_values(&func, &original, &params);
        assert_eq!(
            clif_merge::verify::demanded::call_change_is_undemanded(
                &func, &mutant, inst, &original, &params, &demand
            ),
            proven,
            "{before} made {after}"
        );
    }
}

/// The demanded-bits proof through a call whose results are dropped
/// (`tests/common/demanded.rs`): an argument the callee only returns, divides by a divisor
/// that cannot be zero without using the quotient, or compares with itself, is not observed;
/// it is once the caller looks at the result, the divisor may be zero, or the comparison is
/// with another value.
#[test]
fn demanded_bits_of_an_argument_whose_call_results_are_dropped() {
    let text = |c: i64, divisor: &str, compared: &str, returned: &str| {
        format!(
            "function %g(i64, i64) -> i64 {{
block0(v0: i64, v1: i64):
    v2 = iconst.i64 1
    v3 = bor v1, v2
    v4 = udiv v0, {divisor}
    v5 = icmp sge v0, {compared}
    trapz v5, user1
    return v0
}}
function %f(i64, i64) -> i64 {{
    sig0 = (i64, i64) -> i64
    fn0 = %g sig0
block0(v0: i64, v1: i64):
    v2 = iconst.i64 {c}
    v3 = iadd v0, v2
    v4 = call fn0(v3, v1)
    return {returned}
}}"
        )
    };
    let name = FuncName::parse("%f").unwrap();
    for (divisor, compared, returned, unobserved) in [
        ("v3", "v0", "v1", true),
        ("v3", "v0", "v4", false),
        ("v1", "v0", "v1", false),
        ("v3", "v1", "v1", false),
    ] {
        let original = module_from_text(&text(-1, divisor, compared, returned), &[]);
        let params =
            clif_merge::verify::demanded::DemandedParams::of(&original, &ClifModule::new());
        let func = &original.function(original.resolve(&name).unwrap()).func;
        let demand = clif_merge::verify::demanded::demanded_values(func, &original, &params);
        let constant = func
            .layout
            .first_inst(func.layout.entry_block().unwrap())
            .unwrap();
        let changed = module_from_text(&text(5, divisor, compared, returned), &[]);
        let mutant = &changed.function(changed.resolve(&name).unwrap()).func;
        assert_eq!(
            clif_merge::verify::demanded::change_is_undemanded(func, mutant, constant, &demand),
            unobserved,
            "udiv by {divisor}, icmp with {compared}, return {returned}"
        );
    }
}

/// The demanded-bits proof past a trap that always fires (`tests/common/demanded.rs`): a value
/// used only after `trapnz` of a nonzero constant, of a product of the nonzero masked depth, or
/// of a `umax` with the depth a `brif` took the nonzero side of, is never observed; one used
/// before such a trap, or after a trap that may not fire, is.
#[test]
fn demanded_bits_end_at_a_trap_that_always_fires() {
    let text = |trap: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{
    sig0 = (i64) -> i64
    fn0 = %x sig0
block0(v0: i64, v1: i64):
    v2 = iconst.i64 3
    v3 = band v0, v2
    v4 = iconst.i64 -1
    v5 = iadd v3, v4
    brif v3, block1, block2
block1:
    v6 = band v0, v3
    v7 = iconst.i64 -8
    v8 = imul v6, v7
    v9 = umax v3, v1
    v10 = iconst.i64 1
    v11 = iadd v1, v3
    {trap}
    v12 = call fn0(v5)
    return v12
block2:
    return v0
}}"
        )
    };
    let name = FuncName::parse("%f").unwrap();
    for (trap, fires) in [
        ("trapnz v10, user1", true),
        ("trapnz v8, user1", true),
        ("trapnz v9, user1", true),
        ("trap user1", true),
        ("trapnz v11, user1", false),
        ("trapnz v1, user1", false),
        ("trapz v10, user1", false),
    ] {
        let module = module_from_text(&text(trap), &[]);
        let params = clif_merge::verify::demanded::DemandedParams::of(&module, &ClifModule::new());
        let func = &module.function(module.resolve(&name).unwrap()).func;
        let demand = clif_merge::verify::demanded::demanded_values(func, &module, &params);
        // `v5 = iadd v3, v4`: only the call after the trap uses it.
        let v5 = func.dfg.values().nth(5).unwrap();
        assert_eq!(
            demand.get(&v5).copied().unwrap_or(0) == 0,
            fires,
            "{trap}: v5 demanded {:?}",
            demand.get(&v5)
        );
    }
}

/// Whether `%f` of the module `text(mutant)` is proven to do what `%f` of `text(original)` does
/// (`tests/common/equivalence.rs`).
fn proven_equivalent(text: &dyn Fn(&str) -> String, original: &str, mutant: &str) -> bool {
    let name = FuncName::parse("%f").unwrap();
    let module = module_from_text(&text(original), &[]);
    let changed = module_from_text(&text(mutant), &[]);
    let func = &module.function(module.resolve(&name).unwrap()).func;
    let mutant = &changed.function(changed.resolve(&name).unwrap()).func;
    common::equivalence::proven_equivalent(func, mutant, &module, &|_| None)
}

/// The symbolic proof of equivalence, split by the masked depth: a change of the value passed
/// to a callee that looks only at whether its low two bits are zero is equivalent when, for
/// every nonzero depth, they stay nonzero (`imul d, 5` made `bor d, 5`); not when for one depth
/// they become zero (`iadd d, 5` at depth 3, `band d, 5` at depth 2), nor when the callee also
/// returns the value.
#[test]
fn equivalence_by_the_depth_a_callee_branches_on() {
    let text = |op: &str, returned: &str| {
        format!(
            "function %g(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 3
    v2 = band v0, v1
    brif v2, block1, block2
block1:
    trap user1
block2:
    return {returned}
}}
function %f(i64, i64) -> i64 {{
    sig0 = (i64) -> i64
    fn0 = %g sig0
    fn1 = %x sig0
block0(v0: i64, v1: i64):
    v2 = iconst.i64 3
    v3 = band v0, v2
    brif v3, block1, block2
block1:
    v4 = iconst.i64 5
    v5 = {op} v3, v4
    v6 = call fn0(v5)
    return v6
block2:
    v7 = call fn1(v1)
    return v7
}}"
        )
    };
    for (returned, op, equivalent) in [
        ("v1", "bor", true),
        ("v1", "iadd", false),
        ("v1", "band", false),
        ("v1", "bxor", false),
    ] {
        let text = |op: &str| text(op, returned);
        assert_eq!(
            proven_equivalent(&text, "imul", op),
            equivalent,
            "imul made {op}, %g returns {returned}"
        );
    }
}

/// The symbolic proof of equivalence through a branch on an unknown value whose two sides do
/// the same (they pass the same value to the join): changing its condition is equivalent; not
/// when the sides pass different values, nor when one of them calls an import.
#[test]
fn equivalence_through_a_branch_whose_sides_do_the_same() {
    let text = |limit: &str, side: &str, call: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{
    sig0 = (i64) -> i64
    fn0 = %x sig0
block0(v0: i64, v1: i64):
    v2 = iconst.i64 {limit}
    v3 = icmp ult v1, v2
    brif v3, block1, block2
block1:
    v4 = iconst.i64 {side}
    {call}
    jump block3(v4)
block2:
    v5 = iconst.i64 1
    jump block3(v5)
block3(v6: i64):
    v7 = call fn0(v6)
    return v7
}}"
        )
    };
    for (side, call, equivalent) in [
        ("1", "", true),
        ("2", "", false),
        ("1", "v8 = call fn0(v0)", false),
    ] {
        let text = |limit: &str| text(limit, side, call);
        assert_eq!(
            proven_equivalent(&text, "10", "20"),
            equivalent,
            "side {side}, {call:?}"
        );
    }
}

/// Whether `%f` of `text(mutant)` is proven to do what `%f` of `text(original)` does, the
/// module's functions `entries` (and no other) called by the check itself: a parameter of
/// another function to which every call passes a `func_addr` is split by those functions.
fn proven_equivalent_with_entries(
    text: &dyn Fn(&str) -> String,
    original: &str,
    mutant: &str,
    entries: &[&str],
) -> bool {
    let name = FuncName::parse("%f").unwrap();
    let module = module_from_text(&text(original), &[]);
    let changed = module_from_text(&text(mutant), &[]);
    let mut called = ClifModule::new();
    for mf in module.functions() {
        if entries.contains(&mf.name.to_string().as_str()) {
            called
                .define((*mf.func).clone(), SymbolLinkage::Export, None)
                .unwrap();
        }
    }
    let params = common::live::LiveParams::of(&module, &called);
    let func = &module.function(module.resolve(&name).unwrap()).func;
    let mutant = &changed.function(changed.resolve(&name).unwrap()).func;
    let targets = |k: usize| params.targets_of(&name, k);
    common::equivalence::proven_equivalent(func, mutant, &module, &targets)
}

/// The symbolic proof of equivalence with divisions as the interpreter the check runs on does
/// them: by zero they trap (a known zero divisor: always; an unknown one: a fork on it), a
/// signed one of the least value by -1 traps (`srem` too: not 0). A division whose result
/// nothing uses is equivalent to another that traps on the same inputs, not to one that traps
/// on others; what follows a division by zero is never run.
#[test]
fn equivalence_of_divisions_that_may_trap() {
    let text = |division: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{
block0(v0: i64, v1: i64):
    v2 = {division}
    v3 = iconst.i64 5
    return v3
}}"
        )
    };
    for (original, mutant, equivalent) in [
        ("udiv v0, v1", "urem v0, v1", true),
        ("udiv v0, v1", "udiv v1, v0", false),
        ("udiv v0, v1", "udiv v0, v0", false),
        // Both trap by zero and on the least value by -1, in the interpreter.
        ("srem v0, v1", "sdiv v0, v1", true),
        ("srem v0, v1", "urem v0, v1", false),
        ("sdiv v0, v1", "udiv v0, v1", false),
    ] {
        assert_eq!(
            proven_equivalent(&text, original, mutant),
            equivalent,
            "{original} made {mutant}"
        );
    }
    // The least value by -1: `srem` traps as `sdiv` does (the proof once folded it to 0, the
    // value of `srem` by 1).
    let least = |by: &str, returned: &str| {
        format!(
            "function %f(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 0x8000_0000_0000_0000
    v2 = iconst.i64 {by}
    v3 = srem v1, v2
    v4 = iconst.i64 0
    return {returned}
}}"
        )
    };
    for ((by, returned), (by_after, returned_after), equivalent) in [
        (("-1", "v3"), ("1", "v3"), false),
        (("-1", "v3"), ("-1", "v4"), true),
        (("0", "v3"), ("0", "v4"), true),
        (("1", "v3"), ("1", "v1"), false),
        (("1", "v3"), ("1", "v4"), true),
    ] {
        let text = |t: &str| t.to_string();
        let (original, mutant) = (least(by, returned), least(by_after, returned_after));
        assert_eq!(
            proven_equivalent(&text, &original, &mutant),
            equivalent,
            "{original}\nmade\n{mutant}"
        );
    }
}

/// The symbolic proof of equivalence with loads inside a stack slot of their own frame: such a
/// load cannot fault and is no event, so one whose value nothing uses may change its offset
/// within the slot; not past either end (it may fault there), nor when the value is returned
/// (another place of a slot nothing stored to: what it holds is not known).
#[test]
fn equivalence_of_loads_from_a_stack_slot() {
    let text = |load: &str| {
        format!(
            "function %f(i64) -> i64 {{
    ss0 = explicit_slot 16
block0(v0: i64):
    v1 = stack_addr.i64 ss0
    {load}
    return v0
}}"
        )
    };
    for (original, mutant, equivalent) in [
        ("v2 = load.i64 v1", "v2 = load.i64 v1+8", true),
        ("v2 = load.i64 v1", "v2 = load.i64 v1+12", false),
        ("v2 = load.i64 v1", "v2 = load.i64 v1-4", false),
    ] {
        assert_eq!(
            proven_equivalent(&text, original, mutant),
            equivalent,
            "{original} made {mutant}"
        );
    }
    let returned = |offset: &str| {
        format!(
            "function %f(i64) -> i64 {{
    ss0 = explicit_slot 16
block0(v0: i64):
    v1 = stack_addr.i64 ss0
    v2 = load.i64 v1{offset}
    return v2
}}"
        )
    };
    let text = |t: &str| t.to_string();
    assert!(!proven_equivalent(&text, &returned(""), &returned("+8")));
    assert!(proven_equivalent(&text, &returned("+8"), &returned("+8")));
}

/// The symbolic proof of equivalence through a branch on a value of which at most two bits are
/// not known (`umulhi v1, 3` is at most 2): it runs once per value, each with that value known,
/// so that a recursion on it ends. Equivalent when the callee does nothing observable whatever
/// the depth (the original masks with 3); not when it calls an import at depth 3, which the
/// original reaches and the mutant never does.
#[test]
fn equivalence_over_the_few_values_of_a_branch_condition() {
    let text = |op: &str, at_three: &str| {
        format!(
            "function %g(i64) {{
    sig0 = (i64) system_v
    sig1 = (i64) -> i64 system_v
    fn0 = %g sig0
    fn1 = %x sig1
block0(v0: i64):
    v1 = iconst.i64 3
    v2 = band v0, v1
    v3 = icmp eq v2, v1
    brif v3, block3, block4
block3:
    {at_three}
    jump block4
block4:
    brif v2, block1, block2
block1:
    v4 = iconst.i64 -1
    v5 = iadd v2, v4
    call fn0(v5)
    return
block2:
    return
}}
function %f(i64, i64) -> i64 {{
    sig0 = (i64) system_v
    sig1 = (i64) -> i64 system_v
    fn0 = %g sig0
    fn1 = %x sig1
block0(v0: i64, v1: i64):
    v2 = iconst.i64 3
    v3 = {op} v1, v2
    call fn0(v3)
    v4 = call fn1(v0)
    return v4
}}"
        )
    };
    for (at_three, equivalent) in [("", true), ("v6 = call fn1(v0)", false)] {
        let text = |op: &str| text(op, at_three);
        assert_eq!(
            proven_equivalent(&text, "band", "umulhi"),
            equivalent,
            "at depth 3: {at_three:?}"
        );
    }
}

/// The symbolic proof of equivalence splits a shared body's address parameter (every call
/// passes a `func_addr`, the check never calls the body itself) by its functions before the
/// integer parameters the module's masks split, which may take every case there is: a changed
/// argument of a call through it that each possible callee masks the same is equivalent; one
/// that a callee sees is not, nor any when the check also calls the body itself (then the
/// address may be anything).
#[test]
fn equivalence_split_by_the_callees_of_an_address_parameter_first() {
    let text = |passed: &str| {
        format!(
            "function %a(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 1
    v2 = band v0, v1
    return v2
}}
function %b(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 1
    v2 = band v0, v1
    v3 = bxor v2, v1
    v4 = iconst.i64 7
    v5 = band v0, v4
    return v3
}}
function %f(i64, i64, i64, i64) -> i64 {{
    sig0 = (i64) -> i64
block0(v0: i64, v1: i64, v2: i64, v3: i64):
    v4 = iconst.i64 {passed}
    v5 = call_indirect sig0, v3(v4)
    return v5
}}
function %m1(i64, i64, i64) -> i64 {{
    sig0 = (i64, i64, i64, i64) -> i64
    sig1 = (i64) -> i64
    fn0 = %f sig0
    fn1 = %a sig1
block0(v0: i64, v1: i64, v2: i64):
    v3 = func_addr.i64 fn1
    v4 = call fn0(v0, v1, v2, v3)
    return v4
}}
function %m2(i64, i64, i64) -> i64 {{
    sig0 = (i64, i64, i64, i64) -> i64
    sig1 = (i64) -> i64
    fn0 = %f sig0
    fn1 = %b sig1
block0(v0: i64, v1: i64, v2: i64):
    v3 = func_addr.i64 fn1
    v4 = call fn0(v0, v1, v2, v3)
    return v4
}}"
        )
    };
    let members = ["%a", "%b", "%m1", "%m2"];
    let with_body = ["%a", "%b", "%m1", "%m2", "%f"];
    for (mutant, entries, equivalent) in [
        ("4", &members[..], true),
        ("3", &members[..], false),
        ("4", &with_body[..], false),
    ] {
        assert_eq!(
            proven_equivalent_with_entries(&text, "2", mutant, entries),
            equivalent,
            "2 made {mutant}, the check calls {entries:?}"
        );
    }
}

/// The symbolic proof of equivalence runs a loop of many iterations to its end (a taken branch
/// no longer opens a run of its own, which once ended the proof after 64 of them), and folds
/// conversions of known integers to floats (`fcvt_from_uint`), so that a conversion back that
/// may trap is decided.
#[test]
fn equivalence_after_a_long_loop_and_conversions_of_constants() {
    let text = |c: &str| {
        format!(
            "function %f(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 0
    jump block1(v1)
block1(v2: i64):
    v3 = iconst.i64 1
    v4 = iadd v2, v3
    v5 = iconst.i64 100
    v6 = icmp ult v4, v5
    brif v6, block1(v4), block2
block2:
    v7 = iconst.i64 {c}
    v8 = fcvt_from_uint.f64 v7
    v9 = fcvt_to_sint.i64 v8
    v10 = iconst.i64 3
    v11 = band v9, v10
    return v11
}}"
        )
    };
    // -1 and -2 (unsigned) are beyond the least signed value: the conversion back traps.
    for (original, mutant, equivalent) in [
        ("2", "6", true),
        ("2", "3", false),
        ("2", "-2", false),
        ("-1", "-2", true),
    ] {
        assert_eq!(
            proven_equivalent(&text, original, mutant),
            equivalent,
            "{original} made {mutant}"
        );
    }
}

/// A corruption that shows only when an argument equals a constant the function compares with
/// (`icmp eq v0, 12345`): random arguments never take that side, the check's steering values
/// (the constants a function compares with and their neighbours) do.
#[test]
fn a_rare_side_of_a_comparison_is_run() {
    let body = |taken: i64| {
        format!(
            "function %f(i64, i32) -> i64 {{
block0(v0: i64, v1: i32):
    v2 = iconst.i64 12345
    v3 = icmp eq v0, v2
    brif v3, block1, block2
block1:
    v4 = iconst.i64 {taken}
    return v4
block2:
    v5 = uextend.i64 v1
    return v5
}}"
        )
    };
    let original = module_from_text(&body(7), &[]);
    let (_, report) = merged(&original, Mode::Safe);
    let corrupted = module_from_text(&body(8), &[]);
    let v = verify_merge(&original, &corrupted, &report, &VerifyOptions::default());
    assert!(
        !v.is_ok(),
        "the taken side of icmp eq is never run: {}",
        v.summary()
    );
}

/// A corruption that shows only on the rare side of a comparison of a value computed from an
/// argument (`icmp eq v0 + 7, 0x1234_5678`, in a callee): neither random arguments nor steering
/// values (constants compared with a parameter itself) take it; the guided arguments
/// (`src/verify/guide.rs`) do, from the operands the comparison was seen with.
#[test]
fn a_rare_side_of_a_comparison_of_a_computed_value_is_run() {
    let body = |taken: i64| {
        format!(
            "function %g(i64, i32) -> i64 {{
block0(v0: i64, v1: i32):
    v2 = iconst.i64 7
    v3 = iadd v0, v2
    v4 = iconst.i64 0x1234_5678
    v5 = icmp eq v3, v4
    brif v5, block1, block2
block1:
    v6 = iconst.i64 {taken}
    return v6
block2:
    v7 = uextend.i64 v1
    return v7
}}
function %f(i64, i32) -> i64 {{
    sig0 = (i64, i32) -> i64
    fn0 = %g sig0
block0(v0: i64, v1: i32):
    v2 = ireduce.i32 v0
    v3 = iconst.i32 3
    v4 = iadd v2, v3
    v5 = icmp ult v4, v1
    brif v5, block1, block2
block1:
    v6 = call fn0(v0, v1)
    return v6
block2:
    v7 = iconst.i64 0
    return v7
}}"
        )
    };
    let original = module_from_text(&body(7), &[]);
    let (_, report) = merged(&original, Mode::Safe);
    let corrupted = module_from_text(&body(8), &[]);
    for runs in [12, 64] {
        let options = VerifyOptions {
            runs,
            ..VerifyOptions::default()
        };
        let v = verify_merge(&original, &corrupted, &report, &options);
        assert!(
            !v.is_ok(),
            "{runs} runs: the taken side of icmp eq is never run: {}",
            v.summary()
        );
        assert!(
            v.mismatches.iter().any(|m| m.function.to_string() == "%g"),
            "{runs} runs: %g itself is not reported: {}",
            v.summary()
        );
    }
}

/// The share of all corrupted bodies (whose original ran to the end) the mutation check must
/// see reported. The issue asks for 95 %; measured over 96 modules: 97.8 % (451 of 461), and
/// 99.1 % of those some tuple tells apart (docs/testing.md says what the rest are); over the
/// six modules of every `cargo test`, 100 % (30 of 30).
const REPORTED_OF_ALL: usize = 97;

/// A few modules, in every `cargo test` (seconds).
#[test]
fn mutated_merged_bodies_are_reported() {
    let n = cases(6);
    let (tally, applied, caught, distinct) = mutation_check(n);
    assert_eq!(
        tally.refuted, 0,
        "a proof of equivalence is refuted by runs"
    );
    assert!(applied >= n, "only {applied} corruptions applied");
    assert!(
        caught * 100 >= applied * REPORTED_OF_ALL,
        "only {caught} of {applied} caught"
    );
    assert!(
        caught * 100 >= distinct * 95,
        "only {caught} of {distinct} caught"
    );
}

/// The same over more modules: `cargo test --release --test differential -- --ignored
/// mutated_merged_bodies_many`.
#[test]
#[ignore]
fn mutated_merged_bodies_many_are_reported() {
    let n = cases(96);
    let (tally, applied, caught, distinct) = mutation_check(n);
    assert_eq!(
        tally.refuted, 0,
        "a proof of equivalence is refuted by runs"
    );
    assert!(
        caught * 100 >= applied * REPORTED_OF_ALL,
        "only {caught} of {applied} caught"
    );
    assert!(
        caught * 100 >= distinct * 95,
        "only {caught} of {distinct} caught"
    );
}
