//! A JIT embedder builds functions with cranelift-frontend and defines them through
//! [`clif_merge::MergingModule`] instead of the `JITModule` itself: duplicates become thunks
//! (one jump on x86_64 and aarch64), and every `FuncId` stays callable.
//!
//!     cargo run --example jit

use clif_merge::MergingModule;
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};

type Error = Box<dyn std::error::Error>;

/// Defines `id` as `(x * mul + add)`, then a call of `callee` on the result if there is one.
fn define(
    module: &mut MergingModule<JITModule>,
    id: FuncId,
    mul: i64,
    add: i64,
    callee: Option<FuncId>,
) -> Result<Option<usize>, Error> {
    let mut ctx = module.make_context();
    ctx.func.signature = module
        .declarations()
        .get_function_decl(id)
        .signature
        .clone();
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let callee = callee.map(|c| module.declare_func_in_func(c, &mut ctx.func));
    let config = module.target_config();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let x = b.block_params(entry)[0];
    let t = b.ins().imul_imm_s(x, mul);
    let mut r = b.ins().iadd_imm_s(t, add);
    if let Some(callee) = callee {
        let call = b.ins().call(callee, &[r]);
        r = b.inst_results(call)[0];
    }
    b.ins().return_(&[r]);
    b.finalize(config);
    module.define_function(id, &mut ctx)?;
    // Eager mode: the context holds what was compiled, the body or a thunk; nothing for a thunk
    // defined as one jump.
    Ok(ctx.compiled_code().map(|c| c.code_buffer().len()))
}

fn main() -> Result<(), Error> {
    let mut module = MergingModule::new(JITModule::new(JITBuilder::new(default_libcall_names())?));
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    // (name, mul, add, callee index)
    let functions: [(&str, i64, i64, Option<usize>); 5] = [
        ("triple_plus_one", 3, 1, None),
        ("also_triple_plus_one", 3, 1, None),
        ("double", 2, 0, Some(0)),
        ("double_again", 2, 0, Some(1)),
        ("quadruple", 4, 0, None),
    ];
    let mut ids = Vec::new();
    for (name, ..) in &functions {
        ids.push(module.declare_function(name, Linkage::Export, &sig)?);
    }
    for (&id, &(name, mul, add, callee)) in ids.iter().zip(&functions) {
        match define(&mut module, id, mul, add, callee.map(|c| ids[c]))? {
            Some(bytes) => println!("{name}: {bytes} bytes of code"),
            None => println!("{name}: one jump"),
        }
    }
    let (mut jit, report) = module.finish()?;
    jit.finalize_definitions()?;
    for (&id, (name, ..)) in ids.iter().zip(&functions) {
        // SAFETY: every function has the signature `fn(i64) -> i64` in the host's default
        // calling convention, and the JIT's code is finalized.
        let f: extern "C" fn(i64) -> i64 =
            unsafe { std::mem::transmute(jit.get_finalized_function(id)) };
        println!("{name}(5) = {}", f(5));
    }
    println!("merged: {}", report.merged);
    for class in &report.classes {
        let replaced: Vec<String> = class.replaced.iter().map(|r| r.name.to_string()).collect();
        println!("  {} keeps the body of {}", class.kept, replaced.join(", "));
    }
    Ok(())
}
