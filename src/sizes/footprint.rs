//! Footprints: the bytes of a text section each function of an object we wrote owns, padding
//! included, so that a section's footprints add up to its size exactly.
//!
//! In each text section the functions with code (compiled ones and jump thunks; aliases and
//! removed functions have none) are taken in address order. A function owns its own bytes and
//! the alignment padding *before* it (its alignment is what asks for that padding); the first
//! owns anything before it, the last anything after it. A text section with no function in it
//! owns nothing (its bytes are counted apart, as `unowned`).

use crate::emit::object::{CodeForm, ObjectError, ObjectOutput};
use crate::module::FuncName;
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SectionIndex, SectionKind};
use rustc_hash::FxHashMap;

/// The footprint of every function with code in one object.
#[derive(Debug, Default)]
pub(crate) struct Footprints {
    /// Each function with code, by name, to the bytes it owns.
    pub(crate) by_name: FxHashMap<FuncName, u64>,
    /// Bytes of text sections in which no function has code.
    pub(crate) unowned: u64,
    /// All text bytes: the footprints and `unowned` add up to it.
    pub(crate) text_bytes: u64,
}

/// The footprints of `object`'s functions, found by their symbols' addresses.
pub(crate) fn footprints(object: &ObjectOutput) -> Result<Footprints, ObjectError> {
    let file = object::File::parse(&*object.bytes).map_err(ObjectError::write)?;
    let mut address_of: FxHashMap<&str, (SectionIndex, u64)> = FxHashMap::default();
    for symbol in file.symbols() {
        if let (Some(section), Ok(name)) = (symbol.section_index(), symbol.name()) {
            address_of.insert(name, (section, symbol.address()));
        }
    }
    // By section: (offset in it, bytes, name) of every function with code.
    let mut items: FxHashMap<SectionIndex, Vec<(u64, u64, &FuncName)>> = FxHashMap::default();
    for f in &object.functions {
        if !matches!(f.form, CodeForm::Compiled | CodeForm::Thunk) {
            continue;
        }
        let symbol = object.report.symbols.get(&f.name.to_string());
        let Some(&(section, address)) = symbol.and_then(|s| address_of.get(s.as_str())) else {
            return Err(ObjectError::write(format!(
                "size attribution: no symbol for {} in the object",
                f.name
            )));
        };
        let base = file
            .section_by_index(section)
            .map_err(ObjectError::write)?
            .address();
        let here = items.entry(section).or_default();
        here.push((address - base, f.bytes, &f.name));
    }
    let mut out = Footprints::default();
    for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
        out.text_bytes += section.size();
        let mut mine = items.remove(&section.index()).unwrap_or_default();
        mine.sort_by_key(|&(offset, _, _)| offset);
        let Some(last) = mine.len().checked_sub(1) else {
            out.unowned += section.size();
            continue;
        };
        // Each function from where the one before it ended (the padding before it included) to
        // its own end; the last to the section's end. The footprints add up to the section.
        let mut owned_to = 0u64;
        for (at, &(offset, bytes, name)) in mine.iter().enumerate() {
            let end = if at == last {
                section.size().max(owned_to)
            } else {
                (offset + bytes).max(owned_to)
            };
            out.by_name.insert(name.clone(), end - owned_to);
            owned_to = end;
        }
    }
    Ok(out)
}
