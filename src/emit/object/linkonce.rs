//! Phase 4, after cranelift-object: functions with [`SymbolLinkage::LinkOnce`] become
//! definitions of which the linker keeps one copy, whatever the linker.
//!
//! - ELF: the function is alone in its section (the object is written with one section per
//!   function when it has such functions), the section is the only member of a COMDAT group
//!   (`SHT_GROUP`, `GRP_COMDAT`) whose signature is the function's symbol, and the symbol is weak
//!   and hidden. Every linker keeps the first group of a signature and drops the others, their
//!   relocations with them.
//! - Mach-O: the symbol is a weak definition (`N_WEAK_DEF`) and private extern; with
//!   `MH_SUBSECTIONS_VIA_SYMBOLS` (cranelift-object sets it) the linker coalesces weak
//!   definitions of one name and keeps one.
//!
//! This is sound only because such a function is named after its full content (see
//! [`crate::global`]): copies with one name are copies of one function.

use crate::module::{ClifModule, SymbolLinkage};
use object::SectionFlags;
use object::write::{Comdat, Object, SymbolId, SymbolSection};
use object::{ComdatKind, SymbolScope, elf};

/// Whether `module` has functions of which the linker keeps one copy.
pub(super) fn has_linkonce(module: &ClifModule) -> bool {
    module
        .functions()
        .any(|mf| mf.linkage == SymbolLinkage::LinkOnce)
}

/// Makes every given symbol (a defined LinkOnce function) weak and hidden, and on ELF puts its
/// section in a COMDAT group of its own.
pub(super) fn make_linkonce(object: &mut Object<'static>, symbols: &[SymbolId], macho: bool) {
    for &id in symbols {
        let symbol = object.symbol_mut(id);
        symbol.weak = true;
        symbol.scope = SymbolScope::Linkage;
        let SymbolSection::Section(section) = symbol.section else {
            continue;
        };
        if macho {
            continue;
        }
        let flags = elf::SHF_ALLOC | elf::SHF_EXECINSTR | elf::SHF_GROUP;
        object.section_mut(section).flags = SectionFlags::Elf {
            sh_flags: u64::from(flags),
        };
        object.add_comdat(Comdat {
            kind: ComdatKind::Any,
            symbol: id,
            sections: vec![section],
        });
    }
}
