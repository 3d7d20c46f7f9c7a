//! The merged module's symbols are the original's, as the report accounts for them. Other
//! objects see a module through its symbols, which no run inside the module observes: a symbol
//! dropped, a linkage changed (an exported function made local is one other objects cannot link
//! against), or two symbols made one address (an alias) are wrong whatever the runs do.
//!
//! - Every function and alias of the original keeps its name, with its linkage, unless the
//!   report says the merge removed it.
//! - Every alias of the merged module is one of the original's, naming its target or the kept
//!   function of the target's class; or one the report says the merge made of a function of a
//!   class, naming the class's kept function; or one of a name the original neither defines
//!   nor refers to (a function the merge made, such as a private copy, which no other object
//!   knows).

use super::outcome::Mismatch;
use crate::module::{ClifModule, FuncName, Symbol, SymbolLinkage};
use crate::pass::MergeReport;
use crate::policy::Action;
use rustc_hash::{FxHashMap, FxHashSet};

/// A mismatch for each symbol of `merged` that is not what the report makes of `original`'s, in
/// the original's order, then the merged module's.
pub(super) fn symbol_mismatches(
    original: &ClifModule,
    merged: &ClifModule,
    report: &MergeReport,
) -> Vec<Mismatch> {
    let accounted = Accounted::of(report);
    let mut found = Vec::new();
    let symbols = (original.functions())
        .map(|mf| (&mf.name, mf.linkage))
        .chain(original.aliases().iter().map(|a| (&a.name, a.linkage)));
    for (name, linkage) in symbols {
        if accounted.removed.contains(name) {
            continue;
        }
        match linkage_of(merged, name) {
            None => found.push(mismatch(name, "the merge dropped its symbol".into())),
            Some(now) if now != linkage => found.push(mismatch(
                name,
                format!(
                    "its linkage was {} and is {} after merging",
                    linkage.keyword(),
                    now.keyword()
                ),
            )),
            Some(_) => {}
        }
    }
    let original_targets: FxHashMap<&FuncName, &FuncName> = (original.aliases().iter())
        .map(|a| (&a.name, &a.target))
        .collect();
    let known = names_of(original);
    for alias in merged.aliases() {
        if !known.contains(&alias.name) {
            continue;
        }
        let allowed = match original_targets.get(&alias.name) {
            Some(&target) => {
                *target == alias.target || accounted.kept_for.get(target) == Some(&&alias.target)
            }
            None => accounted.made_aliases.get(&alias.name) == Some(&&alias.target),
        };
        if !allowed {
            let why = format!(
                "it is an alias of {} after merging, which the report does not account for",
                alias.target
            );
            found.push(mismatch(&alias.name, why));
        }
    }
    found
}

/// What the report says the merge did to symbols.
struct Accounted<'r> {
    /// The functions it removed (no symbol left).
    removed: FxHashSet<&'r FuncName>,
    /// Every replaced function's class's kept function.
    kept_for: FxHashMap<&'r FuncName, &'r FuncName>,
    /// The functions it made aliases, each with the function it names.
    made_aliases: FxHashMap<&'r FuncName, &'r FuncName>,
}

impl<'r> Accounted<'r> {
    fn of(report: &'r MergeReport) -> Accounted<'r> {
        let mut accounted = Accounted {
            removed: FxHashSet::default(),
            kept_for: FxHashMap::default(),
            made_aliases: FxHashMap::default(),
        };
        for class in &report.classes {
            for r in &class.replaced {
                accounted.kept_for.insert(&r.name, &class.kept);
                match r.by {
                    Action::Removed => {
                        accounted.removed.insert(&r.name);
                    }
                    Action::Alias => {
                        accounted.made_aliases.insert(&r.name, &class.kept);
                    }
                    Action::Thunk => {}
                }
            }
        }
        let similar = report.similar.iter().flatten().flat_map(|g| &g.members);
        for member in similar.filter(|m| m.by == Action::Removed) {
            accounted.removed.insert(&member.name);
        }
        accounted
    }
}

/// Every name `module` defines, aliases or refers to (a declared function, a symbol).
fn names_of(module: &ClifModule) -> FxHashSet<FuncName> {
    let mut names = FxHashSet::default();
    for mf in module.functions() {
        names.insert(mf.name.clone());
        names.extend(super::names::referred_names(&mf.func));
    }
    names.extend(module.aliases().iter().map(|a| a.name.clone()));
    names
}

/// The linkage of the symbol `name` in `module`, if it has one.
fn linkage_of(module: &ClifModule, name: &FuncName) -> Option<SymbolLinkage> {
    Some(match module.lookup(name)? {
        Symbol::Function(id) => module.function(id).linkage,
        Symbol::Alias(i) => module.aliases()[i].linkage,
    })
}

fn mismatch(name: &FuncName, why: String) -> Mismatch {
    Mismatch::unrun(name, format!("symbol: {why}"))
}
