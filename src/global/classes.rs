//! The exact merge of the whole program, computed from the summary: partition refinement over
//! every function's fingerprint with holes, its constant hole values, and the *classes* of its
//! callees, to the greatest fixpoint — the classes the one-module merge would find if all units
//! were one module (recursion through several units included).
//!
//! Round 2 uses these classes only to *group* functions; what it emits never relies on them: the
//! members of a class that call differently named callees share a body that takes those callees
//! as parameters, and each member passes its own. A stale summary makes wrong groups, which cost
//! bytes, never behaviour.

use crate::compare::{Fingerprint, Hole};
use crate::module::{FuncName, FunctionId};
use cranelift_entity::PrimaryMap;
use rustc_hash::FxHashMap;

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

/// Each entry's class (an index), or None when it is alone in its class.
pub(super) fn program_classes(entries: &[ProgramEntry]) -> Vec<Option<u32>> {
    let mut by_name: FxHashMap<&FuncName, Option<usize>> = FxHashMap::default();
    for (i, e) in entries.iter().enumerate() {
        by_name
            .entry(&e.name)
            .and_modify(|found| *found = None)
            .or_insert(Some(i));
    }
    let fingerprints: PrimaryMap<FunctionId, Fingerprint> = entries
        .iter()
        .map(|e| class_fingerprint(e, &by_name))
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
            class_of[f.as_u32() as usize] = Some(c as u32);
        }
    }
    class_of
}

/// The entry as tokens: its parameter key, then each hole's value, a callee that names exactly
/// one entry as a class reference to it.
fn class_fingerprint(
    e: &ProgramEntry,
    by_name: &FxHashMap<&FuncName, Option<usize>>,
) -> Fingerprint {
    let mut fp = Fingerprint::default();
    push_u128(&mut fp.tokens, e.param_key);
    for hole in e.holes {
        match hole {
            Hole::Callee(name) => match by_name.get(name) {
                Some(Some(i)) => {
                    fp.tokens.push(CALLEE_CLASS);
                    fp.class_refs.push(FunctionId::from_u32(*i as u32));
                }
                _ => push_name(&mut fp.tokens, 5, name),
            },
            Hole::Int(bits) => fp.tokens.extend([1, *bits as u32, (*bits >> 32) as u32]),
            Hole::F32(bits) => fp.tokens.extend([2, *bits]),
            Hole::F64(bits) => fp.tokens.extend([3, *bits as u32, (*bits >> 32) as u32]),
            Hole::Name(name) => push_name(&mut fp.tokens, 4, name),
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
