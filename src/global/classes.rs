//! The exact merge of the whole program, computed from the summary: partition refinement over
//! every function's fingerprint with holes, its constant hole values, and the *classes* of its
//! callees, to the greatest fixpoint — the classes the one-module merge would find if all units
//! were one module (recursion through several units included).
//!
//! Round 2 uses these classes only to *group* functions; what it emits never relies on them: the
//! members of a class that call differently named callees share a body that takes those callees
//! as parameters, and each member passes its own. A stale summary makes wrong groups, which cost
//! bytes, never behaviour.

use crate::compare::stable_hash::GroupingHash;
use crate::compare::{Fingerprint, Hole};
use crate::module::{FuncName, FunctionId};
use cranelift_entity::PrimaryMap;
use rustc_hash::{FxHashMap, FxHashSet};

/// A function of the program that may share a body with parameters.
pub(super) struct ProgramEntry<'a> {
    /// Its name (global: functions that refer to local ones are not entries).
    pub(super) name: FuncName,
    /// Its parameter key.
    pub(super) param_key: u128,
    /// Its hole values.
    pub(super) holes: &'a [Hole],
    /// When it is a function of this unit: its id.
    pub(super) own: Option<FunctionId>,
}

/// A token no other token of a class fingerprint equals: "a class reference here".
const CALLEE_CLASS: u32 = u32::MAX;

/// Each entry's class (an index), or None when it is alone in its class or cannot be in a class
/// with a function of this unit.
///
/// Only the entries that may share a class with one of this unit's functions (the same tokens
/// but for callees) and what they call, transitively, are refined: whether two functions are
/// equal depends on nothing but what they reach, so refining that part alone gives the classes
/// the whole program would give there. A callee no other entry shares a parameter key with is
/// alone in its class whatever it calls: it stays a name and the closure stops there.
pub(super) fn program_classes(entries: &[ProgramEntry]) -> Vec<Option<u32>> {
    let mut by_name: FxHashMap<&FuncName, Option<usize>> = FxHashMap::default();
    for (i, e) in entries.iter().enumerate() {
        by_name
            .entry(&e.name)
            .and_modify(|found| *found = None)
            .or_insert(Some(i));
    }
    let callee = |hole: &Hole| match hole {
        Hole::Callee(name) => by_name.get(name).copied().flatten(),
        _ => None,
    };
    // Entries of one class have one parameter key (a cheap test that leaves out most of the
    // program) and one callee-blind key (which hashes every hole value).
    let own_entries = entries.iter().filter(|e| e.own.is_some());
    let own_params: FxHashSet<u128> = own_entries.clone().map(|e| e.param_key).collect();
    let own: FxHashSet<u128> = own_entries.map(callee_blind_key).collect();
    let mut part: Vec<usize> = Vec::new();
    let mut index: Vec<Option<u32>> = vec![None; entries.len()];
    for (i, e) in entries.iter().enumerate() {
        if own_params.contains(&e.param_key) && own.contains(&callee_blind_key(e)) {
            index[i] = Some(part.len() as u32);
            part.push(i);
        }
    }
    // A callee whose parameter key no other entry has is alone in its class: it is written by
    // name, and what it calls need not be refined.
    let mut param_counts: FxHashMap<u128, u32> = FxHashMap::default();
    for e in entries {
        *param_counts.entry(e.param_key).or_default() += 1;
    }
    let mut next = 0;
    while let Some(&i) = part.get(next) {
        next += 1;
        for j in entries[i].holes.iter().filter_map(callee) {
            if index[j].is_none() && param_counts[&entries[j].param_key] > 1 {
                index[j] = Some(part.len() as u32);
                part.push(j);
            }
        }
    }
    let fingerprints: PrimaryMap<FunctionId, Fingerprint> = part
        .iter()
        .map(|&i| class_fingerprint(&entries[i], &callee, &index))
        .collect();
    let hashes: PrimaryMap<FunctionId, u64> =
        fingerprints.values().map(crate::compare::hash).collect();
    let mut class_of = vec![None; entries.len()];
    for (c, class) in crate::partition::refine(&fingerprints, &hashes)
        .classes
        .iter()
        .enumerate()
    {
        for f in class {
            class_of[part[f.as_u32() as usize]] = Some(c as u32);
        }
    }
    class_of
}

/// A key of the entry's tokens and hole values with every callee left out: entries in one class
/// have one.
fn callee_blind_key(e: &ProgramEntry) -> u128 {
    let mut h = GroupingHash::new();
    h.u64(e.param_key as u64);
    h.u64((e.param_key >> 64) as u64);
    for hole in e.holes {
        match hole {
            Hole::Int(bits) | Hole::F64(bits) => h.u64(*bits),
            Hole::F32(bits) => h.u64(u64::from(*bits)),
            Hole::Name(name) => crate::global::key::hash_name(&mut h, name),
            Hole::Callee(_) => h.u64(u64::MAX),
            Hole::SelfCall => h.u64(u64::MAX - 1),
        }
    }
    h.finish()
}

/// The entry as tokens: its parameter key, then each hole's value, a callee that names exactly
/// one entry as a class reference to it.
fn class_fingerprint(
    e: &ProgramEntry,
    callee: &impl Fn(&Hole) -> Option<usize>,
    index: &[Option<u32>],
) -> Fingerprint {
    let mut fp = Fingerprint::default();
    push_u128(&mut fp.tokens, e.param_key);
    for hole in e.holes {
        match hole {
            Hole::Callee(name) => match callee(hole).and_then(|i| index[i]) {
                Some(i) => {
                    fp.tokens.push(CALLEE_CLASS);
                    fp.class_refs.push(FunctionId::from_u32(i));
                }
                None => push_name(&mut fp.tokens, 5, name),
            },
            Hole::Int(bits) => fp.tokens.extend([1, *bits as u32, (*bits >> 32) as u32]),
            Hole::F32(bits) => fp.tokens.extend([2, *bits]),
            Hole::F64(bits) => fp.tokens.extend([3, *bits as u32, (*bits >> 32) as u32]),
            Hole::Name(name) => push_name(&mut fp.tokens, 4, name),
            Hole::SelfCall => fp.tokens.push(6),
        }
    }
    fp
}

/// A name as tokens after `tag`: every token's meaning is fixed by the ones before it.
fn push_name(tokens: &mut Vec<u32>, tag: u32, name: &FuncName) {
    tokens.push(tag);
    match name {
        FuncName::User { namespace, index } => tokens.extend([0, *namespace, *index]),
        FuncName::Testcase(text) => {
            tokens.extend([1, text.len() as u32]);
            tokens.extend(text.bytes().map(u32::from));
        }
    }
}

fn push_u128(tokens: &mut Vec<u32>, x: u128) {
    tokens.extend((0..4).map(|i| (x >> (32 * i)) as u32));
}
