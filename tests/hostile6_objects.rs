//! Hostile objects (sixth pass): preemptible members of an exact class (and functions a
//! similar group would take, were they not preemptible) in a shared library that the program
//! interposes. A call inside the library to a
//! preemptible function must reach the program's definition, whatever the merge made of the
//! function (a thunk to a shared body passing its constants, a thunk of its class): a merge
//! that sent the call to the shared body or to the kept function directly would skip the
//! program's definition.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

#[path = "common/link.rs"]
mod link;

use link::{linkers, run_with_shared_library, toolchain};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// `%kM` (M < 6) of eight i64 parameters: a chain of six multiplications by constants of M,
/// each adding a parameter: similar members, one group. `%k1` is `%k0`'s copy (an exact
/// class). `%callk` calls `%k0` and `%k1` and adds their results.
fn module() -> String {
    let mut text = String::new();
    let types = ["i64"; 8].join(", ");
    let params: Vec<String> = (0..8).map(|i| format!("v{i}: i64")).collect();
    for m in 0..6u64 {
        let seed = if m == 1 { 0 } else { m };
        writeln!(
            text,
            "function %k{m}({types}) -> i64 system_v {{\nblock0({}):",
            params.join(", ")
        )
        .unwrap();
        let mut acc = "v0".to_string();
        for k in 0..6u64 {
            let n = 100 + 3 * k;
            let constant = (seed + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k << 17);
            writeln!(
                text,
                "    v{n} = iconst.i64 {}\n    v{a} = imul {acc}, v{n}\n    v{b} = iadd v{a}, v{p}",
                constant as i64,
                a = n + 1,
                b = n + 2,
                p = k
            )
            .unwrap();
            acc = format!("v{}", n + 2);
        }
        writeln!(text, "    return {acc}\n}}\n").unwrap();
    }
    text.push_str(
        "function %callk(i64) -> i64 system_v {
    sig0 = (i64, i64, i64, i64, i64, i64, i64, i64) -> i64 system_v
    fn0 = %k0 sig0
    fn1 = %k1 sig0
block0(v0: i64):
    v1 = call fn0(v0, v0, v0, v0, v0, v0, v0, v0)
    v2 = call fn1(v0, v0, v0, v0, v0, v0, v0, v0)
    v3 = iadd v1, v2
    return v3
}
; linkage: %callk export
",
    );
    text
}

/// The program: its own `k0` and `k1`, which interpose the library's.
const DRIVER: &str = r#"
#include <stdint.h>
#include <stdio.h>
typedef int64_t i;
i k0(i a, i b, i c, i d, i e, i f, i g, i h) { return 1000; }
i k1(i a, i b, i c, i d, i e, i f, i g, i h) { return 20000; }
extern i callk(i);
int main(void) {
    printf("%lld\n", (long long) callk(3));
    return 0;
}
"#;

/// In every mode, exact and with `--similar`, linked by every ELF linker (but ld.lld for
/// aarch64), on x86_64 and aarch64: `%callk` in the
/// library calls the program's `k0` and `k1` (21000).
#[test]
fn preemptible_members_of_a_shared_library_stay_interposable() {
    for aarch64 in [false, true] {
        let Some(tc) = toolchain(aarch64) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.clif"), module()).unwrap();
        let driver = dir.path().join("driver.c");
        std::fs::write(&driver, DRIVER).unwrap();
        for mode in ["safe", "aliases", "thunks"] {
            for similar in [false, true] {
                let label = format!("{mode}{}", if similar { "_similar" } else { "" });
                let object = dir.path().join(format!("{label}.o"));
                let mut cmd = Command::new(BIN);
                cmd.current_dir(dir.path())
                    .args(["k.clif", "--default-linkage", "preemptible", "--mode", mode])
                    .args(["--set", "is_pic", "--target", tc.triple, "-o"])
                    .arg(&object);
                if similar {
                    cmd.arg("--similar");
                }
                let out = cmd.arg("--report").arg("text").output().unwrap();
                assert!(
                    out.status.success(),
                    "{label}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                // The class of %k0 and %k1 merged (through a private copy: both stay
                // interposable). `--similar` takes no preemptible member.
                let report = String::from_utf8_lossy(&out.stdout);
                assert!(report.contains("merged: 2,"), "{label}: {report}");
                // A cross compiler finds no `ld.lld` of its own: ld.lld links aarch64 in
                // hostile5's tests of executables, not here.
                for linker in linkers().into_iter().filter(|l| !aarch64 || *l != "lld") {
                    let printed = run_with_shared_library(
                        &tc,
                        dir.path(),
                        &format!("{label}_{linker}"),
                        Path::new(&object),
                        &driver,
                        Some(linker),
                    );
                    assert_eq!(
                        printed.trim(),
                        "21000",
                        "{} {label} {linker}: the library's own k0 or k1 ran",
                        tc.triple
                    );
                }
            }
        }
    }
}

/// The Mach-O linker for tests: `ld64.lld` (LLVM's Mach-O port, in Debian's `lld`), if any.
fn macho_linker() -> Option<&'static str> {
    ["ld64.lld", "ld64.lld-14", "ld64.lld-22"]
        .into_iter()
        .find(|tool| link::tool_exists(tool))
}

/// Mach-O objects for x86_64 and arm64, every mode, exact and `--similar` (records on arm64:
/// its `__const` section comes before `__text`), with and without `--function-sections`:
/// every relocation lies inside its section and names a symbol of the object, and `ld64.lld`
/// links each into a dylib with `-dead_strip` that still exports every function.
#[test]
fn macho_objects_with_records_link_into_a_dylib() {
    use object::{Object as _, ObjectSection as _, RelocationTarget};
    let Some(linker) = macho_linker() else {
        assert!(std::env::var_os("CI").is_none(), "CI needs ld64.lld (lld)");
        eprintln!("note: skipping: no ld64.lld");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let text = module().replace("; linkage: %callk export\n", "");
    std::fs::write(dir.path().join("k.clif"), text).unwrap();
    let mut records = 0;
    for (triple, arch) in [
        ("x86_64-apple-darwin", "x86_64"),
        ("aarch64-apple-darwin", "arm64"),
    ] {
        for mode in ["safe", "aliases", "thunks"] {
            for flags in [
                &[][..],
                &["--similar"],
                &["--similar", "--function-sections"],
            ] {
                let label = format!("{arch}-{mode}{}", flags.concat());
                let object = dir.path().join(format!("{label}.o"));
                let out = Command::new(BIN)
                    .current_dir(dir.path())
                    .args(["k.clif", "--mode", mode, "--target", triple])
                    .args(flags)
                    .args(["--report", "json", "-o"])
                    .arg(&object)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{label}");
                let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                records += report["object"]["record_bytes"].as_u64().unwrap_or(0);
                let bytes = std::fs::read(&object).unwrap();
                let file = object::File::parse(&*bytes).unwrap();
                for section in file.sections() {
                    for (offset, reloc) in section.relocations() {
                        assert!(
                            offset < section.size(),
                            "{label}: {offset:#x} past its section"
                        );
                        match reloc.target() {
                            RelocationTarget::Symbol(s) => {
                                file.symbol_by_index(s).expect("a symbol of the object");
                            }
                            other => panic!("{label}: a relocation against {other:?}"),
                        }
                    }
                }
                let dylib = dir.path().join(format!("{label}.dylib"));
                let link = Command::new(linker)
                    .args(["-arch", arch, "-platform_version", "macos", "11.0", "11.0"])
                    .args([
                        "-dylib",
                        "-dead_strip",
                        "-undefined",
                        "dynamic_lookup",
                        "-o",
                    ])
                    .arg(&dylib)
                    .arg(&object)
                    .output()
                    .unwrap();
                assert!(
                    link.status.success(),
                    "{label}: {}",
                    String::from_utf8_lossy(&link.stderr)
                );
                let linked = std::fs::read(&dylib).unwrap();
                let linked = object::File::parse(&*linked).unwrap();
                let exports: Vec<String> = (linked.exports().unwrap().iter())
                    .map(|e| String::from_utf8_lossy(e.name()).into_owned())
                    .collect();
                for m in 0..6 {
                    let name = format!("_k{m}");
                    assert!(exports.contains(&name), "{label}: {name} in {exports:?}");
                }
            }
        }
    }
    assert!(records > 0, "some case passes records");
}

/// The driver of two units `k` and `q` (the same six members under two prefixes): each member
/// called through a pointer.
const TWO_UNITS_DRIVER: &str = r#"
#include <stdint.h>
#include <stdio.h>
typedef int64_t i;
#define D(n) i n(i, i, i, i, i, i, i, i);
D(k0) D(k1) D(k2) D(k3) D(k4) D(k5) D(q0) D(q1) D(q2) D(q3) D(q4) D(q5)
int main(void) {
    i (*f[12])(i, i, i, i, i, i, i, i) = {k0, k1, k2, k3, k4, k5, q0, q1, q2, q3, q4, q5};
    for (int x = 0; x < 12; x++)
        printf("%lld\n", (long long) f[x](x + 1, 2, 3, 4, 5, 6, 7, 8));
    return 0;
}
"#;

/// Two objects whose similar groups are the same (one shared body name, the same local record
/// names `similar_…_rN` in both), linked together by every ELF linker, in both orders, with
/// and without `--gc-sections`, `--function-sections` and PIC, on x86_64 and aarch64: the
/// program prints what the unmerged objects print (each member reads its own unit's record).
#[test]
fn two_objects_with_the_same_records_link_together() {
    for aarch64 in [false, true] {
        let Some(tc) = toolchain(aarch64) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let k = module()
            .split("function %callk")
            .next()
            .unwrap()
            .to_string();
        std::fs::write(d.join("k.clif"), &k).unwrap();
        std::fs::write(d.join("q.clif"), k.replace("%k", "%q")).unwrap();
        let driver = link::compile_driver(&tc, d, TWO_UNITS_DRIVER);
        let build = |unit: &str, label: &str, flags: &[&str]| {
            let object = d.join(format!("{unit}-{label}.o"));
            let out = Command::new(BIN)
                .current_dir(d)
                .arg(format!("{unit}.clif"))
                .args(["--target", tc.triple, "--report", "text"])
                .args(flags)
                .arg("-o")
                .arg(&object)
                .output()
                .unwrap();
            assert!(out.status.success(), "{unit} {label}");
            (object, String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let unmerged = ["--mode", "thunks", "--size-baseline"];
        let (kb, _) = build("k", "base", &unmerged);
        let (qb, _) = build("q", "base", &unmerged);
        let exe = d.join("base");
        let base: [&Path; 3] = [&driver, &kb, &qb];
        let expected = link::link_and_run(&tc, &exe, &base, "bfd", false).unwrap();
        for (label, flags) in [
            ("plain", &["--similar"][..]),
            ("pic", &["--similar", "--set", "is_pic"]),
            (
                "sections",
                &["--similar", "--function-sections", "--set", "is_pic"],
            ),
        ] {
            let (km, report) = build("k", label, flags);
            assert!(report.contains("read-only records"), "{label}: {report}");
            let (qm, _) = build("q", label, flags);
            for linker in linkers().into_iter().filter(|l| !aarch64 || *l != "lld") {
                for gc in [false, true] {
                    for objects in [[&*driver, &*km, &*qm], [&*driver, &*qm, &*km]] {
                        let exe = d.join(format!("{label}-{linker}-{gc}"));
                        let printed = link::link_and_run(&tc, &exe, &objects, linker, gc);
                        assert_eq!(
                            printed.as_deref(),
                            Ok(expected.as_str()),
                            "{} {label} {linker} gc={gc} {objects:?}",
                            tc.triple
                        );
                    }
                }
            }
        }
    }
}
