//! The merge pass on the real-code corpus, against the time Cranelift takes to compile it.
//!
//!     cargo bench --bench corpus
//!
//! For each `.clif` / `.clif.xz` file in `../shared/corpus/` (read with `read_files`, not timed):
//! functions, classes found, functions merged, the pass time (median of `CORPUS_RUNS`, default 5,
//! `merge_module` in `Mode::Safe` on a fresh clone), and the time to compile every function of
//! the unmerged module with `Context::compile` for x86_64 (`opt_level=speed`, verifier off as
//! in Wasmtime's default configuration; median of `CORPUS_COMPILE_RUNS`, default 3), and the pass
//! as a fraction of that compile time. `CORPUS_FILES` (comma-separated file names) limits the
//! files.

use clif_merge::merge::find_classes;
use clif_merge::{Mode, PassTimes, ReadOptions, merge_module, read_files};
use cranelift_codegen::Context;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::{self, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: a number")))
        .unwrap_or(default)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2
    }
}

fn x86_64_isa() -> Arc<dyn TargetIsa> {
    let mut builder = settings::builder();
    builder.set("opt_level", "speed").expect("opt_level");
    builder
        .set("enable_verifier", "false")
        .expect("enable_verifier");
    let flags = settings::Flags::new(builder);
    isa::lookup(target_lexicon::triple!("x86_64-unknown-linux-gnu"))
        .expect("x86_64 backend")
        .finish(flags)
        .expect("x86_64 ISA")
}

/// Compiles every function; returns the time and the functions that failed to compile.
fn compile_all(isa: &dyn TargetIsa, funcs: &[Function]) -> (Duration, Vec<String>) {
    let mut inputs: Vec<Function> = funcs.to_vec();
    let mut failed = Vec::new();
    let mut ctx = Context::new();
    let start = Instant::now();
    for func in inputs.drain(..) {
        ctx.clear();
        ctx.func = func;
        let name = ctx.func.name.to_string();
        if let Err(e) = ctx.compile(isa, &mut ControlPlane::default()) {
            failed.push(format!("{name}: {:?}", e.inner));
        }
    }
    (start.elapsed(), failed)
}

struct Row {
    file: String,
    functions: usize,
    classes: usize,
    in_classes: usize,
    merged: usize,
    pass: Duration,
    compile: Duration,
    failed: usize,
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let only: Option<Vec<String>> = std::env::var("CORPUS_FILES")
        .ok()
        .map(|s| s.split(',').map(|w| w.trim().to_string()).collect());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("read corpus dir").path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            (name.ends_with(".clif") || name.ends_with(".clif.xz"))
                && only.as_ref().is_none_or(|o| o.iter().any(|w| *w == *name))
        })
        .collect();
    files.sort();
    let runs = env_count("CORPUS_RUNS", 5).max(1);
    let compile_runs = env_count("CORPUS_COMPILE_RUNS", 3).max(1);
    let isa = x86_64_isa();

    let mut rows = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let start = Instant::now();
        let module = read_files(std::slice::from_ref(path), ReadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "{name}: read {} functions in {:.1} s",
            module.functions().len(),
            start.elapsed().as_secs_f64()
        );

        let mut times = Vec::new();
        let mut found = None;
        for _ in 0..runs {
            let mut copy = module.clone();
            let start = Instant::now();
            let (report, _) = merge_module(&mut copy, Mode::Safe);
            times.push(start.elapsed());
            found = Some((report.classes.len(), report.merged));
        }
        let (classes, merged) = found.unwrap();
        // The members of the classes, from the driver (not timed).
        let found_classes = find_classes(&module, Mode::Safe, &mut PassTimes::default());
        assert_eq!(found_classes.classes.len(), classes);
        let in_classes = found_classes.classes.iter().map(Vec::len).sum::<usize>();
        let pass = median(times);
        eprintln!(
            "  pass: {:.2} ms (median of {runs})",
            pass.as_secs_f64() * 1e3
        );

        let funcs: Vec<Function> = module.functions().map(|f| (*f.func).clone()).collect();
        let mut compile_times = Vec::new();
        let mut failed = Vec::new();
        for _ in 0..compile_runs {
            let (t, f) = compile_all(&*isa, &funcs);
            eprintln!("  compile: {:.2} s", t.as_secs_f64());
            compile_times.push(t);
            failed = f;
        }
        for f in failed.iter().take(5) {
            eprintln!("  compile failed: {f}");
        }
        rows.push(Row {
            file: name,
            functions: module.functions().len(),
            classes,
            in_classes,
            merged,
            pass,
            compile: median(compile_times),
            failed: failed.len(),
        });
    }

    println!();
    println!(
        "| file | functions | classes found | functions in classes | functions merged | pass ms (median of {runs}) | Cranelift compile ms (x86_64, speed) | pass / compile |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let failed = if r.failed > 0 {
            format!(" ({} failed)", r.failed)
        } else {
            String::new()
        };
        println!(
            "| `{}` | {} | {} | {} | {} | {:.2} | {:.0}{failed} | {:.2}% |",
            r.file,
            r.functions,
            r.classes,
            r.in_classes,
            r.merged,
            r.pass.as_secs_f64() * 1e3,
            r.compile.as_secs_f64() * 1e3,
            100.0 * r.pass.as_secs_f64() / r.compile.as_secs_f64()
        );
    }
    println!();
    println!(
        "Pass: `merge_module` (Mode::Safe) on a fresh clone; reading and verifying not timed. Compile: `Context::compile` of every function of the unmerged module, one thread, x86_64-unknown-linux-gnu, opt_level=speed, enable_verifier=false (median of {compile_runs})."
    );
}
