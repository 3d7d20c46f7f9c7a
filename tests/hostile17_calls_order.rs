//! Hostile pass on `--verify`'s calls into the module: is the report the same whatever the
//! threads and the order of the input's functions? The CLI's module is 60 copies of
//! `hostile17_call_records.rs`'s right merge (a body merged into an equal forwarder: every run
//! of each body records calls the merged side does not pair), each with its own constant; the
//! order of functions is tried on two wrong merges, whose mismatches are listed by function.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// The functions of copy `i`: `%h` (times `3 + i`), `%g`, the forwarder `%a_fwd` and the body
/// with an unreachable block `%b_body`.
fn copy(i: usize) -> Vec<String> {
    let k = 3 + i;
    vec![
        format!(
            "function %h{i}(i64) -> i64 {{\nblock0(v0: i64):\n    v2 = iconst.i64 {k}\n    \
             v1 = imul v0, v2\n    return v1\n}}\n"
        ),
        format!(
            "function %g{i}(i64) -> i64 {{\n    fn0 = %h{i}(i64) -> i64\nblock0(v0: i64):\n    \
             v3 = iconst.i64 1\n    v1 = iadd v0, v3\n    v2 = call fn0(v1)\n    return v2\n}}\n"
        ),
        format!(
            "function %a_fwd{i}(i64) -> i64 {{\n    fn0 = %g{i}(i64) -> i64\nblock0(v0: i64):\n    \
             v1 = call fn0(v0)\n    return v1\n}}\n"
        ),
        format!(
            "function %b_body{i}(i64) -> i64 {{\n    fn0 = %g{i}(i64) -> i64\n\
             block0(v0: i64):\n    v1 = call fn0(v0)\n    return v1\n\
             block1:\n    v2 = iconst.i64 0\n    return v2\n}}\n"
        ),
    ]
}

/// The 60 copies' functions, in order.
fn functions() -> Vec<String> {
    (0..60).flat_map(copy).collect()
}

/// What `clif-merge --verify --threads N` writes (stdout, then stderr) for the module of
/// `functions`, and whether it succeeded.
fn verify(functions: &[String], threads: usize) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.clif");
    std::fs::write(&path, functions.join("\n")).unwrap();
    let out = Command::new(BIN)
        .args(["--verify", "--threads", &threads.to_string()])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    (text, out.status.success())
}

#[test]
fn the_report_is_the_same_on_one_thread_or_two() {
    let functions = functions();
    let (one, ok) = verify(&functions, 1);
    // Each body's record of calls (`%g`'s) is not paired with its merged side's (`%h`'s, the
    // forwarder's callee's): no mismatch, every function checked (it once was 60 false ones).
    assert!(ok && !one.contains("mismatch:"), "{one}");
    assert_eq!(verify(&functions, 2).0, one);
}

/// `%name(x) = x + k`.
fn adds(name: &str, k: i64) -> String {
    format!(
        "function %{name}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = iconst.i64 {k}\n    \
         v2 = iadd v0, v1\n    return v2\n}}\n"
    )
}

/// The mismatches `verify_merge` lists where `%p` and `%q` were both changed (a wrong merge of
/// each), with the module's functions in the other order when `reversed`.
fn mismatches_listed(reversed: bool) -> Vec<String> {
    let mut original = vec![adds("p", 1), adds("q", 2)];
    let mut wrong = vec![adds("p", 3), adds("q", 4)];
    if reversed {
        original.reverse();
        wrong.reverse();
    }
    let read = |functions: &[String]| {
        read_module_text(
            Path::new("m.clif"),
            &functions.concat(),
            ReadOptions::default(),
        )
        .unwrap()
    };
    let original = read(&original);
    let mut merged = original.clone();
    let (report, _) = merge_module(&mut merged, Mode::Safe);
    assert_eq!(report.merged, 0, "the two bodies differ");
    let checked = verify_merge(&original, &read(&wrong), &report, &VerifyOptions::default());
    checked.mismatches.iter().map(|m| m.to_string()).collect()
}

#[test]
fn mismatches_are_listed_whatever_the_order_of_functions() {
    let listed = mismatches_listed(false);
    let of = |name: &str| listed.iter().any(|m| m.starts_with(name));
    assert!(of("%p(") && of("%q("), "{listed:?}");
    assert_eq!(listed, mismatches_listed(true));
}
