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
//! a fixed point as for the IR — are folded as `crate::fold` decides, under the IR merge's policy:
//! removed (relocations retargeted), a thunk or an alias. This module only writes what it is told.
//! Phase 4 of 5: the object. Functions are declared and defined in cranelift-object; aliases are
//! declared as imports, so references to them get relocations, and then turned into symbols at
//! their target's section and offset, with the target's size and their own binding.
//! Phase 5 of 5: with `--function-sections` on ELF, an `.llvm_addrsig` section lists the symbols
//! whose address is significant, so that `ld.lld --icf=safe` may fold the others.
//!
//! Aliases on Mach-O are marked `N_ALT_ENTRY`, so that a linker splitting sections at symbols
//! (`.subsections_via_symbols`) keeps an alias inside its target's block.

//!
//! | file | phase |
//! |---|---|
//! | `slots.rs` | 1: names |
//! | `code.rs` | 2: compiled code and jump thunks |
//! | `folding.rs` | 3: applies `crate::fold`'s decisions to the code |
//! | `forms.rs` | what each function became, with its bytes (for `crate::sizes`) |
//! | `define.rs` | 4: declares and defines functions in cranelift-object |
//! | `symbols.rs` | 4: alias symbols, the report's symbol map |
//! | `addrsig.rs` | 5: the address-significance table |
//! | `supported.rs` | the targets objects can be written for |
//! | `target.rs` | targets, [`ObjectOptions`], ISA flags, the jump thunk's bytes |
//! | `error.rs` | [`ObjectError`] |

mod addrsig;
mod code;
pub use code::CodeCache;
mod define;
mod error;
mod folding;
mod forms;
mod linkonce;
mod relax;
mod slots;
mod supported;
mod symbols;
mod target;

use crate::module::{ClifModule, SymbolLinkage};
use crate::refs::ModuleRefs;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_object::{ObjectBuilder, ObjectModule};
use object::SectionKind;
use serde::Serialize;
use std::collections::BTreeMap;
use target_lexicon::BinaryFormat;

pub use error::ObjectError;
pub use forms::{CodeForm, FunctionCode};
pub use slots::symbol_name;
pub use supported::{SUPPORTED_TARGETS, TARGET_SHORT_NAMES};
pub use target::{IsaSettings, ObjectOptions, OptLevel, host_target, parse_target};

/// What the object holds; the `"object"` part of the JSON report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectReport {
    /// The target triple.
    pub target: String,
    /// `elf` or `macho`.
    pub format: String,
    /// Bytes of all text sections, alignment padding included.
    pub text_bytes: u64,
    /// The same module compiled without merging or folding (`--size-baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bytes_unmerged: Option<u64>,
    /// Bytes of the similar groups' read-only records of constants, each padded to 8 (read-only
    /// data, not text: what `--similar` added outside `text_bytes`); absent when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub record_bytes: u64,
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
    /// With the size baseline: where the bytes went, measured against the unmerged object
    /// ([`crate::sizes`]). In JSON: `saved_by_kind` here and `saved_bytes` in each class,
    /// similar group and shared body ([`crate::report::to_json`]).
    #[serde(skip)]
    pub sizes: Option<crate::sizes::SizeAttribution>,
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

/// An object file's bytes and what it holds.
#[derive(Clone, Debug)]
pub struct ObjectOutput {
    /// The object file.
    pub bytes: Vec<u8>,
    /// What it holds.
    pub report: ObjectReport,
    /// Every defined function, in module order, with what it became.
    pub functions: Vec<FunctionCode>,
}

/// For each function of `module`, the class of functions whose code [`write_object`] with
/// `options` compiles alike (could fold into one body, in any mode), or None where it writes no
/// code of its own (a jump thunk); a function `cache` holds takes its code from there: what a
/// judge of sizes needs to know of the code folding removes anyway
/// ([`crate::similar::SizeJudge::with_folding`]).
pub fn equal_code_classes(
    module: &ClifModule,
    options: &ObjectOptions,
    cache: &CodeCache,
) -> Result<crate::similar::CodeClasses, ObjectError> {
    let isa = target::build_isa(options)?;
    let slots = slots::Slots::new(module, &[], &target::build_identity(&*isa));
    let code = code::compile_all(module, &slots, &*isa, Some(cache))?;
    Ok(folding::code_classes(module, &slots, &code))
}

/// Writes `module` (already merged) as an object. `removed_by_merge` is the number of functions
/// the IR merge removed (for the report).
pub fn write_object(
    module: &ClifModule,
    removed_by_merge: usize,
    options: &ObjectOptions,
) -> Result<ObjectOutput, ObjectError> {
    write_object_with_records(module, removed_by_merge, options, &[])
}

/// [`write_object`] of a module whose similar groups pass read-only records of constants
/// (`SimilarGroup::records`, with [`crate::similar::SimilarOptions::records`]): each record is
/// a local data object of the object's read-only data, which the thunks and callers that pass
/// it name by a `symbol` global value.
pub fn write_object_with_records(
    module: &ClifModule,
    removed_by_merge: usize,
    options: &ObjectOptions,
    records: &[crate::similar::ConstantRecord],
) -> Result<ObjectOutput, ObjectError> {
    write_object_using(module, removed_by_merge, options, records, None)
}

/// [`write_object_with_records`], taking the code of each function `cache` holds from it (the
/// code a judge of similar groups compiled for the module before).
pub(crate) fn write_object_using(
    module: &ClifModule,
    removed_by_merge: usize,
    options: &ObjectOptions,
    records: &[crate::similar::ConstantRecord],
    cache: Option<&CodeCache>,
) -> Result<ObjectOutput, ObjectError> {
    linkonce::check_no_alias_of_linkonce(module)?;
    let isa = target::build_isa(options)?;
    let macho = match options.target.binary_format {
        BinaryFormat::Elf => false,
        BinaryFormat::Macho => true,
        other => {
            return Err(ObjectError::Isa(format!(
                "unsupported object format {other}"
            )));
        }
    };
    // Phases 1 to 3.
    let slots = slots::Slots::new(module, records, &target::build_identity(&*isa));
    let refs = ModuleRefs::of(module);
    let mut code = code::compile_all(module, &slots, &*isa, cache)?;
    let folds = if options.fold_machine_code {
        folding::fold_machine_code(module, &refs, &slots, &mut code, options.mode)
    } else {
        Vec::new()
    };

    // Phase 4: the object.
    let mut builder = ObjectBuilder::new(
        isa.clone(),
        "clif-merge",
        cranelift_module::default_libcall_names(),
    )?;
    // A function the linker may drop must be alone in its section (`linkonce.rs`).
    let linkonce = linkonce::has_linkonce(module);
    builder.per_function_section(options.function_sections || (linkonce && !macho));
    let mut object_module = ObjectModule::new(builder);
    let ids = define::declare(&mut object_module, &slots, &code)?;
    let id_of = |slot: u32| ids[slot as usize].expect("every referenced slot is declared");
    let jump = target::jump_thunk(&options.target, isa.is_branch_protection_enabled());
    let record_ids = define::define_records(&mut object_module, &slots, records)?;
    let defined = define::define(
        &mut object_module,
        module,
        &slots,
        &code,
        (id_of, &record_ids),
        &jump,
    )?;
    let product = object_module.finish();
    let mut object = product.object;
    let symbol_of = |slot: u32| product.functions[id_of(slot)].expect("defined above").0;
    let aliases = symbols::define_aliases(&mut object, &slots, &code, symbol_of, macho);
    if linkonce {
        let symbols: Vec<_> = module
            .iter()
            .filter(|(id, mf)| {
                mf.linkage == SymbolLinkage::LinkOnce
                    && matches!(
                        code[*id],
                        code::Code::Compiled { .. } | code::Code::Thunk(_)
                    )
            })
            .map(|(_, mf)| symbol_of(slots.index[&mf.name]))
            .collect();
        linkonce::make_linkonce(&mut object, &symbols, macho);
    }
    let write_error =
        |e: object::write::Error| ObjectError::write(format!("cannot write the object: {e}"));
    let mut bytes = object.write().map_err(write_error)?;
    if !macho {
        let records: rustc_hash::FxHashSet<String> = (slots.slots.iter())
            .filter(|s| matches!(s.kind, slots::SlotKind::Record(_)))
            .map(|s| s.symbol.clone())
            .collect();
        relax::mark_relaxable_record_loads(&mut bytes, &records)?;
    }

    // Phase 5: the address-significance table.
    if options.function_sections && !macho {
        let declared = |s: u32| ids[s as usize].is_some();
        bytes = addrsig::add_addrsig(&mut object, &bytes, module, &refs, &slots, declared)?;
    }
    if linkonce && !macho {
        linkonce::put_relocations_in_groups(&mut bytes)?;
    }
    Ok(ObjectOutput {
        report: ObjectReport {
            target: options.target.to_string(),
            format: if macho { "macho" } else { "elf" }.to_string(),
            text_bytes: text_bytes(&bytes)?,
            text_bytes_unmerged: None,
            record_bytes: records.iter().map(|r| r.footprint()).sum(),
            functions_compiled: defined.compiled,
            aliases,
            thunks: defined.thunks,
            removed: removed_by_merge + defined.removed,
            folded_machine_code: folds.len(),
            symbols: symbols::symbol_map(&slots, &code, macho),
            sizes: None,
        },
        functions: forms::function_codes(module, &code, &folds, &jump),
        bytes,
    })
}

/// The ISA `options` compile for: the target, the CPU preset and the flags, over this crate's
/// defaults (position-independent code, frame pointers kept).
pub fn target_isa(options: &ObjectOptions) -> Result<OwnedTargetIsa, ObjectError> {
    target::build_isa(options)
}

/// Bytes of all text sections of a written object.
pub fn text_bytes(bytes: &[u8]) -> Result<u64, ObjectError> {
    use object::{Object as _, ObjectSection as _};
    let file = object::File::parse(bytes).map_err(ObjectError::write)?;
    Ok(file
        .sections()
        .filter(|s| s.kind() == SectionKind::Text)
        .map(|s| s.size())
        .sum())
}
