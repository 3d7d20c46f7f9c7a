//! The stable key of a function's content: what a summary records and what names a shared body.
//!
//! The key is the 128-bit [`StableHash`] of the function's comparison tokens (the exact order of
//! `crate::compare`, every field that changes machine code or behaviour) written with every name
//! by identity, except a call to the function itself, which is written as a self-reference: two
//! self-recursive copies have one key. It is the same in every unit, on every machine and in
//! every build of one `ENCODING_VERSION`, and it pins the content: functions with one key are
//! the same function (up to a 128-bit collision), so a body named after its key is the same
//! body wherever it is emitted.

use crate::compare::stable_hash::StableHash;
use crate::compare::{ENCODING_VERSION, FingerprintWriter, NameKey, RefKind, Resolver};
use crate::module::{FuncName, FunctionId};
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

/// The content key of `func` (see the module docs).
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
