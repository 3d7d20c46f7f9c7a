//! A bounded, deterministic mutation fuzzer that runs on the stable toolchain (the cargo-fuzz
//! targets in `fuzz/` need nightly).
//!
//! Mutants of the filetests corpus (`filetests/**/*.clif`) and `examples/*.clif`: bytes flipped,
//! the text truncated, lines duplicated, deleted, swapped or spliced in from other files, random
//! tokens inserted, numbers and names replaced, whole functions copied under new names, linkage
//! and alias directives added, entity references pointed at undeclared entities (`gv0` →
//! `gv3`), names replaced by undeclared user names (`userextname7`). Each mutant goes through
//! what the command does, in-process: read and verify, then for every mode merge, write the
//! JSON and text reports, emit CLIF and read that back, and compile an object (safe mode). Bad input must give an error naming the file; good input must give CLIF that
//! reads back with the same functions, linkages and aliases. A panic anywhere fails the test
//! with the input printed (and saved under `target/tmp/fuzz-loop/`); a mutant that takes longer
//! than `FUZZ_LOOP_HANG_SECS` (default 120) aborts the test binary with the input printed.
//!
//! Environment:
//! - `FUZZ_LOOP_ITERS`: run exactly this many mutants (default: up to 100,000 and at most 20
//!   seconds of wall time, so that `cargo test` stays quick);
//! - `FUZZ_LOOP_SEED`: the seed (default 0xc11f); mutant `i` depends on the seed and `i` only;
//! - `FUZZ_LOOP_STRICT=1`: do not skip mutants with large entity numbers;
//! - `FUZZ_LOOP_HANG_SECS`: how long one mutant may run (default 120).
//!
//! A long run, with the rate (mutants per minute):
//!
//!     FUZZ_LOOP_ITERS=200000 cargo test --release --test fuzz_loop -- --nocapture
//!
//! Mutants naming an entity numbered above 1,000,000 (`ss4000000`) are skipped (counted as
//! `skipped`; `FUZZ_LOOP_STRICT=1` runs them too): cranelift-reader creates every entity up to
//! the largest number written, so below `read`'s limit of 10,000,000 each costs up to a
//! gigabyte, which makes the loop slow and large; and a `;` inside a quoted string still hides a
//! number above the limit from `read` (ignored tests in tests/hostile.rs).
//!
//! What the loop found and what is now fixed has a regression test below: panics in Cranelift's
//! verifier, dangling global values and dynamic types, the empty function name `%`.

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::read::read_module_text;
use clif_merge::{
    ClifModule, Mode, ReadOptions, SimilarOptions, SymbolLinkage, emit, merge_module,
    merge_module_with, report,
};
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
const LINKAGES: [SymbolLinkage; 4] = [
    SymbolLinkage::Export,
    SymbolLinkage::Hidden,
    SymbolLinkage::Local,
    SymbolLinkage::Preemptible,
];
/// The wall-time budget when `FUZZ_LOOP_ITERS` is not set.
const DEFAULT_BUDGET: Duration = Duration::from_secs(20);
const DEFAULT_MAX_ITERS: u64 = 100_000;
/// Mutants with entity numbers above this are skipped (see the module documentation).
const MAX_ENTITY_NUMBER: u64 = 1_000_000;
/// Failures collected before the loop stops.
const MAX_FAILURES: usize = 5;

// ---------------------------------------------------------------------------------------------
// Randomness: splitmix64, seeded per mutant
// ---------------------------------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn new(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------------

fn clif_files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            clif_files_under(&path, found);
        } else if path.extension().is_some_and(|e| e == "clif") {
            found.push(path);
        }
    }
}

/// Every corpus file, in a fixed order: (path relative to the crate, contents).
fn corpus() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    clif_files_under(&root.join("filetests"), &mut paths);
    clif_files_under(&root.join("examples"), &mut paths);
    let files: Vec<(String, Vec<u8>)> = paths
        .iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, std::fs::read(p).unwrap())
        })
        .collect();
    assert!(files.len() >= 50, "the corpus is missing: {files:?}");
    files
}

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

/// Tokens a mutation may insert: keywords, opcodes, types, entities, numbers, punctuation,
/// directives, and a few things that are not CLIF at all.
const TOKENS: &[&str] = &[
    "function",
    "block0",
    "block1",
    "block7",
    "v0",
    "v1",
    "v2",
    "v99",
    "ss0",
    "ss1",
    "gv0",
    "gv1",
    "fn0",
    "fn1",
    "sig0",
    "sig1",
    "jt0",
    "const0",
    "dss0",
    "dt0",
    "inst0",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "f32",
    "f64",
    "i32x4",
    "f64x2",
    "iconst.i32",
    "iconst.i64",
    "iadd",
    "isub",
    "imul",
    "udiv",
    "icmp",
    "eq",
    "ne",
    "ult",
    "sge",
    "fcmp",
    "uno",
    "brif",
    "jump",
    "br_table",
    "return",
    "return_call",
    "call",
    "call_indirect",
    "func_addr.i64",
    "symbol_value",
    "global_value.i64",
    "load.i32",
    "store",
    "stack_load.i32",
    "stack_store",
    "stack_addr.i64",
    "trap",
    "trapz",
    "user1",
    "heap_oob",
    "notrap",
    "aligned",
    "readonly",
    "little",
    "big",
    "explicit_slot",
    "sized",
    "vmctx",
    "load.i64 notrap aligned",
    "iadd_imm",
    "select",
    "nop",
    "try_call",
    "exception",
    "tail",
    "fast",
    "system_v",
    "cold",
    "colocated",
    "patchable",
    "uext",
    "sext",
    "sret",
    "%f",
    "%g",
    "%helper",
    "%caller1",
    "u0:0",
    "u1:7",
    "u4294967295:4294967295",
    "0",
    "1",
    "-1",
    "0x0",
    "0xffffffff",
    "0xffffffffffffffff",
    "4294967295",
    "-9223372036854775808",
    "18446744073709551616",
    "1.5",
    "0x1.0p0",
    "-0x0.0p0",
    "NaN",
    "+Inf",
    "sNaN:0x1",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "=",
    "->",
    "+",
    "-",
    "*",
    "!",
    ".",
    "\"",
    "#",
    "@",
    "\n",
    "\n\n",
    "\t",
    " ",
    ";",
    "; linkage: %f local",
    "; linkage: %g preemptible",
    "; linkage: %helper hidden",
    "; alias: %z = %f",
    "; alias: %f = %g",
    "; alias: %g = %g",
    "; linkage: u0:0 local",
    "; linkage:",
    "; alias:",
    "test merge mode=aliases",
    "set opt_level=speed",
    "target x86_64",
    "}\n\nfunction %new() {\nblock0:\n    return\n}\n",
    "\u{feff}",
    "\u{a0}",
    "\u{fffd}",
    "é",
    "\0",
    "$",
];

/// Numbers a number may become (small enough as entity numbers, see `MAX_ENTITY_NUMBER`).
const NUMBERS: &[&str] = &[
    "0", "1", "2", "3", "7", "8", "15", "16", "31", "32", "63", "64", "100", "127", "128", "255",
    "256", "1000", "4095", "65535", "65536", "99999", "100000", "1000000",
];

const LINKAGE_WORDS: &[&str] = &["export", "hidden", "local", "preemptible", "weak", ""];

fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn join_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    lines.join(&b'\n')
}

/// The function names a text defines (`function NAME(`), as written.
fn function_names(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut names = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        if let Some(rest) = line.strip_prefix(b"function ") {
            let end = rest
                .iter()
                .position(|&b| b == b'(' || b == b' ')
                .unwrap_or(rest.len());
            names.push(rest[..end].to_vec());
        }
    }
    names
}

/// Spans of runs of ASCII alphanumerics, `_`, `%`, `:` and `.` (identifiers, names, numbers).
fn words(bytes: &[u8]) -> Vec<(usize, usize)> {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b"_%:.".contains(&b);
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if is_word(bytes[i]) {
            let start = i;
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// The prefix and number of an entity reference such as `gv3` or `block12`.
fn entity_reference(word: &[u8]) -> Option<(&str, u64)> {
    const PREFIXES: &[&str] = &[
        "v",
        "block",
        "ss",
        "dss",
        "sig",
        "fn",
        "gv",
        "jt",
        "dt",
        "mt",
        "region",
        "const",
        "tag",
        "userextname",
    ];
    let word = std::str::from_utf8(word).ok()?;
    let digits = word.trim_start_matches(|c: char| c.is_ascii_lowercase());
    let prefix = &word[..word.len() - digits.len()];
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    PREFIXES
        .iter()
        .find(|&&p| p == prefix)
        .map(|&p| (p, digits.parse().unwrap()))
}

/// Spans of runs of ASCII digits.
fn digit_runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

fn splice(bytes: &mut Vec<u8>, (start, end): (usize, usize), with: &[u8]) {
    bytes.splice(start..end, with.iter().copied());
}

/// Applies one random mutation; returns its description.
fn mutate_once(bytes: &mut Vec<u8>, corpus: &[(String, Vec<u8>)], rng: &mut Rng) -> String {
    let len = bytes.len();
    match rng.below(18) {
        0 => {
            // Flip bits, or overwrite bytes (ASCII most of the time).
            let n = 1 + rng.below(4);
            for _ in 0..n {
                if len == 0 {
                    break;
                }
                let i = rng.below(len);
                bytes[i] = match rng.below(3) {
                    0 => bytes[i] ^ (1 << rng.below(8)),
                    1 => 0x20 + rng.below(0x5f) as u8,
                    _ => rng.next() as u8,
                };
            }
            format!("flip {n} bytes")
        }
        1 => {
            let at = rng.below(len + 1);
            bytes.truncate(at);
            format!("truncate at {at}")
        }
        2 => {
            // Duplicate a run of lines, in place or elsewhere.
            let mut lines = lines_of(bytes);
            let start = rng.below(lines.len());
            let n = 1 + rng.below(8).min(lines.len() - start - 1);
            let run: Vec<Vec<u8>> = lines[start..start + n].to_vec();
            let to = if rng.chance(50) {
                start
            } else {
                rng.below(lines.len() + 1)
            };
            lines.splice(to..to, run);
            *bytes = join_lines(&lines);
            format!("duplicate lines {}..{} at {to}", start + 1, start + n + 1)
        }
        3 => {
            // Splice lines of another file.
            let (other_name, other) = rng.pick(corpus);
            let other_lines = lines_of(other);
            let start = rng.below(other_lines.len());
            let n = 1 + rng.below(30).min(other_lines.len() - start - 1);
            let mut lines = lines_of(bytes);
            let to = rng.below(lines.len() + 1);
            let replace = if rng.chance(30) {
                rng.below(4).min(lines.len() - to)
            } else {
                0
            };
            lines.splice(
                to..to + replace,
                other_lines[start..start + n].iter().cloned(),
            );
            *bytes = join_lines(&lines);
            format!(
                "splice lines {}..{} of {other_name} at line {} (replacing {replace})",
                start + 1,
                start + n + 1,
                to + 1
            )
        }
        4 => {
            let token = *rng.pick(TOKENS);
            let at = rng.below(len + 1);
            let mut with = Vec::new();
            if rng.chance(70) {
                with.push(b' ');
            }
            with.extend_from_slice(token.as_bytes());
            if rng.chance(70) {
                with.push(b' ');
            }
            splice(bytes, (at, at), &with);
            format!("insert {token:?} at {at}")
        }
        5 => {
            let mut lines = lines_of(bytes);
            let start = rng.below(lines.len());
            let n = 1 + rng.below(3).min(lines.len() - start - 1);
            lines.drain(start..start + n);
            *bytes = join_lines(&lines);
            format!("delete lines {}..{}", start + 1, start + n + 1)
        }
        6 => {
            let mut lines = lines_of(bytes);
            let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
            lines.swap(a, b);
            *bytes = join_lines(&lines);
            format!("swap lines {} and {}", a + 1, b + 1)
        }
        7 | 8 => {
            // A number becomes another.
            let runs = digit_runs(bytes);
            if runs.is_empty() {
                return "no number to replace".into();
            }
            let span = *rng.pick(&runs);
            let with = *rng.pick(NUMBERS);
            splice(bytes, span, with.as_bytes());
            format!("number at {} becomes {with}", span.0)
        }
        9 | 10 => {
            // A word becomes another word of the same text (an operand, an opcode, a type, a
            // block, a callee name...).
            let spans = words(bytes);
            if spans.len() < 2 {
                return "no word to replace".into();
            }
            let span = *rng.pick(&spans);
            let (s, e) = *rng.pick(&spans);
            let with = bytes[s..e].to_vec();
            splice(bytes, span, &with);
            format!(
                "word at {} becomes {:?}",
                span.0,
                String::from_utf8_lossy(&with)
            )
        }
        11 | 12 => {
            // Copy a function under a new name (a candidate for merging), sometimes with one
            // of its numbers changed.
            let text = bytes.clone();
            let names = function_names(&text);
            let lines = lines_of(&text);
            let starts: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].starts_with(b"function "))
                .collect();
            if starts.is_empty() {
                return "no function to copy".into();
            }
            let k = rng.below(starts.len());
            let start = starts[k];
            let end = (start..lines.len())
                .find(|&i| lines[i].starts_with(b"}"))
                .unwrap_or(lines.len() - 1);
            let name = &names[k];
            let new_name = format!("{}_copy{}", String::from_utf8_lossy(name), rng.below(3));
            let mut copy: Vec<Vec<u8>> = lines[start..=end].to_vec();
            copy[0] = [
                b"function ".as_slice(),
                new_name.as_bytes(),
                &copy[0][9 + name.len()..],
            ]
            .concat();
            let mut body = join_lines(&copy);
            if rng.chance(30) {
                let runs = digit_runs(&body);
                if !runs.is_empty() {
                    let span = *rng.pick(&runs);
                    splice(&mut body, span, rng.pick(NUMBERS).as_bytes());
                }
            }
            let mut out = text;
            out.extend_from_slice(b"\n\n");
            out.extend_from_slice(&body);
            out.push(b'\n');
            *bytes = out;
            format!("copy function {new_name}")
        }
        13 => {
            // A linkage directive for a defined (or not) function.
            let names = function_names(bytes);
            let name = if names.is_empty() || rng.chance(10) {
                b"%nowhere".to_vec()
            } else {
                rng.pick(&names).clone()
            };
            let kind = *rng.pick(LINKAGE_WORDS);
            let line = format!("; linkage: {} {kind}\n", String::from_utf8_lossy(&name));
            let at = if rng.chance(50) { 0 } else { len };
            splice(bytes, (at, at), line.as_bytes());
            format!("add {line:?}")
        }
        14 => {
            // An alias directive.
            let names = function_names(bytes);
            let name_of = |rng: &mut Rng| -> String {
                if names.is_empty() || rng.chance(15) {
                    format!("%alias{}", rng.below(3))
                } else {
                    let name: &Vec<u8> = rng.pick(&names);
                    String::from_utf8_lossy(name).into_owned()
                }
            };
            let line = format!("; alias: {} = {}\n", name_of(rng), name_of(rng));
            splice(bytes, (len, len), line.as_bytes());
            format!("add {line:?}")
        }
        16 => {
            // A reference to an entity the function may not declare: `gv0` becomes `gv3`.
            let spans: Vec<(usize, usize)> = words(bytes)
                .into_iter()
                .filter(|&(s, e)| entity_reference(&bytes[s..e]).is_some())
                .collect();
            if spans.is_empty() {
                return "no entity reference".into();
            }
            let span = *rng.pick(&spans);
            let (prefix, n) = entity_reference(&bytes[span.0..span.1]).unwrap();
            let with = format!("{prefix}{}", n + 1 + rng.below(8) as u64);
            splice(bytes, span, with.as_bytes());
            format!("reference at {} becomes {with}", span.0)
        }
        17 => {
            // A function or symbol name becomes a user name the function does not declare (the
            // reader's `userextnameN`), or one it may not declare (`u9:N`).
            let spans: Vec<(usize, usize)> = words(bytes)
                .into_iter()
                .filter(|&(s, e)| {
                    let w = &bytes[s..e];
                    w.starts_with(b"%") || (w.starts_with(b"u") && w.contains(&b':'))
                })
                .collect();
            if spans.is_empty() {
                return "no name".into();
            }
            let span = *rng.pick(&spans);
            let with = if rng.chance(50) {
                format!("userextname{}", rng.below(6))
            } else {
                format!("u9:{}", rng.below(6))
            };
            splice(bytes, span, with.as_bytes());
            format!("name at {} becomes {with}", span.0)
        }
        _ => {
            // Delete a random byte range.
            let start = rng.below(len + 1);
            let end = (start + 1 + rng.below(64)).min(len);
            bytes.drain(start..end);
            format!("delete bytes {start}..{end}")
        }
    }
}

/// Mutant `index`: (file it came from, mutations, bytes, default linkage).
fn mutant(
    corpus: &[(String, Vec<u8>)],
    seed: u64,
    index: u64,
) -> (String, Vec<String>, Vec<u8>, SymbolLinkage) {
    let mut rng = Rng::new(seed, index);
    let (name, original) = rng.pick(corpus);
    let mut bytes = original.clone();
    let n = 1 + rng.below(4);
    let mutations = (0..n)
        .map(|_| mutate_once(&mut bytes, corpus, &mut rng))
        .collect();
    let linkage = *rng.pick(&LINKAGES);
    (name.clone(), mutations, bytes, linkage)
}

/// Whether the text names an entity (`ss12345678`, `v4000000000`) with a number above
/// `MAX_ENTITY_NUMBER`: a letter directly followed by such a number (not `0x`).
fn names_huge_entity(bytes: &[u8]) -> bool {
    digit_runs(bytes).into_iter().any(|(s, e)| {
        s > 0
            && bytes[s - 1].is_ascii_alphabetic()
            && !(bytes[s - 1] == b'x' && s > 1 && bytes[s - 2] == b'0')
            && (e - s > 7
                || std::str::from_utf8(&bytes[s..e])
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
                    > MAX_ENTITY_NUMBER)
    })
}

thread_local! {
    /// Set while the loop runs: panics are recorded in `LAST_PANIC` instead of printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Installs a panic hook that is quiet on threads that set `QUIET`, and records the panic
/// (message and location) for the failure report. Panics the library catches and reports as
/// errors are neither printed nor recorded.
fn install_quiet_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if clif_merge::panic_is_caught() {
            return;
        }
        if QUIET.with(Cell::get) {
            if let Ok(mut last) = LAST_PANIC.lock() {
                *last = info.to_string();
            }
        } else {
            default(info);
        }
    }));
}

// ---------------------------------------------------------------------------------------------
// The pipeline and its checks
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Counts {
    mutants: u64,
    not_utf8: u64,
    read_errors: u64,
    read_ok: u64,
    merged_something: u64,
    remerged_more: u64,
    skipped: u64,
}

enum Outcome {
    NotUtf8,
    ReadError,
    Merged { anything: bool, remerged_more: bool },
}

fn read_module(file: &Path, text: &str, linkage: SymbolLinkage) -> Result<ClifModule, String> {
    let options = ReadOptions {
        default_linkage: linkage,
        verify: true,
    };
    read_module_text(file, text, options).map_err(|e| e.to_string())
}

/// What the command does with one input, with the checks; `Err` is a contract violation
/// (a panic is caught by the caller).
fn run_pipeline(bytes: &[u8], linkage: SymbolLinkage, scratch: &Path) -> Result<Outcome, String> {
    let file = Path::new("mutant.clif");
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => {
            // What the command does with a file: an error naming the line.
            let path = scratch.join("mutant.clif");
            std::fs::write(&path, bytes).unwrap();
            let err = clif_merge::read::read_text(&path)
                .err()
                .ok_or("text that is not UTF-8 was read")?;
            if !err.to_string().contains("not valid UTF-8") || err.line == 0 {
                return Err(format!(
                    "unexpected error for text that is not UTF-8: {err}"
                ));
            }
            return Ok(Outcome::NotUtf8);
        }
    };
    let module = match read_module(file, text, linkage) {
        Ok(m) => m,
        Err(e) => {
            if !e.starts_with("mutant.clif") {
                return Err(format!("the error does not name the file: {e}"));
            }
            return Ok(Outcome::ReadError);
        }
    };
    let mut anything = false;
    let mut remerged_more = false;
    // Every mode, then safe mode with similar merging forced on every group that fits.
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let configurations = MODES
        .iter()
        .map(|&mode| (mode, None))
        .chain([(Mode::Safe, Some(&forced))]);
    for (mode, similar) in configurations {
        let mut merged = module.clone();
        let (merge_report, _) = merge_module_with(&mut merged, mode, similar);
        if similar.is_some() {
            // The input verified; so must everything similar merging writes (with the host's
            // ISA where a function needs one, as reading verified it).
            let isa = clif_merge::read::host_isa();
            for mf in merged.functions() {
                clif_merge::read::verify_clif(&mf.func, isa.as_deref()).map_err(|e| {
                    format!(
                        "--similar wrote {}, which does not verify: {e}\n{}",
                        mf.name,
                        mf.func.display()
                    )
                })?;
            }
        }
        if merge_report.functions != module.functions().len() {
            return Err(format!(
                "{mode:?}: the report counts {} functions, the module has {}",
                merge_report.functions,
                module.functions().len()
            ));
        }
        if merge_report.merged > merge_report.functions {
            return Err(format!("{mode:?}: more merged than functions"));
        }
        anything |= merge_report.merged > 0;
        let json = report::to_json(&merge_report, None);
        serde_json::from_str::<serde_json::Value>(&json)
            .map_err(|e| format!("{mode:?}: the JSON report does not parse: {e}\n{json}"))?;
        let _ = report::to_text(&merge_report, None);
        let clif = emit::module_to_clif(&merged);
        let back = read_module(Path::new("emitted.clif"), &clif, SymbolLinkage::Export)
            .map_err(|e| format!("{mode:?}: the emitted CLIF does not read back: {e}\n{clif}"))?;
        let names = |m: &ClifModule| -> Vec<(String, SymbolLinkage)> {
            m.functions()
                .map(|f| (f.name.to_string(), f.linkage))
                .collect()
        };
        if names(&back) != names(&merged) {
            return Err(format!(
                "{mode:?}: the emitted CLIF reads back as other functions or linkages\n{clif}"
            ));
        }
        if back.aliases() != merged.aliases() {
            return Err(format!(
                "{mode:?}: the emitted CLIF reads back with other aliases\n{clif}"
            ));
        }
        for (written, read) in merged.functions().zip(back.functions()) {
            if clif_merge::compare(&written.func, &read.func).is_ne() {
                return Err(format!(
                    "{mode:?}: {} reads back as a different function:\n{}\n--- emitted ---\n{clif}",
                    written.name,
                    read.func.display()
                ));
            }
        }
        let again = emit::module_to_clif(&back);
        if again != clif {
            return Err(format!(
                "{mode:?}: emitting what was read back gives other text\n{clif}\n--- then ---\n{again}"
            ));
        }
        // Compiling, as `-o` does (an error is fine: Cranelift cannot lower every verified
        // function; a panic is not).
        if mode == Mode::Safe {
            let _ = write_object(&merged, merge_report.removed(), &object_options());
        }
        // Merging the output again: counted (not a documented promise).
        let mut again = back;
        remerged_more |= merge_module(&mut again, mode).0.merged > 0;
    }
    Ok(Outcome::Merged {
        anything,
        remerged_more,
    })
}

/// Objects for x86_64 Linux, not optimized (the cheapest compile that lowers everything).
fn object_options() -> ObjectOptions {
    ObjectOptions {
        target: parse_target("x86_64-unknown-linux-gnu").unwrap(),
        isa: Default::default(),
        opt_level: OptLevel::None,
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: true,
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={value} is not a number")))
}

fn show_input(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() > 6000 {
        let mut cut = 6000;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}\n... ({} bytes in all)", &text[..cut], bytes.len())
    } else {
        text.into_owned()
    }
}

#[test]
fn mutants_of_the_corpus_never_panic() {
    let corpus = corpus();
    let seed = env_u64("FUZZ_LOOP_SEED").unwrap_or(0xc11f);
    let fixed_iters = env_u64("FUZZ_LOOP_ITERS");
    let strict = env_u64("FUZZ_LOOP_STRICT").is_some_and(|v| v != 0);
    install_quiet_panic_hook();
    let hang = Duration::from_secs(env_u64("FUZZ_LOOP_HANG_SECS").unwrap_or(120));
    // Failing inputs are kept in `saved_dir`; the scratch folder (for the file that text which
    // is not UTF-8 is read from) is this process's own: other `cargo test` runs share target/tmp.
    let saved_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-loop");
    std::fs::create_dir_all(&saved_dir).unwrap();
    let scratch_dir = tempfile::tempdir().expect("a temporary folder");
    let scratch = scratch_dir.path();

    // The watchdog: a mutant that runs longer than `hang` is a hang; print it and abort.
    let current: Arc<Mutex<String>> = Arc::default();
    let started_ms = Arc::new(AtomicU64::new(u64::MAX));
    let done = Arc::new(AtomicBool::new(false));
    let clock = Instant::now();
    let watchdog = {
        let (current, started_ms, done) = (current.clone(), started_ms.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let start = started_ms.load(Ordering::Relaxed);
                let now = clock.elapsed().as_millis() as u64;
                if start != u64::MAX && now.saturating_sub(start) > hang.as_millis() as u64 {
                    let what = current.lock().map(|c| c.clone()).unwrap_or_default();
                    eprintln!("fuzz_loop: a mutant runs for more than {hang:?} (a hang):\n{what}");
                    std::process::abort();
                }
            }
        })
    };

    let mut counts = Counts::default();
    let mut failures: Vec<String> = Vec::new();
    let iters = fixed_iters.unwrap_or(DEFAULT_MAX_ITERS);
    let begin = Instant::now();
    for index in 0..iters {
        if fixed_iters.is_none() && begin.elapsed() > DEFAULT_BUDGET {
            break;
        }
        let (source, mutations, bytes, linkage) = mutant(&corpus, seed, index);
        counts.mutants += 1;
        if names_huge_entity(&bytes) && !strict {
            counts.skipped += 1;
            continue;
        }
        let describe = || {
            format!(
                "mutant {index} (FUZZ_LOOP_SEED={seed:#x}) of {source}, default linkage {}, \
                 mutations: {mutations:?}\n--- input ---\n{}\n--- end ---",
                linkage.keyword(),
                show_input(&bytes)
            )
        };
        *current.lock().unwrap() = describe();
        started_ms.store(clock.elapsed().as_millis() as u64, Ordering::Relaxed);
        QUIET.with(|q| q.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| run_pipeline(&bytes, linkage, scratch)));
        QUIET.with(|q| q.set(false));
        started_ms.store(u64::MAX, Ordering::Relaxed);
        let problem = match result {
            Ok(Ok(Outcome::NotUtf8)) => {
                counts.not_utf8 += 1;
                None
            }
            Ok(Ok(Outcome::ReadError)) => {
                counts.read_errors += 1;
                None
            }
            Ok(Ok(Outcome::Merged {
                anything,
                remerged_more,
            })) => {
                counts.read_ok += 1;
                counts.merged_something += u64::from(anything);
                if remerged_more {
                    counts.remerged_more += 1;
                    if counts.remerged_more <= 3 {
                        let saved = saved_dir.join(format!("remerge-{seed:x}-{index}.clif"));
                        std::fs::write(&saved, &bytes).unwrap();
                    }
                }
                None
            }
            Ok(Err(violation)) => Some(violation),
            Err(_) => {
                let what = LAST_PANIC.lock().map(|p| p.clone()).unwrap_or_default();
                Some(format!("panicked: {what}"))
            }
        };
        if let Some(problem) = problem {
            let saved = saved_dir.join(format!("failure-{seed:x}-{index}.clif"));
            std::fs::write(&saved, &bytes).unwrap();
            failures.push(format!(
                "{problem}\n{}\n(saved as {})",
                describe(),
                saved.display()
            ));
            if failures.len() >= MAX_FAILURES {
                break;
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    watchdog.join().unwrap();

    let secs = begin.elapsed().as_secs_f64();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "fuzz_loop ({profile}): {} mutants in {secs:.1} s ({:.0} per minute): {} read and \
         merged ({} merged something, {} merged more when their output was merged again), \
         {} read errors, {} not UTF-8, {} skipped (large entity numbers)",
        counts.mutants,
        counts.mutants as f64 * 60.0 / secs.max(1e-9),
        counts.read_ok,
        counts.merged_something,
        counts.remerged_more,
        counts.read_errors,
        counts.not_utf8,
        counts.skipped
    );
    assert!(
        failures.is_empty(),
        "{} failing mutants:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(counts.read_ok > 0, "no mutant read: the mutator is broken");
}

// ---------------------------------------------------------------------------------------------
// What this loop found (fixed since): regression tests
// ---------------------------------------------------------------------------------------------

/// Two copies (`%f`, `%g`) of a function `%f` whose preamble is `preamble` and that returns its
/// `i64 vmctx` parameter plus `body` instructions; the copies make the pass fingerprint them.
fn twins(preamble: &str, body: &str) -> String {
    let f = format!(
        "function %f(i64 vmctx) -> i64 {{\n    gv0 = vmctx\n{preamble}block0(v0: i64):\n{body}    \
         return v0\n}}\n"
    );
    format!("{f}\n{}", f.replace("%f(", "%g("))
}

/// Runs the pipeline on `text` in every default linkage; fails on a panic or a violation.
fn assert_no_panic(text: &str) {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    for linkage in LINKAGES {
        let result = catch_unwind(AssertUnwindSafe(|| {
            run_pipeline(text.as_bytes(), linkage, scratch.path())
        }));
        match result {
            Ok(Ok(_)) => {}
            Ok(Err(violation)) => panic!("{linkage:?}: {violation}\n--- input ---\n{text}"),
            Err(_) => panic!("{linkage:?}: panicked (message above) on:\n{text}"),
        }
    }
}

/// Asserts that `text` is an input error naming the file, and that nothing panics.
fn assert_input_error(text: &str) {
    let err = read_module(Path::new("found.clif"), text, SymbolLinkage::Export).unwrap_err();
    assert!(err.starts_with("found.clif:"), "{err}\n{text}");
    assert_no_panic(text);
}

/// Inputs on which cranelift-codegen 0.135.8's verifier panics: a global value whose base is
/// not declared (`verify_global_values`, verifier/mod.rs:341), and a function with a `vmctx`
/// global value whose entry block lacks the signature's parameters
/// (`FunctionStencil::special_param`, ir/function.rs:287). They are input errors.
#[test]
fn verifier_panics_are_input_errors() {
    for text in [
        twins("    gv1 = load.i64 notrap aligned gv7+8\n", ""),
        twins("    gv1 = iadd_imm.i64 gv9, 8\n    stack_limit = gv1\n", ""),
        "function %f(i64 vmctx) {\n    gv0 = vmctx\nblock0:\n    return\n}\n".to_string(),
    ] {
        assert_input_error(&text);
    }
}

/// Dangling references that cranelift-reader and the verifier let through, on which the
/// fingerprint used to index past the end of a table and panic: a `stack_limit` naming an
/// undeclared global value, a dynamic type based on one, a dynamic stack slot of an undeclared
/// dynamic type, and the same on one line with other declarations.
#[test]
fn undeclared_global_values_and_dynamic_types_are_input_errors() {
    for text in [
        twins("    stack_limit = gv5\n", ""),
        twins(
            "    dt0 = i32x4*gv6\n    dss0 = explicit_dynamic_slot dt0\n",
            "    v1 = dynamic_stack_addr.i64 dss0\n",
        ),
        twins(
            "    dss0 = explicit_dynamic_slot dt3\n",
            "    v1 = dynamic_stack_addr.i64 dss0\n",
        ),
        "function %b(i64 vmctx) -> i64 {\n    gv0 = vmctx stack_limit = gv1\nblock16(v0: i64):\n    \
         return v0\n}\n"
            .to_string(),
    ] {
        assert_input_error(&text);
    }
}

/// A function named `%` (the empty name): with a linkage other than `export` the emitted CLIF
/// says `; linkage: % local`, which must read back.
#[test]
fn the_empty_name_round_trips() {
    let text = "function %(i32) -> i32 {\nblock0(v0: i32):\n    return v0\n}\n\n\
                function %g(i32) -> i32 {\nblock0(v1: i32):\n    return v1\n}\n";
    assert_no_panic(text);
}
