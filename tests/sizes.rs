//! Size attribution (`--size-baseline`): where the bytes went adds up exactly.
//!
//! - modules of `tests/common/modgen.rs` (every linkage, aliases, recursion, near-copies) in
//!   every mode, exact and with similar merging, with and without function sections, for the
//!   four targets (x86_64 and aarch64, ELF and Mach-O); and a proptest over such modules;
//! - `genmod.py` modules through the command line's JSON (`../shared`, skipped with a note
//!   without it);
//! - the corpus modules (`#[ignore]`d: large; `cargo test --release --test sizes -- --ignored`).
//!
//! What "adds up" means: `saved_by_kind` adds up to `text_bytes_unmerged - text_bytes`, so do
//! the entries (classes, similar groups, global shared bodies, folds), each entry's saving is its
//! functions' bytes before minus after plus the padding it moved, and every function's bytes
//! say what it became (an alias or a removed function has none, a thunk at least a jump).

mod common;

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target};
use clif_merge::pipeline::{PipelineOptions, PipelineOutput, run};
use clif_merge::sizes::{EntrySizes, SizeAttribution};
use clif_merge::{ClifModule, MergeOptions, Mode, SimilarOptions};
use common::generator::pseudo_random_choices;
use common::modgen::{ModGenConfig, generate_module};
use proptest::prelude::*;
use std::path::Path;
use std::process::Command;
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// Every group that fits merges, whatever it saves: the most similar groups to attribute.
fn forced() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

/// One configuration of a run with a size baseline.
#[derive(Clone, Copy, Debug)]
struct Config {
    target: &'static str,
    mode: Mode,
    similar: bool,
    function_sections: bool,
}

fn every_config() -> Vec<Config> {
    let mut all = Vec::new();
    for target in TARGETS {
        for mode in MODES {
            for similar in [false, true] {
                for function_sections in [false, true] {
                    all.push(Config {
                        target,
                        mode,
                        similar,
                        function_sections,
                    });
                }
            }
        }
    }
    all
}

fn options(config: Config) -> PipelineOptions {
    PipelineOptions {
        merge: MergeOptions {
            mode: config.mode,
            similar: config.similar.then(forced),
            ..MergeOptions::default()
        },
        object: Some(ObjectOptions {
            target: parse_target(config.target).unwrap(),
            opt_level: OptLevel::Speed,
            isa: Default::default(),
            function_sections: config.function_sections,
            mode: config.mode,
            fold_machine_code: true,
        }),
        size_baseline: true,
        ..Default::default()
    }
}

/// The bytes of a jump thunk on `target`: the least a thunk has.
fn thunk_bytes(target: &str) -> u64 {
    if target.starts_with("x86_64") { 5 } else { 4 }
}

/// Checks that the attribution of `done` adds up (see the file's docs).
fn check_adds_up(done: &PipelineOutput, config: Config) -> Result<(), String> {
    let object = done.object.as_ref().ok_or("no object")?;
    let sizes = object.report.sizes.as_ref().ok_or("no attribution")?;
    let unmerged = object.report.text_bytes_unmerged.ok_or("no baseline")?;
    let saved = unmerged as i64 - object.report.text_bytes as i64;
    if (sizes.text_bytes, sizes.text_bytes_unmerged) != (object.report.text_bytes, unmerged) {
        return Err(format!("totals differ from the report's: {sizes:?}"));
    }
    if sizes.by_kind.total() != saved {
        return Err(format!(
            "saved_by_kind adds up to {}, not {saved}: {:?}",
            sizes.by_kind.total(),
            sizes.by_kind
        ));
    }
    let entries = all_entries(sizes);
    let by_entries: i64 = entries.iter().map(|e| e.saved).sum();
    if by_entries != saved {
        return Err(format!("the entries add up to {by_entries}, not {saved}"));
    }
    if sizes.classes.len() != done.report.classes.len()
        || sizes.similar.len() != done.report.similar.iter().flatten().count()
    {
        return Err("one entry per class and per similar group".into());
    }
    let thunk = thunk_bytes(config.target);
    for (at, entry) in entries.iter().enumerate() {
        // A similar group's members are thunks that pass more arguments: compiled code.
        let exact_class = at < sizes.classes.len();
        let members: i64 = entry
            .members
            .iter()
            .map(|m| m.before as i64 - m.after as i64)
            .sum();
        if entry.saved != members + entry.moved {
            return Err(format!("entry does not add up: {entry:?}"));
        }
        for m in &entry.members {
            let ok = match m.role {
                "alias" | "removed" => m.after == 0,
                // A jump, and the padding before it (below 16 bytes).
                // A jump and the padding before it, or, where a jump may not stand for the
                // call (the callee reads its own frame), a compiled call.
                "thunk" if exact_class => m.after >= thunk,
                "kept" | "shared" => m.after > 0,
                _ => true,
            };
            if !ok {
                return Err(format!("{} as {}: {} bytes after", m.name, m.role, m.after));
            }
        }
    }
    check_json(done, sizes)
}

fn all_entries(sizes: &SizeAttribution) -> Vec<&EntrySizes> {
    let mut all: Vec<&EntrySizes> = sizes.classes.iter().collect();
    all.extend(&sizes.similar);
    all.extend(&sizes.global);
    all.extend(sizes.folded.iter().map(|f| &f.1));
    all
}

/// The JSON report carries the same figures: `saved_bytes` per class and group, the five kinds.
fn check_json(done: &PipelineOutput, sizes: &SizeAttribution) -> Result<(), String> {
    let object = done.object.as_ref().map(|o| &o.report);
    let json: serde_json::Value =
        serde_json::from_str(&clif_merge::report::to_json(&done.report, object)).unwrap();
    let kinds = json["object"]["saved_by_kind"]
        .as_object()
        .ok_or("no saved_by_kind")?;
    let keys: Vec<&str> = kinds.keys().map(String::as_str).collect();
    let mut expected = vec!["alias", "thunk", "removed", "folded", "similar"];
    if done.report.global.is_some() {
        expected.push("global");
    }
    if keys != expected {
        return Err(format!("saved_by_kind has {keys:?}"));
    }
    let total: i64 = kinds.values().map(|v| v.as_i64().unwrap()).sum();
    let o = &json["object"];
    let saved = o["text_bytes_unmerged"].as_i64().unwrap() - o["text_bytes"].as_i64().unwrap();
    if total != saved {
        return Err(format!(
            "JSON saved_by_kind adds up to {total}, not {saved}"
        ));
    }
    let listed = |key: &str| json[key].as_array().cloned().unwrap_or_default();
    for (list, entries) in [("classes", &sizes.classes), ("similar", &sizes.similar)] {
        for (entry, sizes) in listed(list).iter().zip(entries) {
            if entry["saved_bytes"].as_i64() != Some(sizes.saved) {
                return Err(format!(
                    "{list}: {entry} says another saving than {}",
                    sizes.saved
                ));
            }
        }
    }
    Ok(())
}

fn run_config(module: &ClifModule, config: Config) -> Result<(), String> {
    let done = run(module.clone(), &options(config)).map_err(|e| e.to_string())?;
    check_adds_up(&done, config)
}

/// modgen modules, every configuration.
#[test]
fn attribution_adds_up_on_generated_modules_in_every_configuration() {
    let mut seed = 0x5eed_51e5_u64;
    let configs = every_config();
    for case in 0..3 {
        let config = if case % 2 == 0 {
            ModGenConfig::native(cranelift_codegen::isa::CallConv::SystemV)
        } else {
            ModGenConfig::interpreter()
        };
        let data = pseudo_random_choices(&mut seed, 4096);
        let module = generate_module(&data, &config).module();
        for &c in &configs {
            if let Err(e) = run_config(&module, c) {
                panic!("modgen case {case}, {c:?}: {e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random modules, a random configuration each.
    #[test]
    fn attribution_adds_up_on_random_modules(
        data in proptest::collection::vec(any::<u32>(), 0..3000),
        pick in 0usize..48,
        native in any::<bool>(),
    ) {
        let config = if native {
            ModGenConfig::native(cranelift_codegen::isa::CallConv::SystemV)
        } else {
            ModGenConfig::interpreter()
        };
        let module = generate_module(&data, &config).module();
        let c = every_config()[pick];
        if let Err(e) = run_config(&module, c) {
            prop_assert!(false, "{c:?}: {e}");
        }
    }
}

/// Global merging: each unit's saving adds up, with a `global` kind; every shared body is
/// attributed (the body's bytes against its members') and says how many of the program's
/// functions hold its content.
#[test]
fn attribution_adds_up_per_unit_of_global_merging() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/global");
    let units: Vec<ClifModule> = (0..3)
        .map(|k| {
            let path = data.join(format!("unit{k}.clif"));
            clif_merge::read_files(&[path], Default::default()).unwrap()
        })
        .collect();
    let summary = clif_merge::global::Summary::combine(
        units.iter().map(clif_merge::global::Summary::of_module),
    );
    let mut bodies = 0;
    for (k, unit) in units.iter().enumerate() {
        for config in every_config().into_iter().filter(|c| !c.function_sections) {
            let mut options = options(config);
            options.merge.summary = Some(summary.clone());
            let done = run(unit.clone(), &options).unwrap();
            if let Err(e) = check_adds_up(&done, config) {
                panic!("unit {k}, {config:?}: {e}");
            }
            let sizes = done.object.as_ref().unwrap().report.sizes.as_ref().unwrap();
            assert!(
                sizes.by_kind.global.is_some(),
                "a global kind with a summary"
            );
            let global = done.report.global.as_ref().unwrap();
            assert_eq!(sizes.global.len(), global.shared.len());
            for ((body, entry), holders) in global
                .shared
                .iter()
                .zip(&sizes.global)
                .zip(&sizes.global_holders)
            {
                let shared = entry.members.iter().find(|m| m.name == body.shared);
                assert!(
                    shared.is_some_and(|m| m.before == 0 && m.after > 0),
                    "{entry:?}"
                );
                assert!(
                    *holders > body.members.len().min(1),
                    "another unit holds {}",
                    body.shared
                );
                bodies += 1;
            }
        }
    }
    assert!(bodies > 0, "the units share bodies");
}

/// Without a size baseline nothing changes: no attribution, no new JSON fields.
#[test]
fn without_a_baseline_the_report_has_no_attribution() {
    let mut seed = 7;
    let data = pseudo_random_choices(&mut seed, 4096);
    let module = generate_module(&data, &ModGenConfig::interpreter()).module();
    let config = every_config()[0];
    let options = PipelineOptions {
        size_baseline: false,
        ..options(config)
    };
    let done = run(module, &options).unwrap();
    let object = done.object.as_ref().map(|o| &o.report);
    assert!(object.unwrap().sizes.is_none());
    let json = clif_merge::report::to_json(&done.report, object);
    assert!(!json.contains("saved_bytes") && !json.contains("saved_by_kind"));
}

/// `python3 genmod.py ARGS` into `dir`: the module's path.
fn genmod_module(dir: &Path, args: &[&str]) -> Option<std::path::PathBuf> {
    let genmod = common::genmod::genmod()?;
    let (clif, _, _) = common::genmod::generate(&genmod, dir, args);
    Some(clif)
}

/// The command line's JSON report of `args`, parsed.
fn cli_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "clif-merge {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks a JSON report: the kinds and the classes' and groups' savings add up.
fn check_cli_json(json: &serde_json::Value, what: &str) {
    let o = &json["object"];
    let saved = o["text_bytes_unmerged"].as_i64().unwrap() - o["text_bytes"].as_i64().unwrap();
    let kinds: i64 = o["saved_by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(kinds, saved, "{what}: saved_by_kind");
    let entries: i64 = ["classes", "similar"]
        .iter()
        .flat_map(|k| json[*k].as_array().cloned().unwrap_or_default())
        .map(|e| {
            e["saved_bytes"]
                .as_i64()
                .expect("saved_bytes in every entry")
        })
        .sum();
    // Folds outside any class are not listed in JSON: the entries are at most the total.
    let folded = o["saved_by_kind"]["folded"].as_i64().unwrap();
    assert!(
        entries <= saved && entries >= saved - folded.abs(),
        "{what}: entries {entries}, saved {saved}, folded {folded}"
    );
    assert!(saved > 0, "{what}: genmod plants classes, so merging saves");
}

/// genmod modules through the command line, every mode, exact and similar, both architectures.
#[test]
fn attribution_adds_up_on_genmod_modules_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--functions",
        "150",
        "--dup-rate",
        "0.3",
        "--near-rate",
        "0.2",
        "--seed",
        "11",
    ];
    let Some(clif) = genmod_module(dir.path(), &args) else {
        return;
    };
    let object = dir.path().join("m.o");
    for target in ["x86_64", "aarch64"] {
        for mode in ["safe", "aliases", "thunks"] {
            for similar in [false, true] {
                let mut cli = vec![
                    clif.to_str().unwrap(),
                    "-o",
                    object.to_str().unwrap(),
                    "--size-baseline",
                    "--report",
                    "json",
                    "--target",
                    target,
                    "--mode",
                    mode,
                ];
                if similar {
                    cli.push("--similar");
                }
                let json = cli_json(&cli);
                check_cli_json(&json, &format!("{target} {mode} similar={similar}"));
            }
        }
    }
}

/// The corpus modules, x86_64, safe and aliases, exact and similar (large: `--ignored`).
#[test]
#[ignore]
fn attribution_adds_up_on_the_corpus() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !corpus.exists() {
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping: {} is missing",
            corpus.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("m.o");
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_str()
                .is_some_and(|s| s.ends_with(".clif") || s.ends_with(".clif.xz"))
        })
        .collect();
    files.sort();
    for file in &files {
        for mode in ["safe", "aliases"] {
            for similar in [false, true] {
                let mut cli = vec![
                    file.to_str().unwrap(),
                    "-o",
                    object.to_str().unwrap(),
                    "--size-baseline",
                    "--report",
                    "json",
                    "--target",
                    "x86_64",
                    "--mode",
                    mode,
                ];
                if similar {
                    cli.push("--similar");
                }
                let json = cli_json(&cli);
                check_cli_json(
                    &json,
                    &format!("{} {mode} similar={similar}", file.display()),
                );
            }
        }
    }
}
