//! Phase 4, after cranelift-object: functions with [`SymbolLinkage::LinkOnce`] become
//! definitions of which the linker keeps one copy, whatever the linker.
//!
//! - ELF: the function is alone in its section (the object is written with one section per
//!   function when it has such functions), the section is the only member of a COMDAT group
//!   (`SHT_GROUP`, `GRP_COMDAT`) whose signature is the function's symbol, and the symbol is weak
//!   and hidden; the section's relocations are in the group too
//!   ([`put_relocations_in_groups`]). Every linker keeps the first group of a signature and drops
//!   the others, their relocations with them. Nothing else is defined in the group's section
//!   (`crate::fold` leaves such functions alone), so nothing else vanishes with it.
//! - Mach-O: the symbol is a weak definition (`N_WEAK_DEF`) and private extern; with
//!   `MH_SUBSECTIONS_VIA_SYMBOLS` (cranelift-object sets it) the linker coalesces weak
//!   definitions of one name and keeps one.
//!
//! This is sound only because copies with one symbol are copies of one function: a shared body
//! is named after its full content and its symbol after the build too (see [`crate::global`]);
//! a user's `linkonce` function is the user's promise (as C++'s inline functions are). An alias
//! of a `linkonce` function, which would be a second symbol in its group, is refused when the
//! module is read.

use super::error::ObjectError;
use crate::module::{ClifModule, SymbolLinkage};
use object::write::{Comdat, Object, SymbolId, SymbolSection};
use object::{ComdatKind, SymbolScope, elf};
use object::{Endianness, SectionFlags};

/// Refuses an alias of a `linkonce` function: defined in the function's group, it would vanish
/// with a dropped copy (the reader refuses such aliases; the library's `add_alias` and
/// `set_linkage` do not check).
pub(super) fn check_no_alias_of_linkonce(module: &ClifModule) -> Result<(), ObjectError> {
    for alias in module.aliases() {
        let target = module.resolve(&alias.target);
        if target.is_some_and(|id| module.function(id).linkage == SymbolLinkage::LinkOnce) {
            return Err(ObjectError::AliasOfLinkOnce {
                alias: alias.name.to_string(),
                target: alias.target.to_string(),
            });
        }
    }
    Ok(())
}

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

/// Puts each relocation section of a COMDAT group's member in that group (ELF), as the gABI
/// asks: a group is the member sections *and* what only they need, so that a linker dropping
/// the group drops its relocations with it. The writer leaves them outside every group.
/// Patches the written object: each group that gains members gets its new member list at the
/// end of the file, and each relocation section it gains the `SHF_GROUP` flag.
pub(super) fn put_relocations_in_groups(bytes: &mut Vec<u8>) -> Result<(), ObjectError> {
    use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
    if bytes.get(5) == Some(&elf::ELFDATA2MSB) {
        return Err(ObjectError::write("big-endian ELF is not supported"));
    }
    let (groups, relocations, shoff, shentsize) = {
        let file = ElfFile64::<Endianness>::parse(&**bytes).map_err(ObjectError::write)?;
        let endian = file.endian();
        let header = file.elf_header();
        let mut groups: Vec<(usize, Vec<u32>)> = Vec::new();
        let mut relocations: Vec<(usize, u32)> = Vec::new();
        for (index, section) in file.elf_section_table().iter().enumerate() {
            match section.sh_type(endian) {
                elf::SHT_GROUP => {
                    let data = section.data(endian, &**bytes).map_err(ObjectError::write)?;
                    let words = data
                        .chunks_exact(4)
                        .map(|w| u32::from_le_bytes(w.try_into().expect("four bytes")));
                    groups.push((index, words.collect()));
                }
                elf::SHT_RELA | elf::SHT_REL => {
                    relocations.push((index, section.sh_info(endian)));
                }
                _ => {}
            }
        }
        (
            groups,
            relocations,
            header.e_shoff(endian) as usize,
            usize::from(header.e_shentsize(endian)),
        )
    };
    // Elf64_Shdr: sh_name(4) sh_type(4) sh_flags(8) sh_addr(8) sh_offset(8) sh_size(8) ...
    let field = |section: usize, offset: usize| shoff + section * shentsize + offset;
    for (group, words) in groups {
        let Some((&flags, members)) = words.split_first() else {
            continue;
        };
        let gained: Vec<usize> = relocations
            .iter()
            .filter(|(_, target)| members.contains(target))
            .map(|&(index, _)| index)
            .collect();
        if gained.is_empty() {
            continue;
        }
        let mut content: Vec<u8> = std::iter::once(flags)
            .chain(members.iter().copied())
            .chain(gained.iter().map(|&i| i as u32))
            .flat_map(u32::to_le_bytes)
            .collect();
        bytes.resize(bytes.len().next_multiple_of(4), 0);
        let offset = bytes.len() as u64;
        let size = content.len() as u64;
        bytes.append(&mut content);
        bytes[field(group, 24)..field(group, 32)].copy_from_slice(&offset.to_le_bytes());
        bytes[field(group, 32)..field(group, 40)].copy_from_slice(&size.to_le_bytes());
        for index in gained {
            let at = field(index, 8);
            let flags = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
            let flags = flags | u64::from(elf::SHF_GROUP);
            bytes[at..at + 8].copy_from_slice(&flags.to_le_bytes());
        }
    }
    Ok(())
}
