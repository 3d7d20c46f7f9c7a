//! Writing a module back as CLIF text that cranelift-reader parses and the verifier accepts.
//!
//! The text opens with the directives that carry what CLIF itself cannot say (see `read`): a
//! `; linkage:` line for every symbol whose linkage is not `export`, and an `; alias:` line for
//! every alias, followed by `; linkage:` for the alias when needed. The functions follow in
//! module order, printed by Cranelift's own writer, with one correction ([`ExactWriter`]).

use crate::module::{Linkage, Module};
use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::ir::{Block, Function, Inst, InstructionData, Value};
use cranelift_codegen::write::{FuncWriter, PlainWriter, decorate_function};
use std::fmt::{self, Write};

/// The module as CLIF text.
pub fn module_to_clif(module: &Module) -> String {
    let mut out = String::new();
    for mf in module.functions() {
        if mf.linkage != Linkage::Export {
            let _ = writeln!(out, "; linkage: {} {}", mf.name, mf.linkage.keyword());
        }
    }
    for alias in module.aliases() {
        let _ = writeln!(out, "; alias: {} = {}", alias.name, alias.target);
        if alias.linkage != Linkage::Export {
            let _ = writeln!(out, "; linkage: {} {}", alias.name, alias.linkage.keyword());
        }
    }
    for mf in module.functions() {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = function_to_clif(&mut out, &mf.func);
    }
    out
}

/// One function as CLIF text.
pub fn function_to_clif(out: &mut String, func: &Function) -> fmt::Result {
    decorate_function(&mut ExactWriter, out, func)
}

/// Cranelift's plain writer, except that it also writes the memory flags of `atomic_rmw` and
/// `atomic_cas`, which cranelift 0.135's writer leaves out although its reader accepts them
/// (`v2 = atomic_rmw.i32 little add v0, v1`): without them, a function read back would lose
/// its endianness, trap code or alias region.
pub struct ExactWriter;

impl FuncWriter for ExactWriter {
    fn write_instruction(
        &mut self,
        w: &mut dyn Write,
        func: &Function,
        aliases: &SecondaryMap<Value, Vec<Value>>,
        inst: Inst,
        indent: usize,
    ) -> fmt::Result {
        let mut text = String::new();
        PlainWriter.write_instruction(&mut text, func, aliases, inst, indent)?;
        if let InstructionData::AtomicRmw { opcode, flags, .. }
        | InstructionData::AtomicCas { opcode, flags, .. } = func.dfg.insts[inst]
        {
            let flags = func.dfg.mem_flags[flags].to_string();
            let name = opcode.to_string();
            // The flags go right after the opcode and its type suffix.
            if let Some(start) = text.find(&format!(" {name}")) {
                let after = start + 1 + name.len();
                let end = text[after..].find(' ').map_or(text.len(), |e| after + e);
                text.insert_str(end, &flags);
            }
        }
        w.write_str(&text)
    }

    fn write_block_header(
        &mut self,
        w: &mut dyn Write,
        func: &Function,
        block: Block,
        indent: usize,
    ) -> fmt::Result {
        PlainWriter.write_block_header(w, func, block, indent)
    }
}
