//! An AOT embedder builds functions with cranelift-frontend and defines them through
//! [`clif_merge::MergingModule::deferred_similar`] instead of the `ObjectModule` itself: at
//! `finish`, equal functions are merged (recursion included) and functions that differ only in
//! constants share one body; then the object is written as usual.
//!
//!     cargo run --example object [OUT.o]
//!
//! (Default output: `target/merged-example.o`; `nm` shows what is in it.)

use clif_merge::{MergeOptions, MergingModule, SimilarOptions};
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};

type Error = Box<dyn std::error::Error>;

/// A function to define: its name, linkage, constants (mul, add, mask) and callee's index.
type Spec = (&'static str, Linkage, (i64, i64, i64), Option<usize>);

/// Defines `id` as `((x * mul + add) ^ mask) rotl 7`, then a call of `callee` on the result if
/// there is one.
fn define(
    module: &mut MergingModule<ObjectModule>,
    id: FuncId,
    (mul, add, mask): (i64, i64, i64),
    callee: Option<FuncId>,
) -> Result<(), Error> {
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
    let t = b.ins().iadd_imm_s(t, add);
    let t = b.ins().bxor_imm_s(t, mask);
    let mut r = b.ins().rotl_imm_s(t, 7);
    if let Some(callee) = callee {
        let call = b.ins().call(callee, &[r]);
        r = b.inst_results(call)[0];
    }
    b.ins().return_(&[r]);
    b.finalize(config);
    // Deferred: the body is kept; it is compiled at `finish`.
    module.define_function(id, &mut ctx)?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/merged-example.o".into());
    let mut flags = settings::builder();
    flags.set("is_pic", "true")?;
    let isa = cranelift_native::builder()?.finish(settings::Flags::new(flags))?;
    let builder = ObjectBuilder::new(isa, "merged_example", default_libcall_names())?;
    let options = MergeOptions {
        similar: Some(SimilarOptions::default()),
        ..MergeOptions::default()
    };
    let mut module = MergingModule::with_options(ObjectModule::new(builder), options);

    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    // (name, linkage, constants, callee index): two equal functions, a family that differs in
    // its constants (one of them local, called by `entry`), and a caller.
    let functions: [Spec; 6] = [
        ("hash_a", Linkage::Export, (31, 7, 0x5555), None),
        ("hash_a_again", Linkage::Export, (31, 7, 0x5555), None),
        ("hash_b", Linkage::Export, (37, 11, 0x3333), None),
        ("hash_c", Linkage::Export, (41, 13, 0x0f0f), None),
        ("hash_local", Linkage::Local, (43, 17, 0x00ff), None),
        ("entry", Linkage::Export, (1, 0, 0), Some(4)),
    ];
    let mut ids: Vec<FuncId> = Vec::new();
    for (name, linkage, ..) in &functions {
        ids.push(module.declare_function(name, *linkage, &sig)?);
    }
    for (i, (_, _, constants, callee)) in functions.iter().enumerate() {
        define(&mut module, ids[i], *constants, callee.map(|c| ids[c]))?;
    }

    let (inner, report) = module.finish()?;
    let bytes = inner.finish().emit()?;
    std::fs::write(&out, &bytes)?;
    println!(
        "{} functions, {} merged; {} bytes of object in {out}",
        report.functions,
        report.merged,
        bytes.len()
    );
    for class in &report.classes {
        for r in &class.replaced {
            println!("  {} -> {} ({})", r.name, class.kept, r.by.keyword());
        }
    }
    for group in report.similar.iter().flatten() {
        let members: Vec<String> = group
            .members
            .iter()
            .map(|m| format!("{} ({})", m.name, m.by.keyword()))
            .collect();
        println!(
            "  shared body with {} parameters: {}",
            group.parameters,
            members.join(", ")
        );
    }
    Ok(())
}
