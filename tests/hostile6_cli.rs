//! Hostile command lines (sixth pass): a second run on the merged CLIF, with the options of the
//! first, must merge nothing new and give the same CLIF, byte for byte, and an object whose
//! symbols have the linkage of the first run's.

use object::{Object as _, ObjectSymbol as _};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// Two exported functions with one body and a local caller, under `--default-linkage local`:
/// the directives say which are exported.
const EXPORTED_UNDER_A_LOCAL_DEFAULT: &str = "; linkage: %h1 export
; linkage: %h2 export
function %h1(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 7
    v2 = imul v0, v1
    return v2
}

function %h2(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 7
    v2 = imul v0, v1
    return v2
}

function %user(i32) -> i32 {
    fn0 = %h2(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}
";

fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The global function symbols of an object.
fn global_functions(bytes: &[u8]) -> Vec<String> {
    let file = object::File::parse(bytes).unwrap();
    let mut names: Vec<String> = (file.symbols())
        .filter(|s| s.is_global() && s.is_definition())
        .map(|s| s.name().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// `--emit-clif` writes a linkage directive only for functions that are not exported, as if the
/// output were always read with `--default-linkage export`. Read again with the options of the
/// first run (`--default-linkage local`, or `hidden`), the exported `%h1` and `%h2` become
/// local (or hidden): the second CLIF differs, and the object no longer exports them, so a
/// program calling `h1` no longer links.
#[test]
fn a_second_run_with_a_local_default_keeps_exported_functions_exported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.clif"), EXPORTED_UNDER_A_LOCAL_DEFAULT).unwrap();
    for default in ["local", "hidden"] {
        let first = ["--default-linkage", default, "--emit-clif", "one.clif"];
        run(d, &[&["in.clif"][..], &first, &["-o", "one.o"]].concat());
        let second = ["--default-linkage", default, "--emit-clif", "two.clif"];
        let report = run(d, &[&["one.clif"][..], &second, &["-o", "two.o"]].concat());
        assert!(report.contains("merged: 0,"), "{default}: {report}");
        let read = |name: &str| std::fs::read(d.join(name)).unwrap();
        let exported = global_functions(&read("one.o"));
        assert!(exported.contains(&"h1".to_string()), "{exported:?}");
        assert_eq!(
            global_functions(&read("two.o")),
            exported,
            "--default-linkage {default}: the second run's object exports other symbols"
        );
        assert!(
            read("one.clif") == read("two.clif"),
            "--default-linkage {default}: the second CLIF differs:\n{}",
            String::from_utf8_lossy(&read("two.clif"))
        );
    }
}

/// Six members of one similar group whose constants go to the stack, eight i64 parameters
/// each: with `-o` the judge takes them with read-only records of their constants.
fn wide_members() -> String {
    let mut text = String::new();
    let types = ["i64"; 8].join(", ");
    let params: Vec<String> = (0..8).map(|i| format!("v{i}: i64")).collect();
    for m in 1..=6u64 {
        text += &format!(
            "function %k{m}({types}) -> i64 system_v {{\nblock0({}):\n",
            params.join(", ")
        );
        let mut acc = "v0".to_string();
        for k in 0..6u64 {
            let n = 100 + 3 * k;
            let constant = m.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k << 17);
            text += &format!(
                "    v{n} = iconst.i64 {}\n    v{a} = imul {acc}, v{n}\n    v{b} = iadd v{a}, v{k}\n",
                constant as i64,
                a = n + 1,
                b = n + 2,
            );
            acc = format!("v{}", n + 2);
        }
        text += &format!("    return {acc}\n}}\n\n");
    }
    text
}

/// `--verify` checks the merge it is given; it must not change it. With `-o --similar` the
/// judge takes a group with read-only records; `--verify` (like `--emit-clif`) turns records
/// off, the judge then finds stack arguments not worth it, and the object is another one: the
/// group is not merged at all, and the object written without `--verify`, the one with
/// records, is never what `--verify` checked.
#[test]
fn verify_does_not_change_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("k.clif"), wide_members()).unwrap();
    let plain = run(
        d,
        &["k.clif", "--similar", "-o", "plain.o", "--report", "text"],
    );
    assert!(
        plain.contains("read-only records"),
        "records taken: {plain}"
    );
    let verified = run(
        d,
        &[
            "k.clif",
            "--similar",
            "-o",
            "verified.o",
            "--verify",
            "--report",
            "text",
        ],
    );
    let read = |name: &str| std::fs::read(d.join(name)).unwrap();
    assert!(
        read("plain.o") == read("verified.o"),
        "the object differs with --verify:\nwithout: {plain}\nwith: {verified}"
    );
}

/// `--threads` says "small modules use one thread whatever this says", yet every run builds a
/// pool of that many threads first: `--threads 1000` takes seconds on six functions in a debug
/// build, `--threads 10000` minutes, `--threads 100000` (which clap accepts) does not end in
/// reasonable time. The run must take about what `--threads 1` takes (here: end within 20 s,
/// or the child is killed).
#[test]
fn a_large_thread_count_on_a_small_module_ends_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("k.clif"), wide_members()).unwrap();
    let mut child = Command::new(BIN)
        .args(["k.clif", "--threads", "100000", "-o", "k.o"])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "--threads 100000 on six functions: {status:?} after {:?}",
        start.elapsed()
    );
}
