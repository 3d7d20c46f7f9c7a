//! `MergingModule`'s thunks as one jump (issue 21, item 8): a function the merge replaced is
//! defined as `jmp rel32` (x86_64, 5 bytes) or `b imm26` (aarch64, 4 bytes) to the function
//! holding its body, in a JIT and in an object alike, where the conventions allow it; and stays
//! a compiled thunk where they do not (branch protection). Each thunk is run through its own
//! address (JIT: its function pointer; objects: linked with a C driver, aarch64 under qemu)
//! and its code is read to prove its size.

use clif_merge::MergingModule;
use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, types};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};

#[path = "common/build.rs"]
mod build;
#[path = "common/link.rs"]
mod link;
use build::build;

#[derive(Clone, Copy, Debug)]
enum Timing {
    Eager,
    Deferred,
}

fn merging<M: Module>(inner: M, timing: Timing) -> MergingModule<M> {
    match timing {
        Timing::Eager => MergingModule::new(inner),
        Timing::Deferred => MergingModule::deferred(inner),
    }
}

fn isa(triple: &str, pic: bool, isa_flags: &[&str]) -> OwnedTargetIsa {
    let mut flags = settings::builder();
    flags
        .set("is_pic", if pic { "true" } else { "false" })
        .unwrap();
    let mut builder = cranelift_codegen::isa::lookup_by_name(triple).unwrap();
    for flag in isa_flags {
        builder.enable(flag).unwrap();
    }
    builder.finish(settings::Flags::new(flags)).unwrap()
}

fn is_x86_64_linux() -> bool {
    cfg!(all(target_arch = "x86_64", target_os = "linux"))
}

/// `fn(i64 × params) -> i64` in `call_conv`.
fn signature(call_conv: CallConv, params: usize) -> Signature {
    let mut sig = Signature::new(call_conv);
    sig.params = vec![AbiParam::new(types::I64); params];
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// Defines `id` as `((Σ (i + 1) · xᵢ) * 7 + 2) ^ 5 + k`: larger than any thunk, and every
/// argument (stack arguments included) counts.
fn weighted_sum(module: &mut impl Module, id: FuncId, k: i64) -> cranelift_codegen::Context {
    build(module, id, |b, _, params| {
        let mut acc = b.ins().iconst(types::I64, 0);
        for (i, &x) in params.iter().enumerate() {
            let t = b.ins().imul_imm_s(x, i as i64 + 1);
            acc = b.ins().iadd(acc, t);
        }
        let t = b.ins().imul_imm_s(acc, 7);
        let t = b.ins().iadd_imm_s(t, 2);
        let t = b.ins().bxor_imm_s(t, 5);
        b.ins().iadd_imm_s(t, k)
    })
}

fn weighted_sum_value(args: &[i64], k: i64) -> i64 {
    let acc: i64 = args
        .iter()
        .enumerate()
        .map(|(i, x)| (i as i64 + 1) * x)
        .sum();
    ((acc * 7 + 2) ^ 5) + k
}

/// The target of the x86_64 `jmp rel32` at `code`, or None if `code` is not one.
///
/// # Safety
/// `code` points at 5 readable bytes.
unsafe fn x86_64_jump_target(code: *const u8) -> Option<*const u8> {
    // SAFETY: the caller's.
    let bytes = unsafe { std::slice::from_raw_parts(code, 5) };
    (bytes[0] == 0xe9).then(|| {
        let rel = i32::from_le_bytes(bytes[1..5].try_into().unwrap());
        code.wrapping_add(5).wrapping_offset(rel as isize)
    })
}

/// The target of the aarch64 `b imm26` in `word` at address `at`, or None if it is not one.
fn aarch64_branch_target(word: u32, at: usize) -> Option<usize> {
    (word >> 26 == 0b000101).then(|| {
        // Sign-extend the 26-bit word offset.
        let imm = ((word << 6) as i32 >> 6) as isize;
        at.wrapping_add_signed(imm * 4)
    })
}

/// A JIT merge of two equal functions `a`, `b` (`b` becomes the thunk), both
/// `fn(i64 × params) -> i64` in `call_conv`, and `driver`, a `system_v` function calling
/// `b` twice (so that a `tail` thunk is called as `tail`, and a wrong stack after the first
/// call shows in the second); `jumps`: whether `b` is expected to be one jump. Returns the
/// finalized JIT and `[a, b, driver]`.
fn jit_pair(
    jit: JITModule,
    timing: Timing,
    call_conv: CallConv,
    params: usize,
    jumps: bool,
) -> (JITModule, [FuncId; 3]) {
    let mut module = merging(jit, timing);
    let sig = signature(call_conv, params);
    let a = module.declare_function("a", Linkage::Export, &sig).unwrap();
    let b = module.declare_function("b", Linkage::Export, &sig).unwrap();
    let driver_sig = signature(CallConv::SystemV, params);
    let driver = module
        .declare_function("driver", Linkage::Export, &driver_sig)
        .unwrap();
    weighted_sum(&mut module, a, 3);
    let ctx = weighted_sum(&mut module, b, 3);
    if matches!(timing, Timing::Eager) {
        // The context holds compiled code only for a compiled thunk.
        assert_eq!(ctx.compiled_code().is_none(), jumps, "{timing:?}");
    }
    build(&mut module, driver, |bld, import, params| {
        let callee = import(b, bld);
        let first = bld.ins().call(callee, params);
        let first = bld.inst_results(first)[0];
        let reversed: Vec<_> = params.iter().rev().copied().collect();
        let second = bld.ins().call(callee, &reversed);
        let second = bld.inst_results(second)[0];
        bld.ins().isub(first, second)
    });
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 1, "{report:?}");
    (jit, [a, b, driver])
}

fn host_jit() -> JITModule {
    JITModule::new(JITBuilder::new(default_libcall_names()).expect("a host JIT"))
}

/// x86_64 JIT, both timings, `system_v` and `tail`, with register and stack arguments: the
/// thunk `b` is one `jmp rel32` to `a` (5 bytes), and `b` called through its own pointer (and
/// through `driver`) returns what `a` does.
#[test]
fn jit_thunk_is_one_jump_and_runs() {
    if !is_x86_64_linux() {
        eprintln!("note: skipping: the host is not x86_64 Linux");
        return;
    }
    for timing in [Timing::Eager, Timing::Deferred] {
        for call_conv in [CallConv::SystemV, CallConv::Tail] {
            for params in [2, 10] {
                let what = format!("{timing:?}, {call_conv}, {params} parameters");
                let (jit, [a, b, driver]) = jit_pair(host_jit(), timing, call_conv, params, true);
                let (pa, pb) = (jit.get_finalized_function(a), jit.get_finalized_function(b));
                // SAFETY: every defined function has at least 5 bytes of code.
                let target = unsafe { x86_64_jump_target(pb) };
                assert_eq!(target, Some(pa), "{what}: b is `jmp a`");
                let args: Vec<i64> = (1..=params as i64).map(|i| i * 11 - 40).collect();
                let reversed: Vec<i64> = args.iter().rev().copied().collect();
                let want = weighted_sum_value(&args, 3) - weighted_sum_value(&reversed, 3);
                assert_eq!(
                    call_driver(&jit, driver, &args),
                    want,
                    "{what}: driver calls b"
                );
                if call_conv == CallConv::SystemV {
                    // Through `b`'s own pointer, as an embedder calls it.
                    assert_eq!(
                        call_driver(&jit, b, &args),
                        weighted_sum_value(&args, 3),
                        "{what}: b"
                    );
                }
            }
        }
    }
}

/// Deferred, two equal preemptible functions: both become thunks of a private copy of their
/// body (an anonymous function), each one jump to it; a similar merge may then remove that
/// copy (it differs from `d` in a constant): the thunks jump to what stands for it, compiled,
/// which passes the constant to the shared body. Everything computes.
#[test]
fn jit_preemptible_pair_jumps_to_the_private_copy_or_its_stand_in() {
    if !is_x86_64_linux() {
        eprintln!("note: skipping: the host is not x86_64 Linux");
        return;
    }
    let similar = clif_merge::SimilarOptions {
        min_saving: i64::MIN,
        ..Default::default()
    };
    for similar in [None, Some(similar)] {
        let options = clif_merge::MergeOptions {
            similar: similar.clone(),
            ..Default::default()
        };
        let mut module = MergingModule::with_options(host_jit(), options);
        let sig = signature(CallConv::SystemV, 2);
        let pa = module
            .declare_function("pa", Linkage::Preemptible, &sig)
            .unwrap();
        let pb = module
            .declare_function("pb", Linkage::Preemptible, &sig)
            .unwrap();
        let d = module.declare_function("d", Linkage::Export, &sig).unwrap();
        weighted_sum(&mut module, pa, 3);
        weighted_sum(&mut module, pb, 3);
        weighted_sum(&mut module, d, 8);
        let (mut jit, report) = module.finish().unwrap();
        jit.finalize_definitions().unwrap();
        let what = format!("similar: {}, {report:?}", similar.is_some());
        let removed_copy = report.similar.as_ref().is_some_and(|groups| {
            groups
                .iter()
                .flat_map(|g| &g.members)
                .any(|m| m.by == clif_merge::Action::Removed)
        });
        assert_eq!(removed_copy, similar.is_some(), "{what}");
        let [a, b] = [pa, pb].map(|f| jit.get_finalized_function(f));
        // SAFETY: every defined function has at least 5 bytes of code.
        let [to_a, to_b] = [a, b].map(|p| unsafe { x86_64_jump_target(p) });
        assert!(
            to_a.is_some() && to_a == to_b,
            "{what}: both jump to one copy"
        );
        let copy = to_a.unwrap();
        assert!(copy != a && copy != b, "{what}");
        // SAFETY: as above.
        let copy_jumps = unsafe { x86_64_jump_target(copy) }.is_some();
        assert!(!copy_jumps, "{what}: the copy (or stand-in) is compiled");
        for x in [-3, 0, 4] {
            let want = weighted_sum_value(&[x, 2], 3);
            assert_eq!(call_driver(&jit, pa, &[x, 2]), want, "{what}");
            assert_eq!(call_driver(&jit, pb, &[x, 2]), want, "{what}");
            assert_eq!(call_driver(&jit, d, &[x, 2]), want + 5, "{what}");
        }
    }
}

/// Calls the `system_v` function `id` of the host JIT with `args` (2 or 10 of them).
fn call_driver(jit: &JITModule, id: FuncId, args: &[i64]) -> i64 {
    let ptr = jit.get_finalized_function(id);
    // SAFETY: the function has the signature `fn(i64 × args.len()) -> i64` in `system_v`,
    // the host's C convention on x86_64 Linux, and the JIT's code is finalized.
    unsafe {
        match *args {
            [x0, x1] => {
                let f: extern "C" fn(i64, i64) -> i64 = std::mem::transmute(ptr);
                f(x0, x1)
            }
            [x0, x1, x2, x3, x4, x5, x6, x7, x8, x9] => {
                type F10 = extern "C" fn(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i64;
                let f: F10 = std::mem::transmute(ptr);
                f(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9)
            }
            _ => unreachable!("2 or 10 arguments"),
        }
    }
}

/// An aarch64 JIT (code written, not run, on any host): the thunk is one `b` to the kept
/// function (4 bytes), in both timings.
#[test]
fn aarch64_jit_thunk_is_one_branch() {
    for timing in [Timing::Eager, Timing::Deferred] {
        let jit = JITModule::new(JITBuilder::with_isa(
            isa("aarch64-unknown-linux-gnu", false, &[]),
            default_libcall_names(),
        ));
        let (jit, [a, b, _]) = jit_pair(jit, timing, CallConv::SystemV, 2, true);
        let (pa, pb) = (jit.get_finalized_function(a), jit.get_finalized_function(b));
        // SAFETY: every defined function has at least 4 bytes of code, 4-aligned.
        let word = unsafe { (pb as *const u32).read() };
        let target = aarch64_branch_target(word, pb as usize);
        assert_eq!(
            target,
            Some(pa as usize),
            "{timing:?}: {word:#010x} is `b a`"
        );
    }
}

/// With branch protection (aarch64 `use_bti`) a function called indirectly must start with a
/// landing pad, which a branch is not: the thunk is `bti c; b a`, 8 bytes, as the object
/// writer's.
#[test]
fn aarch64_jit_with_bti_thunk_is_a_landing_pad_and_a_jump() {
    const BTI_C: u32 = 0xd503_245f;
    for timing in [Timing::Eager, Timing::Deferred] {
        let jit = JITModule::new(JITBuilder::with_isa(
            isa("aarch64-unknown-linux-gnu", false, &["use_bti"]),
            default_libcall_names(),
        ));
        let (jit, [a, b, _]) = jit_pair(jit, timing, CallConv::SystemV, 2, true);
        let (pa, pb) = (jit.get_finalized_function(a), jit.get_finalized_function(b));
        // SAFETY: every defined function has at least 8 bytes of code, 4-aligned.
        let [pad, jump] = unsafe { [(pb as *const u32).read(), (pb as *const u32).add(1).read()] };
        assert_eq!(pad, BTI_C, "{timing:?}: {pad:#010x}");
        let target = aarch64_branch_target(jump, pb as usize + 4);
        assert_eq!(
            target,
            Some(pa as usize),
            "{timing:?}: {jump:#010x} is `b a`"
        );
    }
}

/// An object for `triple`: `m1`, `m2` equal (`m2` the thunk) and `via_m2` calling `m2`,
/// exported; `hidden`, a local copy of `m1` that `via_hidden` calls; `pa`, `pb` equal and
/// preemptible (deferred: both thunks of a private copy, an anonymous function). Returns the
/// object.
fn object_module(triple: &str, timing: Timing) -> Vec<u8> {
    let builder =
        ObjectBuilder::new(isa(triple, true, &[]), "merged", default_libcall_names()).unwrap();
    let mut module = merging(ObjectModule::new(builder), timing);
    let sig = signature(CallConv::triple_default(&triple.parse().unwrap()), 2);
    let mut declare = |name: &str, linkage| module.declare_function(name, linkage, &sig).unwrap();
    let [m1, m2, hidden, via_m2, via_hidden, pa, pb] = [
        declare("m1", Linkage::Export),
        declare("m2", Linkage::Export),
        declare("hidden", Linkage::Local),
        declare("via_m2", Linkage::Export),
        declare("via_hidden", Linkage::Export),
        declare("pa", Linkage::Preemptible),
        declare("pb", Linkage::Preemptible),
    ];
    for (f, k) in [(m1, 3), (m2, 3), (hidden, 3), (pa, 4), (pb, 4)] {
        weighted_sum(&mut module, f, k);
    }
    for (caller, callee) in [(via_m2, m2), (via_hidden, hidden)] {
        build(&mut module, caller, |b, import, params| {
            let f = import(callee, b);
            let call = b.ins().call(f, params);
            let r = b.inst_results(call)[0];
            b.ins().iadd_imm_s(r, 5)
        });
    }
    let (object_module, report) = module.finish().unwrap();
    assert!(report.merged >= 2, "{timing:?}: {report:?}");
    object_module.finish().emit().unwrap()
}

/// The size and first 4 bytes of each of `names` in the ELF object `bytes`.
fn symbol_code(bytes: &[u8], names: &[&str]) -> Vec<(u64, [u8; 4])> {
    use object::{Object, ObjectSection, ObjectSymbol};
    let file = object::File::parse(bytes).unwrap();
    names
        .iter()
        .map(|name| {
            let sym = file
                .symbols()
                .find(|s| s.name() == Ok(name))
                .unwrap_or_else(|| panic!("{name} is in the object"));
            let section = file.section_by_index(sym.section_index().unwrap()).unwrap();
            let data = section.data().unwrap();
            let at = (sym.address() - section.address()) as usize;
            (sym.size(), data[at..at + 4].try_into().unwrap())
        })
        .collect()
}

const DRIVER: &str = r#"
#include <stdio.h>
extern long m1(long, long), m2(long, long), via_m2(long, long), via_hidden(long, long);
extern long pa(long, long), pb(long, long);
int main(void) {
    for (long x = -2; x < 3; x++)
        printf("%ld %ld %ld %ld %ld %ld\n", m1(x, 7), m2(x, 7), via_m2(x, 7), via_hidden(x, 7),
               pa(x, 7), pb(x, 7));
    return 0;
}
"#;

fn driver_output() -> String {
    (-2..3)
        .map(|x| {
            let m = weighted_sum_value(&[x, 7], 3);
            let p = weighted_sum_value(&[x, 7], 4);
            format!("{m} {m} {} {} {p} {p}\n", m + 5, m + 5)
        })
        .collect()
}

/// Objects for x86_64 or aarch64, both timings: the thunks are one jump, `jmp rel32` (5 bytes)
/// or `b imm26` (4 bytes) by their symbols' size and first instruction: `m2`, and in deferred
/// mode `pa` and `pb`; the bodies are larger. The program links with each installed linker
/// (natively, or by the cross compiler and run under qemu) and computes right.
fn object_thunks_are_one_jump_and_link_and_run(aarch64: bool) {
    let (triple, size) = if aarch64 {
        ("aarch64-unknown-linux-gnu", 4)
    } else {
        ("x86_64-unknown-linux-gnu", 5)
    };
    let is_jump = |code: [u8; 4]| match aarch64 {
        true => u32::from_le_bytes(code) >> 26 == 0b000101,
        false => code[0] == 0xe9,
    };
    for timing in [Timing::Eager, Timing::Deferred] {
        let bytes = object_module(triple, timing);
        let mut thunks = vec!["m2"];
        if matches!(timing, Timing::Deferred) {
            thunks.extend(["pa", "pb"]);
        }
        for (name, (len, code)) in thunks.iter().zip(symbol_code(&bytes, &thunks)) {
            assert_eq!(len, size, "{timing:?}: {name} is one jump");
            assert!(is_jump(code), "{timing:?}: {name} is a jump: {code:x?}");
        }
        for (len, _) in symbol_code(&bytes, &["m1", "via_m2"]) {
            assert!(len > size, "{timing:?}: bodies are larger");
        }
        let Some(tc) = link::toolchain(aarch64) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let object = dir.path().join("merged.o");
        std::fs::write(&object, &bytes).unwrap();
        let driver = link::compile_driver(&tc, dir.path(), DRIVER);
        for linker in link::linkers() {
            let exe = dir.path().join(format!("program-{linker}"));
            let out = link::link_and_run(&tc, &exe, &[&driver, &object], linker, false);
            assert_eq!(out, Ok(driver_output()), "{timing:?}, {linker}");
        }
    }
}

#[test]
fn x86_64_object_thunks_are_one_jump_and_link_and_run() {
    object_thunks_are_one_jump_and_link_and_run(false);
}

#[test]
fn aarch64_object_thunks_are_one_jump_and_link_and_run() {
    object_thunks_are_one_jump_and_link_and_run(true);
}
