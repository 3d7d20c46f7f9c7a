//! Choosing what to merge: the members that must keep a symbol, and the subgroups of a group
//! that pay (see `cost.rs`).

use super::SimilarOptions;
use super::cost::{GroupShape, InstructionMix};
use super::find::Member;
use super::params::{ParamLayout, position_types};
use crate::compare::Hole;
use crate::module::{ClifModule, FunctionId};
use crate::policy::{Mode, can_remove};
use crate::refs::ModuleRefs;
use cranelift_codegen::ir::{FuncRef, Function, InstructionData, Signature, Type};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};
use rustc_hash::FxHashMap;

/// How many of the free members a subgroup looks at for its next member: members are in
/// hole-value order, so the nearest share the most values; the window keeps splitting a large
/// group linear in its size.
const WINDOW: usize = 64;

/// How many members a subgroup may grow past the size that saved most before it stops: a pair
/// may not pay where ten do, but a subgroup that has not improved for this many members is not
/// going to (without a bound, a group where every member fits and none pays would grow every
/// seed through the whole group).
const PATIENCE: usize = 16;

/// What a choice needs to know of the module.
pub(super) struct Choice<'a> {
    pub(super) module: &'a ClifModule,
    pub(super) options: &'a SimilarOptions,
    pub(super) removal: Removal<'a>,
    pub(super) uses: &'a CallUses,
}

impl Choice<'_> {
    /// The subgroups of `members` to merge. One pass ([`Choice::split_once`]) takes the whole
    /// group when it fits and pays, or else grows subgroups from seeds; passes repeat on the
    /// members left until one takes nothing. So the choice is complete: the members it leaves,
    /// met again as a group (a second run on the output sees exactly them), would be left again.
    pub(super) fn subgroups(&self, members: Vec<Member>) -> Vec<Vec<Member>> {
        let group = GroupFacts::of(self, &members);
        let mut left: Vec<usize> = (0..members.len())
            .filter(|&m| self.may_save(&group, m))
            .collect();
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        while left.len() >= 2 {
            let found = self.split_once(&group, &left);
            if found.is_empty() {
                break;
            }
            let mut taken = vec![false; members.len()];
            for &i in found.iter().flatten() {
                taken[i] = true;
            }
            left.retain(|&i| !taken[i]);
            chosen.extend(found);
        }
        let chosen = join_equal_layouts(&group, chosen);
        // Hand the members over, each to its subgroup.
        let mut slots: Vec<Option<Member>> = members.into_iter().map(Some).collect();
        chosen
            .into_iter()
            .map(|subgroup| {
                subgroup
                    .into_iter()
                    .map(|i| slots[i].take().expect("a member is in one subgroup"))
                    .collect()
            })
            .collect()
    }

    /// One pass over `left` (indices of members, in member order): all of them when they fit
    /// and pay; otherwise, from the first member not yet taken (the seed), a subgroup grown one
    /// member at a time by the member that saves most ([`Choice::next_member`]; it may save less
    /// than the subgroup before it: a pair may not pay where ten do), cut back to the size that
    /// saved most, kept when that pays; then the next seed.
    fn split_once(&self, group: &GroupFacts, left: &[usize]) -> Vec<Vec<usize>> {
        let mut trial = Trial::default();
        let whole = Subgroup::of(group, left, &mut trial);
        if self.pays(group, &whole) {
            // The whole group, unless a first part and the rest save more apart; the rest
            // goes to the next pass.
            let savings = self.prefix_savings(group, left, &mut trial);
            let kept = self.best_cut(group, left, &savings, &mut trial);
            return vec![left[..kept].to_vec()];
        }
        let mut free = FreeList::new(left.len());
        let mut chosen = Vec::new();
        while let Some(seed) = free.first() {
            free.take(seed);
            free.keep_taken();
            let mut subgroup = Subgroup::new(group, left[seed]);
            let mut grown = vec![seed];
            // The saving of `grown[..len]` at `len - 2` (a subgroup has two members or more).
            let mut savings: Vec<Option<i64>> = Vec::new();
            let (mut best_saving, mut best_len) = (None, 1);
            while grown.len() < best_len + PATIENCE {
                let Some((next, saving)) =
                    self.next_member(group, &subgroup, left, &mut free, &mut trial)
                else {
                    break;
                };
                free.take(next);
                grown.push(next);
                subgroup.add(group, left[next], &mut trial);
                savings.push(Some(saving));
                if best_saving.is_none_or(|best| saving > best) {
                    (best_saving, best_len) = (Some(saving), grown.len());
                }
            }
            // Everything this seed took (members, and those that did not fit it) is free again;
            // then the members of a subgroup that pays are taken for good.
            free.put_back_all();
            if best_saving.is_some_and(|s| s >= self.options.min_saving) {
                let members: Vec<usize> = grown[..best_len].iter().map(|&i| left[i]).collect();
                let best_len = self.best_cut(group, &members, &savings, &mut trial);
                for &i in &grown[1..best_len] {
                    free.take(i);
                }
                free.keep_taken();
                chosen.push(grown[..best_len].iter().map(|&i| left[i]).collect());
            }
        }
        chosen
    }

    /// The saving of each subgroup `members[..len]`, at `len - 2`, None where it does not fit.
    fn prefix_savings(
        &self,
        group: &GroupFacts,
        members: &[usize],
        trial: &mut Trial,
    ) -> Vec<Option<i64>> {
        let mut subgroup = Subgroup::new(group, members[0]);
        let mut savings = Vec::with_capacity(members.len().saturating_sub(1));
        for &m in &members[1..] {
            subgroup.add(group, m, trial);
            let types = subgroup.parameter_types(group);
            savings.push(self.saving(group, subgroup.counts, &types));
        }
        savings
    }

    /// How many of `members` (in the order they agree: value order, or the order a subgroup
    /// grew in) to keep as one subgroup, whose prefixes save `prefix_savings`: all of them,
    /// unless a first part and the rest, each merged apart, save more than all together —
    /// members that agree most go together. A group of two clusters far apart needs the
    /// parameters of both where each alone needs few: one group with five parameters may save
    /// less than two pairs with one each, though it saves one body more. The rest, when cut
    /// off, is left for a later seed or pass. Cuts repeat on what is kept while one saves more
    /// (each costs one pass over the members kept: the first part's savings are known, the
    /// rest's are summed up from the end).
    fn best_cut(
        &self,
        group: &GroupFacts,
        members: &[usize],
        prefix_savings: &[Option<i64>],
        trial: &mut Trial,
    ) -> usize {
        let value = |saving: Option<i64>| {
            saving
                .filter(|&s| s >= self.options.min_saving)
                .unwrap_or(0)
        };
        let mut kept = members.len();
        while kept >= 4 {
            let whole = value(prefix_savings[kept - 2]);
            // rest[len - 2]: the saving of the last `len` members kept.
            let mut rest = Vec::with_capacity(kept - 1);
            let mut subgroup = Subgroup::new(group, members[kept - 1]);
            for &m in members[1..kept - 1].iter().rev() {
                subgroup.add(group, m, trial);
                let types = subgroup.parameter_types(group);
                rest.push(self.saving(group, subgroup.counts, &types));
            }
            // A cut at `at` keeps `members[..at]` and leaves the rest: both of two or more.
            let best = (2..=kept - 2)
                .map(|at| {
                    (
                        value(prefix_savings[at - 2]) + value(rest[kept - at - 2]),
                        at,
                    )
                })
                .max_by_key(|&(total, at)| (total, at));
            match best {
                Some((total, at)) if total > whole => kept = at,
                _ => break,
            }
        }
        kept
    }

    /// The member to add to `subgroup` next, with the saving of the subgroup it makes: among
    /// the next [`WINDOW`] free members, the one that saves most. A member whose parameters do
    /// not fit is taken out of `free` until the seed is done: members only ever add parameters,
    /// so it would not fit later either, and the window moves past it.
    fn next_member(
        &self,
        group: &GroupFacts,
        subgroup: &Subgroup,
        left: &[usize],
        free: &mut FreeList,
        trial: &mut Trial,
    ) -> Option<(usize, i64)> {
        let mut best: Option<(usize, i64)> = None;
        let mut slot = free.first();
        for _ in 0..WINDOW {
            let Some(at) = slot else { break };
            slot = free.after(at);
            let fits = subgroup.refine(group, left[at], Some(self.options.max_parameters), trial);
            let counts = subgroup.counts.with(group, left[at]);
            match fits
                .then(|| self.saving(group, counts, &trial.types))
                .flatten()
            {
                None => free.take(at),
                Some(saving) => {
                    if best.is_none_or(|b| saving > b.1) {
                        best = Some((at, saving));
                    }
                }
            }
        }
        best
    }

    /// What the model counts of the chosen subgroup `members`, laid out as `layout`.
    pub(super) fn shape(&self, members: &[Member], layout: &ParamLayout) -> GroupShape {
        let first = &self.module.function(members[0].id).func;
        let (mut thunks, mut removed_call_sites) = (0, 0);
        for m in members {
            if self.removal.removable(self.module, m.id) {
                removed_call_sites += u64::from(self.uses.calls[m.id]);
            } else {
                thunks += 1;
            }
        }
        GroupShape {
            members: members.len() as u64,
            thunks,
            removed_call_sites,
            instructions: InstructionMix::of(first),
            parameters: layout.count() as u64,
            stack_arguments: (self.options.registers)
                .stack_arguments(&first.signature, &layout.types)
                as u64,
        }
    }

    /// Whether member `m` may be in a subgroup that pays. With a threshold above zero, not when
    /// it costs at least what it saves even with one parameter, passed where the fewest go to the
    /// stack: the model is linear in the members and grows with the parameters, so such a member
    /// never raises a subgroup's saving (and with only one member that saves, a subgroup saves
    /// less than that member's body, which it must write once).
    fn may_save(&self, group: &GroupFacts, m: usize) -> bool {
        if self.options.min_saving <= 0 {
            return true;
        }
        let shape = |counts: Counts| GroupShape {
            members: counts.members,
            thunks: counts.thunks,
            removed_call_sites: counts.removed_call_sites,
            instructions: group.instructions,
            parameters: 1,
            stack_arguments: group.fewest_stack_arguments,
        };
        let alone = Counts::default().with(group, m);
        self.price(&shape(alone)) > self.price(&shape(Counts::default()))
    }

    /// Whether merging `subgroup` fits and saves at least the threshold.
    fn pays(&self, group: &GroupFacts, subgroup: &Subgroup) -> bool {
        let types = subgroup.parameter_types(group);
        self.saving(group, subgroup.counts, &types)
            .is_some_and(|s| s >= self.options.min_saving)
    }

    /// The estimated saving of merging a subgroup of `counts` whose parameters have `types`
    /// (None when there are none, or more than a group may add).
    fn saving(&self, group: &GroupFacts, counts: Counts, types: &[Type]) -> Option<i64> {
        if !self.options.takes_parameters(types.len()) {
            return None;
        }
        let shape = GroupShape {
            members: counts.members,
            thunks: counts.thunks,
            removed_call_sites: counts.removed_call_sites,
            instructions: group.instructions,
            parameters: types.len() as u64,
            stack_arguments: self
                .options
                .registers
                .stack_arguments(&group.signature, types) as u64,
        };
        Some(self.price(&shape))
    }

    /// The model's saving of `shape`. With a judge, the stack arguments that the call sites of
    /// removed members pass are left unpriced: the judge compiles those callers and measures
    /// what they grow (which the model overprices most), and a choice that priced them would
    /// never let it measure a group whose callers pass many. Thunks and shared bodies keep the
    /// model's price, so that the choice still cuts groups where the model says to.
    ///
    /// With records too ([`SimilarOptions::records`]), a group may pass its stack arguments in
    /// a record instead: it is priced as the better of the two, a record costing
    /// [`RECORD_FIELD`] bytes per member for each argument it takes off the stack.
    fn price(&self, shape: &GroupShape) -> i64 {
        let saving = self.options.cost.saving(shape);
        if self.options.judge.is_none() {
            return saving;
        }
        let stack = shape.stack_arguments * self.options.cost.per_stack_argument;
        let with_stack = saving + (shape.removed_call_sites * stack) as i64;
        if !self.options.with_records() || shape.stack_arguments == 0 {
            return with_stack;
        }
        let off_the_stack = ((shape.thunks + 1) * stack) as i64;
        let record = (shape.members * shape.stack_arguments * RECORD_FIELD) as i64;
        with_stack.max(with_stack + off_the_stack - record)
    }
}

/// `chosen` with the subgroups that would write the same shared body (the same parameters at
/// the same positions, the same constants elsewhere: the same content name) made one, in order
/// of their first: their union lays out the same, so it fits, and it saves one body more.
fn join_equal_layouts(group: &GroupFacts, chosen: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mut joined: Vec<Vec<usize>> = Vec::with_capacity(chosen.len());
    // (column classes, which vary, the constants) → its place in `joined`.
    type Layout = (Vec<u32>, Vec<bool>, Vec<u32>);
    let mut index: FxHashMap<Layout, usize> = FxHashMap::default();
    let mut trial = Trial::default();
    for subgroup in chosen {
        let layout = Subgroup::of(group, &subgroup, &mut trial);
        let constants = (layout.class_of.iter())
            .zip(group.values(subgroup[0]))
            .filter(|&(&class, _)| !layout.varying[class as usize])
            .map(|(_, &value)| value)
            .collect();
        let key = (layout.class_of, layout.varying, constants);
        match index.get(&key) {
            Some(&at) => joined[at].extend(subgroup),
            None => {
                index.insert(key, joined.len());
                joined.push(subgroup);
            }
        }
    }
    joined
}

/// What the choice reads of a group, once: each member's hole values as small numbers (equal
/// numbers for equal values), what each member costs once merged, and what all share.
struct GroupFacts {
    /// Member `m`'s value at position `p`, numbered, at `m × positions + p`.
    values: Vec<u32>,
    positions: usize,
    /// Each position's type (as a parameter).
    types: Vec<Type>,
    /// Whether each member keeps a symbol (a thunk) if merged.
    thunk: Vec<bool>,
    /// The direct calls to each member (which a removed member's callers pay for).
    calls: Vec<u64>,
    /// The members' instructions and signature (equal fingerprints: equal in all).
    instructions: InstructionMix,
    signature: Signature,
    /// The fewest stack arguments a subgroup can have: one parameter, of the position type
    /// that finds a register most easily.
    fewest_stack_arguments: u64,
}

impl GroupFacts {
    fn of(choice: &Choice, members: &[Member]) -> GroupFacts {
        let first = &choice.module.function(members[0].id).func;
        let types: Vec<Type> = position_types(first, &members[0].fingerprint);
        let registers = &choice.options.registers;
        let fewest_stack_arguments = (types.iter())
            .map(|&ty| registers.stack_arguments(&first.signature, &[ty]) as u64)
            .min()
            .unwrap_or(0);
        let mut numbers: FxHashMap<&Hole, u32> = FxHashMap::default();
        let values = (members.iter())
            .flat_map(|m| &m.fingerprint.holes)
            .map(|hole| {
                let next = numbers.len() as u32;
                *numbers.entry(hole).or_insert(next)
            })
            .collect();
        let removable = |m: &Member| choice.removal.removable(choice.module, m.id);
        GroupFacts {
            values,
            positions: types.len(),
            types,
            thunk: members.iter().map(|m| !removable(m)).collect(),
            calls: members
                .iter()
                .map(|m| u64::from(choice.uses.calls[m.id]))
                .collect(),
            instructions: InstructionMix::of(first),
            signature: first.signature.clone(),
            fewest_stack_arguments,
        }
    }

    /// Member `m`'s values, numbered.
    fn values(&self, m: usize) -> &[u32] {
        &self.values[m * self.positions..(m + 1) * self.positions]
    }
}

/// A subgroup as [`ParamLayout::of`] would lay it out, kept up to date one member at a time
/// (a layout written from scratch reads every member: growing a subgroup member by member would
/// be quadratic in its size). Positions whose columns and types are equal so far form a
/// *column class*; each class that varies is one parameter.
struct Subgroup {
    /// The first member (the seed), whose values a constant column holds.
    seed: usize,
    /// Each position's column class, numbered in order of first position.
    class_of: Vec<u32>,
    /// Whether each class varies (its column holds more than one value).
    varying: Vec<bool>,
    counts: Counts,
}

/// What the cost model counts of a subgroup's members.
#[derive(Clone, Copy, Default)]
struct Counts {
    members: u64,
    thunks: u64,
    removed_call_sites: u64,
}

impl Counts {
    /// These counts with member `m` added.
    fn with(self, group: &GroupFacts, m: usize) -> Counts {
        let mut counts = self;
        counts.members += 1;
        if group.thunk[m] {
            counts.thunks += 1;
        } else {
            counts.removed_call_sites += group.calls[m];
        }
        counts
    }
}

/// The buffers [`Subgroup::refine`] writes into, reused from one trial to the next.
#[derive(Default)]
struct Trial {
    /// The refined subgroup's classes and which vary.
    class_of: Vec<u32>,
    varying: Vec<bool>,
    /// Its parameters' types, in order of first position.
    types: Vec<Type>,
    /// For each old class: the first value met in it and the new class it went to.
    first_value: Vec<u32>,
    first_class: Vec<u32>,
    /// (old class, value, new class) for the other values met (a class that splits in more
    /// than two is rare).
    others: Vec<(u32, u32, u32)>,
}

/// No value met yet in a class.
const NONE: u32 = u32::MAX;

impl Subgroup {
    /// The subgroup of `seed` alone: positions are classed by type and value.
    fn new(group: &GroupFacts, seed: usize) -> Subgroup {
        let mut classes: FxHashMap<(Type, u32), u32> = FxHashMap::default();
        let class_of: Vec<u32> = (group.values(seed).iter())
            .zip(&group.types)
            .map(|(&value, &ty)| {
                let next = classes.len() as u32;
                *classes.entry((ty, value)).or_insert(next)
            })
            .collect();
        Subgroup {
            seed,
            class_of,
            varying: vec![false; classes.len()],
            counts: Counts::default().with(group, seed),
        }
    }

    /// The subgroup of `members` (at least one), the first its seed.
    fn of(group: &GroupFacts, members: &[usize], trial: &mut Trial) -> Subgroup {
        let mut subgroup = Subgroup::new(group, members[0]);
        for &m in &members[1..] {
            subgroup.add(group, m, trial);
        }
        subgroup
    }

    /// Writes into `trial` this subgroup with member `m` added: each class splits by `m`'s
    /// values, and a new class varies when its class did or `m`'s value is not the seed's.
    /// With a `max_parameters`, stops as soon as the parameters are more (false).
    fn refine(
        &self,
        group: &GroupFacts,
        m: usize,
        max_parameters: Option<usize>,
        trial: &mut Trial,
    ) -> bool {
        let values = group.values(m);
        let seed_values = group.values(self.seed);
        let max_parameters = max_parameters.unwrap_or(usize::MAX);
        trial.class_of.clear();
        trial.varying.clear();
        trial.types.clear();
        trial.others.clear();
        trial.first_value.clear();
        trial.first_value.resize(self.varying.len(), NONE);
        trial.first_class.resize(self.varying.len(), 0);
        for (p, &class) in self.class_of.iter().enumerate() {
            let (c, value) = (class as usize, values[p]);
            let new = if trial.first_value[c] == value {
                trial.first_class[c]
            } else if let Some(&(_, _, new)) = (trial.first_value[c] != NONE)
                .then(|| {
                    trial
                        .others
                        .iter()
                        .find(|&&(o, v, _)| o == class && v == value)
                })
                .flatten()
            {
                new
            } else {
                let new = trial.varying.len() as u32;
                if trial.first_value[c] == NONE {
                    (trial.first_value[c], trial.first_class[c]) = (value, new);
                } else {
                    trial.others.push((class, value, new));
                }
                let varies = self.varying[c] || value != seed_values[p];
                trial.varying.push(varies);
                if varies {
                    trial.types.push(group.types[p]);
                    if trial.types.len() > max_parameters {
                        return false;
                    }
                }
                new
            };
            trial.class_of.push(new);
        }
        true
    }

    /// Adds member `m` ([`Subgroup::refine`], kept).
    fn add(&mut self, group: &GroupFacts, m: usize, trial: &mut Trial) {
        self.refine(group, m, None, trial);
        std::mem::swap(&mut self.class_of, &mut trial.class_of);
        std::mem::swap(&mut self.varying, &mut trial.varying);
        self.counts = self.counts.with(group, m);
    }

    /// The parameters' types, in order of first position.
    fn parameter_types(&self, group: &GroupFacts) -> Vec<Type> {
        let mut seen = vec![false; self.varying.len()];
        let mut types = Vec::new();
        for (p, &class) in self.class_of.iter().enumerate() {
            let class = class as usize;
            if self.varying[class] && !seen[class] {
                seen[class] = true;
                types.push(group.types[p]);
            }
        }
        types
    }
}

/// The members not yet taken by a pass, in order, as a doubly linked list over their slots:
/// the first, the next and taking one cost constant time. What was taken since the last
/// [`FreeList::keep_taken`] can be put back, latest first (the dancing-links rule: each member
/// goes back between the neighbours it had when taken, which are free again by then).
struct FreeList {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// The sentinel slot, before the first and after the last.
    head: usize,
    /// Taken since the last `keep_taken`, in order.
    taken: Vec<usize>,
}

impl FreeList {
    fn new(len: usize) -> FreeList {
        FreeList {
            next: (1..=len).chain([0]).collect(),
            prev: std::iter::once(len).chain(0..len).collect(),
            head: len,
            taken: Vec::new(),
        }
    }

    fn first(&self) -> Option<usize> {
        self.after(self.head)
    }

    /// The free member after `slot` (which may have been taken since it was found).
    fn after(&self, slot: usize) -> Option<usize> {
        let next = self.next[slot];
        (next != self.head).then_some(next)
    }

    fn take(&mut self, slot: usize) {
        let (prev, next) = (self.prev[slot], self.next[slot]);
        self.next[prev] = next;
        self.prev[next] = prev;
        self.taken.push(slot);
    }

    fn keep_taken(&mut self) {
        self.taken.clear();
    }

    fn put_back_all(&mut self) {
        while let Some(slot) = self.taken.pop() {
            let (prev, next) = (self.prev[slot], self.next[slot]);
            self.next[prev] = slot;
            self.prev[next] = slot;
        }
    }
}

/// The bytes a record field takes, as the choice prices records: a constant of up to 64 bits.
const RECORD_FIELD: u64 = 8;

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
/// in every member of its whole group: a subgroup's parameters are among those; a member's call
/// of itself, where another member calls another function, passes its own address).
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
        for (values, member) in layout.values.iter().zip(&members) {
            for value in values {
                match value {
                    Hole::Name(name) | Hole::Callee(name) => {
                        if let Some(id) = module.resolve(name) {
                            needs.insert(id);
                        }
                    }
                    Hole::SelfCall => {
                        needs.insert(member.id);
                    }
                    _ => {}
                }
            }
        }
    }
    needs
}

/// Which members go, their callers calling the shared body, and which stay as thunks.
#[derive(Clone, Copy)]
pub(super) struct Removal<'a> {
    pub(super) mode: Mode,
    /// The functions that must keep a symbol ([`needs_symbol`]).
    pub(super) needs: &'a EntitySet<FunctionId>,
    /// The first id of the functions the run made (shared bodies of earlier rounds, private
    /// copies): no symbol of the input, so thunks mode need not keep them.
    pub(super) made_from: usize,
}

impl Removal<'_> {
    /// Whether the member `id` may go (`crate::policy::can_remove`).
    pub(super) fn removable(&self, module: &ClifModule, id: FunctionId) -> bool {
        let made_by_run = id.index() >= self.made_from;
        can_remove(
            self.mode,
            module.function(id).linkage,
            self.needs.contains(id),
            made_by_run,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SimilarGroup, SimilarOptions, merge_similar};
    use crate::policy::Mode;
    use crate::read::{ReadOptions, read_module_text};
    use std::path::Path;

    /// `%NAME` with five constants in a chain of arithmetic: the constants are the holes.
    fn five_constants(name: &str, c: [i64; 5]) -> String {
        format!(
            "function %{name}(i64) -> i64 system_v {{
            block0(v0: i64):
                v1 = iconst.i64 {}
                v2 = iadd v0, v1
                v3 = iconst.i64 {}
                v4 = imul v2, v3
                v5 = iconst.i64 {}
                v6 = bxor v4, v5
                v7 = iconst.i64 {}
                v8 = iadd v6, v7
                v9 = iconst.i64 {}
                v10 = imul v8, v9
                return v10
            }}\n",
            c[0], c[1], c[2], c[3], c[4]
        )
    }

    fn merged_by_the_model(text: &str, mode: Mode) -> Vec<SimilarGroup> {
        let mut module =
            read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap();
        merge_similar(&mut module, mode, &SimilarOptions::default())
    }

    fn members(group: &SimilarGroup) -> Vec<String> {
        group.members.iter().map(|m| m.name.to_string()).collect()
    }

    /// The `similar` bench's "nothing pays" shape: `%fI(v0, …, v5) = v0 + cI`, every member
    /// exported (a thunk). The added parameter goes to the stack, and a body of two
    /// instructions saves less than a thunk costs. The function's own parameters arrive in
    /// registers and cost no code: priced as block parameters, they made the body look large
    /// enough to pay from four members on.
    #[test]
    fn one_constant_beside_six_parameters_does_not_pay() {
        let text: String = (0..8)
            .map(|i| {
                format!(
                    "function %f{i}(i64, i64, i64, i64, i64, i64) -> i64 system_v {{
                    block0(v0: i64, v1: i64, v2: i64, v3: i64, v4: i64, v5: i64):
                        v6 = iconst.i64 {}
                        v7 = iadd v0, v6
                        return v7
                    }}\n",
                    1000 + 7 * i
                )
            })
            .collect();
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            let groups = merged_by_the_model(&text, mode);
            let found: Vec<Vec<String>> = groups.iter().map(members).collect();
            assert_eq!(found, Vec::<Vec<String>>::new(), "{mode:?}");
        }
    }

    /// The example: f1/f3 differ in one constant, f2/f4 in one, f1 and f2 in all five.
    /// One group of four needs five parameters and saves less than the two pairs with one each.
    #[test]
    fn members_that_agree_most_go_together() {
        let text = five_constants("f1", [1001, 1002, 1003, 1004, 1005])
            + &five_constants("f2", [2001, 2002, 2003, 2004, 2005])
            + &five_constants("f3", [1001, 1002, 1003, 1004, 3005])
            + &five_constants("f4", [2001, 2002, 2003, 2004, 4005]);
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            let groups = merged_by_the_model(&text, mode);
            let mut found: Vec<(Vec<String>, usize)> =
                groups.iter().map(|g| (members(g), g.parameters)).collect();
            found.sort();
            let expected = vec![
                (vec!["%f1".to_string(), "%f3".to_string()], 1),
                (vec!["%f2".to_string(), "%f4".to_string()], 1),
            ];
            assert_eq!(found, expected, "{mode:?}");
        }
    }
}
