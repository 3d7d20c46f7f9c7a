//! Hostile command lines (seventh pass): a second run on `--emit-clif` output, with aliases,
//! user names, every `--default-linkage`, mode and `--similar`, merges nothing new and writes
//! the same CLIF and object; the reader refuses a name defined twice, within a file (a large
//! one, read in pieces) or across files in either order, naming both places and writing
//! nothing.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Exact twins (one of them user-named, one aliased), an alias of a user-named function, a
/// similar pair, and a caller of each through names, aliases and addresses; some linkage
/// directives, the rest left to the default.
const MODULE: &str = "; alias: %al = u0:2
; alias: %tw = %twin_b
; linkage: %twin_a hidden
; linkage: %al preemptible
function u0:1(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 7
    v2 = imul v0, v1
    return v2
}

function u0:2(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 7
    v2 = imul v0, v1
    return v2
}

function %twin_a(i64) -> i64 {
block0(v0: i64):
    v1 = bitrev v0
    v2 = iconst.i64 99
    v3 = bxor v1, v2
    return v3
}

function %twin_b(i64) -> i64 {
block0(v0: i64):
    v1 = bitrev v0
    v2 = iconst.i64 99
    v3 = bxor v1, v2
    return v3
}

function %near_a(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 0x1234_5678
    v2 = imul v0, v1
    v3 = rotl v2, v0
    v4 = iconst.i64 77
    v5 = iadd v3, v4
    v6 = imul v5, v5
    v7 = bxor v6, v2
    return v7
}

function %near_b(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i64 0x1234_5679
    v2 = imul v0, v1
    v3 = rotl v2, v0
    v4 = iconst.i64 77
    v5 = iadd v3, v4
    v6 = imul v5, v5
    v7 = bxor v6, v2
    return v7
}

function %user(i64) -> i64 {
    sig0 = (i64) -> i64
    fn0 = %tw sig0
    fn1 = %near_a sig0
    fn2 = %near_b sig0
    fn3 = %al(i32) -> i32
    fn4 = %twin_a sig0
block0(v0: i64):
    v1 = func_addr.i64 fn0
    v2 = call_indirect sig0, v1(v0)
    v3 = call fn1(v2)
    v4 = call fn2(v3)
    v5 = ireduce.i32 v4
    v6 = call fn3(v5)
    v7 = sextend.i64 v6
    v8 = call fn4(v7)
    return v8
}
";

/// Every mode, default linkage and `--similar`: the second run on the first run's CLIF merges
/// nothing, writes the same CLIF byte for byte, and the same object as the first run (both
/// with `--emit-clif`, so both without records); a third run with the other defaults too.
#[test]
fn a_second_run_on_emitted_clif_with_aliases_and_user_names_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.clif"), MODULE).unwrap();
    let read = |name: &str| std::fs::read(d.join(name)).unwrap();
    for mode in ["safe", "aliases", "thunks"] {
        for default in ["export", "hidden", "local", "preemptible"] {
            for similar in [&[][..], &["--similar"][..]] {
                let what = format!("--mode {mode} --default-linkage {default} {similar:?}");
                let common =
                    [&["--mode", mode, "--default-linkage", default][..], similar].concat();
                let first = [
                    &["in.clif", "--emit-clif", "one.clif", "-o", "one.o"][..],
                    &common,
                ]
                .concat();
                let report = run_ok(d, &first);
                assert!(
                    !report.contains("merged: 0,"),
                    "{what}: the first run merges: {report}"
                );
                let second = [
                    &["one.clif", "--emit-clif", "two.clif", "-o", "two.o"][..],
                    &common,
                ]
                .concat();
                let report = run_ok(d, &second);
                assert!(
                    report.contains("merged: 0,"),
                    "{what}: merged anew: {report}"
                );
                assert!(
                    read("one.clif") == read("two.clif"),
                    "{what}: the second CLIF differs:\n{}",
                    String::from_utf8_lossy(&read("two.clif"))
                );
                assert!(
                    read("one.o") == read("two.o"),
                    "{what}: the second object differs"
                );
                for other in ["export", "local"] {
                    let third = [
                        &["one.clif", "--emit-clif", "three.clif"][..],
                        &["--mode", mode, "--default-linkage", other][..],
                        similar,
                    ]
                    .concat();
                    run_ok(d, &third);
                    assert!(
                        read("one.clif") == read("three.clif"),
                        "{what}, read again with --default-linkage {other}: the CLIF differs"
                    );
                }
            }
        }
    }
}

/// `%NAME(i32) -> i32` adding `k`, seven lines and a blank one.
fn function(name: &str, k: usize) -> String {
    format!(
        "function %{name}(i32) -> i32 {{\nblock0(v0: i32):\n    v1 = iconst.i32 {k}\n    v2 = iadd v0, v1\n    return v2\n}}\n\n"
    )
}

/// A name defined twice in one file of 20 000 functions (2 MiB, read in pieces), the two far
/// apart: refused, with the second definition's line and the first's, and no object written.
#[test]
fn a_name_defined_twice_in_a_large_file_names_both_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut text = String::new();
    for i in 0..20_000 {
        let name = if i == 19_990 {
            "f5".to_string()
        } else {
            format!("f{i}")
        };
        text += &function(&name, i);
    }
    assert!(text.len() > 1 << 20, "more than one piece");
    std::fs::write(d.join("big.clif"), text).unwrap();
    let out = run(d, &["big.clif", "-o", "big.o"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: big.clif:{}: function %f5 is defined twice: also at big.clif:{}",
            19_990 * 7 + 1,
            5 * 7 + 1
        )
    );
    assert!(!d.join("big.o").exists(), "an object was written");
}

/// The same name in two files, in either order: the file read second is refused, naming the
/// first's line.
#[test]
fn a_name_defined_in_two_files_names_both_in_either_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.clif"), function("f", 1)).unwrap();
    std::fs::write(d.join("b.clif"), function("h", 1) + &function("f", 2)).unwrap();
    for (files, expected) in [
        (
            ["a.clif", "b.clif"],
            "error: b.clif:8: function %f is defined twice: also at a.clif:1",
        ),
        (
            ["b.clif", "a.clif"],
            "error: a.clif:1: function %f is defined twice: also at b.clif:8",
        ),
    ] {
        let out = run(d, &[&files[..], &["--emit-clif", "out.clif"][..]].concat());
        assert_eq!(out.status.code(), Some(1), "{files:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), expected);
        assert!(!d.join("out.clif").exists(), "{files:?}: CLIF was written");
    }
}

/// An unknown linkage in a directive: the message lists the linkages a directive accepts, but
/// leaves out `linkonce`, which directives accept too (only `--default-linkage` refuses it).
#[test]
fn an_unknown_linkage_names_every_accepted_linkage() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let accepted = function("f", 1) + "; linkage: %f linkonce\n";
    std::fs::write(d.join("ok.clif"), accepted).unwrap();
    run_ok(d, &["ok.clif"]);
    std::fs::write(
        d.join("bad.clif"),
        function("f", 1) + "; linkage: %f weird\n",
    )
    .unwrap();
    let out = run(d, &["bad.clif"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: bad.clif:8: unknown linkage `weird`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("linkonce"),
        "linkonce is not listed: {stderr}"
    );
}

/// Members of one similar group with ten wide constants each, `linkage`, and a caller.
fn record_members(linkage: &str) -> String {
    let mut text = String::new();
    for m in 1..=4u64 {
        text += &format!(
            "; linkage: %m{m} {linkage}\nfunction %m{m}(i64) -> i64 {{\nblock0(v0: i64):\n"
        );
        let mut acc = "v0".to_string();
        for k in 0..10u64 {
            let n = 100 + 3 * k;
            let constant = m.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k << 17);
            text += &format!(
                "    v{n} = iconst.i64 {}\n    v{a} = imul {acc}, v{n}\n    v{b} = rotl v{a}, v0\n",
                constant as i64,
                a = n + 1,
                b = n + 2,
            );
            acc = format!("v{}", n + 2);
        }
        text += &format!("    return {acc}\n}}\n\n");
    }
    text += "function %caller(i64) -> i64 {\n";
    for m in 1..=4 {
        text += &format!("    fn{} = %m{m}(i64) -> i64\n", m - 1);
    }
    text + "block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = call fn1(v1)\n    v3 = call fn2(v2)\n    v4 = call fn3(v3)\n    return v4\n}\n"
}

/// `-o --similar` writes the same object with `--verify` as without, with read-only records,
/// on x86_64 and aarch64, every mode, exported and local members, with function sections and
/// PIC (held).
#[test]
fn verify_does_not_change_objects_with_records_on_any_target_or_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let read = |name: &str| std::fs::read(d.join(name)).unwrap();
    for linkage in ["export", "local"] {
        std::fs::write(d.join("k.clif"), record_members(linkage)).unwrap();
        for target in ["x86_64", "aarch64"] {
            for mode in ["safe", "aliases", "thunks"] {
                for extra in [&[][..], &["--function-sections", "--set", "is_pic"][..]] {
                    let what = format!("{linkage} {target} {mode} {extra:?}");
                    let common = [
                        &["k.clif", "--similar", "--target", target, "--mode", mode][..],
                        extra,
                    ]
                    .concat();
                    let plain = run_ok(d, &[&common[..], &["-o", "plain.o"][..]].concat());
                    assert!(plain.contains("read-only records"), "{what}: {plain}");
                    run_ok(
                        d,
                        &[&common[..], &["-o", "verified.o", "--verify"][..]].concat(),
                    );
                    assert!(
                        read("plain.o") == read("verified.o"),
                        "{what}: the object differs with --verify"
                    );
                }
            }
        }
    }
}
