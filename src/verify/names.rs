//! The names both modules know, their address slots, and stand-ins for the names a module does
//! not define.

use super::demanded::DemandedParams;
use super::module_calls::{CallRole, MergedAs, address, thunk_to_made_body};
use crate::edit::thunk::is_forwarding_thunk;
use crate::module::{ClifModule, FuncName};
use crate::similar::SimilarGroup;
use cranelift_codegen::ir::{Function, GlobalValueData, Opcode, Signature, UserFuncName};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// The names both sides know, each with its index.
pub(super) struct Names {
    pub(super) names: Vec<FuncName>,
    /// The index of each name in `names`.
    pub(super) index_of: FxHashMap<FuncName, u32>,
    /// Where each data symbol the modules name is.
    pub(super) symbol_pages: super::symbol_pages::SymbolPages,
}

impl Names {
    /// The names of `modules`.
    pub(super) fn new(modules: &[&ClifModule]) -> Names {
        let mut set = BTreeSet::new();
        for module in modules {
            collect_names(module, &mut set);
        }
        let names: Vec<FuncName> = set.into_iter().collect();
        let index_of = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        let symbol_pages = super::symbol_pages::SymbolPages::of(modules);
        Names {
            names,
            index_of,
            symbol_pages,
        }
    }

    /// The *address slot* of each name (by index) on one side: names that are one symbol share
    /// a slot, numbered by the smallest name's index, so that `func_addr` of an alias equals
    /// `func_addr` of its target; each pair of `one_symbol` is one symbol.
    fn slots(&self, one_symbol: &[(&FuncName, &FuncName)]) -> Vec<u32> {
        let mut parent: Vec<usize> = (0..self.names.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for &(name, target) in one_symbol {
            let (Some(&a), Some(&b)) = (self.index_of.get(name), self.index_of.get(target)) else {
                continue;
            };
            let (a, b) = (root(&mut parent, a as usize), root(&mut parent, b as usize));
            let (lo, hi) = (a.min(b), a.max(b));
            parent[hi] = lo;
        }
        (0..self.names.len())
            .map(|i| root(&mut parent, i) as u32)
            .collect()
    }
}

/// What each name and each address slot runs in one module (a function it defines, or a
/// stand-in), found once for the whole check.
pub(super) struct Resolved<'a> {
    /// By name index (in [`Names::names`]).
    pub(super) by_name: Vec<&'a Function>,
    /// Each name's address slot (see [`Names::slots`]), by name index: this side's own, since
    /// a merge may make two symbols one.
    pub(super) slot_of: Vec<u32>,
    /// By address slot: the function a call through the slot's address runs.
    pub(super) slot_fn: Vec<Option<&'a Function>>,
    /// The stand-ins, by address (a number, so that the pieces share it across threads).
    pub(super) stubs: FxHashMap<usize, (&'a FuncName, &'a StubKind)>,
    /// The roles the merge report gives functions in the record of calls, by address (see
    /// `module_calls.rs`). Empty until [`Resolved::with_similar_groups`].
    pub(super) roles: FxHashMap<usize, CallRole>,
    /// The module.
    pub(super) module: &'a ClifModule,
    /// What its functions' parameters demand (see `demanded.rs`).
    pub(super) demanded: Arc<DemandedParams>,
    /// Whether calls into the module are compared ([`super::VerifyOptions::module_calls`]).
    pub(super) module_calls: bool,
    /// What the merge made of each function it merged (see [`MergedAs`]).
    pub(super) merged_as: Arc<MergedAs>,
}

impl<'a> Resolved<'a> {
    /// `module`'s side, where the names of each pair of `one_symbol` are one symbol, and the
    /// functions of `entries` are checked (run with any arguments); what the parameters demand
    /// is found only when `module_calls` are compared.
    pub(super) fn new(
        module: &'a ClifModule,
        entries: &ClifModule,
        names: &Names,
        stubs: &'a Stubs,
        one_symbol: &[(&FuncName, &FuncName)],
        module_calls: bool,
    ) -> Resolved<'a> {
        let slot_of = names.slots(one_symbol);
        let stub_of: FxHashMap<&FuncName, &'a Function> =
            stubs.functions.iter().map(|(n, _, f)| (n, f)).collect();
        let mut by_name = Vec::with_capacity(names.names.len());
        let mut slot_fn: Vec<Option<&'a Function>> = vec![None; names.names.len()];
        let mut stand_ins = Vec::new();
        for (i, name) in names.names.iter().enumerate() {
            let defined = module.resolve(name).map(|id| &*module.function(id).func);
            let func = defined
                .or_else(|| stub_of.get(name).copied())
                .expect("a stand-in for every name the module does not resolve");
            by_name.push(func);
            // A call through a slot's address runs the first of its names this module
            // defines, else its first stand-in.
            let slot = slot_of[i] as usize;
            match defined {
                Some(_) if slot_fn[slot].is_none() => slot_fn[slot] = Some(func),
                Some(_) => {}
                None => stand_ins.push((slot, func)),
            }
        }
        for (slot, func) in stand_ins {
            slot_fn[slot].get_or_insert(func);
        }
        let stubs = stubs
            .functions
            .iter()
            .map(|(n, k, f)| (f as *const Function as usize, (n, k)))
            .collect();
        Resolved {
            by_name,
            slot_of,
            slot_fn,
            stubs,
            roles: FxHashMap::default(),
            module,
            demanded: Arc::new(match module_calls {
                true => DemandedParams::of(module, entries),
                false => DemandedParams::default(),
            }),
            module_calls,
            merged_as: Arc::default(),
        }
    }

    /// This side, where the merge made `merged_as` of the functions it merged.
    pub(super) fn with_merged_as(mut self, merged_as: &Arc<MergedAs>) -> Resolved<'a> {
        self.merged_as = merged_as.clone();
        self
    }

    /// This side, whose module is merged with the similar groups `groups` of the original
    /// `original`: their members forward to their shared bodies, which are bodies taking the
    /// group's parameters past the members' own (unless every member forwards in `original`),
    /// and what forwards in `original` forwards here.
    pub(super) fn with_similar_groups(
        mut self,
        names: &Names,
        original: &ClifModule,
        groups: &[SimilarGroup],
    ) -> Resolved<'a> {
        let forwards = |name: &FuncName| {
            (original.resolve(name))
                .is_some_and(|id| is_forwarding_thunk(&original.function(id).func))
        };
        // A function that forwards in the original forwards here too, though its call now
        // passes a shared body's extra arguments (a caller of a removed member).
        for (i, name) in names.names.iter().enumerate() {
            if forwards(name) {
                self.roles
                    .insert(address(self.by_name[i]), CallRole::Forwarder);
            }
        }
        // A thunk passing constants to a body the merge made (a similar or global member), and
        // that body, which takes them past the member's own parameters.
        for i in 0..names.names.len() {
            let func = self.by_name[i];
            let Some(body) = thunk_to_made_body(func, original) else {
                continue;
            };
            self.roles.insert(address(func), CallRole::Forwarder);
            if let Some(&j) = names.index_of.get(&body) {
                let body = self.by_name[j as usize];
                let own = func.signature.params.len();
                let extra = body.signature.params.len().saturating_sub(own);
                (self.roles.entry(address(body))).or_insert(CallRole::Body { extra });
            }
        }
        for group in groups {
            let function = |name: &FuncName| {
                let i = *names.index_of.get(name)?;
                Some(address(self.by_name[i as usize]))
            };
            let members: Vec<usize> = group
                .members
                .iter()
                .filter_map(|m| function(&m.name))
                .collect();
            let role = match group.members.iter().all(|m| forwards(&m.name)) {
                true => CallRole::Forwarder,
                false => CallRole::Body {
                    extra: group.parameters,
                },
            };
            if let Some(shared) = function(&group.shared) {
                self.roles.insert(shared, role);
            }
            for member in members {
                self.roles.insert(member, CallRole::Forwarder);
            }
        }
        self
    }

    /// The stand-in kind of `func`; None for a function the module defines.
    pub(super) fn stub_kind(&self, func: &Function) -> Option<&'a StubKind> {
        self.stubs
            .get(&(func as *const Function as usize))
            .map(|&(_, k)| k)
    }

    /// Whether `func` here and `other_func` in `other` do the same when run: the same
    /// function, or stand-ins of the same kind and signature.
    fn same_as(&self, func: &Function, other: &Resolved, other_func: &Function) -> bool {
        self.stub_kind(func) == other.stub_kind(other_func) && func == other_func
    }
}

/// The names and address slots that run the same function on both sides of the check, and
/// whose address is the same (a name's slot). A run of a function the same on both sides that
/// resolved only these is the same run on both sides: the interpreter and the memory are
/// deterministic, so it need not be run twice.
pub(super) struct Unchanged {
    pub(super) names: Vec<bool>,
    pub(super) slots: Vec<bool>,
}

impl Unchanged {
    pub(super) fn new(a: &Resolved, b: &Resolved) -> Unchanged {
        let names = (a.by_name.iter().zip(&b.by_name))
            .zip(a.slot_of.iter().zip(&b.slot_of))
            .map(|((fa, fb), (sa, sb))| a.same_as(fa, b, fb) && sa == sb)
            .collect();
        let slots = a
            .slot_fn
            .iter()
            .zip(&b.slot_fn)
            .map(|(fa, fb)| match (fa, fb) {
                (None, None) => true,
                (Some(fa), Some(fb)) => a.same_as(fa, b, fb),
                _ => false,
            })
            .collect();
        Unchanged { names, slots }
    }
}

impl Unchanged {
    /// The names whose every run is the same on both sides without running it: an unchanged
    /// function (`names`) that calls no address and whose direct callees, and the names whose
    /// addresses it takes, are all such names too. Nothing else makes a run of such a function
    /// differ: an address it takes or reads is the same number on both sides (an unchanged
    /// name has the same slot), and what it calls is the same code, down to every stand-in. The greatest such set: a name leaves it when it calls one that
    /// left, through its callers.
    pub(super) fn closed(&self, a: &Resolved, names: &Names) -> Vec<bool> {
        let n = self.names.len();
        let mut closed = self.names.clone();
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut left: Vec<usize> = Vec::new();
        for (i, func) in a.by_name.iter().enumerate() {
            match direct_callees(func, names) {
                Some(callees) => {
                    for c in callees {
                        callers[c].push(i);
                    }
                }
                None => closed[i] = false,
            }
            if !closed[i] {
                left.push(i);
            }
        }
        while let Some(c) = left.pop() {
            for &caller in &callers[c] {
                if closed[caller] {
                    closed[caller] = false;
                    left.push(caller);
                }
            }
        }
        closed
    }
}

/// The name indices of the functions `func` may call directly or take the address of (every
/// function it declares, and every symbol a global value names); None when it calls through an
/// address, which may reach any function.
fn direct_callees(func: &Function, names: &Names) -> Option<Vec<usize>> {
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if matches!(
                func.dfg.insts[inst].opcode(),
                Opcode::CallIndirect | Opcode::ReturnCallIndirect | Opcode::TryCallIndirect
            ) {
                return None;
            }
        }
    }
    Some(
        referred_names(func)
            .filter_map(|name| names.index_of.get(&name).map(|&i| i as usize))
            .collect(),
    )
}

/// The names `func` refers to: every function it declares and every symbol a global value
/// names.
pub(super) fn referred_names(func: &Function) -> impl Iterator<Item = FuncName> + '_ {
    let symbols = func.global_values.values().filter_map(|gv| match gv {
        GlobalValueData::Symbol { name, .. } => Some(name),
        _ => None,
    });
    (func.dfg.ext_funcs.values().map(|ext| &ext.name))
        .chain(symbols)
        .filter_map(|name| FuncName::of_external(name, func))
}
