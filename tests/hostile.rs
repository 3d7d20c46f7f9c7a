//! Hostile and huge input: each gets a clear error or a correct result, never a panic, a stack
//! overflow, a hang or unbounded memory.
//!
//! The walks over a function (reading, verifying, fingerprinting, merging, writing) must not
//! recurse along the control flow graph: a chain of 20,000 blocks and loops nested 10,000 deep
//! (a dominator tree 10,000 deep) go through the whole library in a thread with a 2 MiB stack,
//! the default stack of a test thread.
//!
//! The large cases are ignored by default (in a debug build they take minutes):
//!
//!     cargo test --release --test hostile -- --ignored
//!
//! `benches/hostile.sh` runs the same kinds of input through the release binary and measures
//! time and memory.

use clif_merge::read::read_module_text;
use clif_merge::{ClifModule, MergeReport, Mode, ReadOptions, emit, merge_module};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");
const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
/// The stack of a test thread (Rust's default for spawned threads).
const TEST_STACK: usize = 2 << 20;

// ---------------------------------------------------------------------------------------------
// Inputs (the same shapes as benches/hostile.sh)
// ---------------------------------------------------------------------------------------------

/// A function of `n` blocks: a chain of jumps, each block adding 1 to its parameter.
fn chain(out: &mut String, name: &str, n: usize) {
    let one = 2 * n;
    let _ = write!(
        out,
        "function {name}(i32) -> i32 {{\nblock0(v0: i32):\n    v{one} = iconst.i32 1\n    \
         jump block1(v0)\n"
    );
    let last = n - 1;
    for i in 1..last {
        let _ = write!(
            out,
            "block{i}(v{i}: i32):\n    v{r} = iadd v{i}, v{one}\n    jump block{next}(v{r})\n",
            r = n + i,
            next = i + 1
        );
    }
    let _ = write!(
        out,
        "block{last}(v{last}: i32):\n    return v{last}\n}}\n\n"
    );
}

/// Loops nested `depth` deep: header `h_i` (block `i`, 1..=depth) enters `h_(i+1)` or leaves to
/// `e_i` (block `depth+1+i`); the body (block `depth+1`) closes the innermost loop, `e_i` closes
/// loop `i-1`, `e_1` returns. `2 * depth + 2` blocks, a dominator tree `depth` deep.
fn nest(out: &mut String, name: &str, depth: usize) {
    let d = depth;
    let _ = write!(
        out,
        "function {name}(i32) -> i32 {{\nblock0(v0: i32):\n    jump block1\n"
    );
    for i in 1..=d {
        let _ = write!(
            out,
            "block{i}:\n    v{i} = iconst.i32 {i}\n    v{c} = icmp ne v0, v{i}\n    \
             brif v{c}, block{next}, block{exit}\n",
            c = d + i,
            next = i + 1,
            exit = d + 1 + i
        );
    }
    let _ = write!(out, "block{}:\n    jump block{d}\n", d + 1);
    let _ = write!(out, "block{}:\n    return v0\n", d + 2);
    for i in 2..=d {
        let _ = write!(out, "block{}:\n    jump block{}\n", d + 1 + i, i - 1);
    }
    out.push_str("}\n\n");
}

/// `%name(i32) -> i32` returning `v0 + k` (or `v0 * k`), values numbered from `shift`.
fn small_fn(out: &mut String, name: &str, k: i64, shift: u32, op: &str) {
    let (a, b, c) = (shift, shift + 1, shift + 2);
    let _ = write!(
        out,
        "function {name}(i32) -> i32 {{\nblock{blk}(v{a}: i32):\n    v{b} = iconst.i32 {k}\n    \
         v{c} = {op} v{a}, v{b}\n    return v{c}\n}}\n\n",
        blk = shift % 3
    );
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn read(text: &str) -> Result<ClifModule, String> {
    read_module_text(Path::new("hostile.clif"), text, ReadOptions::default())
        .map_err(|e| e.to_string())
}

/// Reads `text`, merges it in every mode, writes the result and reads it back; returns the
/// report of each mode. Panics (with the mode) when the emitted CLIF does not read back.
fn merge_everywhere(text: &str) -> Result<Vec<MergeReport>, String> {
    let module = read(text)?;
    let mut reports = Vec::new();
    for mode in MODES {
        let mut merged = module.clone();
        let (report, _) = merge_module(&mut merged, mode);
        let clif = emit::module_to_clif(&merged);
        let back = read(&clif).unwrap_or_else(|e| {
            panic!("{mode:?}: the emitted CLIF does not read back: {e}");
        });
        assert_eq!(back.functions().len(), merged.functions().len(), "{mode:?}");
        assert_eq!(back.aliases().len(), merged.aliases().len(), "{mode:?}");
        reports.push(report);
    }
    Ok(reports)
}

/// Runs `f` in a thread with a `stack`-byte stack; a stack overflow aborts the test binary
/// (that is the failure).
fn with_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Checks that two equal big functions merge into one class in every mode.
fn assert_pair_merges(text: String) {
    let reports = with_stack(TEST_STACK, move || merge_everywhere(&text));
    let reports = reports.unwrap_or_else(|e| panic!("{e}"));
    for (mode, report) in MODES.iter().zip(&reports) {
        assert_eq!(report.functions, 2, "{mode:?}");
        assert_eq!(report.merged, 1, "{mode:?}");
        assert_eq!(report.classes.len(), 1, "{mode:?}");
    }
}

/// The binary run on `text` (as `NAME.clif` in a fresh folder) with `args`, under an
/// address-space limit of `limit_kb` (`ulimit -v`); returns (exit code, stdout, stderr, whether
/// `out.clif` exists afterwards).
fn run_limited(
    name: &str,
    text: &[u8],
    args: &[&str],
    limit_kb: u64,
) -> (Option<i32>, String, String, bool) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join(format!("{name}.clif"));
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out.clif");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {limit_kb} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .arg(&input)
        .args(["--report", "json", "--emit-clif"])
        .arg(&out)
        .args(args)
        .current_dir(dir.path());
    let o = cmd.output().expect("sh runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        out.exists(),
    )
}

// ---------------------------------------------------------------------------------------------
// Deep control flow: no recursion in the walks
// ---------------------------------------------------------------------------------------------

#[test]
fn chain_of_20k_blocks_merges_on_a_2_mib_stack() {
    let mut text = String::new();
    chain(&mut text, "%chain_a", 20_000);
    chain(&mut text, "%chain_b", 20_000);
    assert_pair_merges(text);
}

#[test]
fn loops_nested_10k_deep_merge_on_a_2_mib_stack() {
    let mut text = String::new();
    nest(&mut text, "%nest_a", 10_000);
    nest(&mut text, "%nest_b", 10_000);
    assert_pair_merges(text);
}

#[test]
fn deep_functions_that_differ_deep_inside_do_not_merge() {
    // The comparison walks all the way down: the nests differ only in the innermost constant.
    let mut a = String::new();
    nest(&mut a, "%nest_a", 10_000);
    let mut b = String::new();
    nest(&mut b, "%nest_b", 10_000);
    let b = b.replace("iconst.i32 10000\n", "iconst.i32 10001\n");
    assert_ne!(a.replace("%nest_a", "%nest_b"), b);
    let report = with_stack(TEST_STACK, move || {
        let mut module = read(&(a + &b)).unwrap_or_else(|e| panic!("{e}"));
        merge_module(&mut module, Mode::Safe).0
    });
    assert_eq!((report.functions, report.merged), (2, 0));
}

#[test]
fn deep_functions_compare_on_a_2_mib_stack() {
    let mut text = String::new();
    nest(&mut text, "%nest_a", 10_000);
    chain(&mut text, "%chain_a", 20_000);
    with_stack(TEST_STACK, move || {
        let module = read(&text).unwrap_or_else(|e| panic!("{e}"));
        let functions: Vec<_> = module.functions().collect();
        let [a, b] = functions[..] else {
            panic!("two functions")
        };
        assert_ne!(
            clif_merge::compare(&a.func, &b.func),
            std::cmp::Ordering::Equal
        );
        assert_eq!(
            clif_merge::compare(&a.func, &a.func.clone()),
            std::cmp::Ordering::Equal
        );
    });
}

#[test]
fn block_numbers_past_the_readers_limit_are_an_error() {
    // cranelift-reader refuses block numbers of 100,000 and more; block99999 is fine.
    let ok = "function %f(i32) -> i32 {\nblock99999(v0: i32):\n    return v0\n}\n";
    assert!(read(ok).is_ok());
    let bad = "function %f(i32) -> i32 {\nblock100000(v0: i32):\n    return v0\n}\n";
    let err = read(bad).unwrap_err();
    assert!(err.contains("hostile.clif:2:"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Cheap hostile input not covered by the command-line cases of tests/cli/
// ---------------------------------------------------------------------------------------------

#[test]
fn a_call_to_an_undefined_function_is_an_import() {
    let mut text = String::new();
    for name in ["%f", "%g"] {
        let _ = write!(
            text,
            "function {name}(i32) -> i32 {{\n    sig0 = (i32) -> i32\n    fn0 = %undefined sig0\n\
             block0(v0: i32):\n    v1 = call fn0(v0)\n    v2 = imul v1, v0\n    return v2\n}}\n\n"
        );
    }
    let reports = merge_everywhere(&text).unwrap_or_else(|e| panic!("{e}"));
    for report in reports {
        assert_eq!((report.functions, report.merged), (2, 1));
    }
}

#[test]
fn a_file_of_only_comments_is_an_empty_module() {
    let mut text = String::new();
    for i in 0..1000 {
        let _ = writeln!(
            text,
            "; {i}: function %f{i}(i32) -> i32 {{ block0: return }}"
        );
        let _ = writeln!(text, ";; not: a directive, check: nothing");
    }
    let reports = merge_everywhere(&text).unwrap_or_else(|e| panic!("{e}"));
    for report in reports {
        assert_eq!((report.functions, report.merged), (0, 0));
    }
}

#[test]
fn a_million_open_parentheses_are_an_error() {
    let text = format!("function %f{}\n", "(".repeat(1_000_000));
    let err = with_stack(TEST_STACK, move || read(&text).unwrap_err());
    assert!(err.contains("hostile.clif:1:"), "{err}");
    let text = format!("function %f(i32) -> i32 {{\n{}\n", "[".repeat(1_000_000));
    let err = with_stack(TEST_STACK, move || read(&text).unwrap_err());
    assert!(err.contains("hostile.clif:2:"), "{err}");
}

#[test]
fn text_garbage_of_every_token_is_an_error() {
    // Pseudo-random ASCII: letters, digits, CLIF punctuation, newlines.
    let alphabet = b"abcdefv0123456789%@#()[]{}<>,.:=!+-* \n\tfunctionblockjumpreturniconst";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text = String::from("function %f(i32) -> i32 {\nblock0(v0: i32):\n");
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push(alphabet[(x % alphabet.len() as u64) as usize] as char);
    }
    let result = with_stack(TEST_STACK, move || read(&text).map(|_| ()));
    assert!(result.is_err());
}

#[test]
fn a_long_name_in_a_call_and_an_alias() {
    let base = "n".repeat(200_000);
    let mut text = String::new();
    small_fn(&mut text, &format!("%{base}_a"), 7, 0, "iadd");
    small_fn(&mut text, &format!("%{base}_b"), 7, 5, "iadd");
    let _ = write!(
        text,
        "; alias: %{base}_c = %{base}_a\nfunction %caller(i32) -> i32 {{\n    \
         sig0 = (i32) -> i32\n    fn0 = %{base}_b sig0\nblock0(v0: i32):\n    \
         v1 = call fn0(v0)\n    v2 = iadd v1, v0\n    return v2\n}}\n"
    );
    let reports = merge_everywhere(&text).unwrap_or_else(|e| panic!("{e}"));
    for report in reports {
        assert_eq!((report.functions, report.merged), (3, 1));
        assert_eq!(report.classes[0].kept.to_string(), format!("%{base}_a"));
    }
}

// ---------------------------------------------------------------------------------------------
// Entity numbers: cranelift-reader creates every entity up to the largest number written
// ---------------------------------------------------------------------------------------------

/// Runs the binary on `text` under a 2 GiB address-space limit and asserts a clean error
/// (exit 1, `error:` on stderr, nothing on stdout, no output file): not an abort.
fn assert_clean_error_in_2_gib(name: &str, text: &str) {
    let (code, stdout, stderr, exists) = run_limited(name, text.as_bytes(), &[], 2 << 20);
    let shown = if text.len() > 400 { &text[..400] } else { text };
    let context = format!("input:\n{shown}\nexit {code:?}\nstderr:\n{stderr}");
    assert_eq!(code, Some(1), "a clean error expected\n{context}");
    assert!(stderr.starts_with("error: "), "{context}");
    assert!(stdout.is_empty(), "{context}");
    assert!(!exists, "{context}");
}

/// One function of about 100 bytes whose entity numbers would make cranelift-reader allocate
/// gigabytes: every value up to `v2000000000`, every stack slot up to `ss4000000000`, every
/// signature up to `sig4000000000`. Under a 2 GiB address-space limit the binary must fail with
/// an error, not abort (it used to abort with `memory allocation of N bytes failed`).
#[test]
fn huge_entity_numbers_are_an_error_not_an_abort() {
    let cases = [
        "function %f(i32) -> i32 {\nblock0(v0: i32):\n    v2000000000 = iconst.i32 1\n    \
         return v2000000000\n}\n",
        "function %f(i32) -> i32 {\n    ss4000000000 = explicit_slot 8\nblock0(v0: i32):\n    \
         return v0\n}\n",
        "function %f(i32) -> i32 {\n    sig4000000000 = (i32) -> i32\nblock0(v0: i32):\n    \
         return v0\n}\n",
        "function %f(i32) -> i32 {\n    gv4000000000 = vmctx\nblock0(v0: i32):\n    \
         return v0\n}\n",
    ];
    for text in cases {
        assert_clean_error_in_2_gib("entity", text);
    }
}

/// The check for huge entity numbers reads each line up to its first `;` (a comment), but a
/// `;` inside a quoted string (an alias region's description) does not start a comment, and
/// CLIF declarations need no line breaks: the stack slot after the string is still read.
#[test]
fn a_huge_entity_number_after_a_string_with_a_semicolon_is_an_error() {
    let text = "function %f(i64) -> i64 {\n    region0 = 1 \"x;\" ss4000000000 = explicit_slot 8\n\
                block0(v0: i64):\n    return v0\n}\n";
    assert_clean_error_in_2_gib("string", text);
}

/// Entity numbers up to 10,000,000 are accepted, and every function pays for its own: 40
/// functions of 90 bytes, each declaring `sig9999999`, make cranelift-reader create 400 million
/// signatures (each function keeps its table of 10 million). Memory must stay bounded by the
/// input's size, or the input be refused.
#[test]
fn many_functions_with_large_entity_numbers_stay_bounded() {
    let mut text = String::new();
    for i in 0..40 {
        let _ = write!(
            text,
            "function %f{i}(i64) -> i64 {{\n    sig9999999 = (i64) -> i64\nblock0(v0: i64):\n    \
             return v0\n}}\n\n"
        );
    }
    let (code, _stdout, stderr, _exists) = run_limited("many", text.as_bytes(), &[], 2 << 20);
    assert!(
        code == Some(0) || (code == Some(1) && stderr.starts_with("error: ")),
        "success or a clean error expected, got exit {code:?}\nstderr:\n{stderr}"
    );
}

#[test]
fn moderate_entity_numbers_work_in_bounded_memory() {
    // A million values (about 10 MB) is fine.
    let text = "function %f(i32) -> i32 {\nblock0(v0: i32):\n    v1000000 = iconst.i32 1\n    \
                v1000001 = iadd v0, v1000000\n    return v1000001\n}\n";
    let (code, stdout, stderr, exists) = run_limited("values", text.as_bytes(), &[], 1 << 20);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\"functions\": 1"), "{stdout}");
    assert!(exists);
}

// ---------------------------------------------------------------------------------------------
// Large (ignored by default)
// ---------------------------------------------------------------------------------------------

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn chain_of_100k_blocks_merges_on_a_2_mib_stack() {
    let mut text = String::new();
    chain(&mut text, "%chain_a", 100_000);
    chain(&mut text, "%chain_b", 100_000);
    assert_pair_merges(text);
}

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn loops_nested_49999_deep_merge_on_a_2_mib_stack() {
    // 100,000 blocks: the most cranelift-reader accepts.
    let mut text = String::new();
    nest(&mut text, "%nest_a", 49_999);
    nest(&mut text, "%nest_b", 49_999);
    assert_pair_merges(text);
}

/// The module of benches/hostile.sh's `million-functions`: one million small functions in three
/// shapes, `%f900000`.. repeating `%f0`..`%f99999` with other value numbers.
fn million_functions() -> String {
    let mut text = String::with_capacity(120 << 20);
    for i in 0..1_000_000u32 {
        let k = i % 900_000;
        // The duplicates number their values differently.
        let shift = (i + i / 900_000) % 5;
        let name = format!("%f{i}");
        match k % 3 {
            0 => small_fn(&mut text, &name, k.into(), shift, "iadd"),
            1 => small_fn(&mut text, &name, k.into(), shift, "imul"),
            _ => {
                let a = shift;
                let _ = write!(
                    text,
                    "function {name}(i32) -> i32 {{\nblock0(v{a}: i32):\n    \
                     v{b} = iconst.i32 {k}\n    v{c} = icmp ult v{a}, v{b}\n    \
                     brif v{c}, block1, block2\nblock1:\n    v{d} = iadd v{a}, v{b}\n    \
                     return v{d}\nblock2:\n    return v{a}\n}}\n\n",
                    b = a + 1,
                    c = a + 2,
                    d = a + 3
                );
            }
        }
    }
    text
}

/// About 50 s and 7 GB of memory in a release build (the module, its clone, the emitted text and
/// the module read back from it are all alive at once).
#[test]
#[ignore = "large: run with --release -- --ignored"]
fn a_million_small_functions() {
    let text = million_functions();
    let module = read(&text).unwrap_or_else(|e| panic!("{e}"));
    drop(text);
    assert_eq!(module.functions().len(), 1_000_000);
    let mut merged = module.clone();
    let (report, _) = merge_module(&mut merged, Mode::Safe);
    assert_eq!(report.functions, 1_000_000);
    assert_eq!(report.merged, 100_000);
    assert_eq!(report.classes.len(), 100_000);
    for class in &report.classes {
        // `%f<k>` and `%f<k + 900000>`; the least by bytes is kept.
        assert_eq!(class.replaced.len(), 1);
        let kept_text = class.kept.to_string();
        let n: u32 = kept_text[2..].parse().unwrap();
        let k = n % 900_000;
        assert!(k < 100_000, "{}", class.kept);
        let (a, b) = (format!("%f{k}"), format!("%f{}", k + 900_000));
        let (kept, replaced) = if a < b { (a, b) } else { (b, a) };
        assert_eq!(kept_text, kept);
        assert_eq!(class.replaced[0].name.to_string(), replaced);
    }
    let clif = emit::module_to_clif(&merged);
    let back = read(&clif).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.functions().len(), 1_000_000);
}

// ---------------------------------------------------------------------------------------------
// References to undeclared entities
// ---------------------------------------------------------------------------------------------

/// A function that declares and uses an entity of every kind that a reference can name. Each
/// `«…»` is a reference that the test points at an undeclared entity, one at a time.
const EVERY_REFERENCE: &str = "function %f(i64 vmctx, i64) -> i64 tail {
    ss0 = explicit_slot 8
    region0 = 1 \"heap\"
    gv0 = vmctx
    gv1 = load.i64 notrap aligned «region0» «gv0»+8
    gv2 = iadd_imm.i64 «gv1», 16
    gv3 = symbol colocated «u1:2»+8
    gv4 = dyn_scale_target_const.i32x4
    dt0 = i32x4*«gv4»
    dss0 = explicit_dynamic_slot «dt0»
    sig0 = (i64) -> i64 tail
    fn0 = «u0:1» «sig0»
    fn1 = %g «sig0»
    const0 = 0x00000001000000020000000300000004
    stack_limit = «gv1»
block0(v0: i64, v1: i64):
    v2 = stack_addr.i64 «ss0»
    v3 = dynamic_stack_addr.i64 «dss0»
    v4 = symbol_value.i64 «gv3»
    v5 = load.i64 «region0» «v2»
    v6 = vconst.i32x4 «const0»
    v7 = func_addr.i64 «fn1»
    v8 = call_indirect «sig0», v7(«v1»)
    v9 = call «fn0»(v8)
    v12 = ireduce.i32 v9
    br_table v12, «block1», [«block4»]
block1:
    try_call «fn1»(v9), «sig0», «block2»(ret0), [ tag1: «block3»(exn0) ]
block2(v10: i64):
    return v10
block3(v11: i64):
    return «v11»
block4:
    return v9
}
";

/// `EVERY_REFERENCE` with the `k`-th reference pointed at an undeclared entity (`gv1` becomes
/// `gv91`, `u1:2` becomes `userextname7`) and every other one as written; `None` past the last.
fn with_undeclared_reference(k: usize) -> Option<(String, String)> {
    let mut out = String::new();
    let mut rest = EVERY_REFERENCE;
    let mut changed = None;
    let mut index = 0;
    while let Some(open) = rest.find('«') {
        let close = open + rest[open..].find('»').unwrap();
        let reference = &rest[open + '«'.len_utf8()..close];
        out.push_str(&rest[..open]);
        if index == k {
            let undeclared = match reference.trim_end_matches(|c: char| c.is_ascii_digit()) {
                "u1:" | "u0:" => "userextname7".to_string(),
                prefix => format!("{prefix}9{}", &reference[prefix.len()..]),
            };
            changed = Some(format!("{reference} → {undeclared}"));
            out.push_str(&undeclared);
        } else {
            out.push_str(reference);
        }
        rest = &rest[close + '»'.len_utf8()..];
        index += 1;
    }
    out.push_str(rest);
    changed.map(|c| (c, out))
}

/// Every reference form the reader accepts, pointed at an undeclared entity, in a module with a
/// copy of the function (so it is compared and merged): reading, merging, writing CLIF and
/// compiling an object give an error naming the file and line, or succeed; never a panic.
#[test]
fn references_to_undeclared_entities_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let run = |text: &str| {
        let module = format!("{text}\n{}", text.replace("%f(", "%f2("));
        let input = dir.path().join("undeclared.clif");
        std::fs::write(&input, &module).unwrap();
        Command::new(BIN)
            .arg(&input)
            .args(["--target", "aarch64-unknown-linux-gnu", "-o"])
            .arg(dir.path().join("out.o"))
            .arg("--emit-clif")
            .arg(dir.path().join("out.clif"))
            .output()
            .expect("the binary runs")
    };
    // As written, every reference is declared: the pair reads, merges and compiles.
    let declared = run(&EVERY_REFERENCE.replace(['«', '»'], ""));
    let stderr = String::from_utf8_lossy(&declared.stderr);
    assert_eq!(
        declared.status.code(),
        Some(0),
        "the template itself: {stderr}"
    );
    let mut tried = 0;
    for k in 0.. {
        let Some((change, text)) = with_undeclared_reference(k) else {
            break;
        };
        let o = run(&text);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{change}: {stderr}");
        assert!(matches!(o.status.code(), Some(0 | 1)), "{change}: {stderr}");
        if o.status.code() == Some(1) {
            assert!(
                stderr.contains("undeclared.clif:"),
                "{change}: the error names no file and line: {stderr}"
            );
        }
        tried += 1;
    }
    assert!(tried >= 25, "only {tried} references");
}

/// Chains of 100,000 global values (each `load`ed from the one before) or value aliases: the
/// reader and verifier walk them from every link (quadratic, most of a minute), so they are
/// refused before parsing, naming the function's line; a short chain reads.
#[test]
fn chains_of_100k_global_values_or_aliases_are_refused() {
    let n = 100_000;
    let mut gvs = String::from("; a chain\nfunction %f(i64 vmctx) -> i64 {\n    gv0 = vmctx\n");
    for i in 1..n {
        let _ = writeln!(gvs, "    gv{i} = load.i64 notrap aligned gv{}+8", i - 1);
    }
    let _ = write!(
        gvs,
        "    stack_limit = gv{}\nblock0(v0: i64):\n    return v0\n}}\n",
        n - 1
    );
    let mut aliases = String::from("; a chain\nfunction %f(i64) -> i64 {\nblock0(v0: i64):\n");
    for i in 1..n {
        let _ = writeln!(aliases, "    v{i} -> v{}", i - 1);
    }
    let _ = write!(aliases, "    return v{}\n}}\n", n - 1);
    for text in [gvs, aliases] {
        let err = read(&text).unwrap_err();
        assert!(err.starts_with("hostile.clif:2: chains"), "{err}");
    }
    // Shorter chains read (src/read/limits.rs has the unit tests of the count).
    let short = "function %f(i64 vmctx) -> i64 {\n    gv0 = vmctx\n    \
                 gv1 = load.i64 notrap aligned gv0+8\n    stack_limit = gv1\n\
                 block0(v0: i64):\n    v1 -> v0\n    return v1\n}\n";
    read(short).unwrap();
}

/// `--verify` on functions with a 4 GB frame: the interpreter would allocate the frame before
/// any limit applied; the frame is checked first, the runs are unsupported, and the summary
/// says nothing was checked, with a warning. Under a 1 GiB address-space limit.
#[test]
fn verify_with_huge_frames_stays_bounded_and_says_so() {
    let f = |name: &str| {
        format!(
            "function {name}() -> i64 system_v {{\n    ss0 = explicit_slot 4000000000\n\
             block0:\n    v0 = stack_addr.i64 ss0\n    v1 = iconst.i64 1\n    store v1, v0\n    \
             v2 = load.i64 v0\n    return v2\n}}\n"
        )
    };
    let text = format!("{}\n{}", f("%a"), f("%b"));
    let (code, _, stderr, _) = run_limited("frames", text.as_bytes(), &["--verify"], 1 << 20);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        // `%a`, kept and unchanged, is not run; `%b`, its thunk now, is.
        stderr.contains("0 fully checked, 0 partly, 1 not at all, 1 unchanged"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: --verify ran only 0 of"),
        "{stderr}"
    );
}
