//! Round 2's parameterized sharing: functions of several units that differ only in callees
//! (with `--similar`: in constants, symbols and callees) share one body that takes those as
//! parameters ([`crate::similar::across`]).
//!
//! This is what makes callers of duplicates and recursions that run through several units
//! mergeable without trusting the summary: a shared body cannot call "the" callee of a class
//! across units (the summary may be stale about which functions are equal), but it can call the
//! callee each member passes, which is the member's own.
//!
//! Grouping is a function of the summary and the unit's own functions only, so every unit that
//! holds a member of a group computes the same variants, layout and name:
//! - the *variants* of a group are its distinct hole vectors, in their order (the summary's
//!   entries for the other units' functions, the unit's own functions as they are);
//! - with `--similar`, groups by parameter key come first; then the classes of the exact merge
//!   of the whole program as the summary describes it ([`super::classes`]), whose members differ
//!   only in callees the summary says are equal; a group needs two variants, one of them in
//!   another unit;
//! - a group is shared when its parameters fit the argument registers and the cost model says
//!   it pays (`thunks` = every function of the group, in all units).

use super::classes::{ProgramEntry, program_classes};
use super::key::OwnFunction;
use super::report::SharedBody;
use super::summary::Summary;
use crate::compare::{Fingerprint, FingerprintWriter, Hole};
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::refs::ModuleRefs;
use crate::similar::SimilarOptions;
use crate::similar::across;
use rustc_hash::FxHashSet;
use std::collections::{BTreeMap, BTreeSet};

/// How functions are grouped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// By parameter key: every hole may be a parameter (`--similar`).
    Similar,
    /// By the classes of the whole program's exact merge: only callees that the summary says
    /// are equal (but have other names) are parameters.
    Exact,
}

/// One group as the whole program holds it.
#[derive(Default)]
struct Group<'a> {
    /// Distinct hole vectors, in order.
    variants: BTreeSet<&'a [Hole]>,
    /// Functions in all units.
    functions: usize,
    /// Whether a function of another unit is in it.
    elsewhere: bool,
    /// The unit's own functions in it, in module order.
    own: Vec<FunctionId>,
}

/// Shares every group that pays; the unit's functions it made thunks go to `done`.
pub(super) fn share_with_parameters(
    module: &mut ClifModule,
    refs: &ModuleRefs,
    summary: &Summary,
    own: &[OwnFunction],
    similar: Option<&SimilarOptions>,
    done: &mut FxHashSet<FunctionId>,
    in_use: &mut Option<FxHashSet<FuncName>>,
) -> Vec<SharedBody> {
    let default_options = SimilarOptions::default();
    let options = similar.unwrap_or(&default_options);
    let levels: &[Level] = match similar {
        Some(_) => &[Level::Similar, Level::Exact],
        None => &[Level::Exact],
    };
    let mut shared = Vec::new();
    for &level in levels {
        let entries = program_entries(module, summary, own, done);
        let keys: Vec<Option<u128>> = match level {
            Level::Similar => entries.iter().map(|e| Some(e.param_key)).collect(),
            Level::Exact => program_classes(&entries)
                .into_iter()
                .map(|c| c.map(u128::from))
                .collect(),
        };
        for group in groups(&entries, &keys).into_values() {
            if let Some(body) = share_group(module, refs, &group, options, in_use) {
                done.extend(group.own.iter().copied());
                shared.push(body);
            }
        }
    }
    shared
}

/// Every function of the program that may share a body with parameters: the unit's own not yet
/// shared, then the summary's of other units.
fn program_entries<'a>(
    module: &ClifModule,
    summary: &'a Summary,
    own: &'a [OwnFunction],
    done: &FxHashSet<FunctionId>,
) -> Vec<ProgramEntry<'a>> {
    let mut entries = Vec::new();
    for f in own.iter().filter(|f| !done.contains(&f.id)) {
        if let Some(param) = &f.param {
            entries.push(ProgramEntry {
                name: module.function(f.id).name.clone(),
                param_key: param.key,
                holes: &param.holes,
                own: Some(f.id),
            });
        }
    }
    for entry in summary.entries() {
        let Some(param) = &entry.param else { continue };
        if entry.linkage.is_preemptible() || module.lookup(&entry.name).is_some() {
            continue;
        }
        entries.push(ProgramEntry {
            name: entry.name.clone(),
            param_key: param.key,
            holes: &param.holes,
            own: None,
        });
    }
    entries
}

/// The groups by `keys` (None: in no group) that hold a function of this unit, two variants
/// and a function of another unit.
fn groups<'a>(entries: &[ProgramEntry<'a>], keys: &[Option<u128>]) -> BTreeMap<u128, Group<'a>> {
    let mut groups: BTreeMap<u128, Group<'a>> = BTreeMap::new();
    for (entry, key) in entries.iter().zip(keys) {
        let Some(key) = key else { continue };
        let group = groups.entry(*key).or_default();
        group.variants.insert(entry.holes);
        group.functions += 1;
        match entry.own {
            Some(own) => group.own.push(own),
            None => group.elsewhere = true,
        }
    }
    groups.retain(|_, g| !g.own.is_empty() && g.elsewhere && g.variants.len() >= 2);
    groups
}

/// Writes the group's shared body and makes the unit's members thunks, when it pays and its
/// name is free (`in_use`: see [`super::apply::share`]).
fn share_group(
    module: &mut ClifModule,
    refs: &ModuleRefs,
    group: &Group,
    options: &SimilarOptions,
    in_use: &mut Option<FxHashSet<FuncName>>,
) -> Option<SharedBody> {
    let variants: Vec<&[Hole]> = group.variants.iter().copied().collect();
    // The members' fingerprints again (the first walk kept only keys and holes).
    let mut writer = FingerprintWriter::new();
    let mut members: Vec<(FunctionId, Fingerprint)> = group
        .own
        .iter()
        .map(|&id| {
            let fp = across::param_fingerprint(module, refs, id, &mut writer)
                .expect("a member may share a body with parameters");
            (id, fp)
        })
        .collect();
    // Keys only group: a member whose tokens are not the first's (a key collision) stays as
    // it is, since the body is made from the first and each member passes only its holes.
    let first_tokens = members[0].1.tokens.clone();
    members.retain(|(_, fp)| fp.tokens == first_tokens);
    let first = (members[0].0, &members[0].1);
    let plan = across::plan(module, first, &variants, group.functions, options)?;
    let parameters = plan.parameters();
    if !crate::edit::name_is_free(module, in_use, plan.name()) {
        return None;
    }
    let name = across::apply(module, plan, &members)?;
    let mut names: Vec<FuncName> = members
        .iter()
        .map(|(id, _)| module.function(*id).name.clone())
        .collect();
    names.sort();
    Some(SharedBody {
        shared: name,
        parameters,
        members: names,
    })
}
