//! The `clif-merge` command: the command line, turned into a call of the library's pipeline
//! (`clif_merge::pipeline`). Everything is computed before anything is written, and outputs are
//! written all or none (`clif_merge::output`), so a failure leaves no partial output.

#[path = "cli/global.rs"]
mod global;
#[path = "cli/progress.rs"]
mod progress;
#[path = "cli/sizes.rs"]
mod sizes;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use clif_merge::emit::object::{self as obj, IsaSettings, ObjectOptions, OptLevel};
use clif_merge::pipeline::{self, PipelineOptions, PipelineOutput};
use clif_merge::{MergeOptions, Mode, ReadOptions, SymbolLinkage, output, report};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The exit statuses, as `--help` ends with them.
const EXIT_STATUS_HELP: &str = "\
Exit status:
  0    success
  1    an error: bad input, an output that cannot be written, options that conflict,
       --verify finding a difference; no output is written
  2    a usage error: an unknown option or value, a missing argument
  141  standard output was closed early (e.g. by `| head`), as a shell reports for
       `cat`; nothing is printed about it";

/// The exit status when standard output is a pipe its reader closed: 128 + SIGPIPE, the status
/// a shell reports for a tool the signal ends.
const CLOSED_STDOUT_STATUS: i32 = 141;

#[derive(Parser, Debug)]
#[command(
    name = "clif-merge",
    version,
    about = "Merge functions that do exactly the same thing in modules of Cranelift IR",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = EXIT_STATUS_HELP
)]
struct Opts {
    /// Global merging across separately compiled units: round 1 and the combine step (round 2
    /// is this command with `--summary`).
    #[command(subcommand)]
    command: Option<Command>,

    /// Input files: CLIF text, `.clif.xz` read directly, `-` for standard input; a folder stands
    /// for every `*.clif` and `*.clif.xz` in it, in sorted order; `@FILE` for the arguments
    /// listed in FILE, one per line (`@-`: read from standard input). Together they form one
    /// module.
    #[arg(required = true, value_name = "FILE.clif")]
    files: Vec<PathBuf>,

    /// What addresses of merged functions must preserve.
    #[arg(long, value_enum, default_value_t = Mode::Safe)]
    mode: Mode,

    /// Also merge similar functions: functions equal but for integer and float constants,
    /// `symbol` addresses or direct callees become one shared body that takes those as
    /// parameters (trades a little call overhead for size, like -Oz).
    #[arg(long)]
    similar: bool,

    /// With --similar, merge a group only when the cost model estimates it saves at least BYTES
    /// of machine code (default: 1).
    #[arg(
        long,
        value_name = "BYTES",
        requires = "similar",
        allow_negative_numbers = true
    )]
    similar_min_saving: Option<i64>,

    /// Linkage of functions that no `; linkage:` directive names.
    #[arg(long, value_enum, default_value_t = SymbolLinkage::Export, value_name = "KIND")]
    default_linkage: SymbolLinkage,

    /// Print what was merged on standard output: json for tools, text for people.
    /// Default: text, unless the CLIF goes to standard output.
    #[arg(long, value_enum)]
    report: Option<ReportFormat>,

    /// Write the merged module as CLIF to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH|-")]
    emit_clif: Option<PathBuf>,

    /// Print the time of each phase on standard error, one per line, ending with
    /// `pass-time-ms:` for the merging pass as a whole.
    #[arg(long)]
    time_passes: bool,

    /// Compile the merged module and write a relocatable object to PATH.
    #[arg(short = 'o', value_name = "PATH")]
    output: Option<PathBuf>,

    /// Target of the object (default: the host). One of x86_64-unknown-linux-gnu,
    /// aarch64-unknown-linux-gnu, x86_64-apple-darwin, aarch64-apple-darwin, or the short names
    /// Cranelift takes for the Linux ones: x86_64 (x86_64-unknown-linux-gnu), aarch64 and arm64
    /// (aarch64-unknown-linux-gnu).
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,

    /// A Cranelift CPU preset for the object: `baseline` (the default: portable), `native`
    /// (the host's features), or a preset of the target such as `nehalem`, `haswell`, `skylake`.
    #[arg(long, value_name = "NAME")]
    target_cpu: Option<String>,

    /// A Cranelift shared or target flag for the object, as `NAME` (a boolean set to true) or
    /// `NAME=VALUE`; may be repeated (e.g. `--set has_avx2 --set opt_level=speed_and_size`).
    #[arg(long = "set", value_name = "NAME[=VALUE]")]
    set: Vec<String>,

    /// Cranelift's optimization level for the object.
    #[arg(long, value_enum, default_value_t = OptLevel::Speed)]
    opt_level: OptLevel,

    /// One text section per function, so that a linker's --gc-sections and --icf can work;
    /// on ELF also writes an .llvm_addrsig table.
    #[arg(long)]
    function_sections: bool,

    /// Also compile the module without merging, to report `text_bytes_unmerged` and where the
    /// bytes went: `saved_bytes` per class and group, `saved_by_kind` in the object, and in the
    /// text report the largest savings.
    #[arg(long)]
    size_baseline: bool,

    /// With --size-baseline, the text report lists the N largest savings (default: 10).
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Write where the bytes went as one self-contained HTML page to FILE.html (implies
    /// --size-baseline; needs -o).
    #[arg(long, value_name = "FILE.html")]
    size_report: Option<PathBuf>,

    /// Threads for the parallel phases (reading and verifying, hashing, merging, summarizing);
    /// default: one per core, at most 8 (no phase uses more). Small modules use one thread
    /// whatever this says (under 4,096
    /// functions; for reading, under 4,096 functions and 1 MiB; for verifying and global
    /// merging's keys, under 20,000 instructions).
    #[arg(long, value_name = "N", global = true)]
    threads: Option<std::num::NonZeroUsize>,

    /// Run every function before and after merging in cranelift-interpreter on the same
    /// arguments; on any difference print it and exit 1 without writing output.
    #[arg(long)]
    verify: bool,

    /// With --verify, the argument tuples run per function (default: 64, at most 65536); a
    /// function with a side of a branch, trap or comparison no run took yet runs on, up to four
    /// times as many.
    #[arg(long, value_name = "N", requires = "verify", value_parser = verify_runs)]
    verify_runs: Option<std::num::NonZeroUsize>,

    /// With --verify, the argument tuples run per function at most (default: four times
    /// --verify-runs; at most 262144): a function runs on past --verify-runs only while a side of
    /// its own branches, traps or comparisons was taken by no run. 0, or fewer than
    /// --verify-runs, runs the planned tuples only.
    #[arg(long, value_name = "N", requires = "verify", value_parser = verify_max_runs)]
    verify_max_runs: Option<usize>,

    /// With --verify, run also the functions the merge left unchanged with all they may call
    /// (by default counted as unchanged, not run: each run would be the same on both sides).
    #[arg(long, requires = "verify")]
    verify_unchanged: bool,

    /// Global merging, round 2: the combined summary of every unit of the program (from
    /// `summarize` and `combine`); functions another unit also holds become thunks to shared
    /// bodies that the linker keeps once.
    #[arg(long, value_name = "FILE.summary")]
    summary: Option<PathBuf>,
}

/// The most argument tuples `--verify-runs` takes: a function of the corpus takes about a
/// millisecond per tuple, so a module of 10,000 functions hours at this bound already; beyond
/// it a typo (or `-1` taken as 2^64 - 1) would only run without end.
const MAX_VERIFY_RUNS: usize = 65_536;

/// `--verify-runs N`: 1 to [`MAX_VERIFY_RUNS`].
fn verify_runs(text: &str) -> Result<std::num::NonZeroUsize, String> {
    let runs: std::num::NonZeroUsize = text
        .parse()
        .map_err(|_| format!("not a number of runs from 1 to {MAX_VERIFY_RUNS}"))?;
    if runs.get() > MAX_VERIFY_RUNS {
        return Err(format!(
            "at most {MAX_VERIFY_RUNS} runs per function (each function is run this many times)"
        ));
    }
    Ok(runs)
}

/// `--verify-max-runs N`: 0 to four times [`MAX_VERIFY_RUNS`] (the most `--verify-runs` runs
/// on to by default).
fn verify_max_runs(text: &str) -> Result<usize, String> {
    let most = 4 * MAX_VERIFY_RUNS;
    let runs: usize = text
        .parse()
        .map_err(|_| format!("not a number of runs from 0 to {most}"))?;
    if runs > most {
        return Err(format!(
            "at most {most} runs per function (each function may be run this many times)"
        ));
    }
    Ok(runs)
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Round 1 of global merging: write the summary of one unit.
    Summarize(global::SummarizeArgs),
    /// Combine summaries into one (any order and grouping gives the same bytes).
    Combine(global::CombineArgs),
    /// Per-symbol size changes between two objects (ELF or Mach-O), largest first, with the
    /// text totals.
    Diff(sizes::DiffArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    Json,
    Text,
}

fn main() {
    // A panic the library catches is an error it reports (bad input), not a crash: stay quiet.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !clif_merge::panic_is_caught() {
            default_hook(info);
        }
    }));
    let opts = match expand_argument_files(std::env::args_os()) {
        Ok(expanded) => {
            let opts = Opts::parse_from(expanded.args);
            if matches!(opts.command, Some(Command::Diff(_))) && opts.threads.is_some() {
                // `--threads` is global for `summarize` and `combine`; `diff` has nothing to
                // run in parallel, and an option a command cannot honour is a usage error.
                <Opts as clap::CommandFactory>::command()
                    .error(
                        clap::error::ErrorKind::ArgumentConflict,
                        "the argument '--threads <N>' cannot be used with 'diff'",
                    )
                    .exit();
            }
            if expanded.read_stdin && opts.files.iter().any(|f| f == Path::new("-")) {
                eprintln!(
                    "error: `@-` reads the arguments from standard input, so `-` cannot read the module from it too"
                );
                std::process::exit(1);
            }
            opts
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(opts) {
        if is_closed_stdout(&e) {
            std::process::exit(CLOSED_STDOUT_STATUS);
        }
        if let Some(clif_merge::Error::VerifyFailed(report)) = e.downcast_ref::<clif_merge::Error>()
        {
            print_verify_report(report);
        }
        eprintln!("error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

/// Whether `error` is a write to standard output that failed because its reader is gone. Only
/// standard output is written after the output files (see `write`), so nothing is left half
/// done.
fn is_closed_stdout(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// The command line once its argument files are read.
struct ExpandedArgs {
    args: Vec<std::ffi::OsString>,
    /// Whether `@-` read the arguments from standard input.
    read_stdin: bool,
}

/// The arguments with every `@FILE` replaced by the lines of FILE (one argument per line; empty
/// lines are skipped), for lists longer than a command line may be; `@-` reads them from
/// standard input, once. `@` alone, and arguments after `--`, are left as they are; an argument
/// file may not name another.
fn expand_argument_files(args: impl Iterator<Item = std::ffi::OsString>) -> Result<ExpandedArgs> {
    let mut out = Vec::new();
    let mut read_stdin = false;
    let mut after_dashes = false;
    for arg in args {
        let file = arg
            .to_str()
            .and_then(|a| a.strip_prefix('@'))
            .filter(|f| !f.is_empty());
        match file {
            Some("-") if !after_dashes => {
                if read_stdin {
                    bail!("`@-` can be given once: standard input is read once");
                }
                read_stdin = true;
                let text = std::io::read_to_string(std::io::stdin()).map_err(|e| {
                    anyhow::anyhow!("cannot read the arguments from standard input: {e}")
                })?;
                out.extend(argument_lines(&text));
            }
            Some(file) if !after_dashes => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| anyhow::anyhow!("cannot read the argument file {file}: {e}"))?;
                out.extend(argument_lines(&text));
            }
            _ => {
                after_dashes |= arg == "--";
                out.push(arg);
            }
        }
    }
    Ok(ExpandedArgs {
        args: out,
        read_stdin,
    })
}

/// The arguments an argument file lists: one a line, empty lines skipped.
fn argument_lines(text: &str) -> impl Iterator<Item = std::ffi::OsString> + '_ {
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
        .map(std::ffi::OsString::from)
}

fn print_verify_report(checked: &clif_merge::verify::VerifyReport) {
    eprintln!("{}", checked.summary());
    if let Some(warning) = checked.coverage_warning() {
        eprintln!("{warning}");
    }
    for mismatch in &checked.mismatches {
        eprintln!("mismatch: {mismatch}");
    }
}

fn run(opts: Opts) -> Result<()> {
    if opts.command.is_some()
        && let Some(threads) = opts.threads
    {
        // The main command's threads are its `MergeOptions`'; the subcommands run on the
        // global pool, of at most 8 as `MergeOptions::threads` makes (no phase uses more).
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads.get().min(8))
            .build_global()?;
    }
    match &opts.command {
        Some(Command::Summarize(args)) => return global::summarize(args),
        Some(Command::Combine(args)) => return global::combine(args),
        Some(Command::Diff(args)) => return sizes::diff(args),
        None => {}
    }
    let clif_to_stdout = opts.emit_clif.as_deref() == Some(Path::new("-"));
    let report_format = match opts.report {
        Some(ReportFormat::Json) if clif_to_stdout => {
            bail!("--report json and --emit-clif - would both write to standard output")
        }
        Some(f) => Some(f),
        None if clif_to_stdout => None,
        None => Some(ReportFormat::Text),
    };
    sizes::check_size_options(
        opts.size_report.as_deref(),
        opts.top,
        opts.size_baseline,
        opts.output.is_some(),
    )?;
    let output_paths: Vec<&Path> = [
        opts.output.as_deref(),
        opts.emit_clif.as_deref(),
        opts.size_report.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let files = clif_merge::read::input_files(&opts.files)?;
    let inputs: Vec<PathBuf> = files.iter().chain(&opts.summary).cloned().collect();
    global::check_stdin_once(inputs.iter().map(PathBuf::as_path))?;
    output::check_outputs(&output_paths, &inputs)?;
    let options = pipeline_options(&opts)?;
    let read_options = ReadOptions {
        default_linkage: opts.default_linkage,
        verify: true,
    };
    let progress = progress::Progress::start();
    let options = PipelineOptions {
        on_phase: progress.hook(),
        ..options
    };
    let done = pipeline::run_files(&files, read_options, &options);
    progress.finish();
    let mut done = done?;
    if let Some(checked) = &done.verify {
        print_verify_report(checked);
    }
    let start = Instant::now();
    let page = sizes::size_report_page(&done, &files);
    write(&opts, &done, report_format, clif_to_stdout, page.as_deref())?;
    done.phases.push(("write", start.elapsed()));
    if opts.time_passes {
        let mut stderr = std::io::stderr().lock();
        for (name, d) in &done.phases {
            writeln!(stderr, "{name}-ms: {:.3}", ms(*d))?;
        }
        writeln!(stderr, "pass-time-ms: {:.3}", ms(done.pass_times.total()))?;
    }
    // The process ends here: the module's millions of allocations go back to the system with
    // it, instead of being freed one by one (a tenth of a run's CPU time on 100,000 functions).
    std::mem::forget(done);
    Ok(())
}

/// The pipeline's options from the command line's.
fn pipeline_options(opts: &Opts) -> Result<PipelineOptions> {
    let mode = opts.mode;
    let object = match &opts.output {
        Some(path) if path == Path::new("-") => {
            bail!(
                "-o -: an object is written to a file, not to standard output (./- names a file `-`)"
            )
        }
        None if opts.target.is_some() || opts.size_baseline || opts.function_sections => {
            bail!("--target, --function-sections and --size-baseline need -o PATH")
        }
        None if opts.target_cpu.is_some() || !opts.set.is_empty() => {
            bail!("--target-cpu and --set need -o PATH")
        }
        None => None,
        Some(_) => Some(ObjectOptions {
            target: match &opts.target {
                Some(t) => obj::parse_target(t)?,
                None => obj::host_target()?,
            },
            opt_level: opts.opt_level,
            isa: IsaSettings {
                cpu: opts.target_cpu.clone(),
                flags: opts.set.clone(),
            },
            function_sections: opts.function_sections,
            mode,
            fold_machine_code: true,
        }),
    };
    let similar = opts.similar.then(|| {
        let aarch64 = object.as_ref().is_some_and(|o| {
            o.target.architecture
                == target_lexicon::Architecture::Aarch64(
                    target_lexicon::Aarch64Architecture::Aarch64,
                )
        });
        let mut similar = clif_merge::SimilarOptions::default();
        if aarch64 {
            similar.registers = clif_merge::similar::RegisterBudget::AARCH64;
        }
        if let Some(bytes) = opts.similar_min_saving {
            similar.min_saving = bytes;
        }
        similar
    });
    let merge = MergeOptions {
        mode,
        similar,
        summary: opts
            .summary
            .as_deref()
            .map(global::read_summary)
            .transpose()?,
        threads: opts.threads,
    };
    Ok(PipelineOptions {
        merge,
        verify: opts.verify.then(|| {
            let mut verify = clif_merge::verify::VerifyOptions::default();
            if let Some(runs) = opts.verify_runs {
                verify.runs = runs.get();
            }
            verify.max_runs = opts.verify_max_runs;
            verify.run_unchanged = opts.verify_unchanged;
            verify
        }),
        object,
        size_baseline: opts.size_baseline || opts.size_report.is_some(),
        emit_clif: opts.emit_clif.is_some(),
        on_phase: None,
    })
}

/// Writes the output files (all or none), then standard output.
fn write(
    opts: &Opts,
    done: &PipelineOutput,
    report_format: Option<ReportFormat>,
    clif_to_stdout: bool,
    page: Option<&str>,
) -> Result<()> {
    let object_report = done.object.as_ref().map(|o| &o.report);
    let top = Some(opts.top.unwrap_or(report::DEFAULT_TOP));
    let report_text = report_format.map(|f| match f {
        ReportFormat::Json => report::to_json(&done.report, object_report) + "\n",
        ReportFormat::Text => report::to_text_top(&done.report, object_report, top),
    });
    let mut files: Vec<(&Path, &[u8])> = Vec::new();
    if let (Some(path), Some(object)) = (&opts.output, &done.object) {
        files.push((path, &object.bytes));
    }
    if let (Some(path), Some(clif)) = (&opts.emit_clif, &done.clif)
        && !clif_to_stdout
    {
        files.push((path, clif.as_bytes()));
    }
    if let (Some(path), Some(page)) = (&opts.size_report, page) {
        files.push((path, page.as_bytes()));
    }
    output::write_outputs(&files)?;
    let mut stdout = std::io::stdout().lock();
    if let Some(clif) = done.clif.as_ref().filter(|_| clif_to_stdout) {
        stdout.write_all(clif.as_bytes())?;
    }
    if let Some(text) = report_text {
        if clif_to_stdout {
            // Keep standard output valid CLIF: the report as comments.
            for line in text.lines() {
                writeln!(stdout, "; {line}")?;
            }
        } else {
            stdout.write_all(text.as_bytes())?;
        }
    }
    stdout.flush()?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
