//! The comparator: a total order over CLIF functions (LLVM's `FunctionComparator`, for CLIF).
//!
//! # How the order is built
//!
//! LLVM compares two functions side by side, stage by stage (attributes, type, then a CFG-ordered
//! walk of both bodies), associating values by *serial numbers*: the first value met on each side
//! gets 0, the next 1, and so on, and two values are equal when they got the same number. The
//! serial number of a value depends only on its own function's walk, so the side-by-side
//! comparison is exactly a lexicographic comparison of two sequences that each function produces
//! alone: every field in walk order, every value and block replaced by its serial number. This
//! module writes that sequence once per function (a [`Fingerprint`]: a `Vec<u32>` of *tokens*)
//! and compares fingerprints. Consequences:
//!
//! - It is a total order by construction: the order of a function is the lexicographic order of
//!   its fingerprint, so reflexivity, antisymmetry and transitivity are those of slice order.
//! - The hash ([`hash`]) is a hash of the same tokens, so equal functions have equal hashes.
//! - A comparison is a `memcmp`-like slice compare; the per-function walk runs once, not once
//!   per comparison.
//!
//! # What a fingerprint holds, most significant first
//!
//! 1. The signature: calling convention; params and returns in order, each with its type,
//!    purpose (`vmctx`, `sret`, `sarg(N)`) and extension (`uext`/`sext`).
//! 2. The stack limit (`stack_limit = gvN`), as the global value's definition.
//! 3. The stack frame: every stack slot in declaration order, used or not, with its kind, size,
//!    alignment and key; then every dynamic stack slot in declaration order with its kind and
//!    dynamic type (see "Function-level entities" below for why).
//! 4. The body: a walk from the entry block; a block is numbered when it is first met (the entry,
//!    then branch targets in terminator order: `brif` then/else, `br_table` default then entries,
//!    `try_call` normal return then handlers) and pushed on a stack; blocks are taken from the
//!    stack (LLVM's walk). Unreachable blocks are never met, so they do not count; the layout order
//!    of blocks and the numbers of values and blocks in the text do not count either.
//!    Per block: its number, its parameters (serial number and type), the cold flag, the
//!    instruction count. Per instruction: opcode, controlling type (written only for instructions
//!    without results: otherwise it is the type of a result or an operand, and every value's type
//!    is written where the value is defined), every operand and immediate in
//!    `InstructionData` (values by serial number, integer immediates, float immediates by their
//!    bits, condition codes, memory flags with their alias region, trap codes, offsets, atomic
//!    ops, branch targets with their arguments), then its results (serial number and type).
//!
//! Function-level entities: the frame is written up front and a use names a slot by its
//! declaration number; every other entity is written where it is used, in use order: global
//! values by their definition (recursively through their bases); constants and shuffle masks by
//! their bytes; signatures of `call_indirect` in full; jump tables and exception tables entry by
//! entry; external functions by their signature, `colocated` and `patchable` flags, and their
//! name.
//!
//! # Declaration order and unused declarations, entity by entity
//!
//! Which entities count by declaration and which only by use was decided by compiling variants
//! that differ only in the order of two declarations, or in one unused declaration, and comparing
//! the machine code (x86_64 and aarch64; `tests/entity_layout.rs` keeps the cases):
//!
//! | entity | declaration order | an unused declaration | so compared |
//! |---|---|---|---|
//! | stack slots (`ssN`) | changes the code: slots are laid out in declaration order (offsets, and the frame size through alignment padding) | changes the code: it takes frame space, which moves the stack limit check and the slots after it | all, in declaration order |
//! | dynamic stack slots (`dssN`, aarch64) | changes the code, as above | changes the code, as above | all, in declaration order |
//! | dynamic types (`dtN`) | same code | same code | with the slots that use them |
//! | global values (`gvN`) | same code | same code (see below) | where used, by definition |
//! | external functions (`fnN`), signatures (`sigN`), user names | same code | same code (see below) | where used |
//! | constants (`constN`) | same code | same code | where used, by bytes |
//! | alias regions (`regionN`) | same code | same code | where used, by user id |
//! | jump tables, exception tables | inline in their instruction; the order of a `try_call`'s entries changes the code | cannot be unused | where used, entry by entry |
//! | block layout order, value numbers | same code: Cranelift lowers blocks in control-flow order | — | not compared |
//!
//! An unused `symbol` global value or external function leaves the code alone but adds an
//! undefined symbol to the object, which can make a static link pull in an archive member; that
//! is a property of the module's imports, not of a function's behaviour, and is not compared.
//!
//! A name is compared as the [`Resolver`] says: by *identity* (its text), or as a reference to a
//! module function whose *class* is compared (the merge driver's classes; see `merge`). Class
//! references leave a placeholder token in the fingerprint and the function's id in
//! [`Fingerprint::class_refs`]; the order compares the tokens first and then the classes of the
//! class references in order, which is again a lexicographic (total) order.
//!
//! # What does not take part
//!
//! Source locations, debug tags, value labels, comments, the function's own name, alias region
//! *descriptions* (only their ids count) and proof-carrying-code facts and memory types, which
//! describe the code for a checker and do not change what it does.
//!
//! # Unambiguous encoding
//!
//! The order is only as exact as the encoding is unambiguous: two different functions must never
//! write the same tokens. Every token's meaning is fixed by the tokens before it: the opcode
//! fixes the instruction format and so the fields that follow, each variable-length list is
//! preceded by its length, and each choice (an optional field, a kind of name) by a tag.

pub mod hash;

use crate::module::FunctionId;
use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::ir::{
    self, AbiParam, ArgumentExtension, ArgumentPurpose, Block, BlockArg, BlockCall, ExceptionTable,
    ExceptionTableItem, ExternalName, FuncRef, Function, GlobalValue, GlobalValueData, Inst,
    InstructionData, MemFlags, Signature, StackSlotKind, Type, Value,
};
use cranelift_codegen::isa::CallConv;
use std::cmp::Ordering;

pub use hash::hash;

/// How a use of an external function is seen by the comparator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefKind {
    /// The function is called (`call`, `return_call`, `try_call`).
    Call,
    /// The function's address is taken (`func_addr`).
    Address,
}

/// How a name is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKey {
    /// By its text: equal only to the same name.
    Identity,
    /// As a module function: equal to any function of the same class.
    Class(FunctionId),
}

/// Decides how names are compared; the merge driver's resolver knows the module and the mode.
pub trait Resolver {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey;

    /// How the function declared as `func_ref` is compared. A resolver that has already looked
    /// up `func`'s declarations answers from its table instead of looking the name up again.
    fn resolve_func_ref(&self, func: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        self.resolve(func, &func.dfg.ext_funcs[func_ref].name, kind)
    }
}

/// Compares every name by identity: the order of two functions on their own.
pub struct IdentityResolver;

impl Resolver for IdentityResolver {
    fn resolve(&self, _: &Function, _: &ExternalName, _: RefKind) -> NameKey {
        NameKey::Identity
    }
}

/// A function written as its comparison tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Every field in walk order (see the module docs).
    pub tokens: Vec<u32>,
    /// ClifModule functions referred to by class, in walk order; each left a `CLASS_REF` token.
    pub class_refs: Vec<FunctionId>,
}

impl Fingerprint {
    /// A fingerprint no function writes (real fingerprints never start with `u32::MAX`: they
    /// start with a calling convention number), distinct for each `n`.
    pub fn unique(n: u32) -> Fingerprint {
        Fingerprint {
            tokens: vec![u32::MAX, n],
            class_refs: Vec::new(),
        }
    }

    /// Whether this is a fingerprint made by [`Fingerprint::unique`].
    pub fn is_unique(&self) -> bool {
        self.tokens.first() == Some(&u32::MAX)
    }

    /// Writes `func`'s fingerprint.
    pub fn of(func: &Function, resolver: &dyn Resolver) -> Fingerprint {
        FingerprintWriter::new().write(func, resolver)
    }

    /// The order of two fingerprints when every class reference `r` stands for `class_of(r)`.
    pub fn compare_with(
        &self,
        other: &Fingerprint,
        class_of: impl Fn(FunctionId) -> u32,
    ) -> Ordering {
        self.tokens.cmp(&other.tokens).then_with(|| {
            let left = self.class_refs.iter().map(|&f| class_of(f));
            let right = other.class_refs.iter().map(|&f| class_of(f));
            left.cmp(right)
        })
    }
}

/// The order of two functions on their own: every external name compared by identity.
///
/// This is the order the merge driver uses, before it knows which module functions are equal.
pub fn compare(a: &Function, b: &Function) -> Ordering {
    let mut writer = FingerprintWriter::new();
    let fa = writer.write(a, &IdentityResolver);
    let fb = writer.write(b, &IdentityResolver);
    fa.compare_with(&fb, |f| f.0)
}

// Tags: each marks a choice between alternatives that could otherwise write the same tokens.
const NONE: u32 = 0;
const SOME: u32 = 1;
const NAME_USER: u32 = 1;
const NAME_TESTCASE: u32 = 2;
const NAME_LIBCALL: u32 = 3;
const NAME_KNOWN_SYMBOL: u32 = 4;
const CLASS_REF: u32 = 5;
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
/// map's default (0) means "not met yet".
struct SerialNumbers<K: cranelift_codegen::entity::EntityRef> {
    map: SecondaryMap<K, u32>,
    next: u32,
}

impl<K: cranelift_codegen::entity::EntityRef> SerialNumbers<K> {
    fn new() -> Self {
        SerialNumbers {
            map: SecondaryMap::new(),
            next: 0,
        }
    }

    /// Forgets every number; `count` is the number of entities of this kind in the function,
    /// so that numbering never has to grow the map.
    fn reset(&mut self, count: usize) {
        self.map.clear();
        self.map.resize(count);
        self.next = 0;
    }

    /// The entity's serial number, and whether this is the first time it is met.
    fn number(&mut self, key: K) -> (u32, bool) {
        let slot = &mut self.map[key];
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
    pub fn new() -> Self {
        FingerprintWriter {
            tokens: Vec::new(),
            class_refs: Vec::new(),
            values: SerialNumbers::new(),
            blocks: SerialNumbers::new(),
            to_visit: Vec::new(),
        }
    }

    /// Writes `func`'s fingerprint.
    pub fn write(&mut self, func: &Function, resolver: &dyn Resolver) -> Fingerprint {
        self.walk(func, resolver);
        Fingerprint {
            tokens: self.tokens.clone(),
            class_refs: self.class_refs.clone(),
        }
    }

    /// A cheap hash of `func`: the blocks in the order of the walk, each with its parameter
    /// count and its instructions' opcodes and branch targets; no values, types or fields.
    ///
    /// Law: equal fingerprints ⇒ equal shape hashes. Everything hashed is structural (it does
    /// not depend on entity numbers or layout order), and two functions with equal fingerprints
    /// correspond block for block and instruction for instruction along this walk. The driver
    /// writes full fingerprints only for functions that share a shape hash.
    pub fn shape_hash(&mut self, func: &Function) -> u64 {
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
            for inst in func.layout.block_insts(block) {
                let data = &dfg.insts[inst];
                h = hash::mix(h, data.opcode() as u64);
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
        self.push(ty.index() as u32);
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
        for inst in self.func.layout.block_insts(block) {
            self.instruction(inst);
            count += 1;
        }
        self.w.tokens[count_at] = count;
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
    fn value(&mut self, v: Value) {
        let v = self.func.dfg.resolve_aliases(v);
        let (sn, _) = self.w.values.number(v);
        self.push(sn);
    }

    fn value_def(&mut self, v: Value) {
        self.value(v);
        self.push_type(self.func.dfg.value_type(v));
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
        let data = dfg.insts[inst];
        self.push(data.opcode() as u32);
        let results = dfg.inst_results(inst);
        // The controlling type is the type of a result or of an operand, which are compared with
        // their definitions; it is written again only where there is no result, because asking
        // for it costs a quarter of the walk.
        if results.is_empty() {
            self.push_type(dfg.ctrl_typevar(inst));
        }
        self.instruction_fields(&data);
        self.push(results.len() as u32);
        for &r in results {
            self.value_def(r);
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
                self.push(op as u32);
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
                self.push(cond as u32);
                self.values(&args);
            }
            InstructionData::FuncAddr { func_ref, .. } => self.func_ref(func_ref, RefKind::Address),
            InstructionData::IntAddTrap { args, code, .. } => {
                self.trap_code(Some(code));
                self.values(&args);
            }
            InstructionData::IntCompare { args, cond, .. } => {
                self.push(cond as u32);
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
                self.global_value(global_value)
            }
            InstructionData::UnaryIeee16 { imm, .. } => self.push(u32::from(imm.bits())),
            InstructionData::UnaryIeee32 { imm, .. } => self.push(imm.bits()),
            InstructionData::UnaryIeee64 { imm, .. } => self.push_u64(imm.bits()),
            InstructionData::UnaryImm { imm, .. } => self.push_u64(imm.bits() as u64),
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

    fn name(&mut self, name: &ExternalName, key: NameKey) {
        if let NameKey::Class(id) = key {
            self.push(CLASS_REF);
            self.w.class_refs.push(id);
            return;
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

    /// A global value by its definition. The chain of bases is followed in a loop, not by
    /// recursion, so a long chain cannot overflow the stack.
    fn global_value(&mut self, gv: GlobalValue) {
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
                    // A symbol is an address: always compared by identity.
                    self.name(name, NameKey::Identity);
                }
                GlobalValueData::DynScaleTargetConst { vector_type } => {
                    self.push(GV_DYN_SCALE);
                    self.push_type(vector_type);
                }
            }
        }
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
