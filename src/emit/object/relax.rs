//! Relaxable GOT loads of read-only records (x86_64 ELF).
//!
//! Under PIC, Cranelift takes every symbol's address with `movq sym@GOTPCREL(%rip), %reg`
//! and an `R_X86_64_GOTPCREL` relocation, whether or not the symbol is local. For a similar
//! group's read-only record (a local symbol of this object) that costs a GOT entry and, in a
//! position-independent link, a dynamic relocation per record, unless the linker rewrites the
//! load into `leaq sym(%rip), %reg`. Linkers do so only for the relocation that says the
//! instruction may be rewritten: `R_X86_64_REX_GOTPCRELX` (ld.lld relaxes nothing else; ld.bfd
//! and gold relax a plain `GOTPCREL` too). So a `GOTPCREL` against a record at a REX-prefixed
//! `mov` from a RIP-relative address (the form the relocation describes) is marked
//! `REX_GOTPCRELX`, what every compiler emits for such a load.

use super::ObjectError;
use object::elf;
use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
use object::{Endianness, Object as _, ObjectSymbol as _};
use rustc_hash::FxHashSet;

/// One `Elf64_Rela` entry: `r_offset`, `r_info`, `r_addend`.
const RELA_SIZE: usize = 24;

/// Marks the `R_X86_64_GOTPCREL` relocations against the symbols named `records` in the
/// x86_64 ELF object `bytes` as `R_X86_64_REX_GOTPCRELX` where the instruction is the
/// `movq` they describe.
pub(super) fn mark_relaxable_record_loads(
    bytes: &mut [u8],
    records: &FxHashSet<String>,
) -> Result<(), ObjectError> {
    if records.is_empty() {
        return Ok(());
    }
    let mut marks: Vec<usize> = Vec::new();
    {
        let file = ElfFile64::<Endianness>::parse(&*bytes).map_err(ObjectError::write)?;
        if file.elf_header().e_machine(file.endian()) != elf::EM_X86_64 {
            return Ok(());
        }
        let endian = file.endian();
        let record_symbols: FxHashSet<usize> = (file.symbols())
            .filter(|s| s.name().is_ok_and(|n| records.contains(n)))
            .map(|s| s.index().0)
            .collect();
        let sections = file.elf_section_table();
        for section in sections.iter() {
            if section.sh_type(endian) != elf::SHT_RELA {
                continue;
            }
            let target = sections
                .section(object::SectionIndex(section.sh_info(endian) as usize))
                .map_err(ObjectError::write)?;
            let code = target.data(endian, &*bytes).map_err(ObjectError::write)?;
            let start = section.sh_offset(endian) as usize;
            let size = section.sh_size(endian) as usize;
            for entry in (start..start + size).step_by(RELA_SIZE) {
                let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                let (offset, info) = (word(entry) as usize, word(entry + 8));
                let (symbol, kind) = ((info >> 32) as usize, info as u32);
                if kind == elf::R_X86_64_GOTPCREL
                    && record_symbols.contains(&symbol)
                    && is_rip_relative_movq(code, offset)
                {
                    marks.push(entry + 8);
                }
            }
        }
    }
    for at in marks {
        bytes[at..at + 4].copy_from_slice(&elf::R_X86_64_REX_GOTPCRELX.to_le_bytes());
    }
    Ok(())
}

/// Whether the displacement at `offset` of `code` belongs to `REX.W mov disp32(%rip), %reg`
/// (`48`–`4f`, `8b`, a ModRM of mode 0 and r/m 5).
fn is_rip_relative_movq(code: &[u8], offset: usize) -> bool {
    offset >= 3
        && code.len() >= offset + 4
        && (0x48..=0x4f).contains(&code[offset - 3])
        && code[offset - 2] == 0x8b
        && code[offset - 1] & 0xc7 == 0x05
}
