//! Writing a module back as CLIF text that cranelift-reader parses and the verifier accepts.
//!
//! The text opens with the `set` lines its functions need to pass the verifier (see
//! [`needed_settings`]), then the directives that carry what CLIF itself cannot say (see
//! `read`): a `; linkage:` line for every function, and an `; alias:` line for every alias,
//! followed by its `; linkage:` line (every symbol's, `export` too: the text reads back the same
//! whatever `--default-linkage` a later run reads it with). The functions follow in
//! module order, printed by Cranelift's own writer, with corrections so that what is written reads
//! back as the same function ([`ExactWriter`]).

use crate::module::ClifModule;
use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::ir::entities::AnyEntity;
use cranelift_codegen::ir::{
    Block, Function, GlobalValueData, Inst, InstructionData, Opcode, SigRef, Value,
};
use cranelift_codegen::packed_option::ReservedValue;
use cranelift_codegen::write::{FuncWriter, PlainWriter, decorate_function};
use std::fmt::{self, Write};

/// The module as CLIF text.
pub fn module_to_clif(module: &ClifModule) -> String {
    let mut out = String::new();
    for setting in needed_settings(module) {
        let _ = writeln!(out, "set {setting}");
    }
    for mf in module.functions() {
        let _ = writeln!(out, "; linkage: {} {}", mf.name, mf.linkage.keyword());
    }
    for alias in module.aliases() {
        let _ = writeln!(out, "; alias: {} = {}", alias.name, alias.target);
        let _ = writeln!(out, "; linkage: {} {}", alias.name, alias.linkage.keyword());
    }
    for mf in module.functions() {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = function_to_clif(&mut out, &mf.func);
    }
    out
}

/// The shared settings without which the verifier refuses some function of `module`, as `set`
/// lines write them: `enable_pinned_reg=true` for `get_pinned_reg` and `set_pinned_reg`,
/// `preserve_frame_pointers=true` for `get_frame_pointer` and `get_return_address`. A module
/// read from CLIF held them valid for its target, so they are true there; both only allow more.
pub fn needed_settings(module: &ClifModule) -> Vec<&'static str> {
    let (mut pinned, mut frame) = (false, false);
    for mf in module.functions() {
        let func = &mf.func;
        for block in func.layout.blocks() {
            for inst in func.layout.block_insts(block) {
                match func.dfg.insts[inst].opcode() {
                    Opcode::GetPinnedReg | Opcode::SetPinnedReg => pinned = true,
                    Opcode::GetFramePointer | Opcode::GetReturnAddress => frame = true,
                    _ => {}
                }
            }
        }
    }
    let mut settings = Vec::new();
    if pinned {
        settings.push("enable_pinned_reg=true");
    }
    if frame {
        settings.push("preserve_frame_pointers=true");
    }
    settings
}

/// One function as CLIF text.
pub fn function_to_clif(out: &mut String, func: &Function) -> fmt::Result {
    decorate_function(&mut ExactWriter, out, func)
}

/// Cranelift's plain writer, with two corrections to instructions:
/// - it also writes the memory flags of `atomic_rmw` and `atomic_cas`, which cranelift 0.135's
///   writer leaves out although its reader accepts them (`v2 = atomic_rmw.i32 little add v0,
///   v1`): without them, a function read back would lose its endianness, trap code or alias
///   region;
/// - it names a dynamic vector type in a type suffix by the dynamic type that declares it
///   (`splat.dt0 v0`), the only spelling the reader has for it; Cranelift's writer prints the
///   type itself (`splat.types::I32x4xN v0`), which no reader reads.
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
        spell_dynamic_type_suffix(&mut text, func, inst);
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

    /// Cranelift's preamble, with two corrections: a `symbol` global value names a user name
    /// as `u1:2` (Cranelift's writer has no access to the function's names there and writes
    /// `userextname0`, which reads back as another name or none), and dynamic types
    /// (`dt0 = i32x4*gv1`), which Cranelift's writer leaves out, are written after the global
    /// values they scale by and before the dynamic stack slots that use them.
    fn write_preamble(&mut self, w: &mut dyn Write, func: &Function) -> Result<bool, fmt::Error> {
        let mut any = false;
        for (ss, slot) in func.sized_stack_slots.iter() {
            any = true;
            self.write_entity_definition(w, func, ss.into(), slot)?;
        }
        for (region, data) in func.dfg.alias_regions.iter() {
            any = true;
            let text = format_args!("{} \"{}\"", data.user_id, data.description);
            self.write_entity_definition(w, func, region.into(), &text)?;
        }
        for (gv, data) in func.global_values.iter() {
            any = true;
            let text = global_value_text(func, data);
            self.write_entity_definition(w, func, gv.into(), &text)?;
        }
        for (dt, data) in func.dfg.dynamic_types.iter() {
            any = true;
            let text = format_args!("{}*{}", data.base_vector_ty, data.dynamic_scale);
            self.write_entity_definition(w, func, dt.into(), &text)?;
        }
        for (dss, slot) in func.dynamic_stack_slots.iter() {
            any = true;
            self.write_entity_definition(w, func, dss.into(), slot)?;
        }
        for (sig, data) in func.dfg.signatures.iter() {
            any = true;
            self.write_entity_definition(w, func, sig.into(), data)?;
        }
        for (fref, ext) in func.dfg.ext_funcs.iter() {
            if ext.signature != SigRef::reserved_value() {
                any = true;
                let text = ext.display(Some(&func.params));
                self.write_entity_definition(w, func, fref.into(), &text)?;
            }
        }
        for (&constant, value) in func.dfg.constants.iter() {
            any = true;
            self.write_entity_definition(w, func, constant.into(), value)?;
        }
        if let Some(limit) = func.stack_limit {
            any = true;
            self.write_entity_definition(w, func, AnyEntity::StackLimit, &limit)?;
        }
        Ok(any)
    }
}

/// Replaces a dynamic vector type written as `inst`'s type suffix with the first dynamic type
/// that declares it. Every function the reader makes declares the dynamic types it uses; a
/// function built through Cranelift's API may use one that no `dtN` declares, and then keeps
/// Cranelift's spelling, which the reader refuses rather than misreads.
fn spell_dynamic_type_suffix(text: &mut String, func: &Function, inst: Inst) {
    let ty = func.dfg.ctrl_typevar(inst);
    if !ty.is_dynamic_vector() {
        return;
    }
    let Some(dt) = func
        .dfg
        .dynamic_types
        .iter()
        .find(|(_, data)| data.concrete() == Some(ty))
        .map(|(dt, _)| dt)
    else {
        return;
    };
    let written = format!("{}.{ty}", func.dfg.insts[inst].opcode());
    if let Some(start) = text.find(&written) {
        let suffix = start + written.len() - ty.to_string().len();
        text.replace_range(suffix..start + written.len(), &dt.to_string());
    }
}

/// A global value's definition as the reader reads it, user names included.
fn global_value_text(func: &Function, data: &GlobalValueData) -> String {
    let GlobalValueData::Symbol {
        name,
        offset,
        colocated,
        tls,
    } = data
    else {
        return data.display(&func.dfg.mem_flags).to_string();
    };
    let mut text = format!(
        "symbol {}{}{}",
        if *colocated { "colocated " } else { "" },
        if *tls { "tls " } else { "" },
        name.display(Some(&func.params))
    );
    let offset_value: i64 = (*offset).into();
    if offset_value > 0 {
        text.push('+');
    }
    if offset_value != 0 {
        let _ = write!(text, "{offset}");
    }
    text
}
