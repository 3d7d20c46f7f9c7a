//! Hostile tests of `MergingModule` with similar merging measured by a judge (issue 21, item
//! 4): `MergingModule` defines no data objects of its own, so whatever `SimilarOptions::records`
//! says, every function it hands the inner module must run: no shared body may load constants
//! from a record nobody defines.

use clif_merge::similar::SizeJudge;
use clif_merge::{MergeOptions, MergingModule, SimilarOptions};
use cranelift_codegen::ir::{AbiParam, InstBuilder, types};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};

#[path = "common/build.rs"]
mod build;

fn host_isa() -> OwnedTargetIsa {
    cranelift_native::builder()
        .expect("a host Cranelift supports")
        .finish(settings::Flags::new(settings::builder()))
        .expect("the host ISA")
}

/// Member `m`'s constants: twelve, all different from the other members'.
fn constants(m: u64) -> Vec<i64> {
    (0..12)
        .map(|k: u64| {
            (m + 1)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(k.wrapping_mul(0x85eb_ca6b)) as i64
        })
        .collect()
}

/// What member `m` computes, in Rust: for each constant, `x = (x * c).rotate_left(x0)`.
fn expected(m: u64, x0: i64) -> i64 {
    let mut x = x0;
    for c in constants(m) {
        x = x.wrapping_mul(c).rotate_left((x0 as u64 % 64) as u32);
    }
    x
}

/// Eight exported members of `(i64 × 6) -> i64` (every argument register in use, so the added
/// parameters go to the stack), merged by a `MergingModule` over a JIT with `similar`; each
/// `FuncId` is called and must compute what its body says.
fn members_run(similar: SimilarOptions) {
    let options = MergeOptions {
        similar: Some(similar),
        ..MergeOptions::default()
    };
    let mut module = MergingModule::with_options(
        JITModule::new(JITBuilder::new(default_libcall_names()).expect("a host JIT")),
        options,
    );
    let mut sig = module.make_signature();
    sig.params.extend([AbiParam::new(types::I64); 6]);
    sig.returns.push(AbiParam::new(types::I64));
    let ids: Vec<FuncId> = (0..8)
        .map(|m| {
            let id = module
                .declare_function(&format!("k{m}"), Linkage::Export, &sig)
                .unwrap();
            build::build(&mut module, id, |b, _, params| {
                let mut x = params[0];
                for c in constants(m) {
                    let c = b.ins().iconst(types::I64, c);
                    let t = b.ins().imul(x, c);
                    x = b.ins().rotl(t, params[0]);
                }
                x
            });
            id
        })
        .collect();
    let (mut jit, report) = module.finish().expect("merged");
    jit.finalize_definitions()
        .expect("every definition resolves");
    assert!(
        report.similar.as_ref().is_some_and(|g| !g.is_empty()),
        "the members merge: {report:?}"
    );
    for (m, &id) in ids.iter().enumerate() {
        let ptr = jit.get_finalized_function(id);
        // SAFETY: every member has the signature `fn(i64 × 6) -> i64` in the host's default
        // calling convention.
        let f: extern "C" fn(i64, i64, i64, i64, i64, i64) -> i64 =
            unsafe { std::mem::transmute(ptr) };
        for x in [0, 1, -7, 123_456_789, i64::MIN, i64::MAX] {
            assert_eq!(f(x, 0, 0, 0, 0, 0), expected(m as u64, x), "k{m}({x})");
        }
    }
}

/// With a judge and records left to the pipeline (`None`): no records, and everything runs
/// (every group merged, whatever it measures: stack arguments do not pay here).
#[test]
fn hostile_merging_module_with_a_judge_runs_every_member() {
    members_run(SimilarOptions {
        judge: Some(SizeJudge::new(host_isa())),
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    });
}

/// With a judge and `records: Some(true)`: `MergingModule` cannot hand records to the JIT, so it
/// must not let groups pass them (or must define them); a shared body loading constants from
/// an undefined record does not even finalize. What happens: `finish` panics in
/// cranelift-module (`ModuleReloc::from_mach_reloc`, `unimplemented!()` for the record's
/// `TestCase` name) while `MergingModule` defines the shared body in the JIT. Now the groups
/// pass stack arguments (every group taken, as above: they do not pay here).
#[test]
fn hostile_merging_module_with_records_asked_runs_every_member() {
    members_run(SimilarOptions {
        judge: Some(SizeJudge::new(host_isa())),
        records: Some(true),
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    });
}
