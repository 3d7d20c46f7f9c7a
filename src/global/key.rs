//! The stable key of a function's content, which a summary records and round 2 groups by, and
//! the hash that names a shared body.
//!
//! The key is a 128-bit [`GroupingHash`] of the function's comparison tokens (the exact order of
//! `crate::compare`, every field that changes machine code or behaviour) written with every name
//! by identity, except a call to the function itself, which is written as a self-reference: two
//! self-recursive copies have one key. A function that may share a body with parameters is
//! walked once, with holes (`crate::similar::across`): its key is then the hash of those tokens
//! and of every hole's value, which says as much (tokens and values together are the function),
//! in another domain of the hash so that the two kinds of keys never meet. Keys only group: a
//! collision puts two functions in one group, and round 2 names each shared body after the
//! content it emits ([`content_name_hash`], FNV-1a over the whole fingerprint), so two different
//! bodies never get one name short of a 128-bit FNV collision. Both are the same in every unit,
//! on every machine and in every build of one `ENCODING_VERSION`.

use super::summary::ParamRecord;
use crate::compare::stable_hash::{GroupingHash, StableHash};
use crate::compare::{
    ENCODING_VERSION, FingerprintWriter, Hole, HoleKinds, NameKey, RefKind, Resolver,
};
use crate::module::{ClifModule, FuncName, FunctionId, Symbol};
use crate::similar::across::param_key_and_holes;
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
/// parameter key and hole values, from one walk (see the module docs). `callees` is what each
/// of its external-function declarations names in the module
/// ([`FunctionRefs::callees`](crate::refs::FunctionRefs)).
pub fn function_key(
    module: &ClifModule,
    callees: &[Option<Symbol>],
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> (u128, Option<ParamRecord>) {
    match param_key_and_holes(module, callees, id, writer) {
        Some((key, holes)) => (
            key_with_holes(key, &holes),
            Some(ParamRecord { key, holes }),
        ),
        None => {
            let func = &module.function(id).func;
            writer.walk_with_holes(func, &self_resolver(module, id), HoleKinds::NONE);
            (plain_key(writer.tokens()), None)
        }
    }
}

/// The work of keying a function, for spreading keying over threads: its instruction count.
pub(super) fn walk_weight(module: &ClifModule) -> impl Fn(&FunctionId) -> usize {
    |&id| module.function(id).func.dfg.num_insts()
}

fn self_resolver(module: &ClifModule, id: FunctionId) -> SelfResolver {
    SelfResolver {
        name: module.function(id).name.clone(),
    }
}

/// The key of a function from its parameter key (which hashes its tokens) and its holes.
fn key_with_holes(param_key: u128, holes: &[Hole]) -> u128 {
    let mut h = GroupingHash::new();
    h.str("clif-merge exact with holes");
    h.u64(param_key as u64);
    h.u64((param_key >> 64) as u64);
    h.u64(holes.len() as u64);
    for hole in holes {
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
                hash_name(&mut h, name);
            }
            Hole::Callee(name) => {
                h.u64(5);
                hash_name(&mut h, name);
            }
        }
    }
    h.finish()
}

/// Adds a name to a grouping hash.
pub(crate) fn hash_name(h: &mut GroupingHash, name: &FuncName) {
    match name {
        FuncName::User { namespace, index } => {
            h.u64(1);
            h.u64((u64::from(*namespace) << 32) | u64::from(*index));
        }
        FuncName::Testcase(text) => {
            h.u64(2);
            h.str(text);
        }
    }
}

fn plain_key(tokens: &[u32]) -> u128 {
    let mut h = GroupingHash::new();
    h.str("clif-merge exact");
    h.u64(u64::from(ENCODING_VERSION));
    h.words(tokens);
    h.finish()
}

/// The hash that names the shared body of `func`'s content: [`StableHash`] (FNV-1a, 128 bits)
/// of its tokens written without holes, calls of itself as a self-reference. Unlike the
/// grouping keys, this one pins content: equal names, equal bodies.
pub fn content_name_hash(writer: &mut FingerprintWriter, func: &Function) -> u128 {
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
