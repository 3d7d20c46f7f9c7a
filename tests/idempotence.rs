//! A second run merges nothing: clif-merge on its own `--emit-clif` output, in every mode, exact
//! and with `--similar`, merges nothing and writes the same bytes.
//!
//! - one small module for each way a second run used to find merges: (a) a shared body equal to
//!   a function that was there; (b) similar merging removing the kept function of an exact class,
//!   whose thunks then pass the same values to the same body; (c) call counts taken before
//!   another group merged (a group that pays only once its callers' group has merged); (d) a
//!   group split too early, leaving members that merge with one another;
//! - modules of `tests/common/modgen.rs` (every linkage, aliases, recursion, near-copies);
//! - `genmod.py` modules (`../shared`, skipped with a note without it), every default linkage;
//! - the four corpus modules (`#[ignore]`d: large; `cargo test --release --test idempotence --
//!   --ignored`).
//!
//! Each run is the command line's: the pipeline with `--emit-clif`, and the text read back as
//! the second run reads it (`; linkage:` and `; alias:` directives included).

mod common;

use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{
    ClifModule, MergeOptions, Mode, ReadOptions, SimilarOptions, SymbolLinkage, read_module_text,
};
use common::generator::pseudo_random_choices;
use common::modgen::{ModGenConfig, generate_module};
use std::fmt::Write as _;
use std::path::Path;
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];

/// Every group that fits merges, whatever it saves.
fn forced() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

/// The configurations of a second run: every mode, exact and with `--similar`.
fn configurations() -> Vec<(Mode, Option<SimilarOptions>)> {
    MODES
        .iter()
        .flat_map(|&mode| [(mode, None), (mode, Some(SimilarOptions::default()))])
        .collect()
}

/// How `options` is spelled on the command line, for messages.
fn spelled(mode: Mode, similar: &Option<SimilarOptions>) -> String {
    let similar = match similar {
        None => "",
        Some(s) if s.min_saving == i64::MIN => " --similar --similar-min-saving=MIN",
        Some(_) => " --similar",
    };
    format!("--mode {}{similar}", mode.keyword())
}

/// The pipeline on `module` with `--emit-clif`: the CLIF, what the report says was merged (one
/// ` action:name->body` each) and its `merged` count.
fn merge(
    module: ClifModule,
    mode: Mode,
    similar: &Option<SimilarOptions>,
) -> (String, String, usize) {
    let options = PipelineOptions {
        merge: MergeOptions {
            mode,
            similar: similar.clone(),
            ..MergeOptions::default()
        },
        emit_clif: true,
        ..Default::default()
    };
    let out = run(module, &options).expect("the merge runs");
    let report = out.report;
    let mut merged = String::new();
    for class in &report.classes {
        for r in &class.replaced {
            let _ = write!(merged, " {}:{}->{}", r.by.keyword(), r.name, class.kept);
        }
    }
    for group in report.similar.iter().flatten() {
        for m in &group.members {
            let _ = write!(merged, " {}:{}->{}", m.by.keyword(), m.name, group.shared);
        }
    }
    (out.clif.expect("asked for CLIF"), merged, report.merged)
}

/// Merges `module` as the first run does, then its CLIF as a second run does: the first run's
/// `merged` count, or what the second run merged or how its output differs.
fn second_run_merges_nothing(
    what: &str,
    module: ClifModule,
    mode: Mode,
    similar: &Option<SimilarOptions>,
) -> Result<usize, String> {
    let how = spelled(mode, similar);
    let (first, _, count) = merge(module, mode, similar);
    let path = Path::new("first.clif");
    let again = read_module_text(path, &first, ReadOptions::default())
        .map_err(|e| format!("{what} {how}: the output does not read back: {e}\n{first}"))?;
    let (second, merged, _) = merge(again, mode, similar);
    if !merged.is_empty() {
        return Err(format!(
            "{what} {how}: the second run merged{merged}\n--- first output ---\n{first}"
        ));
    }
    if second != first {
        return Err(format!(
            "{what} {how}: the second run wrote other CLIF\n--- first ---\n{first}\n--- second ---\n{second}"
        ));
    }
    Ok(count)
}

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("case.clif"), text, ReadOptions::default()).expect("valid CLIF")
}

/// Every configuration on `text`; panics with every failure.
fn assert_idempotent(what: &str, text: &str) {
    let failures: Vec<String> = configurations()
        .iter()
        .chain(
            MODES
                .iter()
                .map(|&m| (m, Some(forced())))
                .collect::<Vec<_>>()
                .iter(),
        )
        .filter_map(|(mode, similar)| {
            second_run_merges_nothing(what, read(text), *mode, similar).err()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `%NAME(x) = ((x * C) + x ^ C) * (x * C + x)`, with `C` an `iconst` (or `v1`, the second
/// parameter, when `c` is None): the body of the similar members below.
fn body(name: &str, c: Option<i64>, linkage: &str) -> String {
    let (params, constant) = match c {
        Some(c) => ("v0: i64", format!("    v1 = iconst.i64 {c}\n")),
        None => ("v0: i64, v1: i64", String::new()),
    };
    let sig = if c.is_some() { "(i64)" } else { "(i64, i64)" };
    format!(
        "; linkage: %{name} {linkage}\n\
         function %{name}{sig} -> i64 {{\n\
         block0({params}):\n{constant}    \
         v2 = imul v0, v1\n    v3 = iadd v2, v0\n    v4 = bxor v3, v1\n    \
         v5 = imul v4, v3\n    return v5\n}}\n\n"
    )
}

/// (a) The shared body of `%times3` and `%times5` is `%general`, which was there: the first run
/// must call `%general` (or keep one of the two), not leave two equal functions.
#[test]
fn a_shared_body_equal_to_a_function_of_the_module() {
    let text = body("general", None, "export")
        + &body("times3", Some(3), "export")
        + &body("times5", Some(5), "export");
    assert_idempotent("(a) shared body equal to %general", &text);
}

/// (b) `%a`, `%b`, `%c` are equal and local; `%b` and `%c` have their address taken, so they
/// become thunks of `%a`; `%a` is similar to `%d`, and similar merging removes it: `%b` and `%c`
/// then both pass 3 to the shared body, and are equal.
#[test]
fn thunks_of_a_kept_function_that_similar_merging_removes() {
    let mut text = String::new();
    for (name, c) in [("a", 3), ("b", 3), ("c", 3), ("d", 5)] {
        text += &body(name, Some(c), "local");
    }
    text += "function %user() -> i64, i64, i64 {
    sig0 = (i64) -> i64
    fn0 = %b sig0
    fn1 = %c sig0
    fn2 = %d sig0
block0:
    v0 = func_addr.i64 fn0
    v1 = func_addr.i64 fn1
    v2 = func_addr.i64 fn2
    return v0, v1, v2
}\n";
    assert_idempotent("(b) thunks of a removed kept function", &text);
}

/// (c) `%b1` and `%b2` (local, similar) have seven calls: merging them (both removed, each
/// call passing a constant) does not pay. `%a1`..`%a3` (similar) make six of those calls; once
/// they are merged, their shared body makes two, and `%b1`, `%b2` pay.
#[test]
fn call_counts_after_another_group_merged() {
    let mut text = String::from("; linkage: %b1 local\n; linkage: %b2 local\n");
    for (name, c) in [("b1", 3), ("b2", 5)] {
        let _ = write!(
            text,
            "function %{name}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = iconst.i64 {c}\n    \
             v2 = iadd v0, v1\n    return v2\n}}\n\n"
        );
    }
    for (name, c) in [("a1", 7), ("a2", 9), ("a3", 11)] {
        let _ = write!(
            text,
            "function %{name}(i64) -> i64 {{\n    sig0 = (i64) -> i64\n    \
             fn0 = colocated %b1 sig0\nblock0(v0: i64):\n    v1 = call fn0(v0)\n    \
             v2 = iconst.i64 {c}\n    v3 = imul v1, v2\n    v4 = call fn0(v3)\n    \
             v5 = bxor v4, v0\n    return v5\n}}\n\n"
        );
    }
    text += "function %main(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = colocated %b2 sig0
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}\n";
    assert_idempotent("(c) call counts after another group merged", &text);
}

/// `n` functions `%fI(x) = x + c1 + c2 + ...` of one shape, their constants drawn (by `seed`)
/// from `values[p]` values at position `p`.
fn one_shape(n: usize, values: &[u64], seed: u64) -> String {
    let mut state = seed;
    let mut next = |below: u64| {
        // SplitMix64: a fixed sequence, whatever the platform.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    };
    let mut text = String::new();
    for i in 0..n {
        let _ = write!(text, "function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n");
        let mut last = 0;
        for (p, &range) in values.iter().enumerate() {
            let (c, sum) = (2 * p + 1, 2 * p + 2);
            let _ = write!(
                text,
                "    v{c} = iconst.i64 {}\n    v{sum} = iadd v{last}, v{c}\n",
                next(range)
            );
            last = sum;
        }
        let _ = write!(text, "    return v{last}\n}}\n\n");
    }
    text
}

/// (d) 40 functions of one shape, each with 8 constants out of 5 values: the whole group needs
/// more parameters than there are registers, so it is split; the split must leave no members
/// that a second split would merge.
#[test]
fn a_large_group_split_completely() {
    for seed in [1, 2, 3] {
        let text = one_shape(40, &[5; 8], seed);
        let what = format!("(d) one shape, 40 functions, seed {seed}");
        for mode in MODES {
            let similar = Some(SimilarOptions::default());
            if let Err(e) = second_run_merges_nothing(&what, read(&text), mode, &similar) {
                panic!("{e}");
            }
        }
    }
}

/// Modules of `modgen` (interpreter flavour: every linkage, aliases, self- and mutual
/// recursion, near-copies that differ in one constant, copies calling other callees).
#[test]
fn generated_modules_merge_nothing_the_second_time() {
    let cases: u64 = std::env::var("IDEMPOTENCE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut seed = 0x1de4_7e4c_e000_0001;
    let mut failures = Vec::new();
    for case in 0..cases {
        let config = if case % 2 == 0 {
            ModGenConfig::interpreter()
        } else {
            ModGenConfig::native(cranelift_codegen::isa::CallConv::SystemV)
        };
        let data = pseudo_random_choices(&mut seed, 4096);
        let module = generate_module(&data, &config).module();
        let what = format!("modgen case {case}");
        for (mode, similar) in configurations()
            .into_iter()
            .chain(MODES.iter().map(|&m| (m, Some(forced()))))
        {
            if let Err(e) = second_run_merges_nothing(&what, module.clone(), mode, &similar) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures; the first:\n{}",
        failures.len(),
        failures[0]
    );
}

/// `genmod.py` modules with near-duplicates, read with each default linkage.
#[test]
fn genmod_modules_merge_nothing_the_second_time() {
    let Some(genmod) = common::genmod::genmod() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for seed in 1..=4 {
        let seed = seed.to_string();
        let args = [
            "--functions",
            "250",
            "--dup-rate",
            "0.2",
            "--near-rate",
            "0.3",
            "--recursive-frac",
            "0.2",
            "--transitive-frac",
            "0.3",
            "--seed",
            &seed,
        ];
        let (clif, _, line) = common::genmod::generate(&genmod, dir.path(), &args);
        let text = std::fs::read_to_string(&clif).unwrap();
        for linkage in [
            SymbolLinkage::Export,
            SymbolLinkage::Local,
            SymbolLinkage::Hidden,
        ] {
            let options = ReadOptions {
                default_linkage: linkage,
                ..ReadOptions::default()
            };
            let module = read_module_text(&clif, &text, options).unwrap();
            let what = format!("`{line}` --default-linkage {}", linkage.keyword());
            for (mode, similar) in configurations() {
                if let Err(e) = second_run_merges_nothing(&what, module.clone(), mode, &similar) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures; the first:\n{}",
        failures.len(),
        failures[0]
    );
}

/// The four corpus modules, every mode, exact and with `--similar` (large: run in release).
#[test]
#[ignore = "large: cargo test --release --test idempotence -- --ignored"]
fn corpus_modules_merge_nothing_the_second_time() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !dir.exists() {
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping: {} is missing",
            dir.display()
        );
        return;
    }
    let names = [
        "dprint_markdown.clif",
        "sqljs.clif",
        "resvg.clif.xz",
        "tiktoken_lite.clif.xz",
    ];
    let mut failures = Vec::new();
    for name in names {
        let file = dir.join(name);
        let module = clif_merge::read_files(std::slice::from_ref(&file), ReadOptions::default())
            .expect("a corpus module reads");
        for (mode, similar) in configurations() {
            let how = spelled(mode, &similar);
            match second_run_merges_nothing(name, module.clone(), mode, &similar) {
                Ok(count) => eprintln!(
                    "{name} {how}: first run merged {count}; second run merged nothing, same bytes"
                ),
                Err(e) => {
                    eprintln!("{name} {how}: FAILED");
                    failures.push(e.lines().next().unwrap_or_default().to_string());
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
