//! Phase 1: every defined function, alias and import gets a *slot*, a number its relocations use.

use crate::module::{ClifModule, FuncName, FunctionId, SymbolLinkage};
use crate::similar::ConstantRecord;
use cranelift_codegen::ir::{ExternalName, Function, GlobalValueData, UserExternalName};
use rustc_hash::FxHashMap;

/// The symbol a function name gets: a testcase name without its `%`, a user name as written
/// (`u0:5`). Mach-O adds its `_` prefix when the object is written.
pub fn symbol_name(name: &FuncName) -> String {
    match name {
        FuncName::Testcase(t) => t.to_string(),
        FuncName::User { namespace, index } => format!("u{namespace}:{index}"),
    }
}

/// The symbol of a defined function or alias: [`symbol_name`], but for a `linkonce` one named
/// after a shared body's content, whose symbol also names the build. An alias so named counts
/// too (earlier builds of round 2 made a shared body an alias of a private copy in
/// `--mode aliases`, and CLIF they wrote may be compiled now): that symbol stands for the body
/// as much as a definition.
fn symbol_of(name: &FuncName, linkage: SymbolLinkage, build: &str) -> String {
    (linkage == SymbolLinkage::LinkOnce)
        .then(|| crate::global::shared_symbol(name, build))
        .flatten()
        .unwrap_or_else(|| symbol_name(name))
}

/// What a slot stands for.
#[derive(Clone, Debug)]
pub(super) enum SlotKind {
    Defined(FunctionId),
    /// An alias: the name of its target.
    Alias(FuncName),
    Import,
    /// A read-only record of a similar group's constants (the index in the records given).
    Record(usize),
}

#[derive(Clone, Debug)]
pub(super) struct Slot {
    pub(super) name: FuncName,
    /// Its symbol in the object: [`symbol_name`], but for a shared body named after its
    /// content (defined or an alias), whose symbol also names the build
    /// ([`crate::global::shared_symbol`]).
    pub(super) symbol: String,
    pub(super) kind: SlotKind,
    pub(super) linkage: SymbolLinkage,
    pub(super) signature: cranelift_codegen::ir::Signature,
}

/// Phase 1: the slots, in a deterministic order (defined functions in module order, aliases,
/// records, then imports in order of first reference).
pub(super) struct Slots {
    pub(super) slots: Vec<Slot>,
    pub(super) index: FxHashMap<FuncName, u32>,
}

impl Slots {
    /// The slots of `module` and its `records`, compiled as `build` (see
    /// [`super::target::build_identity`]).
    pub(super) fn new(module: &ClifModule, records: &[ConstantRecord], build: &str) -> Slots {
        let mut slots = Slots {
            slots: Vec::new(),
            index: FxHashMap::default(),
        };
        for (id, mf) in module.iter() {
            slots.add(Slot {
                symbol: symbol_of(&mf.name, mf.linkage, build),
                name: mf.name.clone(),
                kind: SlotKind::Defined(id),
                linkage: mf.linkage,
                signature: mf.func.signature.clone(),
            });
        }
        for alias in module.aliases() {
            let signature = module
                .resolve(&alias.target)
                .map(|id| module.function(id).func.signature.clone())
                .unwrap_or_else(|| module.function(module.ids()[0]).func.signature.clone());
            slots.add(Slot {
                symbol: symbol_of(&alias.name, alias.linkage, build),
                name: alias.name.clone(),
                kind: SlotKind::Alias(alias.target.clone()),
                linkage: alias.linkage,
                signature,
            });
        }
        for (i, record) in records.iter().enumerate() {
            slots.add(Slot {
                symbol: symbol_name(&record.name),
                name: record.name.clone(),
                kind: SlotKind::Record(i),
                linkage: SymbolLinkage::Local,
                signature: cranelift_codegen::ir::Signature::new(
                    cranelift_codegen::isa::CallConv::SystemV,
                ),
            });
        }
        for mf in module.functions() {
            let func = &mf.func;
            for ext in func.dfg.ext_funcs.values() {
                if let Some(name) = FuncName::of_external(&ext.name, func) {
                    let signature = func.dfg.signatures[ext.signature].clone();
                    slots.add_import(name, signature);
                }
            }
            for gv in func.global_values.values() {
                if let GlobalValueData::Symbol { name, .. } = gv
                    && let Some(name) = FuncName::of_external(name, func)
                {
                    slots.add_import(name, func.signature.clone());
                }
            }
        }
        slots
    }

    fn add(&mut self, slot: Slot) {
        self.index
            .insert(slot.name.clone(), self.slots.len() as u32);
        self.slots.push(slot);
    }

    fn add_import(&mut self, name: FuncName, signature: cranelift_codegen::ir::Signature) {
        if !self.index.contains_key(&name) {
            self.add(Slot {
                symbol: symbol_name(&name),
                name,
                kind: SlotKind::Import,
                linkage: SymbolLinkage::Export,
                signature,
            });
        }
    }

    /// `func` with every function name replaced by `u0:<slot>`.
    pub(super) fn renamed(&self, func: &Function) -> Function {
        let mut func = func.clone();
        let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
        for r in refs {
            if let Some(name) = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func) {
                func.dfg.ext_funcs[r].name = self.slot_name(&name, &mut func);
            }
        }
        let gvs: Vec<_> = func.global_values.keys().collect();
        for gv in gvs {
            let old = match &func.global_values[gv] {
                GlobalValueData::Symbol { name, .. } => FuncName::of_external(name, &func),
                _ => None,
            };
            if let Some(old) = old {
                let new = self.slot_name(&old, &mut func);
                if let GlobalValueData::Symbol { name, .. } = &mut func.global_values[gv] {
                    *name = new;
                }
            }
        }
        func
    }

    fn slot_name(&self, name: &FuncName, func: &mut Function) -> ExternalName {
        let slot = self.index[name];
        ExternalName::user(func.declare_imported_user_function(UserExternalName::new(0, slot)))
    }
}
