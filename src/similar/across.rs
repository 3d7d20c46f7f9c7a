//! Similar merging across units: the parameterized half of global merging ([`crate::global`]).
//!
//! A unit sees its own functions only; a summary tells it the fingerprint with holes (its
//! *parameter key*) and the hole values of every function of the other units. Functions of
//! several units with one parameter key are *variants* of one shared body with parameters: every
//! unit that holds one computes the same layout from the same variants (the summary's, and its
//! own functions as they are), so every unit writes the same shared body under the same name,
//! and the linker keeps one copy. Each unit's members become thunks passing their own values.
//!
//! What the fingerprint leaves as holes here differs from the one-module merge in one way:
//! every direct callee is a hole, imports included (in one unit, a function of another unit is
//! an import), so that two units calling each other's copies see one shape. Calls to the
//! function itself stay self-references; preemptible module functions and `patchable`
//! declarations stay names.
//!
//! Safety does not rest on the summary: the shared body is the unit's own function with the
//! layout's positions made parameters, named after that content; each member passes its own
//! values. A wrong summary gives a layout no other unit shares: one more body, never another
//! behaviour.

use super::cost::{GroupShape, InstructionMix};
use super::find::{Member, is_candidate};
use super::params::ParamLayout;
use super::rewrite::{content_hash, rewrite_as_member_thunk};
use super::{SimilarOptions, shared};
use crate::compare::stable_hash::{ContentHash, GroupingHash};
use crate::compare::{
    ENCODING_VERSION, Fingerprint, FingerprintWriter, Hole, HoleKinds, NameKey, RefKind, Resolver,
};
use crate::edit::callsite::ExtraArgument;
use crate::module::{ClifModule, FuncName, FunctionId, Symbol, SymbolLinkage};
use crate::refs::ModuleRefs;
use cranelift_codegen::ir::{ExternalName, FuncRef, Function, InstructionData, Opcode, Signature};
use cranelift_entity::EntityRef;

/// Every operand kind the one-module merge parameterizes, constants at each use (a constant
/// that value numbering made one value for two uses is two holes, as in a copy of the function
/// whose two constants differ).
const HOLES: HoleKinds = HoleKinds::INT_CONSTANTS
    .union(HoleKinds::FLOAT_CONSTANTS)
    .union(HoleKinds::CONSTANT_USES)
    .union(HoleKinds::SYMBOLS)
    .union(HoleKinds::CALLEES);

/// Names as the module docs say.
struct AcrossResolver<'r> {
    module: &'r ClifModule,
    me: FunctionId,
    callees: &'r [Option<Symbol>],
    /// Calls of the function itself are callee holes holding its name, as in a copy of it in
    /// another unit that calls it, instead of self-references.
    self_by_name: bool,
}

impl AcrossResolver<'_> {
    fn key(
        &self,
        func: &Function,
        symbol: Option<Symbol>,
        name: &ExternalName,
        kind: RefKind,
        patchable: bool,
    ) -> NameKey {
        if kind != RefKind::Call || patchable {
            return NameKey::Identity;
        }
        match symbol {
            None if FuncName::of_external(name, func).is_some() => NameKey::Hole,
            None => NameKey::Identity,
            Some(symbol) => {
                match super::find::callee_key(self.module, self.me, Some(symbol), kind, false) {
                    NameKey::Class(_) if self.self_by_name => NameKey::Hole,
                    key => key,
                }
            }
        }
    }
}

impl Resolver for AcrossResolver<'_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        let symbol = self.module.lookup_external(name, func);
        self.key(func, symbol, name, kind, false)
    }

    fn resolve_func_ref(&self, func: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        let ext = &func.dfg.ext_funcs[func_ref];
        self.key(
            func,
            self.callees[func_ref.index()],
            &ext.name,
            kind,
            ext.patchable,
        )
    }
}

/// The fingerprint with holes of `id`, or None when it may not share a body with parameters
/// (the one-module merge's candidates).
pub(crate) fn param_fingerprint(
    module: &ClifModule,
    refs: &ModuleRefs,
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> Option<Fingerprint> {
    if !is_candidate(module, id) {
        return None;
    }
    let resolver = AcrossResolver {
        module,
        me: id,
        callees: &refs.of_function(id).callees,
        self_by_name: false,
    };
    Some(writer.write_with_holes(&module.function(id).func, &resolver, HOLES))
}

/// [`param_fingerprint`]'s parameter key and hole values, without keeping the tokens.
pub(crate) fn param_key_and_holes(
    module: &ClifModule,
    callees: &[Option<Symbol>],
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> Option<(u128, Vec<Hole>)> {
    is_candidate(module, id).then(|| walk_key_and_holes(module, callees, id, writer, false))
}

/// For a candidate whose last walk by [`param_key_and_holes`] wrote a call of itself: its
/// parameter key and hole values with those calls written as calls of its name (callee holes
/// holding it), which is what a copy of it in another unit that calls it instead of itself
/// has.
pub(crate) fn param_key_and_holes_self_by_name(
    module: &ClifModule,
    callees: &[Option<Symbol>],
    id: FunctionId,
    writer: &mut FingerprintWriter,
) -> (u128, Vec<Hole>) {
    walk_key_and_holes(module, callees, id, writer, true)
}

fn walk_key_and_holes(
    module: &ClifModule,
    callees: &[Option<Symbol>],
    id: FunctionId,
    writer: &mut FingerprintWriter,
    self_by_name: bool,
) -> (u128, Vec<Hole>) {
    let resolver = AcrossResolver {
        module,
        me: id,
        callees,
        self_by_name,
    };
    writer.walk_with_holes(&module.function(id).func, &resolver, HOLES);
    (tokens_key(writer.tokens()), writer.holes().to_vec())
}

/// The parameter key: a stable 128-bit grouping hash of the fingerprint's tokens (it only
/// groups: the shared body is named after its content, `rewrite::content_hash`).
fn tokens_key(tokens: &[u32]) -> u128 {
    let mut h = GroupingHash::new();
    h.str("clif-merge param");
    h.u64(u64::from(ENCODING_VERSION));
    h.words(tokens);
    h.finish()
}

/// A shared body with parameters that a unit will write.
pub(crate) struct AcrossPlan {
    first: Member,
    layout: ParamLayout,
    name: FuncName,
    self_calls: Vec<cranelift_codegen::ir::Inst>,
    callee_signatures: Vec<Option<Signature>>,
}

impl AcrossPlan {
    /// Parameters the shared body adds.
    pub(crate) fn parameters(&self) -> usize {
        self.layout.count()
    }

    /// The shared body's name.
    pub(crate) fn name(&self) -> &FuncName {
        &self.name
    }
}

/// The plan for a group whose `variants` (distinct hole vectors, in a content order every unit
/// sees alike, `first`'s among them) are held by `functions` functions in all units; None when
/// it does not fit the registers, does not pay, or cannot be written.
pub(crate) fn plan(
    module: &ClifModule,
    first: (FunctionId, &Fingerprint),
    variants: &[&[Hole]],
    functions: usize,
    options: &SimilarOptions,
) -> Option<AcrossPlan> {
    let (id, fp) = first;
    if variants.iter().any(|v| v.len() != fp.holes.len()) {
        return None;
    }
    let members: Vec<Member> = variants
        .iter()
        .map(|holes| Member {
            id,
            fingerprint: Fingerprint {
                tokens: fp.tokens.clone(),
                class_refs: fp.class_refs.clone(),
                holes: holes.to_vec(),
                hole_sites: fp.hole_sites.clone(),
            },
        })
        .collect();
    let func = &module.function(id).func;
    let layout = ParamLayout::of(&members.iter().collect::<Vec<_>>(), func);
    if !options.takes_parameters(layout.count()) {
        return None;
    }
    let shape = GroupShape {
        members: variants.len() as u64,
        thunks: functions as u64,
        removed_call_sites: 0,
        instructions: InstructionMix::of(func),
        parameters: layout.count() as u64,
        stack_arguments: options
            .registers
            .stack_arguments(&func.signature, &layout.types) as u64,
    };
    if options.cost.saving(&shape) < options.min_saving {
        return None;
    }
    let first = Member {
        id,
        fingerprint: fp.clone(),
    };
    let self_calls = shared::check(module, &first, &layout).ok()?;
    let callee_signatures = callee_signatures(func, &first, &layout);
    // Shared among units: a collision-resistant hash (`compare::stable_hash`).
    let hash = content_hash(&first, &layout, ContentHash::new());
    let name = FuncName::Testcase(format!("clifmerge_p{hash:032x}").into());
    Some(AcrossPlan {
        first,
        layout,
        name,
        self_calls,
        callee_signatures,
    })
}

/// For each parameter that is a callee, the signature it is called with.
fn callee_signatures(
    func: &Function,
    first: &Member,
    layout: &ParamLayout,
) -> Vec<Option<Signature>> {
    let mut signatures = vec![None; layout.count()];
    for (p, param) in layout.param_of_position.iter().enumerate() {
        let Some(param) = param else { continue };
        // A constant passed to a call is a hole at the call too: only callees have signatures.
        let callee = matches!(first.fingerprint.holes[p], Hole::Callee(_) | Hole::SelfCall);
        if let (true, InstructionData::Call { func_ref, .. }) =
            (callee, func.dfg.insts[first.fingerprint.hole_sites[p]])
        {
            let sig = func.dfg.ext_funcs[func_ref].signature;
            signatures[*param as usize] = Some(func.dfg.signatures[sig].clone());
        }
    }
    signatures
}

/// Writes `plan`'s shared body into `module` ([`SymbolLinkage::LinkOnce`]) and makes each of
/// `members` (this unit's functions of the group, with their fingerprints) a thunk passing its
/// values; returns the shared body's name, or None when the module already has it.
pub(crate) fn apply(
    module: &mut ClifModule,
    plan: AcrossPlan,
    members: &[(FunctionId, Fingerprint)],
) -> Option<FuncName> {
    if module.lookup(&plan.name).is_some() {
        return None;
    }
    let first = module.function(plan.first.id);
    // Where its code came from: an error compiling it names that file and line (hostile15).
    let origin = first.origin.clone();
    let body = Function::clone(&first.func);
    let body = shared::shared_body(
        body,
        &plan.first,
        &plan.self_calls,
        &plan.layout,
        &plan.name,
    );
    let shared_sig = body.signature.clone();
    module
        .define(body, SymbolLinkage::LinkOnce, origin)
        .expect("a fresh name; references of a verified function");
    for (id, fp) in members {
        let args = arguments(&plan, fp);
        let mf = module.function_mut(*id);
        rewrite_as_member_thunk(&mut mf.func, &mf.name, &plan.name, &shared_sig, &args);
        not_colocated_addresses(&mut mf.func);
    }
    Some(plan.name)
}

/// The values a member with fingerprint `fp` passes, in parameter order.
fn arguments(plan: &AcrossPlan, fp: &Fingerprint) -> Vec<ExtraArgument> {
    let mut values: Vec<Option<Hole>> = vec![None; plan.layout.count()];
    for (p, param) in plan.layout.param_of_position.iter().enumerate() {
        if let Some(param) = param {
            values[*param as usize].get_or_insert_with(|| fp.holes[p].clone());
        }
    }
    values
        .into_iter()
        .zip(&plan.layout.types)
        .zip(&plan.callee_signatures)
        .map(|((value, &ty), signature)| ExtraArgument {
            ty,
            value: value.expect("every parameter has a position"),
            signature: signature.clone(),
            // A callee may be in another object, even another shared library.
            colocated: false,
        })
        .collect()
}

/// A callee passed by a thunk may be a function of another object, even of another shared
/// library: its address is taken through the GOT, never PC-relative.
fn not_colocated_addresses(func: &mut Function) {
    let layout_insts: Vec<_> = func
        .layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b).collect::<Vec<_>>())
        .collect();
    for inst in layout_insts {
        if let InstructionData::FuncAddr {
            func_ref,
            opcode: Opcode::FuncAddr,
        } = func.dfg.insts[inst]
        {
            func.dfg.ext_funcs[func_ref].colocated = false;
        }
    }
}
