//! Hostile pass on `--verify`'s calls into the module: is the report the same whatever the
//! threads and the order of the input's functions, where callees run alone? The module is 60
//! copies of `hostile17_call_records.rs`'s right merge that `--verify` reports (a body merged
//! into an equal forwarder: every run of each body runs `%g` alone), each with its own
//! constant, so every function's report has mismatches to order.

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

#[test]
#[ignore = "defect: --verify lists mismatches in the input's order of functions, so the same \
            module with its functions in another order gets another report text"]
fn the_report_is_the_same_whatever_the_order_of_functions() {
    let functions = functions();
    let (text, _) = verify(&functions, 2);
    let mut reversed = functions.clone();
    reversed.reverse();
    let (other, _) = verify(&reversed, 2);
    // Not an artefact of what was merged: the same lines, in another order.
    let sorted = |t: &str| {
        let mut lines: Vec<&str> = t.lines().collect();
        lines.sort();
        lines.join("\n")
    };
    assert_eq!(sorted(&text), sorted(&other));
    assert!(
        text == other,
        "the two reports list the same lines in another order"
    );
}
