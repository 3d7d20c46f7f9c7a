//! Writes a module's object *without* merging: read (and verify), compile every function, write.
//! No IR merge and no machine-code folding, so the object is the baseline that a linker's ICF
//! (`ld.lld --icf=all`) would otherwise work on. Used by `benches/objsize.sh`.
//!
//!     cargo run --release --example compile_unmerged -- FILE.clif... -o OUT.o \
//!         [--target TRIPLE] [--function-sections] [--time-passes]
//!
//! Prints one JSON line on stdout: the object's text bytes and functions compiled. With
//! `--time-passes`, prints `read-and-verify-ms`, `compile-and-object-ms` and `write-ms` on
//! stderr, one per line, as `clif-merge --time-passes` names its phases.

use anyhow::{Context, Result, bail};
use clif_merge::emit::object::{self as obj, ObjectOptions, OptLevel};
use clif_merge::{Mode, ReadOptions, read_files};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let mut files = Vec::new();
    let mut output: Option<PathBuf> = None;
    let mut target: Option<String> = None;
    let mut function_sections = false;
    let mut time_passes = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-o" => output = Some(args.next().context("-o needs a path")?.into()),
            "--target" => target = Some(args.next().context("--target needs a triple")?),
            "--function-sections" => function_sections = true,
            "--time-passes" => time_passes = true,
            s if s.starts_with('-') => bail!("unknown option {s}"),
            _ => files.push(PathBuf::from(arg)),
        }
    }
    let Some(output) = output else {
        bail!(
            "usage: compile_unmerged FILE.clif... -o OUT.o [--target TRIPLE] \
             [--function-sections] [--time-passes]"
        );
    };
    if files.is_empty() {
        bail!("no input files");
    }
    let options = ObjectOptions {
        target: match &target {
            Some(t) => obj::parse_target(t)?,
            None => obj::host_target()?,
        },
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections,
        // Only used when folding; nothing is folded here.
        mode: Mode::Safe,
        fold_machine_code: false,
    };
    let start = Instant::now();
    let module = read_files(&files, ReadOptions::default())?;
    let read_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    let out = obj::write_object(&module, 0, &options)?;
    let compile_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    std::fs::write(&output, &out.bytes)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let write_ms = start.elapsed().as_secs_f64() * 1000.0;
    if time_passes {
        eprintln!("read-and-verify-ms: {read_ms:.3}");
        eprintln!("compile-and-object-ms: {compile_ms:.3}");
        eprintln!("write-ms: {write_ms:.3}");
    }
    println!(
        "{{\"functions\": {}, \"text_bytes\": {}, \"functions_compiled\": {}}}",
        module.functions().len(),
        out.report.text_bytes,
        out.report.functions_compiled
    );
    Ok(())
}
