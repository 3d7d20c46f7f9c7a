//! The per-symbol difference of two objects (ELF or Mach-O), as bloaty's diff gives it: which
//! functions grew, shrank, appeared or went, with totals that `size -A` and `nm -S` agree with.
//!
//! Each text byte is counted once. A function symbol's bytes are its ELF size (`st_size`); on
//! Mach-O, which records no sizes, the distance to the next symbol of its section or to the
//! section's end. Symbols at one address (aliases) share one piece of code: it counts for the
//! first of them by name, the others have 0 bytes and say whose alias they are. What no symbol
//! covers (alignment padding) is one row of its own, `[padding]`.

use crate::emit::object::ObjectError;
use object::{
    BinaryFormat, Object as _, ObjectSection as _, ObjectSymbol as _, SectionKind, SymbolKind,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The name of the row of bytes no symbol covers.
pub const PADDING_ROW: &str = "[padding]";

/// One symbol's bytes in the two objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolChange {
    /// The symbol's name (or [`PADDING_ROW`]).
    pub name: String,
    /// Its bytes before (None: not in the object).
    pub before: Option<u64>,
    /// Its bytes after (None: not in the object).
    pub after: Option<u64>,
    /// In the object after: the symbol whose code it shares (an alias).
    pub alias_of: Option<String>,
}

impl SymbolChange {
    /// Bytes after minus bytes before.
    pub fn delta(&self) -> i64 {
        self.after.unwrap_or(0) as i64 - self.before.unwrap_or(0) as i64
    }
}

/// The difference of two objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectDiff {
    /// Every function symbol of either object and the padding row, largest change first; the
    /// `before` and `after` bytes of all of them add up to the text totals.
    pub symbols: Vec<SymbolChange>,
    /// Bytes of the text sections before (as `size -A` adds them up).
    pub text_before: u64,
    /// Bytes of the text sections after.
    pub text_after: u64,
}

/// The function symbols of one object: name to (bytes, the symbol whose code it shares), the
/// text sections' bytes, and the object's target (format and architecture, e.g. `ELF x86_64`).
struct TextSymbols {
    symbols: BTreeMap<String, (u64, Option<String>)>,
    text_bytes: u64,
    target: String,
}

/// The difference between the objects `before` and `after` (their bytes).
pub fn diff_objects(before: &[u8], after: &[u8]) -> Result<ObjectDiff, ObjectError> {
    let read = |bytes: &[u8], which: &str| {
        text_symbols(bytes).map_err(|e| ObjectError::write(format!("the object {which}: {e}")))
    };
    let (b, a) = (read(before, "before")?, read(after, "after")?);
    if b.target != a.target {
        return Err(ObjectError::write(format!(
            "the objects are for different targets ({} before, {} after): a diff lines up one \
             target's builds by symbol name",
            b.target, a.target
        )));
    }
    let names: BTreeSet<&String> = b.symbols.keys().chain(a.symbols.keys()).collect();
    let mut symbols: Vec<SymbolChange> = names
        .into_iter()
        .map(|name| SymbolChange {
            name: name.clone(),
            before: b.symbols.get(name).map(|s| s.0),
            after: a.symbols.get(name).map(|s| s.0),
            alias_of: a.symbols.get(name).and_then(|s| s.1.clone()),
        })
        .collect();
    let covered = |t: &TextSymbols| t.symbols.values().map(|s| s.0).sum::<u64>();
    symbols.push(SymbolChange {
        name: PADDING_ROW.to_string(),
        before: Some(b.text_bytes - covered(&b)),
        after: Some(a.text_bytes - covered(&a)),
        alias_of: None,
    });
    symbols.sort_by(|x, y| {
        y.delta()
            .abs()
            .cmp(&x.delta().abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    Ok(ObjectDiff {
        symbols,
        text_before: b.text_bytes,
        text_after: a.text_bytes,
    })
}

fn text_symbols(bytes: &[u8]) -> Result<TextSymbols, ObjectError> {
    let file = object::File::parse(bytes).map_err(ObjectError::write)?;
    let macho = file.format() == BinaryFormat::MachO;
    let mut out = TextSymbols {
        symbols: BTreeMap::new(),
        text_bytes: 0,
        target: format!("{:?} {:?}", file.format(), file.architecture()),
    };
    // By section: every function symbol's (address, name, size).
    let mut by_section: BTreeMap<usize, Vec<(u64, String, u64)>> = BTreeMap::new();
    for s in file.symbols() {
        if let (Some(section), SymbolKind::Text, false, Ok(name)) =
            (s.section_index(), s.kind(), s.is_undefined(), s.name())
        {
            let here = by_section.entry(section.0).or_default();
            here.push((s.address(), name.to_string(), s.size()));
        }
    }
    for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
        out.text_bytes += section.size();
        // By address, then name.
        let mut here = by_section.remove(&section.index().0).unwrap_or_default();
        here.sort();
        let end = section.address().saturating_add(section.size());
        if let Some((address, name, _)) = here
            .iter()
            .find(|(address, ..)| *address < section.address() || *address > end)
        {
            return Err(ObjectError::write(format!(
                "malformed object: symbol `{name}` at {address:#x} lies outside its section `{}` \
                 ({:#x}..{end:#x})",
                section.name().unwrap_or("?"),
                section.address()
            )));
        }
        let mut owner: Option<(u64, String)> = None;
        for at in 0..here.len() {
            let (address, name, size) = &here[at];
            if let Some((owner_address, owner_name)) = &owner
                && owner_address == address
            {
                out.symbols
                    .entry(name.clone())
                    .or_insert((0, Some(owner_name.clone())));
                continue;
            }
            // Up to the next symbol at all on Mach-O; never past it on ELF, so that no byte
            // counts twice.
            let next = here[at..]
                .iter()
                .map(|h| h.0)
                .find(|a| a > address)
                .unwrap_or(end)
                .min(end)
                .saturating_sub(*address);
            let bytes = if macho { next } else { (*size).min(next) };
            out.symbols.entry(name.clone()).or_insert((0, None)).0 += bytes;
            owner = Some((*address, name.clone()));
        }
    }
    Ok(out)
}

impl ObjectDiff {
    /// As text: the symbols whose bytes changed, largest change first, then the totals.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>10} {:>10} {:>10}  symbol",
            "before", "after", "delta"
        );
        let show = |n: Option<u64>| n.map_or("-".to_string(), |n| n.to_string());
        for s in self.symbols.iter().filter(|s| s.before != s.after) {
            let alias = s
                .alias_of
                .as_ref()
                .map(|a| format!(" (alias of {a})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:>10} {:>10} {:>+10}  {}{alias}",
                show(s.before),
                show(s.after),
                s.delta(),
                s.name
            );
        }
        let symbols = |f: fn(&SymbolChange) -> Option<u64>| -> u64 {
            self.symbols
                .iter()
                .filter(|s| s.name != PADDING_ROW)
                .filter_map(f)
                .sum()
        };
        let (sb, sa) = (symbols(|s| s.before), symbols(|s| s.after));
        let _ = writeln!(
            out,
            "{:>10} {:>10} {:>+10}  [symbols]",
            sb,
            sa,
            sa as i64 - sb as i64
        );
        let _ = writeln!(
            out,
            "{:>10} {:>10} {:>+10}  [text sections]",
            self.text_before,
            self.text_after,
            self.text_after as i64 - self.text_before as i64
        );
        out
    }
}
