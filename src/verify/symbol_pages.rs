//! Where the data symbols of a check are: a page each, chosen by a hash of the symbol's name,
//! the same on both sides. Two names whose hashes agree get two pages: the later name (in the
//! order of the names) takes the next free page. With the hash alone, two data objects whose
//! names' hashes agree in the 32 bits a page number keeps were one object, and a merge that
//! loads the other one was reported ok (about once in a hundred modules of 10,000 symbols).

use super::inputs::fnv;
use crate::module::ClifModule;
use cranelift_codegen::ir::{ExternalName, Function, GlobalValueData};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

/// Where symbols are (64-bit addresses).
pub(super) const SYMBOLS: u64 = 0x0000_5000_0000_0000;
/// The bits of a symbol's page number (pages of 4 KiB from [`SYMBOLS`]).
const PAGE_BITS: u32 = 32;

/// The address of each data symbol both modules name, by its text (as CLIF writes the name;
/// `tls ` before a thread-local one).
#[derive(Default)]
pub(super) struct SymbolPages {
    address: FxHashMap<String, u64>,
}

impl SymbolPages {
    /// The pages of every symbol a global value of a function of `modules` names.
    pub(super) fn of(modules: &[&ClifModule]) -> SymbolPages {
        let mut texts = BTreeSet::new();
        for module in modules {
            for mf in module.functions() {
                texts.extend(symbol_texts(&mf.func));
            }
        }
        let mut taken = FxHashSet::default();
        let address = (texts.into_iter())
            .map(|text| {
                let mut page = hashed_page(&text);
                while !taken.insert(page) {
                    page = (page + 1) & ((1 << PAGE_BITS) - 1);
                }
                (text, SYMBOLS | page << 12)
            })
            .collect();
        SymbolPages { address }
    }

    /// The address of the data symbol `text`: its page, or for a name neither module names
    /// (a record defined for the check) the page its hash gives.
    pub(super) fn address(&self, text: &str) -> u64 {
        (self.address.get(text).copied()).unwrap_or_else(|| SYMBOLS | hashed_page(text) << 12)
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

fn hashed_page(text: &str) -> u64 {
    fnv(text.as_bytes()) & ((1 << PAGE_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{ReadOptions, read_module_text};
    use std::path::Path;

    /// `%d337081` and `%d523190`: their hashes agree in the page number's 32 bits.
    const AGREEING: [&str; 2] = ["%d337081", "%d523190"];

    fn loads(name: &str, symbol: &str) -> String {
        format!(
            "function %{name}() -> i64 {{\n    gv0 = symbol {symbol}\nblock0:\n    \
             v0 = symbol_value.i64 gv0\n    v1 = load.i64 v0\n    return v1\n}}\n\n"
        )
    }

    #[test]
    fn symbols_whose_hashes_agree_get_pages_of_their_own_in_any_order() {
        assert_eq!(hashed_page(AGREEING[0]), hashed_page(AGREEING[1]));
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
}
