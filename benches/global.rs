//! Global merging's costs, in process (no reading, no compiling):
//!
//!     cargo bench --bench global
//!     BENCH_RUNS=9 BENCH_UNITS=8 cargo bench --bench global
//!
//! 1. Every module of `../shared/corpus` is split into N units (function i to unit i mod N, as
//!    `examples/split_units.rs` does) and, per unit, in turn: the merge pass alone
//!    (`merge_module_with`, `Mode::Aliases`, on a fresh clone: only the call is timed),
//!    summarizing (`Summary::of_module`), and round 2 (`merge_with_summary` then the same pass,
//!    on a fresh clone). Each is the median of the runs, summed over the units; the ratios are
//!    summarize / pass and round 2 / pass.
//! 2. `combine`: synthetic summaries of 8 units with 12,500 to 200,000 functions in all; the time
//!    per entry shows whether the cost is linear in the summaries' size.

use clif_merge::global::{ParamRecord, Summary, SummaryEntry, merge_with_summary};
use clif_merge::{FuncName, Mode, ReadOptions, SymbolLinkage, merge_module_with};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../tests/common/split.rs"]
mod split;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    median((0..runs).map(|_| f()).collect())
}

fn corpus(runs: usize, units: usize) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let Ok(listing) = std::fs::read_dir(&dir) else {
        eprintln!("no ../shared/corpus: corpus part skipped");
        return;
    };
    let mut files: Vec<PathBuf> = listing
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".clif"))
        .collect();
    files.sort();
    println!("| module | pass (ms) | summarize (ms) | summarize / pass | round 2 / pass |");
    println!("|---|---:|---:|---:|---:|");
    for file in files {
        let module = clif_merge::read_files(std::slice::from_ref(&file), ReadOptions::default())
            .expect("a corpus module");
        let parts = split::split_units(&module, units);
        let summary = Summary::combine(parts.iter().map(Summary::of_module));
        let (mut pass, mut summarize, mut round2) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for unit in &parts {
            pass += time(runs, || {
                let mut m = unit.clone();
                let start = Instant::now();
                merge_module_with(&mut m, Mode::Aliases, None);
                start.elapsed()
            });
            summarize += time(runs, || {
                let start = Instant::now();
                std::hint::black_box(Summary::of_module(unit));
                start.elapsed()
            });
            round2 += time(runs, || {
                let mut m = unit.clone();
                let start = Instant::now();
                merge_with_summary(&mut m, &summary, None);
                merge_module_with(&mut m, Mode::Aliases, None);
                start.elapsed()
            });
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let name = file.file_name().unwrap().to_string_lossy();
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ms(pass),
            ms(summarize),
            summarize.as_secs_f64() / pass.as_secs_f64(),
            round2.as_secs_f64() / pass.as_secs_f64()
        );
    }
}

/// A summary of `n` functions of unit `unit`, with the hole values real functions have.
fn synthetic(unit: usize, n: usize) -> Summary {
    let entries = (0..n)
        .map(|i| {
            let key =
                ((unit * n + i) as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
            SummaryEntry {
                name: FuncName::User {
                    namespace: 0,
                    index: (i * 8 + unit) as u32,
                },
                key,
                linkage: SymbolLinkage::Export,
                address_taken: false,
                self_by_name: None,
                param: Some(ParamRecord {
                    key: key.rotate_left(17),
                    holes: (0..20)
                        .map(|h| clif_merge::compare::Hole::Int((h * i) as u64))
                        .collect(),
                }),
            }
        })
        .collect();
    Summary::from_entries(entries)
}

fn combine(runs: usize) {
    println!();
    println!("| functions | combine (ms) | ns per function |");
    println!("|---:|---:|---:|");
    for total in [12_500, 25_000, 50_000, 100_000, 200_000] {
        let parts: Vec<Summary> = (0..8).map(|u| synthetic(u, total / 8)).collect();
        let t = time(runs, || {
            let parts = parts.clone();
            let start = Instant::now();
            let combined = std::hint::black_box(Summary::combine(parts));
            let elapsed = start.elapsed();
            drop(combined);
            elapsed
        });
        println!(
            "| {total} | {:.2} | {:.0} |",
            t.as_secs_f64() * 1000.0,
            t.as_nanos() as f64 / total as f64
        );
    }
}

fn main() {
    let runs = env_number("BENCH_RUNS", 5);
    let units = env_number("BENCH_UNITS", 8);
    corpus(runs, units);
    combine(runs);
}
