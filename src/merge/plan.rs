//! The plan: for every class, where the body stays and what becomes of the other members, decided
//! by the policy (`crate::policy`) before anything is rewritten. The plan is public so that a caller can
//! look at the decisions (or report them) before applying them.

use crate::edit::names_in_use;
use crate::edit::thunk::is_forwarding_thunk;
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::parallel;
use crate::partition::Classes;
use crate::policy::frame::reads_own_frame;
use crate::policy::{Action, AllPreemptible, MemberFacts, Mode, decide_class};
use crate::refs::ModuleRefs;
use cranelift_entity::EntityRef;
use rustc_hash::FxHashSet;

/// Where a class's body lives after the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// In one of the members.
    Member(FunctionId),
    /// In a local copy of `of`'s body under a new name (every member was preemptible).
    PrivateCopy {
        /// The member whose body is copied.
        of: FunctionId,
        /// The copy's name, which no symbol of the module had.
        name: FuncName,
    },
}

/// The decision for one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassPlan {
    /// Where the body stays.
    pub kept: Kept,
    /// What becomes of the other members.
    pub replaced: Vec<(FunctionId, Action)>,
}

impl ClassPlan {
    /// The name of the function that keeps the body.
    pub fn kept_name<'m>(&'m self, module: &'m ClifModule) -> &'m FuncName {
        match &self.kept {
            Kept::Member(id) => &module.function(*id).name,
            Kept::PrivateCopy { name, .. } => name,
        }
    }
}

/// Every class's decision, in class order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergePlan {
    /// One entry per class in which something changes.
    pub classes: Vec<ClassPlan>,
}

impl MergePlan {
    /// Decides every class of `classes` (found in `module`, whose references are `refs`).
    pub fn decide(
        module: &ClifModule,
        classes: &Classes,
        refs: &ModuleRefs,
        mode: Mode,
    ) -> MergePlan {
        Self::decide_in_run(module, classes, refs, mode, module.id_count())
    }

    /// [`MergePlan::decide`] in a run that made the functions with ids from `made_from` on
    /// (shared bodies, private copies): no symbol of the input, so thunks mode need not keep
    /// them (see `crate::policy`).
    pub(crate) fn decide_in_run(
        module: &ClifModule,
        classes: &Classes,
        refs: &ModuleRefs,
        mode: Mode,
        made_from: usize,
    ) -> MergePlan {
        // Each class on its own (in parallel: in a large module this reads many function bodies),
        // then the private copies are named in class order.
        let decided = parallel::map(
            &classes.classes,
            || (),
            |_, _, members| {
                decide_class(
                    mode,
                    AllPreemptible::PrivateCopy,
                    members,
                    |f| MemberFacts {
                        function: module.function(f),
                        address_taken: refs.address_taken(f),
                        made_by_run: f.index() >= made_from,
                    },
                    |f| {
                        let func = &module.function(f).func;
                        is_forwarding_thunk(func) || reads_own_frame(func)
                    },
                )
            },
        );
        // Only needed to name private copies, which are rare.
        let mut taken_names: Option<FxHashSet<FuncName>> = None;
        let classes = decided
            .into_iter()
            .flatten()
            .map(|decision| {
                let kept = if decision.private_copy {
                    let taken = taken_names.get_or_insert_with(|| names_in_use(module));
                    let name = private_name(&module.function(decision.first).name, taken);
                    Kept::PrivateCopy {
                        of: decision.first,
                        name,
                    }
                } else {
                    Kept::Member(decision.first)
                };
                ClassPlan {
                    kept,
                    replaced: decision.replaced,
                }
            })
            .collect();
        MergePlan { classes }
    }

    /// How many functions lose their own body.
    pub fn merged(&self) -> usize {
        self.classes.iter().map(|c| c.replaced.len()).sum()
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
