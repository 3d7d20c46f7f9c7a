//! Global merging, end to end: three units (`tests/data/global/`) are summarized, the summaries
//! combined, each unit merged knowing the others and compiled apart; the objects are linked with
//! a C driver by a plain link (no ICF option) and the program must print exactly what the
//! unmerged program prints — also after one unit changed and was rebuilt with the old summary.
//! The objects are read back: one copy of each shared body survives the link, members are
//! thunks, and shared bodies are COMDAT groups (ELF) or weak definitions (Mach-O).

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target};
use clif_merge::global::Summary;
use clif_merge::pipeline::{self, PipelineOptions};
use clif_merge::{
    ClifModule, MergeOptions, Mode, ReadOptions, SimilarOptions, read_files, read_module_text,
};
use object::{Object as _, ObjectComdat as _, ObjectSection as _, ObjectSymbol as _};
use std::path::{Path, PathBuf};
use std::process::Command;

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

use cdriver::driver_for;
use link::{Toolchain, run_ok, tool_exists, toolchain};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

const UNITS: usize = 3;

fn unit_path(k: usize) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/global/unit{k}.clif"))
}

fn units() -> Vec<ClifModule> {
    (0..UNITS)
        .map(|k| read_files(&[unit_path(k)], ReadOptions::default()).expect("a valid unit"))
        .collect()
}

/// Unit 1 after an edit that changes what `%mix_b` does (another rotation).
fn changed_unit1() -> ClifModule {
    let text = std::fs::read_to_string(unit_path(1)).unwrap();
    let edited = text.replacen("v13 = iconst.i64 17", "v13 = iconst.i64 19", 1);
    assert_ne!(text, edited);
    read_module_text(Path::new("unit1.clif"), &edited, ReadOptions::default()).unwrap()
}

fn summary_of(units: &[ClifModule]) -> Summary {
    let parts: Vec<Summary> = units.iter().map(Summary::of_module).collect();
    Summary::combine(parts)
}

fn object_options(triple: &str, mode: Mode) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(triple).unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections: false,
        mode,
        fold_machine_code: true,
    }
}

/// Round 2 of `unit` (without a summary: the unit merged alone, or nothing at all when `merge`
/// is false) compiled for `triple`.
fn build(unit: &ClifModule, summary: Option<&Summary>, mode: Mode, triple: &str) -> Vec<u8> {
    build_with(unit, summary, mode, triple, None)
}

/// [`build`], with similar merging when `similar` says so.
fn build_with(
    unit: &ClifModule,
    summary: Option<&Summary>,
    mode: Mode,
    triple: &str,
    similar: Option<&SimilarOptions>,
) -> Vec<u8> {
    let options = PipelineOptions {
        merge: MergeOptions {
            mode,
            summary: summary.cloned(),
            similar: similar.cloned(),
            ..MergeOptions::default()
        },
        object: Some(object_options(triple, mode)),
        ..Default::default()
    };
    let out = pipeline::run(unit.clone(), &options).expect("round 2");
    out.object.expect("an object").bytes
}

fn build_unmerged(unit: &ClifModule, triple: &str) -> Vec<u8> {
    let options = ObjectOptions {
        fold_machine_code: false,
        ..object_options(triple, Mode::Safe)
    };
    clif_merge::emit::object::write_object(unit, 0, &options)
        .unwrap()
        .bytes
}

const DRIVER: &str = include_str!("data/global/driver.c");

/// Links the driver with the objects (a plain link: `cc`, no ICF) and runs the program; returns
/// its output and the executable's bytes.
fn link_and_run(tc: &Toolchain, dir: &Path, label: &str, objects: &[Vec<u8>]) -> (String, Vec<u8>) {
    link_and_run_driver(tc, dir, label, DRIVER, objects)
}

/// [`link_and_run`] with another driver.
fn link_and_run_driver(
    tc: &Toolchain,
    dir: &Path,
    label: &str,
    driver_source: &str,
    objects: &[Vec<u8>],
) -> (String, Vec<u8>) {
    let driver = dir.join("driver.c");
    std::fs::write(&driver, driver_source).unwrap();
    let mut cmd = Command::new(tc.cc);
    cmd.arg("-O1").arg(&driver);
    for (k, bytes) in objects.iter().enumerate() {
        let path = dir.join(format!("{label}_unit{k}.o"));
        std::fs::write(&path, bytes).unwrap();
        cmd.arg(path);
    }
    let exe = dir.join(label);
    run_ok(cmd.arg("-o").arg(&exe));
    let mut run = match tc.runner.split_first() {
        Some((runner, args)) => {
            let mut c = Command::new(runner);
            c.args(args).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    (run_ok(&mut run), std::fs::read(&exe).unwrap())
}

/// How many symbols of each shared body the linked program defines.
fn shared_body_symbols(exe: &[u8]) -> Vec<(String, usize)> {
    let file = object::File::parse(exe).unwrap();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for sym in file.symbols().filter(|s| s.is_definition()) {
        let name = sym.name().unwrap();
        if name.contains("clifmerge_") {
            *counts.entry(name.to_string()).or_default() += 1;
        }
    }
    counts.into_iter().collect()
}

fn link_and_run_program(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else {
        return;
    };
    let triple = if aarch64 {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    };
    let dir = tempfile::tempdir().unwrap();
    let units = units();
    let summary = summary_of(&units);
    let unmerged: Vec<Vec<u8>> = units.iter().map(|u| build_unmerged(u, triple)).collect();
    let (expected, _) = link_and_run(&tc, dir.path(), "unmerged", &unmerged);
    assert!(expected.contains("addr_a != addr_b 1"), "{expected}");
    let forced = SimilarOptions {
        min_saving: -1_000_000,
        ..Default::default()
    };
    let variants = [Mode::Safe, Mode::Aliases, Mode::Thunks]
        .into_iter()
        .flat_map(|mode| [(mode, None), (mode, Some(&forced))]);
    for (mode, similar) in variants {
        let flags = if similar.is_some() { " --similar" } else { "" };
        let context = format!("{triple}, --mode {}{flags}", mode.keyword());
        let merged: Vec<Vec<u8>> = units
            .iter()
            .map(|u| build_with(u, Some(&summary), mode, triple, similar))
            .collect();
        let label = format!("merged_{}{}", mode.keyword(), flags.replace(' ', "_"));
        let (out, exe) = link_and_run(&tc, dir.path(), &label, &merged);
        assert!(
            out == expected,
            "{context}: the merged program prints otherwise"
        );
        // Each shared body survives once: mix, fact, addr and sum (equal), even (equal but
        // for callees that are equal), and with --similar scale (equal but for constants).
        let shared = shared_body_symbols(&exe);
        assert!(shared.iter().all(|(_, n)| *n == 1), "{context}: {shared:?}");
        let with_parameters = shared
            .iter()
            .filter(|(s, _)| s.contains("clifmerge_p"))
            .count();
        assert_eq!(shared.len() - with_parameters, 4, "{context}: {shared:?}");
        let expected_with_parameters = if similar.is_some() { 2 } else { 1 };
        assert!(
            with_parameters >= expected_with_parameters,
            "{context}: {shared:?}"
        );

        // Unit 1 changes and is rebuilt with the old summary; the others are not rebuilt.
        let mut stale_units = units.clone();
        stale_units[1] = changed_unit1();
        let reference: Vec<Vec<u8>> = stale_units
            .iter()
            .map(|u| build_unmerged(u, triple))
            .collect();
        let (expected_changed, _) = link_and_run(&tc, dir.path(), "unmerged_changed", &reference);
        assert_ne!(expected_changed, expected);
        let mut stale = merged.clone();
        stale[1] = build_with(&stale_units[1], Some(&summary), mode, triple, similar);
        let (out, _) = link_and_run(&tc, dir.path(), &format!("stale_{label}"), &stale);
        assert!(
            out == expected_changed,
            "{context}: a stale summary changed behaviour"
        );
    }
}

#[test]
fn linked_units_behave_as_the_unmerged_program_x86_64() {
    link_and_run_program(false);
}

#[test]
fn linked_units_behave_as_the_unmerged_program_aarch64() {
    link_and_run_program(true);
}

/// Generated programs (genmod: planted duplicates, near-duplicates, callers, recursion) split
/// into units and linked with a driver that calls every function: round 2 in every mode, exact
/// and with `--similar`, prints what the unmerged units print; so does the program after one
/// unit changed and was rebuilt against the old summary. `benches/global_programs.sh` does the
/// same at a larger scale and with more seeds.
#[test]
fn generated_programs_behave_as_their_unmerged_builds() {
    let (Some(genmod), Some(tc)) = (genmod::genmod(), toolchain(false)) else {
        return;
    };
    let triple = "x86_64-unknown-linux-gnu";
    let dir = tempfile::tempdir().unwrap();
    for (seed, n) in [("3", 3), ("8", 4)] {
        let args = [
            "--functions",
            "400",
            "--dup-rate",
            "0.3",
            "--near-rate",
            "0.2",
            "--transitive-frac",
            "0.3",
            "--permute-frac",
            "0.5",
            "--recursive-frac",
            "0.15",
            "--seed",
            seed,
        ];
        let (clif, _, _) = genmod::generate(&genmod, dir.path(), &args);
        let module = read_files(&[clif], ReadOptions::default()).unwrap();
        let driver = driver_for(&module);
        let units = split::split_units(&module, n);
        let summary = summary_of(&units);
        let mut stale_units = units.clone();
        stale_units[1] = edit::bump_constants(&units[1], 3);
        let run = |label: &str, objects: &[Vec<u8>]| {
            link_and_run_driver(&tc, dir.path(), label, &driver, objects).0
        };
        let unmerged = |units: &[ClifModule]| -> Vec<Vec<u8>> {
            units.iter().map(|u| build_unmerged(u, triple)).collect()
        };
        let expected = run("unmerged", &unmerged(&units));
        let expected_changed = run("unmerged_changed", &unmerged(&stale_units));
        assert_ne!(expected, expected_changed, "seed {seed}: the change shows");
        let similar = SimilarOptions::default();
        let variants = [
            (Mode::Aliases, None, &units, &expected),
            (Mode::Safe, Some(&similar), &units, &expected),
            (Mode::Thunks, None, &units, &expected),
            (
                Mode::Aliases,
                Some(&similar),
                &stale_units,
                &expected_changed,
            ),
        ];
        let mut shared = 0;
        for (mode, similar, units, expected) in variants {
            let context = format!(
                "seed {seed}, --mode {}, similar {}",
                mode.keyword(),
                similar.is_some()
            );
            let objects: Vec<Vec<u8>> = units
                .iter()
                .map(|u| build_with(u, Some(&summary), mode, triple, similar))
                .collect();
            let (out, exe) = link_and_run_driver(&tc, dir.path(), "merged", &driver, &objects);
            assert!(
                &out == expected,
                "{context}: the merged program prints otherwise"
            );
            shared += shared_body_symbols(&exe).len();
        }
        eprintln!("seed {seed}: {shared} shared bodies in the 4 linked programs");
        assert!(
            shared >= 100,
            "seed {seed}: only {shared} shared bodies in 4 programs"
        );
    }
}

/// `ld.lld -shared` (no ICF) keeps one copy of each shared body, and the units take fewer bytes
/// of text than units merged alone.
#[test]
fn a_shared_library_link_keeps_one_copy() {
    if !tool_exists("ld.lld") {
        assert!(std::env::var_os("CI").is_none(), "CI needs ld.lld (lld)");
        let _ = writeln!(std::io::stderr(), "note: skipping: ld.lld is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let units = units();
    let summary = summary_of(&units);
    let text_of = |summary: Option<&Summary>, label: &str| {
        let mut cmd = Command::new("ld.lld");
        cmd.args(["-shared", "-o"]).arg(dir.path().join(label));
        for (k, unit) in units.iter().enumerate() {
            let path = dir.path().join(format!("{label}{k}.o"));
            let bytes = build(unit, summary, Mode::Aliases, "x86_64-unknown-linux-gnu");
            std::fs::write(&path, bytes).unwrap();
            cmd.arg(path);
        }
        run_ok(&mut cmd);
        let exe = std::fs::read(dir.path().join(label)).unwrap();
        let file = object::File::parse(&*exe).unwrap();
        let text = file.section_by_name(".text").unwrap().size();
        (text, shared_body_symbols(&exe))
    };
    let (alone, _) = text_of(None, "alone");
    let (global, shared) = text_of(Some(&summary), "global");
    assert!(
        global < alone,
        "{global} bytes with summaries, {alone} alone"
    );
    assert_eq!(shared.len(), 5, "mix, fact, addr, sum, even: {shared:?}");
    assert!(shared.iter().all(|(_, n)| *n == 1), "{shared:?}");
}

/// The objects as written: ELF shared bodies are weak hidden symbols alone in a COMDAT group
/// with their relocations ([`link::group_defects`]);
/// Mach-O ones are weak definitions; members are jumps. Round 2 is a pure function of its
/// inputs: the same bytes when run again.
#[test]
fn shared_bodies_are_comdat_groups_and_weak_definitions() {
    let units = units();
    let summary = summary_of(&units);
    for triple in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
    ] {
        let bytes = build(&units[0], Some(&summary), Mode::Safe, triple);
        assert_eq!(bytes, build(&units[0], Some(&summary), Mode::Safe, triple));
        let file = object::File::parse(&*bytes).unwrap();
        let shared: Vec<_> = file
            .symbols()
            .filter(|s| s.is_definition() && s.name().unwrap().contains("clifmerge_"))
            .collect();
        assert_eq!(shared.len(), 4, "{triple}: mix, fact, addr and even");
        for sym in &shared {
            assert!(sym.is_weak(), "{triple}: {} is weak", sym.name().unwrap());
            assert_eq!(
                sym.scope(),
                object::SymbolScope::Linkage,
                "{triple}: hidden"
            );
        }
        if triple.contains("linux") {
            let defects = link::group_defects(&bytes);
            assert!(defects.is_empty(), "{triple}: {defects:?}");
            let groups: Vec<String> = file
                .comdats()
                .map(|c| {
                    file.symbol_by_index(c.symbol())
                        .unwrap()
                        .name()
                        .unwrap()
                        .to_string()
                })
                .collect();
            let mut names: Vec<String> = shared.iter().map(|s| s.name().unwrap().into()).collect();
            names.sort();
            let mut groups = groups;
            groups.sort();
            assert_eq!(groups, names, "{triple}: one COMDAT group per shared body");
        }
        let prefix = if triple.contains("apple") { "_" } else { "" };
        for member in ["mix_a", "fact_a", "addr_a"] {
            let sym = file
                .symbol_by_name(&format!("{prefix}{member}"))
                .unwrap_or_else(|| panic!("{triple}: {member}"));
            assert!(
                sym.size() <= 5 || triple.contains("apple"),
                "{triple}: {member} is a jump"
            );
        }
        let even = file.symbol_by_name(&format!("{prefix}even_a")).unwrap();
        assert!(
            even.size() < 40 || triple.contains("apple"),
            "{triple}: even_a passes odd_a"
        );
        for own in ["use_helper_a", "pre_a"] {
            let sym = file.symbol_by_name(&format!("{prefix}{own}")).unwrap();
            assert!(
                sym.size() > 5 || triple.contains("apple"),
                "{triple}: {own} keeps its body"
            );
        }
    }
}

/// The Mach-O linker for tests: `ld64.lld` (LLVM's Mach-O port, in Debian's `lld`), if any.
fn macho_linker() -> Option<&'static str> {
    ["ld64.lld", "ld64.lld-14", "ld64.lld-22"]
        .into_iter()
        .find(|tool| tool_exists(tool))
}

/// Mach-O (x86_64 and arm64): the units' objects link into a dylib with `ld64.lld` (no ICF
/// option); the weak definitions are coalesced into one copy of each shared body, and the text
/// is smaller than that of the units merged alone.
#[test]
fn macho_units_link_with_one_copy_of_each_shared_body() {
    let Some(linker) = macho_linker() else {
        assert!(std::env::var_os("CI").is_none(), "CI needs ld64.lld (lld)");
        let _ = writeln!(std::io::stderr(), "note: skipping: no ld64.lld");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let units = units();
    let summary = summary_of(&units);
    for (triple, arch) in [
        ("x86_64-apple-darwin", "x86_64"),
        ("aarch64-apple-darwin", "arm64"),
    ] {
        let link = |summary: Option<&Summary>, label: &str| {
            let out = dir.path().join(format!("{label}-{arch}.dylib"));
            let mut cmd = Command::new(linker);
            cmd.args(["-arch", arch, "-platform_version", "macos", "11.0", "11.0"])
                .args(["-dylib", "-undefined", "dynamic_lookup", "-o"])
                .arg(&out);
            for (k, unit) in units.iter().enumerate() {
                let path = dir.path().join(format!("{label}-{arch}-{k}.o"));
                std::fs::write(&path, build(unit, summary, Mode::Aliases, triple)).unwrap();
                cmd.arg(path);
            }
            run_ok(&mut cmd);
            let bytes = std::fs::read(&out).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let text = file.section_by_name("__text").unwrap().size();
            (text, shared_body_symbols(&bytes))
        };
        let (alone, _) = link(None, "alone");
        let (global, shared) = link(Some(&summary), "global");
        assert!(
            global < alone,
            "{triple}: {global} bytes with summaries, {alone} alone"
        );
        assert_eq!(
            shared.len(),
            5,
            "{triple}: mix, fact, addr, sum, even: {shared:?}"
        );
        assert!(shared.iter().all(|(_, n)| *n == 1), "{triple}: {shared:?}");
    }
}

/// A unit with a function that returns its own return address plus `k`, and a caller that
/// knows where that address must be.
fn frame_reader_unit(name: &str, k: i64) -> ClifModule {
    let text = format!(
        "function %{name}(i64) -> i64 system_v {{
block0(v0: i64):
    v1 = get_return_address.i64
    v3 = iconst.i64 {k}
    v4 = iadd v1, v3
    v2 = iadd v4, v0
    return v2
}}
"
    );
    read_module_text(
        Path::new(&format!("{name}.clif")),
        &text,
        ReadOptions::default(),
    )
    .unwrap()
}

/// Each reader, called from a C function, must return an address inside that function (its
/// caller's return address), not one inside a thunk of its own.
const FRAME_DRIVER: &str = r#"
#include <stdint.h>
#include <stdio.h>
extern int64_t ra_c(int64_t);
extern int64_t ra_d(int64_t);
__attribute__((noinline)) static int64_t via_c(void) { return ra_c(0) - 11; }
__attribute__((noinline)) static int64_t via_d(void) { return ra_d(0) - 13; }
static int inside(int64_t ra, void *f) {
    return ra > (int64_t) (intptr_t) f && ra < (int64_t) (intptr_t) f + 64;
}
int main(void) {
    printf("ra_c %d\nra_d %d\n", inside(via_c(), (void *) via_c), inside(via_d(), (void *) via_d));
    return 0;
}
"#;

/// Global merging never makes a function that reads its own frame a thunk, with or without
/// parameters: two units hold return-address readers equal but for a constant (one shared body
/// with a parameter under `--similar`), and each still returns its caller's return address.
fn frame_readers_stay_whole(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else {
        return;
    };
    let triple = if aarch64 {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    };
    let dir = tempfile::tempdir().unwrap();
    let units = [frame_reader_unit("ra_c", 11), frame_reader_unit("ra_d", 13)];
    let summary = summary_of(&units);
    let forced = SimilarOptions {
        min_saving: -1_000_000,
        ..SimilarOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(&forced)] {
            let objects: Vec<Vec<u8>> = units
                .iter()
                .map(|u| build_with(u, Some(&summary), mode, triple, similar))
                .collect();
            let label = format!("frame_{mode:?}_{}", similar.is_some());
            let (out, _) = link_and_run_driver(&tc, dir.path(), &label, FRAME_DRIVER, &objects);
            assert_eq!(
                out,
                "ra_c 1\nra_d 1\n",
                "{triple} {mode:?} similar: {}",
                similar.is_some()
            );
        }
    }
}

#[test]
fn frame_readers_are_never_thunks_x86_64() {
    frame_readers_stay_whole(false);
}

#[test]
fn frame_readers_are_never_thunks_aarch64() {
    frame_readers_stay_whole(true);
}

/// A `linkonce` function (a shared body, or a user's) is one of identical copies of which the
/// linker keeps any one: every unit must write it as the body. So a merge keeps it as the body
/// of its class whatever the linkage and names of the others (an exported, hidden, local or
/// preemptible function equal to it), never replaces it (nor a second `linkonce` member), and
/// makes the others its thunks, never its aliases (refused when the object is written), or
/// removes them where nothing else reaches them.
#[test]
fn a_linkonce_function_stays_the_body_of_its_class_in_every_mode() {
    let body = "(i64) -> i64 system_v {\nblock0(v0: i64):\n    v1 = iconst.i64 3\n    \
                v2 = imul v0, v1\n    v3 = iadd v2, v0\n    return v3\n}\n";
    // %a_export comes first by linkage and by name: only the `linkonce` rule keeps %lo_y.
    let mut text = String::from(
        "; linkage: %lo_y linkonce\n; linkage: %lo_z linkonce\n; linkage: %h hidden\n\
         ; linkage: %l local\n; linkage: %la local\n; linkage: %p preemptible\n",
    );
    for name in ["%lo_y", "%lo_z", "%a_export", "%h", "%l", "%la", "%p"] {
        text += &format!("function {name}{body}");
    }
    text += "function %uses(i64) -> i64 system_v {\n    fn0 = colocated %l(i64) -> i64 system_v\n\
             fn1 = colocated %la(i64) -> i64 system_v\nblock0(v0: i64):\n    \
             v1 = call fn0(v0)\n    v2 = func_addr.i64 fn1\n    v3 = iadd v1, v2\n    \
             return v3\n}\n";
    let original = read_module_text(Path::new("lo.clif"), &text, ReadOptions::default()).unwrap();
    let name = |n: &str| clif_merge::FuncName::parse(n).unwrap();
    let text_of = |module: &ClifModule, n: &str| {
        let id = module.resolve(&name(n))?;
        Some(module.function(id).func.display().to_string())
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let mut module = original.clone();
        clif_merge::merge_module(&mut module, mode);
        for linkonce in ["%lo_y", "%lo_z"] {
            assert_eq!(
                text_of(&module, linkonce),
                text_of(&original, linkonce),
                "{mode:?}: {linkonce} stays the body"
            );
        }
        for alias in module.aliases() {
            let target = module.resolve(&alias.target).unwrap();
            assert_ne!(
                module.function(target).linkage,
                clif_merge::SymbolLinkage::LinkOnce,
                "{mode:?}: {} is an alias of a linkonce function",
                alias.name
            );
        }
        for member in ["%a_export", "%h", "%l", "%la", "%p"] {
            let removed = member == "%l" && mode != Mode::Thunks;
            match text_of(&module, member) {
                None => assert!(removed, "{mode:?}: {member} removed"),
                Some(text) => {
                    let id = module.resolve(&name(member)).unwrap();
                    let thunk = &module.function(id).func;
                    assert!(
                        !removed
                            && clif_merge::merge::thunk::is_forwarding_thunk(thunk)
                            && text.contains("%lo_y"),
                        "{mode:?}: {member} should be a thunk of %lo_y:\n{text}"
                    );
                }
            }
        }
        let options = object_options("x86_64-unknown-linux-gnu", mode);
        if let Err(e) = clif_merge::emit::object::write_object(&module, 0, &options) {
            panic!("{mode:?}: {e}");
        }
    }
}

/// The reader refuses an alias of a `linkonce` function; a module built through the library
/// (`add_alias`, `set_linkage`) can still hold one. Its object would define the alias in the
/// function's COMDAT group, which a link keeping another unit's copy drops: writing the object
/// is refused instead, naming both.
#[test]
fn an_alias_of_a_linkonce_function_is_refused_when_the_object_is_written() {
    use clif_merge::SymbolLinkage;
    use clif_merge::module::Alias;
    let text = "function %f(i64) -> i64 system_v {\nblock0(v0: i64):\n    v1 = iconst.i64 3\n    \
                v2 = imul v0, v1\n    return v2\n}\n";
    let name = |n: &str| clif_merge::FuncName::parse(n).unwrap();
    let alias = Alias {
        name: name("%g"),
        target: name("%f"),
        linkage: SymbolLinkage::Export,
    };
    let read = || read_module_text(Path::new("f.clif"), text, ReadOptions::default()).unwrap();
    let mut alias_first = read();
    alias_first.add_alias(alias.clone()).unwrap();
    assert!(alias_first.set_linkage(&name("%f"), SymbolLinkage::LinkOnce));
    let mut linkonce_first = read();
    linkonce_first.set_linkage(&name("%f"), SymbolLinkage::LinkOnce);
    linkonce_first.add_alias(alias).unwrap();
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin"] {
        for module in [&alias_first, &linkonce_first] {
            let options = object_options(triple, Mode::Safe);
            match clif_merge::emit::object::write_object(module, 0, &options) {
                Ok(out) => panic!(
                    "{triple}: written, groups: {:?}",
                    link::group_defects(&out.bytes)
                ),
                Err(e) => {
                    let message = e.to_string();
                    assert!(
                        message.contains("%g") && message.contains("%f"),
                        "{message}"
                    );
                    assert!(message.contains("linkonce"), "{message}");
                }
            }
        }
    }
}

/// A unit whose function `%NAME` (`(i64) -> i64`, exported) calls `%ext` with a constant and
/// uses a constant in a chain of arithmetic: with `shared`, both uses read one `iconst` (as
/// GVN leaves two equal constants); otherwise each use has its own.
fn constant_uses_unit(name: &str, call_constant: i64, other: i64, shared: bool) -> ClifModule {
    let constants = if shared {
        assert_eq!(call_constant, other);
        format!(
            "    v1 = iconst.i64 {call_constant}\n    v2 = call fn0(v1)\n    v3 = imul v0, v1\n"
        )
    } else {
        format!(
            "    v1 = iconst.i64 {call_constant}\n    v2 = call fn0(v1)\n    v9 = iconst.i64 {other}\n    \
             v3 = imul v0, v9\n"
        )
    };
    let mut text = format!(
        "function %{name}(i64) -> i64 system_v {{\n    sig0 = (i64) -> i64 system_v\n    \
         fn0 = %ext sig0\nblock0(v0: i64):\n{constants}    v4 = iadd v3, v2\n"
    );
    let mut acc = "v4".to_string();
    for k in 0..16 {
        text += &format!(
            "    v{} = rotl {acc}, v0\n    v{} = bxor v{}, v2\n",
            20 + 2 * k,
            21 + 2 * k,
            20 + 2 * k
        );
        acc = format!("v{}", 21 + 2 * k);
    }
    text += &format!("    return {acc}\n}}\n");
    read_module_text(
        Path::new(&format!("{name}.clif")),
        &text,
        ReadOptions::default(),
    )
    .unwrap()
}

/// Issue 21, item 5 across units: a function whose two uses of a constant read one value
/// (unit 0: 3 and 3) and its copy in another unit whose two constants differ (unit 1: 5 for the
/// call, 3 for the product) share one body with `--similar`, each passing its own constants;
/// linked with a driver, the program prints what the unmerged units print, on x86_64 and
/// aarch64 (qemu), in every mode, and keeps one copy of the shared body.
fn constant_uses_shared_across_units(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else {
        return;
    };
    let units = [
        constant_uses_unit("f", 3, 3, true),
        constant_uses_unit("g", 5, 3, false),
    ];
    let driver = "#include <stdio.h>\n#include <stdint.h>\n\
        int64_t f(int64_t); int64_t g(int64_t);\n\
        int64_t ext(int64_t x) { return x * 1000003 + 7; }\n\
        int main(void) {\n\
            int64_t xs[] = {0, 1, -7, 123456789, INT64_MIN, INT64_MAX};\n\
            for (int i = 0; i < 6; i++) printf(\"%lld %lld\\n\", (long long)f(xs[i]), (long long)g(xs[i]));\n\
            return 0;\n\
        }\n";
    let dir = tempfile::tempdir().unwrap();
    let unmerged: Vec<Vec<u8>> = units.iter().map(|u| build_unmerged(u, tc.triple)).collect();
    let (expected, _) = link_and_run_driver(&tc, dir.path(), "unmerged", driver, &unmerged);
    let summary = summary_of(&units);
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let objects: Vec<Vec<u8>> = units
            .iter()
            .map(|u| build_with(u, Some(&summary), mode, tc.triple, Some(&forced)))
            .collect();
        let (out, exe) = link_and_run_driver(&tc, dir.path(), "merged", driver, &objects);
        assert_eq!(out, expected, "{} --mode {}", tc.triple, mode.keyword());
        let shared: Vec<_> = shared_body_symbols(&exe)
            .into_iter()
            .filter(|(name, _)| name.contains("clifmerge_p"))
            .collect();
        assert!(
            shared.len() == 1 && shared[0].1 == 1,
            "{} --mode {}: one shared body with parameters, once: {shared:?}",
            tc.triple,
            mode.keyword()
        );
    }
}

#[test]
fn constant_uses_are_holes_across_units_x86_64() {
    constant_uses_shared_across_units(false);
}

#[test]
fn constant_uses_are_holes_across_units_aarch64() {
    constant_uses_shared_across_units(true);
}
