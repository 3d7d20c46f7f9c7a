//! Partition refinement to the greatest fixpoint (lld's ICF, LLVM's `FnTree` and `Deferred`),
//! shared by the IR merge (`merge`) and machine-code folding (`fold`).
//!
//! The input is one [`Fingerprint`] per element (a defined function), its hash, and the class
//! references each fingerprint holds: references to other elements whose *class* is compared,
//! not their identity. For the IR they are calls to module functions; for machine code they are
//! relocations to compiled functions. The output is the coarsest partition in which two
//! elements share a class exactly when their tokens are equal and their class references, in
//! order, point to elements of equal classes.
//!
//! 1. `fn_tree`: an ordered set keyed by (hash, tokens), class references ignored. Elements with
//!    the same key form the first classes; lookup is O(log N), and most comparisons end at the
//!    hash.
//! 2. `deferred`: a worklist of classes to split. A class splits by the classes of its members'
//!    class references. When an element moves to a new class, the classes of the elements that
//!    refer to it go back on the worklist. Repeat until the worklist is empty.
//!
//! Classes only ever split, and only between elements that differ given the current classes, so
//! the result is the greatest fixpoint; it is unique, so it does not depend on input order.

use crate::compare::Fingerprint;
use crate::module::FunctionId;
use cranelift_entity::{PrimaryMap, SecondaryMap, entity_impl};
use std::collections::BTreeMap;

/// A class of the partition while it is refined.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
struct ClassId(u32);
entity_impl!(ClassId, "class");

/// The classes of two or more equal elements: each in id order, ordered by first member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classes {
    /// The classes.
    pub classes: Vec<Vec<FunctionId>>,
}

/// The classes of equal fingerprints, where class references are equal when they refer to
/// elements of one class. `hashes[f]` is the hash of `fingerprints[f]`.
pub fn refine(
    fingerprints: &PrimaryMap<FunctionId, Fingerprint>,
    hashes: &PrimaryMap<FunctionId, u64>,
) -> Classes {
    let mut refiner = Refiner::new(fingerprints, hashes);
    refiner.refine();
    refiner.classes()
}

/// A key in `fn_tree`: the order of fingerprints with class references ignored.
struct FnKey<'a> {
    hash: u64,
    fingerprint: &'a Fingerprint,
}

impl Ord for FnKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.hash.cmp(&other.hash).then_with(|| {
            let (a, b) = (&self.fingerprint.tokens, &other.fingerprint.tokens);
            // Keys with equal hashes are almost always equal: an equality test (a `memcmp`)
            // settles that several times faster than the element-by-element order.
            if a == b {
                std::cmp::Ordering::Equal
            } else {
                a.cmp(b)
            }
        })
    }
}

impl PartialOrd for FnKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for FnKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for FnKey<'_> {}

/// A map with an entry for each of `n` keys already (growing it entry by entry costs a check
/// and a resize on every write).
fn sized<K: cranelift_entity::EntityRef, V: Clone + Default>(n: usize) -> SecondaryMap<K, V> {
    let mut map = SecondaryMap::new();
    map.resize(n);
    map
}

/// The state of the refinement.
struct Refiner<'a> {
    fingerprints: &'a PrimaryMap<FunctionId, Fingerprint>,
    hashes: &'a PrimaryMap<FunctionId, u64>,
    class_of: SecondaryMap<FunctionId, ClassId>,
    members: PrimaryMap<ClassId, Vec<FunctionId>>,
    /// For each element, the elements holding a class reference to it.
    referrers: SecondaryMap<FunctionId, Vec<FunctionId>>,
    /// Classes to split again (LLVM's `Deferred`), and whether each is queued.
    deferred: Vec<ClassId>,
    queued: SecondaryMap<ClassId, bool>,
}

impl<'a> Refiner<'a> {
    fn new(
        fingerprints: &'a PrimaryMap<FunctionId, Fingerprint>,
        hashes: &'a PrimaryMap<FunctionId, u64>,
    ) -> Self {
        let mut referrers: SecondaryMap<FunctionId, Vec<FunctionId>> = sized(fingerprints.len());
        for (f, fp) in fingerprints.iter() {
            for &callee in &fp.class_refs {
                let list = &mut referrers[callee];
                if list.last() != Some(&f) {
                    list.push(f);
                }
            }
        }
        Refiner {
            fingerprints,
            hashes,
            class_of: sized(fingerprints.len()),
            members: PrimaryMap::new(),
            referrers,
            deferred: Vec::new(),
            queued: SecondaryMap::new(),
        }
    }

    /// Phase 1 of 2: the first classes, from `fn_tree`.
    fn initial_classes(&mut self) {
        let mut fn_tree: BTreeMap<FnKey<'a>, ClassId> = BTreeMap::new();
        for (f, fp) in self.fingerprints.iter() {
            if fp.is_unique() {
                // Alone by construction: no need to look it up.
                self.class_of[f] = self.members.push(vec![f]);
                continue;
            }
            let key = FnKey {
                hash: self.hashes[f],
                fingerprint: fp,
            };
            let next = self.members.next_key();
            let class = *fn_tree.entry(key).or_insert(next);
            if class == next {
                self.members.push(Vec::new());
            }
            self.members[class].push(f);
            self.class_of[f] = class;
        }
        for class in self.members.keys() {
            let members = &self.members[class];
            let has_refs = members
                .iter()
                .any(|&f| !self.fingerprints[f].class_refs.is_empty());
            if members.len() > 1 && has_refs {
                self.defer(class);
            }
        }
    }

    fn defer(&mut self, class: ClassId) {
        if !self.queued[class] {
            self.queued[class] = true;
            self.deferred.push(class);
        }
    }

    /// Phase 2 of 2: split classes until every class is stable.
    fn refine(&mut self) {
        self.initial_classes();
        while let Some(class) = self.deferred.pop() {
            self.queued[class] = false;
            self.split(class);
        }
    }

    /// Splits `class` by the classes its members refer to; queues the referrers of every
    /// element that moved.
    fn split(&mut self, class: ClassId) {
        let mut members = std::mem::take(&mut self.members[class]);
        if members.len() < 2 {
            self.members[class] = members;
            return;
        }
        let class_of = &self.class_of;
        let refs_of = |f: FunctionId| self.fingerprints[f].class_refs.iter().map(|&r| class_of[r]);
        members.sort_by(|&a, &b| refs_of(a).cmp(refs_of(b)).then(a.cmp(&b)));
        let mut runs: Vec<Vec<FunctionId>> = Vec::new();
        for &f in &members {
            match runs.last_mut() {
                Some(run) if refs_of(run[0]).eq(refs_of(f)) => run.push(f),
                _ => runs.push(vec![f]),
            }
        }
        let mut runs = runs.into_iter();
        let mut first = runs.next().unwrap_or_default();
        first.sort();
        self.members[class] = first;
        let mut moved = Vec::new();
        for mut run in runs {
            run.sort();
            let new_class = self.members.next_key();
            for &f in &run {
                self.class_of[f] = new_class;
                moved.push(f);
            }
            self.members.push(run);
        }
        for f in moved {
            for i in 0..self.referrers[f].len() {
                let referrer = self.referrers[f][i];
                let c = self.class_of[referrer];
                if self.members[c].len() > 1 {
                    self.defer(c);
                }
            }
        }
    }

    /// The classes of two or more, each in id order, ordered by their first member.
    fn classes(&self) -> Classes {
        let mut classes: Vec<Vec<FunctionId>> = self
            .members
            .values()
            .filter(|m| m.len() > 1)
            .cloned()
            .collect();
        for c in &mut classes {
            c.sort();
        }
        classes.sort();
        Classes { classes }
    }
}
