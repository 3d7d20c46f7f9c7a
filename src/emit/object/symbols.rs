//! Phase 4, symbols: aliases (from IR merges and from folding) become symbols at their target's
//! section and offset, with the target's size and their own binding; and the report's map from
//! every CLIF name to its symbol.

use super::code::Code;
use super::slots::{SlotKind, Slots};
use crate::module::{FunctionId, SymbolLinkage};
use cranelift_entity::PrimaryMap;
use object::write::{Object, SymbolId};
use object::{SymbolFlags, SymbolKind, SymbolScope};
use std::collections::BTreeMap;

/// Points every alias slot's symbol (declared as an import) at its final target's code; returns
/// how many aliases there are. Aliases on Mach-O are marked `N_ALT_ENTRY`, so that a linker
/// splitting sections at symbols (`.subsections_via_symbols`) keeps an alias inside its
/// target's block.
pub(super) fn define_aliases(
    object: &mut Object<'_>,
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
    symbol_of: impl Fn(u32) -> SymbolId,
    macho: bool,
) -> usize {
    let mut aliases = 0;
    for (i, slot) in slots.slots.iter().enumerate() {
        let target = match &slot.kind {
            SlotKind::Alias(target) => slots.index[target],
            SlotKind::Defined(id) => match code[*id] {
                Code::AliasOf(t) => t,
                _ => continue,
            },
            SlotKind::Import | SlotKind::Record(_) => continue,
        };
        let target = final_target(slots, code, target);
        let (value, size, section) = {
            let t = object.symbol(symbol_of(target));
            (t.value, t.size, t.section)
        };
        let (scope, weak) = symbol_binding(slot.linkage);
        let alias = object.symbol_mut(symbol_of(i as u32));
        alias.value = value;
        alias.size = size;
        alias.kind = SymbolKind::Text;
        alias.section = section;
        alias.scope = scope;
        alias.weak = weak;
        if macho {
            // Setting the flags replaces the ones the writer derives from `weak`.
            let weak_def = if weak { object::macho::N_WEAK_DEF } else { 0 };
            alias.flags = SymbolFlags::MachO {
                n_desc: object::macho::N_ALT_ENTRY | weak_def,
            };
        }
        aliases += 1;
    }
    aliases
}

/// Every CLIF name that has a symbol, to that symbol (with Mach-O's `_` prefix).
pub(super) fn symbol_map(
    slots: &Slots,
    code: &PrimaryMap<FunctionId, Code>,
    macho: bool,
) -> BTreeMap<String, String> {
    let prefix = if macho { "_" } else { "" };
    let mut symbols = BTreeMap::new();
    for slot in &slots.slots {
        let has_symbol = match slot.kind {
            SlotKind::Import | SlotKind::Record(_) => false,
            SlotKind::Defined(id) => !matches!(code[id], Code::Removed),
            SlotKind::Alias(_) => true,
        };
        if has_symbol {
            let symbol = format!("{prefix}{}", slot.symbol);
            symbols.insert(slot.name.to_string(), symbol);
        }
    }
    symbols
}

/// The slot with code that `slot` ends at, following aliases (IR aliases of functions that were
/// folded into aliases, for example).
fn final_target(slots: &Slots, code: &PrimaryMap<FunctionId, Code>, mut slot: u32) -> u32 {
    for _ in 0..=slots.slots.len() {
        let next = match &slots.slots[slot as usize].kind {
            SlotKind::Alias(target) => slots.index[target],
            SlotKind::Defined(id) => match code[*id] {
                Code::AliasOf(t) => t,
                _ => return slot,
            },
            SlotKind::Import | SlotKind::Record(_) => return slot,
        };
        slot = next;
    }
    slot
}

pub(super) fn module_linkage(linkage: SymbolLinkage) -> cranelift_module::Linkage {
    match linkage {
        SymbolLinkage::Export => cranelift_module::Linkage::Export,
        SymbolLinkage::Hidden => cranelift_module::Linkage::Hidden,
        SymbolLinkage::Local => cranelift_module::Linkage::Local,
        SymbolLinkage::Preemptible => cranelift_module::Linkage::Preemptible,
        // Made weak and deduplicable once the object is finished (`linkonce.rs`).
        SymbolLinkage::LinkOnce => cranelift_module::Linkage::Hidden,
    }
}

/// Binding and visibility as cranelift-object gives them to definitions.
fn symbol_binding(linkage: SymbolLinkage) -> (SymbolScope, bool) {
    match linkage {
        SymbolLinkage::Export => (SymbolScope::Dynamic, false),
        SymbolLinkage::Hidden => (SymbolScope::Linkage, false),
        SymbolLinkage::Local => (SymbolScope::Compilation, false),
        SymbolLinkage::Preemptible => (SymbolScope::Dynamic, true),
        SymbolLinkage::LinkOnce => (SymbolScope::Linkage, true),
    }
}
