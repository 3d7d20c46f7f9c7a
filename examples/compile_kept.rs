//! An embedder that compiles every function itself (as wasmtime does) asks clif-merge which
//! functions to compile, and compiles only those: the others are aliases of, or were removed in
//! favour of, a function that is compiled.
//!
//!     cargo run --example compile_kept [FILE.clif]
//!
//! Reads `examples/basic.clif` by default; every function is `local` unless exported by name
//! below, as a compiler's internal functions would be.

use clif_merge::batch::{Body, Decision, Entry, merge_functions};
use clif_merge::{Mode, SymbolLinkage};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::settings::{self, Configurable};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "examples/basic.clif".to_string());
    let functions: Vec<Function> =
        cranelift_reader::parse_functions(&std::fs::read_to_string(&path)?)?;
    // The embedder's keys: here, indices into its own list.
    let entries: Vec<Entry<'_, usize>> = functions
        .iter()
        .enumerate()
        .map(|(key, func)| Entry {
            key,
            func,
            linkage: if func.name.to_string() == "%caller1" {
                SymbolLinkage::Export
            } else {
                SymbolLinkage::Local
            },
        })
        .collect();
    let merged = merge_functions(&entries, Mode::Safe)?;

    let mut flags = settings::builder();
    flags.set("opt_level", "speed")?;
    let isa = cranelift_native::builder()?.finish(settings::Flags::new(flags))?;
    let mut ctx = cranelift_codegen::Context::new();
    let mut compiled = 0;
    let mut bytes = 0;
    let mut compile = |func: &Function| -> Result<(), Box<dyn std::error::Error>> {
        ctx.clear();
        ctx.func = func.clone();
        let code = ctx
            .compile(&*isa, &mut ControlPlane::default())
            .map_err(|e| format!("{:?}", e.inner))?;
        compiled += 1;
        bytes += code.code_buffer().len();
        Ok(())
    };
    for (key, decision) in &merged.decisions {
        let name = &functions[*key].name;
        match decision {
            Decision::Compile(func) => {
                compile(func)?;
                println!("{name}: compiled");
            }
            Decision::AliasOf(body) => {
                println!("{name}: an alias of {}", describe(body, &functions))
            }
            Decision::Removed(body) => println!(
                "{name}: removed, its callers call {}",
                describe(body, &functions)
            ),
        }
    }
    for copy in &merged.private_copies {
        compile(copy)?;
        println!("{}: compiled (a private copy)", copy.name);
    }
    println!(
        "{} functions, {compiled} compiled ({bytes} bytes of code), {} merged",
        functions.len(),
        merged.report.merged
    );
    Ok(())
}

fn describe(body: &Body<usize>, functions: &[Function]) -> String {
    match body {
        Body::Entry(key) => functions[*key].name.to_string(),
        Body::PrivateCopy(i) => format!("private copy {i}"),
    }
}
