//! Two ways to make a function from another:
//!
//! - [`renumber`]: the same function with every value, block, stack slot, signature, function
//!   reference, user name, alias region and memory-flags handle renumbered (alias regions also
//!   get other descriptions), and the non-entry blocks laid out in another order. It is rebuilt
//!   entity by entity (with `InstructionData::map`), so nothing of the original's numbering
//!   survives. It must compare `Equal`.
//! - [`mutate_one_field`]: a copy that differs in exactly one field that changes what the
//!   function does (see [`Kind`]). It must never compare `Equal`.

use super::canon::reachable_blocks;
use super::r#gen::{
    ALIAS_REGION_IDS, CALL_CONVS, Choices, FLOAT_BINARY, INT_BINARY, INT_TYPES, INT_UNARY,
    mask_imm, random_imm, random_trap_code, verify,
};
use cranelift_codegen::entity::{EntityList, EntityRef};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64, Imm64, Offset32};
use cranelift_codegen::ir::instructions::InstructionMapper;
use cranelift_codegen::ir::types::{I16, I32, I64};
use cranelift_codegen::ir::{
    self, ArgumentExtension, Block, BlockArg, BlockCall, Endianness, ExtFuncData, ExternalName,
    FuncRef, Function, Inst, InstructionData, JumpTableData, MemFlagsData, Opcode, SigRef,
    StackSlot, StackSlotData, StackSlotKind, TrapCode, Type, Value, ValueList,
};
use std::collections::HashMap;

// ---------------------------------------------------------------------------------------------
// Renumbering.

struct Maps {
    values: HashMap<Value, Value>,
    blocks: HashMap<Block, Block>,
    slots: HashMap<StackSlot, StackSlot>,
    sigs: HashMap<SigRef, SigRef>,
    funcs: HashMap<FuncRef, FuncRef>,
    regions: HashMap<ir::AliasRegion, ir::AliasRegion>,
}

impl Maps {
    fn mem_flags(&self, data: MemFlagsData) -> MemFlagsData {
        data.with_alias_region(data.alias_region().map(|r| self.regions[&r]))
    }
}

struct Mapper<'a> {
    old: &'a Function,
    new: &'a mut Function,
    maps: &'a Maps,
}

impl Mapper<'_> {
    fn value(&self, v: Value) -> Value {
        *self
            .maps
            .values
            .get(&v)
            .unwrap_or_else(|| panic!("renumber: {v} used before it is defined"))
    }
}

impl InstructionMapper for Mapper<'_> {
    fn map_value(&mut self, value: Value) -> Value {
        self.value(value)
    }

    fn map_value_list(&mut self, list: ValueList) -> ValueList {
        let vs: Vec<Value> = list
            .as_slice(&self.old.dfg.value_lists)
            .iter()
            .map(|&v| self.value(v))
            .collect();
        EntityList::from_slice(&vs, &mut self.new.dfg.value_lists)
    }

    fn map_global_value(&mut self, _: ir::GlobalValue) -> ir::GlobalValue {
        unimplemented!("renumber: global values")
    }

    fn map_jump_table(&mut self, table: ir::JumpTable) -> ir::JumpTable {
        let calls: Vec<BlockCall> = self.old.dfg.jump_tables[table]
            .all_branches()
            .iter()
            .map(|&c| self.map_block_call(c))
            .collect();
        self.new
            .create_jump_table(JumpTableData::new(calls[0], &calls[1..]))
    }

    fn map_exception_table(&mut self, _: ir::ExceptionTable) -> ir::ExceptionTable {
        unimplemented!("renumber: exception tables")
    }

    fn map_block_call(&mut self, call: BlockCall) -> BlockCall {
        let pool = &self.old.dfg.value_lists;
        let block = self.maps.blocks[&call.block(pool)];
        let args: Vec<BlockArg> = call
            .args(pool)
            .map(|a| match a {
                BlockArg::Value(v) => BlockArg::Value(self.value(v)),
                other => other,
            })
            .collect();
        self.new.dfg.block_call(block, &args)
    }

    fn map_block(&mut self, block: Block) -> Block {
        self.maps.blocks[&block]
    }

    fn map_func_ref(&mut self, f: FuncRef) -> FuncRef {
        self.maps.funcs[&f]
    }

    fn map_sig_ref(&mut self, s: SigRef) -> SigRef {
        self.maps.sigs[&s]
    }

    fn map_stack_slot(&mut self, s: StackSlot) -> StackSlot {
        self.maps.slots[&s]
    }

    fn map_dynamic_stack_slot(&mut self, _: ir::DynamicStackSlot) -> ir::DynamicStackSlot {
        unimplemented!("renumber: dynamic stack slots")
    }

    fn map_constant(&mut self, _: ir::Constant) -> ir::Constant {
        unimplemented!("renumber: constants")
    }

    fn map_immediate(&mut self, _: ir::Immediate) -> ir::Immediate {
        unimplemented!("renumber: immediates")
    }

    fn map_mem_flags(&mut self, flags: ir::MemFlags) -> ir::MemFlags {
        let data = self.maps.mem_flags(self.old.dfg.mem_flags[flags]);
        self.new.dfg.mem_flags.insert(data).unwrap()
    }
}

/// An equivalent copy of `func`: every entity renumbered, the non-entry blocks laid out in
/// another order (when there are two or more), unreachable blocks kept.
pub fn renumber(func: &Function, ch: &mut Choices) -> Function {
    assert!(func.global_values.is_empty());
    let mut new = Function::with_name_signature(func.name.clone(), func.signature.clone());
    let mut maps = Maps {
        values: HashMap::new(),
        blocks: HashMap::new(),
        slots: HashMap::new(),
        sigs: HashMap::new(),
        funcs: HashMap::new(),
        regions: HashMap::new(),
    };

    // Alias regions, in a shuffled order and with other descriptions (which do not count).
    let regions: Vec<(ir::AliasRegion, u32)> = func
        .dfg
        .alias_regions
        .iter()
        .map(|(r, d)| (r, d.user_id))
        .collect();
    for i in ch.permutation(regions.len()) {
        let (r, user_id) = regions[i];
        let n = new.dfg.alias_regions.insert(ir::AliasRegionData {
            user_id,
            description: format!("renumbered from {r}").into(),
        });
        maps.regions.insert(r, n);
    }

    // Stack slots keep their order: it is the frame's layout, which is behaviour.
    for (slot, data) in func.sized_stack_slots.iter() {
        let s = new.create_sized_stack_slot(data.clone());
        maps.slots.insert(slot, s);
    }
    // Signatures and function references, each in a shuffled order.
    let sigs: Vec<SigRef> = func.dfg.signatures.keys().collect();
    for i in ch.permutation(sigs.len()) {
        let s = new.import_signature(func.dfg.signatures[sigs[i]].clone());
        maps.sigs.insert(sigs[i], s);
    }
    let funcs: Vec<FuncRef> = func.dfg.ext_funcs.keys().collect();
    for i in ch.permutation(funcs.len()) {
        let old = &func.dfg.ext_funcs[funcs[i]];
        let name = match &old.name {
            ExternalName::User(r) => {
                let u = func.params.user_named_funcs()[*r].clone();
                ExternalName::User(new.declare_imported_user_function(u))
            }
            other => other.clone(),
        };
        let f = new.import_function(ExtFuncData {
            name,
            signature: maps.sigs[&old.signature],
            colocated: old.colocated,
            patchable: old.patchable,
        });
        maps.funcs.insert(funcs[i], f);
    }
    // Memory flags: the same set, interned in a shuffled order.
    let mut flag_data = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if let Some(f) = func.dfg.insts[inst].memflags() {
                flag_data.push(func.dfg.mem_flags[f]);
            }
        }
    }
    for i in ch.permutation(flag_data.len()) {
        new.dfg
            .mem_flags
            .insert(maps.mem_flags(flag_data[i]))
            .unwrap();
    }

    // Blocks and their parameters, created in a shuffled order, after a block that is never
    // laid out (so that block and value numbers move even when the shuffle is the identity).
    let dummy = new.dfg.make_block();
    new.dfg.append_block_param(dummy, I32);
    let old_blocks: Vec<Block> = func.layout.blocks().collect();
    for i in ch.permutation(old_blocks.len()) {
        let ob = old_blocks[i];
        let nb = new.dfg.make_block();
        for &p in func.dfg.block_params(ob) {
            let np = new.dfg.append_block_param(nb, func.dfg.value_type(p));
            maps.values.insert(p, np);
        }
        maps.blocks.insert(ob, nb);
        if ch.chance(20) {
            let d = new.dfg.make_block();
            new.dfg.append_block_param(d, I64);
        }
    }

    // The layout: the entry first, then the others in another order.
    let Some((&entry, rest)) = old_blocks.split_first() else {
        return new;
    };
    new.layout.append_block(maps.blocks[&entry]);
    let mut order = ch.permutation(rest.len());
    if rest.len() >= 2 && order.iter().enumerate().all(|(i, &j)| i == j) {
        order.rotate_left(1);
    }
    for &i in &order {
        new.layout.append_block(maps.blocks[&rest[i]]);
    }
    for &ob in &old_blocks {
        if func.layout.is_cold(ob) {
            new.layout.set_cold(maps.blocks[&ob]);
        }
    }

    // Instructions, block by block in an order where definitions come before uses: reachable
    // blocks breadth-first, then the unreachable ones (which use only their own values).
    let mut fill: Vec<Block> = reachable_blocks(func);
    for &b in &old_blocks {
        if !fill.contains(&b) {
            fill.push(b);
        }
    }
    for ob in fill {
        let nb = maps.blocks[&ob];
        for oi in func.layout.block_insts(ob) {
            let data = func.dfg.insts[oi].map(Mapper {
                old: func,
                new: &mut new,
                maps: &maps,
            });
            let ni = new.dfg.make_inst(data);
            new.dfg.make_inst_results(ni, func.dfg.ctrl_typevar(oi));
            new.layout.append_inst(ni, nb);
            let old_results = func.dfg.inst_results(oi);
            let new_results = new.dfg.inst_results(ni);
            assert_eq!(old_results.len(), new_results.len());
            for (&o, &n) in old_results.iter().zip(new_results) {
                assert_eq!(func.dfg.value_type(o), new.dfg.value_type(n));
                maps.values.insert(o, n);
            }
            if ch.chance(15) {
                // A value that is never used anywhere, to shift the numbers again.
                let d = new.dfg.make_block();
                new.dfg.append_block_param(d, I16);
            }
        }
    }
    new
}

// ---------------------------------------------------------------------------------------------
// Single-field mutations.

/// The kinds of single-field mutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The immediate of an `iconst`.
    IntImmediate,
    /// One bit of an `f32const`/`f64const`.
    FloatImmediate,
    /// The offset of a load, store or `stack_addr`.
    Offset,
    /// The condition code of an `icmp`.
    IntCond,
    /// The condition code of an `fcmp`.
    FloatCond,
    /// An opcode swapped for another of the same format and types (`iadd` -> `isub`, ...).
    Opcode,
    /// The integer width of a result whose only uses are as stored values (or none).
    TypeWidth,
    /// One flag of a load's or store's `MemFlags` (aligned, readonly, can_move, endianness,
    /// notrap).
    MemFlag,
    /// A trap code (`trap`, `trapz`, `trapnz`, or a memory access's).
    TrapCode,
    /// The calling convention of the function's signature or of a callee's.
    CallConv,
    /// The extension (`uext`/`sext`/none) of a parameter or return.
    Extension,
    /// The operands of a non-commutative instruction swapped (or `brif`'s targets).
    SwapOperands,
    /// One value operand replaced by another value of the same type.
    Operand,
    /// A branch target changed to another block with the same parameter types.
    BranchTarget,
    /// The size of a stack slot.
    StackSlotSize,
    /// The alignment of a stack slot.
    StackSlotAlign,
    /// Two adjacent stack slot declarations swapped, each use following its slot: the frame's
    /// layout changes, so do the slots' addresses.
    StackSlotOrder,
    /// One more stack slot, never used: the frame grows.
    UnusedStackSlot,
    /// The `colocated` flag of a called function.
    Colocated,
    /// The name of a called function.
    CalleeName,
}

pub const ALL_KINDS: [Kind; 20] = [
    Kind::IntImmediate,
    Kind::FloatImmediate,
    Kind::Offset,
    Kind::IntCond,
    Kind::FloatCond,
    Kind::Opcode,
    Kind::TypeWidth,
    Kind::MemFlag,
    Kind::TrapCode,
    Kind::CallConv,
    Kind::Extension,
    Kind::SwapOperands,
    Kind::Operand,
    Kind::BranchTarget,
    Kind::StackSlotSize,
    Kind::StackSlotAlign,
    Kind::StackSlotOrder,
    Kind::UnusedStackSlot,
    Kind::Colocated,
    Kind::CalleeName,
];

/// The instructions of the reachable blocks.
pub fn reachable_insts(func: &Function) -> Vec<Inst> {
    reachable_blocks(func)
        .into_iter()
        .flat_map(|b| func.layout.block_insts(b).collect::<Vec<_>>())
        .collect()
}

/// Opcodes that may replace one another (same format, same operand and result types).
const OPCODE_GROUPS: &[&[Opcode]] = &[
    &INT_BINARY,
    &FLOAT_BINARY,
    &INT_UNARY,
    &[Opcode::Uextend, Opcode::Sextend],
    &[Opcode::FcvtFromSint, Opcode::FcvtFromUint],
    &[Opcode::FcvtToSintSat, Opcode::FcvtToUintSat],
    &[Opcode::Trapz, Opcode::Trapnz],
    &[Opcode::Uload8, Opcode::Sload8],
    &[Opcode::Uload16, Opcode::Sload16],
    &[Opcode::Uload32, Opcode::Sload32],
    &[Opcode::Udiv, Opcode::Urem],
    &[Opcode::Istore8, Opcode::Istore16, Opcode::Istore32],
];

fn opcode_mut(data: &mut InstructionData) -> Option<&mut Opcode> {
    match data {
        InstructionData::Binary { opcode, .. }
        | InstructionData::Unary { opcode, .. }
        | InstructionData::CondTrap { opcode, .. }
        | InstructionData::Load { opcode, .. }
        | InstructionData::Store { opcode, .. } => Some(opcode),
        _ => None,
    }
}

/// Where a signature lives.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SigSite {
    Own,
    Ref(SigRef),
}

fn signature_mut(func: &mut Function, site: SigSite) -> &mut ir::Signature {
    match site {
        SigSite::Own => &mut func.signature,
        SigSite::Ref(s) => &mut func.dfg.signatures[s],
    }
}

/// The function's own signature and every signature a reachable instruction uses.
fn used_signatures(func: &Function) -> Vec<SigSite> {
    let mut sites = vec![SigSite::Own];
    for inst in reachable_insts(func) {
        let s = match func.dfg.insts[inst] {
            InstructionData::Call { func_ref, .. } | InstructionData::FuncAddr { func_ref, .. } => {
                Some(func.dfg.ext_funcs[func_ref].signature)
            }
            InstructionData::CallIndirect { sig_ref, .. } => Some(sig_ref),
            _ => None,
        };
        if let Some(s) = s
            && !sites.contains(&SigSite::Ref(s))
        {
            sites.push(SigSite::Ref(s));
        }
    }
    sites
}

/// The function references reachable instructions use.
fn used_func_refs(func: &Function) -> Vec<FuncRef> {
    let mut refs = Vec::new();
    for inst in reachable_insts(func) {
        if let InstructionData::Call { func_ref, .. } | InstructionData::FuncAddr { func_ref, .. } =
            func.dfg.insts[inst]
            && !refs.contains(&func_ref)
        {
            refs.push(func_ref);
        }
    }
    refs
}

/// Slots `s` such that `s` or the slot declared after it is used: swapping the two declarations
/// then moves a used slot in the frame.
fn slot_swap_sites(func: &Function) -> Vec<StackSlot> {
    let used = used_stack_slots(func);
    let count = func.sized_stack_slots.len();
    (0..count.saturating_sub(1))
        .map(StackSlot::new)
        .filter(|s| used.contains(s) || used.contains(&StackSlot::new(s.index() + 1)))
        .collect()
}

/// Swaps the declarations of slots `a` and `b`; every use keeps naming the slot it named.
fn swap_stack_slots(func: &mut Function, a: StackSlot, b: StackSlot) {
    let data_a = func.sized_stack_slots[a].clone();
    func.sized_stack_slots[a] = func.sized_stack_slots[b].clone();
    func.sized_stack_slots[b] = data_a;
    let insts: Vec<Inst> = func
        .layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b))
        .collect();
    for inst in insts {
        if let ir::InstructionData::StackAddr { stack_slot, .. } = &mut func.dfg.insts[inst] {
            *stack_slot = match *stack_slot {
                s if s == a => b,
                s if s == b => a,
                s => s,
            };
        }
    }
}

fn used_stack_slots(func: &Function) -> Vec<StackSlot> {
    let mut slots = Vec::new();
    for inst in reachable_insts(func) {
        if let Some(s) = func.dfg.insts[inst].stack_slot()
            && !slots.contains(&s)
        {
            slots.push(s);
        }
    }
    slots
}

fn other<T: Copy + PartialEq>(ch: &mut Choices, items: &[T], not: T) -> Option<T> {
    let rest: Vec<T> = items.iter().copied().filter(|&x| x != not).collect();
    if rest.is_empty() {
        None
    } else {
        Some(rest[ch.below(rest.len())])
    }
}

/// The parts of a `MemFlagsData`, to rebuild it with one of them changed.
#[derive(Clone, Copy, PartialEq)]
struct FlagParts {
    aligned: bool,
    readonly: bool,
    can_move: bool,
    endianness: Option<Endianness>,
    trap: Option<TrapCode>,
    region: Option<ir::AliasRegion>,
}

impl FlagParts {
    fn of(d: MemFlagsData) -> Self {
        FlagParts {
            aligned: d.aligned(),
            readonly: d.readonly(),
            can_move: d.can_move(),
            endianness: d.explicit_endianness(),
            trap: d.trap_code(),
            region: d.alias_region(),
        }
    }

    fn build(self) -> MemFlagsData {
        let mut d = MemFlagsData::new().with_trap_code(self.trap);
        if self.aligned {
            d.set_aligned();
        }
        if self.readonly {
            d.set_readonly();
        }
        if self.can_move {
            d.set_can_move();
        }
        if let Some(e) = self.endianness {
            d.set_endianness(e);
        }
        d.with_alias_region(self.region)
    }
}

/// The value that `inst` defines or uses at position `k` may be replaced by these values:
/// same type, defined earlier in the same block, or in the entry block.
fn replacement_candidates(func: &Function, inst: Inst, ty: Type) -> Vec<Value> {
    let block = func.layout.inst_block(inst).unwrap();
    let entry = func.layout.entry_block().unwrap();
    let mut vals: Vec<Value> = func.dfg.block_params(block).to_vec();
    for i in func.layout.block_insts(block) {
        if i == inst {
            break;
        }
        vals.extend_from_slice(func.dfg.inst_results(i));
    }
    if block != entry {
        vals.extend_from_slice(func.dfg.block_params(entry));
        for i in func.layout.block_insts(entry) {
            vals.extend_from_slice(func.dfg.inst_results(i));
        }
    }
    vals.retain(|&v| func.dfg.value_type(v) == ty);
    vals
}

/// A copy of `func` differing in exactly one field of the given kind, or `None` when `func` has
/// no such field in a reachable block (or the mutations tried did not verify).
pub fn mutate_one_field(func: &Function, kind: Kind, ch: &mut Choices) -> Option<Function> {
    let sites = site_count(func, kind);
    if sites == 0 {
        return None;
    }
    // Up to four attempts at random sites.
    for _ in 0..4 {
        let site = ch.below(sites);
        let mut m = func.clone();
        if apply(&mut m, kind, site, ch) && verify(&m).is_ok() {
            return Some(m);
        }
    }
    None
}

fn site_count(func: &Function, kind: Kind) -> usize {
    match kind {
        Kind::CallConv => used_signatures(func).len(),
        Kind::Extension => extension_sites(func).len(),
        Kind::StackSlotSize | Kind::StackSlotAlign => used_stack_slots(func).len(),
        Kind::StackSlotOrder => slot_swap_sites(func).len(),
        Kind::UnusedStackSlot => 1,
        Kind::Colocated | Kind::CalleeName => used_func_refs(func).len(),
        Kind::Operand => operand_sites(func).len(),
        Kind::BranchTarget => branch_sites(func).len(),
        _ => reachable_insts(func)
            .into_iter()
            .filter(|&i| inst_site(func, kind, i))
            .count(),
    }
}

/// Whether instruction `i` is a site for an instruction-level kind.
fn inst_site(func: &Function, kind: Kind, i: Inst) -> bool {
    let data = func.dfg.insts[i];
    let op = data.opcode();
    match kind {
        Kind::IntImmediate => op == Opcode::Iconst,
        Kind::FloatImmediate => matches!(op, Opcode::F32const | Opcode::F64const),
        Kind::Offset => matches!(
            data,
            InstructionData::Load { .. }
                | InstructionData::Store { .. }
                | InstructionData::StackAddr { .. }
        ),
        Kind::IntCond => op == Opcode::Icmp,
        Kind::FloatCond => op == Opcode::Fcmp,
        Kind::Opcode => OPCODE_GROUPS.iter().any(|g| g.contains(&op)),
        Kind::TypeWidth => width_choices(func, i).is_some(),
        Kind::MemFlag => matches!(
            data,
            InstructionData::Load { .. } | InstructionData::Store { .. }
        ),
        Kind::TrapCode => match data {
            InstructionData::Trap { .. } | InstructionData::CondTrap { .. } => true,
            _ => data.memflags_trap_code(&func.dfg).is_some(),
        },
        Kind::SwapOperands => swappable(func, i),
        _ => unreachable!(),
    }
}

fn nth_inst_site(func: &Function, kind: Kind, site: usize) -> Inst {
    reachable_insts(func)
        .into_iter()
        .filter(|&i| inst_site(func, kind, i))
        .nth(site)
        .unwrap()
}

fn extension_sites(func: &Function) -> Vec<(SigSite, bool, usize)> {
    let mut sites = Vec::new();
    for s in used_signatures(func) {
        let sig = match s {
            SigSite::Own => &func.signature,
            SigSite::Ref(r) => &func.dfg.signatures[r],
        };
        for (i, p) in sig.params.iter().enumerate() {
            if p.value_type.is_int() {
                sites.push((s, false, i));
            }
        }
        for (i, p) in sig.returns.iter().enumerate() {
            if p.value_type.is_int() {
                sites.push((s, true, i));
            }
        }
    }
    sites
}

fn operand_sites(func: &Function) -> Vec<(Inst, usize)> {
    let mut sites = Vec::new();
    for inst in reachable_insts(func) {
        for (k, &v) in func.dfg.inst_args(inst).iter().enumerate() {
            let ty = func.dfg.value_type(v);
            if replacement_candidates(func, inst, ty)
                .iter()
                .any(|&c| c != v)
            {
                sites.push((inst, k));
            }
        }
    }
    sites
}

/// Branch destinations (instruction, index) that may be retargeted: there is another non-entry
/// block with the same parameter types.
fn branch_sites(func: &Function) -> Vec<(Inst, usize)> {
    let mut sites = Vec::new();
    for inst in reachable_insts(func) {
        let dests = func.dfg.insts[inst]
            .branch_destination(&func.dfg.jump_tables, &func.dfg.exception_tables);
        for (k, call) in dests.iter().enumerate() {
            if !retarget_candidates(func, call.block(&func.dfg.value_lists)).is_empty() {
                sites.push((inst, k));
            }
        }
    }
    sites
}

fn retarget_candidates(func: &Function, old: Block) -> Vec<Block> {
    let entry = func.layout.entry_block().unwrap();
    func.layout
        .blocks()
        .filter(|&b| b != entry && b != old)
        .filter(|&b| {
            func.dfg
                .block_param_types(b)
                .eq(func.dfg.block_param_types(old))
        })
        .collect()
}

const NON_COMMUTATIVE: [Opcode; 10] = [
    Opcode::Isub,
    Opcode::Ishl,
    Opcode::Ushr,
    Opcode::Sshr,
    Opcode::Rotl,
    Opcode::Rotr,
    Opcode::Udiv,
    Opcode::Urem,
    Opcode::Fsub,
    Opcode::Fdiv,
];

fn swappable(func: &Function, i: Inst) -> bool {
    let pool = &func.dfg.value_lists;
    match func.dfg.insts[i] {
        InstructionData::Binary { opcode, args } => {
            NON_COMMUTATIVE.contains(&opcode) && args[0] != args[1]
        }
        InstructionData::IntCompare { cond, args, .. } => {
            !matches!(cond, IntCC::Equal | IntCC::NotEqual) && args[0] != args[1]
        }
        InstructionData::FloatCompare { cond, args, .. } => {
            !matches!(
                cond,
                FloatCC::Equal
                    | FloatCC::NotEqual
                    | FloatCC::Ordered
                    | FloatCC::Unordered
                    | FloatCC::OrderedNotEqual
                    | FloatCC::UnorderedOrEqual
            ) && args[0] != args[1]
        }
        InstructionData::Ternary {
            opcode: Opcode::Select,
            args,
        } => args[1] != args[2],
        InstructionData::Brif { blocks, .. } => {
            blocks[0].block(pool) != blocks[1].block(pool)
                || !blocks[0].args(pool).eq(blocks[1].args(pool))
        }
        _ => false,
    }
}

/// For a `TypeWidth` site: the result and the integer types it may take instead.
fn width_choices(func: &Function, inst: Inst) -> Option<(Value, Vec<Type>)> {
    let data = func.dfg.insts[inst];
    let results = func.dfg.inst_results(inst);
    if results.len() != 1 {
        return None;
    }
    let r = results[0];
    let ty = func.dfg.value_type(r);
    if !ty.is_int() {
        return None;
    }
    let input_bits = |data: &InstructionData| match *data {
        InstructionData::Unary { arg, .. } => func.dfg.value_type(arg).bits(),
        _ => 0,
    };
    let allowed: Vec<Type> = match data.opcode() {
        Opcode::Iconst => {
            let InstructionData::UnaryImm { imm, .. } = data else {
                unreachable!()
            };
            INT_TYPES
                .iter()
                .copied()
                .filter(|&t| mask_imm(imm.bits(), t) == imm.bits())
                .collect()
        }
        Opcode::Load => INT_TYPES.to_vec(),
        Opcode::Uload8 | Opcode::Sload8 => vec![I16, I32, I64],
        Opcode::Uload16 | Opcode::Sload16 => vec![I32, I64],
        Opcode::Uextend | Opcode::Sextend => {
            let b = input_bits(&data);
            INT_TYPES.iter().copied().filter(|t| t.bits() > b).collect()
        }
        Opcode::Ireduce => {
            let b = input_bits(&data);
            INT_TYPES.iter().copied().filter(|t| t.bits() < b).collect()
        }
        _ => return None,
    };
    let allowed: Vec<Type> = allowed.into_iter().filter(|&t| t != ty).collect();
    if allowed.is_empty() {
        return None;
    }
    // Every use must be the stored value of a store, where any width is fine.
    for block in func.layout.blocks() {
        for i in func.layout.block_insts(block) {
            let uses = func.dfg.inst_values(i).filter(|&v| v == r).count();
            if uses == 0 {
                continue;
            }
            match func.dfg.insts[i] {
                InstructionData::Store {
                    opcode: Opcode::Store,
                    args,
                    ..
                } if args[0] == r && args[1] != r => {}
                _ => return None,
            }
        }
    }
    Some((r, allowed))
}

fn apply(func: &mut Function, kind: Kind, site: usize, ch: &mut Choices) -> bool {
    match kind {
        Kind::IntImmediate => {
            let inst = nth_inst_site(func, kind, site);
            let ty = func.dfg.ctrl_typevar(inst);
            let InstructionData::UnaryImm { imm, .. } = &mut func.dfg.insts[inst] else {
                unreachable!()
            };
            let old = imm.bits();
            let mut new = if ch.chance(50) {
                random_imm(ch, ty)
            } else {
                mask_imm(old ^ (1i64 << ch.below(ty.bits() as usize)), ty)
            };
            if new == old {
                new = mask_imm(old ^ 1, ty);
            }
            *imm = Imm64::new(new);
            true
        }
        Kind::FloatImmediate => {
            let inst = nth_inst_site(func, kind, site);
            match &mut func.dfg.insts[inst] {
                InstructionData::UnaryIeee32 { imm, .. } => {
                    *imm = Ieee32::with_bits(imm.bits() ^ (1u32 << ch.below(32)));
                }
                InstructionData::UnaryIeee64 { imm, .. } => {
                    *imm = Ieee64::with_bits(imm.bits() ^ (1u64 << ch.below(64)));
                }
                _ => unreachable!(),
            }
            true
        }
        Kind::Offset => {
            let inst = nth_inst_site(func, kind, site);
            let offset = match &mut func.dfg.insts[inst] {
                InstructionData::Load { offset, .. }
                | InstructionData::Store { offset, .. }
                | InstructionData::StackAddr { offset, .. } => offset,
                _ => unreachable!(),
            };
            let old = i32::from(*offset);
            let delta = ch.pick(&[1, -1, 2, 4, -4, 8, 64, -4096]);
            *offset = Offset32::new(old.wrapping_add(delta));
            true
        }
        Kind::IntCond => {
            let inst = nth_inst_site(func, kind, site);
            let InstructionData::IntCompare { cond, .. } = &mut func.dfg.insts[inst] else {
                unreachable!()
            };
            *cond = other(ch, IntCC::all(), *cond).unwrap();
            true
        }
        Kind::FloatCond => {
            let inst = nth_inst_site(func, kind, site);
            let InstructionData::FloatCompare { cond, .. } = &mut func.dfg.insts[inst] else {
                unreachable!()
            };
            *cond = other(ch, FloatCC::all(), *cond).unwrap();
            true
        }
        Kind::Opcode => {
            let inst = nth_inst_site(func, kind, site);
            let op = func.dfg.insts[inst].opcode();
            let group = OPCODE_GROUPS.iter().find(|g| g.contains(&op)).unwrap();
            let Some(new) = other(ch, group, op) else {
                return false;
            };
            match opcode_mut(&mut func.dfg.insts[inst]) {
                Some(o) => *o = new,
                None => return false,
            }
            true
        }
        Kind::TypeWidth => {
            let inst = nth_inst_site(func, kind, site);
            let (r, allowed) = width_choices(func, inst).unwrap();
            let ty = allowed[ch.below(allowed.len())];
            let new = func.dfg.replace_result(r, ty);
            let insts: Vec<Inst> = func
                .layout
                .blocks()
                .flat_map(|b| func.layout.block_insts(b).collect::<Vec<_>>())
                .collect();
            for i in insts {
                func.dfg
                    .map_inst_values(i, |v| if v == r { new } else { v });
            }
            true
        }
        Kind::MemFlag => {
            let inst = nth_inst_site(func, kind, site);
            let flags = func.dfg.insts[inst].memflags().unwrap();
            let mut parts = FlagParts::of(func.dfg.mem_flags[flags]);
            let is_store = matches!(func.dfg.insts[inst], InstructionData::Store { .. });
            // `readonly` is for loads only (the verifier rejects it on a store).
            let options: &[usize] = if is_store {
                &[0, 2, 3, 4, 5]
            } else {
                &[0, 1, 2, 3, 4, 5]
            };
            match ch.pick(options) {
                5 => {
                    // The alias region (by user id; 99 is one the generator never uses).
                    let current = parts.region.map(|r| func.dfg.alias_regions[r].user_id);
                    let mut ids: Vec<Option<u32>> = vec![None, Some(99)];
                    ids.extend(ALIAS_REGION_IDS.iter().map(|&u| Some(u)));
                    let new = other(ch, &ids, current).unwrap();
                    parts.region = new.map(|user_id| {
                        func.dfg.alias_regions.insert(ir::AliasRegionData {
                            user_id,
                            description: "mutated".into(),
                        })
                    });
                }
                0 => parts.aligned = !parts.aligned,
                1 => parts.readonly = !parts.readonly,
                2 => parts.can_move = !parts.can_move,
                3 => {
                    parts.endianness = other(
                        ch,
                        &[None, Some(Endianness::Little), Some(Endianness::Big)],
                        parts.endianness,
                    )
                    .unwrap()
                }
                _ => {
                    parts.trap = match parts.trap {
                        Some(_) => None,
                        None => Some(TrapCode::HEAP_OUT_OF_BOUNDS),
                    }
                }
            }
            let new = func.dfg.mem_flags.insert(parts.build()).unwrap();
            *func.dfg.insts[inst].memflags_mut().unwrap() = new;
            true
        }
        Kind::TrapCode => {
            let inst = nth_inst_site(func, kind, site);
            let old = func.dfg.insts[inst]
                .trap_code()
                .or_else(|| func.dfg.insts[inst].memflags_trap_code(&func.dfg))
                .unwrap();
            let mut new = random_trap_code(ch);
            if new == old {
                new = if old == TrapCode::unwrap_user(1) {
                    TrapCode::unwrap_user(2)
                } else {
                    TrapCode::unwrap_user(1)
                };
            }
            if let Some(code) = func.dfg.insts[inst].trap_code_mut() {
                *code = new;
            } else {
                let flags = func.dfg.insts[inst].memflags().unwrap();
                let mut parts = FlagParts::of(func.dfg.mem_flags[flags]);
                parts.trap = Some(new);
                let f = func.dfg.mem_flags.insert(parts.build()).unwrap();
                *func.dfg.insts[inst].memflags_mut().unwrap() = f;
            }
            true
        }
        Kind::CallConv => {
            let s = used_signatures(func)[site];
            let sig = signature_mut(func, s);
            sig.call_conv = other(ch, &CALL_CONVS, sig.call_conv).unwrap();
            true
        }
        Kind::Extension => {
            let (s, is_return, i) = extension_sites(func)[site];
            let sig = signature_mut(func, s);
            let p = if is_return {
                &mut sig.returns[i]
            } else {
                &mut sig.params[i]
            };
            p.extension = other(
                ch,
                &[
                    ArgumentExtension::None,
                    ArgumentExtension::Uext,
                    ArgumentExtension::Sext,
                ],
                p.extension,
            )
            .unwrap();
            true
        }
        Kind::SwapOperands => {
            let inst = nth_inst_site(func, kind, site);
            match &mut func.dfg.insts[inst] {
                InstructionData::Binary { args, .. }
                | InstructionData::IntCompare { args, .. }
                | InstructionData::FloatCompare { args, .. } => args.swap(0, 1),
                InstructionData::Ternary { args, .. } => args.swap(1, 2),
                InstructionData::Brif { blocks, .. } => blocks.swap(0, 1),
                _ => unreachable!(),
            }
            true
        }
        Kind::Operand => {
            let (inst, k) = operand_sites(func)[site];
            let v = func.dfg.inst_args(inst)[k];
            let ty = func.dfg.value_type(v);
            let candidates: Vec<Value> = replacement_candidates(func, inst, ty)
                .into_iter()
                .filter(|&c| c != v)
                .collect();
            func.dfg.inst_args_mut(inst)[k] = candidates[ch.below(candidates.len())];
            true
        }
        Kind::BranchTarget => {
            let (inst, k) = branch_sites(func)[site];
            let dfg = &func.dfg;
            let old = dfg.insts[inst].branch_destination(&dfg.jump_tables, &dfg.exception_tables)
                [k]
                .block(&dfg.value_lists);
            let candidates = retarget_candidates(func, old);
            let new = candidates[ch.below(candidates.len())];
            let dfg = &mut func.dfg;
            dfg.insts[inst].branch_destination_mut(&mut dfg.jump_tables, &mut dfg.exception_tables)
                [k]
                .set_block(new, &mut dfg.value_lists);
            true
        }
        Kind::StackSlotSize => {
            let s = used_stack_slots(func)[site];
            let data = &mut func.sized_stack_slots[s];
            let delta = ch.pick(&[1u32, 4, 8, 16, 100]);
            data.size = if data.size > 16 && ch.chance(50) {
                data.size - 8
            } else {
                data.size + delta
            };
            true
        }
        Kind::StackSlotAlign => {
            let s = used_stack_slots(func)[site];
            let data = &mut func.sized_stack_slots[s];
            data.align_shift = other(ch, &[0u8, 1, 2, 3, 4], data.align_shift).unwrap();
            true
        }
        Kind::StackSlotOrder => {
            let first = slot_swap_sites(func)[site];
            swap_stack_slots(func, first, StackSlot::new(first.index() + 1));
            true
        }
        Kind::UnusedStackSlot => {
            let size = ch.pick(&[4u32, 8, 64, 1 << 20]);
            let align_shift = ch.pick(&[0u8, 3, 4]);
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, size, align_shift);
            func.create_sized_stack_slot(data);
            true
        }
        Kind::Colocated => {
            let f = used_func_refs(func)[site];
            let ext = &mut func.dfg.ext_funcs[f];
            ext.colocated = !ext.colocated;
            true
        }
        Kind::CalleeName => {
            let f = used_func_refs(func)[site];
            let name = match func.dfg.ext_funcs[f].name.clone() {
                ExternalName::User(r) => {
                    let u = func.params.user_named_funcs()[r].clone();
                    let renamed = ir::UserExternalName::new(u.namespace, u.index + 1);
                    ExternalName::User(func.declare_imported_user_function(renamed))
                }
                ExternalName::TestCase(t) => {
                    let mut bytes = t.raw().to_vec();
                    bytes.extend_from_slice(b"_renamed");
                    ExternalName::testcase(bytes)
                }
                other => panic!("unexpected callee name {other:?}"),
            };
            func.dfg.ext_funcs[f].name = name;
            true
        }
    }
}
