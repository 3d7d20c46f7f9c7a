//! Attribution: every byte `text_bytes_unmerged - text_bytes` saved, given to the class, similar
//! group, shared body or machine-code fold that saved it, and to the kind of merge.

use super::figures::{EntrySizes, MemberBytes, SavingKind, SizeAttribution};
use super::footprint::{Footprints, footprints};
use crate::emit::object::{CodeForm, ObjectError, ObjectOutput};
use crate::module::FuncName;
use crate::pass::{MergeReport, MergedClass};
use rustc_hash::{FxHashMap, FxHashSet};

/// The entry a function's saving belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Class(usize),
    Similar(usize),
    Global(usize),
    Folded(usize),
}

/// What a touched function is in its entry.
#[derive(Clone, Copy)]
struct Place {
    owner: Owner,
    kind: SavingKind,
    role: &'static str,
}

/// Attributes the saving of `merged` (the object of the module `report` describes) over
/// `unmerged` (the same input compiled without merging or folding).
pub fn attribute(
    report: &MergeReport,
    merged: &ObjectOutput,
    unmerged: &ObjectOutput,
) -> Result<SizeAttribution, ObjectError> {
    let before = footprints(unmerged)?;
    let after = footprints(merged)?;
    let mut out = SizeAttribution {
        text_bytes: after.text_bytes,
        text_bytes_unmerged: before.text_bytes,
        classes: vec![EntrySizes::default(); report.classes.len()],
        similar: vec![EntrySizes::default(); report.similar.iter().flatten().count()],
        global: vec![EntrySizes::default(); report.global.iter().flat_map(|g| &g.shared).count()],
        ..SizeAttribution::default()
    };
    if report.global.is_some() {
        out.by_kind.global = Some(0);
    }
    let places = places(report, merged, &mut out.folded);
    // The functions in layout order: the input's, then those the merge made.
    let input: FxHashSet<&FuncName> = unmerged.functions.iter().map(|f| &f.name).collect();
    let order = unmerged.functions.iter().map(|f| &f.name).chain(
        merged
            .functions
            .iter()
            .map(|f| &f.name)
            .filter(|n| !input.contains(n)),
    );
    let after_form: FxHashMap<&FuncName, CodeForm> =
        merged.functions.iter().map(|f| (&f.name, f.form)).collect();
    // Sections without functions, then untouched functions before any entry, go to the first.
    let mut waiting = before.unowned as i64 - after.unowned as i64;
    let mut last: Option<Place> = None;
    for name in order {
        let (b, a) = (bytes_of(&before, name), bytes_of(&after, name));
        let delta = b as i64 - a as i64;
        match places.get(name) {
            Some(&place) => {
                let entry = out.entry(place.owner);
                entry.saved += delta + waiting;
                entry.moved += waiting;
                entry.members.push(MemberBytes {
                    name: name.clone(),
                    role: place.role,
                    kind: place.kind,
                    before: b,
                    after: a,
                });
                out.by_kind.add(place.kind, delta + waiting);
                waiting = 0;
                last = Some(place);
            }
            None => {
                if after_form
                    .get(name)
                    .is_some_and(|f| *f != CodeForm::Removed)
                {
                    out.untouched.push((name.clone(), a));
                }
                match last {
                    Some(place) => {
                        let entry = out.entry(place.owner);
                        entry.saved += delta;
                        entry.moved += delta;
                        out.by_kind.add(place.kind, delta);
                    }
                    None => waiting += delta,
                }
            }
        }
    }
    // Nothing was merged or folded: whatever changed is put down to folding.
    out.by_kind.folded += waiting;
    debug_assert_eq!(
        out.by_kind.total(),
        before.text_bytes as i64 - after.text_bytes as i64
    );
    Ok(out)
}

fn is_body(role: &str) -> bool {
    matches!(role, "kept" | "shared")
}

fn bytes_of(footprints: &Footprints, name: &FuncName) -> u64 {
    footprints.by_name.get(name).copied().unwrap_or(0)
}

impl SizeAttribution {
    fn entry(&mut self, owner: Owner) -> &mut EntrySizes {
        match owner {
            Owner::Class(i) => &mut self.classes[i],
            Owner::Similar(i) => &mut self.similar[i],
            Owner::Global(i) => &mut self.global[i],
            Owner::Folded(i) => &mut self.folded[i].1,
        }
    }
}

/// Every function a merge or a fold touched, with its entry: bodies first (similar groups'
/// shared bodies, global shared bodies, exact classes' kept functions), then members in the
/// same order, then folds (a function in two is counted in the first); a function
/// machine-code folding then took counts as folded in its entry. Fills `folded`
/// with one empty entry per function whose code folds share.
fn places<'a>(
    report: &'a MergeReport,
    merged: &'a ObjectOutput,
    folded: &mut Vec<(FuncName, EntrySizes)>,
) -> FxHashMap<&'a FuncName, Place> {
    let has_code: FxHashSet<&FuncName> = merged
        .functions
        .iter()
        .filter(|f| matches!(f.form, CodeForm::Compiled | CodeForm::Thunk))
        .map(|f| &f.name)
        .collect();
    let mut places: FxHashMap<&FuncName, Place> = FxHashMap::default();
    let mut put = |name: &'a FuncName, owner, kind, role| {
        let place = Place { owner, kind, role };
        match places.get(name) {
            None => {
                places.insert(name, place);
            }
            // A body with no code left was then taken by a later round as a member.
            Some(body) if is_body(body.role) && !is_body(role) && !has_code.contains(name) => {
                places.insert(name, place);
            }
            Some(_) => {}
        }
    };
    // Bodies first: a name a later round reused (a removed shared body named by the function
    // that replaced it) is that body, wherever else it is listed.
    let similar = || report.similar.iter().flatten().enumerate();
    let global = || report.global.iter().flat_map(|g| &g.shared).enumerate();
    for (i, group) in similar() {
        put(
            &group.shared,
            Owner::Similar(i),
            SavingKind::Similar,
            "shared",
        );
    }
    for (i, shared) in global() {
        put(
            &shared.shared,
            Owner::Global(i),
            SavingKind::Global,
            "shared",
        );
    }
    let class_kind = |c: &MergedClass| {
        c.replaced
            .first()
            .map_or(SavingKind::Thunk, |r| SavingKind::of(r.by))
    };
    for (i, class) in report.classes.iter().enumerate() {
        put(&class.kept, Owner::Class(i), class_kind(class), "kept");
    }
    for (i, group) in similar() {
        for m in &group.members {
            put(
                &m.name,
                Owner::Similar(i),
                SavingKind::Similar,
                m.by.keyword(),
            );
        }
    }
    for (i, shared) in global() {
        for m in &shared.members {
            put(m, Owner::Global(i), SavingKind::Global, "thunk");
        }
    }
    for (i, class) in report.classes.iter().enumerate() {
        for r in &class.replaced {
            put(
                &r.name,
                Owner::Class(i),
                SavingKind::of(r.by),
                r.by.keyword(),
            );
        }
    }
    let mut fold_entry: FxHashMap<&FuncName, usize> = FxHashMap::default();
    for f in &merged.functions {
        let Some(kept) = &f.folded_into else { continue };
        match places.get_mut(&f.name) {
            Some(place) => {
                place.kind = SavingKind::Folded;
                place.role = "folded";
            }
            None => {
                let at = *fold_entry.entry(kept).or_insert_with(|| {
                    folded.push((kept.clone(), EntrySizes::default()));
                    folded.len() - 1
                });
                let role = match f.form {
                    CodeForm::Alias => "alias",
                    CodeForm::Thunk => "thunk",
                    _ => "removed",
                };
                places.insert(
                    &f.name,
                    Place {
                        owner: Owner::Folded(at),
                        kind: SavingKind::Folded,
                        role,
                    },
                );
            }
        }
    }
    places
}
