//! What the pass did, as data, one report for every way of merging: the exact merge's classes
//! by name and where every replaced function's callers now go (built from each round's plan
//! before the module is rewritten), similar merging's groups, global merging's shared bodies.

use crate::compare::Hole;
use crate::merge::MergePlan;
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::parallel;
use crate::policy::Action;
use cranelift_codegen::ir::Function;
use cranelift_entity::EntityRef;
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

impl MergedClass {
    /// The smallest name of its members, the order of a report's classes (the replaced are in
    /// name order).
    fn smallest_name(&self) -> &FuncName {
        self.replaced
            .first()
            .map_or(&self.kept, |r| &r.name)
            .min(&self.kept)
    }
}

/// A class's kept name and its replaced functions, each with its id.
type ClassWithIds = (FuncName, Vec<(FunctionId, Replacement)>);

impl MergeReport {
    /// The report of `plan` for `module` (not yet rewritten).
    pub fn of_plan(module: &ClifModule, plan: &MergePlan) -> MergeReport {
        // Each class in plan order. The names are cloned once, into the report: the order is
        // found from the names it holds.
        let in_plan_order: Vec<MergedClass> = parallel::map(
            &plan.classes,
            || (),
            |_, _, class| {
                let mut replaced: Vec<Replacement> = class
                    .replaced
                    .iter()
                    .map(|&(g, by)| Replacement {
                        name: module.function(g).name.clone(),
                        by,
                    })
                    .collect();
                replaced.sort_by(|a, b| a.name.cmp(&b.name));
                let kept = class.kept_name(module).clone();
                MergedClass { kept, replaced }
            },
        );
        // Report order: by smallest name (each name is in one class only), sorted as indices
        // rather than moving the classes; a stable sort, which runs of names already in order
        // (the plan's order is by first member) make cheap.
        let mut order: Vec<(&FuncName, u32)> = in_plan_order
            .iter()
            .enumerate()
            .map(|(c, class)| (class.smallest_name(), c as u32))
            .collect();
        order.sort_by(|a, b| a.0.cmp(b.0));
        // Plan order to report order.
        let mut position = vec![0u32; order.len()];
        for (at, &(_, c)) in order.iter().enumerate() {
            position[c as usize] = at as u32;
        }
        let order: Vec<u32> = order.into_iter().map(|(_, c)| c).collect();
        let mut taken: Vec<Option<MergedClass>> = in_plan_order.into_iter().map(Some).collect();
        let classes = order
            .iter()
            .map(|&c| taken[c as usize].take().expect("each class once"))
            .collect();
        // Each replaced function's class, read off in id order (no sort).
        let mut class_of: Vec<u32> = vec![u32::MAX; module.id_count()];
        for (class, &at) in plan.classes.iter().zip(&position) {
            for &(g, _) in &class.replaced {
                class_of[g.index()] = at;
            }
        }
        let redirect_map: Vec<(FunctionId, u32)> = class_of
            .iter()
            .enumerate()
            .filter(|&(_, &at)| at != u32::MAX)
            .map(|(g, &at)| (FunctionId::new(g), at))
            .collect();
        MergeReport {
            functions: module.len(),
            merged: plan.merged(),
            classes,
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

    /// A function for every member a similar merge removed, in group order: a thunk under the
    /// member's name and signature that calls its group's shared body with the member's values
    /// ([`crate::similar::stand_in`]). A removed member has no body left in `merged` (the module
    /// this report is of); whoever must still run or call it by its own name defines its
    /// stand-in: `--verify` ([`crate::verify`]), [`crate::MergingModule`] and
    /// [`crate::batch`], which compile every function of the input for the caller. A group
    /// whose shared body `merged` does not define has none.
    ///
    /// ```
    /// use clif_merge::{MergeOptions, ReadOptions, SimilarOptions, merge_module_with_options};
    /// use clif_merge::read_module_text;
    /// use std::path::Path;
    ///
    /// // Two local functions equal but for a constant, called only by `%main`.
    /// let text = "
    ///     ; linkage: %times3 local
    ///     ; linkage: %times5 local
    ///     function %times3(i64) -> i64 {
    ///     block0(v0: i64):
    ///         v1 = iconst.i64 3
    ///         v2 = imul v0, v1
    ///         v3 = iadd v2, v0
    ///         v4 = imul v3, v2
    ///         return v4
    ///     }
    ///     function %times5(i64) -> i64 {
    ///     block0(v0: i64):
    ///         v1 = iconst.i64 5
    ///         v2 = imul v0, v1
    ///         v3 = iadd v2, v0
    ///         v4 = imul v3, v2
    ///         return v4
    ///     }
    ///     function %main(i64) -> i64 {
    ///         fn0 = %times3(i64) -> i64
    ///         fn1 = %times5(i64) -> i64
    ///     block0(v0: i64):
    ///         v1 = call fn0(v0)
    ///         v2 = call fn1(v1)
    ///         return v2
    ///     }
    /// ";
    /// let mut module = read_module_text(Path::new("m.clif"), text, ReadOptions::default()).unwrap();
    /// // Forces every group that fits: the cost model prices a pair this small below zero.
    /// let similar = SimilarOptions { min_saving: i64::MIN / 2, ..SimilarOptions::default() };
    /// let options = MergeOptions { similar: Some(similar), ..MergeOptions::default() };
    /// let (report, _) = merge_module_with_options(&mut module, &options);
    /// // Both were local: they are gone, and `%main` calls the shared body with 3, then 5.
    /// assert_eq!(module.len(), 2);
    /// // Their stand-ins call the shared body with 3 and 5, under their own names.
    /// let stand_ins = report.stand_ins(&module);
    /// let stand_in_names: Vec<String> = stand_ins.iter().map(|f| f.name.to_string()).collect();
    /// assert_eq!(stand_in_names, ["%times3", "%times5"]);
    /// ```
    pub fn stand_ins(&self, merged: &ClifModule) -> Vec<Function> {
        let mut stand_ins = Vec::new();
        for group in self.similar.iter().flatten() {
            let Some(shared) = merged.resolve(&group.shared) else {
                continue;
            };
            let shared_sig = &merged.function(shared).func.signature;
            let sig = crate::similar::member_signature(group, shared_sig);
            for member in group.members.iter().filter(|m| m.by == Action::Removed) {
                stand_ins.push(crate::similar::stand_in(group, member, &sig, shared_sig));
            }
        }
        stand_ins
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

    /// Adds one round of similar merging after an earlier one (see
    /// [`crate::merge_module_with`]). An earlier group whose shared body this round removed
    /// (the body was a member here) now calls this round's shared body: it takes that body's
    /// name, and its members pass, after their own values, the values the removed body passed.
    pub(crate) fn add_similar_round(&mut self, groups: Vec<crate::similar::SimilarGroup>) {
        let all = self.similar.get_or_insert_with(Vec::new);
        for group in &groups {
            for member in group.members.iter().filter(|m| m.by == Action::Removed) {
                for earlier in all.iter_mut().filter(|g| g.shared == member.name) {
                    earlier.shared = group.shared.clone();
                    earlier.parameters += group.parameters;
                    for m in &mut earlier.members {
                        m.arguments.extend(member.arguments.iter().cloned());
                    }
                }
            }
        }
        all.extend(groups);
        all.sort_by(|a, b| a.shared.cmp(&b.shared));
    }

    /// Adds `later`, an exact merge of `module` after earlier rounds, so that the report says
    /// where each function's body is in the end: a function `later` replaces leaves the class it
    /// was in; the class whose kept function `later` replaces joins `later`'s class; a shared
    /// body `later` removed is named by its kept function in the similar groups. Functions the
    /// run made (ids from `input_ids` on: private copies, shared bodies) are not listed as
    /// replaced: the input did not have them.
    pub(crate) fn add_exact_round(
        &mut self,
        later: MergeReport,
        module: &ClifModule,
        input_ids: usize,
    ) {
        if later.classes.is_empty() {
            return;
        }
        let mut classes = self.classes_with_ids(module);
        for (kept, replaced) in later.classes_with_ids(module) {
            for (_, r) in replaced.iter().filter(|(_, r)| r.by == Action::Removed) {
                for group in self.similar.iter_mut().flatten() {
                    if group.shared == r.name {
                        group.shared = kept.clone();
                    }
                    // A removed member's value may name a function this round removed (no
                    // instruction took its address: the member had no callers left to pass
                    // it). A stand-in for the member passes the function that does its work.
                    let values = (group.members.iter_mut()).flat_map(|m| &mut m.arguments);
                    for argument in values {
                        if let Hole::Callee(name) | Hole::Name(name) = &mut argument.value
                            && *name == r.name
                        {
                            *name = kept.clone();
                        }
                    }
                }
            }
            let names: std::collections::HashSet<&FuncName> =
                replaced.iter().map(|(_, r)| &r.name).collect();
            let mut joined = Vec::new();
            for (earlier_kept, earlier) in &mut classes {
                earlier.retain(|(_, r)| !names.contains(&r.name));
                if names.contains(earlier_kept) {
                    joined.append(earlier);
                }
            }
            classes.retain(|(_, replaced)| !replaced.is_empty());
            joined.extend(
                replaced
                    .into_iter()
                    .filter(|(id, _)| id.index() < input_ids),
            );
            if !joined.is_empty() {
                classes.push((kept, joined));
            }
        }
        self.set_classes(classes);
    }

    /// Counts `merged` again after several rounds: every function of the input (ids below
    /// `input_ids`) that a class replaced or a similar group took, once.
    pub(crate) fn count_merged(&mut self, module: &ClifModule, input_ids: usize) {
        let made: std::collections::HashSet<&FuncName> = (input_ids..module.id_count())
            .map(|i| &module.function(FunctionId::new(i)).name)
            .collect();
        let mut merged: std::collections::HashSet<&FuncName> = self
            .classes
            .iter()
            .flat_map(|c| c.replaced.iter().map(|r| &r.name))
            .collect();
        merged.extend(
            self.similar
                .iter()
                .flatten()
                .flat_map(|g| &g.members)
                .map(|m| &m.name),
        );
        self.merged = merged.iter().filter(|name| !made.contains(*name)).count();
    }

    /// Each class's kept name and its replaced functions with their ids.
    fn classes_with_ids(&self, module: &ClifModule) -> Vec<ClassWithIds> {
        let mut classes: Vec<ClassWithIds> = self
            .classes
            .iter()
            .map(|c| (c.kept.clone(), Vec::with_capacity(c.replaced.len())))
            .collect();
        for &(id, c) in &self.redirect_map {
            let class = &self.classes[c as usize];
            let name = &module.function(id).name;
            let at = class
                .replaced
                .binary_search_by(|r| r.name.cmp(name))
                .expect("a redirected function is a replaced one of its class");
            classes[c as usize].1.push((id, class.replaced[at].clone()));
        }
        classes
    }

    /// Sets the classes (each a kept name and its replaced functions with their ids): ordered by
    /// their smallest name, the replaced ones by name, and the redirect map with them.
    fn set_classes(&mut self, classes: Vec<ClassWithIds>) {
        // Each class with its smallest name first, to order them.
        let mut classes: Vec<(FuncName, ClassWithIds)> = classes
            .into_iter()
            .map(|(kept, mut replaced)| {
                replaced.sort_by(|a, b| a.1.name.cmp(&b.1.name));
                let smallest = replaced
                    .first()
                    .map_or(&kept, |r| &r.1.name)
                    .min(&kept)
                    .clone();
                (smallest, (kept, replaced))
            })
            .collect();
        classes.sort_by(|a, b| a.0.cmp(&b.0));
        self.redirect_map = classes
            .iter()
            .enumerate()
            .flat_map(|(at, (_, (_, replaced)))| {
                replaced.iter().map(move |(id, _)| (*id, at as u32))
            })
            .collect();
        self.redirect_map.sort_unstable();
        self.classes = classes
            .into_iter()
            .map(|(_, (kept, replaced))| MergedClass {
                kept,
                replaced: replaced.into_iter().map(|(_, r)| r).collect(),
            })
            .collect();
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
