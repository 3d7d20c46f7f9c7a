//! hostile8: global merging across units built with other code generation flags.
//!
//! Two units hold the same float function; one is compiled with
//! `enable_nan_canonicalization`, which changes the NaNs the code returns. The shared body each
//! unit emits (a weak definition the linker keeps one copy of) must not be one symbol then:
//! whichever copy the linker kept, the other unit's function would return the other NaNs.
//! With the same flags, the units do share one symbol (the check can fail).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

fn unit(name: &str) -> String {
    format!(
        "function %{name}(f64, f64) -> f64 system_v {{
block0(v0: f64, v1: f64):
    v2 = fsub v0, v1
    v3 = fdiv v2, v2
    v4 = fadd v3, v0
    v5 = fmul v4, v1
    v6 = fsub v5, v3
    v7 = fadd v6, v6
    v8 = fmul v7, v4
    v9 = fadd v8, v1
    return v9
}}
"
    )
}

fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The weak `clifmerge_` symbol of `object`.
fn shared_symbol(object: &[u8]) -> String {
    use object::{Object as _, ObjectSymbol as _};
    let file = object::File::parse(object).unwrap();
    let names: Vec<String> = file
        .symbols()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| n.starts_with("clifmerge_"))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

/// The shared body's symbol of units `a` and `b`, each compiled with its extra arguments.
fn symbols(a_args: &[&str], b_args: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("a.clif"), unit("fa")).unwrap();
    std::fs::write(dir.join("b.clif"), unit("fb")).unwrap();
    run(dir, &["summarize", "a.clif", "-o", "a.sum"]);
    run(dir, &["summarize", "b.clif", "-o", "b.sum"]);
    run(dir, &["combine", "a.sum", "b.sum", "-o", "all.sum"]);
    let mut a = vec!["a.clif", "--summary", "all.sum", "-o", "a.o"];
    a.extend_from_slice(a_args);
    let mut b = vec!["b.clif", "--summary", "all.sum", "-o", "b.o"];
    b.extend_from_slice(b_args);
    run(dir, &a);
    run(dir, &b);
    (
        shared_symbol(&std::fs::read(dir.join("a.o")).unwrap()),
        shared_symbol(&std::fs::read(dir.join("b.o")).unwrap()),
    )
}

#[test]
fn units_with_other_flags_never_share_a_body_symbol() {
    let (a, b) = symbols(&["--set", "enable_nan_canonicalization"], &[]);
    assert_ne!(a, b);
    let (a, b) = symbols(&["--opt-level", "none"], &[]);
    assert_ne!(a, b);
    let (a, b) = symbols(&["--set", "has_avx"], &[]);
    assert_ne!(a, b);
    let (a, b) = symbols(
        &["--set", "enable_nan_canonicalization"],
        &["--set", "enable_nan_canonicalization"],
    );
    assert_eq!(a, b, "the same flags share one symbol");
}
