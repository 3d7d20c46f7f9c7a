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
//! predicted / measured.

use clif_merge::emit::object::{
    IsaSettings, ObjectOptions, OptLevel, parse_target, target_isa, write_object,
};
use clif_merge::similar::SizeJudge;
use clif_merge::{ClifModule, Mode, ReadOptions, SimilarOptions, merge_module_with, read_files};
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
    println!("module\texact\tmodel\tjudged\tpredicted\tmeasured\tratio");
    for file in std::env::args().skip(1).map(PathBuf::from) {
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
        let (model, predicted) = text(Some(SimilarOptions::default()))?;
        let (judged, _) = text(Some(SimilarOptions {
            judge: Some(judge.clone()),
            ..SimilarOptions::default()
        }))?;
        let measured = exact as i64 - model as i64;
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let name = name.trim_end_matches(".xz").trim_end_matches(".clif");
        println!(
            "{name}\t{exact}\t{model}\t{judged}\t{predicted}\t{measured}\t{:.3}",
            predicted as f64 / measured.max(1) as f64
        );
    }
    Ok(())
}
