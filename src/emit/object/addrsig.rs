//! Phase 5: with one section per function on ELF, an `.llvm_addrsig` section lists the symbols
//! whose address is significant, so that `ld.lld --icf=safe` may fold the others.

use super::error::ObjectError;
use super::slots::{SlotKind, Slots};
use crate::module::ClifModule;
use crate::refs::ModuleRefs;
use object::SectionKind;
use object::write::Object;
use rustc_hash::FxHashMap;

/// Adds the table to `object`, whose first write is `bytes` (symbol indices are known only once
/// written; adding a section adds no symbol, so they hold for the second write); returns the
/// bytes written again. `declared` says which slots have a symbol.
pub(super) fn add_addrsig(
    object: &mut Object<'_>,
    bytes: &[u8],
    module: &ClifModule,
    refs: &ModuleRefs,
    slots: &Slots,
    declared: impl Fn(u32) -> bool,
) -> Result<Vec<u8>, ObjectError> {
    let names: Vec<String> = address_significant(module, refs, slots)
        .into_iter()
        .filter(|&s| declared(s))
        .map(|s| slots.slots[s as usize].symbol.clone())
        .collect();
    let table = addrsig_table(bytes, &names)?;
    let section = object.add_section(
        Vec::new(),
        b".llvm_addrsig".to_vec(),
        SectionKind::Elf(SHT_LLVM_ADDRSIG),
    );
    object.section_mut(section).flags = object::SectionFlags::Elf {
        sh_flags: SHF_EXCLUDE,
    };
    object.section_mut(section).set_data(table, 1);
    let mut bytes = object
        .write()
        .map_err(|e| ObjectError::write(format!("cannot write the object: {e}")))?;
    link_addrsig_to_symtab(&mut bytes)?;
    Ok(bytes)
}

/// Slots whose address is significant: named by `func_addr` or a `symbol` global value, or
/// aliased.
fn address_significant(module: &ClifModule, refs: &ModuleRefs, slots: &Slots) -> Vec<u32> {
    let mut out: Vec<u32> = slots
        .slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| match slot.kind {
            SlotKind::Defined(id) => refs.address_taken(id),
            _ => false,
        })
        .map(|(i, _)| i as u32)
        .collect();
    for &id in module.ids() {
        for name in refs.of_function(id).addresses.iter() {
            if let Some(&s) = slots.index.get(name) {
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
fn addrsig_table(elf: &[u8], names: &[String]) -> Result<Vec<u8>, ObjectError> {
    use object::{Object as _, ObjectSymbol as _};
    let file = object::File::parse(elf).map_err(ObjectError::write)?;
    let mut index: FxHashMap<&[u8], u64> = FxHashMap::default();
    for symbol in file.symbols() {
        if symbol.is_definition() || symbol.is_undefined() {
            index.insert(
                symbol.name_bytes().map_err(ObjectError::write)?,
                symbol.index().0 as u64,
            );
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
fn link_addrsig_to_symtab(bytes: &mut [u8]) -> Result<(), ObjectError> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{Endianness, Object as _, ObjectSection as _};
    let (addrsig_index, symtab_index, shoff, shentsize) = {
        let file = ElfFile64::<Endianness>::parse(&*bytes).map_err(ObjectError::write)?;
        let addrsig = file
            .section_by_name(".llvm_addrsig")
            .ok_or_else(|| ObjectError::write("the .llvm_addrsig section is missing"))?;
        let symtab = file
            .section_by_name(".symtab")
            .ok_or_else(|| ObjectError::write("the symbol table is missing"))?;
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
        return Err(ObjectError::write("big-endian ELF is not supported"));
    }
    // Elf64_Shdr: sh_name(4) sh_type(4) sh_flags(8) sh_addr(8) sh_offset(8) sh_size(8) sh_link(4)
    let at = shoff + addrsig_index * shentsize + 40;
    bytes[at..at + 4].copy_from_slice(&symtab_index.to_le_bytes());
    Ok(())
}

fn endian_is_big(elf: &[u8]) -> bool {
    elf.get(5) == Some(&2)
}
