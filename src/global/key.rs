//! The stable key of a function's content: what a summary records and what names a shared body.
//!
//! The key is the 128-bit [`StableHash`] of the function's comparison tokens (the exact order of
//! `crate::compare`, every field that changes machine code or behaviour) written with every name
//! by identity, except a call to the function itself, which is written as a self-reference: two
//! self-recursive copies have one key. A function that may share a body with parameters is
//! walked once, with holes (`crate::similar::across`): its key is then the hash of those tokens
//! and of every hole's value, which says as much (tokens and values together are the function),
//! in another domain of the hash so that the two kinds of keys never meet. It is the same in every unit, on every machine and in
//! every build of one `ENCODING_VERSION`, and it pins the content: functions with one key are
//! the same function (up to a 128-bit collision), so a body named after its key is the same
//! body wherever it is emitted.

use crate::compare::stable_hash::StableHash;
use crate::compare::{
    ENCODING_VERSION, Fingerprint, FingerprintWriter, Hole, NameKey, RefKind, Resolver,
};
use crate::module::{ClifModule, FuncName, FunctionId};
use crate::refs::ModuleRefs;
use crate::similar::across::param_fingerprint;
use cranelift_codegen::ir::{ExternalName, Function};

/// Every name by identity but calls of the function itself.
struct SelfResolver {
    name: FuncName,
}

impl Resolver for SelfResolver {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        let is_self = FuncName::of_external(name, func).is_some_and(|n| n == self.name);
        if kind == RefKind::Call && is_self {
            // The id is a placeholder: only the token that says "class reference" is hashed.
            NameKey::Class(FunctionId::from_u32(0))
        } else {
            NameKey::Identity
        }
    }
}

/// The content key of module function `id` and, when it may share a body with parameters, its
/// fingerprint with holes, from one walk (see the module docs).
pub fn function_key(
    module: &ClifModule,
    refs: &ModuleRefs,
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> (u128, Option<Fingerprint>) {
    match param_fingerprint(module, refs, id, writer) {
        Some(fp) => (key_with_holes(&fp), Some(fp)),
        None => (content_key(writer, &module.function(id).func), None),
    }
}

fn key_with_holes(fp: &Fingerprint) -> u128 {
    let mut h = StableHash::new();
    h.str("clif-merge exact with holes");
    h.u64(u64::from(ENCODING_VERSION));
    h.u64(fp.tokens.len() as u64);
    for &t in &fp.tokens {
        h.bytes(&t.to_le_bytes());
    }
    h.u64(fp.holes.len() as u64);
    for hole in &fp.holes {
        match hole {
            Hole::Int(bits) => {
                h.u64(1);
                h.u64(*bits);
            }
            Hole::F32(bits) => {
                h.u64(2);
                h.u64(u64::from(*bits));
            }
            Hole::F64(bits) => {
                h.u64(3);
                h.u64(*bits);
            }
            Hole::Name(name) => {
                h.u64(4);
                h.str(&name.to_string());
            }
            Hole::Callee(name) => {
                h.u64(5);
                h.str(&name.to_string());
            }
        }
    }
    h.finish()
}

/// The content key of `func` written without holes (see the module docs).
pub fn content_key(writer: &mut FingerprintWriter, func: &Function) -> u128 {
    let resolver = SelfResolver {
        name: FuncName::of_function(func),
    };
    let fingerprint = writer.write(func, &resolver);
    let mut h = StableHash::new();
    h.str("clif-merge exact");
    h.u64(u64::from(ENCODING_VERSION));
    h.u64(fingerprint.tokens.len() as u64);
    for &t in &fingerprint.tokens {
        h.bytes(&t.to_le_bytes());
    }
    h.finish()
}
