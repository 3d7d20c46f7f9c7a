//! hostile15: global merging of functions returning through an `sret` pointer, across three
//! units: `%xa`/`%xb` equal (one shared body), `%xc` equal but for a constant (`--similar`),
//! and their callers `%ca`/`%cb`/`%cc`, which share a body taking the callee (and with
//! `--similar` the constant) as parameters after the `sret` pointer. A C driver reads the
//! structures they return; every mode, exact and `--similar`, x86_64 and aarch64 under qemu,
//! must print what the unmerged objects print.

#[path = "common/link.rs"]
mod link;

use link::{Toolchain, run_ok, toolchain};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

fn unit(callee: &str, caller: &str, k: i64) -> String {
    format!(
        "function %{callee}(i64 sret, i64) system_v {{
block0(v0: i64, v1: i64):
    v2 = iconst.i64 {k}
    v3 = imul v1, v2
    v4 = iadd v3, v1
    v5 = imul v4, v3
    v6 = bxor v5, v4
    store v3, v0
    store v5, v0+8
    store v6, v0+16
    return
}}

function %{caller}(i64 sret, i64) system_v {{
    fn0 = %{callee}(i64 sret, i64) system_v
block0(v0: i64, v1: i64):
    v2 = iconst.i64 {k}
    v3 = imul v1, v2
    v4 = iadd v3, v1
    v5 = imul v4, v3
    v6 = bxor v5, v4
    call fn0(v0, v6)
    v7 = load.i64 v0
    v8 = iadd v7, v3
    store v8, v0
    return
}}
"
    )
}

const DRIVER: &str = "#include <stdio.h>
struct t { long a, b, c; };
struct t xa(long), xb(long), xc(long), ca(long), cb(long), cc(long);
int main(void) {
    for (long i = -2; i < 3; i++) {
        struct t r[6] = {xa(i), xb(i), xc(i), ca(i), cb(i), cc(i)};
        for (int k = 0; k < 6; k++) printf(\"%ld %ld %ld \", r[k].a, r[k].b, r[k].c);
        printf(\"\\n\");
    }
    return 0;
}
";

const UNITS: [&str; 3] = ["a", "b", "c"];

fn clif_merge(dir: &Path, args: &[&str]) -> String {
    run_ok(Command::new(BIN).current_dir(dir).args(args))
}

fn link_run(tc: &Toolchain, dir: &Path, objects: &[PathBuf]) -> String {
    let exe = dir.join("prog");
    run_ok(
        Command::new(tc.cc)
            .arg(dir.join("driver.c"))
            .args(objects)
            .arg("-o")
            .arg(&exe),
    );
    link::run_program(tc, &exe)
}

fn sret_units_behave_as_unmerged(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else { return };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("a.clif"), unit("xa", "ca", 3)).unwrap();
    std::fs::write(dir.join("b.clif"), unit("xb", "cb", 3)).unwrap();
    std::fs::write(dir.join("c.clif"), unit("xc", "cc", 5)).unwrap();
    std::fs::write(dir.join("driver.c"), DRIVER).unwrap();
    let mut unmerged = Vec::new();
    for u in UNITS {
        let (clif, sum, object) = (format!("{u}.clif"), format!("{u}.sum"), format!("u{u}.o"));
        clif_merge(dir, &["summarize", &clif, "-o", &sum]);
        clif_merge(dir, &[&clif, "-o", &object, "--target", tc.triple]);
        unmerged.push(dir.join(object));
    }
    clif_merge(
        dir,
        &["combine", "c.sum", "a.sum", "b.sum", "-o", "all.sum"],
    );
    let expected = link_run(&tc, dir, &unmerged);
    assert_eq!(expected.lines().count(), 5, "{expected}");
    let objects: Vec<PathBuf> = UNITS.iter().map(|u| dir.join(format!("{u}.o"))).collect();
    for similar in [&[][..], &["--similar"]] {
        for mode in ["safe", "aliases", "thunks"] {
            let mut with_parameters = 0;
            for u in UNITS {
                let (clif, object) = (format!("{u}.clif"), format!("{u}.o"));
                let args = [&clif, "--summary", "all.sum", "-o", &object, "--mode", mode];
                let args = [
                    &args[..],
                    similar,
                    &["--target", tc.triple, "--report", "json"],
                ];
                let report: serde_json::Value =
                    serde_json::from_str(&clif_merge(dir, &args.concat())).unwrap();
                let shared = report["global"]["shared"].as_array().unwrap().clone();
                with_parameters += shared.iter().filter(|s| s["parameters"] != 0).count();
            }
            // The callers share a body with parameters in a and b (and c with --similar).
            assert!(
                with_parameters >= 2,
                "{mode} {similar:?}: {with_parameters}"
            );
            let got = link_run(&tc, dir, &objects);
            assert_eq!(got, expected, "{} {mode} {similar:?}", tc.triple);
        }
    }
}

#[test]
fn sret_functions_and_their_callers_shared_across_units_run_as_unmerged_x86_64() {
    sret_units_behave_as_unmerged(false);
}

#[test]
fn sret_functions_and_their_callers_shared_across_units_run_as_unmerged_aarch64() {
    sret_units_behave_as_unmerged(true);
}
