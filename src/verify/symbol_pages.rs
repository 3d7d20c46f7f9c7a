//! Where the data symbols of a check are: each name both modules name has a region of its own,
//! the same on both sides, as wide as their number allows (4 GiB for up to 8,191 names, 2 GiB
//! up to 16,383, 1 GiB up to 32,767), in the order of the names. An offset from a symbol (a
//! page past it, an `iadd_imm` chain) stays in its region, as it stays in its object or at
//! least away from another's: with a page of 4 KiB each, chosen by a hash of the name, a symbol
//! plus 4,096 was the next symbol whenever their pages were adjacent (hostile13), and two names
//! whose hashes agreed were one object (hostile12). Below the first region is one more, of no
//! name and mapped as theirs are: natively the bytes before an object are another's, and with
//! nothing mapped there two loads at other offsets before the first symbol trapped alike
//! (hostile14).

use super::inputs::fnv;
use crate::module::ClifModule;
use cranelift_codegen::ir::{ExternalName, Function, GlobalValueData};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

/// Where symbols are (64-bit addresses).
pub(super) const SYMBOLS: u64 = 0x0000_1000_0000_0000;
/// The regions of the names both modules name share the first `1 << SPACE_BITS` bytes from
/// [`SYMBOLS`]; a name neither names (none does today) has a page chosen by its hash in the
/// next as many.
const SPACE_BITS: u32 = 45;
/// The bytes from [`SYMBOLS`] that symbols may be at (memory there is mapped).
pub(super) const SYMBOLS_SPAN: u64 = 2 << SPACE_BITS;
/// The widest region: 4 GiB.
const MAX_REGION_BITS: u32 = 32;

/// The address of each data symbol both modules name, by its text (as CLIF writes the name;
/// `tls ` before a thread-local one).
#[derive(Default)]
pub(super) struct SymbolPages {
    address: FxHashMap<String, u64>,
}

impl SymbolPages {
    /// The regions of every symbol a global value of a function of `modules` names.
    pub(super) fn of(modules: &[&ClifModule]) -> SymbolPages {
        let mut texts = BTreeSet::new();
        for module in modules {
            for mf in module.functions() {
                texts.extend(symbol_texts(&mf.func));
            }
        }
        // Regions 1 to n; region 0 is below the first symbol. (Sized by the bit length of the
        // count alone, 4,096 names had 2 GiB each, not 4: hostile14.)
        let index_bits = u64::BITS - (texts.len() as u64).leading_zeros();
        let region_bits = (SPACE_BITS - index_bits).min(MAX_REGION_BITS);
        let address = (texts.into_iter().enumerate())
            .map(|(i, text)| (text, SYMBOLS + ((i as u64 + 1) << region_bits)))
            .collect();
        SymbolPages { address }
    }

    /// The address of the data symbol `text`: its region's start, or for a name neither module
    /// names the page its hash gives, past every region.
    pub(super) fn address(&self, text: &str) -> u64 {
        let hashed = || {
            SYMBOLS + (1 << SPACE_BITS) + ((fnv(text.as_bytes()) << 12) & ((1 << SPACE_BITS) - 1))
        };
        self.address.get(text).copied().unwrap_or_else(hashed)
    }
}

/// The text of a symbol as the runs look it up: `name` as CLIF writes it in `func`, with `tls `
/// before a thread-local one.
pub(super) fn symbol_text(name: &ExternalName, func: &Function, tls: bool) -> String {
    let text = name.display(Some(&func.params)).to_string();
    if tls { format!("tls {text}") } else { text }
}

/// The texts of the symbols `func`'s global values name (functions among them: a run takes a
/// function's address elsewhere, and an unused page costs nothing).
fn symbol_texts(func: &Function) -> impl Iterator<Item = String> + '_ {
    func.global_values.values().filter_map(move |gv| match gv {
        GlobalValueData::Symbol { name, tls, .. } => Some(symbol_text(name, func, *tls)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{ReadOptions, read_module_text};
    use std::path::Path;

    /// `%d337081` and `%d523190`: their hashes agree in 32 bits (a page number's, when a
    /// symbol's page was its hash).
    const AGREEING: [&str; 2] = ["%d337081", "%d523190"];

    fn loads(name: &str, symbol: &str) -> String {
        format!(
            "function %{name}() -> i64 {{\n    gv0 = symbol {symbol}\nblock0:\n    \
             v0 = symbol_value.i64 gv0\n    v1 = load.i64 v0\n    return v1\n}}\n\n"
        )
    }

    #[test]
    fn symbols_whose_hashes_agree_get_regions_of_their_own_in_any_order() {
        let page = |name: &str| fnv(name.as_bytes()) & 0xffff_ffff;
        assert_eq!(page(AGREEING[0]), page(AGREEING[1]));
        let mut seen = Vec::new();
        for (first, second) in [(0, 1), (1, 0)] {
            let text = loads("f", AGREEING[first]) + &loads("g", AGREEING[second]);
            let module = read_module_text(Path::new("t.clif"), &text, ReadOptions::default());
            let pages = SymbolPages::of(&[&module.unwrap()]);
            let at = AGREEING.map(|name| pages.address(name));
            assert_ne!(at[0], at[1]);
            seen.push(at);
        }
        assert_eq!(
            seen[0], seen[1],
            "the pages do not depend on the order of functions"
        );
    }

    #[test]
    fn an_offset_under_4_gib_from_a_symbol_reaches_no_other() {
        let text = ["%a", "%b", "%c"]
            .map(|n| loads(&n[1..].to_uppercase(), n))
            .concat();
        let module = read_module_text(Path::new("t.clif"), &text, ReadOptions::default());
        let pages = SymbolPages::of(&[&module.unwrap()]);
        let mut at = ["%a", "%b", "%c"].map(|name| pages.address(name));
        at.sort();
        assert!(at.windows(2).all(|w| w[1] - w[0] >= 1 << 32), "{at:x?}");
    }

    /// One function naming `%s0` … `%s{count - 1}`.
    fn pages_of(count: usize) -> (SymbolPages, Vec<u64>) {
        let gvs: String = (0..count)
            .map(|i| format!("    gv{i} = symbol %s{i}\n"))
            .collect();
        let text = format!("function %f() {{\n{gvs}block0:\n    return\n}}\n");
        let module = read_module_text(Path::new("t.clif"), &text, ReadOptions::default());
        let pages = SymbolPages::of(&[&module.unwrap()]);
        let mut at: Vec<u64> = (0..count)
            .map(|i| pages.address(&format!("%s{i}")))
            .collect();
        at.sort();
        (pages, at)
    }

    #[test]
    fn regions_are_as_wide_as_promised_with_one_mapped_below_the_first() {
        for (count, bits) in [(1, 32), (4_096, 32), (8_191, 32), (8_192, 31), (16_384, 30)] {
            let (_, at) = pages_of(count);
            let region = 1u64 << bits;
            assert!(
                at[0] - SYMBOLS >= region,
                "{count}: nothing below {:x}",
                at[0]
            );
            let gaps = at.windows(2).map(|w| w[1] - w[0]);
            assert!(
                gaps.clone().all(|g| g >= region),
                "{count} names: {region:x}"
            );
            assert!(at.last().unwrap() + region <= SYMBOLS + (1 << SPACE_BITS));
        }
    }
}
