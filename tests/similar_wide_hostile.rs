//! Hostile inputs for similar groups wider than the argument registers (stack arguments), run
//! natively against the same module compiled without merging: `MergingModule` over a JIT, and
//! objects of some `tests/data/similar_hostile` cases linked with a C driver (x86_64 by `cc`,
//! aarch64 by `aarch64-linux-gnu-gcc -static` under `qemu-aarch64`). And the size law of `-o`
//! (never more `.text` with `--similar`) and its converse (a group that saves is kept).
//!
//! Members have 7 or 8 arguments of their own (every integer argument register on x86_64, all
//! but one or none on aarch64), differ in 12–30 constants of mixed types and in callees that
//! are imports (libc's `labs` / `llabs`, both `long -> long`), and are reached from callers in
//! `system_v`, `tail` (by `return_call`) and `winch`, so every added parameter is a stack
//! argument and removed members' callers pass them.

#[path = "common/sizes.rs"]
mod sizes;

use clif_merge::{MergeOptions, MergingModule, Mode, SimilarOptions};
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, Value, types};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

const ARGS: usize = 7;
const MEMBERS: usize = 6;

/// A host JIT with frame pointers (Cranelift's x86_64 `return_call` needs them).
fn jit() -> JITModule {
    let mut flags = settings::builder();
    flags.set("preserve_frame_pointers", "true").unwrap();
    let isa = cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(settings::Flags::new(flags))
        .expect("the host ISA");
    JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()))
}

/// Every group that fits, whatever it saves.
fn forced(mode: Mode) -> MergeOptions {
    MergeOptions {
        mode,
        similar: Some(SimilarOptions {
            min_saving: i64::MIN,
            ..SimilarOptions::default()
        }),
        ..MergeOptions::default()
    }
}

fn signature(
    module: &impl Module,
    args: usize,
    call_conv: CallConv,
) -> cranelift_codegen::ir::Signature {
    let mut sig = module.make_signature();
    sig.call_conv = call_conv;
    sig.params = vec![AbiParam::new(types::I64); args];
    sig.returns = vec![AbiParam::new(types::I64)];
    sig
}

/// Member `m`: folds its arguments with `holes` constants of rotating types (i8, i16, i32, i64,
/// f64, f32), each different in every member, then calls `labs` or `llabs` (by `m`) on it.
fn define_member(
    module: &mut impl Module,
    id: FuncId,
    m: usize,
    holes: usize,
    call_conv: CallConv,
) {
    let imports = ["labs", "llabs"];
    let callee_sig = signature(module, 1, module.isa().default_call_conv());
    let callee = module
        .declare_function(imports[m % 2], Linkage::Import, &callee_sig)
        .unwrap();
    let mut ctx = module.make_context();
    ctx.func.signature = signature(module, ARGS, call_conv);
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let args: Vec<Value> = b.block_params(entry).to_vec();
        let mut acc = args[0];
        for h in 0..holes {
            let k = (h as i64 + 1) * 1_000_003 + m as i64 * 7_919;
            let c = match h % 6 {
                0 => {
                    let c = b.ins().iconst(types::I8, k & 0x7f);
                    b.ins().sextend(types::I64, c)
                }
                1 => {
                    let c = b.ins().iconst(types::I16, k & 0xffff);
                    b.ins().uextend(types::I64, c)
                }
                2 => {
                    let c = b.ins().iconst(types::I32, k & 0xffff_ffff);
                    b.ins().sextend(types::I64, c)
                }
                3 => b.ins().iconst(types::I64, k),
                4 => {
                    let c = b.ins().f64const(k as f64 / 3.0);
                    b.ins().fcvt_to_sint_sat(types::I64, c)
                }
                _ => {
                    let c = b.ins().f32const((k % 65_536) as f32 * 0.25);
                    b.ins().fcvt_to_sint_sat(types::I64, c)
                }
            };
            let t = b.ins().imul(acc, c);
            acc = b.ins().iadd(t, args[h % ARGS]);
        }
        let f = module.declare_func_in_func(callee, b.func);
        let call = b.ins().call(f, &[acc]);
        let r = b.inst_results(call)[0];
        b.ins().return_(&[r]);
        b.finalize(module.target_config());
    }
    module.define_function(id, &mut ctx).unwrap();
}

/// A caller of `callee` in `call_conv`: passes `x + i` as argument `i`; under `tail` by
/// `return_call`.
fn define_caller(module: &mut impl Module, id: FuncId, callee: FuncId, call_conv: CallConv) {
    let mut ctx = module.make_context();
    ctx.func.signature = signature(module, 1, call_conv);
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let x = b.block_params(entry)[0];
        let args: Vec<Value> = (0..ARGS)
            .map(|i| b.ins().iadd_imm_s(x, i as i64 * 3))
            .collect();
        let f = module.declare_func_in_func(callee, b.func);
        if call_conv == CallConv::Tail {
            b.ins().return_call(f, &args);
        } else {
            let call = b.ins().call(f, &args);
            let r = b.inst_results(call)[0];
            b.ins().return_(&[r]);
        }
        b.finalize(module.target_config());
    }
    module.define_function(id, &mut ctx).unwrap();
}

/// The module: members `m0..` (local, in `conv`), each called by an exported `c{m}` in the
/// same convention, and an exported `system_v` entry `run{m}` calling `c{m}`; the ids of the
/// entries.
fn build(module: &mut impl Module, holes: usize, conv: CallConv) -> Vec<FuncId> {
    let mut entries = Vec::new();
    let host = module.isa().default_call_conv();
    for m in 0..MEMBERS {
        let msig = signature(module, ARGS, conv);
        let member = module
            .declare_function(&format!("m{m}"), Linkage::Local, &msig)
            .unwrap();
        define_member(module, member, m, holes, conv);
        let csig = signature(module, 1, conv);
        let caller = module
            .declare_function(&format!("c{m}"), Linkage::Local, &csig)
            .unwrap();
        define_caller(module, caller, member, conv);
        let rsig = signature(module, 1, host);
        let entry = module
            .declare_function(&format!("run{m}"), Linkage::Export, &rsig)
            .unwrap();
        define_caller_of_one(module, entry, caller, conv, host);
        entries.push(entry);
    }
    entries
}

/// `run(x) = callee(x)` in the host convention, `callee` in `conv`.
fn define_caller_of_one(
    module: &mut impl Module,
    id: FuncId,
    callee: FuncId,
    _conv: CallConv,
    host: CallConv,
) {
    let mut ctx = module.make_context();
    ctx.func.signature = signature(module, 1, host);
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let x = b.block_params(entry)[0];
        let f = module.declare_func_in_func(callee, b.func);
        let call = b.ins().call(f, &[x]);
        let r = b.inst_results(call)[0];
        b.ins().return_(&[r]);
        b.finalize(module.target_config());
    }
    module.define_function(id, &mut ctx).unwrap();
}

fn run_all(jit: &JITModule, entries: &[FuncId]) -> Vec<i64> {
    let mut out = Vec::new();
    for &id in entries {
        let ptr = jit.get_finalized_function(id);
        // SAFETY: every entry is `fn(i64) -> i64` in the host's default convention.
        let f: extern "C" fn(i64) -> i64 = unsafe { std::mem::transmute(ptr) };
        for x in [0, 1, -7, 123_456_789, i64::MIN / 3] {
            out.push(f(x));
        }
    }
    out
}

/// What the entries compute unmerged, and merged by `MergingModule` under `mode`; and how many
/// parameters the widest similar group added.
fn unmerged_and_merged(holes: usize, conv: CallConv, mode: Mode) -> (Vec<i64>, Vec<i64>, usize) {
    let mut plain = jit();
    let entries = build(&mut plain, holes, conv);
    plain.finalize_definitions().unwrap();
    let expected = run_all(&plain, &entries);
    let mut module = MergingModule::with_options(jit(), forced(mode));
    let entries = build(&mut module, holes, conv);
    let (mut merged, report) = module.finish().unwrap();
    merged.finalize_definitions().unwrap();
    let widest = report
        .similar
        .iter()
        .flatten()
        .map(|g| g.parameters)
        .max()
        .unwrap_or(0);
    (expected, run_all(&merged, &entries), widest)
}

#[test]
fn wide_groups_in_a_jit_compute_what_the_unmerged_module_does() {
    for conv in [
        CallConv::SystemV,
        CallConv::Tail,
        CallConv::Fast,
        CallConv::Winch,
    ] {
        for holes in [12, 24, 30] {
            for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                let (expected, got, widest) = unmerged_and_merged(holes, conv, mode);
                // Every constant and the callee differ in every member.
                assert!(
                    widest > holes,
                    "{conv:?} {holes} {mode:?}: no wide group ({widest})"
                );
                assert_eq!(expected, got, "{conv:?}, {holes} constants, {mode:?}");
            }
        }
    }
}

/// Three functions (`%b` local) that differ only in `holes` constants, each multiplied by
/// zero: the mid-end erases them, so all three compile to the same machine code, which the
/// object folds into one body.
fn erased_constants(holes: usize) -> String {
    let mut text = String::from("; linkage: %b local\n\n");
    for (name, k) in [("a", 7), ("b", 9), ("c", 11)] {
        text += &format!(
            "function %{name}(i64, i64, i64, i64, i64, i64, i64) -> i64 system_v {{\n\
             block0(v0: i64, v1: i64, v2: i64, v3: i64, v4: i64, v5: i64, v6: i64):\n    \
             v9 = iconst.i64 0\n"
        );
        let (mut acc, mut n) = ("v0".to_string(), 10);
        for h in 0..holes {
            text += &format!(
                "    v{n} = iconst.i64 {}\n    v{} = imul v{n}, v9\n    v{} = rotl {acc}, v{}\n    \
                 v{} = bxor v{}, v{}\n",
                k * (h + 1),
                n + 1,
                n + 2,
                1 + h % 6,
                n + 3,
                n + 2,
                n + 1
            );
            acc = format!("v{}", n + 3);
            n += 4;
        }
        for h in 0..24 {
            text += &format!(
                "    v{n} = rotl {acc}, v{}\n    v{} = iadd v{n}, v{}\n",
                1 + h % 6,
                n + 1,
                1 + (h + 2) % 6
            );
            acc = format!("v{}", n + 1);
            n += 2;
        }
        text += &format!("    return {acc}\n}}\n\n");
    }
    text
}

/// The pipeline writing an object for `target` in `mode` (machine-code folding on), merging
/// exactly and, with `similar`, similar functions.
fn object_options(
    target: &str,
    mode: Mode,
    similar: Option<SimilarOptions>,
) -> clif_merge::pipeline::PipelineOptions {
    clif_merge::pipeline::PipelineOptions {
        merge: merge_options(mode, similar),
        object: Some(sizes::object(target, mode)),
        ..Default::default()
    }
}

/// Merging in `mode`, exactly and, with `similar`, similar functions.
fn merge_options(mode: Mode, similar: Option<SimilarOptions>) -> MergeOptions {
    MergeOptions {
        mode,
        similar,
        ..MergeOptions::default()
    }
}

/// `.text` bytes of `text` compiled for `target` in `mode`, with `--similar` or without.
fn text_bytes(text: &str, target: &str, mode: Mode, similar: bool) -> u64 {
    text_bytes_with(text, target, mode, similar.then(SimilarOptions::default))
}

/// `.text` bytes of `text` compiled for `target` in `mode` with `similar`.
fn text_bytes_with(text: &str, target: &str, mode: Mode, similar: Option<SimilarOptions>) -> u64 {
    let module = sizes::read("erased.clif", text);
    sizes::merged_text(&module, target, merge_options(mode, similar)).0
}

/// The law of docs/similar.md ("`-o` with `--similar` never writes more `.text` than without
/// it") on [`erased_constants`]; the failures as text.
fn erased_constants_grow(holes: usize) -> Vec<String> {
    let text = erased_constants(holes);
    let mut failures = Vec::new();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            let exact = text_bytes(&text, target, mode, false);
            let similar = text_bytes(&text, target, mode, true);
            if similar > exact {
                failures.push(format!("{target} {mode:?}: .text {exact} -> {similar}"));
            }
        }
    }
    failures
}

#[test]
fn similar_with_an_object_never_grows_text_over_constants_the_mid_end_erases() {
    let mut failures = erased_constants_grow(1);
    failures.extend(erased_constants_grow(8));
    assert!(
        failures.is_empty(),
        "{failures:#?}\n{}",
        erased_constants(8)
    );
}

/// Three local members of 8 arguments (every integer argument register on x86_64) that differ
/// in 4 constants, with bodies of 80 instructions, each called twice by each of two callers:
/// merged, every added parameter is a stack argument at 4 call sites per member.
fn called_wide_members() -> String {
    let mut text = String::new();
    for m in 0..3 {
        text += &format!("; linkage: %m{m} local\n");
    }
    let args = |n: usize| vec!["i64"; n].join(", ");
    for m in 0..3 {
        text += &format!("\nfunction %m{m}({}) -> i64 system_v {{\nblock0(", args(8));
        text += &(0..8)
            .map(|i| format!("v{i}: i64"))
            .collect::<Vec<_>>()
            .join(", ");
        text += "):\n";
        let (mut acc, mut n) = ("v0".to_string(), 100);
        for h in 0..4 {
            text += &format!(
                "    v{n} = iconst.i64 {}\n    v{} = imul {acc}, v{n}\n    v{} = iadd v{}, v{}\n",
                h * 100_003 + m * 17 + 5,
                n + 1,
                n + 2,
                n + 1,
                h % 8
            );
            acc = format!("v{}", n + 2);
            n += 3;
        }
        for b in 0..40 {
            text += &format!(
                "    v{n} = rotl {acc}, v{}\n    v{} = bxor v{n}, v{}\n",
                b % 8,
                n + 1,
                (b + 3) % 8
            );
            acc = format!("v{}", n + 1);
            n += 2;
        }
        text += &format!("    return {acc}\n}}\n");
    }
    for m in 0..3 {
        for c in 0..2 {
            text += &format!(
                "\nfunction %c{m}_{c}(i64) -> i64 system_v {{\n    sig0 = ({}) -> i64 system_v\n    \
                 fn0 = %m{m} sig0\nblock0(v0: i64):\n",
                args(8)
            );
            let mut acc = "v0".to_string();
            for k in 0..2 {
                text += &format!(
                    "    v{} = call fn0({})\n",
                    1000 + k,
                    [acc.as_str(); 8].join(", ")
                );
                acc = format!("v{}", 1000 + k);
            }
            // A different tail for each caller, so that the callers are no similar group.
            for k in 0..c + m * 2 {
                text += &format!("    v{} = bxor {acc}, v0\n", 30 + k);
                acc = format!("v{}", 30 + k);
            }
            text += &format!("    return {acc}\n}}\n");
        }
    }
    text
}

#[test]
fn similar_with_an_object_merges_members_whose_callers_pass_stack_arguments_when_it_saves() {
    let text = called_wide_members();
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let mut failures = Vec::new();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let exact = text_bytes(&text, target, Mode::Safe, false);
        let merged = text_bytes_with(&text, target, Mode::Safe, Some(forced.clone()));
        let chosen = text_bytes(&text, target, Mode::Safe, true);
        // The law of the judge: what merging saves, --similar keeps.
        if merged < exact && chosen > merged {
            failures.push(format!(
                "{target}: .text {exact} unmerged, {merged} merged, {chosen} with --similar"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}\n{text}");
}

/// The `tests/data/similar_hostile` cases whose functions `%run_m0..` (`(i64[, i64]) -> i64`,
/// `system_v`) reach members through wide groups.
const NATIVE_CASES: [&str; 4] = [
    "narrow-extended-constants-on-the-stack",
    "nan-payloads-on-the-stack",
    "tail-return-calls-with-stack-parameters",
    "winch-members-with-stack-parameters",
];

/// The C compiler and the runner for `arch`'s executables, when installed; None (with a note)
/// otherwise, which under CI is a failure.
fn toolchain(arch: &str) -> Option<(Vec<&'static str>, Vec<&'static str>)> {
    let (cc, run): (Vec<&str>, Vec<&str>) = if arch == "x86_64" {
        (vec!["cc"], vec![])
    } else {
        (
            vec!["aarch64-linux-gnu-gcc", "-static"],
            vec!["qemu-aarch64"],
        )
    };
    let present = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !present(cc[0]) || run.first().is_some_and(|r| !present(r)) {
        assert!(std::env::var_os("CI").is_none(), "CI needs {cc:?} {run:?}");
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping {arch}: no {cc:?} {run:?}"
        );
        return None;
    }
    Some((cc, run))
}

/// Links `object` with a driver calling `%run_m0..%run_m{n-1}` on a few arguments; what it
/// printed.
fn link_and_run(arch: &str, object: &[u8], members: usize) -> Option<String> {
    let (cc, run) = toolchain(arch)?;
    let dir = tempfile::tempdir().unwrap();
    let mut driver = String::from("#include <stdio.h>\n#include <stdint.h>\n");
    let mut calls = String::new();
    for m in 0..members {
        driver += &format!("int64_t run_m{m}(int64_t, int64_t);\n");
        for x in [1, -7, 123_456_789] {
            calls += &format!("    printf(\"m{m} %lld\\n\", (long long)run_m{m}({x}, {x} * 3));\n");
        }
    }
    driver += &format!("int main(void) {{\n{calls}    return 0;\n}}\n");
    let (source, obj, exe) = (
        dir.path().join("driver.c"),
        dir.path().join("merged.o"),
        dir.path().join("program"),
    );
    std::fs::write(&source, driver).unwrap();
    std::fs::write(&obj, object).unwrap();
    let status = std::process::Command::new(cc[0])
        .args(&cc[1..])
        .arg(&source)
        .arg(&obj)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success(), "{arch}: the driver links");
    let out = match run.first() {
        Some(runner) => std::process::Command::new(runner).arg(&exe).output(),
        None => std::process::Command::new(&exe).output(),
    }
    .unwrap();
    assert!(out.status.success(), "{arch}: {out:?}");
    Some(String::from_utf8(out.stdout).unwrap())
}

/// The object of the module at `path` for `arch`, merged in `mode` with `similar`; the
/// widest group's parameters.
fn object_of(
    path: &std::path::Path,
    arch: &str,
    mode: Mode,
    similar: Option<SimilarOptions>,
) -> (Vec<u8>, usize) {
    use clif_merge::pipeline::run;
    let text = std::fs::read_to_string(path).unwrap();
    let module = clif_merge::read::read_module_text(path, &text, Default::default()).unwrap();
    let options = object_options(arch, mode, similar);
    let out = run(module, &options).expect("the module compiles");
    let widest = (out.report.similar.iter().flatten())
        .map(|g| g.parameters)
        .max()
        .unwrap_or(0);
    (out.object.expect("an object").bytes, widest)
}

#[test]
fn wide_hostile_cases_linked_and_run_print_what_the_unmerged_module_does() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/similar_hostile");
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    // Stack arguments only, and records where they save more (narrow extended constants and
    // NaN payloads load from a record with their exact bits).
    let stack_only = SimilarOptions {
        records: Some(false),
        ..forced.clone()
    };
    for arch in ["x86_64", "aarch64"] {
        for case in NATIVE_CASES {
            let path = dir.join(format!("{case}.clif"));
            let text = std::fs::read_to_string(&path).unwrap();
            let members = text.matches("function %run_m").count();
            let (reference, _) = object_of(&path, arch, Mode::Safe, None);
            let Some(expected) = link_and_run(arch, &reference, members) else {
                break;
            };
            for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                let (merged, widest) = object_of(&path, arch, mode, Some(stack_only.clone()));
                assert!(widest >= 10, "{case} {arch} {mode:?}: no wide group");
                let got = link_and_run(arch, &merged, members).unwrap();
                assert_eq!(got, expected, "{case} {arch} {mode:?}");
                let (merged, _) = object_of(&path, arch, mode, Some(forced.clone()));
                let got = link_and_run(arch, &merged, members).unwrap();
                assert_eq!(got, expected, "{case} {arch} {mode:?}, records allowed");
            }
        }
    }
}

/// `members` functions of one argument that differ in `holes` constants each.
fn constants_apart(members: usize, holes: usize, call_conv: &str) -> String {
    let mut text = String::new();
    for m in 0..members {
        text += &format!("function %f{m}(i64) -> i64 {call_conv} {{\nblock0(v0: i64):\n");
        let mut acc = "v0".to_string();
        for h in 0..holes {
            let n = 10 + 2 * h;
            text += &format!(
                "    v{n} = iconst.i64 {}\n    v{} = imul {acc}, v{n}\n",
                (h * 1_000_003 + m * 7_919 + 3) % 1_000_000,
                n + 1
            );
            acc = format!("v{}", n + 1);
        }
        text += &format!("    return {acc}\n}}\n\n");
    }
    text
}

#[test]
fn a_max_parameters_past_the_default_gives_groups_that_compile_and_run() {
    let text = constants_apart(3, 100, "system_v");
    let path = std::path::Path::new("wide.clif");
    let options = MergeOptions {
        similar: Some(SimilarOptions {
            min_saving: i64::MIN,
            max_parameters: 200,
            ..SimilarOptions::default()
        }),
        ..MergeOptions::default()
    };
    for arch in ["x86_64", "aarch64"] {
        use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target};
        use clif_merge::pipeline::{PipelineOptions, run};
        let module = clif_merge::read::read_module_text(path, &text, Default::default()).unwrap();
        let original = module.clone();
        let mut merged = module.clone();
        let (report, _) =
            clif_merge::merge_module_with(&mut merged, Mode::Safe, options.similar.as_ref());
        let widest = (report.similar.iter().flatten())
            .map(|g| g.parameters)
            .max();
        assert_eq!(widest, Some(100), "{report:?}");
        let verified = clif_merge::verify::verify_merge(
            &original,
            &merged,
            &report,
            &clif_merge::verify::VerifyOptions::default(),
        );
        assert!(verified.is_ok(), "{}", verified.summary());
        let pipeline = PipelineOptions {
            merge: options.clone(),
            object: Some(ObjectOptions {
                target: parse_target(arch).unwrap(),
                opt_level: OptLevel::Speed,
                isa: IsaSettings::default(),
                function_sections: false,
                mode: Mode::Safe,
                fold_machine_code: true,
            }),
            ..Default::default()
        };
        run(module, &pipeline).expect("a 100-parameter group compiles");
    }
}

/// `groups` families of four members (every second one local), each family its own shape
/// (`system_v`, `tail` or `fast`, 1–9 arguments, 6–19 constants of which a third differ by
/// member, 0–10 rotations): 4 × `groups` functions, in an order `shuffle` picks (0: as made).
fn families(groups: usize, shuffle: u64) -> String {
    let mut funcs = Vec::new();
    let mut directives = Vec::new();
    for g in 0..groups {
        let holes = 6 + g % 14;
        let conv = ["system_v", "tail", "fast"][g % 3];
        let args = 1 + g % 9;
        for m in 0..4 {
            let name = format!("g{g}_m{m}");
            if m % 2 == 1 {
                directives.push(format!("; linkage: %{name} local\n"));
            }
            let mut text = format!(
                "function %{name}({}) -> i64 {conv} {{\nblock0({}):\n",
                vec!["i64"; args].join(", "),
                (0..args)
                    .map(|i| format!("v{i}: i64"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let (mut acc, mut n) = ("v0".to_string(), 100);
            for h in 0..holes {
                let own = if (h + m) % 3 == 0 { 0 } else { m };
                let op = ["iadd", "imul", "bxor", "isub"][(h + g) % 4];
                text += &format!(
                    "    v{n} = iconst.i64 {}\n    v{} = {op} {acc}, v{n}\n    v{} = iadd v{}, v{}\n",
                    (h * 1_000_003 + g * 7 + own) % 100_000,
                    n + 1,
                    n + 2,
                    n + 1,
                    h % args
                );
                acc = format!("v{}", n + 2);
                n += 3;
            }
            for _ in 0..(g % 5 + (g / 5) % 7) {
                text += &format!("    v{n} = rotl {acc}, v0\n");
                acc = format!("v{n}");
                n += 1;
            }
            text += &format!("    return {acc}\n}}\n");
            funcs.push(text);
        }
    }
    // xorshift Fisher-Yates: no dependency for a permutation.
    let mut state = shuffle.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..funcs.len()).rev() {
        if shuffle == 0 {
            break;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        funcs.swap(i, (state % (i as u64 + 1)) as usize);
    }
    format!("{}\n{}", directives.concat(), funcs.join("\n"))
}

/// The functions of a CLIF text by name, each with its text.
fn function_texts(clif: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for func in clif.split("\nfunction ").skip(1) {
        let name = func.split('(').next().unwrap().to_string();
        out.insert(name, func.to_string());
    }
    out
}

/// `text` merged with every similar group that fits forced, on `threads` threads, in `mode`:
/// the merged CLIF and the JSON report.
fn merged_on(text: &str, threads: usize, mode: Mode) -> (String, String) {
    let path = std::path::Path::new("families.clif");
    let mut module = clif_merge::read::read_module_text(path, text, Default::default()).unwrap();
    let options = MergeOptions {
        mode,
        similar: Some(SimilarOptions {
            min_saving: i64::MIN,
            ..SimilarOptions::default()
        }),
        threads: std::num::NonZeroUsize::new(threads),
        ..MergeOptions::default()
    };
    let (report, _) = clif_merge::merge_module_with_options(&mut module, &options);
    assert!(
        (report.similar.iter().flatten()).any(|g| g.parameters > 6),
        "no group with stack arguments"
    );
    (
        clif_merge::emit::module_to_clif(&module),
        serde_json::to_string(&report).unwrap(),
    )
}

#[test]
fn over_4096_functions_wide_groups_do_not_depend_on_threads_or_order() {
    // 4,400 functions: past the 4,096 under which every phase runs on one thread.
    let text = families(1_100, 0);
    for mode in [Mode::Safe, Mode::Thunks] {
        let one = merged_on(&text, 1, mode);
        assert_eq!(
            one,
            merged_on(&text, 3, mode),
            "{mode:?}: 1 thread against 3"
        );
        let (clif, report) = merged_on(&families(1_100, 5), 3, mode);
        assert_eq!(report, one.1, "{mode:?}: another order, another report");
        assert!(
            function_texts(&clif) == function_texts(&one.0),
            "{mode:?}: another order, other functions"
        );
    }
}

/// A thunk of a wide group passing one wrong constant among its stack arguments (the ninth of
/// ten, an `i8`) is a wrong merge that `--verify` reports.
#[test]
fn verify_reports_a_thunk_passing_a_wrong_stack_argument() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/similar_hostile/narrow-extended-constants-on-the-stack.clif");
    let text = std::fs::read_to_string(&path).unwrap();
    let original = clif_merge::read::read_module_text(&path, &text, Default::default()).unwrap();
    let mut merged = original.clone();
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let (report, _) = clif_merge::merge_module_with(&mut merged, Mode::Thunks, Some(&forced));
    let clif = clif_merge::emit::module_to_clif(&merged);
    let thunk = clif.find("function %m0(").expect("the thunk of %m0");
    let ninth = thunk
        + clif[thunk..]
            .find("iconst.i8 107")
            .expect("its ninth constant");
    let edited = format!(
        "{}iconst.i8 106{}",
        &clif[..ninth],
        &clif[ninth + "iconst.i8 107".len()..]
    );
    let path = std::path::Path::new("corrupted.clif");
    let corrupted = clif_merge::read::read_module_text(path, &edited, Default::default()).unwrap();
    let options = clif_merge::verify::VerifyOptions::default();
    assert!(clif_merge::verify::verify_merge(&original, &merged, &report, &options).is_ok());
    assert!(!clif_merge::verify::verify_merge(&original, &corrupted, &report, &options).is_ok());
}
