//! Hostile inputs for similar merging (`--similar`) with the hole kinds of imports as callees,
//! constant uses and self-calls: shapes our own generators never write.
//!
//! Every `tests/data/similar_hostile/*.clif` is merged with every group that fits forced
//! (`min_saving` at its least), in every mode, and must:
//! - merge at least one similar group (the file is a case of similar merging);
//! - behave as the original in cranelift-interpreter (`clif_merge::verify::verify_merge`);
//! - write CLIF that reads back, on which a second similar merge merges nothing;
//! - give the same report and the same function texts whatever the order of its functions;
//! - leave no function the merge made that is only a thunk: the input had no such symbol to
//!   keep, in any mode.
//!
//! Defects found this way are tests of their own below, `#[ignore]`d with the defect until it is
//! fixed: `cargo test --test similar_hostile -- --ignored` runs them.

use clif_merge::cranelift_codegen::ir::{Function, Opcode};
use clif_merge::read::{ReadOptions, read_module_text};
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{Action, ClifModule, MergeReport, Mode, SimilarOptions, emit, merge_module_with};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/similar_hostile")
}

fn cases() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "clif"))
        .collect();
    files.sort();
    files
}

fn read(path: &Path, text: &str) -> ClifModule {
    read_module_text(path, text, ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every group that fits, whatever it saves.
fn forced() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

fn merge(module: &ClifModule, mode: Mode) -> (ClifModule, MergeReport) {
    let mut merged = module.clone();
    let (report, _) = merge_module_with(&mut merged, mode, Some(&forced()));
    (merged, report)
}

/// The functions of a CLIF text by name, each with its text; and its directive lines, sorted.
fn functions_by_name(clif: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in clif.lines() {
        if let Some(rest) = line.strip_prefix("function ") {
            let name = rest.split('(').next().unwrap_or_default().to_string();
            current = Some((name, String::new()));
        }
        if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
        if line == "}"
            && let Some((name, text)) = current.take()
        {
            out.insert(name, text);
        }
    }
    let mut directives: Vec<String> = clif
        .lines()
        .filter(|l| l.starts_with("; linkage:") || l.starts_with("; alias:"))
        .map(str::to_string)
        .collect();
    directives.sort();
    (out, directives)
}

/// `text` with its functions in another order (directive lines first, comments dropped).
fn shuffled(text: &str, seed: u64) -> String {
    let mut directives = String::new();
    let mut funcs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("; linkage:") || line.starts_with("; alias:") {
            directives.push_str(line);
            directives.push('\n');
            continue;
        }
        inside |= line.starts_with("function ");
        if inside {
            current.push_str(line);
            current.push('\n');
        }
        if inside && line == "}" {
            funcs.push(std::mem::take(&mut current));
            inside = false;
        }
    }
    // Fisher-Yates with xorshift: no dependency for a permutation.
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..funcs.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        funcs.swap(i, (state % (i as u64 + 1)) as usize);
    }
    format!("{directives}\n{}", funcs.join("\n"))
}

fn similar_groups(report: &MergeReport) -> usize {
    report.similar.as_ref().map_or(0, Vec::len)
}

/// Whether `func` only calls another function with its arguments and constants.
fn is_a_thunk(func: &Function) -> bool {
    let mut calls = 0;
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            match func.dfg.insts[inst].opcode() {
                Opcode::Call | Opcode::ReturnCall => calls += 1,
                Opcode::Iconst | Opcode::F32const | Opcode::F64const | Opcode::Return => {}
                _ => return false,
            }
        }
    }
    calls == 1
}

/// The checks of the module docs, for one file in one mode; the failures as text.
fn check(path: &Path, text: &str, mode: Mode) -> Vec<String> {
    let mut failures = Vec::new();
    let original = read(path, text);
    let (merged, report) = merge(&original, mode);
    if similar_groups(&report) == 0 {
        failures.push("no similar group merged".to_string());
    }
    let verified = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    if !verified.is_ok() {
        failures.push(format!("--verify: {}", verified.summary()));
    }
    let clif = emit::module_to_clif(&merged);
    for mf in merged.functions() {
        if original.lookup(&mf.name).is_none() && is_a_thunk(&mf.func) {
            failures.push(format!("{} is a thunk the merge made\n{clif}", mf.name));
        }
    }
    let reread = match read_module_text(Path::new("<emitted>"), &clif, ReadOptions::default()) {
        Ok(m) => m,
        Err(e) => {
            failures.push(format!("the output does not read back: {e}\n{clif}"));
            return failures;
        }
    };
    let (_, again) = merge(&reread, mode);
    if again.merged != 0 {
        failures.push(format!(
            "a second merge merged {} functions ({} similar groups)\n{clif}",
            again.merged,
            similar_groups(&again)
        ));
    }
    let expected = (
        functions_by_name(&clif),
        serde_json::to_string(&report).unwrap(),
    );
    for seed in 1..=3 {
        let (perm, perm_report) = merge(&read(path, &shuffled(text, seed)), mode);
        let got = (
            functions_by_name(&emit::module_to_clif(&perm)),
            serde_json::to_string(&perm_report).unwrap(),
        );
        if got != expected {
            failures.push(format!(
                "another function order (shuffle {seed}) merges otherwise"
            ));
            break;
        }
    }
    failures
}

#[test]
fn hostile_similar_inputs_merge_and_behave_the_same() {
    let files = cases();
    assert!(files.len() >= 10, "the cases are missing: {files:?}");
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for mode in MODES {
            for failure in check(path, &text, mode) {
                let name = path.file_name().unwrap().to_string_lossy();
                failures.push(format!("{name}, {mode:?}: {failure}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Defects
// ---------------------------------------------------------------------------------------------

/// The name of the function `caller` calls directly (the first call in its body), if any.
fn first_callee(module: &ClifModule, caller: &str) -> Option<String> {
    let id = module
        .functions()
        .position(|mf| mf.name.to_string() == caller)?;
    let func = &module.functions().nth(id)?.func;
    let text = func.display().to_string();
    let decl = text
        .lines()
        .find(|l| l.trim_start().starts_with("fn0 = "))?
        .to_string();
    decl.split_whitespace()
        .find(|w| w.starts_with('%'))
        .map(str::to_string)
}

/// The report's shared body of a group is the function its thunks call. When a later exact round
/// folds the shared body into an existing equal function (`%u`), every mode reports `%u` as the
/// shared body and writes no `%similar_…`: thunks mode once kept it as a dead local forwarding
/// thunk to `%u` and reported it as the shared body, though the members called `%u`.
#[test]
fn the_reported_shared_body_is_what_thunk_members_call() {
    let path = data_dir().join("shared-body-equals-existing-function.clif");
    let text = std::fs::read_to_string(&path).unwrap();
    let original = read(&path, &text);
    let mut failures = Vec::new();
    for mode in MODES {
        let (merged, report) = merge(&original, mode);
        for group in report.similar.iter().flatten() {
            for member in group.members.iter().filter(|m| m.by != Action::Removed) {
                let name = member.name.to_string();
                let callee = first_callee(&merged, &name);
                if callee.as_deref() != Some(&group.shared.to_string()) {
                    failures.push(format!(
                        "{mode:?}: the report says {name}'s shared body is {}, but {name} calls \
                         {callee:?}\n{}",
                        group.shared,
                        emit::module_to_clif(&merged)
                    ));
                }
            }
        }
        let made: Vec<String> = (merged.functions())
            .filter(|mf| original.lookup(&mf.name).is_none())
            .map(|mf| mf.name.to_string())
            .collect();
        if !made.is_empty() {
            failures.push(format!(
                "{mode:?}: the output keeps {made:?}, which %u does"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// --verify must not be fooled
// ---------------------------------------------------------------------------------------------

/// `original` merged in safe mode, then its emitted CLIF edited by `edit` and read back:
/// whether `verify_merge` finds a mismatch.
fn verify_catches(original_text: &str, edit: impl Fn(&str) -> String) -> bool {
    let original = read(Path::new("original.clif"), original_text);
    let (merged, report) = merge(&original, Mode::Safe);
    assert!(similar_groups(&report) > 0, "nothing merged");
    let clif = emit::module_to_clif(&merged);
    let edited = edit(&clif);
    assert_ne!(edited, clif, "the edit changed nothing:\n{clif}");
    let corrupted = read(Path::new("corrupted.clif"), &edited);
    !verify_merge(&original, &corrupted, &report, &VerifyOptions::default()).is_ok()
}

/// Two members calling two imports (each through two signatures) merged; a thunk that passes
/// the other member's import is a wrong merge that --verify reports.
#[test]
fn verify_reports_a_thunk_passing_the_wrong_import() {
    let text =
        std::fs::read_to_string(data_dir().join("import-called-with-two-signatures.clif")).unwrap();
    assert!(verify_catches(&text, |clif| clif.replacen(
        "fn1 = %e1 ",
        "fn1 = %e0 ",
        1
    )));
}

/// A recursive member passes its own address; one passing the other callee instead is reported.
#[test]
fn verify_reports_a_recursive_member_passing_another_callee() {
    let text = std::fs::read_to_string(data_dir().join("tail-self-call-against-other-callee.clif"))
        .unwrap();
    assert!(verify_catches(&text, |clif| clif.replacen(
        "fn1 = colocated %f0 ",
        "fn1 = colocated %h ",
        1
    )));
}

/// Float constants passed by their bits: a thunk passing -0.0 for 0.0 is reported.
#[test]
fn verify_reports_a_float_constant_of_the_other_sign() {
    let text = std::fs::read_to_string(data_dir().join("float-constants-by-bits.clif")).unwrap();
    assert!(verify_catches(&text, |clif| clif.replacen(
        "f64const 0.0",
        "f64const -0.0",
        1
    )));
}

// ---------------------------------------------------------------------------------------------
// Global merging with --similar
// ---------------------------------------------------------------------------------------------

/// Runs `clif-merge` in `dir` with `args`; panics with its standard error when it fails.
fn clif_merge_in(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "clif-merge {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every unit that holds a variant of a global shared body writes the same body under the same
/// name (a `linkonce` COMDAT: the linker keeps any one copy). In unit A, the one-module similar
/// merge writes a local shared body (`%c0`, `%c1`) exactly equal to the global one; the exact
/// round after it keeps the local body and makes the global body a thunk to it. So unit A's
/// copy of `%clifmerge_p…` is a jump to a local function while unit B's is the body: behaviour
/// is the same, but the COMDAT copies differ, and when the linker keeps B's copy, A's local body
/// is a second copy of it in the program. The global shared body should stay the body (and
/// the local one, which nothing else needs, go), in every mode: an alias of a `linkonce` body
/// would be refused when the object is written, so its equal functions become thunks.
#[test]
fn a_global_shared_body_is_the_same_in_every_unit() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/similar_hostile_global");
    let mut failures = Vec::new();
    // Unit A as two %c members whose similar body equals the global one, or as an exported
    // function equal to it.
    for unit_a in ["a", "a-equal-export"] {
        let dir = tempfile::tempdir().unwrap();
        for (unit, file) in [("a", unit_a), ("b", "b")] {
            let src = data.join(format!("{file}.clif"));
            std::fs::copy(&src, dir.path().join(format!("{unit}.clif"))).unwrap();
            let summary = format!("{unit}.summary");
            clif_merge_in(
                dir.path(),
                &["summarize", &format!("{unit}.clif"), "-o", &summary],
            );
        }
        clif_merge_in(
            dir.path(),
            &["combine", "a.summary", "b.summary", "-o", "all.summary"],
        );
        for mode in MODES {
            let case = format!("{unit_a}, --mode {}", mode.keyword());
            let mut bodies = Vec::new();
            for unit in ["a", "b"] {
                let out = format!("{unit}.out.clif");
                clif_merge_in(
                    dir.path(),
                    &[
                        &format!("{unit}.clif"),
                        "--summary",
                        "all.summary",
                        "--mode",
                        mode.keyword(),
                        "--similar",
                        "--similar-min-saving=-100000",
                        "--verify",
                        "--emit-clif",
                        &out,
                    ],
                );
                let clif = std::fs::read_to_string(dir.path().join(out)).unwrap();
                let (functions, _) = functions_by_name(&clif);
                let (global, others): (Vec<_>, Vec<_>) = functions
                    .into_iter()
                    .partition(|(name, _)| name.starts_with("%clifmerge_"));
                let global = match <[_; 1]>::try_from(global) {
                    Ok([global]) => global,
                    Err(global) => {
                        let n = global.len();
                        failures.push(format!("{case}: {unit} defines {n} global bodies\n{clif}"));
                        continue;
                    }
                };
                // The body once in the unit: no other function is a copy of it.
                let copies: Vec<&String> = others
                    .iter()
                    .filter(|(_, text)| body_of(text) == body_of(&global.1))
                    .map(|(name, _)| name)
                    .collect();
                if !copies.is_empty() {
                    failures.push(format!(
                        "{case}: {unit} also holds it as {copies:?}\n{clif}"
                    ));
                }
                bodies.push(global);
            }
            if let [a, b] = &bodies[..]
                && a != b
            {
                failures.push(format!(
                    "{case}: the units write different bodies under one global name:\n{}\n{}",
                    a.1, b.1
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A function's text without its first line (its name and signature).
fn body_of(text: &str) -> &str {
    text.split_once('\n').map_or("", |(_, body)| body)
}
