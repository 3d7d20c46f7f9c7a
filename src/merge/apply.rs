//! Applying a plan: redirect calls, turn replaced functions into thunks or aliases, remove the
//! rest, add private copies. In this file `f` is the kept function of a class and `g` a replaced
//! one.

use super::plan::{Kept, MergePlan};
use crate::edit::thunk::{REUSE_MAX_INSTS, rewrite_as_thunk, write_thunk};
use crate::module::{
    Alias, ClifModule, FuncName, FunctionId, ModuleFunction, Symbol, SymbolLinkage,
};
use crate::parallel;
use crate::policy::Action;
use crate::refs::{FunctionRefs, ModuleRefs};
use cranelift_codegen::ir::{ExtFuncData, FuncRef, Function, Inst, InstructionData};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};
use rustc_hash::FxHashMap;

/// Rewrites `module` as `plan` says; `refs` are the module's references before the rewrite.
pub fn apply(module: &mut ClifModule, refs: &ModuleRefs, plan: &MergePlan) {
    if plan.classes.is_empty() {
        return;
    }
    // Phase 1 of 3: what each function becomes, and where calls go (both by class index).
    let mut action_of: SecondaryMap<FunctionId, Option<(Action, u32)>> = SecondaryMap::new();
    let mut redirect: SecondaryMap<FunctionId, Option<u32>> = SecondaryMap::new();
    action_of.resize(module.id_count());
    redirect.resize(module.id_count());
    // Private copies, each with the function it copies and the one it goes before.
    let mut copies: Vec<(FunctionId, FunctionId, ModuleFunction)> = Vec::new();
    let mut gone = EntitySet::with_capacity(module.id_count());
    let mut new_aliases = Vec::new();
    for (c, class) in plan.classes.iter().enumerate() {
        for &(g, action) in &class.replaced {
            action_of[g] = Some((action, c as u32));
            let mf = module.function(g);
            // A preemptible function's callers keep calling it: it may be replaced at link time.
            if !mf.linkage.is_preemptible() {
                redirect[g] = Some(c as u32);
            }
            match action {
                Action::Removed => {
                    gone.insert(g);
                }
                Action::Alias => {
                    gone.insert(g);
                    new_aliases.push((
                        g,
                        Alias {
                            name: mf.name.clone(),
                            target: class.kept_name(module).clone(),
                            linkage: mf.linkage,
                        },
                    ));
                }
                Action::Thunk => {}
            }
        }
        if let Kept::PrivateCopy { of, name } = &class.kept {
            let before = class.replaced.iter().map(|r| r.0).min().unwrap_or(*of);
            copies.push((*of, before, private_copy(module.function(*of), name)));
        }
    }
    // In id order, as they were added before.
    new_aliases.sort_unstable_by_key(|&(g, _)| g);

    // Phase 2 of 3: bodies, in place (most functions stay where they are), each on its own.
    // Each function is split into its name, which every task may read (a thunk's own, a kept
    // function's for the calls to it), and its body, which only its own task writes: the kept
    // names are borrowed, not copied.
    let mut parts: Vec<(&FuncName, &mut Function)> = module
        .all_functions_mut()
        .iter_mut()
        .map(|mf| (&mf.name, &mut *mf.func))
        .collect();
    let kept_names: Vec<&FuncName> = plan
        .classes
        .iter()
        .map(|class| match &class.kept {
            Kept::Member(f) => parts[f.index()].0,
            Kept::PrivateCopy { name, .. } => name,
        })
        .collect();
    // Where each function's calls go, read from its references as its body is rewritten (a
    // list of redirects per function, made beforehand, was an allocation for most functions).
    let redirects = Redirects {
        redirect: &redirect,
        kept_names: &kept_names,
    };
    parallel::for_each_mut(&mut parts, |i, (name, func)| {
        let id = FunctionId::new(i);
        match action_of[id] {
            None => redirects.apply(func, refs.of_function(id)),
            Some((Action::Thunk, c)) => {
                let f = kept_names[c as usize];
                // In place only for small bodies: a cleared function keeps the capacity of its
                // tables, which should not outlive the merge by more than a little.
                if func.dfg.num_insts() <= REUSE_MAX_INSTS {
                    rewrite_as_thunk(func, name, f)
                } else {
                    **func = write_thunk(name, &func.signature, f)
                }
            }
            Some((Action::Removed | Action::Alias, _)) => {}
        }
    });
    for (of, _, copy) in &mut copies {
        redirects.apply(&mut copy.func, refs.of_function(*of));
    }
    drop(parts);

    // Phase 3 of 3: the layout and the symbols.
    module.update(
        gone,
        copies
            .into_iter()
            .map(|(_, before, copy)| (before, copy))
            .collect(),
        new_aliases.into_iter().map(|(_, alias)| alias).collect(),
    );
}

/// A local copy of `original` named `name`.
fn private_copy(original: &ModuleFunction, name: &FuncName) -> ModuleFunction {
    let mut func = original.func.clone();
    func.name = name.to_user_func_name();
    ModuleFunction {
        name: name.clone(),
        func,
        linkage: SymbolLinkage::Local,
        origin: original.origin.clone(),
    }
}

/// Where calls go: for each function whose calls are redirected, the class whose kept function
/// takes them, and each class's kept name.
struct Redirects<'a> {
    redirect: &'a SecondaryMap<FunctionId, Option<u32>>,
    kept_names: &'a [&'a FuncName],
}

impl Redirects<'_> {
    /// The declarations of a function (with references `refs`) that name a function whose
    /// calls go to another, with the name they go to, in declaration order.
    fn of<'r>(&'r self, refs: &'r FunctionRefs) -> impl Iterator<Item = (FuncRef, &'r FuncName)> {
        refs.callees
            .iter()
            .enumerate()
            .filter_map(|(r, symbol)| match symbol {
                Some(Symbol::Function(id)) => {
                    self.redirect[*id].map(|c| (FuncRef::new(r), self.kept_names[c as usize]))
                }
                _ => None,
            })
    }

    /// Points `func`'s calls (its references are `refs`) where they go ([`redirect_calls`]).
    fn apply(&self, func: &mut Function, refs: &FunctionRefs) {
        redirect_calls(func, self.of(refs), refs);
    }
}

/// Points every call (not address) through the declarations in `redirects` at their new name.
/// A declaration that `func_addr` also uses keeps its name (the address is `g`'s) and calls get
/// a new declaration; without `func_addr`, renaming the declarations is enough.
fn redirect_calls<'n>(
    func: &mut Function,
    redirects: impl Iterator<Item = (FuncRef, &'n FuncName)>,
    refs: &FunctionRefs,
) {
    let mut call_target: FxHashMap<FuncRef, FuncRef> = FxHashMap::default();
    for (fr, target) in redirects {
        let new_name = target.to_external(func);
        if refs.address_uses.binary_search(&fr).is_ok() {
            let data = ExtFuncData {
                name: new_name,
                ..func.dfg.ext_funcs[fr].clone()
            };
            let new_ref = func.dfg.ext_funcs.push(data);
            call_target.insert(fr, new_ref);
        } else {
            func.dfg.ext_funcs[fr].name = new_name;
        }
    }
    if call_target.is_empty() {
        return;
    }
    // Instructions are scanned in storage order, not layout order: every instruction that is
    // not in the layout is dead, and rewriting it too is harmless (and cheaper than the walk).
    for i in 0..func.dfg.num_insts() {
        match &mut func.dfg.insts[Inst::new(i)] {
            InstructionData::Call { func_ref, .. } | InstructionData::TryCall { func_ref, .. } => {
                if let Some(&new_ref) = call_target.get(func_ref) {
                    *func_ref = new_ref;
                }
            }
            _ => {}
        }
    }
}
