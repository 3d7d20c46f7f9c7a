//! Machine-code folding: compiled functions whose bytes are identical and whose relocations point
//! to the same targets fold into one, by the same policy as IR merges (`crate::policy`) and on
//! the same partition refiner (`partition`). Targets that are themselves folded count as the
//! same, refined to the greatest fixpoint, as for the IR.
//!
//! Functions that differ in CLIF can still compile to the same bytes (an `iadd` of two equal
//! operands and an `ishl` by one, a dead instruction, a different value type that lowers alike):
//! this step finds those after the IR merge. The object writer compiles, asks [`fold`] what
//! folds, and writes what it is told.

use crate::compare::{Fingerprint, hash};
use crate::module::{ClifModule, FunctionId, SymbolLinkage};
use crate::partition;
use crate::policy::{Action, AllPreemptible, MemberFacts, Mode, decide_class};
use crate::refs::ModuleRefs;
use crate::similar::CodeClasses;
use cranelift_codegen::binemit::Reloc;
use cranelift_entity::PrimaryMap;

/// Where a relocation points, as folding compares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelocTarget {
    /// A defined function of the module.
    Function(FunctionId),
    /// Any other symbol (an alias, an import), by a number that identifies it.
    Symbol(u32),
    /// An offset inside the function itself.
    SelfOffset(u32),
    /// Something outside the module's names (a libcall, a known symbol), by its text.
    External(String),
}

/// A relocation of compiled code.
#[derive(Clone, Debug)]
pub struct MachineReloc {
    /// Where in the code.
    pub offset: u32,
    /// Its kind.
    pub kind: Reloc,
    /// Its addend.
    pub addend: i64,
    /// What it points to.
    pub target: RelocTarget,
}

/// The machine code of one compiled function.
#[derive(Clone, Copy, Debug)]
pub struct MachineCode<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// Their alignment.
    pub alignment: u64,
    /// The relocations, in order.
    pub relocs: &'a [MachineReloc],
}

/// One function that folds into another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The function that loses its code.
    pub replaced: FunctionId,
    /// What it becomes.
    pub action: Action,
    /// The function whose code it shares.
    pub kept: FunctionId,
}

/// What folds in `module` (already merged; `refs` are its references), given the code of every
/// function (`None`: not compiled, e.g. a jump thunk, which is already minimal). Preemptible
/// functions take part; only references *to* them compare by identity. `linkonce` functions,
/// each alone in the COMDAT group the linker may discard, take no part.
pub fn fold(
    module: &ClifModule,
    refs: &ModuleRefs,
    code: &PrimaryMap<FunctionId, Option<MachineCode<'_>>>,
    mode: Mode,
) -> Vec<Fold> {
    let classes = code_classes(module, code, |r| {
        mode == Mode::Aliases || is_direct_call(r.kind)
    });
    let mut folds = Vec::new();
    for members in &classes.classes {
        let facts = |f| MemberFacts {
            function: module.function(f),
            address_taken: refs.address_taken(f),
            // Folding sees the module as the merge left it: every symbol in it is written.
            made_by_run: false,
        };
        // Only compiled functions take part: jump thunks are alone in their class already.
        let decision = decide_class(mode, AllPreemptible::AliasesOnly, members, facts, |_| false);
        let Some(decision) = decision else { continue };
        folds.extend(decision.replaced.into_iter().map(|(g, action)| Fold {
            replaced: g,
            action,
            kept: decision.first,
        }));
    }
    folds
}

/// The [`CodeClasses`] of `code`, None where a function is not compiled (a jump thunk, a
/// removed function): functions of one class are every set the object writer could fold into
/// one body, in any mode (it folds within these classes as the policy decides, comparing some
/// references by identity, which only splits them further); a reference to a function compares
/// through its target's class. A judge of what a merge saves counts as free the code that
/// folding would remove anyway.
pub fn equal_code_classes(
    module: &ClifModule,
    code: &PrimaryMap<FunctionId, Option<MachineCode<'_>>>,
) -> CodeClasses {
    let mut classes: CodeClasses = code.keys().map(|f| code[f].map(|_| f.as_u32())).collect();
    // A class of two or more is named by its first member; any other function by itself.
    for members in code_classes(module, code, |_| true).classes {
        let first = members[0].as_u32();
        for f in members {
            classes[f] = Some(first);
        }
    }
    classes
}

/// The partition of the functions of `code` by equal code: a reference to a foldable function
/// for which `by_class` holds compares by the target's class, any other by identity.
fn code_classes(
    module: &ClifModule,
    code: &PrimaryMap<FunctionId, Option<MachineCode<'_>>>,
    by_class: impl Fn(&MachineReloc) -> bool,
) -> partition::Classes {
    let foldable = |f: FunctionId| {
        !module.function(f).linkage.is_preemptible() && code.get(f).is_some_and(Option::is_some)
    };
    // A function the linker may discard with its COMDAT group (`linkonce`) is defined in its
    // group and nowhere else, and nothing else is defined there: folding it into another
    // section, or another function into its section, would make a symbol that vanishes when
    // the linker keeps another unit's copy of one group and not of the other.
    let in_own_group = |f: FunctionId| module.function(f).linkage == SymbolLinkage::LinkOnce;
    let fingerprints: PrimaryMap<FunctionId, Fingerprint> = code
        .iter()
        .map(|(f, c)| match c {
            Some(c) if !in_own_group(f) => {
                machine_code_fingerprint(c, |r, target| by_class(r) && foldable(target))
            }
            // Not a candidate: alone in its class.
            _ => Fingerprint::unique(),
        })
        .collect();
    let hashes: PrimaryMap<FunctionId, u64> = fingerprints.values().map(hash).collect();
    partition::refine(&fingerprints, &hashes)
}

/// Relocations of direct calls and jumps, whose target is only called, never compared.
fn is_direct_call(kind: Reloc) -> bool {
    matches!(
        kind,
        Reloc::X86CallPCRel4 | Reloc::X86CallPLTRel4 | Reloc::Arm64Call
    )
}

/// Compiled code as comparison tokens: alignment, bytes, then each relocation (offset, kind,
/// addend, target). `by_class` says which function targets compare by class (the target goes
/// to `class_refs`); the others compare by identity.
fn machine_code_fingerprint(
    code: &MachineCode<'_>,
    by_class: impl Fn(&MachineReloc, FunctionId) -> bool,
) -> Fingerprint {
    let mut fp = Fingerprint::default();
    let push_text = |fp: &mut Fingerprint, text: &str| {
        fp.tokens.push(text.len() as u32);
        fp.tokens.extend(text.bytes().map(u32::from));
    };
    fp.tokens.push(code.alignment as u32);
    fp.tokens.push(code.bytes.len() as u32);
    fp.tokens.extend(code.bytes.iter().map(|&b| u32::from(b)));
    fp.tokens.push(code.relocs.len() as u32);
    for r in code.relocs {
        fp.tokens.push(r.offset);
        fp.tokens
            .push(crate::compare::encoding::reloc_number(r.kind));
        fp.tokens.push(r.addend as u32);
        fp.tokens.push((r.addend >> 32) as u32);
        match &r.target {
            RelocTarget::Function(f) if by_class(r, *f) => {
                fp.tokens.push(1);
                fp.class_refs.push(*f);
            }
            RelocTarget::Function(f) => {
                fp.tokens.push(2);
                fp.tokens.push(f.as_u32());
            }
            RelocTarget::Symbol(s) => {
                fp.tokens.push(5);
                fp.tokens.push(*s);
            }
            RelocTarget::SelfOffset(off) => {
                fp.tokens.push(3);
                fp.tokens.push(*off);
            }
            RelocTarget::External(text) => {
                fp.tokens.push(4);
                push_text(&mut fp, text);
            }
        }
    }
    fp
}
