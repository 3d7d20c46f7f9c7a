//! Global merging: how many functions of the whole program hold each shared body's content, so
//! that a unit's figures say what the link saves (the linker keeps one copy of the body).

use crate::global::Summary;
use crate::module::{ClifModule, FuncName};
use crate::pass::MergeReport;
use rustc_hash::{FxHashMap, FxHashSet};

/// For each global shared body of `report` (in its order): the summary's functions whose
/// content is the body's — the content key of one of its members in `unmerged` (the unit before
/// global merging), or for a body with parameters their parameter key — this unit's members
/// included. The summary lists equal entries (same name and content) of several units once.
pub fn global_holders(
    report: &MergeReport,
    unmerged: &ClifModule,
    summary: &Summary,
) -> Vec<usize> {
    let Some(global) = &report.global else {
        return Vec::new();
    };
    let unit = Summary::of_module(unmerged);
    let entry_of: FxHashMap<&FuncName, _> = unit.entries().iter().map(|e| (&e.name, e)).collect();
    global
        .shared
        .iter()
        .map(|body| {
            let members = body.members.iter().filter_map(|m| entry_of.get(m));
            let (mut keys, mut param_keys) = (FxHashSet::default(), FxHashSet::default());
            for e in members {
                if body.parameters == 0 {
                    keys.insert(e.key);
                    keys.extend(e.self_by_name);
                } else {
                    param_keys.extend(e.param.as_ref().map(|p| p.key));
                }
            }
            summary
                .entries()
                .iter()
                .filter(|e| {
                    keys.contains(&e.key)
                        || e.self_by_name.is_some_and(|k| keys.contains(&k))
                        || e.param
                            .as_ref()
                            .is_some_and(|p| param_keys.contains(&p.key))
                })
                .count()
        })
        .collect()
}
