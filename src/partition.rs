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
//! 1. `fn_tree`: elements with equal tokens (class references ignored) form the first classes,
//!    found by their hashes in a hash map; the tokens are compared only to confirm a hash that
//!    another element has (or to tell apart tokens whose hashes collide). An element alone in
//!    its first class costs nothing more: only classes of two or more keep their members and
//!    their members' referrers.
//! 2. `deferred`: a worklist of classes to split. A class splits by the classes of its members'
//!    class references. When an element moves to a new class, the classes of the elements that
//!    refer to it go back on the worklist. Repeat until the worklist is empty.
//!
//! Classes only ever split, and only between elements that differ given the current classes, so
//! the result is the greatest fixpoint; it is unique, so it does not depend on input order.

use crate::compare::Fingerprint;
use crate::module::FunctionId;
use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap, entity_impl};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

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
    refiner.into_classes()
}

/// A map with an entry for each of `n` keys already (growing it entry by entry costs a check
/// and a resize on every write).
fn sized<K: cranelift_entity::EntityRef, V: Clone + Default>(n: usize) -> SecondaryMap<K, V> {
    let mut map = SecondaryMap::new();
    map.resize(n);
    map
}

/// The state of the refinement.
///
/// Only a class of two or more can split, so only such a class lists its members: a class of
/// one (most classes in most modules) is an id and nothing more, and an element alone in its
/// first class is nobody's referrer (its class never splits).
struct Refiner<'a> {
    fingerprints: &'a PrimaryMap<FunctionId, Fingerprint>,
    hashes: &'a PrimaryMap<FunctionId, u64>,
    class_of: SecondaryMap<FunctionId, ClassId>,
    /// The members of each class of two or more; empty for a class of one.
    members: PrimaryMap<ClassId, Vec<FunctionId>>,
    /// The elements holding a class reference to `f` are
    /// `referrers[referrer_start[f]..referrer_start[f + 1]]` (both in first classes of two or
    /// more; one vector for all of them).
    referrer_start: Vec<u32>,
    referrers: Vec<FunctionId>,
    /// Classes to split again (LLVM's `Deferred`), and whether each is queued.
    deferred: Vec<ClassId>,
    queued: SecondaryMap<ClassId, bool>,
}

impl<'a> Refiner<'a> {
    fn new(
        fingerprints: &'a PrimaryMap<FunctionId, Fingerprint>,
        hashes: &'a PrimaryMap<FunctionId, u64>,
    ) -> Self {
        Refiner {
            fingerprints,
            hashes,
            class_of: sized(fingerprints.len()),
            members: PrimaryMap::new(),
            referrer_start: Vec::new(),
            referrers: Vec::new(),
            deferred: Vec::new(),
            queued: SecondaryMap::new(),
        }
    }

    /// Phase 1 of 2: the first classes (`fn_tree`): elements whose tokens are equal. The hash
    /// finds the candidates; the tokens are compared only to confirm (or to tell apart tokens
    /// whose hashes collide).
    fn initial_classes(&mut self) {
        let fingerprints = self.fingerprints;
        let n = fingerprints.len();
        let mut first_of_hash: FxHashMap<u64, ClassId> = FxHashMap::default();
        first_of_hash.reserve(n);
        // Per class: its first member, its size, and the next class whose tokens have the
        // same hash.
        let mut first_member: Vec<FunctionId> = Vec::with_capacity(n);
        let mut size: Vec<u32> = Vec::with_capacity(n);
        let mut same_hash: Vec<Option<ClassId>> = Vec::with_capacity(n);
        for (f, fp) in fingerprints.iter() {
            let class = match fp.is_unique() {
                // Alone by construction: no need to look it up.
                true => None,
                false => match first_of_hash.entry(self.hashes[f]) {
                    Entry::Vacant(slot) => {
                        slot.insert(ClassId::new(first_member.len()));
                        None
                    }
                    Entry::Occupied(slot) => {
                        let mut class = *slot.get();
                        loop {
                            if fingerprints[first_member[class.index()]].tokens == fp.tokens {
                                break Some(class);
                            }
                            match same_hash[class.index()] {
                                Some(next) => class = next,
                                None => {
                                    same_hash[class.index()] =
                                        Some(ClassId::new(first_member.len()));
                                    break None;
                                }
                            }
                        }
                    }
                },
            };
            let class = class.unwrap_or_else(|| {
                first_member.push(f);
                size.push(0);
                same_hash.push(None);
                ClassId::new(first_member.len() - 1)
            });
            size[class.index()] += 1;
            self.class_of[f] = class;
        }
        self.members = PrimaryMap::with_capacity(size.len());
        for &count in &size {
            self.members.push(match count {
                1 => Vec::new(),
                _ => Vec::with_capacity(count as usize),
            });
        }
        for f in fingerprints.keys() {
            let class = self.class_of[f];
            if size[class.index()] > 1 {
                self.members[class].push(f);
            }
        }
        self.find_referrers(&size);
        self.queued.resize(size.len());
        for class in self.members.keys() {
            let members = &self.members[class];
            let has_refs = members
                .iter()
                .any(|&f| !fingerprints[f].class_refs.is_empty());
            if members.len() > 1 && has_refs {
                self.defer(class);
            }
        }
    }

    /// The referrers of every element that may move, counted, then written into one vector:
    /// only references from and to elements whose first classes have two or more members
    /// (no other element ever moves, and no other class is ever split).
    fn find_referrers(&mut self, size: &[u32]) {
        let class_of = &self.class_of;
        let in_large_class = |f: FunctionId| size[class_of[f].index()] > 1;
        let n = self.fingerprints.len();
        let mut start = vec![0u32; n + 1];
        let large = || {
            self.fingerprints
                .iter()
                .filter(|&(f, fp)| !fp.class_refs.is_empty() && in_large_class(f))
        };
        for (_, fp) in large() {
            for &callee in &fp.class_refs {
                if in_large_class(callee) {
                    start[callee.index() + 1] += 1;
                }
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut referrers = vec![FunctionId::new(0); start[n] as usize];
        let mut next = start.clone();
        for (f, fp) in large() {
            for &callee in &fp.class_refs {
                if in_large_class(callee) {
                    referrers[next[callee.index()] as usize] = f;
                    next[callee.index()] += 1;
                }
            }
        }
        self.referrer_start = start;
        self.referrers = referrers;
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
        // Sorted by the classes of the references, then by id: each run of equal references
        // is a class, its members in id order.
        let class_of = &self.class_of;
        let refs_of = |f: FunctionId| self.fingerprints[f].class_refs.iter().map(|&r| class_of[r]);
        members.sort_by(|&a, &b| refs_of(a).cmp(refs_of(b)).then(a.cmp(&b)));
        let runs: Vec<usize> = members
            .chunk_by(|&a, &b| refs_of(a).eq(refs_of(b)))
            .map(<[FunctionId]>::len)
            .collect();
        let moved = members.split_off(runs[0]);
        let mut rest = &moved[..];
        for &len in &runs[1..] {
            let (run, after) = rest.split_at(len);
            rest = after;
            let new_class = self.members.push(run.to_vec());
            for &f in run {
                self.class_of[f] = new_class;
            }
        }
        self.members[class] = members;
        for f in moved {
            let (from, to) = (
                self.referrer_start[f.index()],
                self.referrer_start[f.index() + 1],
            );
            for i in from..to {
                let referrer = self.referrers[i as usize];
                let c = self.class_of[referrer];
                if self.members[c].len() > 1 {
                    self.defer(c);
                }
            }
        }
    }

    /// The classes of two or more, each in id order, ordered by their first member: the
    /// member lists themselves, not copies (a copy was an allocation per class).
    fn into_classes(self) -> Classes {
        let mut classes: Vec<Vec<FunctionId>> = self
            .members
            .into_iter()
            .map(|(_, members)| members)
            .filter(|m| m.len() > 1)
            .collect();
        for c in &mut classes {
            c.sort();
        }
        classes.sort();
        Classes { classes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The greatest fixpoint the slow way: classes by tokens, then split by the classes of the
    /// references until nothing changes.
    fn naive(fingerprints: &PrimaryMap<FunctionId, Fingerprint>) -> Classes {
        let n = fingerprints.len();
        let mut class: Vec<usize> = (0..n)
            .map(|i| {
                let fp = &fingerprints[FunctionId::new(i)];
                match fp.is_unique() {
                    true => n + i,
                    false => (0..n)
                        .find(|&j| fingerprints[FunctionId::new(j)].tokens == fp.tokens)
                        .unwrap(),
                }
            })
            .collect();
        loop {
            let key = |i: usize| {
                let refs = &fingerprints[FunctionId::new(i)].class_refs;
                (
                    class[i],
                    refs.iter().map(|r| class[r.index()]).collect::<Vec<_>>(),
                )
            };
            let next: Vec<usize> = (0..n)
                .map(|i| (0..n).find(|&j| key(j) == key(i)).unwrap())
                .map(|j| if class[j] >= n { class[j] } else { j })
                .collect();
            if next == class {
                break;
            }
            class = next;
        }
        let mut classes: Vec<Vec<FunctionId>> = Vec::new();
        for i in 0..n {
            let members: Vec<FunctionId> = (0..n)
                .filter(|&j| class[j] == class[i])
                .map(FunctionId::new)
                .collect();
            if members.len() > 1 && members[0].index() == i {
                classes.push(members);
            }
        }
        Classes { classes }
    }

    /// Elements with few distinct tokens, references between them, some unique, and hashes
    /// that collide on purpose (`hash_bits` of the tokens' first value).
    fn elements() -> impl Strategy<Value = (PrimaryMap<FunctionId, Fingerprint>, u64)> {
        let element = (
            0u32..4,
            proptest::collection::vec(0usize..24, 0..3),
            0u32..8,
        );
        (proptest::collection::vec(element, 1..24), 1u64..4).prop_map(|(elements, hash_bits)| {
            let n = elements.len();
            let map = elements
                .into_iter()
                .map(|(token, refs, unique)| match unique {
                    0 => Fingerprint::unique(),
                    _ => Fingerprint {
                        tokens: vec![token],
                        class_refs: refs.into_iter().map(|r| FunctionId::new(r % n)).collect(),
                        ..Fingerprint::default()
                    },
                })
                .collect::<Vec<_>>();
            (PrimaryMap::from(map), hash_bits)
        })
    }

    proptest! {
        #[test]
        fn refinement_is_the_greatest_fixpoint((fingerprints, hash_bits) in elements()) {
            let hashes: PrimaryMap<FunctionId, u64> = fingerprints
                .values()
                .map(|fp| fp.tokens.first().map_or(0, |&t| u64::from(t)) & ((1 << hash_bits) - 1))
                .collect::<Vec<_>>()
                .into();
            prop_assert_eq!(refine(&fingerprints, &hashes), naive(&fingerprints));
        }
    }
}
