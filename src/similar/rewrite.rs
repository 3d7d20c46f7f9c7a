//! The similar merge of a module: plan each group, keep those that pay, write shared bodies,
//! turn members into thunks or remove them, and make the callers of removed members call the
//! shared body with the members' values.

use super::choose::{CallUses, Choice, Removal, calls_in, needs_symbol};
use super::cost::GroupShape;
use super::find::{Member, similar_groups};
use super::measure::{CallerTrial, ClassSizes, SizeJudge, Trial};
use super::params::ParamLayout;
use super::record::RecordLayout;
use super::shared;
use super::{SimilarGroup, SimilarMember, SimilarOptions};
use crate::compare::FingerprintWriter;
use crate::compare::Hole;
use crate::compare::stable_hash::{NameHasher, StableHash};
use crate::edit::callsite::{ExtraArgument, redirect_declaration};
use crate::edit::names_in_use;
use crate::edit::thunk::{REUSE_MAX_INSTS, rewrite_as_thunk, write_thunk};
use crate::module::{ClifModule, FuncName, FunctionId, ModuleFunction, SymbolLinkage};
use crate::parallel;
use crate::policy::{Action, Mode};
use crate::refs::ModuleRefs;
use cranelift_codegen::ir::{FuncRef, Function, Inst, InstructionData, Signature};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};
use rustc_hash::{FxHashMap, FxHashSet};

/// With a judge, how many bytes below the threshold the model may price a group that is still
/// chosen, compiled and measured. On the corpus, groups priced down to −1,024 bytes save when
/// compiled (most pass stack arguments, which the model overprices); lower adds nothing there
/// (`benches/similar_sizes.sh`), and each group chosen costs a compile of its members.
const JUDGED_SLACK: i64 = 1024;

/// A group with its shared body written, not yet decided.
struct Planned {
    members: Vec<Member>,
    layout: ParamLayout,
    /// For each parameter that is a callee, the callee's signature.
    /// For each parameter that is a callee, the callee's signature and whether every call of it
    /// is declared `colocated`.
    callee_signatures: Vec<Option<(Signature, bool)>>,
    name: FuncName,
    /// The first member's calls to itself.
    self_calls: Vec<Inst>,
    /// What the model counts of it, and the bytes it says the merge saves.
    shape: GroupShape,
    predicted: i64,
    /// The bytes it saves measured, when a judge measured it.
    measured: Option<i64>,
    /// The records its members pass, when the judge found them cheaper than stack arguments.
    record: Option<RecordLayout>,
}

pub(super) fn merge_similar(
    module: &mut ClifModule,
    mode: Mode,
    options: &SimilarOptions,
    prior: Option<Prior>,
    made_from: usize,
) -> Vec<SimilarGroup> {
    let (refs, shapes) = refs_and_shapes(module, prior);
    let groups = similar_groups(module, &refs, &shapes);
    if groups.is_empty() {
        return Vec::new();
    }
    // Calls are counted only where they matter: for members that may be removed (before the
    // members that need a symbol are known, any that the rule allows).
    let none_needed = EntitySet::new();
    let before_needs = Removal {
        mode,
        needs: &none_needed,
        made_from,
    };
    let removable_member = (groups.iter().flatten()).any(|m| before_needs.removable(module, m.id));
    let uses = if removable_member {
        let calls = parallel::map(
            module.ids(),
            || (),
            |_, _, &id| calls_in(&module.function(id).func),
        );
        CallUses::of(module, &refs, &calls)
    } else {
        CallUses::default()
    };
    let needs = needs_symbol(module, &refs, &uses, &groups);
    let removal = Removal {
        needs: &needs,
        ..before_needs
    };
    // With a judge, groups the model prices below the threshold are chosen too: the model errs
    // both ways (it overprices stack arguments), and the measure decides.
    let choice_options = SimilarOptions {
        min_saving: (options.min_saving).saturating_sub(if options.judge.is_some() {
            JUDGED_SLACK
        } else {
            0
        }),
        ..options.clone()
    };
    let choice = Choice {
        module,
        options: &choice_options,
        removal,
        uses: &uses,
    };
    let mut names = FxHashSet::default();
    // A shared body must not take a name the module already uses, even only as an import: a
    // call to that import would call the shared body. Only needed once a group is accepted.
    let mut in_use: Option<FxHashSet<FuncName>> = None;
    let accepted: Vec<Planned> = groups
        .into_iter()
        .flat_map(|members| choice.subgroups(members))
        .filter_map(|members| plan_group(module, members))
        .filter(|p| module.lookup(&p.name).is_none() && names.insert(p.name.clone()))
        .filter(|p| {
            !in_use
                .get_or_insert_with(|| names_in_use(module))
                .contains(&p.name)
        })
        .map(|mut p| {
            p.shape = choice.shape(&p.members, &p.layout);
            p.predicted = options.cost.saving(&p.shape);
            p
        })
        .collect();
    let accepted = match &options.judge {
        Some(judge) => measured(module, removal, options, judge, accepted),
        None => accepted,
    };
    apply(module, removal, accepted)
}

/// The groups of `accepted` that save at least the threshold when compiled by `judge`, each
/// with its measured saving (see `measure.rs`).
fn measured(
    module: &ClifModule,
    removal: Removal<'_>,
    options: &SimilarOptions,
    judge: &SizeJudge,
    accepted: Vec<Planned>,
) -> Vec<Planned> {
    let callers = callers_to_measure(module, removal, &accepted);
    let in_use = (options.with_records() && !accepted.is_empty()).then(|| names_in_use(module));
    // Found once, and only when there is a group to measure: it compiles the module.
    let classes = (!accepted.is_empty())
        .then(|| judge.code_classes(module).map(ClassSizes::of))
        .flatten();
    let savings = parallel::map(&accepted, cranelift_codegen::Context::new, |ctx, g, p| {
        let variant = Variant {
            module,
            removal,
            planned: p,
            callers: &callers[g],
        };
        let stack_trial = variant.trial(None);
        let members: Vec<(FunctionId, &Function)> = (p.members.iter())
            .map(|m| (m.id, &*module.function(m.id).func))
            .collect();
        let before = judge.members_size(ctx, &members, classes.as_ref())?;
        let stack = judge.saving(ctx, &options.cost, &stack_trial, (before, classes.as_ref()));
        let address_cost = judge.record_address_cost();
        let record = (options.with_records()
            && address_cost.is_some()
            && p.shape.stack_arguments > 0
            && p.self_calls.is_empty())
        .then(|| RecordLayout::of(&p.layout))
        .flatten()
        .filter(|_| {
            let used = |m| {
                let name = record_name(&p.name, m);
                module.lookup(&name).is_some() || in_use.as_ref().is_some_and(|u| u.contains(&name))
            };
            !(0..p.members.len()).any(used)
        });
        let Some(record) = record else {
            return stack.map(|s| (s, None));
        };
        // Each record's bytes, and what taking its address adds beside the code.
        let data: u64 = (0..p.members.len())
            .map(|m| {
                record
                    .record(&p.layout, m, record_name(&p.name, m))
                    .footprint()
                    + address_cost.unwrap_or(0)
            })
            .sum();
        let mut trial = variant.trial(Some(&record));
        trial.parameters = record.parameters(&p.layout) as u64;
        let own = &module.function(p.members[0].id).func.signature;
        trial.stack_arguments =
            (options.registers).stack_arguments(own, &record.types(&p.layout)) as u64;
        let with_record = judge
            .saving(ctx, &options.cost, &trial, (before, classes.as_ref()))
            .map(|s| s - data as i64);
        match (stack, with_record) {
            (Some(s), Some(r)) if r > s => Some((r, Some(record))),
            (None, Some(r)) => Some((r, Some(record))),
            (s, _) => s.map(|s| (s, None)),
        }
    });
    (accepted.into_iter().zip(savings))
        .filter_map(|(mut p, saving)| {
            let (saving, record) = saving.filter(|&(s, _)| s >= options.min_saving)?;
            p.measured = Some(saving);
            p.record = record;
            Some(p)
        })
        .collect()
}

/// The name of member `m`'s record in the group whose shared body is `shared` (a testcase
/// name, as [`content_name`] makes).
fn record_name(shared: &FuncName, m: usize) -> FuncName {
    let shared = match shared {
        FuncName::Testcase(name) => name.to_string(),
        other => other.to_string(),
    };
    FuncName::Testcase(format!("{shared}_r{m}").into())
}

/// One way to write a planned group, to be measured: with stack arguments, or with records.
struct Variant<'a> {
    module: &'a ClifModule,
    removal: Removal<'a>,
    planned: &'a Planned,
    callers: &'a [Caller],
}

impl<'a> Variant<'a> {
    /// What the group writes and removes, with `record`'s records or without.
    fn trial(&self, record: Option<&RecordLayout>) -> Trial<'a> {
        let (module, p) = (self.module, self.planned);
        let first = &module.function(p.members[0].id).func;
        let mut shared = shared::shared_body(
            Function::clone(first),
            &p.members[0],
            &p.self_calls,
            &p.layout,
            &p.name,
        );
        if let Some(record) = record {
            record.load_in(&mut shared, p.layout.count());
        }
        let args = |m: usize| member_arguments(module, p, record, m);
        let thunks = (p.members.iter().enumerate())
            .filter(|(_, m)| !self.removal.removable(module, m.id))
            .map(|(i, m)| {
                let mf = module.function(m.id);
                member_thunk(
                    &mf.name,
                    &mf.func.signature,
                    &p.name,
                    &shared.signature,
                    &args(i),
                )
            })
            .collect();
        let callers = (self.callers.iter())
            .filter_map(|caller| {
                let before = &*module.function(caller.id).func;
                let mut after = before.clone();
                for &(func_ref, m) in &caller.declarations {
                    let sig = shared.signature.clone();
                    redirect_declaration(&mut after, func_ref, &p.name, sig, &args(m)).ok()?;
                }
                Some(CallerTrial {
                    id: caller.id,
                    before,
                    after,
                    sites: caller.sites,
                })
            })
            .collect();
        Trial {
            shared,
            thunks,
            removed_call_sites: p.shape.removed_call_sites,
            callers,
            parameters: p.shape.parameters,
            stack_arguments: p.shape.stack_arguments,
        }
    }
}

/// The values member `m` of `p` passes: [`arguments`], or with `record`, those not in the
/// record and the record's address.
fn member_arguments(
    module: &ClifModule,
    p: &Planned,
    record: Option<&RecordLayout>,
    m: usize,
) -> Vec<ExtraArgument> {
    let args = arguments(module, p, m);
    match record {
        Some(record) => record.arguments(&args, &record_name(&p.name, m)),
        None => args,
    }
}

/// A function that calls removed members of one group: its declarations naming them (with
/// the member's index in the group) and how many calls it makes through them.
struct Caller {
    id: FunctionId,
    declarations: Vec<(FuncRef, usize)>,
    sites: u64,
}

/// For each group of `accepted`, every function (in output order) that calls its removed
/// members, other than its members (whose bodies the merge replaces): each is measured, since
/// the sites of callers not measured can grow more than those measured (a caller that already
/// passes stack arguments grows less than one whose registers were free).
fn callers_to_measure(
    module: &ClifModule,
    removal: Removal<'_>,
    accepted: &[Planned],
) -> Vec<Vec<Caller>> {
    let mut callers: Vec<Vec<Caller>> = (0..accepted.len()).map(|_| Vec::new()).collect();
    // Member → (its group, its index there, whether it is removed).
    let mut member_of: FxHashMap<FunctionId, (usize, usize, bool)> = FxHashMap::default();
    for (g, p) in accepted.iter().enumerate() {
        for (i, m) in p.members.iter().enumerate() {
            member_of.insert(m.id, (g, i, removal.removable(module, m.id)));
        }
    }
    if !member_of.values().any(|&(_, _, removed)| removed) {
        return callers;
    }
    let is_removed = |id: FunctionId| member_of.get(&id).is_some_and(|&(_, _, r)| r);
    let found = parallel::map(
        module.ids(),
        || (),
        |_, _, &id| {
            let func = &module.function(id).func;
            let declarations = declarations_naming(module, func, &is_removed);
            let calls = if declarations.is_empty() {
                Vec::new()
            } else {
                calls_in(func)
            };
            (declarations, calls)
        },
    );
    for (&id, (declarations, calls)) in module.ids().iter().zip(found) {
        for (func_ref, callee) in declarations {
            let (g, m, _) = member_of[&callee];
            let own = member_of.get(&id).is_some_and(|&(of, _, _)| of == g);
            if own {
                continue;
            }
            let sites = calls.iter().filter(|(f, _)| *f == func_ref).count() as u64;
            match callers[g].last_mut() {
                Some(caller) if caller.id == id => {
                    caller.declarations.push((func_ref, m));
                    caller.sites += sites;
                }
                _ => callers[g].push(Caller {
                    id,
                    declarations: vec![(func_ref, m)],
                    sites,
                }),
            }
        }
    }
    callers
}

/// The declarations of `func` that name a function `wanted` accepts, with that function.
fn declarations_naming(
    module: &ClifModule,
    func: &Function,
    wanted: &impl Fn(FunctionId) -> bool,
) -> Vec<(FuncRef, FunctionId)> {
    func.dfg
        .ext_funcs
        .iter()
        .filter_map(|(func_ref, ext)| {
            let callee = module.lookup_external(&ext.name, func)?;
            let callee = module.resolve_symbol(callee)?;
            wanted(callee).then_some((func_ref, callee))
        })
        .collect()
}

/// What the exact merge already knows of the module it leaves: the shape hash of every function
/// it hashed (a merge changes callees, never shapes), and its references when it changed nothing.
pub struct Prior {
    /// Shape hashes by id (functions the exact merge made, such as private copies, have none).
    /// The similar merge hashes shapes without constants and does not read these.
    pub shapes: SecondaryMap<FunctionId, Option<u64>>,
    /// The module's references, when the exact merge left the module as it was.
    pub refs: Option<ModuleRefs>,
}

/// The module's references (from `prior` where it holds them) and the shape of every function
/// with a body, without its constants ([`FingerprintWriter::shape_hash_without_constants`]: the
/// similar fingerprint writes constants where they are used).
fn refs_and_shapes(
    module: &ClifModule,
    prior: Option<Prior>,
) -> (ModuleRefs, SecondaryMap<FunctionId, Option<u64>>) {
    let refs = match prior {
        Some(Prior {
            refs: Some(refs), ..
        }) => refs,
        _ => ModuleRefs::of(module),
    };
    let computed = parallel::map(module.ids(), FingerprintWriter::new, |w, _, &id| {
        let func = &module.function(id).func;
        func.layout
            .entry_block()
            .map(|_| w.shape_hash_without_constants(func))
    });
    let mut shapes = SecondaryMap::with_capacity(module.id_count());
    for (&id, shape) in module.ids().iter().zip(computed) {
        shapes[id] = shape;
    }
    (refs, shapes)
}

/// The layout, name and self-calls of a chosen group; None when its shared body cannot be
/// written.
fn plan_group(module: &ClifModule, members: Vec<Member>) -> Option<Planned> {
    let first = &module.function(members[0].id).func;
    let layout = ParamLayout::of(&members.iter().collect::<Vec<_>>(), first);
    let callee_signatures = callee_signatures(first, &members[0], &layout);
    let name = content_name(&members[0], &layout);
    let self_calls = shared::check(module, &members[0], &layout).ok()?;
    Some(Planned {
        members,
        layout,
        callee_signatures,
        name,
        self_calls,
        shape: GroupShape::default(),
        predicted: 0,
        measured: None,
        record: None,
    })
}

/// For each parameter that is a callee, the signature it is called with and whether every call
/// of it is declared `colocated`.
fn callee_signatures(
    first: &Function,
    member: &Member,
    layout: &ParamLayout,
) -> Vec<Option<(Signature, bool)>> {
    let mut signatures: Vec<Option<(Signature, bool)>> = vec![None; layout.count()];
    for (p, param) in layout.param_of_position.iter().enumerate() {
        let Some(param) = param else { continue };
        let callee = matches!(
            member.fingerprint.holes[p],
            Hole::Callee(_) | Hole::SelfCall
        );
        if let (true, InstructionData::Call { func_ref, .. }) =
            (callee, first.dfg.insts[member.fingerprint.hole_sites[p]])
        {
            let ext = &first.dfg.ext_funcs[func_ref];
            let sig = first.dfg.signatures[ext.signature].clone();
            let slot = &mut signatures[*param as usize];
            let colocated = ext.colocated && slot.as_ref().is_none_or(|(_, c)| *c);
            *slot = Some((sig, colocated));
        }
    }
    signatures
}

/// The shared body's name: `%similar_` and a 128-bit FNV-1a hash of the group's content — the
/// fingerprint with holes, which position reads which parameter, the parameters' types and the
/// values of the positions that stay constants. It names a local function of the unit, which
/// only the unit's own functions could collide with, so FNV-1a will do (`compare::stable_hash`).
fn content_name(first: &Member, layout: &ParamLayout) -> FuncName {
    let hash = content_hash(first, layout, StableHash::new());
    FuncName::Testcase(format!("similar_{hash:032x}").into())
}

/// The 128-bit hash `h` (FNV-1a or, for names shared among units, BLAKE3) of a shared body's
/// content (see [`content_name`]).
pub(super) fn content_hash(first: &Member, layout: &ParamLayout, mut h: impl NameHasher) -> u128 {
    h.u64(crate::compare::ENCODING_VERSION as u64);
    h.u64(first.fingerprint.tokens.len() as u64);
    for &t in &first.fingerprint.tokens {
        h.bytes(&t.to_le_bytes());
    }
    for (p, param) in layout.param_of_position.iter().enumerate() {
        match param {
            Some(param) => h.u64(u64::from(*param) + 1),
            None => {
                h.u64(0);
                hash_hole(&mut h, &first.fingerprint.holes[p]);
            }
        }
    }
    for ty in &layout.types {
        h.bytes(ty.to_string().as_bytes());
    }
    h.finish()
}

fn hash_hole(h: &mut impl NameHasher, hole: &Hole) {
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
        Hole::Name(name) | Hole::Callee(name) => {
            h.u64(if matches!(hole, Hole::Name(_)) { 4 } else { 5 });
            let text = name.to_string();
            h.u64(text.len() as u64);
            h.bytes(text.as_bytes());
        }
        Hole::SelfCall => h.u64(6),
    }
}

/// The values member `m` passes, in parameter order; for a call of itself, its own address. A
/// callee's address is taken `colocated` when it is a module function (as the shared body's
/// calls of it were meant to be), or when every call of the import it names was declared so.
fn arguments(module: &ClifModule, p: &Planned, m: usize) -> Vec<ExtraArgument> {
    let own_name = &module.function(p.members[m].id).name;
    p.layout.values[m]
        .iter()
        .map(|value| match value {
            Hole::SelfCall => Hole::Callee(own_name.clone()),
            value => value.clone(),
        })
        .zip(&p.layout.types)
        .zip(&p.callee_signatures)
        .map(|((value, &ty), callee)| ExtraArgument {
            ty,
            colocated: match (&value, callee) {
                (Hole::Callee(name), Some((_, colocated))) => {
                    *colocated || module.resolve(name).is_some()
                }
                // A symbol's address as the members' `symbol` global values take it: through
                // the GOT, whatever they declared (the hole's key ignores it).
                (Hole::Name(_), _) => false,
                _ => true,
            },
            value,
            signature: callee.as_ref().map(|(sig, _)| sig.clone()),
        })
        .collect()
}

/// Rewrites `module`: shared bodies in, members out or thunks, callers of removed members.
fn apply(
    module: &mut ClifModule,
    removal: Removal<'_>,
    accepted: Vec<Planned>,
) -> Vec<SimilarGroup> {
    let mut position: SecondaryMap<FunctionId, u32> =
        SecondaryMap::with_capacity(module.id_count());
    for (i, &id) in module.ids().iter().enumerate() {
        position[id] = i as u32;
    }
    let mut report = Vec::with_capacity(accepted.len());
    let mut gone = EntitySet::with_capacity(module.id_count());
    // Removed member → (shared name, shared signature, its arguments).
    let mut redirect: FxHashMap<FunctionId, (FuncName, Signature, Vec<ExtraArgument>)> =
        FxHashMap::default();
    let mut inserts = Vec::with_capacity(accepted.len());
    for p in &accepted {
        // The first member's body is taken to make the shared body (the member becomes a thunk
        // like the others); each member that stays becomes a thunk in its own function's memory.
        let first = &mut *module.function_mut(p.members[0].id).func;
        let body = std::mem::replace(
            first,
            Function::with_name_signature(first.name.clone(), first.signature.clone()),
        );
        let mut body = shared::shared_body(body, &p.members[0], &p.self_calls, &p.layout, &p.name);
        if let Some(record) = &p.record {
            record.load_in(&mut body, p.layout.count());
        }
        let shared_sig = body.signature.clone();
        let before = p
            .members
            .iter()
            .map(|m| m.id)
            .min_by_key(|&id| position[id]);
        let mut members = Vec::with_capacity(p.members.len());
        for (m, member) in p.members.iter().enumerate() {
            let args = member_arguments(module, p, p.record.as_ref(), m);
            let by = if removal.removable(module, member.id) {
                gone.insert(member.id);
                redirect.insert(
                    member.id,
                    (p.name.clone(), shared_sig.clone(), args.clone()),
                );
                Action::Removed
            } else {
                let mf = module.function_mut(member.id);
                rewrite_as_member_thunk(&mut mf.func, &mf.name, &p.name, &shared_sig, &args);
                Action::Thunk
            };
            members.push(SimilarMember {
                name: module.function(member.id).name.clone(),
                by,
                arguments: args,
            });
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let records = (p.record.iter())
            .flat_map(|record| {
                (0..p.members.len()).map(|m| record.record(&p.layout, m, record_name(&p.name, m)))
            })
            .collect();
        report.push(SimilarGroup {
            shared: p.name.clone(),
            parameters: (p.record.as_ref()).map_or(p.layout.count(), |r| r.parameters(&p.layout)),
            records,
            members,
            shape: p.shape,
            predicted_saving: p.predicted,
            measured_saving: p.measured,
        });
        let shared = ModuleFunction {
            name: p.name.clone(),
            func: Box::new(body),
            linkage: SymbolLinkage::Local,
            origin: None,
        };
        inserts.push((before.expect("a group has members"), shared));
    }
    if !redirect.is_empty() {
        redirect_callers(module, &mut inserts, &redirect);
    }
    module.update(gone, inserts, Vec::new());
    report.sort_by(|a, b| a.shared.cmp(&b.shared));
    report
}

/// Replaces `func`, the body of `g`, by [`member_thunk`]'s, reusing its memory when it is not
/// large (as the exact merge does).
pub(super) fn rewrite_as_member_thunk(
    func: &mut Function,
    g: &FuncName,
    shared: &FuncName,
    shared_sig: &Signature,
    extra: &[ExtraArgument],
) {
    if func.dfg.num_insts() > REUSE_MAX_INSTS {
        *func = member_thunk(g, &func.signature, shared, shared_sig, extra);
        return;
    }
    rewrite_as_thunk(func, g, shared);
    let callee = func
        .dfg
        .ext_funcs
        .keys()
        .next()
        .expect("a thunk declares its callee");
    redirect_declaration(func, callee, shared, shared_sig.clone(), extra)
        .expect("a thunk's call takes the member's arguments then the extra ones");
}

/// A thunk named `g` with signature `sig` that calls `shared` with its arguments and `extra`.
pub(super) fn member_thunk(
    g: &FuncName,
    sig: &Signature,
    shared: &FuncName,
    shared_sig: &Signature,
    extra: &[ExtraArgument],
) -> Function {
    let mut func = write_thunk(g, sig, shared);
    let callee = func
        .dfg
        .ext_funcs
        .keys()
        .next()
        .expect("a thunk declares its callee");
    redirect_declaration(&mut func, callee, shared, shared_sig.clone(), extra)
        .expect("a thunk's call takes the member's arguments then the extra ones");
    func
}

/// Makes every direct call to a removed member, in every function and new shared body, a call
/// of its shared body with the member's values.
fn redirect_callers(
    module: &mut ClifModule,
    inserts: &mut [(FunctionId, ModuleFunction)],
    redirect: &FxHashMap<FunctionId, (FuncName, Signature, Vec<ExtraArgument>)>,
) {
    // The declarations that name a removed member (its address is not taken, so every use is
    // a call that can take arguments).
    let removed = |id: FunctionId| redirect.contains_key(&id);
    let declarations_in =
        |module: &ClifModule, func: &Function| declarations_naming(module, func, &removed);
    let ids: Vec<FunctionId> = (0..module.id_count()).map(FunctionId::new).collect();
    let found: Vec<Vec<(FuncRef, FunctionId)>> = parallel::map(
        &ids,
        || (),
        |_, _, &id| declarations_in(module, &module.function(id).func),
    );
    let in_inserts: Vec<Vec<(FuncRef, FunctionId)>> = inserts
        .iter()
        .map(|(_, mf)| declarations_in(module, &mf.func))
        .collect();
    let rewrite = |func: &mut Function, declarations: &[(FuncRef, FunctionId)]| {
        for &(func_ref, callee) in declarations {
            let (shared, sig, args) = &redirect[&callee];
            redirect_declaration(func, func_ref, shared, sig.clone(), args)
                .expect("a removed member is only called, with its own arguments");
        }
    };
    parallel::for_each_mut(module.all_functions_mut(), |i, mf| {
        rewrite(&mut mf.func, &found[i]);
    });
    for ((_, mf), calls) in inserts.iter_mut().zip(&in_inserts) {
        rewrite(&mut mf.func, calls);
    }
}
