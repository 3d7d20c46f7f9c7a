//! A generator of small *modules* whose functions call one another and always terminate, for
//! differential execution (`tests/differential.rs`): the merged module must do what the
//! original does.
//!
//! A module has `k` (2 to `max_base`) base functions `f0..` and, for each, three more:
//! - `g_i`: `f_i` renumbered (see `mutate::renumber`), where each declaration of a callee `f_j`
//!   (or its alias `a_j`) is, at random, pointed at `g_j` instead: the same function, which the
//!   merge should find (calls included, recursion included);
//! - `h_i`: `f_i` with one `iconst` changed: a near-copy, which must not merge with `f_i`;
//! - `k_i`: `f_i` renumbered, calling `h_j` wherever `f_i` calls `f_j`: the same tokens as `f_i`
//!   but other callees.
//!
//! Linkages are random (export, hidden, local, preemptible), some `f_i` have an alias `a_i`
//! that others call, and (for the interpreter) some calls go to imports `x0`, `x1`.
//!
//! Every function's parameter 0 is an `i64` *depth*. The entry block masks it
//! (`band_imm d, DEPTH_MASK`) and branches on it: at 0 the function computes a result without
//! calling; otherwise it calls module functions (directly, or through `func_addr` and
//! `call_indirect`) with depth `d - 1`, so that every chain of calls ends within `DEPTH_MASK + 1`
//! levels, self- and mutual recursion included. Loops count up to a constant bound. The
//! constants that keep calls and loops bounded are in `*_imm` instructions, so that changing an
//! `iconst` (`h_i`) cannot make a function run forever.
//!
//! Two flavours ([`ModGenConfig`]):
//! - for the interpreter: parameters and results of types i8..i64, f32, f64; integer and float
//!   arithmetic, conversions, instructions that trap (`trapnz`, unguarded division, `fcvt_to_sint`),
//!   stack slots, the `fast` and `tail` calling conventions and `return_call`;
//! - native: every parameter and the one result `i64`, the host's calling convention, and
//!   nothing that traps, so that the code can be compiled and called directly.

use super::r#gen::{Choices, assert_valid, frontend_config, random_f32_bits, random_f64_bits};
use super::mutate::renumber;
use clif_merge::{Alias, ClifModule, FuncName, SymbolLinkage};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::types::{F32, F64, I8, I16, I32, I64};
use cranelift_codegen::ir::{
    AbiParam, ExtFuncData, ExternalName, FuncRef, Function, InstBuilder, MemFlagsData, Opcode,
    SigRef, Signature, StackSlot, StackSlotData, StackSlotKind, TrapCode, Type, UserFuncName,
    Value,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use std::collections::HashMap;

/// The mask of the depth parameter: calls nest at most `DEPTH_MASK + 1` deep.
pub const DEPTH_MASK: i64 = 3;

/// What the module generator may produce.
#[derive(Clone, Debug)]
pub struct ModGenConfig {
    /// All-`i64` signatures with one result, the host's calling convention, no traps.
    pub native: bool,
    /// The calling convention of native functions.
    pub call_conv: CallConv,
    /// Base functions: 2 to `max_base`.
    pub max_base: usize,
    /// Instructions per straight-line stretch: 0 to `max_ops`.
    pub max_ops: usize,
    /// Add the families of functions that similar merging's kinds of holes meet
    /// ([`similar_hole_families`]).
    pub similar_holes: bool,
    /// Add, per base function, a family whose members differ in 7 to 20 constants and callees
    /// ([`many_differing_holes`]).
    pub many_holes: bool,
}

impl ModGenConfig {
    pub fn interpreter() -> Self {
        ModGenConfig {
            native: false,
            call_conv: CallConv::SystemV,
            max_base: 4,
            max_ops: 5,
            similar_holes: false,
            many_holes: false,
        }
    }

    pub fn native(call_conv: CallConv) -> Self {
        ModGenConfig {
            native: true,
            call_conv,
            max_base: 4,
            max_ops: 5,
            similar_holes: false,
            many_holes: false,
        }
    }

    /// This flavour with the families of [`many_differing_holes`].
    pub fn with_many_holes(mut self) -> Self {
        self.many_holes = true;
        self
    }

    /// This flavour with the families of [`similar_hole_families`].
    pub fn with_similar_holes(mut self) -> Self {
        self.similar_holes = true;
        self
    }
}

/// A generated module.
#[derive(Clone, Debug)]
pub struct GenModule {
    pub functions: Vec<(Function, SymbolLinkage)>,
    pub aliases: Vec<Alias>,
    /// The number of base functions (`f0..`).
    pub base: usize,
}

impl GenModule {
    pub fn module(&self) -> ClifModule {
        let mut module = ClifModule::new();
        for (f, linkage) in &self.functions {
            module.define(f.clone(), *linkage, None).unwrap();
        }
        for alias in &self.aliases {
            module.add_alias(alias.clone()).unwrap();
        }
        module
    }
}

/// A module function that generated code may call.
#[derive(Clone, Debug)]
struct Callee {
    /// The name called (`f{j}` or the alias `a{j}`).
    name: String,
    sig: Signature,
}

const SCALARS: [Type; 6] = [I8, I16, I32, I64, F32, F64];

fn random_linkage(ch: &mut Choices) -> SymbolLinkage {
    match ch.below(20) {
        0..=8 => SymbolLinkage::Export,
        9..=11 => SymbolLinkage::Hidden,
        12..=15 => SymbolLinkage::Local,
        _ => SymbolLinkage::Preemptible,
    }
}

fn signature(ch: &mut Choices, cfg: &ModGenConfig) -> Signature {
    if cfg.native {
        let mut s = Signature::new(cfg.call_conv);
        for _ in 0..1 + ch.below(3) {
            s.params.push(AbiParam::new(I64));
        }
        s.returns.push(AbiParam::new(I64));
        return s;
    }
    let cc = ch.pick(&[
        CallConv::SystemV,
        CallConv::SystemV,
        CallConv::Fast,
        CallConv::Tail,
    ]);
    let mut s = Signature::new(cc);
    s.params.push(AbiParam::new(I64));
    for _ in 0..ch.below(4) {
        s.params.push(AbiParam::new(ch.pick(&SCALARS)));
    }
    for _ in 0..ch.below(3) {
        s.returns.push(AbiParam::new(ch.pick(&SCALARS)));
    }
    s
}

/// Generates a module from the choice sequence (see the module docs).
pub fn generate_module(data: &[u32], cfg: &ModGenConfig) -> GenModule {
    let mut ch = Choices::new(data);
    let k = 2 + ch.below(cfg.max_base.max(2) - 1);
    let sigs: Vec<Signature> = (0..k).map(|_| signature(&mut ch, cfg)).collect();
    let mut aliases = Vec::new();
    let mut callees: Vec<Callee> = (0..k)
        .map(|j| Callee {
            name: format!("f{j}"),
            sig: sigs[j].clone(),
        })
        .collect();
    for (j, sig) in sigs.iter().enumerate() {
        if ch.chance(25) {
            aliases.push(Alias {
                name: FuncName::Testcase(format!("a{j}").into()),
                target: FuncName::Testcase(format!("f{j}").into()),
                linkage: random_linkage(&mut ch),
            });
            callees.push(Callee {
                name: format!("a{j}"),
                sig: sig.clone(),
            });
        }
    }
    if !cfg.native {
        // Imports: functions the module calls but does not define.
        let mut x0 = Signature::new(CallConv::SystemV);
        x0.params.extend([AbiParam::new(I64), AbiParam::new(I32)]);
        x0.returns.push(AbiParam::new(I64));
        let mut x1 = Signature::new(CallConv::Fast);
        x1.params.extend([AbiParam::new(I64), AbiParam::new(F64)]);
        x1.returns.extend([AbiParam::new(F32), AbiParam::new(I8)]);
        for (name, sig) in [("x0", x0), ("x1", x1)] {
            callees.push(Callee {
                name: name.into(),
                sig,
            });
        }
    }

    // Each base function from its own choices, so that its near-copy can be generated again
    // from the same ones.
    let datas: Vec<Vec<u32>> = (0..k)
        .map(|_| (0..FUNCTION_CHOICES).map(|_| ch.next()).collect())
        .collect();
    let mut base = Vec::new();
    let mut near = Vec::new();
    let mut data_constants = Vec::new();
    for i in 0..k {
        let (f, data) =
            generate_function(&datas[i], cfg, format!("f{i}"), &sigs[i], &callees, None);
        let constants = data.len();
        data_constants.push(data);
        assert_valid(&f, "generated module function");
        // The near-copy: one of the constants changed.
        let tweak = (constants > 0).then(|| (ch.below(constants), 1 + ch.below(5) as i64));
        let (h, _) = generate_function(&datas[i], cfg, format!("h{i}"), &sigs[i], &callees, tweak);
        assert_valid(&h, "near copy");
        base.push(f);
        near.push(h);
    }

    let mut functions: Vec<(Function, SymbolLinkage)> = Vec::new();
    for f in &base {
        functions.push((f.clone(), random_linkage(&mut ch)));
    }
    for (i, f) in base.iter().enumerate() {
        let g = copy_calling(f, format!("g{i}"), &mut ch, |ch| {
            ch.chance(50).then_some('g')
        });
        let mut linkage = random_linkage(&mut ch);
        if ch.chance(10) {
            // Both preemptible: neither may be kept, so the merge makes a private copy.
            functions[i].1 = SymbolLinkage::Preemptible;
            linkage = SymbolLinkage::Preemptible;
        }
        functions.push((g, linkage));
    }
    for h in near {
        functions.push((h, random_linkage(&mut ch)));
    }
    for (i, f) in base.iter().enumerate() {
        let copy = copy_calling(f, format!("k{i}"), &mut ch, |_| Some('h'));
        functions.push((copy, random_linkage(&mut ch)));
    }
    if cfg.similar_holes {
        let near: Vec<Function> = functions[2 * k..3 * k]
            .iter()
            .map(|(f, _)| f.clone())
            .collect();
        for ((f, near), data) in base.iter().zip(&near).zip(&data_constants) {
            for family in similar_hole_families(f, near, &sigs, data, &mut ch) {
                functions.push((family, random_linkage(&mut ch)));
            }
        }
    }
    if cfg.many_holes {
        for i in 0..k {
            let seed = u64::from(ch.next()) ^ ((i as u64) << 40);
            for family in many_differing_holes(i, cfg, seed) {
                functions.push((family, random_linkage(&mut ch)));
            }
        }
    }
    GenModule {
        functions,
        aliases,
        base: k,
    }
}

/// A family of two or three functions `w{i}_{t}(x) -> i64` of one shape that differ in 7 to 20
/// positions (more than the free argument registers): a chain of steps, each `x op c` with a
/// constant `c` of type i8 to i64 (sign- or zero-extended to i64) or a call `y{u}_{i}(x)` of an
/// import of one parameter (natively the test's host function `y{u}_1`); each position holds the
/// same value in every member or one of its own. And `wc{i}(x)`, which calls each of them, so
/// that removed members' callers pass the values too. From its own `seed`: the module's
/// choices may be used up by then.
fn many_differing_holes(i: usize, cfg: &ModGenConfig, seed: u64) -> Vec<Function> {
    let mut state = seed;
    let mut next = |below: u64| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    };
    let conv = if cfg.native {
        cfg.call_conv
    } else {
        CallConv::SystemV
    };
    let members = 2 + next(2) as usize;
    let steps = 7 + next(14) as usize;
    // Positions that differ: at least seven, so the group needs stack arguments.
    let mut differs: Vec<bool> = (0..steps).map(|p| p < 7 || next(3) > 0).collect();
    for p in (1..steps).rev() {
        differs.swap(p, next(p as u64 + 1) as usize);
    }
    enum Step {
        Constant {
            ty: &'static str,
            extend: &'static str,
            op: &'static str,
            values: Vec<i64>,
        },
        Call {
            imports: Vec<u64>,
        },
    }
    let plan: Vec<Step> = (0..steps)
        .map(|p| {
            let draws = if differs[p] { members } else { 1 };
            if next(3) == 0 {
                let mut imports: Vec<u64> = Vec::new();
                while imports.len() < draws {
                    let u = next(3);
                    if !imports.contains(&u) {
                        imports.push(u);
                    }
                }
                Step::Call { imports }
            } else {
                let (ty, bits) =
                    [("i8", 8), ("i16", 16), ("i32", 32), ("i64", 64)][next(4) as usize];
                let extend = ["sextend", "uextend"][next(2) as usize];
                let op = ["iadd", "bxor", "imul", "isub"][next(4) as usize];
                let mut values: Vec<i64> = Vec::new();
                while values.len() < draws {
                    let raw = next(u64::MAX) as i64;
                    let v = if bits == 64 {
                        raw
                    } else {
                        mask(raw, Type::int(bits).unwrap())
                    };
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                Step::Constant {
                    ty,
                    extend,
                    op,
                    values,
                }
            }
        })
        .collect();
    let mut text = String::new();
    for t in 0..members {
        let mut decls = format!("    sig0 = (i64) -> i64 {conv}\n");
        let mut body = String::new();
        let (mut last, mut n, mut callees) = (0, 1, 0);
        for step in &plan {
            match step {
                Step::Constant {
                    ty,
                    extend,
                    op,
                    values,
                } => {
                    let c = values[t.min(values.len() - 1)];
                    body += &format!("    v{n} = iconst.{ty} {c}\n");
                    let wide = if *ty == "i64" {
                        n
                    } else {
                        body += &format!("    v{} = {extend}.i64 v{n}\n", n + 1);
                        n + 1
                    };
                    body += &format!("    v{} = {op} v{last}, v{wide}\n", wide + 1);
                    (last, n) = (wide + 1, wide + 2);
                }
                Step::Call { imports } => {
                    let u = imports[t.min(imports.len() - 1)];
                    decls += &format!("    fn{callees} = %y{u}_{i} sig0\n");
                    body += &format!("    v{n} = call fn{callees}(v{last})\n");
                    (last, n, callees) = (n, n + 1, callees + 1);
                }
            }
        }
        text += &format!(
            "function %w{i}_{t}(i64) -> i64 {conv} {{\n{decls}block0(v0: i64):\n{body}    return v{last}\n}}\n\n"
        );
    }
    let mut decls = format!("    sig0 = (i64) -> i64 {conv}\n");
    let mut body = String::new();
    for t in 0..members {
        decls += &format!("    fn{t} = colocated %w{i}_{t} sig0\n");
        body += &format!("    v{} = call fn{t}(v{t})\n", t + 1);
    }
    text += &format!(
        "function %wc{i}(i64) -> i64 {conv} {{\n{decls}block0(v0: i64):\n{body}    return v{members}\n}}\n"
    );
    let functions = cranelift_reader::parse_functions(&text)
        .unwrap_or_else(|e| panic!("the many-holes family parses: {e}\n{text}"));
    for f in &functions {
        assert_valid(f, "many-holes family");
    }
    functions
}

/// The name of import `t` (0 to 2) of the signature of base function `j`: natively, the test's
/// host function of that arity and `t`.
pub fn import_name(t: usize, j: usize) -> String {
    format!("y{t}_{j}")
}

/// The families of functions that similar merging's kinds of holes meet, from base function `f`
/// (`f{i}`) and its near-copy `near` (`h{i}`, one constant changed):
/// - imports as callees: `m{i}_0`..`m{i}_2`, copies of `f` whose calls of module functions `f_j`
///   go to the import `y{t}_{j}` (same signature) instead, one `t` per copy;
/// - constants value numbering shared: `e{i}`, a copy of `f` where the second of two constants
///   of one type in one block is the first one's value (as GVN leaves equal constants), and
///   `n{i}`, a copy of `f` where that second constant is the first one's number plus 1 to 5;
/// - a call of itself against a call of another function: `r{i}`, a copy of `f` whose calls of
///   functions of `f`'s own signature call `r{i}` itself, and `s{i}`, a copy of `near` whose
///   same calls call `f{i}`.
///
/// Imports are declared not `colocated`: natively they are the test's own functions, which
/// may be anywhere in memory.
fn similar_hole_families(
    f: &Function,
    near: &Function,
    sigs: &[Signature],
    data_constants: &[cranelift_codegen::ir::Inst],
    ch: &mut Choices,
) -> Vec<Function> {
    let name = f.name.to_string();
    let i: usize = name
        .trim_start_matches("%f")
        .parse()
        .expect("a base function");
    let mut out = Vec::new();
    let base_of = |g: &Function, r: FuncRef| -> Option<usize> {
        let ExternalName::TestCase(t) = &g.dfg.ext_funcs[r].name else {
            return None;
        };
        let text = String::from_utf8_lossy(t.raw()).into_owned();
        let j = text.strip_prefix('f').or_else(|| text.strip_prefix('a'))?;
        j.parse().ok()
    };
    // Imports as callees.
    let calls_module = f.dfg.ext_funcs.keys().any(|r| base_of(f, r).is_some());
    if calls_module {
        for t in 0..3 {
            let mut m = copy_calling(f, format!("m{i}_{t}"), ch, |_| None);
            let refs: Vec<FuncRef> = m.dfg.ext_funcs.keys().collect();
            for r in refs {
                if let Some(j) = base_of(&m, r) {
                    m.dfg.ext_funcs[r].name = ExternalName::testcase(import_name(t, j));
                    m.dfg.ext_funcs[r].colocated = false;
                }
            }
            assert_valid(&m, "import family");
            out.push(m);
        }
    }
    // Equal constants, shared or not.
    if let Some((first, second)) = equal_constants(f, data_constants) {
        let mut e = f.clone();
        e.name = UserFuncName::testcase(format!("e{i}"));
        let kept = e.dfg.first_result(first);
        let gone = e.dfg.first_result(second);
        e.dfg.clear_results(second);
        e.dfg.change_to_alias(gone, kept);
        e.layout.remove_inst(second);
        e.dfg.resolve_all_aliases();
        assert_valid(&e, "shared constant");
        out.push(renumber(&e, ch));
        let mut n = f.clone();
        n.name = UserFuncName::testcase(format!("n{i}"));
        let ty = n.dfg.value_type(n.dfg.first_result(second));
        if let cranelift_codegen::ir::InstructionData::UnaryImm { imm, .. } = n.dfg.insts[first] {
            let other = mask(imm.bits().wrapping_add(1 + ch.below(5) as i64), ty);
            n.dfg.insts[second] = cranelift_codegen::ir::InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm: other.into(),
            };
        }
        assert_valid(&n, "constants apart");
        out.push(renumber(&n, ch));
    }
    // A call of itself against a call of another function of the same signature.
    let own_sig = &f.signature;
    let same_sig = |g: &Function, r: FuncRef| base_of(g, r).is_some_and(|j| &sigs[j] == own_sig);
    if f.dfg.ext_funcs.keys().any(|r| same_sig(f, r)) {
        let redirect = |g: &Function, name: String, target: &str, ch: &mut Choices| {
            let mut g = copy_calling(g, name, ch, |_| None);
            let refs: Vec<FuncRef> = g.dfg.ext_funcs.keys().collect();
            for r in refs {
                if same_sig(&g, r) {
                    g.dfg.ext_funcs[r].name = ExternalName::testcase(target);
                }
            }
            assert_valid(&g, "self-call family");
            g
        };
        out.push(redirect(f, format!("r{i}"), &format!("r{i}"), ch));
        out.push(redirect(near, format!("s{i}"), &format!("f{i}"), ch));
    }
    out
}

/// Two data constants (`iconst`s that bound no call or loop) of one block with one type, the
/// first before the second.
fn equal_constants(
    f: &Function,
    data_constants: &[cranelift_codegen::ir::Inst],
) -> Option<(cranelift_codegen::ir::Inst, cranelift_codegen::ir::Inst)> {
    for block in f.layout.blocks() {
        let mut seen: HashMap<Type, cranelift_codegen::ir::Inst> = HashMap::new();
        for inst in f.layout.block_insts(block) {
            if !data_constants.contains(&inst) {
                continue;
            }
            let ty = f.dfg.value_type(f.dfg.first_result(inst));
            if let Some(&first) = seen.get(&ty) {
                return Some((first, inst));
            }
            seen.insert(ty, inst);
        }
    }
    None
}

/// A renumbered copy of `f` named `name`, where each declaration of `f_j` or `a_j` is pointed at
/// `{prefix}j` when `redirect` gives a prefix.
fn copy_calling(
    f: &Function,
    name: String,
    ch: &mut Choices,
    mut redirect: impl FnMut(&mut Choices) -> Option<char>,
) -> Function {
    let mut g = renumber(f, ch);
    g.name = UserFuncName::testcase(name);
    let refs: Vec<FuncRef> = g.dfg.ext_funcs.keys().collect();
    for r in refs {
        let ExternalName::TestCase(t) = &g.dfg.ext_funcs[r].name else {
            continue;
        };
        let text = String::from_utf8_lossy(t.raw()).into_owned();
        let j = text.strip_prefix('f').or_else(|| text.strip_prefix('a'));
        if let (Some(j), Some(prefix)) = (j, redirect(ch)) {
            g.dfg.ext_funcs[r].name = ExternalName::testcase(format!("{prefix}{j}"));
        }
    }
    assert_valid(&g, "copy");
    g
}

fn mask(x: i64, ty: Type) -> i64 {
    if ty.bits() >= 64 {
        x
    } else {
        ((x as u64) & ((1u64 << ty.bits()) - 1)) as i64
    }
}

/// Choices read by one base function (at most; the rest are 0).
const FUNCTION_CHOICES: usize = 600;

/// A function from the choice sequence `data`, and its *data* constants (the `iconst`s of
/// values it computes with; not those that bound its calls and loops). `tweak` `(n, delta)`
/// adds `delta` to the `n`th of them.
fn generate_function(
    data: &[u32],
    cfg: &ModGenConfig,
    name: String,
    sig: &Signature,
    callees: &[Callee],
    tweak: Option<(usize, i64)>,
) -> (Function, Vec<cranelift_codegen::ir::Inst>) {
    let mut ch = Choices::new(data);
    let mut func = Function::with_name_signature(UserFuncName::testcase(name), sig.clone());
    let mut ctx = FunctionBuilderContext::new();
    let constants;
    {
        let b = FunctionBuilder::new(&mut func, &mut ctx);
        let mut body = Body {
            b,
            ch: &mut ch,
            cfg,
            callees,
            avail: Vec::new(),
            func_refs: HashMap::new(),
            sig_refs: HashMap::new(),
            slot: None,
            constants: 0,
            data_constants: Vec::new(),
            tweak,
        };
        body.build();
        body.b.seal_all_blocks();
        body.b.finalize(frontend_config());
        constants = body.data_constants;
    }
    (func, constants)
}

struct Body<'f, 'c, 'd> {
    b: FunctionBuilder<'f>,
    ch: &'c mut Choices<'d>,
    cfg: &'c ModGenConfig,
    callees: &'c [Callee],
    /// Values usable at the current point.
    avail: Vec<Value>,
    func_refs: HashMap<usize, FuncRef>,
    sig_refs: HashMap<usize, SigRef>,
    /// A 16-byte stack slot (written in the entry block in the native flavour).
    slot: Option<StackSlot>,
    /// Integer data constants made so far.
    constants: usize,
    /// Their instructions.
    data_constants: Vec<cranelift_codegen::ir::Inst>,
    /// Add `.1` to data constant number `.0`.
    tweak: Option<(usize, i64)>,
}

const INT_BINARY: [Opcode; 15] = [
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
    Opcode::Smax,
    Opcode::Umin,
    Opcode::Umax,
];

const FLOAT_BINARY: [Opcode; 6] = [
    Opcode::Fadd,
    Opcode::Fsub,
    Opcode::Fmul,
    Opcode::Fdiv,
    Opcode::Fmin,
    Opcode::Fmax,
];

impl Body<'_, '_, '_> {
    fn ty(&self, v: Value) -> Type {
        self.b.func.dfg.value_type(v)
    }

    fn add(&mut self, v: Value) -> Value {
        self.avail.push(v);
        v
    }

    fn int_ty(&mut self) -> Type {
        if self.cfg.native {
            self.ch.pick(&[I64, I64, I64, I32])
        } else {
            self.ch.pick(&[I8, I16, I32, I64, I64])
        }
    }

    fn float_ty(&mut self) -> Type {
        self.ch.pick(&[F32, F64])
    }

    /// A new constant of type `ty`.
    fn konst(&mut self, ty: Type) -> Value {
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
                let x: i64 = match self.ch.below(8) {
                    0 => 0,
                    1 => 1,
                    2 => -1,
                    3 => self.ch.range(2, 64),
                    4 => i64::MIN,
                    5 => i64::MAX,
                    6 => -(self.ch.below(1000) as i64),
                    _ => (u64::from(self.ch.next()) | (u64::from(self.ch.next()) << 32)) as i64,
                };
                let x = match self.tweak {
                    Some((n, delta)) if n == self.constants => x.wrapping_add(delta),
                    _ => x,
                };
                self.constants += 1;
                let v = self.b.ins().iconst(ty, mask(x, ty));
                let inst = self.b.func.dfg.value_def(v).unwrap_inst();
                self.data_constants.push(inst);
                v
            }
        };
        self.add(v)
    }

    /// A value of type `ty`: one available, one converted from another integer, or a constant.
    fn get(&mut self, ty: Type) -> Value {
        let same: Vec<Value> = self
            .avail
            .iter()
            .copied()
            .filter(|&v| self.ty(v) == ty)
            .collect();
        if !same.is_empty() && !self.ch.chance(15) {
            return same[self.ch.below(same.len())];
        }
        if ty.is_int() && self.ch.chance(50) {
            let ints: Vec<Value> = self
                .avail
                .iter()
                .copied()
                .filter(|&v| self.ty(v).is_int() && self.ty(v) != ty)
                .collect();
            if !ints.is_empty() {
                let x = ints[self.ch.below(ints.len())];
                let v = if self.ty(x).bits() > ty.bits() {
                    self.b.ins().ireduce(ty, x)
                } else if self.ch.chance(50) {
                    self.b.ins().uextend(ty, x)
                } else {
                    self.b.ins().sextend(ty, x)
                };
                return self.add(v);
            }
        }
        self.konst(ty)
    }

    fn any_int(&mut self) -> Value {
        let ints: Vec<Value> = self
            .avail
            .iter()
            .copied()
            .filter(|&v| self.ty(v).is_int())
            .collect();
        if !ints.is_empty() && !self.ch.chance(15) {
            return ints[self.ch.below(ints.len())];
        }
        let ty = self.int_ty();
        self.konst(ty)
    }

    fn build(&mut self) {
        let sig = self.b.func.signature.clone();
        let entry = self.b.create_block();
        let base = self.b.create_block();
        let rec = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        let depth = self.b.ins().band_imm_s(params[0], DEPTH_MASK);
        self.avail.extend_from_slice(&params);
        self.avail.push(depth);
        if self.ch.chance(30) {
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                16,
                3,
            ));
            self.slot = Some(slot);
            if self.cfg.native {
                // Both halves written before anything reads them.
                for offset in [0, 8] {
                    let v = self.get(I64);
                    self.b.ins().stack_store(I64, v, slot, offset);
                }
            }
        }
        self.ops();
        self.b.ins().brif(depth, rec, &[], base, &[]);
        let after_entry = self.avail.clone();

        // At depth 0: no calls.
        self.b.switch_to_block(base);
        if self.ch.chance(25) {
            self.diamond();
        }
        self.ops();
        if !self.cfg.native && self.ch.chance(8) {
            let code = trap_code(self.ch);
            self.b.ins().trap(code);
        } else {
            self.ret(&sig);
        }

        // Otherwise: calls with depth - 1.
        self.avail = after_entry;
        self.b.switch_to_block(rec);
        let d1 = self.b.ins().iadd_imm_s(depth, -1);
        let calls = 1 + self.ch.below(2);
        for _ in 0..calls {
            self.ops();
            self.call(d1);
        }
        self.ops();
        if self.ch.chance(35) {
            self.counted_loop();
        }
        if !self.cfg.native && sig.call_conv == CallConv::Tail && self.ch.chance(40) {
            let tail: Vec<usize> = (0..self.callees.len())
                .filter(|&j| {
                    let s = &self.callees[j].sig;
                    s.call_conv == CallConv::Tail && s.returns == sig.returns
                })
                .collect();
            if !tail.is_empty() {
                let j = tail[self.ch.below(tail.len())];
                let args = self.args_for(j, d1);
                let f = self.func_ref(j);
                self.b.ins().return_call(f, &args);
                return;
            }
        }
        self.ret(&sig);
    }

    fn ret(&mut self, sig: &Signature) {
        let vals: Vec<Value> = sig
            .returns
            .iter()
            .map(|r| r.value_type)
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| self.get(t))
            .collect();
        self.b.ins().return_(&vals);
    }

    /// Some straight-line instructions.
    fn ops(&mut self) {
        for _ in 0..self.ch.below(self.cfg.max_ops + 1) {
            self.op();
        }
    }

    fn op(&mut self) {
        let native = self.cfg.native;
        match self.ch.below(if native { 12 } else { 18 }) {
            0..=3 => {
                let ty = self.int_ty();
                let op = self.ch.pick(&INT_BINARY);
                let x = self.get(ty);
                let y = self.get(ty);
                let (inst, _) = self.b.ins().Binary(op, ty, x, y);
                let v = self.b.inst_results(inst)[0];
                self.add(v);
            }
            4 => {
                let ty = self.int_ty();
                let x = self.get(ty);
                let v = match self.ch.below(5) {
                    0 => self.b.ins().bnot(x),
                    1 => self.b.ins().ineg(x),
                    2 => self.b.ins().popcnt(x),
                    3 => self.b.ins().clz(x),
                    _ => self.b.ins().ctz(x),
                };
                self.add(v);
            }
            5 => {
                let ty = self.int_ty();
                let cc = self.ch.pick(IntCC::all());
                let x = self.get(ty);
                let y = self.get(ty);
                let c = self.b.ins().icmp(cc, x, y);
                self.add(c);
                let rty = if native { I64 } else { self.ch.pick(&SCALARS) };
                let a = self.get(rty);
                let b = self.get(rty);
                let v = self.b.ins().select(c, a, b);
                self.add(v);
            }
            6 => {
                let ty = self.int_ty();
                self.konst(ty);
            }
            7 => {
                // Division by a divisor made non-zero.
                let ty = self.int_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let d = self.b.ins().bor_imm_s(y, 1);
                let v = if self.ch.chance(50) {
                    self.b.ins().udiv(x, d)
                } else {
                    self.b.ins().urem(x, d)
                };
                self.add(v);
            }
            8 => {
                let x = self.get(I64);
                let imm = self.ch.range(-9, 9);
                let v = match self.ch.below(3) {
                    0 => self.b.ins().iadd_imm_s(x, imm),
                    1 => self.b.ins().imul_imm_s(x, imm),
                    _ => self.b.ins().bxor_imm_s(x, imm),
                };
                self.add(v);
            }
            9 => self.stack(),
            10 | 11 => {
                // A change of width (or of byte order).
                let ty = self.int_ty();
                let x = self.any_int();
                let from = self.ty(x);
                let v = if from.bits() > ty.bits() {
                    self.b.ins().ireduce(ty, x)
                } else if from.bits() < ty.bits() {
                    if self.ch.chance(50) {
                        self.b.ins().uextend(ty, x)
                    } else {
                        self.b.ins().sextend(ty, x)
                    }
                } else if from != I8 {
                    self.b.ins().bswap(x)
                } else {
                    self.b.ins().bnot(x)
                };
                self.add(v);
            }
            12 | 13 if self.ch.chance(60) => {
                // (Instructions that may trap, less often than the others.)
                let ty = self.int_ty();
                self.konst(ty);
            }
            12 => {
                // Division that may trap.
                let ty = self.int_ty();
                let x = self.get(ty);
                let y = self.get(ty);
                let v = match self.ch.below(4) {
                    0 => self.b.ins().sdiv(x, y),
                    1 => self.b.ins().srem(x, y),
                    2 => self.b.ins().udiv(x, y),
                    _ => self.b.ins().urem(x, y),
                };
                self.add(v);
            }
            13 => {
                let c = self.any_int();
                let code = trap_code(self.ch);
                if self.ch.chance(50) {
                    self.b.ins().trapnz(c, code);
                } else {
                    self.b.ins().trapz(c, code);
                }
            }
            14 => {
                let ty = self.float_ty();
                let op = self.ch.pick(&FLOAT_BINARY);
                let x = self.get(ty);
                let y = self.get(ty);
                let (inst, _) = self.b.ins().Binary(op, ty, x, y);
                let v = self.b.inst_results(inst)[0];
                self.add(v);
            }
            15 => {
                let ty = self.float_ty();
                let x = self.get(ty);
                let v = match self.ch.below(6) {
                    0 => self.b.ins().fneg(x),
                    1 => self.b.ins().fabs(x),
                    2 => self.b.ins().sqrt(x),
                    3 => self.b.ins().floor(x),
                    4 => self.b.ins().trunc(x),
                    _ => {
                        let cc = self.ch.pick(FloatCC::all());
                        let y = self.get(ty);
                        self.b.ins().fcmp(cc, x, y)
                    }
                };
                self.add(v);
            }
            16 => {
                let v = match self.ch.below(6) {
                    0 => {
                        let ity = self.ch.pick(&[I32, I64]);
                        let fty = self.float_ty();
                        let x = self.get(fty);
                        match self.ch.below(4) {
                            0 => self.b.ins().fcvt_to_sint(ity, x),
                            1 => self.b.ins().fcvt_to_uint(ity, x),
                            2 => self.b.ins().fcvt_to_sint_sat(ity, x),
                            _ => self.b.ins().fcvt_to_uint_sat(ity, x),
                        }
                    }
                    1 => {
                        let ity = self.ch.pick(&[I32, I64]);
                        let fty = self.float_ty();
                        let x = self.get(ity);
                        if self.ch.chance(50) {
                            self.b.ins().fcvt_from_sint(fty, x)
                        } else {
                            self.b.ins().fcvt_from_uint(fty, x)
                        }
                    }
                    2 => {
                        let x = self.get(F32);
                        self.b.ins().fpromote(F64, x)
                    }
                    3 => {
                        let x = self.get(F64);
                        self.b.ins().fdemote(F32, x)
                    }
                    4 => {
                        let (from, to) =
                            self.ch
                                .pick(&[(I64, F64), (F64, I64), (I32, F32), (F32, I32)]);
                        let x = self.get(from);
                        self.b.ins().bitcast(to, MemFlagsData::new(), x)
                    }
                    _ => {
                        let ty = self.float_ty();
                        self.konst(ty)
                    }
                };
                self.add(v);
            }
            _ => {
                let ty = self.ch.pick(&SCALARS);
                self.get(ty);
            }
        }
    }

    /// A store to or a load from the stack slot.
    fn stack(&mut self) {
        let Some(slot) = self.slot else {
            return;
        };
        let ty = if self.cfg.native {
            self.ch.pick(&[I64, I32])
        } else {
            self.ch.pick(&SCALARS)
        };
        let room = 16 - ty.bytes() as i32;
        let offset = if self.cfg.native {
            // Aligned, within the written bytes.
            (self.ch.below((room / ty.bytes() as i32) as usize + 1) as i32) * ty.bytes() as i32
        } else {
            self.ch.below(room as usize + 1) as i32
        };
        if self.ch.chance(50) {
            let v = self.get(ty);
            self.b.ins().stack_store(I64, v, slot, offset);
        } else {
            let v = self.b.ins().stack_load(I64, ty, slot, offset);
            self.add(v);
        }
    }

    /// `brif` to two blocks that each compute a value and meet in a block with a parameter.
    fn diamond(&mut self) {
        let ty = if self.cfg.native {
            I64
        } else {
            self.ch.pick(&SCALARS)
        };
        let left = self.b.create_block();
        let right = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, ty);
        let c = self.any_int();
        self.b.ins().brif(c, left, &[], right, &[]);
        let before = self.avail.clone();
        for block in [left, right] {
            self.b.switch_to_block(block);
            self.avail = before.clone();
            self.ops();
            let v = self.get(ty);
            self.b.ins().jump(join, &[v.into()]);
        }
        self.avail = before;
        self.b.switch_to_block(join);
        let p = self.b.block_params(join)[0];
        self.add(p);
    }

    /// A loop counting from 0 to a small constant bound, carrying an accumulator.
    fn counted_loop(&mut self) {
        let ty = self.int_ty();
        let header = self.b.create_block();
        let exit = self.b.create_block();
        let i = self.b.append_block_param(header, I64);
        let acc = self.b.append_block_param(header, ty);
        let r = self.b.append_block_param(exit, ty);
        let zero = self.b.ins().iconst(I64, 0);
        let init = self.get(ty);
        self.b.ins().jump(header, &[zero.into(), init.into()]);
        let before = self.avail.clone();
        self.b.switch_to_block(header);
        self.avail.push(i);
        self.avail.push(acc);
        self.ops();
        let op = self.ch.pick(&INT_BINARY);
        let x = self.get(ty);
        let (inst, _) = self.b.ins().Binary(op, ty, acc, x);
        let next_acc = self.b.inst_results(inst)[0];
        let next_i = self.b.ins().iadd_imm_s(i, 1);
        let bound = self.ch.range(1, 6);
        let more = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, next_i, bound);
        self.b.ins().brif(
            more,
            header,
            &[next_i.into(), next_acc.into()],
            exit,
            &[next_acc.into()],
        );
        self.b.switch_to_block(exit);
        self.avail = before;
        self.avail.push(r);
    }

    fn func_ref(&mut self, j: usize) -> FuncRef {
        if let Some(&f) = self.func_refs.get(&j) {
            return f;
        }
        let sig = self.b.import_signature(self.callees[j].sig.clone());
        let f = self.b.import_function(ExtFuncData {
            name: ExternalName::testcase(self.callees[j].name.as_bytes()),
            signature: sig,
            colocated: true,
            patchable: false,
        });
        self.func_refs.insert(j, f);
        f
    }

    fn sig_ref(&mut self, j: usize) -> SigRef {
        if let Some(&s) = self.sig_refs.get(&j) {
            return s;
        }
        let s = self.b.import_signature(self.callees[j].sig.clone());
        self.sig_refs.insert(j, s);
        s
    }

    fn args_for(&mut self, j: usize, depth: Value) -> Vec<Value> {
        let tys: Vec<Type> = self.callees[j]
            .sig
            .params
            .iter()
            .map(|p| p.value_type)
            .collect();
        let mut args = vec![depth];
        for &ty in &tys[1..] {
            args.push(self.get(ty));
        }
        args
    }

    /// A call of a module function with depth `depth`: direct, or through its address.
    fn call(&mut self, depth: Value) {
        let j = self.ch.below(self.callees.len());
        let args = self.args_for(j, depth);
        let f = self.func_ref(j);
        let inst = if self.ch.chance(20) {
            let addr = self.b.ins().func_addr(I64, f);
            let s = self.sig_ref(j);
            self.b.ins().call_indirect(s, addr, &args)
        } else {
            self.b.ins().call(f, &args)
        };
        let results = self.b.inst_results(inst).to_vec();
        self.avail.extend(results);
    }
}

fn trap_code(ch: &mut Choices) -> TrapCode {
    match ch.below(3) {
        0 => TrapCode::unwrap_user(1 + ch.below(3) as u8),
        1 => TrapCode::INTEGER_OVERFLOW,
        _ => TrapCode::unwrap_user(1 + ch.below(250) as u8),
    }
}
