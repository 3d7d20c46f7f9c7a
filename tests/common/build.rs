//! Defining a function of a cranelift-module `Module` with cranelift-frontend, as embedders do:
//! the set-up the `MergingModule` tests share; what the body computes is each test's own.

use cranelift_codegen::Context;
use cranelift_codegen::ir::{FuncRef, InstBuilder, UserFuncName, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Module};

/// What a body calls to use a function of the module: its `FuncRef` in the body.
pub type Import<'a> = dyn FnMut(FuncId, &mut FunctionBuilder) -> FuncRef + 'a;

/// Builds `id`'s body, one block returning `body(builder, import, parameters)`, with `id`'s
/// declared signature, and defines it; returns the context after `define_function`.
pub fn build(
    module: &mut impl Module,
    id: FuncId,
    body: impl FnOnce(&mut FunctionBuilder, &mut Import, &[Value]) -> Value,
) -> Context {
    let mut ctx = module.make_context();
    ctx.func.signature = module
        .declarations()
        .get_function_decl(id)
        .signature
        .clone();
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let config = module.target_config();
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry).to_vec();
        let mut import =
            |callee: FuncId, b: &mut FunctionBuilder| module.declare_func_in_func(callee, b.func);
        let r = body(&mut b, &mut import, &params);
        b.ins().return_(&[r]);
        b.finalize(config);
    }
    module.define_function(id, &mut ctx).unwrap();
    ctx
}
