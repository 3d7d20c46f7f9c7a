//! The merge policy: which member of a class keeps its body and what becomes of the others. One
//! set of rules for every kind of merge: the IR merge (`crate::merge`), similar merging
//! (`crate::similar`), global merging (`crate::global`) and machine-code folding
//! (`crate::fold`). It is the bottom layer with the IR edits (`crate::edit`): it uses neither
//! merger, so that they can share it as siblings. In this file `f` is the kept function of a
//! class and `g` a replaced one.
//!
//! The rules, one hazard each:
//! - The kept function is the first member by [`kept_order`]: linkage (export, hidden, local,
//!   preemptible), then name. Keeping the most visible function lets the others go.
//! - A `linkonce` function (a global shared body, `crate::global`) is one of identical copies
//!   that every unit holding it writes, of which the linker keeps any one: each copy must be
//!   the body, in every unit, whatever else the unit holds. So it comes first of all, is never
//!   replaced (a second one in the class stays as it is), and the others call it as they would
//!   any kept function (every copy is the same function) but are never its aliases: an alias
//!   would be a second symbol in its COMDAT group, gone when the linker drops this copy.
//! - A preemptible function may be replaced at link time, so it is never kept as the body others
//!   call. When every member is preemptible, the IR merge makes a private copy of the body and
//!   every member becomes a thunk (or alias) of it ([`AllPreemptible::PrivateCopy`]); machine-code
//!   folding, which cannot copy, only makes aliases, which name the body itself whatever the link
//!   does with the symbol, and leaves the would-be thunks alone ([`AllPreemptible::AliasesOnly`]).
//! - A `local` function whose address nobody takes can only be reached by the calls we redirect:
//!   it is removed ([`can_remove`]). In thunks mode every function of the input keeps its
//!   symbol; one the run made (a shared body, a private copy) has no symbol anyone relies on, so
//!   the rule still removes it: left as a thunk it would be dead code nobody calls.
//! - Any other function may be reached from outside the module or compared by address: it keeps
//!   its symbol, as a thunk calling `f` (safe, thunks) or as an alias of `f` (aliases).
//! - A function that already only forwards its arguments to `f` gains nothing from becoming a
//!   thunk (it is one); leaving it keeps the pass idempotent.
//! - A function that reads its own frame ([`frame`]) would see the thunk's frame and return
//!   address instead of its callers': it is removed or made an alias where the rules above allow,
//!   never made a thunk.

pub mod frame;

use crate::module::{FunctionId, ModuleFunction, SymbolLinkage};
use serde::Serialize;

/// What the addresses of merged functions must preserve. With the `cli` feature, also a
/// [`clap::ValueEnum`] (the command line's `--mode`), each variant's first line its help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Mode {
    /// Every symbol keeps a distinct address: a merged function that others may reach or whose
    /// address is taken becomes a thunk; a local one nobody takes the address of is removed.
    #[default]
    Safe,
    /// Addresses of merged functions are not significant: they become aliases.
    Aliases,
    /// Every merged function keeps its symbol as a thunk; nothing of the input is deleted.
    Thunks,
}

impl Mode {
    /// The word the command line uses.
    pub fn keyword(self) -> &'static str {
        match self {
            Mode::Safe => "safe",
            Mode::Aliases => "aliases",
            Mode::Thunks => "thunks",
        }
    }

    /// The mode a word names.
    pub fn from_keyword(word: &str) -> Option<Mode> {
        Some(match word {
            "safe" => Mode::Safe,
            "aliases" => Mode::Aliases,
            "thunks" => Mode::Thunks,
            _ => return None,
        })
    }
}

/// What became of a replaced function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
    /// The word the reports use.
    pub fn keyword(self) -> &'static str {
        match self {
            Action::Alias => "alias",
            Action::Thunk => "thunk",
            Action::Removed => "removed",
        }
    }
}

/// The order in which class members are considered for keeping: `linkonce` first (see the
/// module docs), then by linkage, then by name.
pub fn kept_order(a: &ModuleFunction, b: &ModuleFunction) -> std::cmp::Ordering {
    let is_linkonce = |f: &ModuleFunction| f.linkage == SymbolLinkage::LinkOnce;
    is_linkonce(b)
        .cmp(&is_linkonce(a))
        .then_with(|| a.linkage.cmp(&b.linkage))
        .then_with(|| a.name.cmp(&b.name))
}

/// Whether `g` can disappear: only the calls we redirect can reach it, and it is not a symbol
/// of the input that thunks mode keeps (`made_by_run`: the run made `g`, see the module docs).
pub fn can_remove(
    mode: Mode,
    linkage: SymbolLinkage,
    address_taken: bool,
    made_by_run: bool,
) -> bool {
    (mode != Mode::Thunks || made_by_run) && linkage == SymbolLinkage::Local && !address_taken
}

/// What `g` becomes once merged.
pub fn action_for(g: &MemberFacts<'_>, mode: Mode) -> Action {
    let linkage = g.function.linkage;
    if can_remove(mode, linkage, g.address_taken, g.made_by_run) {
        Action::Removed
    } else if mode == Mode::Aliases {
        Action::Alias
    } else {
        Action::Thunk
    }
}

/// What a merge can do when every member of a class is preemptible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllPreemptible {
    /// Copy the body under a new local name; every member is replaced (the IR merge).
    PrivateCopy,
    /// Keep the first member's body; the others become aliases of it, never thunks (folding).
    #[cfg_attr(not(feature = "object"), allow(dead_code))]
    AliasesOnly,
}

/// What a class's members know about themselves, for the policy.
pub struct MemberFacts<'a> {
    /// The member itself.
    pub function: &'a ModuleFunction,
    /// Whether its address is observable in the module.
    pub address_taken: bool,
    /// Whether this run made it (a shared body, a private copy): the input had no such symbol.
    pub made_by_run: bool,
}

/// One class's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassDecision {
    /// The first member by [`kept_order`]: the kept function, or the one a private copy copies.
    pub first: FunctionId,
    /// Whether the body goes to a private copy (the first is preemptible, so all are).
    pub private_copy: bool,
    /// What becomes of the others, in no particular order.
    pub replaced: Vec<(FunctionId, Action)>,
}

/// Decides a class of two or more equal members; None when nothing would change.
/// `stays_as_is` says whether a member that would become a thunk is left as it is: it already
/// is a minimal thunk, or it reads its own frame (see the module docs); it is asked only of
/// members that would become thunks.
pub fn decide_class<'a>(
    mode: Mode,
    all_preemptible: AllPreemptible,
    members: &[FunctionId],
    facts: impl Fn(FunctionId) -> MemberFacts<'a>,
    stays_as_is: impl Fn(FunctionId) -> bool,
) -> Option<ClassDecision> {
    let mut members: Vec<(FunctionId, MemberFacts<'a>)> =
        members.iter().map(|&f| (f, facts(f))).collect();
    let (at, _) = members
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| kept_order(a.1.function, b.1.function))?;
    members.swap(0, at);
    let first = members[0].0;
    let kept_linkage = members[0].1.function.linkage;
    let kept_linkonce = kept_linkage == SymbolLinkage::LinkOnce;
    // A `linkonce` body is the same function in every copy: it may be kept like any other.
    let preemptible = kept_linkage.is_preemptible() && !kept_linkonce;
    let private_copy = preemptible && all_preemptible == AllPreemptible::PrivateCopy;
    if !private_copy {
        members.remove(0);
    }
    let replaced: Vec<(FunctionId, Action)> = members
        .into_iter()
        .filter(|(_, g_facts)| g_facts.function.linkage != SymbolLinkage::LinkOnce)
        .filter_map(|(g, g_facts)| {
            let action = match action_for(&g_facts, mode) {
                Action::Alias if kept_linkonce => Action::Thunk,
                action => action,
            };
            let keep_as_is =
                action == Action::Thunk && ((preemptible && !private_copy) || stays_as_is(g));
            (!keep_as_is).then_some((g, action))
        })
        .collect();
    (!replaced.is_empty()).then_some(ClassDecision {
        first,
        private_copy,
        replaced,
    })
}
