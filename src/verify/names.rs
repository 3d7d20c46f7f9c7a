//! The names both modules know, their address slots, and stand-ins for the names a module does
//! not define.

use crate::module::{ClifModule, FuncName};
use cranelift_codegen::ir::{Function, Signature, UserFuncName};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// Every name `module` defines, aliases, or refers to from a function.
fn collect_names(module: &ClifModule, names: &mut BTreeSet<FuncName>) {
    for mf in module.functions() {
        names.insert(mf.name.clone());
        for ext in mf.func.dfg.ext_funcs.values() {
            names.extend(FuncName::of_external(&ext.name, &mf.func));
        }
    }
    for alias in module.aliases() {
        names.insert(alias.name.clone());
        names.insert(alias.target.clone());
    }
}

/// A stand-in in the store for a name the module does not define.
#[derive(Clone, Debug)]
pub(super) enum StubKind {
    /// Referred to but not defined: modelled as a pure function.
    Import,
    /// Not known to this module at all.
    Absent,
}

/// The stand-ins of one module, owned here so that the store may borrow them.
pub(super) struct Stubs {
    pub(super) functions: Vec<(FuncName, StubKind, Function)>,
}

impl Stubs {
    pub(super) fn new(module: &ClifModule, names: &[FuncName]) -> Stubs {
        let imports = import_signatures(module);
        let mut functions = Vec::new();
        for name in names {
            if module.resolve(name).is_some() {
                continue;
            }
            let (kind, sig) = match imports.get(name) {
                Some(sig) => (StubKind::Import, sig.clone()),
                None => (
                    StubKind::Absent,
                    Signature::new(cranelift_codegen::isa::CallConv::SystemV),
                ),
            };
            let func = Function::with_name_signature(UserFuncName::default(), sig);
            functions.push((name.clone(), kind, func));
        }
        Stubs { functions }
    }
}

/// The signature of each import: its first declaration, in module order.
fn import_signatures(module: &ClifModule) -> BTreeMap<FuncName, Signature> {
    let mut imports: BTreeMap<FuncName, Signature> = BTreeMap::new();
    for mf in module.functions() {
        let func = &mf.func;
        for ext in func.dfg.ext_funcs.values() {
            if let Some(name) = FuncName::of_external(&ext.name, func)
                && module.lookup(&name).is_none()
            {
                imports
                    .entry(name)
                    .or_insert_with(|| func.dfg.signatures[ext.signature].clone());
            }
        }
    }
    imports
}

/// The names both sides know, and the *address slot* of each: names that are one symbol (an
/// alias and its target, in either module) share a slot, so that `func_addr` of an alias equals
/// `func_addr` of its target on both sides (in `--mode aliases` that is what the merge intends).
pub(super) struct Names {
    pub(super) names: Vec<FuncName>,
    pub(super) slot_of: FxHashMap<FuncName, u32>,
}

impl Names {
    pub(super) fn new(modules: &[&ClifModule]) -> Names {
        let mut set = BTreeSet::new();
        for module in modules {
            collect_names(module, &mut set);
        }
        let names: Vec<FuncName> = set.into_iter().collect();
        let index: FxHashMap<&FuncName, usize> =
            names.iter().enumerate().map(|(i, n)| (n, i)).collect();
        // Union-find over aliases; the representative of a group is its smallest name.
        let mut parent: Vec<usize> = (0..names.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for module in modules {
            for alias in module.aliases() {
                let a = root(&mut parent, index[&alias.name]);
                let b = root(&mut parent, index[&alias.target]);
                let (lo, hi) = (a.min(b), a.max(b));
                parent[hi] = lo;
            }
        }
        let slot_of = (0..names.len())
            .map(|i| (names[i].clone(), root(&mut parent, i) as u32))
            .collect();
        Names { names, slot_of }
    }
}
