//! `../shared/tools/genmod.py`, the shared generator of modules with planted classes: found
//! beside the repository or skipped with a note (under CI, where `CI` is set, its absence fails).
//! Used by the scale and global merging tests (which include this file on its own).

use std::path::{Path, PathBuf};
use std::process::Command;
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

/// genmod, when `../shared` is beside the repository.
pub fn genmod() -> Option<PathBuf> {
    let genmod = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/genmod.py");
    if genmod.exists() {
        return Some(genmod);
    }
    let why = format!(
        "{} is missing (../shared is not beside the clone)",
        genmod.display()
    );
    assert!(std::env::var_os("CI").is_none(), "under CI: {why}");
    let _ = writeln!(std::io::stderr(), "note: skipping: {why}");
    None
}

/// Runs genmod with `args` into `dir`; returns the `.clif` and `.expect.json` paths and the
/// command line (for messages).
pub fn generate(genmod: &Path, dir: &Path, args: &[&str]) -> (PathBuf, PathBuf, String) {
    let clif = dir.join("m.clif");
    let ll = dir.join("m.ll");
    let expect = dir.join("m.expect.json");
    let mut cmd = Command::new("python3");
    cmd.arg(genmod)
        .args(args)
        .arg("--out-ll")
        .arg(&ll)
        .arg("--out-clif")
        .arg(&clif)
        .arg("--out-expect")
        .arg(&expect);
    let line = format!("python3 ../shared/tools/genmod.py {}", args.join(" "));
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{line}` (python3 is needed): {e}"));
    assert!(
        out.status.success(),
        "`{line}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (clif, expect, line)
}
