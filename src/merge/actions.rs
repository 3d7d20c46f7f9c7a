//! The merge actions: given the classes, decide what becomes of each function ("decide"), then
//! rewrite the module ("apply"). In this file `f` is the kept function of a class and `g` a
//! replaced one.
//!
//! The rules, one hazard each:
//! - The kept function is the first member by [`kept_order`]: linkage (export, hidden, local,
//!   preemptible), then name. Keeping the most visible function lets the others go.
//! - A preemptible function may be replaced at link time, so it is never kept as the body others
//!   call: when every member is preemptible, a private copy of the body is made and every member
//!   becomes a thunk (or alias) of it; calls to preemptible functions are never redirected.
//! - A `local` function whose address nobody takes can only be reached by the calls we redirect:
//!   it is removed ([`can_remove`]).
//! - Any other function may be reached from outside the module or compared by address: it keeps
//!   its symbol, as a thunk calling `f` (safe, thunks) or as an alias of `f` (aliases).

use super::{Callees, Classes, Mode};
use crate::module::{
    Alias, ClifModule, FuncName, FunctionId, ModuleFunction, Symbol, SymbolLinkage,
};
use crate::parallel;
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{
    ExtFuncData, FuncRef, Function, Inst, InstBuilder, InstructionData, Opcode, Signature,
};
use cranelift_codegen::isa::CallConv;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

/// What became of a replaced function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Its symbol is an alias of the kept function; it has no code of its own.
    Alias,
    /// Its body calls the kept function and returns its results.
    Thunk,
    /// It is gone; its callers call the kept function.
    Removed,
}

impl Action {
    pub fn keyword(self) -> &'static str {
        match self {
            Action::Alias => "alias",
            Action::Thunk => "thunk",
            Action::Removed => "removed",
        }
    }
}

/// One replaced function of a class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replacement {
    pub name: String,
    pub by: Action,
}

/// One class of two or more equal functions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MergedClass {
    /// The function whose body remains (a new private name when a private copy was made).
    pub kept: String,
    pub replaced: Vec<Replacement>,
}

/// What the pass did to a module.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// Functions defined in the input.
    pub functions: usize,
    /// Functions that no longer carry their own body.
    pub merged: usize,
    pub classes: Vec<MergedClass>,
}

/// The order in which class members are considered for keeping.
pub fn kept_order(a: &ModuleFunction, b: &ModuleFunction) -> std::cmp::Ordering {
    a.linkage.cmp(&b.linkage).then_with(|| a.name.cmp(&b.name))
}

/// Whether `g` can disappear: only the calls we redirect can reach it.
pub fn can_remove(mode: Mode, linkage: SymbolLinkage, address_taken: bool) -> bool {
    mode != Mode::Thunks && linkage == SymbolLinkage::Local && !address_taken
}

/// What `g` becomes once merged.
pub fn action_for(mode: Mode, linkage: SymbolLinkage, address_taken: bool) -> Action {
    if can_remove(mode, linkage, address_taken) {
        Action::Removed
    } else if mode == Mode::Aliases {
        Action::Alias
    } else {
        Action::Thunk
    }
}

/// Where a class's body lives after the merge.
#[derive(Clone, Debug)]
enum Kept {
    Member(FunctionId),
    /// A local copy of `of`'s body under a new name (every member was preemptible).
    PrivateCopy {
        of: FunctionId,
        name: FuncName,
    },
}

/// The decision for one class.
struct ClassPlan {
    kept: Kept,
    replaced: Vec<(FunctionId, Action)>,
}

impl ClassPlan {
    fn kept_name<'m>(&'m self, module: &'m ClifModule) -> &'m FuncName {
        match &self.kept {
            Kept::Member(id) => &module.function(*id).name,
            Kept::PrivateCopy { name, .. } => name,
        }
    }
}

/// Decides and applies the merges of `classes`; returns the report.
pub(crate) fn apply(
    module: &mut ClifModule,
    classes: &Classes,
    callees: &Callees,
    mode: Mode,
) -> MergeReport {
    if classes.classes.is_empty() {
        return report(module, &[]);
    }
    let plans = decide(module, classes, mode);
    let report = report(module, &plans);
    rewrite(module, callees, &plans);
    report
}

fn decide(module: &ClifModule, classes: &Classes, mode: Mode) -> Vec<ClassPlan> {
    // Only a local function's action depends on whether its address is taken.
    let any_local = classes
        .classes
        .iter()
        .flatten()
        .any(|&f| module.function(f).linkage == SymbolLinkage::Local);
    let address_taken = if any_local {
        module.address_taken()
    } else {
        vec![false; module.functions().len()]
    };
    // Each class on its own (in parallel: in a large module this reads many function bodies),
    // then the private copies are named in class order.
    let decided = parallel::map(
        &classes.classes,
        || (),
        |_, _, members| decide_class(module, mode, &address_taken, members),
    );
    // Only needed to name private copies, which are rare.
    let mut taken_names: Option<FxHashSet<FuncName>> = None;
    decided
        .into_iter()
        .flatten()
        .map(|decision| {
            let ClassDecision {
                first,
                private_copy,
                replaced,
            } = decision;
            let kept = if private_copy {
                let taken = taken_names.get_or_insert_with(|| names_in_use(module));
                let name = private_name(&module.function(first).name, taken);
                Kept::PrivateCopy { of: first, name }
            } else {
                Kept::Member(first)
            };
            ClassPlan { kept, replaced }
        })
        .collect()
}

/// One class's decision, before private copies are named.
struct ClassDecision {
    /// The first member by [`kept_order`].
    first: FunctionId,
    /// Whether the body must go to a private copy (the first is preemptible, so all are).
    private_copy: bool,
    /// What becomes of the others.
    replaced: Vec<(FunctionId, Action)>,
}

/// One class's decision; None when nothing would change.
fn decide_class(
    module: &ClifModule,
    mode: Mode,
    address_taken: &[bool],
    members: &[FunctionId],
) -> Option<ClassDecision> {
    let mut members = members.to_vec();
    // The first by `kept_order` goes to the front; the order of the others does not matter
    // (the report sorts them by name).
    let (at, _) = members
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| kept_order(module.function(**a), module.function(**b)))?;
    members.swap(0, at);
    let first = members[0];
    let private_copy = module.function(first).linkage.is_preemptible();
    if !private_copy {
        members.remove(0);
    }
    let replaced: Vec<(FunctionId, Action)> = members
        .into_iter()
        .map(|g| {
            let linkage = module.function(g).linkage;
            (g, action_for(mode, linkage, address_taken[g.index()]))
        })
        // A function that already only forwards its arguments gains nothing from becoming a
        // thunk (it is one); leaving it keeps the pass idempotent.
        .filter(|&(g, action)| {
            action != Action::Thunk || !is_forwarding_thunk(&module.function(g).func)
        })
        .collect();
    (!replaced.is_empty()).then_some(ClassDecision {
        first,
        private_copy,
        replaced,
    })
}

/// Every name the module defines or refers to: a new name must be none of them, or a call to an
/// imported function could end up calling the new one.
fn names_in_use(module: &ClifModule) -> FxHashSet<FuncName> {
    let mut names: FxHashSet<FuncName> = FxHashSet::default();
    for mf in module.functions() {
        names.insert(mf.name.clone());
        let func = &mf.func;
        for ext in func.dfg.ext_funcs.values() {
            names.extend(FuncName::of_external(&ext.name, func));
        }
        for gv in func.global_values.values() {
            if let cranelift_codegen::ir::GlobalValueData::Symbol { name, .. } = gv {
                names.extend(FuncName::of_external(name, func));
            }
        }
    }
    names.extend(
        module
            .aliases()
            .iter()
            .flat_map(|a| [a.name.clone(), a.target.clone()]),
    );
    names
}

/// Whether `func` only passes its parameters, in order, to one direct call and returns that
/// call's results: the shape of a thunk.
pub fn is_forwarding_thunk(func: &Function) -> bool {
    // Counting what was ever created spares a walk of the layout for almost every function. A
    // thunk that also holds dead instructions is not recognised: it becomes a new thunk, which
    // is correct, only not idempotent.
    if func.dfg.num_insts() > 2 || func.dfg.num_blocks() > 1 {
        return false;
    }
    let mut blocks = func.layout.blocks();
    let (Some(entry), None) = (blocks.next(), blocks.next()) else {
        return false;
    };
    let params = func.dfg.block_params(entry);
    let insts: Vec<_> = func.layout.block_insts(entry).collect();
    let forwards = |args: &[cranelift_codegen::ir::Value]| args == params;
    match insts[..] {
        [only] => match func.dfg.insts[only] {
            InstructionData::Call {
                opcode: Opcode::ReturnCall,
                args,
                ..
            } => forwards(args.as_slice(&func.dfg.value_lists)),
            _ => false,
        },
        [call, ret] => {
            let is_call = matches!(
                func.dfg.insts[call],
                InstructionData::Call { opcode: Opcode::Call, args, .. }
                    if forwards(args.as_slice(&func.dfg.value_lists))
            );
            let returns_results = matches!(
                func.dfg.insts[ret],
                InstructionData::MultiAry { opcode: Opcode::Return, args }
                    if args.as_slice(&func.dfg.value_lists) == func.dfg.inst_results(call)
            );
            is_call && returns_results
        }
        _ => false,
    }
}

/// A fresh testcase name for a private copy of `of`: `%<of>_merged`, numbered if taken.
fn private_name(of: &FuncName, taken: &mut FxHashSet<FuncName>) -> FuncName {
    let base = match of {
        FuncName::User { namespace, index } => format!("u{namespace}_{index}_merged"),
        FuncName::Testcase(t) => format!("{t}_merged"),
    };
    let mut candidate = FuncName::Testcase(base.clone().into());
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = FuncName::Testcase(format!("{base}{n}").into());
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

fn report(module: &ClifModule, plans: &[ClassPlan]) -> MergeReport {
    let mut classes: Vec<(FuncName, MergedClass)> = parallel::map(
        plans,
        || (),
        |_, _, plan| {
            let mut replaced: Vec<(&FuncName, Action)> = plan
                .replaced
                .iter()
                .map(|&(g, action)| (&module.function(g).name, action))
                .collect();
            replaced.sort_by(|a, b| a.0.cmp(b.0));
            let kept = plan.kept_name(module);
            let smallest = replaced.first().map_or(kept, |r| r.0).min(kept).clone();
            let class = MergedClass {
                kept: kept.to_string(),
                replaced: replaced
                    .into_iter()
                    .map(|(name, by)| Replacement {
                        name: name.to_string(),
                        by,
                    })
                    .collect(),
            };
            (smallest, class)
        },
    );
    classes.sort_by(|a, b| a.0.cmp(&b.0));
    MergeReport {
        functions: module.functions().len(),
        merged: plans.iter().map(|p| p.replaced.len()).sum(),
        classes: classes.into_iter().map(|(_, c)| c).collect(),
    }
}

fn rewrite(module: &mut ClifModule, callees: &Callees, plans: &[ClassPlan]) {
    // Phase 1 of 3: what each function becomes, and where calls go (both by plan index).
    let n = module.functions().len();
    let kept_names: Vec<FuncName> = plans.iter().map(|p| p.kept_name(module).clone()).collect();
    let mut action_of: Vec<Option<(Action, u32)>> = vec![None; n];
    let mut redirect: Vec<Option<u32>> = vec![None; n];
    // Private copies, each with the function it copies and the one it goes before.
    let mut copies: Vec<(FunctionId, FunctionId, ModuleFunction)> = Vec::new();
    for (p, plan) in plans.iter().enumerate() {
        for &(g, action) in &plan.replaced {
            action_of[g.index()] = Some((action, p as u32));
            // A preemptible function's callers keep calling it: it may be replaced at link time.
            if !module.function(g).linkage.is_preemptible() {
                redirect[g.index()] = Some(p as u32);
            }
        }
        if let Kept::PrivateCopy { of, name } = &plan.kept {
            let before = plan.replaced.iter().map(|r| r.0).min().unwrap_or(*of);
            let original = module.function(*of);
            let mut func = original.func.clone();
            func.name = name.to_user_func_name();
            let copy = ModuleFunction {
                name: name.clone(),
                func,
                linkage: SymbolLinkage::Local,
                origin: original.origin.clone(),
            };
            copies.push((*of, before, copy));
        }
    }
    let redirects: Vec<Vec<(FuncRef, &FuncName)>> = parallel::map(
        module.functions(),
        || (),
        |_, i, _| redirects_in(callees.of(FunctionId(i as u32)), &redirect, &kept_names),
    );
    let takes_address = |f: FunctionId| callees.takes_address(f);

    // Phase 2 of 3: bodies, in place (most functions stay where they are), each on its own.
    parallel::for_each_mut(module.functions_mut(), |i, mf| match action_of[i] {
        None => redirect_calls(
            &mut mf.func,
            &redirects[i],
            takes_address(FunctionId(i as u32)),
        ),
        Some((Action::Thunk, p)) => {
            let f = &kept_names[p as usize];
            // In place only for small bodies: a cleared function keeps the capacity of its
            // tables, which should not outlive the merge by more than a little.
            if mf.func.dfg.num_insts() <= REUSE_MAX_INSTS {
                rewrite_as_thunk(&mut mf.func, &mf.name, f)
            } else {
                mf.func = write_thunk(&mf.name, &mf.func.signature, f)
            }
        }
        Some((Action::Removed | Action::Alias, _)) => {}
    });
    let mut gone = vec![false; n];
    let mut new_aliases = Vec::new();
    for (i, action) in action_of.into_iter().enumerate() {
        match action {
            Some((Action::Removed, _)) => gone[i] = true,
            Some((Action::Alias, p)) => {
                gone[i] = true;
                let mf = module.function(FunctionId(i as u32));
                new_aliases.push(Alias {
                    name: mf.name.clone(),
                    target: kept_names[p as usize].clone(),
                    linkage: mf.linkage,
                });
            }
            None | Some((Action::Thunk, _)) => {}
        }
    }
    for (of, _, copy) in &mut copies {
        redirect_calls(&mut copy.func, &redirects[of.index()], takes_address(*of));
    }
    drop(redirects);

    // Phase 3 of 3: the list of functions, when it changed, and the aliases.
    module.update(
        gone,
        copies
            .into_iter()
            .map(|(_, before, copy)| (before, copy))
            .collect(),
        new_aliases,
    );
}

/// The declarations (`callees`, by `FuncRef`) that name a function whose calls go to another,
/// with the name they go to.
fn redirects_in<'n>(
    callees: &[Option<Symbol>],
    redirect: &[Option<u32>],
    kept_names: &'n [FuncName],
) -> Vec<(FuncRef, &'n FuncName)> {
    callees
        .iter()
        .enumerate()
        .filter_map(|(r, symbol)| match symbol {
            Some(Symbol::Function(id)) => {
                redirect[id.index()].map(|p| (FuncRef::new(r), &kept_names[p as usize]))
            }
            _ => None,
        })
        .collect()
}

/// Points every call (not address) through the declarations in `redirects` at their new name.
/// Without `func_addr` in `func` (`takes_address`), renaming the declarations is enough.
fn redirect_calls(func: &mut Function, redirects: &[(FuncRef, &FuncName)], takes_address: bool) {
    if redirects.is_empty() {
        return;
    }
    if !takes_address {
        for &(fr, target) in redirects {
            let new_name = target.to_external(func);
            func.dfg.ext_funcs[fr].name = new_name;
        }
        return;
    }
    // Instructions are scanned in storage order, not layout order: every instruction that is
    // not in the layout is dead, and rewriting it too is harmless (and cheaper than the walk).
    let insts = || (0..func.dfg.num_insts()).map(Inst::new);
    // A declaration also used by `func_addr` must keep its name: the address is G's.
    let address_uses: FxHashSet<FuncRef> = insts()
        .filter_map(|inst| match func.dfg.insts[inst] {
            InstructionData::FuncAddr { func_ref, .. } => Some(func_ref),
            _ => None,
        })
        .collect();
    let mut call_target: FxHashMap<FuncRef, FuncRef> = FxHashMap::default();
    for &(fr, target) in redirects {
        let new_name = target.to_external(func);
        if address_uses.contains(&fr) {
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

/// A function named `g` with signature `sig` that passes its arguments to `f` and returns its
/// results: a `return_call` under the `tail` convention, a call and a return otherwise.
pub fn write_thunk(g: &FuncName, sig: &Signature, f: &FuncName) -> Function {
    let mut func = Function::with_name_signature(g.to_user_func_name(), sig.clone());
    write_thunk_body(&mut func, f);
    func
}

/// The largest body (in instructions created) whose memory a thunk reuses.
const REUSE_MAX_INSTS: usize = 256;

/// Replaces the body of `func`, named `g`, by a thunk calling `f` ([`write_thunk`]'s), reusing
/// its memory: the same function as `write_thunk` writes, without freeing and allocating again
/// every table of the function.
fn rewrite_as_thunk(func: &mut Function, g: &FuncName, f: &FuncName) {
    let sig = std::mem::replace(&mut func.signature, Signature::new(CallConv::Fast));
    func.clear();
    // `Function::clear` leaves the exception tables (cranelift 0.135).
    func.dfg.exception_tables.clear();
    func.name = g.to_user_func_name();
    func.signature = sig;
    write_thunk_body(func, f);
}

/// Writes the body of a thunk calling `f` into `func`, which has a signature and nothing else.
fn write_thunk_body(func: &mut Function, f: &FuncName) {
    let sig = func.signature.clone();
    let callee_name = f.to_external(func);
    let sig_ref = func.import_signature(sig.clone());
    let callee = func.import_function(ExtFuncData {
        name: callee_name,
        signature: sig_ref,
        colocated: true,
        patchable: false,
    });
    let block = func.dfg.make_block();
    for param in &sig.params {
        func.dfg.append_block_param(block, param.value_type);
    }
    let mut pos = FuncCursor::new(func);
    pos.insert_block(block);
    let args = pos.func.dfg.block_params(block).to_vec();
    if sig.call_conv == CallConv::Tail {
        pos.ins().return_call(callee, &args);
    } else {
        let call = pos.ins().call(callee, &args);
        let results = pos.func.dfg.inst_results(call).to_vec();
        pos.ins().return_(&results);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Function {
        let mut funcs = cranelift_reader::parse_functions(text).expect("valid CLIF");
        funcs.remove(0)
    }

    /// The thunk written into an old body is the very function `write_thunk` makes, for every
    /// calling convention, with and without results, and from a body with exception tables,
    /// jump tables, stack slots and constants to forget.
    #[test]
    fn thunk_in_place_equals_a_fresh_thunk() {
        let bodies = [
            "function %g(i32) -> i32 tail {
                sig0 = (i32) -> i32 tail
                fn0 = %callee sig0
            block0(v0: i32):
                try_call fn0(v0), sig0, block1(ret0), [ tag1: block2(exn0), default: block3 ]
            block1(v1: i32):
                return v1
            block2(v2: i64):
                v3 = iconst.i32 1
                return v3
            block3:
                v4 = iconst.i32 2
                return v4
            }",
            "function %g(i64, f64) system_v {
                ss0 = explicit_slot 16
            block0(v0: i64, v1: f64):
                v9 = stack_addr.i64 ss0
                store v1, v9
                v2 = vconst.i8x16 0x01
                br_table v0, block1, [block1, block2]
            block1:
                return
            block2:
                trap user1
            }",
            "function u0:7() -> i8 fast {
            block0:
                v0 = iconst.i8 3
                return v0
            }",
        ];
        for text in bodies {
            let mut func = parse(text);
            let g = FuncName::of_function(&func);
            let f = FuncName::parse("%kept").unwrap();
            let fresh = write_thunk(&g, &func.signature, &f);
            rewrite_as_thunk(&mut func, &g, &f);
            assert!(
                func == fresh,
                "in place:\n{}fresh:\n{}",
                func.display(),
                fresh.display()
            );
            assert!(func.dfg.exception_tables.is_empty());
        }
    }
}
