//! `MergingModule` over real cranelift-module backends: a JIT (every `FuncId` callable, results
//! right) and an object (every exported symbol present). Functions are built with
//! cranelift-frontend, as embedders build them.

use clif_merge::{Action, MergeOptions, MergingModule, Mode};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, Value, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, isa::OwnedTargetIsa};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{DataDescription, FuncId, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

#[path = "common/build.rs"]
mod build;
#[path = "common/cc.rs"]
mod cc;
use cc::link_and_run;

fn jit() -> JITModule {
    JITModule::new(JITBuilder::new(default_libcall_names()).expect("a host JIT"))
}

fn host_isa() -> OwnedTargetIsa {
    let mut flags = settings::builder();
    flags.set("is_pic", "true").unwrap();
    cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(settings::Flags::new(flags))
        .expect("the host ISA")
}

fn declare(module: &mut impl Module, name: &str, linkage: Linkage) -> FuncId {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    module.declare_function(name, linkage, &sig).unwrap()
}

/// Builds `id`'s body, one block returning `body(builder, import, its parameter)`, and defines
/// it; returns the context after `define_function`.
fn define(
    module: &mut impl Module,
    id: FuncId,
    body: impl FnOnce(&mut FunctionBuilder, &mut build::Import, Value) -> Value,
) -> Context {
    build::build(module, id, |b, import, params| body(b, import, params[0]))
}

/// `x * 3 + 1`
fn mul3(module: &mut impl Module, id: FuncId) -> Context {
    define(module, id, |b, _, x| {
        let t = b.ins().imul_imm_s(x, 3);
        b.ins().iadd_imm_s(t, 1)
    })
}

/// `callee(x) + 5`
fn caller(module: &mut impl Module, id: FuncId, callee: FuncId) {
    define(module, id, |b, import, x| {
        let f = import(callee, b);
        let call = b.ins().call(f, &[x]);
        let r = b.inst_results(call)[0];
        b.ins().iadd_imm_s(r, 5)
    });
}

/// `if x <= 1 { 1 } else { x * self(x - 1) }`
fn factorial(module: &mut impl Module, id: FuncId) {
    define(module, id, |b, import, x| {
        let recurse = b.create_block();
        let done = b.create_block();
        b.append_block_param(done, types::I32);
        let small = b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, x, 1);
        let one = b.ins().iconst(types::I32, 1);
        b.ins().brif(small, done, &[one.into()], recurse, &[]);
        b.seal_block(recurse);
        b.switch_to_block(recurse);
        let f = import(id, b);
        let n1 = b.ins().iadd_imm_s(x, -1);
        let call = b.ins().call(f, &[n1]);
        let r = b.inst_results(call)[0];
        let prod = b.ins().imul(x, r);
        b.ins().jump(done, &[prod.into()]);
        b.seal_block(done);
        b.switch_to_block(done);
        b.block_params(done)[0]
    });
}

fn call(jit: &JITModule, id: FuncId, x: i32) -> i32 {
    let ptr = jit.get_finalized_function(id);
    // SAFETY: every function of these tests has the signature `fn(i32) -> i32` in the host's
    // default calling convention.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(ptr) };
    f(x)
}

#[test]
fn deferred_jit_every_func_id_is_callable_and_right() {
    let mut module = MergingModule::deferred(jit());
    let a = declare(&mut module, "a", Linkage::Export);
    let b = declare(&mut module, "b", Linkage::Export);
    let c = declare(&mut module, "c", Linkage::Export);
    let d = declare(&mut module, "d", Linkage::Local);
    mul3(&mut module, a);
    mul3(&mut module, b);
    caller(&mut module, c, b);
    mul3(&mut module, d);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert!(report.merged >= 2, "{report:?}");
    for id in [a, b, d] {
        assert_eq!(call(&jit, id, 4), 13);
    }
    assert_eq!(call(&jit, c, 4), 18);
}

#[test]
fn deferred_self_recursive_pair_merges_and_both_compute() {
    let mut module = MergingModule::deferred(jit());
    let f0 = declare(&mut module, "fact0", Linkage::Export);
    let f1 = declare(&mut module, "fact1", Linkage::Export);
    factorial(&mut module, f0);
    factorial(&mut module, f1);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 1, "{report:?}");
    for id in [f0, f1] {
        assert_eq!(call(&jit, id, 5), 120);
    }
}

#[test]
fn deferred_local_function_in_data_keeps_its_own_address() {
    let mut module = MergingModule::deferred(jit());
    let a = declare(&mut module, "a", Linkage::Local);
    let b = declare(&mut module, "b", Linkage::Local);
    mul3(&mut module, a);
    mul3(&mut module, b);
    let table = module
        .declare_data("table", Linkage::Export, false, false)
        .unwrap();
    let mut data = DataDescription::new();
    data.define_zeroinit(8);
    let fr = module.declare_func_in_data(b, &mut data);
    data.write_function_addr(0, fr);
    module.define_data(table, &data).unwrap();
    let (mut jit, _) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    let pa = jit.get_finalized_function(a);
    let pb = jit.get_finalized_function(b);
    assert_ne!(pa, pb);
    let (table_ptr, _) = jit.get_finalized_data(table);
    // SAFETY: the table holds one function address, written by the JIT.
    let stored = unsafe { std::ptr::read_unaligned(table_ptr as *const *const u8) };
    assert_eq!(stored, pb);
    assert_eq!(call(&jit, a, 2), 7);
    assert_eq!(call(&jit, b, 2), 7);
}

#[test]
fn eager_second_duplicate_is_defined_as_a_thunk() {
    let mut module = MergingModule::new(jit());
    let a = declare(&mut module, "a", Linkage::Export);
    let b = declare(&mut module, "b", Linkage::Export);
    let c = declare(&mut module, "c", Linkage::Export);
    // A body larger than a thunk: x * 3 + 1, then * 7 + 2, then xor 5.
    let big = |module: &mut MergingModule<JITModule>, id| {
        define(module, id, |b, _, x| {
            let t = b.ins().imul_imm_s(x, 3);
            let t = b.ins().iadd_imm_s(t, 1);
            let t = b.ins().imul_imm_s(t, 7);
            let t = b.ins().iadd_imm_s(t, 2);
            b.ins().bxor_imm_s(t, 5)
        })
    };
    let first = big(&mut module, a);
    let second = big(&mut module, b);
    let first_len = first.compiled_code().unwrap().code_buffer().len();
    // The thunk is one jump, nothing compiled, on hosts that have one; else a smaller body.
    let host_jumps = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
    assert_eq!(second.compiled_code().is_none(), host_jumps);
    if let Some(code) = second.compiled_code() {
        assert!(code.code_buffer().len() < first_len);
    }
    caller(&mut module, c, b);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 1);
    let want = ((4 * 3 + 1) * 7 + 2) ^ 5;
    assert_eq!(call(&jit, a, 4), want);
    assert_eq!(call(&jit, b, 4), want);
    assert_eq!(call(&jit, c, 4), want + 5);
}

#[test]
fn eager_self_recursive_copies_merge() {
    let mut module = MergingModule::new(jit());
    let f0 = declare(&mut module, "fact0", Linkage::Export);
    let f1 = declare(&mut module, "fact1", Linkage::Export);
    factorial(&mut module, f0);
    factorial(&mut module, f1);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 1);
    assert_eq!(call(&jit, f1, 5), 120);
}

#[test]
fn deferred_object_has_every_exported_symbol() {
    use object::{Object, ObjectSymbol};
    let builder = ObjectBuilder::new(host_isa(), "merged", default_libcall_names()).unwrap();
    let mut module = MergingModule::deferred(ObjectModule::new(builder));
    let names = ["one", "two", "three"];
    let ids: Vec<FuncId> = names
        .iter()
        .map(|n| declare(&mut module, n, Linkage::Export))
        .collect();
    mul3(&mut module, ids[0]);
    mul3(&mut module, ids[1]);
    caller(&mut module, ids[2], ids[1]);
    let (object_module, report) = module.finish().unwrap();
    assert_eq!(report.merged, 1);
    let bytes = object_module.finish().emit().unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let defined: Vec<String> = file
        .symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect();
    for name in names {
        assert!(
            defined.iter().any(|d| d.trim_start_matches('_') == name),
            "{name} in {defined:?}"
        );
    }
}

#[test]
fn finish_error_is_send_sync_static() {
    fn check<E: std::error::Error + Send + Sync + 'static>() {}
    check::<clif_merge::merging_module::FinishError>();
}

#[test]
fn deferred_preemptible_class_gets_a_private_copy_and_everything_runs() {
    let mut module = MergingModule::deferred(jit());
    let a = declare(&mut module, "pa", Linkage::Preemptible);
    let b = declare(&mut module, "pb", Linkage::Preemptible);
    let c = declare(&mut module, "pc", Linkage::Export);
    let ctx = mul3(&mut module, a);
    // Deferred: nothing is compiled at definition.
    assert!(ctx.compiled_code().is_none());
    mul3(&mut module, b);
    caller(&mut module, c, b);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 2, "{report:?}");
    assert_eq!(call(&jit, a, 1), 4);
    assert_eq!(call(&jit, b, 1), 4);
    assert_eq!(call(&jit, c, 1), 9);
}

#[test]
fn definitions_the_inner_module_would_refuse_are_refused_at_once() {
    for mut module in [MergingModule::deferred(jit()), MergingModule::new(jit())] {
        let import = declare(&mut module, "imported", Linkage::Import);
        let mut ctx = module.make_context();
        ctx.func.signature = module
            .declarations()
            .get_function_decl(import)
            .signature
            .clone();
        assert!(module.define_function(import, &mut ctx).is_err());
        let a = declare(&mut module, "a", Linkage::Export);
        mul3(&mut module, a);
        let mut ctx = module.make_context();
        assert!(module.define_function(a, &mut ctx).is_err());
    }
}

#[test]
fn eager_functions_returning_their_own_address_stay_distinct() {
    let mut module = MergingModule::new(jit());
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I64));
    let ids: Vec<FuncId> = ["self_a", "self_b"]
        .iter()
        .map(|n| module.declare_function(n, Linkage::Export, &sig).unwrap())
        .collect();
    for &id in &ids {
        define(&mut module, id, |b, import, _| {
            let f = import(id, b);
            b.ins().func_addr(types::I64, f)
        });
    }
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 0, "{report:?}");
    for id in ids {
        let ptr = jit.get_finalized_function(id);
        // SAFETY: `fn(i32) -> i64` in the host's default calling convention.
        let f: extern "C" fn(i32) -> i64 = unsafe { std::mem::transmute(ptr) };
        assert_eq!(f(0), ptr as i64);
    }
}

#[test]
fn deferred_object_with_a_private_copy_emits() {
    use object::{Object, ObjectSymbol};
    let builder = ObjectBuilder::new(host_isa(), "merged", default_libcall_names()).unwrap();
    let mut module = MergingModule::deferred(ObjectModule::new(builder));
    let a = declare(&mut module, "weak_a", Linkage::Preemptible);
    let b = declare(&mut module, "weak_b", Linkage::Preemptible);
    let c = declare(&mut module, "user", Linkage::Export);
    mul3(&mut module, a);
    mul3(&mut module, b);
    caller(&mut module, c, b);
    let (object_module, report) = module.finish().unwrap();
    assert_eq!(report.merged, 2, "{report:?}");
    let bytes = object_module.finish().emit().unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let defined: Vec<String> = file
        .symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect();
    for name in ["weak_a", "weak_b", "user"] {
        assert!(
            defined.iter().any(|d| d.trim_start_matches('_') == name),
            "{name} in {defined:?}"
        );
    }
}

/// `x * k + 1`
fn mul_k(module: &mut impl Module, id: FuncId, k: i64) {
    define(module, id, |b, _, x| {
        let t = b.ins().imul_imm_s(x, k);
        b.ins().iadd_imm_s(t, 1)
    });
}

#[test]
fn deferred_similar_merges_functions_that_differ_in_constants_and_every_func_id_runs() {
    let similar = clif_merge::SimilarOptions {
        min_saving: i64::MIN,
        ..Default::default()
    };
    let options = MergeOptions {
        similar: Some(similar),
        ..MergeOptions::default()
    };
    let mut module = MergingModule::with_options(jit(), options);
    let a = declare(&mut module, "a", Linkage::Export);
    let b = declare(&mut module, "b", Linkage::Local);
    let c = declare(&mut module, "c", Linkage::Export);
    let d = declare(&mut module, "d", Linkage::Export);
    mul_k(&mut module, a, 3);
    mul_k(&mut module, b, 5);
    caller(&mut module, c, b);
    mul_k(&mut module, d, 7);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    let groups = report.similar.as_ref().expect("similar merging ran");
    assert_eq!(groups.len(), 1, "{report:?}");
    let removed: Vec<_> = groups[0]
        .members
        .iter()
        .filter(|m| m.by == clif_merge::Action::Removed)
        .collect();
    assert_eq!(removed.len(), 1, "the local member is removed: {report:?}");
    assert_eq!(report.merged, 3);
    assert_eq!(call(&jit, a, 4), 13);
    assert_eq!(call(&jit, b, 4), 21, "a removed member stays callable");
    assert_eq!(call(&jit, c, 4), 26);
    assert_eq!(call(&jit, d, 4), 29);
}

#[test]
fn deferred_similar_removes_a_private_copy_and_its_callers_still_run() {
    // `pa` and `pb` are preemptible and equal: the exact merge copies their body to a private
    // function; that copy is similar to `d` and local, so similar merging removes it.
    let similar = clif_merge::SimilarOptions {
        min_saving: i64::MIN,
        ..Default::default()
    };
    // The constructor `with_options` replaced: it still compiles and merges as before.
    #[allow(deprecated)]
    let mut module = MergingModule::deferred_similar(jit(), similar);
    let a = declare(&mut module, "pa", Linkage::Preemptible);
    let b = declare(&mut module, "pb", Linkage::Preemptible);
    let d = declare(&mut module, "d", Linkage::Export);
    mul_k(&mut module, a, 3);
    mul_k(&mut module, b, 3);
    mul_k(&mut module, d, 5);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    let groups = report.similar.as_ref().expect("similar merging ran");
    assert!(
        groups[0]
            .members
            .iter()
            .any(|m| m.by == clif_merge::Action::Removed),
        "{report:?}"
    );
    assert!(report.merged <= 3, "only input functions count: {report:?}");
    assert_eq!(call(&jit, a, 4), 13);
    assert_eq!(call(&jit, b, 4), 13);
    assert_eq!(call(&jit, d, 4), 21);
}

/// Two exported duplicates and a local one, merged under `mode` by `with_options`: what the
/// report says each became, and what every `FuncId` computes.
fn merge_under(mode: Mode) -> Vec<(String, Action)> {
    let options = MergeOptions {
        mode,
        ..MergeOptions::default()
    };
    let mut module = MergingModule::with_options(jit(), options);
    let a = declare(&mut module, "a", Linkage::Export);
    let b = declare(&mut module, "b", Linkage::Export);
    let c = declare(&mut module, "c", Linkage::Local);
    for id in [a, b, c] {
        mul3(&mut module, id);
    }
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    for id in [a, b, c] {
        assert_eq!(call(&jit, id, 4), 13, "every FuncId runs under {mode:?}");
    }
    assert_eq!(report.classes.len(), 1, "{report:?}");
    assert_eq!(report.classes[0].kept.to_string(), "u0:0");
    report.classes[0]
        .replaced
        .iter()
        .map(|r| (r.name.to_string(), r.by))
        .collect()
}

#[test]
fn with_options_merges_under_the_mode_it_is_given() {
    let thunk_b = ("u0:1".to_owned(), Action::Thunk);
    let removed_c = ("u0:2".to_owned(), Action::Removed);
    assert_eq!(merge_under(Mode::Safe), [thunk_b.clone(), removed_c]);
    // Aliases: the report says alias; the inner module gets thunks (it has no aliases).
    let aliases = merge_under(Mode::Aliases);
    assert_eq!(
        aliases[0],
        ("u0:1".to_owned(), Action::Alias),
        "{aliases:?}"
    );
    // Thunks: nothing is removed, the local duplicate included.
    assert_eq!(
        merge_under(Mode::Thunks),
        [thunk_b, ("u0:2".to_owned(), Action::Thunk)]
    );
}

#[test]
fn with_options_default_merges_as_deferred_does() {
    let run = |mut module: MergingModule<JITModule>| {
        let a = declare(&mut module, "a", Linkage::Export);
        let b = declare(&mut module, "b", Linkage::Local);
        let c = declare(&mut module, "c", Linkage::Export);
        mul3(&mut module, a);
        mul3(&mut module, b);
        caller(&mut module, c, b);
        let (_, report) = module.finish().unwrap();
        report
    };
    let deferred = run(MergingModule::deferred(jit()));
    let with_options = run(MergingModule::with_options(jit(), MergeOptions::default()));
    assert_eq!(deferred.merged, 1);
    assert_eq!(format!("{deferred:?}"), format!("{with_options:?}"));
    // Threads change nothing but the pool the merge runs on.
    let two_threads = MergeOptions {
        threads: std::num::NonZeroUsize::new(2),
        ..MergeOptions::default()
    };
    let threaded = run(MergingModule::with_options(jit(), two_threads));
    assert_eq!(format!("{deferred:?}"), format!("{threaded:?}"));
}

#[test]
fn with_options_refuses_a_summary_at_finish_and_hands_the_module_back() {
    let options = MergeOptions {
        summary: Some(clif_merge::global::Summary::default()),
        ..MergeOptions::default()
    };
    let mut module = MergingModule::with_options(jit(), options);
    let a = declare(&mut module, "a", Linkage::Export);
    mul3(&mut module, a);
    let failure = module.try_finish().err().expect("a summary is refused");
    assert!(
        matches!(
            failure.error,
            clif_merge::FinishError::Merge(clif_merge::Error::Unsupported(_))
        ),
        "{failure}"
    );
    assert_eq!(failure.undefined, [a]);
}

/// The object path on aarch64: `MergingModule::deferred(ObjectModule)` for
/// aarch64-unknown-linux-gnu, linked with a C driver by the cross compiler and run under qemu.
/// Duplicates, a caller of a duplicate, self-recursive copies, a removed `local` duplicate still
/// called, and a function whose address is stored in data (kept distinct) all behave.
#[test]
fn deferred_aarch64_object_links_and_runs() {
    let tools = ["aarch64-linux-gnu-gcc", "qemu-aarch64"];
    let present = |t: &str| {
        std::process::Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(missing) = tools.iter().find(|t| !present(t)) {
        assert!(std::env::var_os("CI").is_none(), "CI needs {missing}");
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping: {missing} is not installed"
        );
        return;
    }
    let mut flags = settings::builder();
    flags.set("is_pic", "true").unwrap();
    let isa = cranelift_codegen::isa::lookup_by_name("aarch64-unknown-linux-gnu")
        .unwrap()
        .finish(settings::Flags::new(flags))
        .unwrap();
    let builder = ObjectBuilder::new(isa, "merged", default_libcall_names()).unwrap();
    let mut module = MergingModule::deferred(ObjectModule::new(builder));
    let m1 = declare(&mut module, "m1", Linkage::Export);
    let m2 = declare(&mut module, "m2", Linkage::Export);
    let hidden_copy = declare(&mut module, "hidden_copy", Linkage::Local);
    let uses_copy = declare(&mut module, "uses_copy", Linkage::Export);
    let in_data = declare(&mut module, "in_data", Linkage::Local);
    let f1 = declare(&mut module, "f1", Linkage::Export);
    let f2 = declare(&mut module, "f2", Linkage::Export);
    mul3(&mut module, m1);
    mul3(&mut module, m2);
    mul3(&mut module, hidden_copy);
    caller(&mut module, uses_copy, hidden_copy);
    mul3(&mut module, in_data);
    factorial(&mut module, f1);
    factorial(&mut module, f2);
    let table = module
        .declare_data("table", Linkage::Export, true, false)
        .unwrap();
    let mut data = DataDescription::new();
    // Initialized data: an object's zero-initialized data (.bss) cannot hold a relocation.
    data.define(vec![0u8; 8].into_boxed_slice());
    let fr = module.declare_func_in_data(in_data, &mut data);
    data.write_function_addr(0, fr);
    module.define_data(table, &data).unwrap();
    let (object_module, report) = module.finish().unwrap();
    assert!(report.merged >= 3, "{report:?}");
    let bytes = object_module.finish().emit().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let driver = r#"
#include <stdio.h>
typedef int (*fn)(int);
extern int m1(int), m2(int), uses_copy(int), f1(int), f2(int);
extern fn table;
int main(void) {
    for (int x = 0; x < 8; x++)
        printf("%d %d %d %d %d %d\n", m1(x), m2(x), uses_copy(x), f1(x), f2(x), table(x));
    printf("distinct %d\n", (void *) table != (void *) m1 && (void *) table != (void *) m2);
    return 0;
}
"#;
    std::fs::write(dir.path().join("driver.c"), driver).unwrap();
    std::fs::write(dir.path().join("merged.o"), &bytes).unwrap();
    let exe = dir.path().join("program");
    let status = std::process::Command::new("aarch64-linux-gnu-gcc")
        .arg(dir.path().join("driver.c"))
        .arg(dir.path().join("merged.o"))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success());
    let out = std::process::Command::new("qemu-aarch64")
        .args(["-L", "/usr/aarch64-linux-gnu"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = String::new();
    let fact = |x: i32| (1..=x.max(1)).product::<i32>();
    for x in 0..8 {
        let m = x * 3 + 1;
        let line = format!("{m} {m} {} {} {} {m}\n", m + 5, fact(x), fact(x));
        expected.push_str(&line);
    }
    expected.push_str("distinct 1\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

/// `if x <= 0 { base } else { other(x - 1) + step }`: one half of a mutual recursion.
fn ping(module: &mut impl Module, id: FuncId, other: FuncId, base: i64, step: i64) {
    define(module, id, |b, import, x| {
        let recurse = b.create_block();
        let done = b.create_block();
        b.append_block_param(done, types::I32);
        let small = b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, x, 0);
        let base = b.ins().iconst(types::I32, base);
        b.ins().brif(small, done, &[base.into()], recurse, &[]);
        b.seal_block(recurse);
        b.switch_to_block(recurse);
        let f = import(other, b);
        let n1 = b.ins().iadd_imm_s(x, -1);
        let call = b.ins().call(f, &[n1]);
        let r = b.inst_results(call)[0];
        let r = b.ins().iadd_imm_s(r, step);
        b.ins().jump(done, &[r.into()]);
        b.seal_block(done);
        b.switch_to_block(done);
        b.block_params(done)[0]
    });
}

/// What `even`/`odd` of [`mutual_pairs`] return for `x`.
fn even_odd(x: i32) -> (i32, i32) {
    let (mut even, mut odd) = (1, 0);
    for _ in 0..x {
        (even, odd) = (odd + 3, even + 7);
    }
    (even, odd)
}

/// Two copies of a mutually recursive pair (`even_k` calls `odd_k`, which calls `even_k`), the
/// callers defined before their callees; returns [even0, odd0, even1, odd1].
fn mutual_pairs(module: &mut impl Module) -> [FuncId; 4] {
    let ids = ["even0", "odd0", "even1", "odd1"].map(|n| declare(module, n, Linkage::Export));
    let [even0, odd0, even1, odd1] = ids;
    ping(module, even0, odd0, 1, 3);
    ping(module, odd0, even0, 0, 7);
    ping(module, even1, odd1, 1, 3);
    ping(module, odd1, even1, 0, 7);
    ids
}

#[test]
fn deferred_mutually_recursive_pairs_merge_and_compute() {
    let mut module = MergingModule::deferred(jit());
    let [even0, odd0, even1, odd1] = mutual_pairs(&mut module);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(
        report.merged, 2,
        "one pair is merged into the other: {report:?}"
    );
    for x in 0..10 {
        let (even, odd) = even_odd(x);
        assert_eq!((call(&jit, even0, x), call(&jit, odd0, x)), (even, odd));
        assert_eq!((call(&jit, even1, x), call(&jit, odd1, x)), (even, odd));
    }
}

/// Eager mode compiles a function when it is defined, so a caller defined before its callee
/// compares the callee by name: the second pair's `even1` (whose callee `odd1` is not defined
/// yet) is compiled, and everything still computes.
#[test]
fn eager_mutually_recursive_pairs_compute() {
    let mut module = MergingModule::new(jit());
    let [even0, odd0, even1, odd1] = mutual_pairs(&mut module);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert!(report.merged <= 2, "{report:?}");
    for x in 0..10 {
        let (even, odd) = even_odd(x);
        assert_eq!((call(&jit, even0, x), call(&jit, odd0, x)), (even, odd));
        assert_eq!((call(&jit, even1, x), call(&jit, odd1, x)), (even, odd));
    }
}

fn eager_object() -> MergingModule<ObjectModule> {
    let builder = ObjectBuilder::new(host_isa(), "merged", default_libcall_names()).unwrap();
    MergingModule::new(ObjectModule::new(builder))
}

fn emit(module: MergingModule<ObjectModule>) -> Vec<u8> {
    let (object_module, _) = module.finish().unwrap();
    object_module.finish().emit().unwrap()
}

/// `merged` became a thunk calling the local `target`; making `target` preemptible afterwards
/// would let a strong `target` elsewhere replace `merged`'s body too. The declaration is refused
/// and, linked with such a `target`, `merged` still computes its own body.
#[test]
fn eager_merge_target_cannot_become_preemptible() {
    let mut module = eager_object();
    let target = declare(&mut module, "target", Linkage::Local);
    let merged = declare(&mut module, "merged", Linkage::Export);
    mul3(&mut module, target);
    mul3(&mut module, merged);
    let sig = module
        .declarations()
        .get_function_decl(target)
        .signature
        .clone();
    let redeclared = module.declare_function("target", Linkage::Preemptible, &sig);
    assert!(redeclared.is_err(), "{redeclared:?}");
    let driver = r#"
#include <stdio.h>
int target(int x) { return -1; }
extern int merged(int);
int main(void) { printf("%d\n", merged(4)); return 0; }
"#;
    if let Some(out) = link_and_run(&emit(module), driver) {
        assert_eq!(out, "13\n");
    }
}

/// `via_twin` calls `twin`, a thunk calling `target`, and was compared as calling `target`, so
/// `via_target` became a thunk calling `via_twin`. Making `twin` preemptible afterwards would
/// let a strong `twin` elsewhere change `via_target`: the declaration is refused.
#[test]
fn eager_thunk_compared_as_its_target_cannot_become_preemptible() {
    let mut module = eager_object();
    let target = declare(&mut module, "target", Linkage::Local);
    let twin = declare(&mut module, "twin", Linkage::Local);
    let via_twin = declare(&mut module, "via_twin", Linkage::Export);
    let via_target = declare(&mut module, "via_target", Linkage::Export);
    mul3(&mut module, target);
    mul3(&mut module, twin);
    caller(&mut module, via_twin, twin);
    caller(&mut module, via_target, target);
    let sig = module
        .declarations()
        .get_function_decl(twin)
        .signature
        .clone();
    let redeclared = module.declare_function("twin", Linkage::Preemptible, &sig);
    assert!(redeclared.is_err(), "{redeclared:?}");
    let driver = r#"
#include <stdio.h>
int twin(int x) { return -1; }
extern int via_twin(int), via_target(int);
int main(void) { printf("%d %d\n", via_twin(4), via_target(4)); return 0; }
"#;
    if let Some(out) = link_and_run(&emit(module), driver) {
        assert_eq!(out, "18 18\n");
    }
}

/// The inner module already defines `f` (cranelift-module cannot tell), so `finish` fails on
/// it; `try_finish` hands the inner module back with what it did define and what it did not.
#[test]
fn deferred_try_finish_hands_the_module_back_after_a_failure() {
    let mut inner = jit();
    let f = declare(&mut inner, "f", Linkage::Export);
    mul3(&mut inner, f);
    let mut module = MergingModule::deferred(inner);
    let g = declare(&mut module, "g", Linkage::Export);
    mul_k(&mut module, g, 5);
    mul_k(&mut module, f, 7);
    let failure = match module.try_finish() {
        Ok(_) => panic!("f is defined twice"),
        Err(failure) => failure,
    };
    assert!(
        matches!(failure.error, clif_merge::merging_module::FinishError::Define { ref function, .. } if function == "f"),
        "{}",
        failure.error
    );
    assert_eq!(failure.undefined, [f]);
    assert_eq!(failure.to_string(), failure.error.to_string());
    let mut jit = failure.module;
    jit.finalize_definitions().unwrap();
    assert_eq!(call(&jit, f, 4), 13, "the inner module's own f");
    assert_eq!(call(&jit, g, 4), 21);
}

/// `finish`'s error goes through `?` into a boxed error (and anyhow) and keeps its message.
#[test]
fn finish_error_goes_through_the_question_mark() {
    fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let mut inner = jit();
        let f = declare(&mut inner, "f", Linkage::Export);
        mul3(&mut inner, f);
        let mut module = MergingModule::deferred(inner);
        mul3(&mut module, f);
        module.finish()?;
        Ok(())
    }
    let error = run().unwrap_err();
    assert!(error.to_string().contains("defining f"), "{error}");
}

/// A body with a global value naming a user name it never declared, unused: a plain module
/// compiles it; the whole-module merge cannot hold it, so deferred mode defines it as it is,
/// unmerged, instead of failing at `finish`.
#[test]
fn deferred_body_the_merge_cannot_hold_is_defined_unmerged() {
    use cranelift_codegen::ir::{ExternalName, GlobalValueData, UserExternalNameRef};
    use cranelift_entity::EntityRef;
    let mut module = MergingModule::deferred(jit());
    let odd = declare(&mut module, "odd", Linkage::Export);
    let twin = declare(&mut module, "twin", Linkage::Export);
    define(&mut module, odd, |b, _, x| {
        b.func.create_global_value(GlobalValueData::Symbol {
            name: ExternalName::User(UserExternalNameRef::new(9)),
            offset: 0.into(),
            colocated: false,
            tls: false,
        });
        let t = b.ins().imul_imm_s(x, 3);
        b.ins().iadd_imm_s(t, 1)
    });
    mul3(&mut module, twin);
    let (mut jit, report) = module.finish().unwrap();
    jit.finalize_definitions().unwrap();
    assert_eq!(report.merged, 0, "{report:?}");
    assert_eq!(call(&jit, odd, 4), 13);
    assert_eq!(call(&jit, twin, 4), 13);
}

/// A host JIT whose functions may read their frame (`get_return_address` needs frame pointers).
fn jit_with_frame_pointers() -> JITModule {
    let mut flags = settings::builder();
    flags.set("preserve_frame_pointers", "true").unwrap();
    let isa = cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(settings::Flags::new(flags))
        .expect("the host ISA");
    JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()))
}

/// Declares and defines `name() -> i64` returning its own return address.
fn return_address(module: &mut impl Module, name: &str, linkage: Linkage) -> FuncId {
    let mut sig = module.make_signature();
    sig.returns.push(AbiParam::new(types::I64));
    let id = module.declare_function(name, linkage, &sig).unwrap();
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let config = module.target_config();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.switch_to_block(entry);
    b.seal_block(entry);
    let ra = b.ins().get_return_address(types::I64);
    b.ins().return_(&[ra]);
    b.finalize(config);
    module.define_function(id, &mut ctx).unwrap();
    id
}

/// Calls `ptr` as `fn() -> u64` from one call instruction for every function, so that each
/// sees the same return address.
#[inline(never)]
fn call_from_one_place(ptr: *const u8) -> u64 {
    // SAFETY: `ptr` is a finalized JIT function of signature `() -> i64`, host convention.
    let f: extern "C" fn() -> u64 = unsafe { std::mem::transmute(ptr) };
    std::hint::black_box(f())
}

#[test]
fn functions_reading_their_return_address_see_their_callers_after_a_merge() {
    for deferred in [false, true] {
        let inner = jit_with_frame_pointers();
        let mut module = if deferred {
            MergingModule::deferred(inner)
        } else {
            MergingModule::new(inner)
        };
        let ids = [
            return_address(&mut module, "ra_f", Linkage::Export),
            return_address(&mut module, "ra_g", Linkage::Export),
            return_address(&mut module, "ra_h", Linkage::Local),
        ];
        let (mut jit, _report) = module.finish().unwrap();
        jit.finalize_definitions().unwrap();
        let seen: Vec<u64> = ids
            .iter()
            .map(|&id| call_from_one_place(jit.get_finalized_function(id)))
            .collect();
        assert!(
            seen.iter().all(|&ra| ra == seen[0]),
            "deferred {deferred}: return addresses {seen:x?} (a thunk's frame came between)"
        );
    }
}

/// The two preemptible twins become thunks calling a private copy (an anonymous function of
/// the inner module); then `f`, which the inner module already defines, fails. The embedder
/// keeps the inner module's `f` and finalizes: every function the thunks call must be defined
/// or listed as undefined, and the twins must still compute their body.
#[test]
fn deferred_try_finish_failure_leaves_no_private_copy_undefined() {
    let mut inner = jit();
    let f = declare(&mut inner, "f", Linkage::Export);
    mul3(&mut inner, f);
    let mut module = MergingModule::deferred(inner);
    let pa = declare(&mut module, "pa", Linkage::Preemptible);
    let pb = declare(&mut module, "pb", Linkage::Preemptible);
    mul_k(&mut module, pa, 5);
    mul_k(&mut module, pb, 5);
    mul_k(&mut module, f, 7);
    let failure = match module.try_finish() {
        Ok(_) => panic!("f is defined twice"),
        Err(failure) => failure,
    };
    assert_eq!(failure.undefined, [f]);
    let mut jit = failure.module;
    jit.finalize_definitions().unwrap();
    assert_eq!(call(&jit, f, 4), 13, "the inner module's own f");
    assert_eq!(call(&jit, pa, 4), 21);
    assert_eq!(call(&jit, pb, 4), 21);
}

/// `MergingModule::for_object` compiles as `clif-merge -o` does (the crate's object ISA: PIC,
/// `opt_level=speed`, frame pointers kept), merges as the options say (aliases mode: the
/// report says alias, the object defines a thunk), and the object links and runs.
#[test]
fn for_object_compiles_as_the_command_line_and_merges_as_the_options_say() {
    use cranelift_codegen::settings::OptLevel;
    let options = MergeOptions {
        mode: Mode::Aliases,
        ..MergeOptions::default()
    };
    let mut module = MergingModule::for_object("x86_64", "merged", options).unwrap();
    let flags = module.isa().flags();
    assert!(flags.is_pic() && flags.preserve_frame_pointers());
    assert_eq!(flags.opt_level(), OptLevel::Speed);
    let names = ["one", "two", "three"];
    let ids: Vec<FuncId> = names
        .iter()
        .map(|n| declare(&mut module, n, Linkage::Export))
        .collect();
    mul3(&mut module, ids[0]);
    mul3(&mut module, ids[1]);
    caller(&mut module, ids[2], ids[1]);
    let (object_module, report) = module.finish().unwrap();
    assert_eq!(report.merged, 1);
    assert_eq!(report.classes[0].replaced[0].by, Action::Alias);
    let bytes = object_module.finish().emit().unwrap();
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        let _ = writeln!(
            std::io::stderr(),
            "note: not run: the host is no x86_64 Linux"
        );
        return;
    }
    let driver = r#"
#include <stdio.h>
int one(int); int two(int); int three(int);
int main(void) { printf("%d %d %d\n", one(4), two(4), three(4)); return 0; }
"#;
    if let Some(out) = link_and_run(&bytes, driver) {
        assert_eq!(out, "13 13 18\n");
    }
}

/// Every target the command line takes: an object of that target's machine, or, for a target
/// objects are not written for, the command line's error.
#[test]
fn for_object_takes_the_command_lines_targets() {
    use object::{Architecture, Object};
    for (target, machine) in [
        ("x86_64", Architecture::X86_64),
        ("aarch64", Architecture::Aarch64),
        ("aarch64-apple-darwin", Architecture::Aarch64),
    ] {
        let mut module = MergingModule::for_object(target, "m", MergeOptions::default()).unwrap();
        let id = declare(&mut module, "f", Linkage::Export);
        mul3(&mut module, id);
        let bytes = module.finish().unwrap().0.finish().emit().unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        assert_eq!(file.architecture(), machine, "{target}");
    }
    let refused = MergingModule::for_object("riscv64", "m", MergeOptions::default());
    let message = refused.err().expect("riscv64 is refused").to_string();
    assert!(
        message.starts_with("unsupported target `riscv64`"),
        "{message}"
    );
}
