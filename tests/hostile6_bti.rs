//! Hostile `MergingModule`s under aarch64 branch protection (sixth pass): every function an
//! object built through it defines, the kept ones, the one-jump thunks, similar members' thunks
//! and their shared body, called through a pointer in a program linked with `-z force-bti` and
//! run under qemu (which guards the pages): a function without a landing pad faults. Eager
//! merging, deferred merging in each mode, and similar merging; with `use_bti` alone and with
//! return-address signing too.

use clif_merge::{MergeOptions, MergingModule, Mode, SimilarOptions};
use cranelift_codegen::ir::{AbiParam, InstBuilder, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_module::{Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};

#[path = "common/build.rs"]
mod build;
#[path = "common/link.rs"]
mod link;

/// The functions: `same0` and `same1` are `x * 24` (one class), `k3`, `k5`, `k7` are
/// `x * 3 + 3`, ... (one similar group), each called through a pointer with 5.
const FUNCTIONS: [(&str, i64, i64); 5] = [
    ("same0", 24, 0),
    ("same1", 24, 0),
    ("k3", 3, 3),
    ("k5", 5, 5),
    ("k7", 7, 7),
];

/// A program calling `name` through a pointer with 5 and exiting with its result.
fn driver(name: &str) -> String {
    let decls: Vec<String> = FUNCTIONS
        .iter()
        .map(|(n, ..)| format!("int {n}(int);"))
        .collect();
    format!(
        r#"{}
int (*volatile fp)(int);
static void sys_exit(long code) {{
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93;
    __asm__ volatile("svc 0" :: "r"(x0), "r"(x8));
    for (;;) {{}}
}}
void _start(void) {{
    fp = {name};
    sys_exit(fp(5));
}}
"#,
        decls.join(" ")
    )
}

/// The object of [`FUNCTIONS`] built through `wrap`'s `MergingModule` for aarch64 with
/// `use_bti` and the ISA flags `flags`, and what it merged.
fn object(
    flags: &[&str],
    wrap: impl FnOnce(ObjectModule) -> MergingModule<ObjectModule>,
) -> (Vec<u8>, usize) {
    let mut shared = settings::builder();
    shared.set("is_pic", "true").unwrap();
    let mut isa = cranelift_codegen::isa::lookup_by_name("aarch64-unknown-linux-gnu").unwrap();
    isa.enable("use_bti").unwrap();
    for flag in flags {
        isa.enable(flag).unwrap();
    }
    let isa = isa.finish(settings::Flags::new(shared)).unwrap();
    let builder = ObjectBuilder::new(isa, "bti6", default_libcall_names()).unwrap();
    let mut module = wrap(ObjectModule::new(builder));
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    for (name, k, c) in FUNCTIONS {
        let id = module
            .declare_function(name, Linkage::Export, &sig)
            .unwrap();
        build::build(&mut module, id, |b, _, params| {
            let x = b.ins().imul_imm_s(params[0], k);
            b.ins().iadd_imm_s(x, c)
        });
    }
    let (object, report) = module.finish().unwrap();
    let merged = report.merged
        + (report.similar.iter().flatten())
            .map(|g| g.members.len())
            .sum::<usize>();
    (object.finish().emit().unwrap(), merged)
}

/// Every function of the object, called through a pointer under BTI, returns what it computes.
fn every_function_runs(label: &str, bytes: &[u8]) {
    let Some(tc) = link::toolchain(true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("merged.o");
    std::fs::write(&obj, bytes).unwrap();
    for (name, k, c) in FUNCTIONS {
        let status = link::run_freestanding_with_bti(&tc, dir.path(), &driver(name), &obj);
        assert_eq!(
            status,
            Some((5 * k + c) as i32),
            "{label}: {name} through a pointer under BTI"
        );
    }
}

#[test]
fn with_bti_every_function_of_a_merging_module_runs_through_a_pointer() {
    for flags in [&[][..], &["sign_return_address"]] {
        let label = |what: &str| format!("{what} {flags:?}");
        let (bytes, merged) = object(flags, MergingModule::new);
        assert_eq!(merged, 1, "eager: same1 is a thunk");
        every_function_runs(&label("eager"), &bytes);
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            let options = MergeOptions {
                mode,
                ..MergeOptions::default()
            };
            let (bytes, merged) = object(flags, |m| MergingModule::with_options(m, options));
            assert_eq!(merged, 1, "{mode:?}: same1 merges");
            every_function_runs(&label(&format!("{mode:?}")), &bytes);
        }
        let options = MergeOptions {
            similar: Some(SimilarOptions::default()),
            ..MergeOptions::default()
        };
        let (bytes, merged) = object(flags, |m| MergingModule::with_options(m, options));
        assert!(merged >= 3, "similar: the k's merge ({merged})");
        every_function_runs(&label("similar"), &bytes);
    }
}
