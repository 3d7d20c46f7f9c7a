//! The smallest embedder: a `MergingModule` in front of an x86_64 `ObjectModule`, through the
//! crates clif-merge re-exports, built with `default-features = false, features = ["x86_64",
//! "object"]`. `cargo run --example embed` writes `answer.o`, in which `answer_b` is a thunk of
//! `answer_a`: two equal functions, one body. (The README's library snippet.)
use clif_merge::cranelift_codegen::cursor::{Cursor, FuncCursor};
use clif_merge::cranelift_codegen::ir::{AbiParam, InstBuilder, types::I64};
use clif_merge::cranelift_module::{Linkage, Module};
use clif_merge::{MergeOptions, MergingModule};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut module = MergingModule::for_object("x86_64", "answer", MergeOptions::default())?;
    for name in ["answer_a", "answer_b"] {
        let mut ctx = module.make_context();
        ctx.func.signature.returns.push(AbiParam::new(I64));
        let id = module.declare_function(name, Linkage::Export, &ctx.func.signature)?;
        let mut pos = FuncCursor::new(&mut ctx.func);
        let block = pos.func.dfg.make_block();
        pos.insert_block(block);
        let answer = pos.ins().iconst(I64, 42);
        pos.ins().return_(&[answer]);
        module.define_function(id, &mut ctx)?;
    }
    let (object, report) = module.finish()?;
    println!("{} of 2 functions merged", report.merged);
    Ok(std::fs::write("answer.o", object.finish().emit()?)?)
}
