//! The merge pass on synthetic modules, against LLVM 14's MergeFunctions.
//!
//!     cargo bench --bench pass
//!     BENCH_SIZES=1000,10000 cargo bench --bench pass
//!
//! For each size N (default 1000, 10000, 100000 functions):
//! - `genmod.py --functions N --dup-rate 0.3 --seed 1` writes `target/bench-data/genmod-N.{clif,ll,expect.json}`
//!   (kept between runs: generation is skipped when the three files exist);
//! - the `.clif` is read once with `read_files` (not timed);
//! - then, alternately, our pass (`merge_module` in `Mode::Safe` on a fresh clone of the module;
//!   only the call is timed) and `opt -passes=mergefunc -time-passes -disable-output N.ll`
//!   (LLVM's `MergeFunctionsPass` wall time, as `-time-passes` prints it).
//!
//! - and, in the same run, the *hashing walk*: one single-threaded walk over the same parsed
//!   functions that hashes every instruction's opcode, arguments and result types (best of 7),
//!   the least work any exact merger must do (it reads every instruction once).
//!
//! Reported: medians in µs per function, their ratio, the median of the per-run ratios (ours
//! against the LLVM run right after it), ours against the hashing walk, and the peak heap the pass allocates above
//! what was live when it started (a counting global allocator). Without `opt` the LLVM column is
//! left out. Environment: `BENCH_SIZES` (comma-separated), `BENCH_RUNS` (runs per size, overrides
//! the default of 11 / 5 / 3), `OPT` (the `opt` binary to use).

use clif_merge::{ClifModule, Mode, ReadOptions, merge_module, read_files};
use cranelift_codegen::ir::Function;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

/// Counts the bytes live on the heap and the most that were live since the last reset, while
/// `COUNTING` is on. Counting makes every allocation of both threads update one shared atomic,
/// which slows the pass down: peaks are measured in an untimed run, times with counting off.
struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(bytes: usize) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let bytes = bytes as isize;
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(bytes as isize, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let old = layout.size();
            if new_size >= old {
                grew(new_size - old);
            } else {
                shrank(old - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// The most bytes the pass has live at once on a copy of `module`, above what was live when it
/// started (what it frees of the module counts against what it allocates).
fn pass_peak(module: &clif_merge::ClifModule) -> usize {
    let mut copy = module.clone();
    CURRENT.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let result = merge_module(&mut copy, Mode::Safe);
    COUNTING.store(false, Ordering::Relaxed);
    drop(result);
    drop(copy);
    PEAK.load(Ordering::Relaxed).max(0) as usize
}

/// One step of the walk's hash (FxHash's multiply-rotate).
#[inline]
fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// The hashing walk of one function: every instruction in layout order, its opcode, its
/// arguments (value numbers) and its results' types.
fn hash_function(func: &Function) -> u64 {
    let dfg = &func.dfg;
    let mut h = 0;
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            h = mix(h, dfg.insts[inst].opcode() as u64);
            for &arg in dfg.inst_args(inst) {
                h = mix(h, u64::from(arg.as_u32()));
            }
            for &result in dfg.inst_results(inst) {
                h = mix(h, dfg.value_type(result).index() as u64);
            }
        }
    }
    h
}

/// The best of `runs` hashing walks over every function of `module`, on this thread. Never
/// inlined, so that callgrind can count its instructions alone (`--toggle-collect='*hashing_walk*'`).
#[inline(never)]
fn hashing_walk(module: &ClifModule, runs: usize) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        let mut hashes = Vec::with_capacity(module.len());
        for f in module.functions() {
            hashes.push(hash_function(&f.func));
        }
        std::hint::black_box(&hashes);
        best = best.min(start.elapsed());
    }
    best
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Inputs {
    clif: PathBuf,
    ll: PathBuf,
    expect: PathBuf,
}

/// The genmod files for `n` functions, generated unless all three are already there.
fn inputs(n: usize) -> Inputs {
    let dir = manifest_dir().join("target").join("bench-data");
    std::fs::create_dir_all(&dir).expect("create target/bench-data");
    let base = format!("genmod-{n}");
    let path = |ext: &str| dir.join(format!("{base}.{ext}"));
    let files = Inputs {
        clif: path("clif"),
        ll: path("ll"),
        expect: path("expect.json"),
    };
    if files.clif.exists() && files.ll.exists() && files.expect.exists() {
        return files;
    }
    let tmp = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push(".tmp");
        PathBuf::from(s)
    };
    let genmod = manifest_dir().join("../shared/tools/genmod.py");
    eprintln!("generating {n} functions with {}", genmod.display());
    let start = Instant::now();
    let status = Command::new("python3")
        .arg(&genmod)
        .args(["--functions", &n.to_string()])
        .args(["--dup-rate", "0.3", "--seed", "1"])
        .arg("--out-ll")
        .arg(tmp(&files.ll))
        .arg("--out-clif")
        .arg(tmp(&files.clif))
        .arg("--out-expect")
        .arg(tmp(&files.expect))
        .status()
        .expect("run python3 genmod.py");
    assert!(status.success(), "genmod.py failed: {status}");
    for p in [&files.ll, &files.clif, &files.expect] {
        std::fs::rename(tmp(p), p).expect("rename generated file");
    }
    eprintln!("  generated in {:.1} s", start.elapsed().as_secs_f64());
    files
}

/// The `opt` binary: `$OPT`, else `opt-14`, else `opt`, if it runs.
fn find_opt() -> Option<String> {
    let candidates: Vec<String> = match std::env::var("OPT") {
        Ok(o) => vec![o],
        Err(_) => vec!["opt-14".into(), "opt".into()],
    };
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// The wall time of `MergeFunctionsPass` in `opt -time-passes` output: the last number on its
/// line that is not a percentage (the wall-time column is always printed, and printed last; the
/// user/system columns are left out when they are zero).
fn parse_mergefunc_wall(report: &str) -> Option<Duration> {
    let line = report
        .lines()
        .find(|l| l.split_whitespace().last() == Some("MergeFunctionsPass"))?;
    let seconds = line
        .split_whitespace()
        .filter(|w| !w.starts_with('(') && !w.ends_with(')') && !w.ends_with("%)"))
        .rev()
        .find_map(|w| w.parse::<f64>().ok())?;
    Some(Duration::from_secs_f64(seconds))
}

fn run_llvm(opt: &str, ll: &Path) -> Duration {
    let out = Command::new(opt)
        .args(["-passes=mergefunc", "-time-passes", "-disable-output"])
        .arg(ll)
        .output()
        .expect("run opt");
    assert!(
        out.status.success(),
        "opt failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    parse_mergefunc_wall(&text)
        .unwrap_or_else(|| panic!("no MergeFunctionsPass line in opt -time-passes output:\n{text}"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

struct Row {
    n: usize,
    runs: usize,
    ours_us: f64,
    llvm_us: Option<f64>,
    /// The median over runs of (ours / LLVM) in the same run: steadier than the ratio of the
    /// medians when the machine's speed drifts.
    pair_ratio: Option<f64>,
    peak_bytes: usize,
    /// The hashing walk, best of 7, µs per function.
    walk_us: f64,
    /// The median over runs of (ours / the walk of the same run).
    walk_ratio: f64,
    hashing_us: f64,
    comparing_us: f64,
    merging_us: f64,
    classes: usize,
    merged: usize,
    planted_classes: u64,
    planted_mergeable: u64,
}

fn planted(expect: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(expect).expect("read expect.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("parse expect.json");
    let summary = &json["summary"];
    (
        summary["classes"].as_u64().unwrap_or(0),
        summary["mergeable_functions"].as_u64().unwrap_or(0),
    )
}

fn bench_size(n: usize, runs: usize, opt: Option<&str>) -> Row {
    let files = inputs(n);
    let start = Instant::now();
    let module = read_files(std::slice::from_ref(&files.clif), ReadOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let count = module.functions().len();
    eprintln!(
        "{n}: read {count} functions in {:.1} s; {runs} runs",
        start.elapsed().as_secs_f64()
    );

    // One untimed run first: warms caches and the allocator.
    let (report, _) = merge_module(&mut module.clone(), Mode::Safe);
    let classes = report.classes.len();
    let merged = report.merged;
    drop(report);
    let peak_bytes = pass_peak(&module);

    let mut ours = Vec::new();
    let mut llvm = Vec::new();
    let mut walks = Vec::new();
    let (mut hashing, mut comparing, mut merging) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let mut copy = module.clone();
        let start = Instant::now();
        let (report, times) = merge_module(&mut copy, Mode::Safe);
        let elapsed = start.elapsed();
        drop(report);
        drop(copy);
        ours.push(elapsed.as_secs_f64() * 1e6 / count as f64);
        let walk = hashing_walk(&module, 7);
        walks.push(walk.as_secs_f64() * 1e6 / count as f64);
        hashing.push(times.hashing.as_secs_f64() * 1e6);
        comparing.push(times.comparing.as_secs_f64() * 1e6);
        merging.push(times.merging.as_secs_f64() * 1e6);
        let llvm_text = match opt {
            Some(opt) => {
                let t = run_llvm(opt, &files.ll);
                llvm.push(t.as_secs_f64() * 1e6 / count as f64);
                format!(", LLVM {:.3} ms", t.as_secs_f64() * 1e3)
            }
            None => String::new(),
        };
        eprintln!(
            "  run {}: ours {:.3} ms{llvm_text}, walk {:.3} ms",
            run + 1,
            elapsed.as_secs_f64() * 1e3,
            walk.as_secs_f64() * 1e3,
        );
    }
    let (planted_classes, planted_mergeable) = planted(&files.expect);
    // Paired before the medians below sort the runs.
    let pair_ratio = (!llvm.is_empty()).then(|| {
        let mut ratios: Vec<f64> = ours.iter().zip(&llvm).map(|(o, l)| o / l).collect();
        median(&mut ratios)
    });
    let mut walk_ratios: Vec<f64> = ours.iter().zip(&walks).map(|(o, w)| o / w).collect();
    let walk_ratio = median(&mut walk_ratios);
    Row {
        walk_us: median(&mut walks),
        walk_ratio,
        n: count,
        runs,
        ours_us: median(&mut ours),
        pair_ratio,
        llvm_us: (!llvm.is_empty()).then(|| median(&mut llvm)),
        peak_bytes,
        hashing_us: median(&mut hashing),
        comparing_us: median(&mut comparing),
        merging_us: median(&mut merging),
        classes,
        merged,
        planted_classes,
        planted_mergeable,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument, if any, is ignored.
    let sizes: Vec<usize> = match std::env::var("BENCH_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|w| {
                w.trim()
                    .parse()
                    .expect("BENCH_SIZES: comma-separated numbers")
            })
            .collect(),
        Err(_) => vec![1_000, 10_000, 100_000],
    };
    let forced_runs: Option<usize> = std::env::var("BENCH_RUNS")
        .ok()
        .map(|r| r.parse().expect("BENCH_RUNS: a number"));
    let opt = find_opt();
    match &opt {
        Some(o) => {
            let version = Command::new(o).arg("--version").output().unwrap();
            let version = String::from_utf8_lossy(&version.stdout);
            let line = version
                .lines()
                .find(|l| l.contains("version"))
                .unwrap_or("");
            eprintln!("LLVM: {o} ({})", line.trim());
        }
        None => eprintln!("LLVM: no `opt` found (tried $OPT, opt-14, opt): LLVM column skipped"),
    }

    let mut rows = Vec::new();
    for &n in &sizes {
        let runs = forced_runs.unwrap_or(match n {
            0..=1_000 => 11,
            1_001..=10_000 => 5,
            _ => 3,
        });
        rows.push(bench_size(n, runs, opt.as_deref()));
    }

    println!();
    println!(
        "| functions | runs | ours µs/function | LLVM µs/function | ratio (ours/LLVM) | median of per-run ratios | hashing walk µs/function | ours/walk (median of per-run ratios) | our peak heap during pass (MB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let pair = r.pair_ratio.map_or("n/a".into(), |p| format!("{p:.2}"));
        let (llvm, ratio) = match r.llvm_us {
            Some(l) => (format!("{l:.3}"), format!("{:.2}", r.ours_us / l)),
            None => ("n/a".into(), "n/a".into()),
        };
        println!(
            "| {} | {} | {:.3} | {llvm} | {ratio} | {pair} | {:.3} | {:.2} | {:.1} |",
            r.n,
            r.runs,
            r.ours_us,
            r.walk_us,
            r.walk_ratio,
            r.peak_bytes as f64 / 1e6
        );
    }
    if opt.is_none() {
        println!();
        println!(
            "LLVM column skipped: no `opt` binary (install Debian package `llvm`, or set OPT)."
        );
    }
    println!();
    println!(
        "Medians. Ours: `merge_module` (Mode::Safe) on a fresh clone, read not timed. LLVM: `MergeFunctionsPass` wall time from `opt -passes=mergefunc -time-passes -disable-output`. Hashing walk: one thread hashing every instruction's opcode, arguments and result types, best of 7 after each of our runs. Peak heap: most bytes live above those live when the pass started (MB = 10^6 bytes), in one more run with allocation counting on (the timed runs count nothing)."
    );
    println!();
    println!(
        "| functions | hashing ms | comparing ms | merging ms | classes found | planted classes | functions merged | planted mergeable |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} |",
            r.n,
            r.hashing_us / 1e3,
            r.comparing_us / 1e3,
            r.merging_us / 1e3,
            r.classes,
            r.planted_classes,
            r.merged,
            r.planted_mergeable
        );
    }
}
