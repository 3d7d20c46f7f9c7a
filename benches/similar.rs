//! Similar merging's pass time, against LLVM 22's GlobalMergeFunc, and the exact pass alone;
//! first, large groups of one shape, with and without `--similar`.
//!
//!     cargo bench --bench similar
//!     BENCH_SIZES=2000,20000 BENCH_RUNS=9 cargo bench --bench similar
//!     ONE_SHAPE=5000 BENCH_RUNS=5 cargo bench --bench similar
//!
//! One shape (needs nothing beside the repository): `ONE_SHAPE` functions (default 5,000)
//! `%fI(x, …) = x + c1 + c2 + …`, all of one shape, their constants drawn (a fixed pseudo-random
//! sequence) from a few values or many: one constant and six parameters, so that the added
//! parameter goes to the stack and no subgroup pays (where splitting used to take 64 s for
//! 2,000 functions); two halves that each merge but not together (6 constants of 100,000
//! values and one of 2); many small subgroups (8 constants of 5 values); groups that would
//! pass eight parameters, two on the stack, none paying (8 constants of 1,000 values). Each is
//! run as the command
//! line runs it (`clif-merge F.clif --emit-clif`: read and verify, merge, write the CLIF; the
//! text is in memory), with and without `--similar`, alternately, `BENCH_RUNS` times (default
//! 5). Reported: median times of the whole run and of the pass, and the medians of the per-run
//! ratios of `--similar` to the run without it just before.
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

use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{
    MergeOptions, Mode, ReadOptions, SimilarOptions, merge_module, merge_module_with, read_files,
    read_module_text,
};
use std::fmt::Write as _;
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

/// `n` functions `%fI(x, …) = x + c1 + c2 + …` of one shape, with `own` `i64` parameters,
/// constant `p` drawn from `values[p]` values by a fixed sequence (SplitMix64).
fn one_shape(n: usize, own: usize, values: &[u64]) -> String {
    let mut state = 0x5eed_u64;
    let mut next = |below: u64| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    };
    let params: Vec<String> = (0..own).map(|i| format!("v{i}: i64")).collect();
    let types = vec!["i64"; own].join(", ");
    let mut text = String::new();
    for i in 0..n {
        let _ = write!(
            text,
            "function %f{i}({types}) -> i64 {{\nblock0({}):\n",
            params.join(", ")
        );
        let mut last = 0;
        for (p, &range) in values.iter().enumerate() {
            let (c, sum) = (own + 2 * p, own + 2 * p + 1);
            let value = next(range);
            let _ = write!(
                text,
                "    v{c} = iconst.i64 {value}\n    v{sum} = iadd v{last}, v{c}\n"
            );
            last = sum;
        }
        let _ = write!(text, "    return v{last}\n}}\n\n");
    }
    text
}

/// One run as the command line's `clif-merge F.clif [--similar] --emit-clif`: the whole run's
/// time, the pass's, and the similar members merged.
fn run_once(text: &str, similar: Option<SimilarOptions>) -> (f64, f64, usize) {
    let start = Instant::now();
    let module = read_module_text(Path::new("one-shape.clif"), text, ReadOptions::default())
        .expect("read the module");
    let options = PipelineOptions {
        merge: MergeOptions {
            mode: Mode::Safe,
            similar,
            ..MergeOptions::default()
        },
        emit_clif: true,
        ..Default::default()
    };
    let out = run(module, &options).expect("merge");
    let whole = start.elapsed().as_secs_f64();
    let members = out
        .report
        .similar
        .iter()
        .flatten()
        .map(|g| g.members.len())
        .sum();
    (whole, out.pass_times.total().as_secs_f64(), members)
}

/// The one-shape table (see the module docs).
fn one_shape_bench(runs: usize) {
    let n: usize = std::env::var("ONE_SHAPE")
        .ok()
        .map(|s| s.parse().expect("ONE_SHAPE: a number"))
        .unwrap_or(5000);
    let shapes: [(&str, usize, Vec<u64>); 4] = [
        (
            "6 parameters, 1 constant of 1,000,000 values: nothing pays (the added parameter goes to the stack)",
            6,
            vec![1_000_000],
        ),
        (
            "1 parameter, 6 constants of 100,000 values and 1 of 2: two halves",
            1,
            [100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 2].to_vec(),
        ),
        (
            "1 parameter, 8 constants of 5 values: many subgroups",
            1,
            vec![5; 8],
        ),
        (
            "1 parameter, 8 constants of 1,000 values: none pays (eight parameters, two on the stack)",
            1,
            vec![1000; 8],
        ),
    ];
    println!(
        "{n} functions of one shape, `--mode safe`, whole run = read + merge + write CLIF; medians of {runs} runs"
    );
    println!();
    println!(
        "| functions | members merged | run without | run with `--similar` | ratio | pass without | pass with | pass ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, own, values) in shapes {
        let text = one_shape(n, own, &values);
        let (mut plain, mut similar, mut ratios) = (vec![], vec![], vec![]);
        let (mut plain_pass, mut similar_pass, mut pass_ratios) = (vec![], vec![], vec![]);
        let mut members = 0;
        for _ in 0..runs {
            let (whole, pass, _) = run_once(&text, None);
            let (whole_s, pass_s, m) = run_once(&text, Some(SimilarOptions::default()));
            members = m;
            ratios.push(whole_s / whole);
            pass_ratios.push(pass_s / pass);
            plain.push(whole);
            similar.push(whole_s);
            plain_pass.push(pass);
            similar_pass.push(pass_s);
        }
        let ms = |xs: Vec<f64>| format!("{:.0} ms", median(xs) * 1e3);
        println!(
            "| {name} | {members} | {} | {} | {:.2} | {} | {} | {:.2} |",
            ms(plain),
            ms(similar),
            median(ratios),
            ms(plain_pass),
            ms(similar_pass),
            median(pass_ratios),
        );
    }
    println!();
}

fn main() {
    let runs_or = |default: usize| -> usize {
        std::env::var("BENCH_RUNS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    one_shape_bench(runs_or(5));
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
