//! hostile16: `MergingModule` after a definition Cranelift refuses past its verifier (an
//! `i128` division x86_64 cannot lower): what each mode refuses, when, what it leaves defined,
//! and that what it defines afterwards runs right (over a JIT, every `FuncId` called).

#![cfg(target_arch = "x86_64")]

use clif_merge::MergingModule;
use clif_merge::merging_module::FinishError;
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, Value, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, ModuleResult, default_libcall_names};

fn jit() -> JITModule {
    JITModule::new(JITBuilder::new(default_libcall_names()).expect("a host JIT"))
}

fn declare(module: &mut impl Module, name: &str) -> FuncId {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    module
        .declare_function(name, Linkage::Export, &sig)
        .unwrap()
}

/// Defines `id` as one block returning `body(builder, parameter)`; the result of
/// `define_function`.
// The error is the `Module` trait's own, returned as is.
#[allow(clippy::result_large_err)]
fn try_define(
    module: &mut impl Module,
    id: FuncId,
    body: impl FnOnce(&mut FunctionBuilder, Value) -> Value,
) -> ModuleResult<()> {
    let mut ctx = module.make_context();
    ctx.func.signature = (module.declarations().get_function_decl(id).signature).clone();
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let x = b.block_params(entry)[0];
        let r = body(&mut b, x);
        b.ins().return_(&[r]);
        b.finalize(module.target_config());
    }
    module.define_function(id, &mut ctx)
}

/// `x * k + 1`.
fn mul(k: i64) -> impl FnOnce(&mut FunctionBuilder, Value) -> Value {
    move |b, x| {
        let t = b.ins().imul_imm_s(x, k);
        b.ins().iadd_imm_s(t, 1)
    }
}

/// `x / x` in 128 bits: valid CLIF, which Cranelift's x86_64 backend cannot lower.
fn wide_division(b: &mut FunctionBuilder, x: Value) -> Value {
    let wide = b.ins().uextend(types::I128, x);
    let q = b.ins().udiv(wide, wide);
    b.ins().ireduce(types::I32, q)
}

fn call(jit: &JITModule, id: FuncId, x: i32) -> i32 {
    let ptr = jit.get_finalized_function(id);
    // SAFETY: every function here is `fn(i32) -> i32` in the host's default convention.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(ptr) };
    f(x)
}

/// Eager mode: the refused body is refused at once and not recorded; the same id then takes
/// another body, and a later body equal to the refused one is refused too (it is no thunk of
/// it), while one equal to an accepted body becomes its thunk and runs.
#[test]
fn eager_a_body_cranelift_refuses_is_refused_at_once_and_the_id_stays_definable() {
    let mut module = MergingModule::new(jit());
    let [a, d, e, b] = ["a", "d", "e", "b"].map(|n| declare(&mut module, n));
    try_define(&mut module, a, mul(3)).unwrap();
    assert!(try_define(&mut module, d, wide_division).is_err());
    assert!(try_define(&mut module, e, wide_division).is_err());
    try_define(&mut module, d, mul(5)).unwrap();
    try_define(&mut module, e, mul(5)).unwrap();
    try_define(&mut module, b, mul(3)).unwrap();
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 2, "{report:?}");
    assert_eq!([a, b, d, e].map(|f| call(&jit, f, 4)), [13, 13, 21, 21]);
}

/// Deferred mode: the refused body passes the checks at definition and fails at `try_finish`,
/// naming it; the functions held after it are listed undefined with it, and those before are
/// defined and run (a thunk of an earlier body among them). The embedder defines the rest in
/// the inner module it got back, and everything runs.
#[test]
fn deferred_a_body_cranelift_refuses_fails_at_finish_and_the_module_is_usable() {
    let mut module = MergingModule::deferred(jit());
    let [a, b, d, e] = ["a", "b", "d", "e"].map(|n| declare(&mut module, n));
    try_define(&mut module, a, mul(3)).unwrap();
    try_define(&mut module, b, mul(3)).unwrap();
    try_define(&mut module, d, wide_division).unwrap();
    try_define(&mut module, e, mul(3)).unwrap();
    let failure = match module.try_finish() {
        Ok(_) => panic!("x86_64 cannot lower an i128 division"),
        Err(failure) => failure,
    };
    assert!(
        matches!(&failure.error, FinishError::Define { function, .. } if function == "d"),
        "{}",
        failure.error
    );
    assert_eq!(failure.undefined, [d, e]);
    let mut jit = failure.module;
    try_define(&mut jit, d, mul(5)).unwrap();
    try_define(&mut jit, e, mul(7)).unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!([a, b, d, e].map(|f| call(&jit, f, 4)), [13, 13, 21, 29]);
}

/// The refused body's twin is held after it: the merge makes it a thunk of the refused one,
/// and both are listed undefined (neither is defined as a jump to a function that is not).
#[test]
fn deferred_a_thunk_of_a_refused_body_is_not_left_defined() {
    let mut module = MergingModule::deferred(jit());
    let [a, d, d2] = ["a", "d", "d2"].map(|n| declare(&mut module, n));
    try_define(&mut module, a, mul(3)).unwrap();
    try_define(&mut module, d, wide_division).unwrap();
    try_define(&mut module, d2, wide_division).unwrap();
    let failure = match module.try_finish() {
        Ok(_) => panic!("x86_64 cannot lower an i128 division"),
        Err(failure) => failure,
    };
    assert_eq!(failure.undefined, [d, d2], "{}", failure.error);
    let mut jit = failure.module;
    try_define(&mut jit, d, mul(5)).unwrap();
    try_define(&mut jit, d2, mul(7)).unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!([a, d, d2].map(|f| call(&jit, f, 4)), [13, 21, 29]);
}

/// `x / x` in 128 bits plus `k`.
fn wide_division_plus(k: i64) -> impl FnOnce(&mut FunctionBuilder, Value) -> Value {
    move |b, x| {
        let q = wide_division(b, x);
        let t = b.ins().imul(q, x);
        b.ins().iadd_imm_s(t, k)
    }
}

/// Declares `name` of `(i32) -> i32` with `linkage`.
fn declare_as(module: &mut impl Module, name: &str, linkage: Linkage) -> FuncId {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    module.declare_function(name, linkage, &sig).unwrap()
}

/// The error of `try_finish`, which must fail.
fn finish_error<M: Module>(module: MergingModule<M>) -> String {
    match module.try_finish() {
        Ok(_) => panic!("x86_64 cannot lower an i128 division"),
        Err(failure) => failure.error.to_string(),
    }
}

/// A body the merge defines as an anonymous function of the inner module (here the private copy
/// of two preemptible twins; below a similar group's shared body) that Cranelift refuses: the error names
/// the anonymous function (`defining .Lfn2: ...`), a name the embedder never gave, rather than
/// a function the body was made from (`pa`, `sa`), as `clif-merge -o` names the same copy
/// (`cannot compile %pa_merged (pc.clif:3)`) and global merging's shared bodies now are
/// (hostile15).
#[test]
fn a_private_copy_cranelift_refuses_is_named_by_a_function_it_was_made_from() {
    let mut module = MergingModule::deferred(jit());
    let [pa, pb] = ["pa", "pb"].map(|n| declare_as(&mut module, n, Linkage::Preemptible));
    try_define(&mut module, pa, wide_division).unwrap();
    try_define(&mut module, pb, wide_division).unwrap();
    let error = finish_error(module);
    assert!(error.contains("pa"), "{error}");
}

/// The same for a similar group's shared body (members differing in a constant).
#[test]
fn a_shared_body_cranelift_refuses_is_named_by_a_member() {
    let forced = clif_merge::SimilarOptions {
        min_saving: i64::MIN / 2,
        ..clif_merge::SimilarOptions::default()
    };
    let options = clif_merge::MergeOptions {
        similar: Some(forced),
        ..clif_merge::MergeOptions::default()
    };
    let mut module = MergingModule::with_options(jit(), options);
    let [sa, sb] = ["sa", "sb"].map(|n| declare_as(&mut module, n, Linkage::Export));
    try_define(&mut module, sa, wide_division_plus(3)).unwrap();
    try_define(&mut module, sb, wide_division_plus(5)).unwrap();
    let error = finish_error(module);
    assert!(error.contains("sa"), "{error}");
}
