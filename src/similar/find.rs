//! Finding groups of similar functions: fingerprints with holes, grouped by their tokens.

use crate::compare::{
    self, Fingerprint, FingerprintWriter, Hole, HoleKinds, NameKey, RefKind, Resolver,
};
use crate::edit::thunk::is_forwarding_thunk;
use crate::module::{ClifModule, FunctionId, Symbol};
use crate::parallel;
use crate::policy::frame::reads_own_frame;
use crate::refs::ModuleRefs;
use cranelift_codegen::ir::{ExternalName, FuncRef, Function, InstructionData, Opcode};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};
use rustc_hash::FxHashMap;

/// Every kind of operand that may become a parameter.
pub(super) const HOLES: HoleKinds = HoleKinds::INT_CONSTANTS
    .union(HoleKinds::FLOAT_CONSTANTS)
    .union(HoleKinds::CONSTANT_USES)
    .union(HoleKinds::SYMBOLS)
    .union(HoleKinds::CALLEES);

/// One function of a group, with its fingerprint with holes.
#[derive(Clone)]
pub(super) struct Member {
    pub(super) id: FunctionId,
    pub(super) fingerprint: Fingerprint,
}

/// How names compare inside one function for similar merging:
/// - a call to the function itself compares as a self-reference (the shared body calls itself);
/// - a call, through a declaration that is not `patchable`, to another module function that is
///   not preemptible or to an import (a name the module does not define), is a hole (the callee
///   may become a parameter);
/// - everything else — libcalls, preemptible functions, addresses — by identity.
struct SimilarResolver<'r> {
    module: &'r ClifModule,
    me: FunctionId,
    callees: &'r [Option<Symbol>],
}

/// How `me` sees a reference of `kind` to `symbol` (None: not a module symbol) through a
/// declaration that is `patchable` or not: the rule of [`SimilarResolver`], shared with the
/// shared body's writer, which must call itself exactly where the fingerprint saw `me`.
pub(super) fn callee_key(
    module: &ClifModule,
    me: FunctionId,
    symbol: Option<Symbol>,
    kind: RefKind,
    patchable: bool,
) -> NameKey {
    if patchable {
        return NameKey::Identity;
    }
    // A call to an import (a name the module does not define) is a hole like a call to a module
    // function: the shared body calls the address each member passes. (A libcall or a known
    // symbol has no name to pass: the walk compares it by identity.)
    let Some(symbol) = symbol else {
        return match kind {
            RefKind::Call => NameKey::Hole,
            RefKind::Address => NameKey::Identity,
        };
    };
    // A preemptible symbol may be another definition at run time, even when it names `me`
    // (a preemptible alias of it): never a self-reference, never a parameter.
    let preemptible = match symbol {
        Symbol::Function(id) => module.function(id).linkage.is_preemptible(),
        Symbol::Alias(i) => module.aliases()[i].linkage.is_preemptible(),
    };
    match (kind, module.resolve_symbol(symbol)) {
        _ if preemptible => NameKey::Identity,
        (RefKind::Call, Some(id)) if id == me => NameKey::Class(id),
        (RefKind::Call, Some(_)) => NameKey::Hole,
        _ => NameKey::Identity,
    }
}

impl Resolver for SimilarResolver<'_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        let symbol = self.module.lookup_external(name, func);
        as_hole(callee_key(self.module, self.me, symbol, kind, false))
    }

    fn resolve_func_ref(&self, func: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        let patchable = func.dfg.ext_funcs[func_ref].patchable;
        let symbol = self.callees[func_ref.index()];
        as_hole(callee_key(self.module, self.me, symbol, kind, patchable))
    }
}

/// A call of the function itself is written as a hole too (its value made [`Hole::SelfCall`]
/// by [`self_calls_named`]): a member calling itself where another calls some other function
/// of the same signature differ in one callee, which may be a parameter (the member passes its
/// own address, as Swift's merger does). Where every member calls itself, the position holds
/// one value and the shared body calls itself.
fn as_hole(key: NameKey) -> NameKey {
    match key {
        NameKey::Class(_) => NameKey::Hole,
        key => key,
    }
}

/// Gives the holes of `fp` (the fingerprint of `me`) that are calls of `me` itself the value
/// [`Hole::SelfCall`], the same in every member (the walk wrote the name the call used).
fn self_calls_named(
    module: &ClifModule,
    me: FunctionId,
    callees: &[Option<Symbol>],
    fp: &mut Fingerprint,
) {
    let func = &module.function(me).func;
    for (hole, &site) in fp.holes.iter_mut().zip(&fp.hole_sites) {
        if !matches!(hole, Hole::Callee(_)) {
            continue;
        }
        let (InstructionData::Call { func_ref, .. } | InstructionData::TryCall { func_ref, .. }) =
            func.dfg.insts[site]
        else {
            continue;
        };
        let patchable = func.dfg.ext_funcs[func_ref].patchable;
        let symbol = callees[func_ref.index()];
        if callee_key(module, me, symbol, RefKind::Call, patchable) == NameKey::Class(me) {
            *hole = Hole::SelfCall;
        }
    }
}

/// Whether `id` may take part in a similar merge: it has a body that is not already a thunk
/// (one that forwards its arguments, or one that adds constants: a member of an earlier similar
/// merge, which would only be wrapped in another thunk), and it is not preemptible (another
/// definition may replace it at link time).
pub(super) fn is_candidate(module: &ClifModule, id: FunctionId) -> bool {
    let mf = module.function(id);
    !mf.linkage.is_preemptible()
        && mf.func.layout.entry_block().is_some()
        && !is_forwarding_thunk(&mf.func)
        && !passes_constants(&mf.func)
}

/// Whether `func` is one block that only makes constants and addresses, then calls and
/// returns: the shape of a similar member's thunk.
fn passes_constants(func: &Function) -> bool {
    let mut blocks = func.layout.blocks();
    let (Some(entry), None) = (blocks.next(), blocks.next()) else {
        return false;
    };
    let mut calls = 0;
    for inst in func.layout.block_insts(entry) {
        match func.dfg.insts[inst].opcode() {
            Opcode::Iconst
            | Opcode::F32const
            | Opcode::F64const
            | Opcode::SymbolValue
            | Opcode::FuncAddr => {}
            Opcode::Call | Opcode::ReturnCall if calls == 0 => calls += 1,
            Opcode::Return if calls == 1 => {}
            _ => return false,
        }
    }
    calls == 1
}

/// The module functions that some declaration names with a signature other than their own
/// (legal CLIF: the call follows the declaration). They are not members: a caller of a removed
/// member must pass the member's own arguments to the shared body, and a self-call through such
/// a declaration cannot pass the shared body's; a thunk in place of the function would answer
/// a mismatched call otherwise than the function did. Left as they are, they keep their
/// behaviour exactly.
fn declared_otherwise(module: &ClifModule, refs: &ModuleRefs) -> EntitySet<FunctionId> {
    let found: Vec<Vec<FunctionId>> = parallel::map(
        module.ids(),
        || (),
        |_, _, &id| {
            let func = &module.function(id).func;
            let callees = &refs.of_function(id).callees;
            func.dfg
                .ext_funcs
                .iter()
                .filter_map(|(func_ref, ext)| {
                    let callee = module.resolve_symbol(callees[func_ref.index()]?)?;
                    let declared = &func.dfg.signatures[ext.signature];
                    (*declared != module.function(callee).func.signature).then_some(callee)
                })
                .collect()
        },
    );
    let mut set = EntitySet::with_capacity(module.id_count());
    for id in found.into_iter().flatten() {
        set.insert(id);
    }
    set
}

/// The groups of two or more candidates whose fingerprints with holes are equal, each sorted by
/// its members' hole values, the groups in no particular order.
/// `shapes` holds the shape hash of every function with a body (see
/// [`FingerprintWriter::shape_hash`]).
pub(super) fn similar_groups(
    module: &ClifModule,
    refs: &ModuleRefs,
    shapes: &SecondaryMap<FunctionId, Option<u64>>,
) -> Vec<Vec<Member>> {
    let candidates: Vec<FunctionId> = module
        .ids()
        .iter()
        .copied()
        .filter(|&id| is_candidate(module, id))
        .collect();
    // Similar functions have the same shape (the shape hash reads no operand), so only functions
    // that share a shape need their fingerprint written.
    let shapes: Vec<u64> = candidates
        .iter()
        .map(|&id| shapes[id].expect("a function with a body has a shape"))
        .collect();
    let mut shape_count: FxHashMap<u64, u32> = FxHashMap::default();
    for &shape in &shapes {
        *shape_count.entry(shape).or_default() += 1;
    }
    let mut shared: Vec<FunctionId> = candidates
        .iter()
        .zip(&shapes)
        .filter(|(_, s)| shape_count[s] >= 2)
        .map(|(&id, _)| id)
        .collect();
    if !shared.is_empty() {
        let declared_otherwise = declared_otherwise(module, refs);
        // A member becomes a thunk or is called with added arguments by a shared body that runs
        // in another frame: a function that reads its own frame would see that frame.
        shared.retain(|&id| {
            !declared_otherwise.contains(id) && !reads_own_frame(&module.function(id).func)
        });
    }
    let fingerprints: Vec<(Fingerprint, u64)> =
        parallel::map(&shared, FingerprintWriter::new, |w, _, &id| {
            let resolver = SimilarResolver {
                module,
                me: id,
                callees: &refs.of_function(id).callees,
            };
            let mut fp = w.write_with_holes(&module.function(id).func, &resolver, HOLES);
            self_calls_named(module, id, resolver.callees, &mut fp);
            let hash = compare::hash(&fp);
            (fp, hash)
        });
    let mut by_tokens: FxHashMap<(u64, &[u32]), Vec<usize>> = FxHashMap::default();
    for (i, (fp, hash)) in fingerprints.iter().enumerate() {
        by_tokens.entry((*hash, &fp.tokens)).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_tokens.into_values().filter(|g| g.len() >= 2).collect();
    groups.sort_unstable();
    let mut fingerprints: Vec<Option<Fingerprint>> =
        fingerprints.into_iter().map(|(fp, _)| Some(fp)).collect();
    groups
        .into_iter()
        .map(|group| {
            let mut members: Vec<Member> = group
                .into_iter()
                .map(|i| Member {
                    id: shared[i],
                    fingerprint: fingerprints[i]
                        .take()
                        .expect("each function is in one group"),
                })
                .collect();
            // By hole values, then name: a function of content, whatever the input order.
            members.sort_by(|a, b| {
                let name = |m: &Member| &module.function(m.id).name;
                a.fingerprint
                    .holes
                    .cmp(&b.fingerprint.holes)
                    .then_with(|| name(a).cmp(name(b)))
            });
            // Equal hole values would make the members equal: the exact merge left them apart
            // (they differ in something the order compares and holes do not see), so they stay.
            members.dedup_by(|a, b| a.fingerprint.holes == b.fingerprint.holes);
            members
        })
        .filter(|members| members.len() >= 2)
        .collect()
}
