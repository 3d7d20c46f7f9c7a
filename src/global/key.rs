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
//! content it emits ([`content_name_hash`], BLAKE3 over the whole fingerprint), so two different
//! bodies never get one name short of a BLAKE3 collision, which nobody can make. Both are the
//! same in every unit, on every machine and in every build of one `ENCODING_VERSION`.

use crate::compare::stable_hash::{ContentHash, GroupingHash, NameHasher};
use crate::compare::{
    ENCODING_VERSION, FingerprintWriter, Hole, HoleKinds, NameKey, RefKind, Resolver,
};
use crate::module::{ClifModule, FuncName, FunctionId, Symbol, SymbolLinkage};
use crate::similar::across::{param_key_and_holes, param_key_and_holes_self_by_name};
use cranelift_codegen::ir::{ExternalName, Function};

/// Every name by identity but calls of the function itself (when `name` is given).
struct SelfResolver {
    name: Option<FuncName>,
}

impl Resolver for SelfResolver {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        let is_self = (self.name.as_ref())
            .is_some_and(|own| FuncName::of_external(name, func).as_ref() == Some(own));
        if kind == RefKind::Call && is_self {
            // The id is a placeholder: only the token that says "class reference" is hashed.
            NameKey::Class(FunctionId::from_u32(0))
        } else {
            NameKey::Identity
        }
    }
}

/// What a summary records of a function's content (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionKey {
    /// The content key.
    pub key: u128,
    /// For a function that calls itself, is not `local` and may share a body with parameters:
    /// the content key it has with those calls written as calls of its name. A copy of it in
    /// another unit whose recursive calls call it (not the copy) has this key as its own.
    pub self_by_name: Option<u128>,
    /// The parameter key and hole values, when it may share a body with parameters.
    pub param: Option<ParamRecord>,
}

/// The keys of module function `id`, from one walk (two for a function that calls itself).
/// `callees` is what each of its external-function declarations names in the module
/// ([`FunctionRefs::callees`](crate::refs::FunctionRefs)).
pub fn function_key(
    module: &ClifModule,
    callees: &[Option<Symbol>],
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> FunctionKey {
    match param_key_and_holes(module, callees, id, writer) {
        Some((key, holes)) => {
            let calls_itself = !writer.class_refs().is_empty();
            let linkage = module.function(id).linkage;
            // A `local` function's name says nothing in another unit.
            let self_by_name = (calls_itself && linkage != SymbolLinkage::Local).then(|| {
                let (key, holes) = param_key_and_holes_self_by_name(module, callees, id, writer);
                key_with_holes(key, &holes)
            });
            FunctionKey {
                key: key_with_holes(key, &holes),
                self_by_name,
                param: Some(ParamRecord { key, holes }),
            }
        }
        None => {
            let func = &module.function(id).func;
            writer.walk_with_holes(func, &self_resolver(module, id), HoleKinds::NONE);
            FunctionKey {
                key: plain_key(writer.tokens()),
                self_by_name: None,
                param: None,
            }
        }
    }
}

/// The work of keying a function, for spreading keying over threads: its instruction count.
pub(super) fn walk_weight(module: &ClifModule) -> impl Fn(&FunctionId) -> usize {
    |&id| module.function(id).func.dfg.num_insts()
}

fn self_resolver(module: &ClifModule, id: FunctionId) -> SelfResolver {
    SelfResolver {
        name: Some(module.function(id).name.clone()),
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
            Hole::SelfCall => h.u64(6),
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

/// The hash that names the shared body of `func`'s content: [`ContentHash`] (BLAKE3, 128 bits)
/// of its [`content_tokens`], calls of itself as a self-reference. Unlike the grouping keys,
/// this one pins content: equal names, equal bodies, even against a unit crafted to collide.
/// It names the IR; the object writer adds the build (`crate::global::shared_symbol`).
pub fn content_name_hash(writer: &mut FingerprintWriter, func: &Function) -> u128 {
    content_name_hash_of(&content_tokens(writer, func, false))
}

/// The tokens of `func`'s content, written without holes: every name by identity, and calls
/// of `func` itself as a self-reference or, with `self_by_name`, as calls of its name (the
/// content of a copy of it in another unit that calls it instead of itself, see
/// [`FunctionKey::self_by_name`]). Equal tokens, equal behaviour.
pub fn content_tokens(
    writer: &mut FingerprintWriter,
    func: &Function,
    self_by_name: bool,
) -> Vec<u32> {
    let resolver = SelfResolver {
        name: (!self_by_name).then(|| FuncName::of_function(func)),
    };
    writer.write(func, &resolver).tokens
}

/// [`content_name_hash`] of content tokens.
pub fn content_name_hash_of(tokens: &[u32]) -> u128 {
    let mut h = ContentHash::new();
    h.str("clif-merge exact");
    h.u64(u64::from(ENCODING_VERSION));
    h.u64(tokens.len() as u64);
    for &t in tokens {
        h.bytes(&t.to_le_bytes());
    }
    h.finish()
}

/// A function's fingerprint with holes, as a summary records it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParamRecord {
    /// The 128-bit hash of the fingerprint's tokens (holes as placeholders).
    pub key: u128,
    /// The value of each hole, in walk order.
    pub holes: Vec<Hole>,
}

/// A function of the unit that may be shared: its content keys, parameter key and hole values.
pub(super) struct OwnFunction {
    pub(super) id: FunctionId,
    pub(super) key: u128,
    pub(super) self_by_name: Option<u128>,
    pub(super) param: Option<ParamRecord>,
}
