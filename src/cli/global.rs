//! `clif-merge summarize` and `clif-merge combine`: rounds 1 and 1½ of global merging (round 2
//! is the main command with `--summary`). See `clif_merge::global`.

use anyhow::Result;
use clap::Args;
use clif_merge::global::Summary;
use clif_merge::{ReadOptions, SymbolLinkage, output};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `clif-merge summarize UNIT.clif... [-o UNIT.summary]`
#[derive(Args, Debug)]
pub struct SummarizeArgs {
    /// The unit's input files, as for the main command (folders and `@FILE` too).
    #[arg(required = true, value_name = "FILE.clif")]
    files: Vec<PathBuf>,

    /// Write the summary to PATH (default: standard output).
    #[arg(short = 'o', value_name = "PATH")]
    output: Option<PathBuf>,

    /// Linkage of functions that no `; linkage:` directive names.
    #[arg(long, value_enum, default_value_t = SymbolLinkage::Export, value_name = "KIND")]
    default_linkage: SymbolLinkage,

    /// Print the time of reading and of summarizing on standard error (`read-and-verify-ms:`,
    /// `summarize-ms:`).
    #[arg(long)]
    time_passes: bool,
}

/// `clif-merge combine A.summary B.summary... [-o ALL.summary]`
#[derive(Args, Debug)]
pub struct CombineArgs {
    /// Summaries written by `summarize` or `combine`, in any order.
    #[arg(required = true, value_name = "FILE.summary")]
    summaries: Vec<PathBuf>,

    /// Write the combined summary to PATH (default: standard output).
    #[arg(short = 'o', value_name = "PATH")]
    output: Option<PathBuf>,
}

/// Round 1: the summary of one unit.
pub fn summarize(args: &SummarizeArgs) -> Result<()> {
    let files = clif_merge::read::input_files(&args.files)?;
    check_stdin_once(files.iter().map(PathBuf::as_path))?;
    let outputs: Vec<&Path> = args.output.iter().map(PathBuf::as_path).collect();
    output::check_outputs(&outputs, &files)?;
    let read_options = ReadOptions {
        default_linkage: args.default_linkage,
        verify: true,
    };
    let start = Instant::now();
    let module = clif_merge::read_files(&files, read_options)?;
    let read = start.elapsed();
    let start = Instant::now();
    let summary = Summary::of_module(&module);
    let summarize = start.elapsed();
    write_text(args.output.as_deref(), &summary.to_text())?;
    if args.time_passes {
        eprintln!("read-and-verify-ms: {:.3}", read.as_secs_f64() * 1000.0);
        eprintln!("summarize-ms: {:.3}", summarize.as_secs_f64() * 1000.0);
    }
    Ok(())
}

/// The union of summaries.
pub fn combine(args: &CombineArgs) -> Result<()> {
    let outputs: Vec<&Path> = args.output.iter().map(PathBuf::as_path).collect();
    output::check_outputs(&outputs, &args.summaries)?;
    check_stdin_once(args.summaries.iter().map(PathBuf::as_path))?;
    let parts = args
        .summaries
        .iter()
        .map(|path| read_summary(path))
        .collect::<Result<Vec<_>>>()?;
    write_text(args.output.as_deref(), &Summary::combine(parts).to_text())
}

/// Reads a summary (`-`: standard input, as for CLIF files); errors name the file and line.
pub fn read_summary(path: &Path) -> Result<Summary> {
    let text = clif_merge::read::read_text(path)?;
    let name = clif_merge::read::display_name(path);
    Summary::parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", name.display()))
}

/// Refuses `-` (standard input) given more than once: the first reading takes all of it.
pub fn check_stdin_once<'a>(inputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    let stdin = Path::new(clif_merge::read::STDIN);
    if inputs.into_iter().filter(|&p| p == stdin).count() > 1 {
        anyhow::bail!("`-` (standard input) is given more than once: it can be read only once");
    }
    Ok(())
}

/// Writes `text` to `path`, or to standard output when there is no path or it is `-`.
fn write_text(path: Option<&Path>, text: &str) -> Result<()> {
    match path.filter(|&p| p != Path::new("-")) {
        Some(path) => output::write_outputs(&[(path, text.as_bytes())])?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
}
