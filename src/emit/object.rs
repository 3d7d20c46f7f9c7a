//! Relocatable objects: the merged module compiled by cranelift-codegen and written by
//! cranelift-object, with real aliases, minimal thunks, and machine-code folding.
//!
//! Phase 1 of 5: names. Every defined function, alias and import gets a *slot*; each function's
//! external names are rewritten to `u0:<slot>` so that its relocations name slots.
//! Phase 2 of 5: code. A function that only forwards its arguments to a function of the very
//! same signature, with no stack limit and no stack slots (whose prologue does nothing
//! observable), is a *thunk*: its code is one direct jump (`jmp rel32`, 5 bytes, on x86_64; `b`,
//! 4 bytes, on aarch64), with 1- or 4-byte alignment, which is correct for any calling convention
//! because it touches no register and no stack. Every other function is compiled.
//! Phase 3 of 5: folding. Compiled functions whose bytes are identical and whose relocations
//! point to the same targets — targets that are themselves folded counting as the same, refined to
//! a fixed point as for the IR (`merge::refine_classes`) — are folded under the same rules as
//! IR-level merges (`merge::actions::action_for`): removed (relocations retargeted), a thunk or
//! an alias.
//! Phase 4 of 5: the object. Functions are declared and defined in cranelift-object; aliases are
//! declared as imports, so references to them get relocations, and then turned into symbols at
//! their target's section and offset, with the target's size and their own binding.
//! Phase 5 of 5: with `--function-sections` on ELF, an `.llvm_addrsig` section lists the symbols
//! whose address is significant, so that `ld.lld --icf=safe` may fold the others.
//!
//! Aliases on Mach-O are marked `N_ALT_ENTRY`, so that a linker splitting sections at symbols
//! (`.subsections_via_symbols`) keeps an alias inside its target's block.

use crate::compare::{Fingerprint, hash};
use crate::merge::actions::{Action, action_for, is_forwarding_thunk, kept_order};
use crate::merge::{Mode, refine_classes};
use crate::module::{ClifModule, FuncName, FunctionId, SymbolLinkage};
use anyhow::{Context as _, Result, anyhow, bail};
use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{
    ExternalName, Function, GlobalValueData, InstructionData, UserExternalName,
};
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_module::Module as _;
use cranelift_module::{ModuleReloc, ModuleRelocTarget};
use cranelift_object::{ObjectBuilder, ObjectModule};
use object::write::SymbolId;
use object::{SectionKind, SymbolFlags, SymbolKind, SymbolScope};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;
use target_lexicon::{Architecture, BinaryFormat, Triple};

/// The targets objects can be written for.
pub const SUPPORTED_TARGETS: &[&str] = &[
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// Cranelift's optimization level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OptLevel {
    None,
    #[default]
    Speed,
    SpeedAndSize,
}

impl OptLevel {
    fn setting(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }
}

/// How an object is written.
#[derive(Clone, Debug)]
pub struct ObjectOptions {
    pub target: Triple,
    pub opt_level: OptLevel,
    /// One text section per function.
    pub function_sections: bool,
    /// The rules for folded functions, as for IR merges.
    pub mode: Mode,
    /// Fold functions whose machine code is identical (phase 3).
    pub fold_machine_code: bool,
}

/// Parses a target triple and checks that objects can be written for it.
pub fn parse_target(text: &str) -> Result<Triple> {
    if !SUPPORTED_TARGETS.contains(&text) {
        bail!(
            "unsupported target `{text}`; supported targets: {}",
            SUPPORTED_TARGETS.join(", ")
        );
    }
    Triple::from_str(text).map_err(|e| anyhow!("bad target `{text}`: {e}"))
}

/// The host, when it is a supported target.
pub fn host_target() -> Result<Triple> {
    let host = Triple::host();
    let name = match (host.architecture, host.binary_format) {
        (Architecture::X86_64, BinaryFormat::Elf) => SUPPORTED_TARGETS[0],
        (Architecture::Aarch64(_), BinaryFormat::Elf) => SUPPORTED_TARGETS[1],
        (Architecture::X86_64, BinaryFormat::Macho) => SUPPORTED_TARGETS[2],
        (Architecture::Aarch64(_), BinaryFormat::Macho) => SUPPORTED_TARGETS[3],
        _ => bail!(
            "the host {host} is not a supported target; pass --target (one of {})",
            SUPPORTED_TARGETS.join(", ")
        ),
    };
    parse_target(name)
}

/// What the object holds; the `"object"` part of the JSON report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectReport {
    pub target: String,
    pub format: String,
    /// Bytes of all text sections, alignment padding included.
    pub text_bytes: u64,
    /// The same module compiled without merging or folding (`--size-baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bytes_unmerged: Option<u64>,
    /// Functions compiled by Cranelift (not thunks, not folded away).
    pub functions_compiled: usize,
    /// Symbols that are aliases (IR merges and folds).
    pub aliases: usize,
    /// Functions whose code is one jump.
    pub thunks: usize,
    /// Functions of the input with no symbol (IR merges and folds).
    pub removed: usize,
    /// Functions folded because their machine code is identical (also counted above).
    pub folded_machine_code: usize,
    /// Every function name, as in CLIF, to its symbol in the object.
    pub symbols: BTreeMap<String, String>,
}

/// An object file's bytes and what it holds.
pub struct ObjectOutput {
    pub bytes: Vec<u8>,
    pub report: ObjectReport,
}

/// The symbol a function name gets: a testcase name without its `%`, a user name as written
/// (`u0:5`). Mach-O adds its `_` prefix when the object is written.
pub fn symbol_name(name: &FuncName) -> String {
    match name {
        FuncName::Testcase(t) => t.to_string(),
        FuncName::User { namespace, index } => format!("u{namespace}:{index}"),
    }
}

fn build_isa(options: &ObjectOptions) -> Result<OwnedTargetIsa> {
    let mut flags = settings::builder();
    flags.set("opt_level", options.opt_level.setting())?;
    // Position-independent code links into executables and shared objects alike.
    flags.set("is_pic", "true")?;
    // Cranelift's tail calls (`return_call`) rely on frame pointers on x86_64.
    flags.set("preserve_frame_pointers", "true")?;
    let isa = isa::lookup(options.target.clone())
        .map_err(|e| anyhow!("target {}: {e}", options.target))?
        .finish(settings::Flags::new(flags))?;
    Ok(isa)
}

/// What a slot stands for.
#[derive(Clone, Debug)]
enum SlotKind {
    Defined(FunctionId),
    /// An alias: the name of its target.
    Alias(FuncName),
    Import,
}

#[derive(Clone, Debug)]
struct Slot {
    name: FuncName,
    kind: SlotKind,
    linkage: SymbolLinkage,
    signature: cranelift_codegen::ir::Signature,
}

/// Phase 1: the slots, in a deterministic order (defined functions in module order, aliases,
/// then imports in order of first reference).
struct Slots {
    slots: Vec<Slot>,
    index: FxHashMap<FuncName, u32>,
}

impl Slots {
    fn new(module: &ClifModule) -> Slots {
        let mut slots = Slots {
            slots: Vec::new(),
            index: FxHashMap::default(),
        };
        for (i, mf) in module.functions().iter().enumerate() {
            slots.add(Slot {
                name: mf.name.clone(),
                kind: SlotKind::Defined(FunctionId(i as u32)),
                linkage: mf.linkage,
                signature: mf.func.signature.clone(),
            });
        }
        for alias in module.aliases() {
            let signature = module
                .resolve(&alias.target)
                .map(|id| module.function(id).func.signature.clone())
                .unwrap_or_else(|| module.functions()[0].func.signature.clone());
            slots.add(Slot {
                name: alias.name.clone(),
                kind: SlotKind::Alias(alias.target.clone()),
                linkage: alias.linkage,
                signature,
            });
        }
        for mf in module.functions() {
            let func = &mf.func;
            for ext in func.dfg.ext_funcs.values() {
                if let Some(name) = FuncName::of_external(&ext.name, func) {
                    let signature = func.dfg.signatures[ext.signature].clone();
                    slots.add_import(name, signature);
                }
            }
            for gv in func.global_values.values() {
                if let GlobalValueData::Symbol { name, .. } = gv
                    && let Some(name) = FuncName::of_external(name, func)
                {
                    slots.add_import(name, func.signature.clone());
                }
            }
        }
        slots
    }

    fn add(&mut self, slot: Slot) {
        self.index
            .insert(slot.name.clone(), self.slots.len() as u32);
        self.slots.push(slot);
    }

    fn add_import(&mut self, name: FuncName, signature: cranelift_codegen::ir::Signature) {
        if !self.index.contains_key(&name) {
            self.add(Slot {
                name,
                kind: SlotKind::Import,
                linkage: SymbolLinkage::Export,
                signature,
            });
        }
    }

    /// `func` with every function name replaced by `u0:<slot>`.
    fn renamed(&self, func: &Function) -> Function {
        let mut func = func.clone();
        let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
        for r in refs {
            if let Some(name) = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func) {
                func.dfg.ext_funcs[r].name = self.slot_name(&name, &mut func);
            }
        }
        let gvs: Vec<_> = func.global_values.keys().collect();
        for gv in gvs {
            let old = match &func.global_values[gv] {
                GlobalValueData::Symbol { name, .. } => FuncName::of_external(name, &func),
                _ => None,
            };
            if let Some(old) = old {
                let new = self.slot_name(&old, &mut func);
                if let GlobalValueData::Symbol { name, .. } = &mut func.global_values[gv] {
                    *name = new;
                }
            }
        }
        func
    }

    fn slot_name(&self, name: &FuncName, func: &mut Function) -> ExternalName {
        let slot = self.index[name];
        ExternalName::user(func.declare_imported_user_function(UserExternalName::new(0, slot)))
    }
}

/// A relocation whose target is a slot or something outside the module.
#[derive(Clone, Debug)]
struct Relocation {
    offset: u32,
    kind: Reloc,
    addend: i64,
    target: Target,
}

#[derive(Clone, Debug)]
enum Target {
    Slot(u32),
    /// An offset inside the function itself.
    SelfOffset(u32),
    Other(ModuleRelocTarget),
}

/// The code of one defined function.
#[derive(Clone, Debug)]
enum Code {
    /// Compiled by Cranelift.
    Compiled {
        bytes: Vec<u8>,
        alignment: u64,
        relocs: Vec<Relocation>,
    },
    /// One jump to the slot.
    Thunk(u32),
    /// No code: an alias of the slot.
    AliasOf(u32),
    /// No symbol at all.
    Removed,
}

/// Phase 2: compiles (or recognizes as a thunk) every defined function.
fn compile_all(module: &ClifModule, slots: &Slots, isa: &dyn isa::TargetIsa) -> Result<Vec<Code>> {
    let mut ctx = cranelift_codegen::Context::new();
    let mut out = Vec::with_capacity(module.functions().len());
    for mf in module.functions() {
        if let Some(target) = thunk_target(&mf.func) {
            out.push(Code::Thunk(slots.index[&target]));
            continue;
        }
        ctx.clear();
        ctx.func = slots.renamed(&mf.func);
        // Cranelift may panic on input it verified but cannot lower; that is an error about
        // this function, not a crash of the tool.
        let result = crate::guard::catch_panic(|| {
            ctx.compile(isa, &mut ControlPlane::default()).map(|_| ())
        });
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("cannot compile {}: {:?}", describe(mf), e.inner),
            Err(panic) => bail!("cannot compile {}: Cranelift failed: {panic}", describe(mf)),
        }
        let compiled = ctx.compiled_code().expect("compiled above");
        let bytes = compiled.buffer.data().to_vec();
        let alignment = u64::from(compiled.buffer.alignment);
        let mach_relocs = compiled.buffer.relocs().to_vec();
        let relocs = mach_relocs
            .iter()
            .map(|r| {
                let name = ModuleReloc::from_mach_reloc(
                    r,
                    &ctx.func,
                    cranelift_module::FuncId::from_u32(0),
                )
                .name;
                let target = match name {
                    ModuleRelocTarget::User {
                        namespace: 0,
                        index,
                    } => Target::Slot(index),
                    ModuleRelocTarget::FunctionOffset(_, off) => Target::SelfOffset(off),
                    other => Target::Other(other),
                };
                Relocation {
                    offset: r.offset,
                    kind: r.kind,
                    addend: r.addend,
                    target,
                }
            })
            .collect();
        out.push(Code::Compiled {
            bytes,
            alignment,
            relocs,
        });
    }
    Ok(out)
}

fn describe(mf: &crate::module::ModuleFunction) -> String {
    match &mf.origin {
        Some(o) => format!("{} ({}:{})", mf.name, o.file.display(), o.line),
        None => mf.name.to_string(),
    }
}

/// The function a forwarding thunk jumps to, when the callee has exactly `func`'s signature (so
/// that a jump is correct whatever the convention) and nothing the compiled function would do
/// before the call can be observed ([`prologue_is_unobservable`]).
fn thunk_target(func: &Function) -> Option<FuncName> {
    if !is_forwarding_thunk(func) || !prologue_is_unobservable(func) {
        return None;
    }
    let entry = func.layout.entry_block()?;
    let first = func.layout.first_inst(entry)?;
    let InstructionData::Call { func_ref, .. } = func.dfg.insts[first] else {
        return None;
    };
    let ext = &func.dfg.ext_funcs[func_ref];
    // A patchable call site is there to be patched at run time; a jump is not one.
    if ext.patchable || func.dfg.signatures[ext.signature] != func.signature {
        return None;
    }
    // A function forwarding to itself recurses until the stack overflows; a jump to itself
    // would loop instead.
    FuncName::of_external(&ext.name, func).filter(|t| *t != FuncName::of_function(func))
}

/// Whether a jump may stand for `func`'s prologue: it has no stack limit (a function that calls
/// always checks the limit in its prologue, so the check traps where a jump would not) and no
/// stack slots (every declared slot grows the frame, which a guard page or stack probe can
/// observe).
fn prologue_is_unobservable(func: &Function) -> bool {
    func.stack_limit.is_none()
        && func.sized_stack_slots.is_empty()
        && func.dynamic_stack_slots.is_empty()
}

/// Phase 3: folds compiled functions with identical code; returns how many were folded.
fn fold_machine_code(module: &ClifModule, slots: &Slots, code: &mut [Code], mode: Mode) -> usize {
    // A relocation to a defined, non-preemptible function compares its class; the rest compare
    // by identity. Only compiled functions take part (thunks are already minimal); preemptible
    // ones too, since only references to them must be compared by identity.
    let foldable = |slot: u32| -> Option<FunctionId> {
        match slots.slots[slot as usize].kind {
            SlotKind::Defined(id)
                if !module.function(id).linkage.is_preemptible()
                    && matches!(code[id.index()], Code::Compiled { .. }) =>
            {
                Some(id)
            }
            _ => None,
        }
    };
    let fingerprints: Vec<Fingerprint> = code
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            Code::Compiled {
                bytes,
                alignment,
                relocs,
            } => machine_code_fingerprint(bytes, *alignment, relocs, |r, slot| {
                // A call goes to the callee's class; any other reference to a function is its
                // address, which is identity unless merged functions share addresses.
                let by_class = mode == Mode::Aliases || is_direct_call(r.kind);
                foldable(slot).filter(|_| by_class)
            }),
            // Not a candidate: alone in its class.
            _ => Fingerprint::unique(i as u32),
        })
        .collect();
    let hashes: Vec<u64> = fingerprints.iter().map(hash).collect();
    let classes = refine_classes(&fingerprints, &hashes);
    let address_taken = module.address_taken();
    let mut folded = 0;
    let mut retarget: FxHashMap<u32, u32> = FxHashMap::default();
    for members in &classes.classes {
        let mut members = members.clone();
        members.sort_by(|&a, &b| kept_order(module.function(a), module.function(b)));
        let kept = module.function(members[0]);
        let kept_slot = slots.index[&kept.name];
        for &g in &members[1..] {
            let g_fn = module.function(g);
            let action = action_for(mode, g_fn.linkage, address_taken[g.index()]);
            // A jump to a preemptible function may land in another definition; an alias is its
            // section and offset, the body itself, whatever the link does with the symbol.
            if action == Action::Thunk && kept.linkage.is_preemptible() {
                continue;
            }
            folded += 1;
            code[g.index()] = match action {
                Action::Removed => {
                    retarget.insert(slots.index[&g_fn.name], kept_slot);
                    Code::Removed
                }
                Action::Thunk => Code::Thunk(kept_slot),
                Action::Alias => Code::AliasOf(kept_slot),
            };
        }
    }
    // A removed function's callers, and thunks of it, go to the kept one (its code is the same).
    for c in code.iter_mut() {
        match c {
            Code::Compiled { relocs, .. } => {
                for r in relocs {
                    if let Target::Slot(s) = &mut r.target
                        && let Some(&k) = retarget.get(s)
                    {
                        *s = k;
                    }
                }
            }
            Code::Thunk(s) | Code::AliasOf(s) => {
                if let Some(&k) = retarget.get(s) {
                    *s = k;
                }
            }
            Code::Removed => {}
        }
    }
    folded
}

/// Relocations of direct calls and jumps, whose target is only called, never compared.
fn is_direct_call(kind: Reloc) -> bool {
    matches!(
        kind,
        Reloc::X86CallPCRel4 | Reloc::X86CallPLTRel4 | Reloc::Arm64Call
    )
}

/// Compiled code as comparison tokens: alignment, bytes, then each relocation (offset, kind,
/// addend, target). `class_of` says which targets compare by class (then the target's function
/// goes to `class_refs`); the others compare by identity.
fn machine_code_fingerprint(
    bytes: &[u8],
    alignment: u64,
    relocs: &[Relocation],
    class_of: impl Fn(&Relocation, u32) -> Option<FunctionId>,
) -> Fingerprint {
    let mut fp = Fingerprint::default();
    let push_text = |fp: &mut Fingerprint, text: &str| {
        fp.tokens.push(text.len() as u32);
        fp.tokens.extend(text.bytes().map(u32::from));
    };
    fp.tokens.push(alignment as u32);
    fp.tokens.push(bytes.len() as u32);
    fp.tokens.extend(bytes.iter().map(|&b| u32::from(b)));
    fp.tokens.push(relocs.len() as u32);
    for r in relocs {
        fp.tokens.push(r.offset);
        // `Reloc` has no stable number; its name is unique.
        push_text(&mut fp, &format!("{:?}", r.kind));
        fp.tokens.push(r.addend as u32);
        fp.tokens.push((r.addend >> 32) as u32);
        match &r.target {
            Target::Slot(s) => match class_of(r, *s) {
                Some(id) => {
                    fp.tokens.push(1);
                    fp.class_refs.push(id);
                }
                None => {
                    fp.tokens.push(2);
                    fp.tokens.push(*s);
                }
            },
            Target::SelfOffset(off) => {
                fp.tokens.push(3);
                fp.tokens.push(*off);
            }
            Target::Other(other) => {
                fp.tokens.push(4);
                push_text(&mut fp, &format!("{other:?}"));
            }
        }
    }
    fp
}

/// Writes `module` (already merged) as an object. `removed_by_merge` is the number of functions
/// the IR merge removed (for the report).
pub fn write_object(
    module: &ClifModule,
    removed_by_merge: usize,
    options: &ObjectOptions,
) -> Result<ObjectOutput> {
    let isa = build_isa(options)?;
    let format = match options.target.binary_format {
        BinaryFormat::Elf => "elf",
        BinaryFormat::Macho => "macho",
        other => bail!("unsupported object format {other}"),
    };
    // Phases 1 to 3.
    let slots = Slots::new(module);
    let mut code = compile_all(module, &slots, &*isa)?;
    let folded = if options.fold_machine_code {
        fold_machine_code(module, &slots, &mut code, options.mode)
    } else {
        0
    };

    // Phase 4: the object.
    let mut builder = ObjectBuilder::new(
        isa.clone(),
        "clif-merge",
        cranelift_module::default_libcall_names(),
    )
    .map_err(|e| anyhow!("{e}"))?;
    builder.per_function_section(options.function_sections);
    let mut object_module = ObjectModule::new(builder);
    let mut ids: Vec<Option<cranelift_module::FuncId>> = vec![None; slots.slots.len()];
    for (i, slot) in slots.slots.iter().enumerate() {
        let linkage = match (&slot.kind, i.checked_sub(0).map(|_| ())) {
            (SlotKind::Defined(id), _) => match code[id.index()] {
                Code::Removed => continue,
                Code::AliasOf(_) => cranelift_module::Linkage::Import,
                _ => module_linkage(slot.linkage),
            },
            (SlotKind::Alias(_) | SlotKind::Import, _) => cranelift_module::Linkage::Import,
        };
        let id = object_module
            .declare_function(&symbol_name(&slot.name), linkage, &slot.signature)
            .with_context(|| format!("cannot declare {}", slot.name))?;
        ids[i] = Some(id);
    }
    let id_of = |slot: u32| ids[slot as usize].expect("every referenced slot is declared");
    let jump = jump_thunk(&options.target);
    let mut report = ObjectReport {
        target: options.target.to_string(),
        format: format.to_string(),
        removed: removed_by_merge,
        folded_machine_code: folded,
        ..ObjectReport::default()
    };
    for (i, c) in code.iter().enumerate() {
        let slot = slots.index[&module.functions()[i].name];
        match c {
            Code::Compiled {
                bytes,
                alignment,
                relocs,
            } => {
                let relocs: Vec<ModuleReloc> = relocs
                    .iter()
                    .map(|r| ModuleReloc {
                        offset: r.offset,
                        kind: r.kind,
                        addend: r.addend,
                        name: match &r.target {
                            Target::Slot(s) => ModuleRelocTarget::user(0, id_of(*s).as_u32()),
                            Target::SelfOffset(off) => {
                                ModuleRelocTarget::FunctionOffset(id_of(slot), *off)
                            }
                            Target::Other(other) => other.clone(),
                        },
                    })
                    .collect();
                object_module.define_function_bytes(id_of(slot), *alignment, bytes, &relocs)?;
                report.functions_compiled += 1;
            }
            Code::Thunk(target) => {
                let reloc = ModuleReloc {
                    offset: jump.reloc_offset,
                    kind: jump.kind,
                    addend: jump.addend,
                    name: ModuleRelocTarget::user(0, id_of(*target).as_u32()),
                };
                object_module.define_function_bytes(
                    id_of(slot),
                    jump.alignment,
                    jump.bytes,
                    &[reloc],
                )?;
                report.thunks += 1;
            }
            Code::AliasOf(_) => {}
            Code::Removed => report.removed += 1,
        }
    }
    let product = object_module.finish();
    let mut object = product.object;
    let symbol_of = |slot: u32| -> SymbolId { product.functions[id_of(slot)].unwrap().0 };

    // Aliases: from IR merges (alias slots) and from folding.
    for (i, slot) in slots.slots.iter().enumerate() {
        let target = match &slot.kind {
            SlotKind::Alias(target) => slots.index[target],
            SlotKind::Defined(id) => match code[id.index()] {
                Code::AliasOf(t) => t,
                _ => continue,
            },
            SlotKind::Import => continue,
        };
        let target = final_target(&slots, &code, target);
        let (value, size, section) = {
            let t = object.symbol(symbol_of(target));
            (t.value, t.size, t.section)
        };
        let (scope, weak) = symbol_binding(slot.linkage);
        let alias = object.symbol_mut(symbol_of(i as u32));
        alias.value = value;
        alias.size = size;
        alias.kind = SymbolKind::Text;
        alias.section = section;
        alias.scope = scope;
        alias.weak = weak;
        if format == "macho" {
            // Setting the flags replaces the ones the writer derives from `weak`.
            let weak_def = if weak { object::macho::N_WEAK_DEF } else { 0 };
            alias.flags = SymbolFlags::MachO {
                n_desc: object::macho::N_ALT_ENTRY | weak_def,
            };
        }
        report.aliases += 1;
    }

    let prefix = if format == "macho" { "_" } else { "" };
    for slot in &slots.slots {
        let has_symbol = match slot.kind {
            SlotKind::Import => false,
            SlotKind::Defined(id) => !matches!(code[id.index()], Code::Removed),
            SlotKind::Alias(_) => true,
        };
        if has_symbol {
            let symbol = format!("{prefix}{}", symbol_name(&slot.name));
            report.symbols.insert(slot.name.to_string(), symbol);
        }
    }
    let mut bytes = object
        .write()
        .map_err(|e| anyhow!("cannot write the object: {e}"))?;

    // Phase 5: the address-significance table. Symbol indices are known only once written;
    // adding a section adds no symbol, so the indices hold for the second write.
    if options.function_sections && format == "elf" {
        let names: Vec<String> = address_significant(module, &slots)
            .into_iter()
            .filter(|&s| ids[s as usize].is_some())
            .map(|s| symbol_name(&slots.slots[s as usize].name))
            .collect();
        let table = addrsig_table(&bytes, &names)?;
        let section = object.add_section(
            Vec::new(),
            b".llvm_addrsig".to_vec(),
            SectionKind::Elf(SHT_LLVM_ADDRSIG),
        );
        object.section_mut(section).flags = object::SectionFlags::Elf {
            sh_flags: SHF_EXCLUDE,
        };
        object.section_mut(section).set_data(table, 1);
        bytes = object
            .write()
            .map_err(|e| anyhow!("cannot write the object: {e}"))?;
        link_addrsig_to_symtab(&mut bytes)?;
    }
    report.text_bytes = text_bytes(&bytes)?;
    Ok(ObjectOutput { bytes, report })
}

/// The slot with code that `slot` ends at, following aliases (IR aliases of functions that were
/// folded into aliases, for example).
fn final_target(slots: &Slots, code: &[Code], mut slot: u32) -> u32 {
    for _ in 0..=slots.slots.len() {
        let next = match &slots.slots[slot as usize].kind {
            SlotKind::Alias(target) => slots.index[target],
            SlotKind::Defined(id) => match code[id.index()] {
                Code::AliasOf(t) => t,
                _ => return slot,
            },
            SlotKind::Import => return slot,
        };
        slot = next;
    }
    slot
}

fn module_linkage(linkage: SymbolLinkage) -> cranelift_module::Linkage {
    match linkage {
        SymbolLinkage::Export => cranelift_module::Linkage::Export,
        SymbolLinkage::Hidden => cranelift_module::Linkage::Hidden,
        SymbolLinkage::Local => cranelift_module::Linkage::Local,
        SymbolLinkage::Preemptible => cranelift_module::Linkage::Preemptible,
    }
}

/// Binding and visibility as cranelift-object gives them to definitions.
fn symbol_binding(linkage: SymbolLinkage) -> (SymbolScope, bool) {
    match linkage {
        SymbolLinkage::Export => (SymbolScope::Dynamic, false),
        SymbolLinkage::Hidden => (SymbolScope::Linkage, false),
        SymbolLinkage::Local => (SymbolScope::Compilation, false),
        SymbolLinkage::Preemptible => (SymbolScope::Dynamic, true),
    }
}

/// The machine code of a thunk: one direct jump, and its relocation.
struct JumpThunk {
    bytes: &'static [u8],
    alignment: u64,
    reloc_offset: u32,
    kind: Reloc,
    addend: i64,
}

fn jump_thunk(target: &Triple) -> JumpThunk {
    match (target.architecture, target.binary_format) {
        // `jmp rel32`; the displacement is relative to the end of the instruction.
        (Architecture::X86_64, BinaryFormat::Elf) => JumpThunk {
            bytes: &[0xe9, 0, 0, 0, 0],
            alignment: 1,
            reloc_offset: 1,
            kind: Reloc::X86CallPLTRel4,
            addend: -4,
        },
        (Architecture::X86_64, _) => JumpThunk {
            bytes: &[0xe9, 0, 0, 0, 0],
            alignment: 1,
            reloc_offset: 1,
            kind: Reloc::X86CallPCRel4,
            addend: -4,
        },
        // `b imm26`.
        _ => JumpThunk {
            bytes: &[0x00, 0x00, 0x00, 0x14],
            alignment: 4,
            reloc_offset: 0,
            kind: Reloc::Arm64Call,
            addend: 0,
        },
    }
}

/// Slots whose address is significant: named by `func_addr` or a `symbol` global value, or
/// aliased.
fn address_significant(module: &ClifModule, slots: &Slots) -> Vec<u32> {
    let taken = module.address_taken();
    let mut out: Vec<u32> = slots
        .slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| match slot.kind {
            SlotKind::Defined(id) => taken[id.index()],
            _ => false,
        })
        .map(|(i, _)| i as u32)
        .collect();
    for mf in module.functions() {
        for name in crate::module::addresses_named(&mf.func) {
            if let Some(&s) = slots.index.get(&name) {
                out.push(s);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

const SHT_LLVM_ADDRSIG: u32 = 0x6fff_4c03;
const SHF_EXCLUDE: u64 = 0x8000_0000;

/// `.llvm_addrsig`'s contents: the symbol-table indices of `names` in the written ELF object
/// `elf`, as ULEB128.
fn addrsig_table(elf: &[u8], names: &[String]) -> Result<Vec<u8>> {
    use object::{Object as _, ObjectSymbol as _};
    let file = object::File::parse(elf)?;
    let mut index: FxHashMap<&[u8], u64> = FxHashMap::default();
    for symbol in file.symbols() {
        if symbol.is_definition() || symbol.is_undefined() {
            index.insert(symbol.name_bytes()?, symbol.index().0 as u64);
        }
    }
    let mut data = Vec::new();
    for name in names {
        let Some(&mut_index) = index.get(name.as_bytes()) else {
            continue;
        };
        let mut v = mut_index;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                data.push(byte);
                break;
            }
            data.push(byte | 0x80);
        }
    }
    Ok(data)
}

/// The writer leaves `sh_link` of custom sections at 0; an address-significance table must
/// link to the symbol table, or linkers ignore it.
fn link_addrsig_to_symtab(bytes: &mut [u8]) -> Result<()> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{Endianness, Object as _, ObjectSection as _};
    let (addrsig_index, symtab_index, shoff, shentsize) = {
        let file = ElfFile64::<Endianness>::parse(&*bytes)?;
        let addrsig = file
            .section_by_name(".llvm_addrsig")
            .context("the .llvm_addrsig section is missing")?;
        let symtab = file
            .section_by_name(".symtab")
            .context("the symbol table is missing")?;
        let endian = file.endian();
        let header = file.elf_header();
        (
            addrsig.index().0,
            symtab.index().0 as u32,
            header.e_shoff(endian) as usize,
            usize::from(header.e_shentsize(endian)),
        )
    };
    if endian_is_big(bytes) {
        bail!("big-endian ELF is not supported");
    }
    // Elf64_Shdr: sh_name(4) sh_type(4) sh_flags(8) sh_addr(8) sh_offset(8) sh_size(8) sh_link(4)
    let at = shoff + addrsig_index * shentsize + 40;
    bytes[at..at + 4].copy_from_slice(&symtab_index.to_le_bytes());
    Ok(())
}

fn endian_is_big(elf: &[u8]) -> bool {
    elf.get(5) == Some(&2)
}

/// Bytes of all text sections of a written object.
pub fn text_bytes(bytes: &[u8]) -> Result<u64> {
    use object::{Object as _, ObjectSection as _};
    let file = object::File::parse(bytes)?;
    Ok(file
        .sections()
        .filter(|s| s.kind() == SectionKind::Text)
        .map(|s| s.size())
        .sum())
}
