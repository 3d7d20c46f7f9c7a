//! One `MergeOptions`, every entry point: the same module and options give the same merges
//! through `merge_module_with_options`, `pipeline::run` (without an object, so without the size
//! judge that only an object brings) and `batch::merge_functions_with`; the same merged CLIF
//! through the first two; and options an entry point cannot honour are refused, not ignored.
//! Modules are modgen's (generated, with every similar hole family), each mode, with and without
//! similar merging (every group that fits forced, so that groups occur in these small modules).

mod common;

use clif_merge::batch::{Entry, merge_functions_with};
use clif_merge::emit::clif::module_to_clif;
use clif_merge::global::Summary;
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::report::to_json;
use clif_merge::{
    ClifModule, Error, MergeOptions, MergeReport, Mode, SimilarOptions, merge_module_with_options,
};
use clif_merge::{FuncName, MergingModule, ReadOptions, SymbolLinkage, read_module_text};
use common::generator::pseudo_random_choices;
use common::modgen::{ModGenConfig, generate_module};
use cranelift_codegen::Context;
use cranelift_codegen::ir::{ExternalName, Function, Signature, UserExternalName, UserFuncName};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::settings;
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};
use std::collections::HashMap;
use std::num::NonZeroUsize;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
const CASES: usize = 40;

/// Generated modules without aliases (a batch of entries has none).
fn modules() -> Vec<ClifModule> {
    let mut seed = 0x00e7_0417_0000_0002u64;
    let cfg = ModGenConfig::interpreter().with_similar_holes();
    (0..CASES)
        .map(|_| {
            let gm = generate_module(&pseudo_random_choices(&mut seed, 3000), &cfg);
            let mut module = ClifModule::new();
            for (f, linkage) in &gm.functions {
                module.define(f.clone(), *linkage, None).unwrap();
            }
            module
        })
        .collect()
}

fn options(mode: Mode, similar: bool, threads: Option<usize>) -> MergeOptions {
    MergeOptions {
        mode,
        similar: similar.then(|| SimilarOptions {
            min_saving: i64::MIN / 2,
            ..SimilarOptions::default()
        }),
        summary: None,
        threads: threads.and_then(NonZeroUsize::new),
    }
}

fn through_the_module(module: &ClifModule, options: &MergeOptions) -> (MergeReport, String) {
    let mut module = module.clone();
    let (report, _) = merge_module_with_options(&mut module, options);
    (report, module_to_clif(&module))
}

fn through_the_pipeline(module: &ClifModule, options: &MergeOptions) -> (MergeReport, String) {
    let pipeline = PipelineOptions {
        merge: options.clone(),
        emit_clif: true,
        ..Default::default()
    };
    let out = run(module.clone(), &pipeline).unwrap();
    (out.report, out.clif.unwrap())
}

fn through_the_batch(module: &ClifModule, options: &MergeOptions) -> MergeReport {
    let entries: Vec<Entry<'_, usize>> = module
        .functions()
        .enumerate()
        .map(|(key, mf)| Entry {
            key,
            func: &mf.func,
            linkage: mf.linkage,
        })
        .collect();
    merge_functions_with(&entries, options).unwrap().report
}

#[test]
fn every_entry_point_merges_the_same() {
    let (mut merged, mut groups) = (0, 0);
    for (case, module) in modules().iter().enumerate() {
        for mode in MODES {
            for similar in [false, true] {
                let options = options(mode, similar, None);
                let what = format!("case {case}, {mode:?}, similar {similar}");
                let (report, clif) = through_the_module(module, &options);
                let (piped, piped_clif) = through_the_pipeline(module, &options);
                assert_eq!(report, piped, "{what}: module and pipeline reports differ");
                assert_eq!(clif, piped_clif, "{what}: module and pipeline CLIF differ");
                let batch = through_the_batch(module, &options);
                assert_eq!(report, batch, "{what}: module and batch reports differ");
                merged += report.merged;
                groups += report.similar.as_ref().map_or(0, Vec::len);
            }
        }
    }
    // The comparison is only as good as the merges it sees.
    assert!(
        merged > 100,
        "only {merged} merges in the generated modules"
    );
    assert!(
        groups > 10,
        "only {groups} similar groups in the generated modules"
    );
}

/// A module of 4,200 genmod functions (threads work from 4,096 functions on; smaller modules
/// use one thread whatever the options say), merged with similar merging in safe and aliases
/// mode on 1 and 4 threads: every entry point reports the same merges and writes the same CLIF.
#[test]
fn threads_do_not_change_what_any_entry_point_merges() {
    let Some(genmod) = common::genmod::genmod() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--functions",
        "4200",
        "--dup-rate",
        "0.3",
        "--near-rate",
        "0.2",
        "--seed",
        "5",
        "--max-size",
        "10",
    ];
    let (path, _, line) = common::genmod::generate(&genmod, dir.path(), &args);
    let text = std::fs::read_to_string(&path).unwrap();
    let module = read_module_text(&path, &text, ReadOptions::default()).unwrap();
    assert!(module.len() >= 4096, "{line}: {} functions", module.len());
    for mode in [Mode::Safe, Mode::Aliases] {
        let one = options(mode, true, Some(1));
        let expected = through_the_module(&module, &one);
        assert!(
            expected.0.merged > 500,
            "{line}: {} merged",
            expected.0.merged
        );
        let many = options(mode, true, Some(4));
        let what = format!("{line}, {mode:?}, 4 threads against 1");
        assert!(
            through_the_module(&module, &many) == expected,
            "{what}: the module"
        );
        assert!(
            through_the_pipeline(&module, &many) == expected,
            "{what}: the pipeline"
        );
        assert!(
            through_the_batch(&module, &many) == expected.0,
            "{what}: the batch"
        );
    }
}

#[test]
fn the_batch_refuses_a_summary_and_says_why() {
    let module = &modules()[0];
    let mut options = options(Mode::Safe, false, None);
    options.summary = Some(Summary::default());
    let entries: Vec<Entry<'_, usize>> = module
        .functions()
        .enumerate()
        .map(|(key, mf)| Entry {
            key,
            func: &mf.func,
            linkage: mf.linkage,
        })
        .collect();
    match merge_functions_with(&entries, &options) {
        Err(Error::Unsupported(why)) => assert!(why.contains("summary"), "{why}"),
        other => panic!("a summary in batch merging: {:?}", other.map(|m| m.report)),
    }
}

/// `module` with every function named `u0:N` (N its place in the module; names it calls but
/// does not define follow, in order of first use), as a `cranelift_module` embedder names
/// them; and the names it imports, with their signatures.
fn user_named(module: &ClifModule) -> (ClifModule, Vec<(String, Signature)>) {
    let mut ids: HashMap<FuncName, u32> = HashMap::new();
    for (i, mf) in module.functions().enumerate() {
        ids.insert(mf.name.clone(), i as u32);
    }
    let mut imports = Vec::new();
    let mut renamed = ClifModule::new();
    for mf in module.functions() {
        let mut func: Function = (*mf.func).clone();
        let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
        for r in refs {
            let name = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func).unwrap();
            let next = ids.len() as u32;
            let id = *ids.entry(name.clone()).or_insert_with(|| {
                let sig = func.dfg.signatures[func.dfg.ext_funcs[r].signature].clone();
                imports.push((name.to_string().replace('%', ""), sig));
                next
            });
            let user = func.declare_imported_user_function(UserExternalName::new(0, id));
            func.dfg.ext_funcs[r].name = ExternalName::user(user);
        }
        func.name = UserFuncName::user(0, ids[&mf.name]);
        renamed.define(func, mf.linkage, None).unwrap();
    }
    (renamed, imports)
}

fn linkage(linkage: SymbolLinkage) -> Linkage {
    match linkage {
        SymbolLinkage::Export => Linkage::Export,
        SymbolLinkage::Hidden => Linkage::Hidden,
        SymbolLinkage::Local => Linkage::Local,
        SymbolLinkage::Preemptible => Linkage::Preemptible,
        SymbolLinkage::LinkOnce => unreachable!("modgen makes no linkonce function"),
    }
}

/// The user-named module through a deferred `MergingModule` over an x86_64 `ObjectModule`.
fn through_a_merging_module(
    module: &ClifModule,
    imports: &[(String, Signature)],
    options: &MergeOptions,
) -> MergeReport {
    let isa = cranelift_codegen::isa::lookup_by_name("x86_64")
        .unwrap()
        .finish(settings::Flags::new(settings::builder()))
        .unwrap();
    let builder = ObjectBuilder::new(isa, "entry", default_libcall_names()).unwrap();
    let mut merging = MergingModule::with_options(ObjectModule::new(builder), options.clone());
    for (i, mf) in module.functions().enumerate() {
        let id = merging
            .declare_function(&format!("f{i}"), linkage(mf.linkage), &mf.func.signature)
            .unwrap();
        assert_eq!(id.as_u32() as usize, i);
    }
    for (name, sig) in imports {
        merging
            .declare_function(&format!("import_{name}"), Linkage::Import, sig)
            .unwrap();
    }
    for (i, mf) in module.functions().enumerate() {
        let mut ctx = Context::for_function((*mf.func).clone());
        merging
            .define_function(FuncId::from_u32(i as u32), &mut ctx)
            .unwrap();
    }
    merging.finish().unwrap().1
}

/// Native modgen modules (compilable: all-`i64`, the C convention) named as an embedder names
/// them: a deferred `MergingModule` reports the merges `merge_module_with_options` reports.
#[test]
fn a_merging_module_merges_as_the_module_does() {
    let mut seed = 0x00e7_0417_0000_0003u64;
    let cfg = ModGenConfig::native(CallConv::SystemV).with_similar_holes();
    let (mut merged, mut groups) = (0, 0);
    for case in 0..CASES {
        let gm = generate_module(&pseudo_random_choices(&mut seed, 3000), &cfg);
        let mut module = ClifModule::new();
        for (f, linkage) in &gm.functions {
            module.define(f.clone(), *linkage, None).unwrap();
        }
        let (module, imports) = user_named(&module);
        for (mode, similar) in MODES.into_iter().flat_map(|m| [(m, false), (m, true)]) {
            let options = options(mode, similar, None);
            let (report, _) = through_the_module(&module, &options);
            let embedded = through_a_merging_module(&module, &imports, &options);
            assert_eq!(
                to_json(&report, None),
                to_json(&embedded, None),
                "case {case}, {mode:?}, similar {similar}"
            );
            merged += report.merged;
            groups += report.similar.as_ref().map_or(0, Vec::len);
        }
    }
    assert!(merged > 50, "only {merged} merges in the generated modules");
    assert!(
        groups > 10,
        "only {groups} similar groups in the generated modules"
    );
}
