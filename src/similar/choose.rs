//! Choosing what to merge: the members that must keep a symbol, and the subgroups of a group
//! that pay (see `cost.rs`).

use super::SimilarOptions;
use super::cost::GroupShape;
use super::find::Member;
use super::params::ParamLayout;
use crate::compare::Hole;
use crate::merge::Mode;
use crate::merge::policy::can_remove;
use crate::module::{ClifModule, FunctionId};
use crate::refs::ModuleRefs;
use cranelift_codegen::ir::{FuncRef, Function, InstructionData};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};

/// Groups larger than this are split by the first fit, not by the best saving (which is
/// quadratic in the group's size).
const BEST_FIT_MAX: usize = 32;

/// How many of the remaining members a subgroup looks at for its next member: members are in
/// hole-value order, so the nearest share the most values; the window keeps splitting a large
/// group linear in its size.
const WINDOW: usize = 64;

/// What a choice needs to know of the module.
pub(super) struct Choice<'a> {
    pub(super) module: &'a ClifModule,
    pub(super) mode: Mode,
    pub(super) options: &'a SimilarOptions,
    pub(super) needs: &'a EntitySet<FunctionId>,
    pub(super) uses: &'a CallUses,
}

impl Choice<'_> {
    /// The estimated saving of merging `members` (None when their parameters do not fit the
    /// register budget, or there are none).
    fn saving(&self, members: &[&Member]) -> Option<i64> {
        let first = &self.module.function(members[0].id).func;
        let layout = ParamLayout::of(members, first);
        if layout.count() == 0 || !self.options.registers.fits(&layout.types) {
            return None;
        }
        let mut shape = GroupShape {
            members: members.len() as u64,
            thunks: 0,
            removed_call_sites: 0,
            instructions: instruction_count(first),
            parameters: layout.count() as u64,
            stack_arguments: self
                .options
                .registers
                .stack_arguments(&first.signature, &layout.types)
                as u64,
        };
        for m in members {
            if removable(self.module, self.mode, m.id, self.needs) {
                shape.removed_call_sites += u64::from(self.uses.calls[m.id]);
            } else {
                shape.thunks += 1;
            }
        }
        Some(self.options.cost.saving(&shape))
    }

    /// The subgroups of `members` to merge: the whole group when it fits and pays; otherwise,
    /// from the first member not yet taken, a subgroup grown one member at a time by the member
    /// that saves most (which may save less than the subgroup before it: a pair may not pay
    /// where ten do), cut back to the size that saved most. Members are in hole-value order, so
    /// the choice is a function of the group's content; a subgroup looks for its next member
    /// among the next [`WINDOW`] members not taken, so a large group splits in linear time.
    pub(super) fn subgroups(&self, members: Vec<Member>) -> Vec<Vec<Member>> {
        let all: Vec<&Member> = members.iter().collect();
        if self
            .saving(&all)
            .is_some_and(|s| s >= self.options.min_saving)
        {
            return vec![members];
        }
        let exhaustive = members.len() <= BEST_FIT_MAX;
        let mut taken = vec![false; members.len()];
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        let mut seed = 0;
        loop {
            while seed < members.len() && taken[seed] {
                seed += 1;
            }
            if seed + 1 >= members.len() {
                break;
            }
            taken[seed] = true;
            let mut group = vec![seed];
            let (mut best_saving, mut best_len) = (0, 1);
            while let Some((next, s)) = self.next_member(&members, &group, &taken, exhaustive) {
                taken[next] = true;
                group.push(next);
                if s > best_saving {
                    (best_saving, best_len) = (s, group.len());
                }
            }
            for &i in &group[best_len..] {
                taken[i] = false;
            }
            group.truncate(best_len);
            if group.len() >= 2 && best_saving >= self.options.min_saving {
                chosen.push(group);
            }
        }
        // Hand the members over, each to its subgroup.
        let mut slots: Vec<Option<Member>> = members.into_iter().map(Some).collect();
        chosen
            .into_iter()
            .map(|group| {
                group
                    .into_iter()
                    .map(|i| slots[i].take().expect("a member is in one subgroup"))
                    .collect()
            })
            .collect()
    }

    /// The member to add to `group` next, among the next [`WINDOW`] members not taken after its
    /// seed, with the saving of the group it makes: the one that saves most (`exhaustive`) or
    /// the first that fits.
    fn next_member(
        &self,
        members: &[Member],
        group: &[usize],
        taken: &[bool],
        exhaustive: bool,
    ) -> Option<(usize, i64)> {
        let mut trial: Vec<&Member> = group.iter().map(|&i| &members[i]).collect();
        let mut best: Option<(usize, i64)> = None;
        let free = (group[0] + 1..members.len()).filter(|&i| !taken[i]);
        for i in free.take(WINDOW) {
            trial.push(&members[i]);
            let s = self.saving(&trial);
            trial.pop();
            if let Some(s) = s
                && best.is_none_or(|b| s > b.1)
            {
                best = Some((i, s));
                if !exhaustive {
                    break;
                }
            }
        }
        best
    }
}

/// The direct calls to each function, and the functions some instruction reaches in a way a
/// rewrite cannot add arguments to (`try_call`). Empty where no member can be removed.
#[derive(Default)]
pub(super) struct CallUses {
    calls: SecondaryMap<FunctionId, u32>,
    unrewritable: EntitySet<FunctionId>,
}

/// The calls one function makes: each call instruction's declaration, and whether a rewrite
/// can add arguments to it (`call`, `return_call`: yes; `try_call`: no).
pub(super) fn calls_in(func: &Function) -> Vec<(FuncRef, bool)> {
    let mut found = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            match func.dfg.insts[inst] {
                InstructionData::Call { func_ref, .. } => found.push((func_ref, true)),
                InstructionData::TryCall { func_ref, .. } => found.push((func_ref, false)),
                _ => {}
            }
        }
    }
    found
}

impl CallUses {
    /// The uses of every function, from the [`calls_in`] of each function of the layout, in
    /// order.
    pub(super) fn of(
        module: &ClifModule,
        refs: &ModuleRefs,
        calls: &[Vec<(FuncRef, bool)>],
    ) -> CallUses {
        let mut uses = CallUses {
            calls: SecondaryMap::with_capacity(module.id_count()),
            unrewritable: EntitySet::with_capacity(module.id_count()),
        };
        for (&id, calls) in module.ids().iter().zip(calls) {
            let callees = &refs.of_function(id).callees;
            for &(func_ref, rewritable) in calls {
                let symbol = callees[func_ref.index()];
                let Some(callee) = symbol.and_then(|s| module.resolve_symbol(s)) else {
                    continue;
                };
                uses.calls[callee] += 1;
                if !rewritable {
                    uses.unrewritable.insert(callee);
                }
            }
        }
        uses
    }
}

/// The functions that must keep a symbol if merged: their address is taken, a `try_call` calls
/// them, or a group may pass their address as a parameter value (any name that is not the same
/// in every member of its whole group: a subgroup's parameters are among those).
pub(super) fn needs_symbol(
    module: &ClifModule,
    refs: &ModuleRefs,
    uses: &CallUses,
    groups: &[Vec<Member>],
) -> EntitySet<FunctionId> {
    let mut needs = uses.unrewritable.clone();
    for &id in module.ids() {
        if refs.address_taken(id) {
            needs.insert(id);
        }
    }
    for members in groups {
        let members: Vec<&Member> = members.iter().collect();
        let layout = ParamLayout::of(&members, &module.function(members[0].id).func);
        for value in layout.values.iter().flatten() {
            if let Hole::Name(name) | Hole::Callee(name) = value
                && let Some(id) = module.resolve(name)
            {
                needs.insert(id);
            }
        }
    }
    needs
}

pub(super) fn removable(
    module: &ClifModule,
    mode: Mode,
    id: FunctionId,
    needs: &EntitySet<FunctionId>,
) -> bool {
    can_remove(mode, module.function(id).linkage, needs.contains(id))
}

fn instruction_count(func: &Function) -> u64 {
    func.layout
        .blocks()
        .map(|b| func.layout.block_insts(b).count() as u64)
        .sum()
}
