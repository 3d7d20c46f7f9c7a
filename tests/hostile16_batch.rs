//! hostile16: the batch API's decisions (`src/batch.rs`), put back together as a module as an
//! embedder compiles them (each `Compile` under its name, each `AliasOf` an alias, each
//! `Removed` nothing, the private copies local), must do what the entries did: `--verify`'s
//! check (`verify_merge`) passes them against the entries, with the batch's own report, in
//! every mode, exact and similar. And a batch with two entries of one name is refused,
//! naming it.

#[path = "common/genmod.rs"]
mod genmod;

use clif_merge::batch::{Body, Decision, Entry, Merged, merge_functions, merge_functions_with};
use clif_merge::cranelift_codegen::ir::Function;
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{
    Alias, ClifModule, FuncName, MergeOptions, Mode, ReadOptions, SimilarOptions, SymbolLinkage,
    read_module_text,
};
use std::path::Path;

/// The module an embedder builds from `merged`, the batch of `original`'s functions.
fn rebuilt(original: &ClifModule, merged: &Merged<FuncName>) -> ClifModule {
    let mut module = ClifModule::new();
    for func in &merged.private_copies {
        module
            .define(func.clone(), SymbolLinkage::Local, None)
            .unwrap();
    }
    let body_name = |body: &Body<FuncName>| match body {
        Body::Entry(name) => name.clone(),
        Body::PrivateCopy(i) => FuncName::of_function(&merged.private_copies[*i]),
    };
    let mut aliases = Vec::new();
    for (name, decision) in &merged.decisions {
        let linkage = original.linkage_of(name).unwrap();
        match decision {
            Decision::Compile(func) => {
                assert_eq!(&FuncName::of_function(func), name);
                module.define(Function::clone(func), linkage, None).unwrap();
            }
            Decision::AliasOf(body) => aliases.push(Alias {
                name: name.clone(),
                target: body_name(body),
                linkage,
            }),
            Decision::Removed(_) => {}
        }
    }
    for alias in aliases {
        module.add_alias(alias).unwrap();
    }
    module
}

#[test]
fn batch_decisions_compiled_as_an_embedder_would_do_what_the_entries_did() {
    let Some(genmod) = genmod::genmod() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--functions",
        "60",
        "--dup-rate",
        "0.3",
        "--near-rate",
        "0.3",
        "--transitive-frac",
        "0.3",
        "--seed",
        "16",
    ];
    let (clif, _, line) = genmod::generate(&genmod, dir.path(), &args);
    let text = std::fs::read_to_string(&clif).unwrap();
    let original = read_module_text(Path::new("m.clif"), &text, ReadOptions::default()).unwrap();
    let entries: Vec<Entry<FuncName>> = (original.functions())
        .map(|mf| Entry {
            key: mf.name.clone(),
            func: &mf.func,
            linkage: mf.linkage,
        })
        .collect();
    let forced = SimilarOptions {
        min_saving: i64::MIN / 2,
        ..SimilarOptions::default()
    };
    let options = VerifyOptions {
        runs: 16,
        ..VerifyOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(forced.clone())] {
            let merge_options = MergeOptions {
                mode,
                similar: similar.clone(),
                ..MergeOptions::default()
            };
            let merged = merge_functions_with(&entries, &merge_options).unwrap();
            assert!(merged.report.merged > 0, "{line}: something merges");
            let module = rebuilt(&original, &merged);
            let checked = verify_merge(&original, &module, &merged.report, &options);
            assert!(
                checked.is_ok(),
                "{line}, {mode:?}, similar {}: {}\n{:?}",
                similar.is_some(),
                checked.summary(),
                checked.mismatches.first()
            );
        }
    }
}

#[test]
fn a_batch_with_two_entries_of_one_name_is_refused_naming_it() {
    let funcs = clif_merge::cranelift_reader::parse_functions(
        "function u0:7(i32) -> i32 system_v {
         block0(v0: i32):
             return v0
         }
         function u0:7(i32) -> i32 system_v {
         block0(v0: i32):
             v1 = iconst.i32 1
             v2 = iadd v0, v1
             return v2
         }",
    )
    .unwrap();
    let entries: Vec<Entry<usize>> = (funcs.iter().enumerate())
        .map(|(key, func)| Entry {
            key,
            func,
            linkage: SymbolLinkage::Export,
        })
        .collect();
    let refused = merge_functions(&entries, Mode::Safe).unwrap_err();
    assert!(refused.to_string().contains("u0:7"), "{refused}");
}
