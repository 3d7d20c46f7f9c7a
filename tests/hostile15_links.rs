//! hostile15: objects of global merging (round 2) linked in ways the other link tests do not:
//! `ld.lld --icf=all` and `--icf=safe`, relocatable links (`ld -r`, `ld.lld -r`) linked again,
//! shared libraries, both link orders; with a tail-call chain whose callee becomes a parameter
//! of a shared body. And address identity of two units' thunks to one shared body under
//! `--icf=safe`: distinct symbols must stay distinct addresses.

#[path = "common/link.rs"]
mod link;

use link::{Toolchain, run_ok, tool_exists, toolchain};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// Unit `a` of two: `%x` (tail), `%fa` tail-calling `%x` with ten arguments (some on the
/// stack), `%ma` calling `%fa`. Unit `b` is the same with `y`, `fb`, `mb`: `%x` and `%y` are
/// equal, so `%ma` and `%mb` are one class of the whole program's merge and share a body
/// that takes their callee as a parameter.
fn unit(x: &str, f: &str, m: &str) -> String {
    let args: Vec<String> = (0..10).map(|i| format!("v{i}: i64")).collect();
    let params = ["i64"; 10].join(", ");
    let offsets: String = (1..10)
        .map(|i| {
            format!(
                "    v{} = iconst.i64 {i}\n    v{} = iadd v0, v{}\n",
                100 + i,
                200 + i,
                100 + i
            )
        })
        .collect();
    let passed: Vec<String> = std::iter::once("v0".to_string())
        .chain((1..10).map(|i| format!("v{}", 200 + i)))
        .collect();
    format!(
        "function %{x}(i64) -> i64 tail {{
block0(v0: i64):
    v1 = iconst.i64 7
    v2 = imul v0, v1
    v3 = iconst.i64 5
    v4 = iadd v2, v3
    v5 = iconst.i64 0x55
    v6 = bxor v4, v5
    return v6
}}

function %{f}({params}) -> i64 tail {{
    fn0 = %{x}(i64) -> i64 tail
block0({args}):
    v10 = iadd v0, v9
    v11 = imul v10, v8
    v12 = isub v11, v7
    v13 = iadd v12, v6
    v14 = imul v13, v5
    v15 = iadd v14, v4
    return_call fn0(v15)
}}

function %{m}(i64) -> i64 system_v {{
    fn0 = %{f}({params}) -> i64 tail
block0(v0: i64):
{offsets}    v99 = call fn0({passed})
    return v99
}}
",
        args = args.join(", "),
        passed = passed.join(", "),
    )
}

const DRIVER: &str = "#include <stdio.h>
long ma(long); long mb(long);
int main(void) { for (long i = -3; i < 4; i++) printf(\"%ld %ld\\n\", ma(i), mb(i * 5)); return 0; }
";

fn clif_merge(dir: &Path, args: &[&str]) -> String {
    run_ok(Command::new(BIN).current_dir(dir).args(args))
}

/// Links `objects` with the driver (`cc` with `flags`, and `lld`'s directory for a cross
/// compiler) and runs the program.
fn link_run(tc: &Toolchain, dir: &Path, exe: &str, flags: &[&str], objects: &[PathBuf]) -> String {
    let exe = dir.join(exe);
    let mut cc = Command::new(tc.cc);
    if flags.iter().any(|f| f.contains("lld")) && !tc.runner.is_empty() {
        cc.arg("-B").arg(lld_directory(dir));
    }
    run_ok(
        cc.args(flags)
            .arg(dir.join("driver.c"))
            .args(objects)
            .arg("-o")
            .arg(&exe),
    );
    link::run_program(tc, &exe)
}

/// A directory holding `ld.lld`, for a cross compiler that looks for its linker there only.
fn lld_directory(dir: &Path) -> PathBuf {
    let bin = dir.join("lld-bin");
    if !bin.join("ld.lld").exists() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let lld = std::env::split_paths(&path)
            .map(|d| d.join("ld.lld"))
            .find(|p| p.exists())
            .expect("ld.lld on PATH");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(lld, bin.join("ld.lld")).unwrap();
    }
    bin
}

/// The relocatable link of `objects` by `ld` (the target's `ld.bfd`, or `ld.lld`).
fn relocatable(tc: &Toolchain, dir: &Path, ld: &str, objects: &[PathBuf]) -> PathBuf {
    let ld = match (ld, tc.runner.is_empty()) {
        ("lld", _) => "ld.lld".to_string(),
        (_, true) => "ld".to_string(),
        (_, false) => tc.cc.replace("gcc", "ld"),
    };
    let out = dir.join(format!("r_{}.o", ld.replace('.', "_")));
    run_ok(
        Command::new(&ld)
            .arg("-r")
            .args(objects)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// What each way of linking `a.o` and `b.o` in `dir` prints, labelled, in a fixed order.
fn every_link(tc: &Toolchain, dir: &Path) -> Vec<(String, String)> {
    let (a, b) = (dir.join("a.o"), dir.join("b.o"));
    let mut runs = Vec::new();
    let flag_sets: [&[&str]; 5] = [
        &[],
        &["-fuse-ld=lld"],
        &["-fuse-ld=lld", "-Wl,--icf=all"],
        &["-fuse-ld=lld", "-Wl,--icf=safe", "-Wl,--gc-sections"],
        &["-Wl,--gc-sections"],
    ];
    for flags in flag_sets {
        for (order, objects) in [("ab", [&a, &b]), ("ba", [&b, &a])] {
            let objects = objects.map(|o| o.to_path_buf());
            let out = link_run(tc, dir, "prog", flags, &objects);
            runs.push((format!("{flags:?} {order}"), out));
        }
    }
    for ld in ["bfd", "lld"] {
        let r = relocatable(tc, dir, ld, &[b.clone(), a.clone()]);
        let out = link_run(tc, dir, "prog", &[], &[r]);
        runs.push((format!("{ld} -r"), out));
    }
    // Each unit a shared library of its own, the program linked against both.
    for (unit, object) in [("a", &a), ("b", &b)] {
        let lib = dir.join(format!("lib{unit}.so"));
        run_ok(
            Command::new(tc.cc)
                .arg("-shared")
                .arg(object)
                .arg("-o")
                .arg(&lib),
        );
    }
    let exe = dir.join("prog_so");
    run_ok(
        Command::new(tc.cc)
            .arg(dir.join("driver.c"))
            .arg(dir.join("liba.so"))
            .arg(dir.join("libb.so"))
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-o")
            .arg(&exe),
    );
    runs.push(("shared libraries".into(), link::run_program(tc, &exe)));
    runs
}

fn global_units_link_right_every_way(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else { return };
    if !tool_exists("ld.lld") {
        eprintln!("note: skipping: ld.lld is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("a.clif"), unit("x", "fa", "ma")).unwrap();
    std::fs::write(dir.join("b.clif"), unit("y", "fb", "mb")).unwrap();
    std::fs::write(dir.join("driver.c"), DRIVER).unwrap();
    let target = ["--target", tc.triple];
    clif_merge(dir, &["summarize", "a.clif", "-o", "a.sum"]);
    clif_merge(dir, &["summarize", "b.clif", "-o", "b.sum"]);
    clif_merge(dir, &["combine", "b.sum", "a.sum", "-o", "all.sum"]);
    clif_merge(dir, &[&["a.clif", "-o", "ua.o"][..], &target].concat());
    clif_merge(dir, &[&["b.clif", "-o", "ub.o"][..], &target].concat());
    let unmerged = link_run(
        &tc,
        dir,
        "unmerged",
        &[],
        &[dir.join("ua.o"), dir.join("ub.o")],
    );
    assert_eq!(unmerged.lines().count(), 7, "{unmerged}");
    for mode in ["safe", "aliases", "thunks"] {
        for sections in [&[][..], &["--function-sections"]] {
            for u in ["a", "b"] {
                let (clif, object) = (format!("{u}.clif"), format!("{u}.o"));
                let args = [&clif, "--summary", "all.sum", "-o", &object, "--mode", mode];
                let args = [&args[..], sections, &target, &["--report", "json"]].concat();
                let report = clif_merge(dir, &args);
                let report: serde_json::Value = serde_json::from_str(&report).unwrap();
                let shared = report["global"]["shared"].as_array().unwrap();
                // `%x` shares a body; so does `%ma`, passing `%fa` to it (the check can fail).
                assert_eq!(shared.len(), 2, "{mode} {u}: {report}");
            }
            for (how, out) in every_link(&tc, dir) {
                assert_eq!(out, unmerged, "{mode} {sections:?}, linked {how}");
            }
        }
    }
}

#[test]
fn global_units_link_right_with_icf_relocatable_and_shared_links_x86_64() {
    global_units_link_right_every_way(false);
}

#[test]
fn global_units_link_right_with_icf_relocatable_and_shared_links_aarch64() {
    global_units_link_right_every_way(true);
}

/// Two units' equal functions `%x` and `%y` both become thunks to one shared body: equal
/// bytes, equal relocations. A third unit compares their addresses, so `ld.lld --icf=safe`
/// must keep them apart (the address-significance table of the comparing unit says so),
/// while `--icf=all` folds them: the comparison then says equal (the check can fail).
#[test]
fn thunks_of_one_shared_body_keep_distinct_addresses_under_safe_icf() {
    let Some(tc) = toolchain(false) else { return };
    if !tool_exists("ld.lld") {
        eprintln!("note: skipping: ld.lld is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let body = |name: &str| {
        format!(
            "function %{name}(i64) -> i64 {{
block0(v0: i64):
    v1 = iconst.i64 7
    v2 = imul v0, v1
    v3 = iconst.i64 5
    v4 = iadd v2, v3
    v5 = iconst.i64 0x55
    v6 = bxor v4, v5
    return v6
}}
"
        )
    };
    std::fs::write(dir.join("a.clif"), body("x")).unwrap();
    std::fs::write(dir.join("b.clif"), body("y")).unwrap();
    let compare = "function %same() -> i8 {
    fn0 = %x(i64) -> i64
    fn1 = %y(i64) -> i64
block0:
    v0 = func_addr.i64 fn0
    v1 = func_addr.i64 fn1
    v2 = icmp eq v0, v1
    return v2
}
";
    std::fs::write(dir.join("c.clif"), compare).unwrap();
    let driver = "#include <stdio.h>
long x(long); long y(long); char same(void);
int main(void) { printf(\"%d %ld %ld\\n\", same(), x(3), y(4)); return 0; }
";
    std::fs::write(dir.join("driver.c"), driver).unwrap();
    for u in ["a", "b", "c"] {
        clif_merge(
            dir,
            &["summarize", &format!("{u}.clif"), "-o", &format!("{u}.sum")],
        );
    }
    clif_merge(
        dir,
        &["combine", "a.sum", "b.sum", "c.sum", "-o", "all.sum"],
    );
    let objects: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|u| dir.join(format!("{u}.o")))
        .collect();
    for mode in ["safe", "aliases", "thunks"] {
        for u in ["a", "b", "c"] {
            let (clif, object) = (format!("{u}.clif"), format!("{u}.o"));
            let args = [&clif, "--summary", "all.sum", "-o", &object, "--mode", mode];
            clif_merge(dir, &[&args[..], &["--function-sections"]].concat());
        }
        let safe = ["-fuse-ld=lld", "-Wl,--icf=safe"];
        assert_eq!(
            link_run(&tc, dir, "safe", &safe, &objects),
            "0 79 116\n",
            "{mode}"
        );
        let all = ["-fuse-ld=lld", "-Wl,--icf=all"];
        assert_eq!(
            link_run(&tc, dir, "all", &all, &objects),
            "1 79 116\n",
            "{mode}"
        );
    }
}
