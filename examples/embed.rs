//! The smallest embedder: a `MergingModule` in front of an `ObjectModule`, through the crates
//! clif-merge re-exports, built with `default-features = false, features = ["x86_64", "object"]`.
//! `cargo run --example embed -- out.o` writes the object; two equal functions become one body.
use clif_merge::cranelift_codegen::cursor::{Cursor, FuncCursor};
use clif_merge::cranelift_codegen::ir::{AbiParam, Function, InstBuilder, UserFuncName, types};
use clif_merge::cranelift_codegen::{Context, isa, settings};
use clif_merge::cranelift_module::{Linkage, Module, default_libcall_names};
use clif_merge::cranelift_object::{ObjectBuilder, ObjectModule};
use clif_merge::{MergeOptions, MergingModule};

fn main() {
    let flags = settings::Flags::new(settings::builder());
    let isa = isa::lookup_by_name("x86_64")
        .unwrap()
        .finish(flags)
        .unwrap();
    let builder = ObjectBuilder::new(isa, "embed", default_libcall_names()).unwrap();
    let mut module =
        MergingModule::with_options(ObjectModule::new(builder), MergeOptions::default());
    for name in ["times5", "five_times"] {
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let id = module
            .declare_function(name, Linkage::Export, &sig)
            .unwrap();
        let mut func = Function::with_name_signature(UserFuncName::user(0, id.as_u32()), sig);
        let mut pos = FuncCursor::new(&mut func);
        let block = pos.func.dfg.make_block();
        pos.insert_block(block);
        let x = pos.func.dfg.append_block_param(block, types::I64);
        let y = pos.ins().imul_imm_s(x, 5);
        pos.ins().return_(&[y]);
        module
            .define_function(id, &mut Context::for_function(func))
            .unwrap();
    }
    let (object, report) = module.finish().unwrap();
    let bytes = object.finish().emit().unwrap();
    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(path, &bytes).unwrap();
    }
    println!(
        "{} functions merged, {} object bytes",
        report.merged,
        bytes.len()
    );
}
