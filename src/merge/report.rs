//! What a merge did, as data: the classes by name, and where every replaced function's callers
//! now go. Built from the plan before the module is rewritten.

use super::plan::MergePlan;
use super::policy::Action;
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::parallel;
use serde::Serialize;

/// One replaced function of a class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// Its name.
    pub name: FuncName,
    /// What it became.
    pub by: Action,
}

/// One class of two or more equal functions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MergedClass {
    /// The function whose body remains (a new private name when a private copy was made).
    pub kept: FuncName,
    /// The others, by name.
    pub replaced: Vec<Replacement>,
}

/// What the pass did to a module. Serialized, it is the JSON report's contract (`functions`,
/// `merged`, `classes[{kept, replaced[{name, by}]}]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// Functions defined in the input.
    pub functions: usize,
    /// Functions that no longer carry their own body.
    pub merged: usize,
    /// The classes, ordered by their smallest name; in each, the replaced ones by name.
    pub classes: Vec<MergedClass>,
    /// Every replaced function's id in the input module (ids are stable: they name the same
    /// functions after the merge), in id order, with the index in `classes` of its class; see
    /// [`MergeReport::redirects`] and [`MergeReport::kept_for`].
    #[serde(skip)]
    pub redirect_map: Vec<(FunctionId, u32)>,
    /// With similar merging: the groups merged into shared bodies, ordered by the shared body's
    /// name (serialized as `similar[{shared, parameters, members[{name, by}]}]`; absent
    /// without similar merging).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similar: Option<Vec<crate::similar::SimilarGroup>>,
    /// With a summary (global merging): the shared bodies this unit emits and its functions that
    /// became thunks to them (absent without a summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global: Option<crate::global::GlobalReport>,
}

impl MergeReport {
    /// The report of `plan` for `module` (not yet rewritten).
    pub fn of_plan(module: &ClifModule, plan: &MergePlan) -> MergeReport {
        let mut classes: Vec<(FuncName, usize, MergedClass)> = parallel::map(
            &plan.classes,
            || (),
            |_, c, class| {
                let mut replaced: Vec<(&FuncName, Action)> = class
                    .replaced
                    .iter()
                    .map(|&(g, action)| (&module.function(g).name, action))
                    .collect();
                replaced.sort_by(|a, b| a.0.cmp(b.0));
                let kept = class.kept_name(module);
                let smallest = replaced.first().map_or(kept, |r| r.0).min(kept).clone();
                let replaced = replaced
                    .into_iter()
                    .map(|(name, by)| Replacement {
                        name: name.clone(),
                        by,
                    })
                    .collect();
                let kept = kept.clone();
                (smallest, c, MergedClass { kept, replaced })
            },
        );
        classes.sort_by(|a, b| a.0.cmp(&b.0));
        // Plan order to report order.
        let mut position = vec![0u32; classes.len()];
        for (at, (_, c, _)) in classes.iter().enumerate() {
            position[*c] = at as u32;
        }
        let mut redirect_map: Vec<(FunctionId, u32)> = plan
            .classes
            .iter()
            .zip(&position)
            .flat_map(|(class, &at)| class.replaced.iter().map(move |&(g, _)| (g, at)))
            .collect();
        redirect_map.sort_unstable();
        MergeReport {
            functions: module.len(),
            merged: plan.merged(),
            classes: classes.into_iter().map(|(_, _, c)| c).collect(),
            redirect_map,
            similar: None,
            global: None,
        }
    }

    /// Every replaced function's id, in id order, with the name of the function that now has
    /// its body.
    pub fn redirects(&self) -> impl Iterator<Item = (FunctionId, &FuncName)> + '_ {
        self.redirect_map
            .iter()
            .map(|&(g, c)| (g, &self.classes[c as usize].kept))
    }

    /// The name of the function that now has the body of the replaced function `id`; None when
    /// `id` was not replaced.
    pub fn kept_for(&self, id: FunctionId) -> Option<&FuncName> {
        let at = self
            .redirect_map
            .binary_search_by_key(&id, |&(g, _)| g)
            .ok()?;
        Some(&self.classes[self.redirect_map[at].1 as usize].kept)
    }

    /// How many functions were removed outright (no symbol left).
    pub fn removed(&self) -> usize {
        let exact = self
            .classes
            .iter()
            .flat_map(|c| &c.replaced)
            .filter(|r| r.by == Action::Removed)
            .count();
        exact + self.similar_members(Action::Removed)
    }

    /// Records the groups of a similar merge: their members count as merged, but for the
    /// functions the exact merge made (private copies, named in `made`), which were not in the
    /// input.
    pub fn add_similar(&mut self, groups: Vec<crate::similar::SimilarGroup>, made: &[FuncName]) {
        self.merged += groups
            .iter()
            .flat_map(|g| &g.members)
            .filter(|m| !made.contains(&m.name))
            .count();
        self.similar = Some(groups);
    }

    /// Adds what global merging's round 2 did before this merge: its shared bodies were not in
    /// the input, and its members no longer carry their own body (those the merge then replaced
    /// are counted once).
    pub fn add_global(&mut self, global: crate::global::GlobalReport) {
        self.functions -= global.shared.len();
        let replaced: std::collections::HashSet<&FuncName> = self
            .classes
            .iter()
            .flat_map(|c| c.replaced.iter().map(|r| &r.name))
            .collect();
        self.merged += global
            .shared
            .iter()
            .flat_map(|s| &s.members)
            .filter(|m| !replaced.contains(m))
            .count();
        self.global = Some(global);
    }

    fn similar_members(&self, by: Action) -> usize {
        self.similar
            .iter()
            .flatten()
            .flat_map(|g| &g.members)
            .filter(|m| m.by == by)
            .count()
    }
}
