//! Similar merging's pass time, against LLVM 22's GlobalMergeFunc, and the exact pass alone.
//!
//!     cargo bench --bench similar
//!     BENCH_SIZES=2000,20000 BENCH_RUNS=9 cargo bench --bench similar
//!
//! For each size N (default 2000 and 20000 functions):
//! - `genmod.py --functions N --dup-rate 0 --near-rate 0.3 --seed 3` writes
//!   `target/bench-data/near-N.{clif,ll}` (kept between runs);
//! - the `.clif` is read once (not timed);
//! - then, in turn: our pass without `--similar` (`merge_module`, `Mode::Safe`, on a fresh clone;
//!   only the call is timed), our pass with it (`merge_module_with` and the default
//!   `SimilarOptions`), and `llc-22 -O2 -filetype=obj -function-sections -relocation-model=pic
//!   -enable-global-merge-func -time-passes N.ll -o /dev/null`, whose "Global Merge Functions"
//!   line (wall time) is LLVM's pass.
//!
//! Reported: medians in µs per function, the median of the per-run ratios of our `--similar`
//! pass to the GlobalMergeFunc run right after it, the groups and members merged. Without
//! `llc-22` (Debian package `llvm-22`; `LLC` names another) the LLVM column is left out; without
//! `../shared` the bench says so and stops.

use clif_merge::{Mode, ReadOptions, SimilarOptions, merge_module, merge_module_with, read_files};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The genmod files for `n` functions with near-duplicates, generated unless already there.
fn inputs(genmod: &Path, n: usize) -> (PathBuf, PathBuf) {
    let dir = manifest_dir().join("target").join("bench-data");
    std::fs::create_dir_all(&dir).expect("create target/bench-data");
    let clif = dir.join(format!("near-{n}.clif"));
    let ll = dir.join(format!("near-{n}.ll"));
    if clif.exists() && ll.exists() {
        return (clif, ll);
    }
    let tmp = |p: &Path| PathBuf::from(format!("{}.tmp", p.display()));
    let status = Command::new("python3")
        .arg(genmod)
        .args(["--functions", &n.to_string()])
        .args(["--dup-rate", "0", "--near-rate", "0.3", "--seed", "3"])
        .arg("--out-ll")
        .arg(tmp(&ll))
        .arg("--out-clif")
        .arg(tmp(&clif))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run python3 genmod.py");
    assert!(status.success(), "genmod.py failed: {status}");
    for p in [&ll, &clif] {
        std::fs::rename(tmp(p), p).expect("rename generated file");
    }
    (clif, ll)
}

/// The `llc` to use: `$LLC`, else `llc-22`, if it runs.
fn find_llc() -> Option<String> {
    let llc = std::env::var("LLC").unwrap_or_else(|_| "llc-22".into());
    let runs = Command::new(&llc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    runs.then_some(llc)
}

/// GlobalMergeFunc's wall time in one `llc -time-passes` run: the third column pair (wall) of
/// its "Global Merge Functions" line.
fn run_llvm(llc: &str, ll: &Path) -> Duration {
    let out = Command::new(llc)
        .args([
            "-O2",
            "-filetype=obj",
            "-function-sections",
            "-relocation-model=pic",
        ])
        .args(["-enable-global-merge-func", "-time-passes"])
        .arg(ll)
        .args(["-o", "/dev/null"])
        .output()
        .expect("run llc");
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.trim_end().ends_with("Global Merge Functions"))
        .unwrap_or_else(|| panic!("no Global Merge Functions line in:\n{text}"));
    // "user (pct) system (pct) user+system (pct) wall (pct) name": the wall time is the 7th word.
    let words: Vec<&str> = line.split_whitespace().collect();
    let wall: f64 = words
        .get(6)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the wall time of: {line}"));
    Duration::from_secs_f64(wall)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let genmod = manifest_dir().join("../shared/tools/genmod.py");
    if !genmod.exists() {
        eprintln!("{} is missing: nothing to measure", genmod.display());
        return;
    }
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|s| {
            s.split(',')
                .map(|x| x.trim().parse().expect("a size"))
                .collect()
        })
        .unwrap_or_else(|| vec![2000, 20000]);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let llc = find_llc();
    if llc.is_none() {
        eprintln!("llc-22 not found (Debian package llvm-22): the LLVM column is left out");
    }
    println!(
        "| functions | exact µs/fn | --similar µs/fn | GlobalMergeFunc µs/fn | --similar / GMF (median of per-run ratios) | groups | members |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let options = SimilarOptions::default();
    for n in sizes {
        let (clif, ll) = inputs(&genmod, n);
        let module = read_files(&[clif], ReadOptions::default()).expect("read the module");
        let (mut exact, mut similar, mut llvm, mut ratios) = (vec![], vec![], vec![], vec![]);
        let (mut groups, mut members) = (0, 0);
        for _ in 0..runs {
            let mut copy = module.clone();
            let start = Instant::now();
            let result = merge_module(&mut copy, Mode::Safe);
            exact.push(start.elapsed().as_secs_f64());
            drop((result, copy));

            let mut copy = module.clone();
            let start = Instant::now();
            let (report, _) = merge_module_with(&mut copy, Mode::Safe, Some(&options));
            let ours = start.elapsed().as_secs_f64();
            similar.push(ours);
            let found = report.similar.unwrap_or_default();
            groups = found.len();
            members = found.iter().map(|g| g.members.len()).sum();
            drop(copy);

            if let Some(llc) = &llc {
                let theirs = run_llvm(llc, &ll).as_secs_f64();
                llvm.push(theirs);
                ratios.push(ours / theirs);
            }
        }
        let per_fn = |xs: Vec<f64>| median(xs) * 1e6 / n as f64;
        let (llvm_col, ratio_col) = if llvm.is_empty() {
            ("—".to_string(), "—".to_string())
        } else {
            (
                format!("{:.2}", per_fn(llvm)),
                format!("{:.2}", median(ratios)),
            )
        };
        println!(
            "| {n} | {:.2} | {:.2} | {llvm_col} | {ratio_col} | {groups} | {members} |",
            per_fn(exact),
            per_fn(similar),
        );
    }
}
