//! Global merging's objects link and run right whatever the linker and the link order.
//!
//! A linker keeps the first COMDAT group of each signature and drops the others, so which copy
//! of a shared body survives depends on the link order, and what a dropped group takes with it
//! depends on what the object put in it. Every test program here is built in every way round 2
//! can build it — each mode, with and without `--similar`, merged alone, with a unit rebuilt
//! against a stale summary, with units compiled with other codegen settings — and each build
//! is linked with its units in every order, with GNU ld, gold and ld.lld, with and without
//! `--gc-sections`; each program must print what its unmerged build prints. Every object's
//! groups are also checked for their structure (`link::group_defects`).
//!
//! The programs (`tests/data/global/`): the three units of `tests/global.rs`; `twins`, two
//! shared bodies of other IR but equal machine code, and a body whose code depends on NaN
//! canonicalization, with preemptible twins that become its thunks in every mode;
//! `linkonce`, user functions with `linkonce` linkage and no summary; and a small generated
//! program with such twins. `every_generated_program_…` (ignored) does the
//! same for larger generated programs.

#[path = "common/cdriver.rs"]
mod cdriver;
#[path = "common/edit.rs"]
mod edit;
#[path = "common/genmod.rs"]
mod genmod;
#[path = "common/link.rs"]
mod link;
#[path = "common/split.rs"]
mod split;

use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target};
use clif_merge::global::Summary;
use clif_merge::pipeline::{self, PipelineOptions};
use clif_merge::{
    ClifModule, MergeOptions, Mode, ReadOptions, SimilarOptions, read_files, read_module_text,
};
use link::Toolchain;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A program: its units and the C driver that calls them.
struct Program {
    name: String,
    units: Vec<ClifModule>,
    driver: String,
    /// One unit after an edit that changes what it does, for the stale-summary builds.
    changed: Option<(usize, ClifModule)>,
    /// Round 2 with a summary (false: the units only merge alone, as user `linkonce` code).
    global: bool,
}

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/global")
        .join(path)
}

fn read_unit(path: &Path) -> ClifModule {
    read_files(&[path.to_path_buf()], ReadOptions::default()).expect("a valid unit")
}

/// A program of `tests/data/global/`: `units` are its CLIF files, `edit` changes one of them.
fn data_program(name: &str, units: &[&str], driver: &str, edit: (usize, &str, &str)) -> Program {
    let paths: Vec<PathBuf> = units.iter().map(|u| data(u)).collect();
    let (k, from, to) = edit;
    let text = std::fs::read_to_string(&paths[k]).unwrap();
    let edited = text.replacen(from, to, 1);
    assert_ne!(text, edited, "{name}: the edit applies");
    Program {
        name: name.to_string(),
        units: paths.iter().map(|p| read_unit(p)).collect(),
        driver: std::fs::read_to_string(data(driver)).unwrap(),
        changed: Some((
            k,
            read_module_text(&paths[k], &edited, ReadOptions::default()).unwrap(),
        )),
        global: true,
    }
}

fn data_programs() -> Vec<Program> {
    let mut linkonce = data_program(
        "linkonce",
        &[
            "linkonce/unit0.clif",
            "linkonce/unit1.clif",
            "linkonce/unit2.clif",
        ],
        "linkonce/driver.c",
        (1, "v3 = iconst.i64 23", "v3 = iconst.i64 29"),
    );
    linkonce.global = false;
    vec![
        data_program(
            "units",
            &["unit0.clif", "unit1.clif", "unit2.clif"],
            "driver.c",
            (1, "v13 = iconst.i64 17", "v13 = iconst.i64 19"),
        ),
        data_program(
            "twins",
            &["twins/unit0.clif", "twins/unit1.clif", "twins/unit2.clif"],
            "twins/driver.c",
            (2, "v3 = iconst.i64 23", "v3 = iconst.i64 29"),
        ),
        linkonce,
    ]
}

/// `module` with a *twin* of every `every`-th function that takes and returns `i64`s: a copy
/// with one more, unused, parameter (other IR, the same machine code), twice, under two names
/// that the splitter deals to two units.
fn with_twins(module: &ClifModule, every: usize) -> ClifModule {
    use cranelift_codegen::ir::{AbiParam, types::I64};
    let mut out = ClifModule::new();
    for (i, mf) in module.functions().enumerate() {
        out.define((*mf.func).clone(), mf.linkage, None).unwrap();
        let sig = &mf.func.signature;
        let all_i64 = sig
            .params
            .iter()
            .chain(&sig.returns)
            .all(|p| p.value_type == I64);
        if i % every != 0 || !all_i64 || mf.linkage.is_preemptible() {
            continue;
        }
        for copy in 0..2 {
            let mut twin = mf.func.clone();
            let name = format!(
                "{}__twin{copy}",
                mf.name.to_string().trim_start_matches('%')
            );
            twin.name = cranelift_codegen::ir::UserFuncName::testcase(name);
            twin.signature.params.push(AbiParam::new(I64));
            let entry = twin.layout.entry_block().unwrap();
            twin.dfg.append_block_param(entry, I64);
            out.define(*twin, mf.linkage, None).unwrap();
        }
    }
    out
}

/// A program genmod generates (`functions` functions, with twins), dealt into `n` units.
fn generated_program(genmod: &Path, dir: &Path, seed: &str, functions: usize, n: usize) -> Program {
    let functions = functions.to_string();
    let args = [
        "--functions",
        &functions,
        "--dup-rate",
        "0.4",
        "--near-rate",
        "0.2",
        "--transitive-frac",
        "0.3",
        "--recursive-frac",
        "0.1",
        "--seed",
        seed,
    ];
    let (clif, _, _) = genmod::generate(genmod, dir, &args);
    let module = with_twins(&read_unit(&clif), 1);
    let units = split::split_units(&module, n);
    let changed = split::split_units(&edit::bump_constants(&module, 5), n).swap_remove(1);
    Program {
        name: format!("genmod seed {seed}, {functions} functions, {n} units"),
        driver: cdriver::driver_for(&module),
        units,
        changed: Some((1, changed)),
        global: true,
    }
}

/// One way to build a program's units.
struct Build {
    label: String,
    mode: Mode,
    similar: Option<SimilarOptions>,
    /// Round 2 against this summary (None: each unit merges alone).
    summary: Option<Summary>,
    /// The units to build, and the settings of each.
    units: Vec<(ClifModule, IsaSettings)>,
    /// Units whose objects are those of the fresh build of this mode (not rebuilt).
    reuse: Vec<bool>,
}

/// Codegen settings that change the code: NaN canonicalization, another CPU.
fn other_settings(aarch64: bool) -> [IsaSettings; 2] {
    let nan = IsaSettings {
        cpu: None,
        flags: vec!["enable_nan_canonicalization=true".into()],
    };
    let cpu = if aarch64 {
        IsaSettings {
            cpu: None,
            flags: vec!["has_lse".into(), "sign_return_address=true".into()],
        }
    } else {
        IsaSettings {
            cpu: Some("haswell".into()),
            flags: Vec::new(),
        }
    };
    [nan, cpu]
}

/// Every build of `program` (see the module docs).
fn builds(program: &Program, aarch64: bool) -> Vec<Build> {
    let summary = program.global.then(|| {
        let parts = program.units.iter().map(Summary::of_module);
        Summary::combine(parts.collect::<Vec<_>>())
    });
    let plain: Vec<(ClifModule, IsaSettings)> = program
        .units
        .iter()
        .map(|u| (u.clone(), IsaSettings::default()))
        .collect();
    let forced = SimilarOptions {
        min_saving: -1_000_000,
        ..Default::default()
    };
    let fresh = vec![false; program.units.len()];
    let mut builds = Vec::new();
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(forced.clone())] {
            let flag = if similar.is_some() { " --similar" } else { "" };
            builds.push(Build {
                label: format!("--mode {}{flag}", mode.keyword()),
                mode,
                similar: similar.clone(),
                summary: summary.clone(),
                units: plain.clone(),
                reuse: fresh.clone(),
            });
            // A stale unit in each mode, with `--similar` in one of them.
            let stale_here = similar.is_some() == (mode == Mode::Aliases);
            if let (Some((k, changed)), Some(_), true) = (&program.changed, &summary, stale_here) {
                let mut units = plain.clone();
                units[*k].0 = changed.clone();
                let mut reuse = vec![true; units.len()];
                reuse[*k] = false;
                builds.push(Build {
                    label: format!("--mode {}{flag}, unit {k} stale", mode.keyword()),
                    mode,
                    similar,
                    summary: summary.clone(),
                    units,
                    reuse,
                });
            }
        }
    }
    if summary.is_some() {
        builds.push(Build {
            label: "--mode aliases, no summary".into(),
            mode: Mode::Aliases,
            similar: None,
            summary: None,
            units: plain.clone(),
            reuse: fresh.clone(),
        });
    }
    for mode in [Mode::Safe, Mode::Aliases] {
        let mut units = plain.clone();
        for (unit, settings) in units.iter_mut().zip(other_settings(aarch64)) {
            unit.1 = settings;
        }
        builds.push(Build {
            label: format!(
                "--mode {}, units 0 and 1 with other settings",
                mode.keyword()
            ),
            mode,
            similar: None,
            summary: summary.clone(),
            units,
            reuse: fresh.clone(),
        });
    }
    builds
}

fn object_options(tc: &Toolchain, mode: Mode, isa: &IsaSettings, fold: bool) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(tc.triple).unwrap(),
        opt_level: OptLevel::Speed,
        isa: isa.clone(),
        function_sections: false,
        mode,
        fold_machine_code: fold,
    }
}

/// The objects of `build`; a unit it reuses is that of `fresh`.
fn build_objects(tc: &Toolchain, build: &Build, fresh: Option<&[Vec<u8>]>) -> Vec<Vec<u8>> {
    build
        .units
        .iter()
        .enumerate()
        .map(|(k, (unit, isa))| match fresh {
            Some(fresh) if build.reuse[k] => fresh[k].clone(),
            _ => {
                let options = PipelineOptions {
                    merge: MergeOptions {
                        mode: build.mode,
                        similar: build.similar.clone(),
                        summary: build.summary.clone(),
                        ..MergeOptions::default()
                    },
                    object: Some(object_options(tc, build.mode, isa, true)),
                    ..Default::default()
                };
                let out = pipeline::run(unit.clone(), &options).expect("round 2");
                out.object.expect("an object").bytes
            }
        })
        .collect()
}

/// The objects of `build`'s units, unmerged and unfolded, each with its own settings.
fn unmerged_objects(tc: &Toolchain, build: &Build) -> Vec<Vec<u8>> {
    build
        .units
        .iter()
        .map(|(unit, isa)| {
            let options = object_options(tc, Mode::Safe, isa, false);
            clif_merge::emit::object::write_object(unit, 0, &options)
                .unwrap()
                .bytes
        })
        .collect()
}

/// Every order of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut order = rest.clone();
            order.insert(at, n - 1);
            out.push(order);
        }
    }
    out.sort();
    out
}

/// What a sweep did: links run, and what went wrong.
#[derive(Default)]
struct Sweep {
    links: usize,
    failures: Vec<String>,
}

/// Builds `program` every way, checks each object's groups and links each build in every
/// order with every linker, with and without `--gc-sections`.
fn sweep(tc: &Toolchain, linkers: &[&str], program: &Program, aarch64: bool, sweep: &mut Sweep) {
    let dir = tempfile::tempdir().unwrap();
    let driver = link::compile_driver(tc, dir.path(), &program.driver);
    let orders = permutations(program.units.len());
    let exe = dir.path().join("program");
    // Identical objects need not be linked twice (modes often build the same bytes).
    let mut linked: HashSet<(Vec<u64>, &str, bool, u64)> = HashSet::new();
    let mut fresh_of_mode: Vec<(Mode, bool, Vec<Vec<u8>>)> = Vec::new();
    for build in builds(program, aarch64) {
        let context = format!("{} ({}), {}", program.name, tc.triple, build.label);
        let fresh = fresh_of_mode
            .iter()
            .find(|(m, s, _)| *m == build.mode && *s == build.similar.is_some())
            .map(|(_, _, objects)| objects.as_slice());
        let objects = build_objects(tc, &build, fresh);
        if build.reuse.iter().all(|r| !r) {
            fresh_of_mode.push((build.mode, build.similar.is_some(), objects.clone()));
        }
        for (k, object) in objects.iter().enumerate() {
            for defect in link::group_defects(object) {
                sweep
                    .failures
                    .push(format!("{context}: unit {k}: {defect}"));
            }
        }
        let shared = shared_across_builds(&build, &objects);
        sweep
            .failures
            .extend(shared.into_iter().map(|s| format!("{context}: {s}")));
        let paths: Vec<PathBuf> = objects
            .iter()
            .enumerate()
            .map(|(k, bytes)| {
                let path = dir.path().join(format!("unit{k}.o"));
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect();
        let unmerged: Vec<PathBuf> = unmerged_objects(tc, &build)
            .iter()
            .enumerate()
            .map(|(k, bytes)| {
                let path = dir.path().join(format!("unmerged{k}.o"));
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect();
        let mut inputs: Vec<&Path> = vec![&driver];
        inputs.extend(unmerged.iter().map(PathBuf::as_path));
        let expected = link::link_and_run(tc, &exe, &inputs, "bfd", false)
            .unwrap_or_else(|e| panic!("{context}: the unmerged build: {e}"));
        let expected_hash = hash_bytes(expected.as_bytes());
        let mut jobs = Vec::new();
        for order in &orders {
            let key: Vec<u64> = order.iter().map(|&k| hash_bytes(&objects[k])).collect();
            for &linker in linkers {
                for gc in [false, true] {
                    if linked.insert((key.clone(), linker, gc, expected_hash)) {
                        jobs.push((order, linker, gc));
                    }
                }
            }
        }
        sweep.links += jobs.len();
        let failures = run_in_parallel(&jobs, |worker, &(order, linker, gc)| {
            let mut inputs: Vec<&Path> = vec![&driver];
            inputs.extend(order.iter().map(|&k| paths[k].as_path()));
            let exe = dir.path().join(format!("program{worker}"));
            let what = match link::link_and_run(tc, &exe, &inputs, linker, gc) {
                Ok(out) if out == expected => return None,
                Ok(_) => "the program prints otherwise".to_string(),
                Err(e) => e,
            };
            let gc = if gc { " --gc-sections" } else { "" };
            Some(format!(
                "{context}: units in order {order:?}, ld.{linker}{gc}: {what}"
            ))
        });
        sweep.failures.extend(failures);
    }
}

/// `job` on every item, on a few threads (links and runs wait on processes more than they
/// compute); what it returns, in the items' order. `job` is told its thread's number.
fn run_in_parallel<T: Sync>(
    items: &[T],
    job: impl Fn(usize, &T) -> Option<String> + Sync,
) -> Vec<String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const THREADS: usize = 3;
    let next = AtomicUsize::new(0);
    let mut found: Vec<(usize, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|worker| {
                let (next, job) = (&next, &job);
                scope.spawn(move || {
                    let mut found = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        found.extend(job(worker, item).map(|f| (i, f)));
                    }
                    found
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a link worker"))
            .collect()
    });
    found.sort();
    found.into_iter().map(|(_, f)| f).collect()
}

/// Shared bodies that units compiled with other settings define under one symbol (a CPU
/// preset's code is the same behaviour on a CPU that has its features, so only the names can
/// show it): each as "units K and L both define NAME".
fn shared_across_builds(build: &Build, objects: &[Vec<u8>]) -> Vec<String> {
    use object::{Object as _, ObjectSymbol as _};
    let shared: Vec<HashSet<String>> = objects
        .iter()
        .map(|bytes| {
            let file = object::File::parse(&**bytes).unwrap();
            file.symbols()
                .filter(|s| s.is_definition())
                .map(|s| s.name().unwrap().to_string())
                .filter(|n| n.starts_with("clifmerge_"))
                .collect()
        })
        .collect();
    let mut found = Vec::new();
    for k in 0..objects.len() {
        for l in k + 1..objects.len() {
            if build.units[k].1 == build.units[l].1 {
                continue;
            }
            for name in shared[k].intersection(&shared[l]) {
                found.push(format!("units {k} and {l} both define {name}"));
            }
        }
    }
    found.sort();
    found
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn assert_clean(what: &str, sweep: &Sweep) {
    eprintln!(
        "{what}: {} distinct links run, {} failures",
        sweep.links,
        sweep.failures.len()
    );
    let shown: Vec<&String> = sweep.failures.iter().take(12).collect();
    assert!(
        sweep.failures.is_empty(),
        "{what}: {} failures, the first ones:\n{}",
        sweep.failures.len(),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The test programs, and a small generated one when genmod is there.
fn every_program_in_every_order(aarch64: bool) {
    let Some(tc) = link::toolchain(aarch64) else {
        return;
    };
    let linkers = link::linkers();
    let mut programs = data_programs();
    let dir = tempfile::tempdir().unwrap();
    if let Some(genmod) = genmod::genmod() {
        programs.push(generated_program(&genmod, dir.path(), "5", 30, 3));
    }
    let mut result = Sweep::default();
    for program in &programs {
        sweep(&tc, &linkers, program, aarch64, &mut result);
    }
    assert_clean(tc.triple, &result);
}

#[test]
fn every_program_links_right_in_every_order_x86_64() {
    every_program_in_every_order(false);
}

#[test]
fn every_program_links_right_in_every_order_aarch64() {
    every_program_in_every_order(true);
}

/// Larger generated programs, in 3 and 4 units (every order of 4 units is 24 orders): minutes,
/// hence ignored; `cargo test --release --test global_links -- --ignored`.
#[test]
#[ignore]
fn every_generated_program_links_right_in_every_order() {
    let Some(genmod) = genmod::genmod() else {
        return;
    };
    let linkers = link::linkers();
    let dir = tempfile::tempdir().unwrap();
    for aarch64 in [false, true] {
        let Some(tc) = link::toolchain(aarch64) else {
            continue;
        };
        let mut result = Sweep::default();
        for (seed, functions, n) in [("11", 120, 3), ("12", 80, 4), ("13", 200, 4)] {
            let program = generated_program(&genmod, dir.path(), seed, functions, n);
            sweep(&tc, &linkers, &program, aarch64, &mut result);
        }
        assert_clean(tc.triple, &result);
    }
}
