//! A generator of random, valid CLIF functions, driven by a *choice sequence*.
//!
//! Every decision the generator takes reads the next number of a `&[u32]` (see [`Choices`]);
//! when the sequence runs out every decision reads 0, and every decision is written so that 0 is
//! the simplest option (fewest blocks, no more instructions, `return`). Proptest generates the
//! sequence as a `Vec<u32>` and shrinks it (dropping numbers, lowering them towards 0), which
//! shrinks the function: a failing case comes out small.
//!
//! What a function may contain:
//! - a signature with a calling convention, a pointer parameter (`i64`, parameter 0), further
//!   parameters and returns of types i8..i64, f32, f64, some with `uext`/`sext`;
//! - one to `max_blocks` blocks with block parameters, ending in `return`, `trap`, `jump`,
//!   `brif` or `br_table`; targets are random non-entry blocks, so there are loops (back edges,
//!   self loops) and sometimes unreachable blocks;
//! - integer arithmetic on i8..i64 (binary, unary, extensions, `udiv`/`urem` with a divisor
//!   made non-zero by `bor 1`), `iconst` with assorted immediates, every `IntCC` of `icmp`,
//!   `select`;
//! - `f32const`/`f64const` (zeros, NaN, infinity, random bits), float arithmetic, every
//!   `FloatCC` of `fcmp`, conversions;
//! - loads and stores through the pointer parameter with assorted `MemFlags` (aligned, readonly,
//!   can_move, little/big endian, notrap, user trap codes, alias regions) and offsets,
//!   extending loads and truncating stores;
//! - stack slots of several sizes and alignments (some with a key), `stack_store`,
//!   `stack_load` (which expand to `stack_addr` plus `store`/`load`) and `stack_addr`;
//! - `trapz`/`trapnz` with reserved and user trap codes;
//! - calls to a fixed set of declared external functions (`%ext0`..`%ext3` and the user name
//!   `u1:7`, or the callees of [`GenConfig`]), sometimes declared twice, `func_addr` and
//!   `call_indirect` (through `func_addr` or the pointer parameter);
//! - cold blocks.
//!
//! A value may be used in every block its definition dominates: the generator first draws the
//! control flow graph, computes dominators on it, and fills the blocks in breadth-first order
//! (dominators first). Unreachable blocks use only their own values.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::types::{F32, F64, I8, I16, I32, I64};
use cranelift_codegen::ir::{
    AbiParam, AliasRegion, AliasRegionData, Block, BlockArg, ExtFuncData, ExternalName, FuncRef,
    Function, InstBuilder, JumpTableData, MemFlagsData, Opcode, SigRef, Signature, StackSlot,
    StackSlotData, StackSlotKey, StackSlotKind, TrapCode, Type, UserExternalName, UserFuncName,
    Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_codegen::settings;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

/// The choice sequence: the generator's (and the mutators') source of decisions.
pub struct Choices<'a> {
    data: &'a [u32],
    pos: usize,
}

impl<'a> Choices<'a> {
    pub fn new(data: &'a [u32]) -> Self {
        Choices { data, pos: 0 }
    }

    /// The next raw number; 0 once the sequence is exhausted.
    pub fn next(&mut self) -> u32 {
        let x = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        x
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        let x = self.next() as usize;
        if n == 0 { 0 } else { x % n }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }

    /// True with the given probability (in percent); false once the sequence is exhausted.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 >= 100 - percent.min(100)
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A random permutation of `0..n` (the identity once the sequence is exhausted).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            p.swap(i, j);
        }
        p
    }
}

pub const INT_TYPES: [Type; 4] = [I8, I16, I32, I64];
pub const FLOAT_TYPES: [Type; 2] = [F32, F64];
pub const ALL_TYPES: [Type; 6] = [I8, I16, I32, I64, F32, F64];

/// Calling conventions a generated signature may have (`preserve_all` is left out: it allows no
/// return values).
pub const CALL_CONVS: [CallConv; 6] = [
    CallConv::SystemV,
    CallConv::Fast,
    CallConv::Tail,
    CallConv::WindowsFastcall,
    CallConv::AppleAarch64,
    CallConv::Winch,
];

/// A function that generated code may call.
#[derive(Clone, Debug)]
pub struct Callee {
    /// Its testcase name (without `%`), or `u<namespace>:<index>` for a user name.
    pub name: String,
    pub sig: Signature,
    pub colocated: bool,
}

/// What the generator may produce.
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub max_blocks: usize,
    pub max_insts: usize,
    /// Functions that may be called (`call`).
    pub callees: Vec<Callee>,
    /// Indices into `callees` of the functions whose address may be taken (`func_addr`).
    pub addr_callees: Vec<usize>,
    /// The function's name.
    pub name: UserFuncName,
    /// The signature to use; a random one when `None`.
    pub signature: Option<Signature>,
}

impl Default for GenConfig {
    fn default() -> Self {
        let callees = fixed_externals();
        let addr_callees = (0..callees.len()).collect();
        GenConfig {
            max_blocks: 6,
            max_insts: 8,
            callees,
            addr_callees,
            name: UserFuncName::testcase("gen"),
            signature: None,
        }
    }
}

fn sig(params: &[AbiParam], returns: &[AbiParam], cc: CallConv) -> Signature {
    let mut s = Signature::new(cc);
    s.params.extend_from_slice(params);
    s.returns.extend_from_slice(returns);
    s
}

/// The fixed external functions `%ext0`..`%ext3`.
pub fn fixed_externals() -> Vec<Callee> {
    vec![
        Callee {
            name: "ext0".into(),
            sig: sig(
                &[AbiParam::new(I64)],
                &[AbiParam::new(I64)],
                CallConv::SystemV,
            ),
            colocated: false,
        },
        Callee {
            name: "ext1".into(),
            sig: sig(
                &[AbiParam::new(I32).sext(), AbiParam::new(I16).uext()],
                &[AbiParam::new(I32).sext()],
                CallConv::SystemV,
            ),
            colocated: false,
        },
        Callee {
            name: "ext2".into(),
            sig: sig(
                &[AbiParam::new(F64), AbiParam::new(F32)],
                &[AbiParam::new(F64)],
                CallConv::Fast,
            ),
            colocated: false,
        },
        Callee {
            name: "ext3".into(),
            sig: sig(&[], &[], CallConv::SystemV),
            colocated: true,
        },
        // And one with a user name (`u1:7`), which CLIF interns per function.
        Callee {
            name: "u1:7".into(),
            sig: sig(
                &[AbiParam::new(I64), AbiParam::new(I8)],
                &[],
                CallConv::SystemV,
            ),
            colocated: false,
        },
    ]
}

/// `name` as an external name declared in `func`: `u<ns>:<index>` is a user name, anything
/// else a testcase name.
pub fn external_name(func: &mut Function, name: &str) -> ExternalName {
    let user = name
        .strip_prefix('u')
        .and_then(|r| r.split_once(':'))
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match user {
        Some((namespace, index)) => ExternalName::User(
            func.declare_imported_user_function(UserExternalName::new(namespace, index)),
        ),
        None => ExternalName::testcase(name.as_bytes()),
    }
}

/// The target configuration `FunctionBuilder::finalize` needs.
pub fn frontend_config() -> TargetFrontendConfig {
    TargetFrontendConfig {
        default_call_conv: CallConv::SystemV,
        pointer_width: target_lexicon::PointerWidth::U64,
        page_size_align_log2: 12,
    }
}

/// Runs the CLIF verifier (no ISA, default flags).
pub fn verify(func: &Function) -> Result<(), String> {
    let flags = settings::Flags::new(settings::builder());
    cranelift_codegen::verify_function(func, &flags).map_err(|e| e.to_string())
}

/// Panics with the function's text when it does not verify.
pub fn assert_valid(func: &Function, what: &str) {
    if let Err(e) = verify(func) {
        panic!("{what} does not verify:\n{e}\n{}", func.display());
    }
}

fn int_param(ch: &mut Choices, ty: Type) -> AbiParam {
    let p = AbiParam::new(ty);
    if !ty.is_int() {
        return p;
    }
    match ch.below(5) {
        3 => p.uext(),
        4 => p.sext(),
        _ => p,
    }
}

/// A random signature; parameter 0 is the pointer (`i64`) when `with_pointer`.
pub fn random_signature(ch: &mut Choices, with_pointer: bool) -> Signature {
    let mut s = Signature::new(ch.pick(&CALL_CONVS));
    if with_pointer {
        s.params.push(AbiParam::new(I64));
    }
    for _ in 0..ch.below(4) {
        let ty = ch.pick(&ALL_TYPES);
        s.params.push(int_param(ch, ty));
    }
    for _ in 0..ch.below(3) {
        let ty = ch.pick(&ALL_TYPES);
        s.returns.push(int_param(ch, ty));
    }
    s
}

/// How a block ends, drawn before any block is filled.
#[derive(Clone, Debug)]
enum Term {
    Return,
    Trap(TrapCode),
    Jump(usize),
    Brif(usize, usize),
    BrTable(usize, Vec<usize>),
}

impl Term {
    fn targets(&self) -> Vec<usize> {
        match self {
            Term::Return | Term::Trap(_) => vec![],
            Term::Jump(t) => vec![*t],
            Term::Brif(t, e) => vec![*t, *e],
            Term::BrTable(d, es) => std::iter::once(*d).chain(es.iter().copied()).collect(),
        }
    }
}

pub fn random_trap_code(ch: &mut Choices) -> TrapCode {
    match ch.below(4) {
        0 => TrapCode::unwrap_user(1 + ch.below(250) as u8),
        1 => TrapCode::unwrap_user(1 + ch.below(3) as u8),
        2 => ch.pick(&[TrapCode::INTEGER_OVERFLOW, TrapCode::HEAP_OUT_OF_BOUNDS]),
        _ => ch.pick(TrapCode::non_user_traps()),
    }
}

/// Memory flags; `readonly` only for loads (the verifier rejects it on stores).
pub fn random_mem_flags(ch: &mut Choices, load: bool) -> MemFlagsData {
    let mut f = MemFlagsData::new();
    if ch.chance(30) {
        f.set_aligned();
    }
    if ch.chance(15) && load {
        f.set_readonly();
    }
    if ch.chance(10) {
        f.set_can_move();
    }
    match ch.below(8) {
        6 => f.set_endianness(cranelift_codegen::ir::Endianness::Little),
        7 => f.set_endianness(cranelift_codegen::ir::Endianness::Big),
        _ => {}
    }
    match ch.below(10) {
        0..=3 => f.set_notrap(),
        4 | 5 => f = f.with_trap_code(Some(random_trap_code(ch))),
        _ => {}
    }
    f
}

/// An integer immediate for `ty`, zero-extended as the verifier wants it.
pub fn random_imm(ch: &mut Choices, ty: Type) -> i64 {
    let x: i64 = match ch.below(10) {
        0 => 0,
        1 => 1,
        2 => -1,
        3 => 2,
        4 => 7,
        5 => 100,
        6 => i64::MIN,
        7 => i64::MAX,
        8 => -(ch.below(1000) as i64),
        _ => (u64::from(ch.next()) | (u64::from(ch.next()) << 32)) as i64,
    };
    mask_imm(x, ty)
}

pub fn mask_imm(x: i64, ty: Type) -> i64 {
    let bits = ty.bits();
    if bits >= 64 {
        x
    } else {
        ((x as u64) & ((1u64 << bits) - 1)) as i64
    }
}

pub fn random_f32_bits(ch: &mut Choices) -> u32 {
    match ch.below(8) {
        0 => 0.0f32.to_bits(),
        1 => (-0.0f32).to_bits(),
        2 => 1.0f32.to_bits(),
        3 => 1.5f32.to_bits(),
        4 => f32::NAN.to_bits(),
        5 => f32::INFINITY.to_bits(),
        6 => (-2.5f32).to_bits(),
        _ => ch.next(),
    }
}

pub fn random_f64_bits(ch: &mut Choices) -> u64 {
    match ch.below(8) {
        0 => 0.0f64.to_bits(),
        1 => (-0.0f64).to_bits(),
        2 => 1.0f64.to_bits(),
        3 => 1.5f64.to_bits(),
        4 => f64::NAN.to_bits(),
        5 => f64::NEG_INFINITY.to_bits(),
        6 => 1e300f64.to_bits(),
        _ => u64::from(ch.next()) | (u64::from(ch.next()) << 32),
    }
}

pub const INT_BINARY: [Opcode; 15] = [
    Opcode::Iadd,
    Opcode::Isub,
    Opcode::Imul,
    Opcode::Band,
    Opcode::Bor,
    Opcode::Bxor,
    Opcode::Ishl,
    Opcode::Ushr,
    Opcode::Sshr,
    Opcode::Rotl,
    Opcode::Rotr,
    Opcode::Smin,
    Opcode::Umax,
    Opcode::Smax,
    Opcode::Umulhi,
];
pub const SHIFTS: [Opcode; 5] = [
    Opcode::Ishl,
    Opcode::Ushr,
    Opcode::Sshr,
    Opcode::Rotl,
    Opcode::Rotr,
];
pub const INT_UNARY: [Opcode; 7] = [
    Opcode::Bnot,
    Opcode::Ineg,
    Opcode::Iabs,
    Opcode::Clz,
    Opcode::Ctz,
    Opcode::Popcnt,
    Opcode::Bitrev,
];
pub const FLOAT_BINARY: [Opcode; 6] = [
    Opcode::Fadd,
    Opcode::Fsub,
    Opcode::Fmul,
    Opcode::Fdiv,
    Opcode::Fmin,
    Opcode::Fmax,
];

/// Generates one function from the choice sequence.
pub fn generate(data: &[u32], config: &GenConfig) -> Function {
    generate_with(&mut Choices::new(data), config)
}

pub fn generate_with(ch: &mut Choices, config: &GenConfig) -> Function {
    let signature = match &config.signature {
        Some(s) => s.clone(),
        None => random_signature(ch, true),
    };
    assert!(
        signature.params.first().map(|p| p.value_type) == Some(I64),
        "parameter 0 must be the pointer"
    );
    let mut func = Function::with_name_signature(config.name.clone(), signature.clone());
    let mut ctx = FunctionBuilderContext::new();

    // The control flow graph.
    let n = 1 + ch.below(config.max_blocks.max(1));
    let mut params: Vec<Vec<Type>> = vec![signature.params.iter().map(|p| p.value_type).collect()];
    for b in 1..n {
        // Often no parameters, or the same types as an earlier block, so that blocks share
        // parameter types (a branch may then be retargeted).
        let tys = match ch.below(5) {
            0 | 1 => vec![],
            2 if b > 1 => params[1 + ch.below(b - 1)].clone(),
            _ => {
                let k = 1 + ch.below(2);
                (0..k).map(|_| ch.pick(&ALL_TYPES)).collect()
            }
        };
        params.push(tys);
    }
    let mut terms = Vec::with_capacity(n);
    for i in 0..n {
        let target = |ch: &mut Choices| {
            if i + 1 < n && ch.chance(50) {
                i + 1
            } else {
                1 + ch.below(n - 1)
            }
        };
        let term = if n == 1 {
            if ch.chance(10) {
                Term::Trap(random_trap_code(ch))
            } else {
                Term::Return
            }
        } else {
            match ch.below(100) {
                0..=21 => Term::Return,
                22..=25 => Term::Trap(random_trap_code(ch)),
                26..=50 => Term::Jump(target(ch)),
                51..=85 => {
                    let t = target(ch);
                    Term::Brif(t, target(ch))
                }
                _ => {
                    let d = target(ch);
                    let k = ch.below(5);
                    Term::BrTable(d, (0..k).map(|_| target(ch)).collect())
                }
            }
        };
        terms.push(term);
    }

    // Reachability, breadth-first order and dominators (bit sets; n <= 64).
    let mut order = vec![0usize];
    let mut reachable = vec![false; n];
    reachable[0] = true;
    let mut at = 0;
    while at < order.len() {
        for t in terms[order[at]].targets() {
            if !reachable[t] {
                reachable[t] = true;
                order.push(t);
            }
        }
        at += 1;
    }
    let reachable_mask: u64 = (0..n).filter(|&b| reachable[b]).map(|b| 1u64 << b).sum();
    let mut dom: Vec<u64> = (0..n)
        .map(|b| {
            if b == 0 || !reachable[b] {
                1 << b
            } else {
                reachable_mask
            }
        })
        .collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for b in 0..n {
        if reachable[b] {
            for t in terms[b].targets() {
                preds[t].push(b);
            }
        }
    }
    loop {
        let mut changed = false;
        for &b in order.iter().skip(1) {
            let meet = preds[b].iter().fold(reachable_mask, |acc, &p| acc & dom[p]);
            let new = meet | (1 << b);
            if new != dom[b] {
                dom[b] = new;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    order.extend((0..n).filter(|&b| !reachable[b]));

    {
        let builder = FunctionBuilder::new(&mut func, &mut ctx);
        let mut g = Gen {
            ch,
            b: builder,
            config,
            avail: Vec::new(),
            fn_refs: vec![None; config.callees.len()],
            sig_refs: vec![None; config.callees.len()],
            slots: Vec::new(),
            ptr: None,
        };
        let blocks: Vec<Block> = (0..n).map(|_| g.b.create_block()).collect();
        g.b.append_block_params_for_function_params(blocks[0]);
        for b in 1..n {
            for &ty in &params[b] {
                g.b.append_block_param(blocks[b], ty);
            }
        }
        let entry_ptr = g.b.block_params(blocks[0])[0];
        let mut defs: Vec<Vec<Value>> = vec![Vec::new(); n];
        for &bi in &order {
            let block = blocks[bi];
            g.b.switch_to_block(block);
            if bi != 0 && g.ch.chance(10) {
                g.b.set_cold_block(block);
            }
            g.avail.clear();
            if reachable[bi] {
                for (d, vals) in defs.iter().enumerate() {
                    if d != bi && dom[bi] & (1 << d) != 0 {
                        g.avail.extend_from_slice(vals);
                    }
                }
                g.ptr = Some(entry_ptr);
            } else {
                g.ptr = None;
            }
            let own_params = g.b.block_params(block).to_vec();
            let first_own = g.avail.len();
            g.avail.extend_from_slice(&own_params);
            let count = g.ch.below(config.max_insts + 1);
            for _ in 0..count {
                g.instruction();
            }
            g.terminator(&terms[bi], &blocks, &params);
            defs[bi] = g.avail[first_own..].to_vec();
        }
        g.b.seal_all_blocks();
        g.b.finalize(frontend_config());
    }
    func
}

struct Gen<'c, 'd, 'f> {
    ch: &'c mut Choices<'d>,
    b: FunctionBuilder<'f>,
    config: &'c GenConfig,
    /// Values usable at the current point.
    avail: Vec<Value>,
    fn_refs: Vec<Option<FuncRef>>,
    sig_refs: Vec<Option<SigRef>>,
    /// Stack slots and their sizes.
    slots: Vec<(StackSlot, u32)>,
    /// The pointer parameter, when the current block may use it.
    ptr: Option<Value>,
}

/// User ids of the alias regions a generated function may use.
pub const ALIAS_REGION_IDS: [u32; 3] = [1, 7, 1000];

impl Gen<'_, '_, '_> {
    fn ty(&self, v: Value) -> Type {
        self.b.func.dfg.value_type(v)
    }

    fn add(&mut self, v: Value) -> Value {
        self.avail.push(v);
        v
    }

    /// A new constant of type `ty`.
    fn constant(&mut self, ty: Type) -> Value {
        let v = match ty {
            F32 => {
                let bits = random_f32_bits(self.ch);
                self.b.ins().f32const(Ieee32::with_bits(bits))
            }
            F64 => {
                let bits = random_f64_bits(self.ch);
                self.b.ins().f64const(Ieee64::with_bits(bits))
            }
            _ => {
                let imm = random_imm(self.ch, ty);
                self.b.ins().iconst(ty, imm)
            }
        };
        self.add(v)
    }

    /// A value of type `ty`: usually one already available, else a new constant.
    fn get(&mut self, ty: Type) -> Value {
        let candidates: Vec<Value> = self
            .avail
            .iter()
            .copied()
            .filter(|&v| self.ty(v) == ty)
            .collect();
        if !candidates.is_empty() && !self.ch.chance(20) {
            return candidates[self.ch.below(candidates.len())];
        }
        self.constant(ty)
    }

    /// Some integer value, of any integer type.
    fn any_int(&mut self) -> Value {
        let candidates: Vec<Value> = self
            .avail
            .iter()
            .copied()
            .filter(|&v| self.ty(v).is_int())
            .collect();
        if !candidates.is_empty() && !self.ch.chance(20) {
            return candidates[self.ch.below(candidates.len())];
        }
        let ty = self.ch.pick(&INT_TYPES);
        self.constant(ty)
    }

    fn int_ty(&mut self) -> Type {
        self.ch.pick(&INT_TYPES)
    }

    fn float_ty(&mut self) -> Type {
        self.ch.pick(&FLOAT_TYPES)
    }

    fn results(&mut self, inst: cranelift_codegen::ir::Inst) {
        let rs = self.b.inst_results(inst).to_vec();
        self.avail.extend(rs);
    }

    fn func_ref(&mut self, i: usize) -> FuncRef {
        if let Some(f) = self.fn_refs[i] {
            // Now and then a second declaration of the same function.
            if !self.ch.chance(10) {
                return f;
            }
        }
        let callee = &self.config.callees[i];
        let sig = self.b.import_signature(callee.sig.clone());
        let name = external_name(self.b.func, &callee.name);
        let f = self.b.import_function(ExtFuncData {
            name,
            signature: sig,
            colocated: callee.colocated,
            patchable: false,
        });
        self.fn_refs[i] = Some(f);
        f
    }

    fn sig_ref(&mut self, i: usize) -> SigRef {
        if let Some(s) = self.sig_refs[i] {
            return s;
        }
        let s = self.b.import_signature(self.config.callees[i].sig.clone());
        self.sig_refs[i] = Some(s);
        s
    }

    fn args_for(&mut self, sig: &Signature) -> Vec<Value> {
        let tys: Vec<Type> = sig.params.iter().map(|p| p.value_type).collect();
        tys.into_iter().map(|t| self.get(t)).collect()
    }

    fn slot(&mut self) -> (StackSlot, u32) {
        if self.slots.is_empty() || (self.slots.len() < 3 && self.ch.chance(30)) {
            let size = self.ch.pick(&[8u32, 16, 24, 32, 64, 100]);
            let align = self.ch.below(5) as u8;
            let data = if self.ch.chance(15) {
                let key = StackSlotKey::new(self.ch.next() as u64);
                StackSlotData::new_with_key(StackSlotKind::ExplicitSlot, size, align, key)
            } else {
                StackSlotData::new(StackSlotKind::ExplicitSlot, size, align)
            };
            let ss = self.b.create_sized_stack_slot(data);
            self.slots.push((ss, size));
        }
        let i = self.ch.below(self.slots.len());
        self.slots[i]
    }

    /// Sometimes puts the access in an alias region (declared on first use).
    fn region(&mut self, flags: MemFlagsData) -> MemFlagsData {
        if !self.ch.chance(20) {
            return flags;
        }
        let user_id = self.ch.pick(&ALIAS_REGION_IDS);
        let region: AliasRegion = self.b.func.dfg.alias_regions.insert(AliasRegionData {
            user_id,
            description: format!("region {user_id}").into(),
        });
        flags.with_alias_region(Some(region))
    }

    fn offset(&mut self) -> i32 {
        self.ch.pick(&[0, 0, 1, 4, 8, 16, -8, 100, 4096, -65536])
    }

    fn instruction(&mut self) {
        match self.ch.below(20) {
            0 => {
                let ty = self.int_ty();
                self.constant(ty);
            }
            1..=3 => {
                let op = self.ch.pick(&INT_BINARY);
                let ty = self.int_ty();
                let x = self.get(ty);
                let y = if SHIFTS.contains(&op) && self.ch.chance(30) {
                    self.any_int()
                } else {
                    self.get(ty)
                };
                let (inst, _) = self.b.ins().Binary(op, ty, x, y);
                self.results(inst);
            }
            4 => {
                let op = self.ch.pick(&INT_UNARY);
                let ty = self.int_ty();
                let x = self.get(ty);
                let (inst, _) = self.b.ins().Unary(op, ty, x);
                self.results(inst);
            }
            5 => {
                // Extension or reduction between two integer types.
                let a = self.ch.below(4);
                let b = self.ch.below(4);
                if a == b {
                    return;
                }
                let (narrow, wide) = (INT_TYPES[a.min(b)], INT_TYPES[a.max(b)]);
                let v = if a < b {
                    let x = self.get(narrow);
                    if self.ch.chance(50) {
                        self.b.ins().sextend(wide, x)
                    } else {
                        self.b.ins().uextend(wide, x)
                    }
                } else {
                    let x = self.get(wide);
                    self.b.ins().ireduce(narrow, x)
                };
                self.add(v);
            }
            6 => {
                let cc = self.ch.pick(IntCC::all());
                let ty = self.int_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let v = self.b.ins().icmp(cc, x, y);
                self.add(v);
            }
            7 => {
                let c = self.any_int();
                let ty = self.ch.pick(&ALL_TYPES);
                let x = self.get(ty);
                let y = self.get(ty);
                let v = self.b.ins().select(c, x, y);
                self.add(v);
            }
            8 => {
                let ty = self.float_ty();
                self.constant(ty);
            }
            9 => {
                let op = self.ch.pick(&FLOAT_BINARY);
                let ty = self.float_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let (inst, _) = self.b.ins().Binary(op, ty, x, y);
                self.results(inst);
            }
            10 => {
                let cc = self.ch.pick(FloatCC::all());
                let ty = self.float_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let v = self.b.ins().fcmp(cc, x, y);
                self.add(v);
            }
            11 => {
                let v = match self.ch.below(4) {
                    0 => {
                        let x = self.get(F32);
                        self.b.ins().fpromote(F64, x)
                    }
                    1 => {
                        let x = self.get(F64);
                        self.b.ins().fdemote(F32, x)
                    }
                    2 => {
                        let ity = self.ch.pick(&[I32, I64]);
                        let fty = self.float_ty();
                        let x = self.get(ity);
                        if self.ch.chance(50) {
                            self.b.ins().fcvt_from_sint(fty, x)
                        } else {
                            self.b.ins().fcvt_from_uint(fty, x)
                        }
                    }
                    _ => {
                        let ity = self.ch.pick(&[I32, I64]);
                        let fty = self.float_ty();
                        let x = self.get(fty);
                        if self.ch.chance(50) {
                            self.b.ins().fcvt_to_sint_sat(ity, x)
                        } else {
                            self.b.ins().fcvt_to_uint_sat(ity, x)
                        }
                    }
                };
                self.add(v);
            }
            12 => self.load(),
            13 => self.store(),
            14 => self.stack(),
            15 => {
                let c = self.any_int();
                let code = random_trap_code(self.ch);
                if self.ch.chance(50) {
                    self.b.ins().trapz(c, code);
                } else {
                    self.b.ins().trapnz(c, code);
                }
            }
            16 | 17 => {
                if self.config.callees.is_empty() {
                    return;
                }
                let i = self.ch.below(self.config.callees.len());
                let f = self.func_ref(i);
                let sig = self.config.callees[i].sig.clone();
                let args = self.args_for(&sig);
                let inst = self.b.ins().call(f, &args);
                self.results(inst);
            }
            18 => self.indirect(),
            _ => {
                // Division by a divisor made non-zero.
                let ty = self.int_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let one = self.b.ins().iconst(ty, 1);
                let d = self.b.ins().bor(y, one);
                let v = if self.ch.chance(50) {
                    self.b.ins().udiv(x, d)
                } else {
                    self.b.ins().urem(x, d)
                };
                self.add(v);
            }
        }
    }

    fn load(&mut self) {
        let Some(p) = self.ptr else { return };
        let flags = random_mem_flags(self.ch, true);
        let flags = self.region(flags);
        let off = self.offset();
        let v = match self.ch.below(8) {
            0 => {
                let ty = self.ch.pick(&[I16, I32, I64]);
                if self.ch.chance(50) {
                    self.b.ins().uload8(ty, flags, p, off)
                } else {
                    self.b.ins().sload8(ty, flags, p, off)
                }
            }
            1 => {
                let ty = self.ch.pick(&[I32, I64]);
                if self.ch.chance(50) {
                    self.b.ins().uload16(ty, flags, p, off)
                } else {
                    self.b.ins().sload16(ty, flags, p, off)
                }
            }
            2 => {
                if self.ch.chance(50) {
                    self.b.ins().uload32(flags, p, off)
                } else {
                    self.b.ins().sload32(flags, p, off)
                }
            }
            _ => {
                let ty = self.ch.pick(&ALL_TYPES);
                self.b.ins().load(ty, flags, p, off)
            }
        };
        self.add(v);
    }

    fn store(&mut self) {
        let Some(p) = self.ptr else { return };
        let flags = random_mem_flags(self.ch, false);
        let flags = self.region(flags);
        let off = self.offset();
        match self.ch.below(6) {
            0 => {
                let ty = self.ch.pick(&[I16, I32, I64]);
                let x = self.get(ty);
                self.b.ins().istore8(flags, x, p, off);
            }
            1 => {
                let ty = self.ch.pick(&[I32, I64]);
                let x = self.get(ty);
                self.b.ins().istore16(flags, x, p, off);
            }
            2 => {
                let x = self.get(I64);
                self.b.ins().istore32(flags, x, p, off);
            }
            _ => {
                let ty = self.ch.pick(&ALL_TYPES);
                let x = self.get(ty);
                self.b.ins().store(flags, x, p, off);
            }
        }
    }

    fn stack(&mut self) {
        let (ss, size) = self.slot();
        let ty = self.ch.pick(&ALL_TYPES);
        let room = size - ty.bytes();
        let off = self.ch.below(room as usize + 1) as i32;
        match self.ch.below(3) {
            0 => {
                let x = self.get(ty);
                self.b.ins().stack_store(I64, x, ss, off);
            }
            1 => {
                let v = self.b.ins().stack_load(I64, ty, ss, off);
                self.add(v);
            }
            _ => {
                let v = self.b.ins().stack_addr(I64, ss, off);
                self.add(v);
            }
        }
    }

    fn indirect(&mut self) {
        let through_ptr = self.ptr.is_some() && self.ch.chance(25);
        if self.config.addr_callees.is_empty() && !through_ptr {
            return;
        }
        let i = if through_ptr {
            self.ch.below(self.config.callees.len())
        } else {
            self.config.addr_callees[self.ch.below(self.config.addr_callees.len())]
        };
        let callee = if through_ptr {
            self.ptr.unwrap()
        } else {
            let f = self.func_ref(i);
            let a = self.b.ins().func_addr(I64, f);
            self.add(a)
        };
        if self.ch.chance(20) {
            // Only the address.
            return;
        }
        let s = self.sig_ref(i);
        let sig = self.config.callees[i].sig.clone();
        let args = self.args_for(&sig);
        let inst = self.b.ins().call_indirect(s, callee, &args);
        self.results(inst);
    }

    fn block_args(&mut self, tys: &[Type]) -> Vec<BlockArg> {
        tys.iter().map(|&t| BlockArg::Value(self.get(t))).collect()
    }

    fn terminator(&mut self, term: &Term, blocks: &[Block], params: &[Vec<Type>]) {
        match term {
            Term::Return => {
                let tys: Vec<Type> = self
                    .b
                    .func
                    .signature
                    .returns
                    .iter()
                    .map(|p| p.value_type)
                    .collect();
                let vals: Vec<Value> = tys.into_iter().map(|t| self.get(t)).collect();
                self.b.ins().return_(&vals);
            }
            Term::Trap(code) => {
                self.b.ins().trap(*code);
            }
            Term::Jump(t) => {
                let args = self.block_args(&params[*t]);
                self.b.ins().jump(blocks[*t], &args);
            }
            Term::Brif(t, e) => {
                let c = self.any_int();
                let targs = self.block_args(&params[*t]);
                let eargs = self.block_args(&params[*e]);
                self.b.ins().brif(c, blocks[*t], &targs, blocks[*e], &eargs);
            }
            Term::BrTable(d, es) => {
                let index = self.get(I32);
                let dargs = self.block_args(&params[*d]);
                let def = self.b.func.dfg.block_call(blocks[*d], &dargs);
                let mut calls = Vec::new();
                for &e in es {
                    let args = self.block_args(&params[e]);
                    calls.push(self.b.func.dfg.block_call(blocks[e], &args));
                }
                let jt = self.b.create_jump_table(JumpTableData::new(def, &calls));
                self.b.ins().br_table(index, jt);
            }
        }
    }
}

/// `n` deterministic pseudo-random choices (xorshift), for tests that need many inputs
/// without proptest.
pub fn pseudo_random_choices(seed: &mut u64, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as u32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn generated_functions_verify(data in prop::collection::vec(any::<u32>(), 0..600)) {
            let func = generate(&data, &GenConfig::default());
            assert_valid(&func, "generated function");
        }
    }

    #[test]
    fn empty_choice_sequence_is_the_simplest_function() {
        let func = generate(&[], &GenConfig::default());
        assert_valid(&func, "generated function");
        assert_eq!(func.layout.blocks().count(), 1);
    }

    /// The generator reaches every feature it claims to cover.
    #[test]
    fn generator_covers_its_features() {
        use std::collections::BTreeSet;
        let mut opcodes = BTreeSet::new();
        let mut int_ccs = BTreeSet::new();
        let mut float_ccs = BTreeSet::new();
        let mut multi_block = 0;
        let mut block_params = 0;
        let (mut with_regions, mut with_user_names, mut with_cold, mut with_keys) = (0, 0, 0, 0);
        let (mut with_big, mut with_little, mut with_can_move, mut with_readonly) = (0, 0, 0, 0);
        let (mut with_notrap, mut with_user_traps, mut with_uext, mut with_sext) = (0, 0, 0, 0);
        let mut seed = 0x1234_5678_u64;
        for _ in 0..400 {
            let data = pseudo_random_choices(&mut seed, 600);
            let func = generate(&data, &GenConfig::default());
            assert_valid(&func, "generated function");
            let text = func.display().to_string();
            for (needle, count) in [
                ("region", &mut with_regions),
                ("u1:7", &mut with_user_names),
                ("cold", &mut with_cold),
                ("key =", &mut with_keys),
                (" big ", &mut with_big),
                (" little ", &mut with_little),
                (" can_move", &mut with_can_move),
                (" readonly", &mut with_readonly),
                (" notrap", &mut with_notrap),
                (" user", &mut with_user_traps),
                (" uext", &mut with_uext),
                (" sext", &mut with_sext),
            ] {
                *count += text.contains(needle) as usize;
            }
            if func.layout.blocks().count() > 1 {
                multi_block += 1;
            }
            for block in func.layout.blocks() {
                if block != func.layout.entry_block().unwrap()
                    && !func.dfg.block_params(block).is_empty()
                {
                    block_params += 1;
                }
                for inst in func.layout.block_insts(block) {
                    let data = func.dfg.insts[inst];
                    opcodes.insert(format!("{}", data.opcode()));
                    if let Some(cc) = data.cond_code() {
                        int_ccs.insert(cc.to_string());
                    }
                    if let Some(cc) = data.fp_cond_code() {
                        float_ccs.insert(cc.to_string());
                    }
                }
            }
        }
        for op in [
            "jump",
            "brif",
            "br_table",
            "return",
            "trap",
            "trapz",
            "trapnz",
            "iconst",
            "iadd",
            "isub",
            "imul",
            "band",
            "bor",
            "bxor",
            "ishl",
            "ushr",
            "sshr",
            "udiv",
            "urem",
            "icmp",
            "select",
            "f32const",
            "f64const",
            "fadd",
            "fmul",
            "fcmp",
            "load",
            "store",
            "uload8",
            "sload16",
            "istore8",
            "stack_addr",
            "call",
            "func_addr",
            "call_indirect",
            "uextend",
            "sextend",
            "ireduce",
        ] {
            assert!(opcodes.contains(op), "the generator never produced {op}");
        }
        assert_eq!(int_ccs.len(), IntCC::all().len(), "every IntCC");
        assert_eq!(float_ccs.len(), FloatCC::all().len(), "every FloatCC");
        for (what, count) in [
            ("alias regions", with_regions),
            ("user-named callees", with_user_names),
            ("cold blocks", with_cold),
            ("stack slot keys", with_keys),
            ("big-endian accesses", with_big),
            ("little-endian accesses", with_little),
            ("can_move accesses", with_can_move),
            ("readonly loads", with_readonly),
            ("notrap accesses", with_notrap),
            ("user trap codes", with_user_traps),
            ("uext parameters", with_uext),
            ("sext parameters", with_sext),
        ] {
            assert!(count >= 20, "only {count} of 400 functions with {what}");
        }
        assert!(
            multi_block > 200,
            "{multi_block} multi-block functions of 400"
        );
        assert!(block_params > 100, "{block_params} blocks with parameters");
    }
}
