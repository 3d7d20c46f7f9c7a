//! The walk that writes a function's fingerprint (see the essay in `compare`).

use super::encoding::Tables;
use super::{Fingerprint, Hole, HoleKinds, NameKey, RefKind, Resolver, hash};
use crate::module::{FuncName, FunctionId};
use cranelift_codegen::ir::{
    self, AbiParam, ArgumentExtension, ArgumentPurpose, Block, BlockArg, BlockCall, ExceptionTable,
    ExceptionTableItem, ExternalName, FuncRef, Function, GlobalValue, GlobalValueData, Inst,
    InstructionData, MemFlags, Signature, StackSlotKind, Type, Value,
};
use cranelift_codegen::isa::CallConv;

// Tags: each marks a choice between alternatives that could otherwise write the same tokens.
const NONE: u32 = 0;
const SOME: u32 = 1;
const NAME_USER: u32 = 1;
const NAME_TESTCASE: u32 = 2;
const NAME_LIBCALL: u32 = 3;
const NAME_KNOWN_SYMBOL: u32 = 4;
const CLASS_REF: u32 = 5;
const HOLE: u32 = 6;
/// A use of a constant, with [`HoleKinds::CONSTANT_USES`], where a value's serial number would
/// be (no function has that many values).
const CONSTANT_USE: u32 = u32::MAX - 1;
const GV_VMCTX: u32 = 1;
const GV_LOAD: u32 = 2;
const GV_IADD_IMM: u32 = 3;
const GV_SYMBOL: u32 = 4;
const GV_DYN_SCALE: u32 = 5;
const ARG_VALUE: u32 = 1;
const ARG_TRY_CALL_RET: u32 = 2;
const ARG_TRY_CALL_EXN: u32 = 3;
const EXN_TAG: u32 = 1;
const EXN_DEFAULT: u32 = 2;
const EXN_CONTEXT: u32 = 3;
const NO_ENTRY_BLOCK: u32 = u32::MAX;

/// Serial numbers for one kind of entity: the first met gets 0. Stored as `n + 1` so that the
/// map's default (0) means "not met yet". A plain vector sized for the function's entities, not
/// a `SecondaryMap`: its reads fall back to a default and its writes grow it when the key is out
/// of range, a test and a branch at every value of the walks.
struct SerialNumbers<K: cranelift_codegen::entity::EntityRef> {
    map: Vec<u32>,
    next: u32,
    key: std::marker::PhantomData<K>,
}

impl<K: cranelift_codegen::entity::EntityRef> SerialNumbers<K> {
    fn new() -> Self {
        SerialNumbers {
            map: Vec::new(),
            next: 0,
            key: std::marker::PhantomData,
        }
    }

    /// Forgets every number; `count` is the number of entities of this kind in the function,
    /// so that numbering never has to grow the map.
    fn reset(&mut self, count: usize) {
        self.map.clear();
        self.map.resize(count, 0);
        self.next = 0;
    }

    /// The entity's serial number, if it was met.
    #[inline]
    fn known(&self, key: K) -> Option<u32> {
        self.map[key.index()].checked_sub(1)
    }

    /// Gives `key` the serial number `sn` of an entity it stands for (an alias of a value).
    fn same_as(&mut self, key: K, sn: u32) {
        self.map[key.index()] = sn + 1;
    }

    /// The entity's serial number, and whether this is the first time it is met.
    #[inline]
    fn number(&mut self, key: K) -> (u32, bool) {
        let slot = &mut self.map[key.index()];
        if *slot != 0 {
            return (*slot - 1, false);
        }
        self.next += 1;
        *slot = self.next;
        (self.next - 1, true)
    }
}

/// Writes fingerprints; keeps its scratch maps between functions so that writing many functions
/// allocates only for the fingerprints themselves.
pub struct FingerprintWriter {
    tokens: Vec<u32>,
    class_refs: Vec<FunctionId>,
    holes: Vec<Hole>,
    hole_sites: Vec<Inst>,
    hole_kinds: HoleKinds,
    /// The instruction being written (the site of its holes).
    current_inst: Option<Inst>,
    tables: Tables,
    values: SerialNumbers<Value>,
    blocks: SerialNumbers<Block>,
    to_visit: Vec<Block>,
}

impl Default for FingerprintWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl FingerprintWriter {
    /// A writer with empty scratch maps.
    pub fn new() -> Self {
        FingerprintWriter {
            tokens: Vec::new(),
            class_refs: Vec::new(),
            holes: Vec::new(),
            hole_sites: Vec::new(),
            hole_kinds: HoleKinds::NONE,
            current_inst: None,
            tables: Tables::get(),
            values: SerialNumbers::new(),
            blocks: SerialNumbers::new(),
            to_visit: Vec::new(),
        }
    }

    /// Writes `func`'s fingerprint.
    pub fn write(&mut self, func: &Function, resolver: &dyn Resolver) -> Fingerprint {
        self.write_with_holes(func, resolver, HoleKinds::NONE)
    }

    /// Writes `func`'s fingerprint with the operands of `kinds` left as holes: each writes a
    /// `HOLE` token (and what kind of operand it is) instead of its value, which goes to
    /// [`Fingerprint::holes`], in walk order. Names become holes where the resolver says
    /// [`NameKey::Hole`].
    pub fn write_with_holes(
        &mut self,
        func: &Function,
        resolver: &dyn Resolver,
        kinds: HoleKinds,
    ) -> Fingerprint {
        self.hole_kinds = kinds;
        self.walk(func, resolver);
        Fingerprint {
            tokens: self.tokens.clone(),
            class_refs: self.class_refs.clone(),
            holes: self.holes.clone(),
            hole_sites: self.hole_sites.clone(),
        }
    }

    /// Walks `func` as [`FingerprintWriter::write_with_holes`] does but keeps the result in the
    /// writer, for a caller that only hashes the tokens ([`FingerprintWriter::tokens`]) and
    /// keeps the hole values ([`FingerprintWriter::holes`]): no copy of the tokens.
    pub fn walk_with_holes(&mut self, func: &Function, resolver: &dyn Resolver, kinds: HoleKinds) {
        self.hole_kinds = kinds;
        self.walk(func, resolver);
    }

    /// The tokens of the last walk.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// The hole values of the last walk.
    pub fn holes(&self) -> &[Hole] {
        &self.holes
    }

    /// The functions the last walk wrote as class references, in walk order.
    pub fn class_refs(&self) -> &[FunctionId] {
        &self.class_refs
    }

    /// A cheap hash of `func`: the blocks in the order of the walk, each with its parameter
    /// count and its instructions' opcodes and branch targets; no values, types or fields.
    ///
    /// Law: equal fingerprints ⇒ equal shape hashes. Everything hashed is structural (it does
    /// not depend on entity numbers or layout order), and two functions with equal fingerprints
    /// correspond block for block and instruction for instruction along this walk. The driver
    /// writes full fingerprints only for functions that share a shape hash.
    pub fn shape_hash(&mut self, func: &Function) -> u64 {
        self.shape_hash_of::<false>(func)
    }

    /// [`FingerprintWriter::shape_hash`] without the `iconst`, `f32const` and `f64const`
    /// instructions: the shape of fingerprints written with [`HoleKinds::CONSTANT_USES`].
    pub fn shape_hash_without_constants(&mut self, func: &Function) -> u64 {
        self.shape_hash_of::<true>(func)
    }

    fn shape_hash_of<const WITHOUT_CONSTANTS: bool>(&mut self, func: &Function) -> u64 {
        let mut h = hash::SEED;
        let sig = &func.signature;
        h = hash::mix(h, u64::from(call_conv_number(sig.call_conv)));
        h = hash::mix(h, sig.params.len() as u64);
        h = hash::mix(h, sig.returns.len() as u64);
        let Some(entry) = func.layout.entry_block() else {
            return h;
        };
        self.blocks.reset(func.dfg.num_blocks());
        self.to_visit.clear();
        self.blocks.number(entry);
        self.to_visit.push(entry);
        let dfg = &func.dfg;
        while let Some(block) = self.to_visit.pop() {
            h = hash::mix(h, dfg.num_block_params(block) as u64);
            let mut last = None;
            for inst in func.layout.block_insts(block) {
                let data = &dfg.insts[inst];
                if WITHOUT_CONSTANTS
                    && matches!(
                        data,
                        InstructionData::UnaryImm { .. }
                            | InstructionData::UnaryIeee32 { .. }
                            | InstructionData::UnaryIeee64 { .. }
                    )
                {
                    continue;
                }
                h = hash::mix(h, u64::from(self.tables.opcode_number(data.opcode())));
                last = Some(data);
            }
            // Only a block's terminator branches (the verifier's rule), and nothing is hashed
            // after it: its targets are hashed here, once per block instead of asking every
            // instruction for its destinations (a tenth of the shape hash). A constant is
            // never a branch, so leaving constants out does not change which is last.
            if let Some(data) = last {
                for call in data.branch_destination(&dfg.jump_tables, &dfg.exception_tables) {
                    let target = call.block(&dfg.value_lists);
                    let (sn, first) = self.blocks.number(target);
                    if first {
                        self.to_visit.push(target);
                    }
                    h = hash::mix(h, u64::from(sn));
                }
            }
        }
        h
    }

    fn walk(&mut self, func: &Function, resolver: &dyn Resolver) {
        self.tokens.clear();
        self.class_refs.clear();
        self.holes.clear();
        self.hole_sites.clear();
        self.current_inst = None;
        self.values.reset(func.dfg.num_values());
        self.blocks.reset(func.dfg.num_blocks());
        self.to_visit.clear();
        let mut walk = Walk {
            w: self,
            func,
            resolver,
        };
        walk.function();
    }
}

/// One function's walk.
struct Walk<'a> {
    w: &'a mut FingerprintWriter,
    func: &'a Function,
    resolver: &'a dyn Resolver,
}

impl Walk<'_> {
    #[inline]
    fn push(&mut self, token: u32) {
        self.w.tokens.push(token);
    }

    fn push_u64(&mut self, x: u64) {
        self.push(x as u32);
        self.push((x >> 32) as u32);
    }

    fn push_bool(&mut self, b: bool) {
        self.push(b as u32);
    }

    /// A byte string: its length, then the bytes four to a token.
    fn push_bytes(&mut self, bytes: &[u8]) {
        self.push(bytes.len() as u32);
        for chunk in bytes.chunks(4) {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            self.push(u32::from_le_bytes(word));
        }
    }

    fn push_type(&mut self, ty: Type) {
        self.push(self.w.tables.type_number(ty));
    }

    fn function(&mut self) {
        self.signature(&self.func.signature);
        match self.func.stack_limit {
            None => self.push(NONE),
            Some(gv) => {
                self.push(SOME);
                self.global_value(gv);
            }
        }
        self.frame();
        self.body();
    }

    /// The stack frame: every stack slot and dynamic stack slot in declaration order, used or
    /// not. Cranelift lays slots out in declaration order and gives every declared slot its
    /// space, so the order decides the slots' addresses relative to one another and an unused
    /// slot still moves the others and grows the frame (which a stack limit or a guard page
    /// can observe). Uses then name a slot by its declaration number.
    fn frame(&mut self) {
        let slots = &self.func.sized_stack_slots;
        self.push(slots.len() as u32);
        for data in slots.values() {
            self.push(stack_slot_kind_number(data.kind));
            self.push(data.size);
            self.push(u32::from(data.align_shift));
            match data.key {
                None => self.push(NONE),
                Some(key) => {
                    self.push(SOME);
                    self.push_u64(key.bits());
                }
            }
        }
        let dynamic = &self.func.dynamic_stack_slots;
        self.push(dynamic.len() as u32);
        for data in dynamic.values() {
            self.push(stack_slot_kind_number(data.kind));
            let ty = &self.func.dfg.dynamic_types[data.dyn_ty];
            self.push_type(ty.base_vector_ty);
            self.global_value(ty.dynamic_scale);
        }
    }

    // Stage 1: signatures.

    fn signature(&mut self, sig: &Signature) {
        self.push(call_conv_number(sig.call_conv));
        self.push(sig.params.len() as u32);
        for p in &sig.params {
            self.abi_param(p);
        }
        self.push(sig.returns.len() as u32);
        for p in &sig.returns {
            self.abi_param(p);
        }
    }

    /// Inlined into the signature's loop: a call per parameter cost a third of the parameter
    /// in saved registers.
    #[inline(always)]
    fn abi_param(&mut self, p: &AbiParam) {
        self.push_type(p.value_type);
        match p.purpose {
            ArgumentPurpose::Normal => self.push(0),
            ArgumentPurpose::StructArgument(size) => {
                self.push(1);
                self.push(size);
            }
            ArgumentPurpose::StructReturn => self.push(2),
            ArgumentPurpose::VMContext => self.push(3),
        }
        self.push(match p.extension {
            ArgumentExtension::None => 0,
            ArgumentExtension::Uext => 1,
            ArgumentExtension::Sext => 2,
        });
    }

    // Stage 2: the CFG-ordered walk of the body.

    fn body(&mut self) {
        let Some(entry) = self.func.layout.entry_block() else {
            self.push(NO_ENTRY_BLOCK);
            return;
        };
        self.block_ref(entry);
        while let Some(block) = self.w.to_visit.pop() {
            self.block(block);
        }
    }

    fn block(&mut self, block: Block) {
        let (sn, _) = self.w.blocks.number(block);
        self.push(sn);
        let params = self.func.dfg.block_params(block);
        self.push(params.len() as u32);
        for &p in params {
            self.value_def(p);
        }
        self.push_bool(self.func.layout.is_cold(block));
        // The instruction count goes before the instructions; it is known only after them, so
        // its token is filled in afterwards (one pass over the block's list, not two).
        let count_at = self.w.tokens.len();
        self.push(0);
        let mut count = 0u32;
        let constant_uses = self.w.hole_kinds.contains(HoleKinds::CONSTANT_USES);
        for inst in self.func.layout.block_insts(block) {
            if constant_uses && self.constant_hole(inst).is_some() {
                // Written where its value is used.
                continue;
            }
            self.instruction(inst);
            count += 1;
        }
        self.w.tokens[count_at] = count;
    }

    /// When `inst` makes a constant that is a hole where it is used ([`HoleKinds::CONSTANT_USES`]
    /// with the constant's kind): that kind and the constant.
    fn constant_hole(&self, inst: Inst) -> Option<(HoleKinds, Hole)> {
        let kinds = self.w.hole_kinds;
        let (kind, hole) = match self.func.dfg.insts[inst] {
            InstructionData::UnaryImm { imm, .. } => {
                (HoleKinds::INT_CONSTANTS, Hole::Int(imm.bits() as u64))
            }
            InstructionData::UnaryIeee32 { imm, .. } => {
                (HoleKinds::FLOAT_CONSTANTS, Hole::F32(imm.bits()))
            }
            InstructionData::UnaryIeee64 { imm, .. } => {
                (HoleKinds::FLOAT_CONSTANTS, Hole::F64(imm.bits()))
            }
            _ => return None,
        };
        kinds
            .contains(kind.union(HoleKinds::CONSTANT_USES))
            .then_some((kind, hole))
    }

    /// A use of `v` (not an alias) when a constant instruction the walk left out makes it: a
    /// hole of the using instruction, with the constant's type. Says whether it was.
    fn constant_use(&mut self, v: Value) -> bool {
        let ir::ValueDef::Result(def, _) = self.func.dfg.value_def(v) else {
            return false;
        };
        let Some((kind, hole)) = self.constant_hole(def) else {
            return false;
        };
        self.push(CONSTANT_USE);
        self.push(kind.bits());
        self.push_type(self.func.dfg.value_type(v));
        match self.w.current_inst {
            Some(site) => {
                self.w.holes.push(hole);
                self.w.hole_sites.push(site);
            }
            // Every use is an instruction's operand; were it not, the value is written out.
            None => match hole {
                Hole::Int(bits) | Hole::F64(bits) => self.push_u64(bits),
                Hole::F32(bits) => self.push(bits),
                _ => unreachable!("a constant hole"),
            },
        }
        true
    }

    /// A block met as a branch target (or operand): its serial number; the first time, it is
    /// queued for the walk.
    fn block_ref(&mut self, block: Block) {
        let (sn, first) = self.w.blocks.number(block);
        if first {
            self.w.to_visit.push(block);
        }
        self.push(sn);
    }

    /// A value's serial number. Verified CLIF defines every value before the walk uses it
    /// (a definition dominates its uses, and the walk takes a block only after the blocks that
    /// dominate it), but the number is the same whether it is first met at a use or a definition.
    ///
    /// A value is resolved through its aliases only the first time it is met: later uses find
    /// its number directly (resolving every use cost a seventh of the walk). A definition is
    /// never an alias ([`Walk::value_def`]), so a value used after its definition is never
    /// resolved at all.
    ///
    /// The known case is inlined into every caller; the first meeting is a call of its own
    /// (a call to the whole function cost a fifth of each use in saved registers alone).
    #[inline]
    fn value(&mut self, v: Value) {
        match self.w.values.known(v) {
            Some(sn) => self.push(sn),
            None => self.value_first_met(v),
        }
    }

    /// [`Walk::value`] for a value not met before: resolved through its aliases (or written as
    /// a constant's use), numbered, and the alias given the same number.
    #[inline(never)]
    fn value_first_met(&mut self, v: Value) {
        let resolved = self.func.dfg.resolve_aliases(v);
        if self.w.hole_kinds.contains(HoleKinds::CONSTANT_USES) && self.constant_use(resolved) {
            return;
        }
        let (sn, _) = self.w.values.number(resolved);
        if resolved != v {
            self.w.values.same_as(v, sn);
        }
        self.push(sn);
    }

    /// A block parameter or an instruction result: attached values, which are never aliases.
    fn value_def(&mut self, v: Value) {
        let (sn, _) = self.w.values.number(v);
        let ty = self.w.tables.type_number(self.func.dfg.value_type(v));
        // Both tokens with one test of the vector's room.
        self.w.tokens.extend_from_slice(&[sn, ty]);
    }

    fn values(&mut self, vs: &[Value]) {
        self.push(vs.len() as u32);
        for &v in vs {
            self.value(v);
        }
    }

    fn value_list(&mut self, list: &ir::ValueList) {
        let vs = list.as_slice(&self.func.dfg.value_lists);
        self.values(vs);
    }

    fn block_call(&mut self, call: &BlockCall) {
        let pool = &self.func.dfg.value_lists;
        self.block_ref(call.block(pool));
        // The argument count goes first; it is filled in after one pass over the arguments.
        let count_at = self.w.tokens.len();
        self.push(0);
        let mut count = 0u32;
        for arg in call.args(pool) {
            count += 1;
            match arg {
                BlockArg::Value(v) => {
                    self.push(ARG_VALUE);
                    self.value(v);
                }
                BlockArg::TryCallRet(i) => {
                    self.push(ARG_TRY_CALL_RET);
                    self.push(i);
                }
                BlockArg::TryCallExn(i) => {
                    self.push(ARG_TRY_CALL_EXN);
                    self.push(i);
                }
            }
        }
        self.w.tokens[count_at] = count;
    }

    fn mem_flags(&mut self, flags: MemFlags) {
        let data = self.func.dfg.mem_flags[flags];
        self.push_bool(data.aligned());
        self.push_bool(data.readonly());
        self.push_bool(data.can_move());
        self.push(match data.explicit_endianness() {
            None => 0,
            Some(ir::Endianness::Little) => 1,
            Some(ir::Endianness::Big) => 2,
        });
        self.trap_code(data.trap_code());
        match data.alias_region() {
            None => self.push(NONE),
            Some(region) => {
                self.push(SOME);
                self.push(self.func.dfg.alias_regions[region].user_id);
            }
        }
    }

    fn trap_code(&mut self, code: Option<ir::TrapCode>) {
        // Trap codes are non-zero bytes, so 0 can stand for "none".
        self.push(code.map_or(0, |c| u32::from(c.as_raw().get())));
    }

    fn instruction(&mut self, inst: Inst) {
        let func = self.func;
        let dfg = &func.dfg;
        let data = &dfg.insts[inst];
        self.push(self.w.tables.opcode_number(data.opcode()));
        let results = dfg.inst_results(inst);
        // The controlling type is the type of a result or of an operand, which are compared with
        // their definitions; it is written again only where there is no result, because asking
        // for it costs a quarter of the walk.
        if results.is_empty() {
            self.push_type(dfg.ctrl_typevar(inst));
        }
        // The site of holes: only read when the writer writes holes, so only set then.
        let holes = self.w.hole_kinds != HoleKinds::NONE;
        if holes {
            self.w.current_inst = Some(inst);
        }
        self.instruction_fields(data);
        if holes {
            self.w.current_inst = None;
        }
        if data.opcode().is_call() {
            self.user_stack_map(inst);
        }
        self.push(results.len() as u32);
        for &r in results {
            self.value_def(r);
        }
    }

    /// A call's user stack map (the slots a garbage collector reads at this safepoint): its
    /// entries in order, each with its type, slot and offset. It changes the stack maps the
    /// code carries, so two calls with different maps are different.
    fn user_stack_map(&mut self, inst: Inst) {
        let entries = self
            .func
            .dfg
            .user_stack_map_entries(inst)
            .unwrap_or_default();
        self.push(entries.len() as u32);
        for entry in entries {
            self.push_type(entry.ty);
            self.stack_slot(entry.slot);
            self.push(entry.offset);
        }
    }

    /// Every field of `InstructionData` but the opcode. The match is exhaustive on purpose: a new
    /// instruction format in Cranelift fails to compile here instead of being compared partially.
    fn instruction_fields(&mut self, data: &InstructionData) {
        match *data {
            InstructionData::AtomicCas { args, flags, .. } => {
                self.mem_flags(flags);
                self.values(&args);
            }
            InstructionData::AtomicRmw {
                args, flags, op, ..
            } => {
                self.mem_flags(flags);
                self.push(self.w.tables.atomic_rmw_number(op));
                self.values(&args);
            }
            InstructionData::Binary { args, .. } => self.values(&args),
            InstructionData::BinaryImm8 { arg, imm, .. } => {
                self.value(arg);
                self.push(u32::from(imm));
            }
            InstructionData::BranchTable { arg, table, .. } => {
                self.value(arg);
                let branches = self.func.stencil.dfg.jump_tables[table].all_branches();
                self.push(branches.len() as u32);
                for call in branches {
                    self.block_call(call);
                }
            }
            InstructionData::Brif { arg, blocks, .. } => {
                self.value(arg);
                self.block_call(&blocks[0]);
                self.block_call(&blocks[1]);
            }
            InstructionData::Call { args, func_ref, .. } => {
                self.func_ref(func_ref, RefKind::Call);
                self.value_list(&args);
            }
            InstructionData::CallIndirect { args, sig_ref, .. } => {
                self.signature(&self.func.dfg.signatures[sig_ref]);
                self.value_list(&args);
            }
            InstructionData::CondTrap { arg, code, .. } => {
                self.value(arg);
                self.trap_code(Some(code));
            }
            InstructionData::DynamicStackAddr {
                dynamic_stack_slot, ..
            } => self.dynamic_stack_slot(dynamic_stack_slot),
            InstructionData::ExceptionHandlerAddress { block, imm, .. } => {
                self.block_ref(block);
                self.push_u64(imm.bits() as u64);
            }
            InstructionData::FloatCompare { args, cond, .. } => {
                self.push(self.w.tables.float_cc_number(cond));
                self.values(&args);
            }
            InstructionData::FuncAddr { func_ref, .. } => self.func_ref(func_ref, RefKind::Address),
            InstructionData::IntAddTrap { args, code, .. } => {
                self.trap_code(Some(code));
                self.values(&args);
            }
            InstructionData::IntCompare { args, cond, .. } => {
                self.push(self.w.tables.int_cc_number(cond));
                self.values(&args);
            }
            InstructionData::Jump { destination, .. } => self.block_call(&destination),
            InstructionData::Load {
                arg, flags, offset, ..
            } => {
                self.mem_flags(flags);
                self.push(i32::from(offset) as u32);
                self.value(arg);
            }
            InstructionData::LoadNoOffset { arg, flags, .. } => {
                self.mem_flags(flags);
                self.value(arg);
            }
            InstructionData::MultiAry { args, .. } => self.value_list(&args),
            InstructionData::NullAry { .. } => {}
            InstructionData::Shuffle { args, imm, .. } => {
                self.push_bytes(self.func.dfg.immediates[imm].as_slice());
                self.values(&args);
            }
            InstructionData::StackAddr {
                stack_slot, offset, ..
            } => {
                self.stack_slot(stack_slot);
                self.push(i32::from(offset) as u32);
            }
            InstructionData::Store {
                args,
                flags,
                offset,
                ..
            } => {
                self.mem_flags(flags);
                self.push(i32::from(offset) as u32);
                self.values(&args);
            }
            InstructionData::StoreNoOffset { args, flags, .. } => {
                self.mem_flags(flags);
                self.values(&args);
            }
            InstructionData::Ternary { args, .. } => self.values(&args),
            InstructionData::TernaryImm8 { args, imm, .. } => {
                self.push(u32::from(imm));
                self.values(&args);
            }
            InstructionData::Trap { code, .. } => self.trap_code(Some(code)),
            InstructionData::TryCall {
                args,
                func_ref,
                exception,
                ..
            } => {
                self.func_ref(func_ref, RefKind::Call);
                self.value_list(&args);
                self.exception_table(exception);
            }
            InstructionData::TryCallIndirect {
                args, exception, ..
            } => {
                self.value_list(&args);
                self.exception_table(exception);
            }
            InstructionData::Unary { arg, .. } => self.value(arg),
            InstructionData::UnaryConst {
                constant_handle, ..
            } => {
                let bytes = self.func.dfg.constants.get(constant_handle).as_slice();
                self.push_bytes(bytes);
            }
            InstructionData::UnaryGlobalValue { global_value, .. } => {
                self.global_value_operand(global_value)
            }
            InstructionData::UnaryIeee16 { imm, .. } => self.push(u32::from(imm.bits())),
            InstructionData::UnaryIeee32 { imm, .. } => {
                let bits = u64::from(imm.bits());
                if !self.hole(HoleKinds::FLOAT_CONSTANTS, || Hole::F32(bits as u32)) {
                    self.push(bits as u32);
                }
            }
            InstructionData::UnaryIeee64 { imm, .. } => {
                if !self.hole(HoleKinds::FLOAT_CONSTANTS, || Hole::F64(imm.bits())) {
                    self.push_u64(imm.bits());
                }
            }
            InstructionData::UnaryImm { imm, .. } => {
                let bits = imm.bits() as u64;
                if !self.hole(HoleKinds::INT_CONSTANTS, || Hole::Int(bits)) {
                    self.push_u64(bits);
                }
            }
        }
    }

    // Function-level entities, written where they are used.

    fn func_ref(&mut self, func_ref: FuncRef, kind: RefKind) {
        let ext = &self.func.dfg.ext_funcs[func_ref];
        self.signature(&self.func.dfg.signatures[ext.signature]);
        self.push_bool(ext.colocated);
        self.push_bool(ext.patchable);
        let key = self.resolver.resolve_func_ref(self.func, func_ref, kind);
        self.name(&ext.name, key);
    }

    /// When `kind` is among the writer's hole kinds, writes a hole (its token and kind) and keeps
    /// `value` aside; says whether it did.
    fn hole(&mut self, kind: HoleKinds, value: impl FnOnce() -> Hole) -> bool {
        if !self.w.hole_kinds.contains(kind) {
            return false;
        }
        let Some(site) = self.w.current_inst else {
            // Only an instruction's own operands are holes (a shared body replaces the
            // instruction); a global value met elsewhere stays exact.
            return false;
        };
        self.push(HOLE);
        self.push(kind.bits());
        self.w.holes.push(value());
        self.w.hole_sites.push(site);
        true
    }

    fn name(&mut self, name: &ExternalName, key: NameKey) {
        match key {
            NameKey::Identity => {}
            NameKey::Class(id) => {
                self.push(CLASS_REF);
                self.w.class_refs.push(id);
                return;
            }
            NameKey::Hole => {
                // A hole only when the writer was asked for callee holes; otherwise identity.
                let callee = FuncName::of_external(name, self.func);
                if let Some(name) = callee
                    && self.hole(HoleKinds::CALLEES, || Hole::Callee(name))
                {
                    return;
                }
            }
        }
        match name {
            ExternalName::User(r) => {
                let u = &self.func.params.user_named_funcs()[*r];
                self.push(NAME_USER);
                self.push(u.namespace);
                self.push(u.index);
            }
            ExternalName::TestCase(t) => {
                self.push(NAME_TESTCASE);
                self.push_bytes(t.raw());
            }
            ExternalName::LibCall(lc) => {
                self.push(NAME_LIBCALL);
                self.push_bytes(lc.to_string().as_bytes());
            }
            ExternalName::KnownSymbol(ks) => {
                self.push(NAME_KNOWN_SYMBOL);
                self.push_bytes(ks.to_string().as_bytes());
            }
        }
    }

    /// A global value that is an instruction's operand: a `symbol` may be a hole here (and only
    /// here: the shared body of similar functions replaces the instruction by a parameter).
    fn global_value_operand(&mut self, gv: GlobalValue) {
        self.global_value_with(gv, true);
    }

    /// A global value by its definition, met anywhere but as an instruction's operand.
    fn global_value(&mut self, gv: GlobalValue) {
        self.global_value_with(gv, false);
    }

    /// A global value by its definition. The chain of bases is followed in a loop, not by
    /// recursion, so a long chain cannot overflow the stack. Only the first global value of the
    /// chain, and only when `operand`, may be a hole.
    fn global_value_with(&mut self, gv: GlobalValue, operand: bool) {
        let site = self.w.current_inst;
        if !operand {
            self.w.current_inst = None;
        }
        let mut next = Some(gv);
        while let Some(gv) = next.take() {
            match self.func.global_values[gv] {
                GlobalValueData::VMContext => self.push(GV_VMCTX),
                GlobalValueData::Load {
                    base,
                    offset,
                    global_type,
                    flags,
                } => {
                    self.push(GV_LOAD);
                    self.push(i32::from(offset) as u32);
                    self.push_type(global_type);
                    self.mem_flags(flags);
                    next = Some(base);
                }
                GlobalValueData::IAddImm {
                    base,
                    offset,
                    global_type,
                } => {
                    self.push(GV_IADD_IMM);
                    self.push_u64(offset.bits() as u64);
                    self.push_type(global_type);
                    next = Some(base);
                }
                GlobalValueData::Symbol {
                    ref name,
                    offset,
                    colocated,
                    tls,
                } => {
                    self.push(GV_SYMBOL);
                    self.push_u64(offset.bits() as u64);
                    self.push_bool(colocated);
                    self.push_bool(tls);
                    // A symbol is an address: compared by identity, or a hole (not a
                    // thread-local one, whose address is not a constant).
                    let is_hole = match FuncName::of_external(name, self.func) {
                        Some(n) if !tls => self.hole(HoleKinds::SYMBOLS, || Hole::Name(n)),
                        _ => false,
                    };
                    if !is_hole {
                        self.name(name, NameKey::Identity);
                    }
                }
                GlobalValueData::DynScaleTargetConst { vector_type } => {
                    self.push(GV_DYN_SCALE);
                    self.push_type(vector_type);
                }
            }
            // The bases of a chain are never holes.
            self.w.current_inst = None;
        }
        self.w.current_inst = site;
    }

    /// A stack slot by its declaration number (the frame is written in full up front).
    fn stack_slot(&mut self, slot: ir::StackSlot) {
        self.push(slot.as_u32());
    }

    fn dynamic_stack_slot(&mut self, slot: ir::DynamicStackSlot) {
        self.push(slot.as_u32());
    }

    fn exception_table(&mut self, table: ExceptionTable) {
        let data = &self.func.dfg.exception_tables[table];
        self.signature(&self.func.dfg.signatures[data.signature()]);
        self.block_call(data.normal_return());
        self.push(data.items().count() as u32);
        for item in data.items() {
            match item {
                ExceptionTableItem::Tag(tag, call) => {
                    self.push(EXN_TAG);
                    self.push(tag.as_u32());
                    self.block_call(&call);
                }
                ExceptionTableItem::Default(call) => {
                    self.push(EXN_DEFAULT);
                    self.block_call(&call);
                }
                ExceptionTableItem::Context(v) => {
                    self.push(EXN_CONTEXT);
                    self.value(v);
                }
            }
        }
    }
}

fn call_conv_number(cc: CallConv) -> u32 {
    match cc {
        CallConv::Fast => 0,
        CallConv::Tail => 1,
        CallConv::SystemV => 2,
        CallConv::WindowsFastcall => 3,
        CallConv::AppleAarch64 => 4,
        CallConv::Probestack => 5,
        CallConv::Winch => 6,
        CallConv::PreserveAll => 7,
    }
}

fn stack_slot_kind_number(kind: StackSlotKind) -> u32 {
    match kind {
        StackSlotKind::ExplicitSlot => 0,
        StackSlotKind::ExplicitDynamicSlot => 1,
    }
}
