//! Size reports on the command line: `--size-report FILE.html`, `--top N`, and `clif-merge diff
//! BEFORE.o AFTER.o`. See `clif_merge::sizes`.

use anyhow::{Context, Result, bail};
use clap::Args;
use clif_merge::pipeline::PipelineOutput;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `clif-merge diff BEFORE.o AFTER.o`
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The object before (e.g. compiled without merging).
    #[arg(value_name = "BEFORE.o")]
    before: PathBuf,
    /// The object after.
    #[arg(value_name = "AFTER.o")]
    after: PathBuf,
}

/// Prints the per-symbol difference of two objects.
pub fn diff(args: &DiffArgs) -> Result<()> {
    let read = |path: &Path| {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let (before, after) = (read(&args.before)?, read(&args.after)?);
    let not_object = |path: &Path| format!("{}: not an ELF or Mach-O object", path.display());
    check_object(&before).with_context(|| not_object(&args.before))?;
    check_object(&after).with_context(|| not_object(&args.after))?;
    let diff = clif_merge::sizes::diff_objects(&before, &after).with_context(|| {
        format!(
            "cannot diff {} (before) and {} (after)",
            args.before.display(),
            args.after.display()
        )
    })?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(diff.to_text().as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Whether `bytes` are an object the diff reads, with the parser's reason when not.
fn check_object(bytes: &[u8]) -> Result<()> {
    let file = object::File::parse(bytes)?;
    match file.format() {
        object::BinaryFormat::Elf | object::BinaryFormat::MachO => Ok(()),
        other => bail!("{other:?} objects are not read"),
    }
}

/// Checks `--size-report` and `--top` against the rest of the command line.
pub fn check_size_options(
    size_report: Option<&Path>,
    top: Option<usize>,
    size_baseline: bool,
    object: bool,
) -> Result<()> {
    if let Some(path) = size_report {
        let html = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        if !html {
            bail!(
                "--size-report {}: the page is HTML; name it FILE.html",
                path.display()
            );
        }
        if !object {
            bail!("--size-report needs -o PATH: it measures the compiled object");
        }
    }
    if top.is_some() && !(size_baseline || size_report.is_some()) {
        bail!("--top needs --size-baseline (and -o PATH): it lists the measured savings");
    }
    Ok(())
}

/// The `--size-report` page of a run, titled by its input files.
pub fn size_report_page(done: &PipelineOutput, files: &[PathBuf]) -> Option<String> {
    let sizes = done.object.as_ref()?.report.sizes.as_ref()?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Some(clif_merge::sizes::to_html(
        &done.report,
        sizes,
        &names.join(" "),
    ))
}
