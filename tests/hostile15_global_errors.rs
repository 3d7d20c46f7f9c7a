//! hostile15: errors of global merging's round 2. A unit's function that Cranelift cannot
//! compile for the target (`i128` arguments without `enable_llvm_abi_extensions`) and that is
//! equal to a function of another unit becomes a shared body, `%clifmerge_…`: the error must
//! still say where the code came from (FILE:LINE, as for any other function), and the outputs
//! asked for must stay as they were.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

fn unit(suffix: &str) -> String {
    format!(
        "function %ok{suffix}(i64) -> i64 {{
block0(v0: i64):
    return v0
}}

function %bad{suffix}(i128, i128) -> i128 {{
block0(v0: i128, v1: i128):
    v2 = udiv v0, v1
    return v2
}}
"
    )
}

fn clif_merge(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// A directory with units `a.clif` and `b.clif` (equal `%bad`, `%bad_b`) and their combined
/// summary `all.sum`.
fn units() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    std::fs::write(path.join("a.clif"), unit("")).unwrap();
    std::fs::write(path.join("b.clif"), unit("_b")).unwrap();
    for args in [
        &["summarize", "a.clif", "-o", "a.sum"][..],
        &["summarize", "b.clif", "-o", "b.sum"],
        &["combine", "a.sum", "b.sum", "-o", "all.sum"],
    ] {
        let out = clif_merge(path, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    dir
}

const ROUND_2: [&str; 8] = [
    "a.clif",
    "--summary",
    "all.sum",
    "--target",
    "x86_64",
    "-o",
    "out.o",
    "--emit-clif",
];

/// Without a summary the same failure names `%bad` and `a.clif:6`; through a summary it names
/// only the shared body, which is in no file.
/// (Fixed: a shared body keeps the origin of the member it is made from.)
#[test]
fn a_shared_body_that_cannot_compile_is_reported_with_its_file_and_line() {
    let dir = units();
    let alone = clif_merge(dir.path(), &["a.clif", "--target", "x86_64", "-o", "out.o"]);
    let alone = String::from_utf8_lossy(&alone.stderr).into_owned();
    assert!(alone.contains("a.clif:6"), "{alone}");
    let out = clif_merge(dir.path(), &[&ROUND_2[..], &["out.clif"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a.clif:6"), "no file and line: {stderr}");
}

/// The failing round 2 writes none of its outputs, nor touches the ones already there.
#[test]
fn a_round_2_that_cannot_compile_a_shared_body_leaves_every_output_alone() {
    let dir = units();
    let path = dir.path();
    for file in ["out.o", "out.clif"] {
        std::fs::write(path.join(file), "old").unwrap();
    }
    let extra = [
        "out.clif",
        "--size-report",
        "sizes.html",
        "--report",
        "json",
    ];
    let out = clif_merge(path, &[&ROUND_2[..], &extra].concat());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("clifmerge_"),
        "not the shared body's failure: {stderr}"
    );
    for file in ["out.o", "out.clif"] {
        assert_eq!(std::fs::read_to_string(path.join(file)).unwrap(), "old");
    }
    assert!(!path.join("sizes.html").exists());
}
