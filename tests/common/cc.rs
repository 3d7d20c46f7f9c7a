//! Linking an object with a C driver by the host's `cc` and running it, for the tests of
//! `MergingModule`'s objects (included on its own by each of them).

use std::io::Write as _;
use std::process::Command;

/// Links `object` with the C `driver` by the host's `cc`, runs the program and returns what it
/// printed; None (with a note) when there is no `cc`, which under CI is a failure.
pub fn link_and_run(object: &[u8], driver: &str) -> Option<String> {
    let has_cc = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cc {
        assert!(std::env::var_os("CI").is_none(), "CI needs cc");
        // Past the test harness's capture, so that `cargo test` shows it.
        let _ = writeln!(std::io::stderr(), "note: skipping: cc is not installed");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (source, object_path) = (dir.path().join("driver.c"), dir.path().join("merged.o"));
    std::fs::write(&source, driver).unwrap();
    std::fs::write(&object_path, object).unwrap();
    let exe = dir.path().join("program");
    let status = Command::new("cc")
        .arg(&source)
        .arg(&object_path)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success(), "{driver}");
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(String::from_utf8(out.stdout).unwrap())
}
