//! The cost model of `--similar` against the compiled code, per module (what
//! `benches/similar_sizes.sh` prints): for each `.clif` file given, x86_64 `.text` bytes of the
//! object (`--mode aliases`) merged exactly, with `--similar` judged by the model alone (as
//! without `-o`), and with `--similar` judged by compiled sizes (as with `-o`); the saving the
//! model predicted for its groups, and the saving measured.
//!
//!     cargo build --release --example similar_predict
//!     target/release/examples/similar_predict ../shared/corpus/*.clif*
//!
//! One line per file, tab-separated: name, exact, model, judged, predicted, measured,
//! predicted / measured. With `--groups` first, one line per group of the model's merge
//! instead, what the model counted and the code measured (to fit the model's constants):
//! module, members, thunks, removed call sites, instructions, parameters, stack arguments,
//! predicted saving, the members' code, the shared body's code, the thunks' code, and the
//! first member's instruction mix (constants, calls, memory, branches, other, block parameters)
//! and its own parameters.
//! `SIMILAR_COST=656,424,…` (the eleven fields of `CostModel`, in order) tries other constants.

use clif_merge::emit::object::{
    IsaSettings, ObjectOptions, OptLevel, parse_target, target_isa, write_object,
};
use clif_merge::similar::{CostModel, InstructionMix, SizeJudge};
use clif_merge::{
    ClifModule, FuncName, Mode, ReadOptions, SimilarOptions, merge_module_with, read_files,
};
use std::path::PathBuf;

const MODE: Mode = Mode::Aliases;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let object = ObjectOptions {
        target: parse_target("x86_64-unknown-linux-gnu")?,
        opt_level: OptLevel::Speed,
        isa: IsaSettings::default(),
        function_sections: false,
        mode: MODE,
        fold_machine_code: true,
    };
    let judge = SizeJudge::new(target_isa(&object)?);
    let mut files: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if files.first().is_some_and(|f| f.as_os_str() == "--groups") {
        files.remove(0);
        return print_groups(&files, &judge);
    }
    println!("module\texact\tmodel\tjudged\tpredicted\tmeasured\tratio");
    for file in files {
        let module = read_files(std::slice::from_ref(&file), ReadOptions::default())?;
        let text =
            |similar: Option<SimilarOptions>| -> Result<(u64, i64), Box<dyn std::error::Error>> {
                let mut merged: ClifModule = module.clone();
                let (report, _) = merge_module_with(&mut merged, MODE, similar.as_ref());
                let predicted = (report.similar.iter().flatten())
                    .map(|g| g.predicted_saving)
                    .sum();
                let out = write_object(&merged, report.removed(), &object)?;
                Ok((out.report.text_bytes, predicted))
            };
        let (exact, _) = text(None)?;
        let (model, predicted) = text(Some(options()))?;
        let (judged, _) = text(Some(SimilarOptions {
            judge: Some(judge.clone()),
            ..options()
        }))?;
        let measured = exact as i64 - model as i64;
        let name = module_name(&file);
        println!(
            "{name}\t{exact}\t{model}\t{judged}\t{predicted}\t{measured}\t{:.3}",
            predicted as f64 / measured.max(1) as f64
        );
    }
    Ok(())
}

/// The `--groups` table (see the module docs).
fn print_groups(files: &[PathBuf], judge: &SizeJudge) -> Result<(), Box<dyn std::error::Error>> {
    let mut ctx = cranelift_codegen::Context::new();
    let mut size = |module: &ClifModule, name: &FuncName| -> Option<u64> {
        let id = module.resolve(name)?;
        judge.code_size(&mut ctx, &module.function(id).func)
    };
    println!(
        "module\tmembers\tthunks\tcalls\tinstructions\tparameters\tstack\tpredicted\tbefore\tshared\tthunk_code\tconstants\tcalls\tmemory\tbranches\tother\tblock_params\targuments"
    );
    for file in files {
        let module = read_files(std::slice::from_ref(file), ReadOptions::default())?;
        let mut merged = module.clone();
        let similar = options();
        let (report, _) = merge_module_with(&mut merged, MODE, Some(&similar));
        let name = module_name(file);
        for group in report.similar.iter().flatten() {
            let before: Option<u64> = (group.members.iter()).map(|m| size(&module, &m.name)).sum();
            let thunks: Option<u64> = (group.members.iter())
                .filter(|m| m.by == clif_merge::Action::Thunk)
                .map(|m| size(&merged, &m.name))
                .sum();
            let (Some(before), Some(shared), Some(thunks)) =
                (before, size(&merged, &group.shared), thunks)
            else {
                continue;
            };
            let s = &group.shape;
            let mix = mix(&module
                .function(module.resolve(&group.members[0].name).unwrap())
                .func);
            println!(
                "{name}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{before}\t{shared}\t{thunks}\t{mix}",
                s.members,
                s.thunks,
                s.removed_call_sites,
                s.instructions.total(),
                s.parameters,
                s.stack_arguments,
                group.predicted_saving
            );
        }
    }
    Ok(())
}

/// The default options, with the cost model's constants from `SIMILAR_COST` when it is set (to
/// try constants while fitting them): eleven comma-separated numbers in the order of
/// [`CostModel`]'s fields.
fn options() -> SimilarOptions {
    let Ok(text) = std::env::var("SIMILAR_COST") else {
        return SimilarOptions::default();
    };
    let n: Vec<u64> = (text.split(','))
        .map(|x| x.trim().parse().expect("SIMILAR_COST: numbers"))
        .collect();
    assert_eq!(n.len(), 11, "SIMILAR_COST: eleven numbers");
    let cost = CostModel {
        per_constant_centibytes: n[0],
        per_call_centibytes: n[1],
        per_memory_centibytes: n[2],
        per_branch_centibytes: n[3],
        per_other_centibytes: n[4],
        per_block_parameter_centibytes: n[5],
        per_function: n[6],
        thunk: n[7],
        per_argument: n[8],
        per_parameter: n[9],
        per_stack_argument: n[10],
    };
    SimilarOptions {
        cost,
        ..SimilarOptions::default()
    }
}

fn module_name(file: &std::path::Path) -> String {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    name.trim_end_matches(".xz")
        .trim_end_matches(".clif")
        .to_string()
}

/// The instruction mix of `func`, as the columns of `--groups`.
fn mix(func: &cranelift_codegen::ir::Function) -> String {
    let m = InstructionMix::of(func);
    let counts = [
        m.constants,
        m.calls,
        m.memory,
        m.branches,
        m.other,
        m.block_parameters,
    ];
    let arguments = func.signature.params.len();
    format!("{}\t{arguments}", counts.map(|c| c.to_string()).join("\t"))
}
