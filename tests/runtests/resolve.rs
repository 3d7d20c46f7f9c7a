//! What runs, in a merged module, for a function of the original: the function itself, its
//! alias or thunk, the kept function its callers now call, or — for a member the similar
//! merge removed — a stand-in that passes the member's values to the shared body.

use clif_merge::{Action, ClifModule, FuncName, MergeReport, SymbolLinkage};
use std::collections::HashMap;

/// How a run line reaches code in the merged module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// The function is there, unchanged by an exact merge (it may be a kept function).
    Kept,
    /// An alias of the kept function.
    Alias,
    /// A thunk to the kept function.
    Thunk,
    /// Removed: its callers call the kept function.
    Redirect,
    /// A member of a similar group that kept its symbol: a thunk to the shared body.
    SimilarThunk,
    /// A member of a similar group that was removed: its callers call the shared body with
    /// its values (here through a stand-in that does the same).
    SimilarRedirect,
}

impl Route {
    /// The word the counts use.
    pub fn word(self) -> &'static str {
        match self {
            Route::Kept => "kept",
            Route::Alias => "alias",
            Route::Thunk => "thunk",
            Route::Redirect => "redirect",
            Route::SimilarThunk => "similar thunk",
            Route::SimilarRedirect => "similar redirect",
        }
    }

    /// Whether the line went through something the merge made.
    pub fn is_merged(self) -> bool {
        self != Route::Kept
    }
}

/// A merged module made callable under every original name.
pub struct Runnable {
    /// The merged module, plus a stand-in for every member the similar merge removed.
    pub module: ClifModule,
    /// Exact merges: a replaced function's name → (what it became, the kept function).
    exact: HashMap<FuncName, (Action, FuncName)>,
    /// Similar merges: a member's name → what it became.
    similar: HashMap<FuncName, Action>,
}

impl Runnable {
    /// `merged`, merged from `original` as `report` says.
    pub fn new(original: &ClifModule, merged: ClifModule, report: &MergeReport) -> Runnable {
        let mut exact = HashMap::new();
        for class in &report.classes {
            for r in &class.replaced {
                exact.insert(r.name.clone(), (r.by, class.kept.clone()));
            }
        }
        let mut similar = HashMap::new();
        let mut module = merged.clone();
        for group in report.similar.iter().flatten() {
            let shared = merged.resolve(&group.shared).expect("a shared body");
            let shared_sig = &merged.function(shared).func.signature;
            for member in &group.members {
                similar.insert(member.name.clone(), member.by);
                if member.by != Action::Removed {
                    continue;
                }
                // A private copy the exact merge made has no original to stand in for.
                let Some(id) = original.resolve(&member.name) else {
                    continue;
                };
                let sig = &original.function(id).func.signature;
                let func = clif_merge::similar::stand_in(group, member, sig, shared_sig);
                module
                    .define(func, SymbolLinkage::Local, None)
                    .expect("a stand-in under a removed name");
            }
        }
        Runnable {
            module,
            exact,
            similar,
        }
    }

    /// This module with `g` as if it had been removed into `f`: a wrong merge, for the
    /// harness's check of itself.
    pub fn with_wrong_redirect(mut self, g: FuncName, f: FuncName) -> Runnable {
        self.exact.insert(g, (Action::Removed, f));
        self
    }

    /// The name to call in [`Runnable::module`] for the original function `name`, and how it
    /// is reached.
    pub fn callee(&self, name: &FuncName) -> (FuncName, Route) {
        let mut route = None;
        let mut current = name.clone();
        // A removed function's kept function may itself have been removed by the similar
        // merge; its stand-in is in the module under its name.
        while let Some((by, kept)) = self.exact.get(&current) {
            route.get_or_insert(match by {
                Action::Alias => Route::Alias,
                Action::Thunk => Route::Thunk,
                Action::Removed => Route::Redirect,
            });
            if *by != Action::Removed {
                break;
            }
            current = kept.clone();
        }
        let similar = self.similar.get(&current).map(|by| match by {
            Action::Removed => Route::SimilarRedirect,
            _ => Route::SimilarThunk,
        });
        (current, route.or(similar).unwrap_or(Route::Kept))
    }
}
