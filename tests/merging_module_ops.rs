//! `MergingModule` (eager and deferred) against a plain `JITModule`: the same sequence of
//! declarations and definitions, refused ones included, goes to both. Every call must be
//! accepted or refused alike (the one allowed difference: eager mode refuses a declaration that
//! would make a merge unsafe) and every function must compute the same results. Fixed sequences
//! reproduce known defects; a proptest generates the rest (`OPS_CASES=3000` for a longer search).

use clif_merge::merging_module::UnsafeDeclaration;
use clif_merge::{FuncName, MergingModule};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, UserFuncName, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, isa::OwnedTargetIsa};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, ModuleError, ModuleResult, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};
use proptest::prelude::*;

#[path = "common/build.rs"]
mod build;
#[path = "common/cc.rs"]
mod cc;
use cc::link_and_run;

/// Functions `f0`..`f3`, all `fn(i32) -> i32`.
const NAMES: usize = 4;

/// Arguments every function is called with at the end.
const ARGS: [i32; 6] = [-3, 0, 1, 2, 5, 9];

#[derive(Clone, Debug)]
enum Body {
    /// `x * k + 1`
    Mul(i64),
    /// `callee(x) + k`, the callee a function of a higher index (`Mul(k)` for the last one), so
    /// that calls never loop.
    Call(usize, i64),
    /// `if x <= 1 { 1 } else { x * self(x - 1) }`
    Factorial,
    /// Returns an `i64` from an `i32` function: the verifier refuses it.
    Invalid,
}

#[derive(Clone, Debug)]
enum Op {
    Declare(usize, Linkage),
    Define(usize, Body),
    /// `define_function_bytes` with the machine code of `x * k + 1`.
    DefineBytes(usize, i64),
}

#[derive(Clone, Copy, Debug)]
enum Timing {
    Eager,
    Deferred,
}

fn jit() -> JITModule {
    JITModule::new(JITBuilder::new(default_libcall_names()).expect("a host JIT"))
}

fn signature(module: &impl Module) -> Signature {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    sig
}

fn name(i: usize) -> String {
    format!("f{i}")
}

/// Builds function `i`'s body in a context, as an embedder would with cranelift-frontend.
fn build(module: &mut impl Module, ids: &[FuncId], i: usize, body: &Body) -> Context {
    let mut ctx = module.make_context();
    ctx.func.signature = signature(module);
    ctx.func.name = UserFuncName::user(0, ids[i].as_u32());
    let config = module.target_config();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let x = b.block_params(entry)[0];
    let result = match *body {
        Body::Call(callee, k) if i + 1 < NAMES => {
            let callee = i + 1 + callee % (NAMES - i - 1);
            let f = module.declare_func_in_func(ids[callee], b.func);
            let call = b.ins().call(f, &[x]);
            let r = b.inst_results(call)[0];
            b.ins().iadd_imm_s(r, k)
        }
        Body::Mul(k) | Body::Call(_, k) => {
            let t = b.ins().imul_imm_s(x, k);
            b.ins().iadd_imm_s(t, 1)
        }
        Body::Factorial => {
            let recurse = b.create_block();
            let done = b.create_block();
            b.append_block_param(done, types::I32);
            let small = b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, x, 1);
            let one = b.ins().iconst(types::I32, 1);
            b.ins().brif(small, done, &[one.into()], recurse, &[]);
            b.seal_block(recurse);
            b.switch_to_block(recurse);
            let f = module.declare_func_in_func(ids[i], b.func);
            let n1 = b.ins().iadd_imm_s(x, -1);
            let call = b.ins().call(f, &[n1]);
            let r = b.inst_results(call)[0];
            let prod = b.ins().imul(x, r);
            b.ins().jump(done, &[prod.into()]);
            b.seal_block(done);
            b.switch_to_block(done);
            b.block_params(done)[0]
        }
        Body::Invalid => b.ins().iconst(types::I64, 7),
    };
    b.ins().return_(&[result]);
    b.finalize(config);
    ctx
}

/// The host machine code of `x * k + 1` (no relocations).
fn machine_code(module: &mut impl Module, ids: &[FuncId], k: i64) -> Vec<u8> {
    let mut ctx = build(module, ids, 0, &Body::Mul(k));
    ctx.compile(module.isa(), &mut ControlPlane::default())
        .expect("x * k + 1 compiles");
    ctx.compiled_code().unwrap().code_buffer().to_vec()
}

// The error is the `Module` trait's own.
#[allow(clippy::result_large_err)]
fn apply(
    module: &mut impl Module,
    ids: &mut Vec<FuncId>,
    op: &Op,
    bytes: &[u8],
) -> ModuleResult<()> {
    match op {
        &Op::Declare(i, linkage) => {
            let sig = signature(module);
            let id = module.declare_function(&name(i), linkage, &sig)?;
            if ids.len() == i {
                ids.push(id);
            }
            assert_eq!(ids[i], id);
            Ok(())
        }
        Op::Define(i, body) => {
            let mut ctx = build(module, ids, *i, body);
            module.define_function(ids[*i], &mut ctx)
        }
        &Op::DefineBytes(i, _) => module.define_function_bytes(ids[i], 16, bytes, &[]),
    }
}

/// Whether `error` is eager mode's refusal of a declaration that would make a merge unsafe.
fn is_unsafe_declaration(error: &ModuleError) -> bool {
    matches!(error, ModuleError::Backend(e) if e.downcast_ref::<UnsafeDeclaration>().is_some())
}

/// The two modules after the same calls, finished.
struct Driven<M> {
    plain: M,
    merged: M,
    /// `f0`..`f3`, then their wrappers `call_f0`..`call_f3`: the same ids in both.
    ids: Vec<FuncId>,
}

/// Runs `ops` (after declaring every function with `initial`) through `plain` and `merging`,
/// checking that both accept and refuse alike; then defines what is left undefined and an
/// exported wrapper calling each function, alike, and finishes.
fn drive<M: Module>(
    mut plain: M,
    mut merging: MergingModule<M>,
    initial: [Linkage; NAMES],
    ops: &[Op],
) -> Driven<M> {
    let (mut plain_ids, mut merging_ids) = (Vec::new(), Vec::new());
    let declarations = initial.iter().enumerate().map(|(i, &l)| Op::Declare(i, l));
    let ops: Vec<Op> = declarations.chain(ops.iter().cloned()).collect();
    let mut defined = [false; NAMES];
    for (step, op) in ops.iter().enumerate() {
        let bytes = match op {
            &Op::DefineBytes(_, k) => machine_code(&mut plain, &plain_ids, k),
            _ => Vec::new(),
        };
        let merged = apply(&mut merging, &mut merging_ids, op, &bytes);
        if let Err(e) = &merged
            && is_unsafe_declaration(e)
        {
            // Allowed only for a declaration that makes a defined function preemptible; the
            // plain module does not see it either, so that both keep the same linkages.
            assert!(
                matches!(op, &Op::Declare(i, Linkage::Preemptible) if defined[i]),
                "step {step} {op:?}: {e}"
            );
            continue;
        }
        let unmerged = apply(&mut plain, &mut plain_ids, op, &bytes);
        assert_eq!(
            merged.is_ok(),
            unmerged.is_ok(),
            "step {step} {op:?}: merging {merged:?}, plain {unmerged:?}"
        );
        if let (Op::Define(i, _) | Op::DefineBytes(i, _), Ok(())) = (op, &unmerged) {
            defined[*i] = true;
        }
    }
    // Define what is left so that every call resolves.
    for i in (0..NAMES).filter(|&i| !defined[i]) {
        let import =
            plain.declarations().get_function_decl(plain_ids[i]).linkage == Linkage::Import;
        let mut rest = Vec::new();
        if import {
            rest.push(Op::Declare(i, Linkage::Local));
        }
        rest.push(Op::Define(i, Body::Mul(100 + i as i64)));
        for op in &rest {
            apply(&mut merging, &mut merging_ids, op, &[]).expect("merging: the last definitions");
            apply(&mut plain, &mut plain_ids, op, &[]).expect("plain: the last definitions");
        }
    }
    for i in 0..NAMES {
        define_wrapper(&mut merging, &mut merging_ids, i);
        define_wrapper(&mut plain, &mut plain_ids, i);
    }
    assert_eq!(merging_ids, plain_ids);
    let (merged, report) = match merging.try_finish() {
        Ok(finished) => finished,
        Err(failure) => panic!("finish: {}", failure.error),
    };
    // No function whose body others run may be replaced at link time.
    for class in &report.classes {
        // (A private copy, deferred mode's own function, is local.)
        let FuncName::User { index, .. } = class.kept else {
            continue;
        };
        let linkage = merged
            .declarations()
            .get_function_decl(FuncId::from_u32(index))
            .linkage;
        assert_ne!(linkage, Linkage::Preemptible, "{class:?}");
    }
    Driven {
        plain,
        merged,
        ids: plain_ids,
    }
}

/// Declares and defines `call_f{i}`, exported, returning `f{i}(x)`: the way in from C.
fn define_wrapper(module: &mut impl Module, ids: &mut Vec<FuncId>, i: usize) {
    let sig = signature(module);
    let id = module
        .declare_function(&format!("call_{}", name(i)), Linkage::Export, &sig)
        .unwrap();
    ids.push(id);
    let callee = ids[i];
    build::build(module, id, |b, import, params| {
        let f = import(callee, b);
        let call = b.ins().call(f, &[params[0]]);
        b.inst_results(call)[0]
    });
}

/// [`drive`] over JIT modules; every function (wrappers included) computes alike.
fn check(initial: [Linkage; NAMES], ops: &[Op], timing: Timing) {
    let merging = match timing {
        Timing::Eager => MergingModule::new(jit()),
        Timing::Deferred => MergingModule::deferred(jit()),
    };
    let Driven {
        mut plain,
        mut merged,
        ids,
    } = drive(jit(), merging, initial, ops);
    merged.finalize_definitions().unwrap();
    plain.finalize_definitions().unwrap();
    for (i, &id) in ids.iter().enumerate() {
        for x in ARGS {
            assert_eq!(
                call(&merged, id, x),
                call(&plain, id, x),
                "function {i}, x = {x}"
            );
        }
    }
}

fn host_isa() -> OwnedTargetIsa {
    let mut flags = settings::builder();
    flags.set("is_pic", "true").unwrap();
    cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(settings::Flags::new(flags))
        .expect("the host ISA")
}

fn object() -> ObjectModule {
    let builder = ObjectBuilder::new(host_isa(), "ops", default_libcall_names()).unwrap();
    ObjectModule::new(builder)
}

/// [`drive`] over object modules, each linked by `cc` with a C driver that defines a strong
/// `f{i}` for every function left preemptible (so the link replaces it) and prints every
/// wrapper's results: both programs print the same. False (with a note) without `cc`.
fn check_linked(initial: [Linkage; NAMES], ops: &[Op], timing: Timing) -> bool {
    let merging = match timing {
        Timing::Eager => MergingModule::new(object()),
        Timing::Deferred => MergingModule::deferred(object()),
    };
    let Driven { plain, merged, ids } = drive(object(), merging, initial, ops);
    let mut driver = String::from("#include <stdio.h>\n");
    for (i, &id) in ids[..NAMES].iter().enumerate() {
        driver += &format!("int call_f{i}(int);\n");
        if plain.declarations().get_function_decl(id).linkage == Linkage::Preemptible {
            driver += &format!("int f{i}(int x) {{ return x * 1000 + {i}; }}\n");
        }
    }
    let args = ARGS.map(|x| x.to_string()).join(", ");
    driver += &format!("int main(void) {{\n  int xs[] = {{{args}}};\n");
    driver += "  for (int k = 0; k < (int) (sizeof xs / sizeof xs[0]); k++)\n";
    let calls: Vec<String> = (0..NAMES).map(|i| format!("call_f{i}(xs[k])")).collect();
    driver += &format!(
        "    printf(\"{}\\n\", {});\n  return 0;\n}}\n",
        ["%d"; NAMES].join(" "),
        calls.join(", ")
    );
    let run = |object: ObjectModule| link_and_run(&object.finish().emit().unwrap(), &driver);
    let (Some(unmerged), Some(merged)) = (run(plain), run(merged)) else {
        return false;
    };
    assert_eq!(merged, unmerged, "{driver}");
    true
}

fn call(jit: &JITModule, id: FuncId, x: i32) -> i32 {
    let ptr = jit.get_finalized_function(id);
    // SAFETY: every function here is `fn(i32) -> i32` in the host's default calling convention.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(ptr) };
    f(x)
}

fn check_both(initial: [Linkage; NAMES], ops: &[Op]) {
    check(initial, ops, Timing::Eager);
    check(initial, ops, Timing::Deferred);
}

fn check_both_linked(initial: [Linkage; NAMES], ops: &[Op]) {
    check_linked(initial, ops, Timing::Eager);
    check_linked(initial, ops, Timing::Deferred);
}

const EXPORTED: [Linkage; NAMES] = [Linkage::Export; NAMES];

#[test]
fn a_body_the_inner_module_refused_as_a_duplicate_is_no_merge_target() {
    check_both(
        EXPORTED,
        &[
            Op::DefineBytes(0, 7),
            Op::Define(0, Body::Mul(3)),
            Op::Define(1, Body::Mul(3)),
        ],
    );
}

#[test]
fn a_body_the_verifier_refused_is_no_merge_target() {
    check_both(
        EXPORTED,
        &[
            Op::Define(0, Body::Invalid),
            Op::Define(1, Body::Invalid),
            Op::Define(2, Body::Call(0, 5)),
        ],
    );
}

#[test]
fn a_function_whose_body_was_refused_can_be_defined_again() {
    check_both(
        EXPORTED,
        &[
            Op::Define(0, Body::Invalid),
            Op::Define(0, Body::Mul(3)),
            Op::Define(1, Body::Mul(3)),
        ],
    );
}

#[test]
fn bytes_for_a_function_already_defined_are_refused_at_once() {
    check_both(
        EXPORTED,
        &[Op::Define(0, Body::Mul(3)), Op::DefineBytes(0, 7)],
    );
}

#[test]
fn a_body_for_a_function_defined_by_bytes_is_refused_at_once() {
    check_both(
        EXPORTED,
        &[Op::DefineBytes(0, 7), Op::Define(0, Body::Mul(3))],
    );
}

#[test]
fn a_body_the_verifier_refuses_is_refused_at_once() {
    check_both(EXPORTED, &[Op::Define(0, Body::Invalid)]);
}

#[test]
fn an_unused_thunk_may_become_preemptible() {
    let locals = [Linkage::Local; NAMES];
    let ops = [
        Op::Define(0, Body::Mul(3)),
        Op::Define(1, Body::Mul(3)),
        Op::Declare(1, Linkage::Preemptible),
    ];
    check_both(locals, &ops);
    // The declaration is accepted (nothing compared a call to f1 with a call to f0).
    let mut merging = MergingModule::new(jit());
    let mut ids = Vec::new();
    let declarations = (0..NAMES).map(|i| Op::Declare(i, Linkage::Local));
    for op in declarations.chain(ops) {
        apply(&mut merging, &mut ids, &op, &[]).unwrap();
    }
}

/// A linkage, `weights` in the order import, local, preemptible, hidden, export.
#[test]
fn a_merge_target_cannot_become_preemptible() {
    let initial = [
        Linkage::Local,
        Linkage::Export,
        Linkage::Export,
        Linkage::Export,
    ];
    let ops = [
        Op::Define(0, Body::Mul(3)),
        Op::Define(1, Body::Mul(3)),
        Op::Declare(0, Linkage::Preemptible),
    ];
    check_both(initial, &ops);
    check_both_linked(initial, &ops);
}

/// `f2` becomes a thunk calling `f3`; `f0` calls `f2` and `f1` calls `f3`, so eager mode makes
/// `f1` a thunk calling `f0`. Then `f2` may not become preemptible.
#[test]
fn a_thunk_compared_as_its_target_cannot_become_preemptible() {
    let ops = [
        Op::Define(3, Body::Mul(3)),
        Op::Define(2, Body::Mul(3)),
        Op::Define(0, Body::Call(1, 5)),
        Op::Define(1, Body::Call(1, 5)),
        Op::Declare(2, Linkage::Preemptible),
    ];
    check_both([Linkage::Local; NAMES], &ops);
    check_both_linked([Linkage::Local; NAMES], &ops);
}

fn linkage(weights: [u32; 5]) -> impl Strategy<Value = Linkage> {
    prop_oneof![
        weights[0] => Just(Linkage::Import),
        weights[1] => Just(Linkage::Local),
        weights[2] => Just(Linkage::Preemptible),
        weights[3] => Just(Linkage::Hidden),
        weights[4] => Just(Linkage::Export),
    ]
}

/// First declarations: mostly definable and not preemptible, so that bodies merge.
fn initial_linkage() -> impl Strategy<Value = Linkage> {
    linkage([1, 3, 1, 2, 3])
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        5 => (1..3i64).prop_map(Body::Mul),
        2 => (0..2usize, 0..2i64).prop_map(|(c, k)| Body::Call(c, k)),
        1 => Just(Body::Factorial),
        1 => Just(Body::Invalid),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let function = 0..NAMES;
    prop_oneof![
        // Later declarations: often preemptible, the change that can make a merge unsafe.
        2 => (function.clone(), linkage([1, 1, 3, 1, 1])).prop_map(|(i, l)| Op::Declare(i, l)),
        6 => (function.clone(), body()).prop_map(|(i, b)| Op::Define(i, b)),
        1 => (function, 1..4i64).prop_map(|(i, k)| Op::DefineBytes(i, k)),
    ]
}

/// Generated sequences per run: 96, or `OPS_CASES` for a longer search.
fn cases() -> u32 {
    std::env::var("OPS_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn merging_module_accepts_refuses_and_computes_like_a_plain_jit(
        initial in [initial_linkage(), initial_linkage(), initial_linkage(), initial_linkage()],
        ops in proptest::collection::vec(op(), 2..24),
    ) {
        check_both(initial, &ops);
    }
}

/// Generated sequences linked per run (each links four programs): 12, or `OPS_LINKED_CASES`.
fn linked_cases() -> u32 {
    std::env::var("OPS_LINKED_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(12)
}

/// An operation for the linked runs: few kinds of body, so that callers of equal functions
/// merge, and many preemptible declarations after them.
fn linked_op() -> impl Strategy<Value = Op> {
    let function = 0..NAMES;
    let body = prop_oneof![
        3 => Just(Body::Mul(3)),
        3 => (0..3usize).prop_map(|c| Body::Call(c, 5)),
        1 => Just(Body::Factorial),
    ];
    prop_oneof![
        2 => (function.clone(), linkage([1, 1, 6, 1, 1])).prop_map(|(i, l)| Op::Declare(i, l)),
        6 => (function.clone(), body).prop_map(|(i, b)| Op::Define(i, b)),
        1 => (function, 3..4i64).prop_map(|(i, k)| Op::DefineBytes(i, k)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: linked_cases(), ..ProptestConfig::default() })]

    /// The same sequences into objects, linked with strong definitions of every function left
    /// preemptible: what a merge made must survive the link.
    #[test]
    fn merging_module_objects_link_and_run_like_plain_objects(
        initial in [initial_linkage(), initial_linkage(), initial_linkage(), initial_linkage()],
        ops in proptest::collection::vec(linked_op(), 2..16),
    ) {
        check_both_linked(initial, &ops);
    }
}
