//! Integration tests of the `clif-merge` command: the real binary, run in temporary folders.
//!
//! What is checked is the command-line contract: exit codes, messages naming the file and line of
//! bad input (and never a panic), no output file at all when anything fails, the exact shape of
//! the JSON report, the text report, `--time-passes`, `--emit-clif` round trips, `.clif.xz`
//! input, and results that do not depend on the order of functions or files.

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The outcome of one run of the binary.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn from_output(out: Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Asserts success and that nothing panicked; returns self for chaining.
    fn ok(self) -> Run {
        assert_eq!(
            self.code,
            Some(0),
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "stderr: {}", self.stderr);
        self
    }

    /// The stdout parsed as exactly one JSON value.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON value: {e}\n{}", self.stdout))
    }
}

/// Runs the binary in `dir` with `args`.
fn run_in(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    Run::from_output(out)
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary folder")
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("writing a test input");
    path
}

fn xz_compress(bytes: &[u8]) -> Vec<u8> {
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn example_basic() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.clif");
    std::fs::read_to_string(path).expect("examples/basic.clif")
}

/// A function `%name(i32) -> i32` returning `v0 + k`, with value numbers shifted by `shift` (so
/// that equal functions do not have equal text).
fn add_fn(name: &str, k: i32, shift: u32) -> String {
    let (a, b, c) = (shift, shift + 1, shift + 2);
    format!(
        "function {name}(i32) -> i32 {{\nblock0(v{a}: i32):\n    v{b} = iconst.i32 {k}\n    \
         v{c} = iadd v{a}, v{b}\n    return v{c}\n}}\n"
    )
}

/// Files of a bad-input case: (name, contents). `expect_input_error` runs them with an
/// `--emit-clif` target in an existing folder and checks everything the contract promises.
struct BadCase<'a> {
    files: Vec<(&'a str, Vec<u8>)>,
    /// The command-line order of the files (defaults to `files` order).
    order: Option<Vec<&'a str>>,
    extra_args: Vec<&'a str>,
}

impl<'a> BadCase<'a> {
    fn one(name: &'a str, text: impl Into<Vec<u8>>) -> Self {
        BadCase {
            files: vec![(name, text.into())],
            order: None,
            extra_args: Vec::new(),
        }
    }

    fn files(files: Vec<(&'a str, Vec<u8>)>) -> Self {
        BadCase {
            files,
            order: None,
            extra_args: Vec::new(),
        }
    }

    fn order(mut self, order: &[&'a str]) -> Self {
        self.order = Some(order.to_vec());
        self
    }

    fn args(mut self, args: &[&'a str]) -> Self {
        self.extra_args = args.to_vec();
        self
    }

    /// Runs the case; asserts a clean failure, and that stderr names `file` and `line`
    /// (`line == 0`: the file as a whole, no line). Returns stderr for further checks.
    #[track_caller]
    fn expect_error(&self, file: &str, line: usize) -> String {
        let dir = tempdir();
        for (name, bytes) in &self.files {
            if let Some(parent) = Path::new(name).parent() {
                std::fs::create_dir_all(dir.path().join(parent)).unwrap();
            }
            write(dir.path(), name, bytes);
        }
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let order: Vec<&str> = match &self.order {
            Some(o) => o.clone(),
            None => self.files.iter().map(|(n, _)| *n).collect(),
        };
        for report in ["json", "text"] {
            let mut args: Vec<&str> = order.clone();
            args.extend(["--report", report, "--emit-clif", "out/merged.clif"]);
            args.extend(self.extra_args.iter().copied());
            let run = run_in(dir.path(), &args);
            let context = format!(
                "args {args:?}\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
                run.code, run.stdout, run.stderr
            );
            assert!(run.code.is_some(), "killed by a signal\n{context}");
            assert_ne!(run.code, Some(0), "expected failure\n{context}");
            assert!(!run.stderr.contains("panicked"), "panicked\n{context}");
            assert!(
                !run.stderr.contains("RUST_BACKTRACE"),
                "panicked\n{context}"
            );
            if line == 0 {
                assert!(
                    run.stderr.contains(file),
                    "stderr must name {file}\n{context}"
                );
            } else {
                let at = format!("{file}:{line}:");
                assert!(
                    run.stderr.contains(&at),
                    "stderr must contain `{at}`\n{context}"
                );
            }
            assert!(
                run.stdout.is_empty(),
                "nothing on stdout on failure\n{context}"
            );
            let left: Vec<_> = std::fs::read_dir(dir.path().join("out"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(
                left.is_empty(),
                "no output file (nor temporary) may be written on failure: {left:?}\n{context}"
            );
            if report == "text" {
                return run.stderr;
            }
        }
        unreachable!()
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input: every case fails cleanly, names file and line, and writes nothing
// ---------------------------------------------------------------------------------------------

#[test]
fn syntax_error_names_file_and_line() {
    let text = "; a comment\n\nfunction %f(i32) -> i32 {\nblock0(v0: i32):\n    \
                v1 = frobnicate v0\n    return v1\n}\n";
    let err = BadCase::one("syntax.clif", text).expect_error("syntax.clif", 5);
    assert!(err.contains("frobnicate"), "{err}");
}

#[test]
fn syntax_error_in_second_file_names_that_file() {
    let good = add_fn("%good", 1, 0);
    let bad = format!(
        "{}\nfunction %g(i32) -> i32 {{\nblock0(v0: i32):\n    return v0 v0 v0\n}}\n",
        add_fn("%h", 2, 0)
    );
    // %h takes 6 lines, then an empty line: the bad line is line 10.
    BadCase::files(vec![("a.clif", good.into()), ("b.clif", bad.into())])
        .expect_error("b.clif", 10);
}

#[test]
fn syntax_error_in_subfolder_names_the_path() {
    let text =
        "function %f(i32) -> i32 {\nblock0(v0: i32):\n    v1 = iadd v0, 42\n    return v1\n}\n";
    let err = BadCase::one("sub/dir/bad.clif", text).expect_error("sub/dir/bad.clif", 3);
    assert!(!err.is_empty());
}

#[test]
fn verifier_error_names_file_line_and_function() {
    let text = format!(
        "{}\nfunction %bad(i32) -> i32 {{\nblock0(v0: i32):\n    v1 = iconst.i64 1\n    \
         v2 = iadd v0, v1\n    return v2\n}}\n",
        add_fn("%ok", 1, 0)
    );
    // %ok: lines 1-6, empty line 7, %bad from line 8; the iadd is on line 11.
    let err = BadCase::one("verify.clif", text).expect_error("verify.clif", 11);
    assert!(
        err.contains("%bad"),
        "the message names the function: {err}"
    );
}

#[test]
fn verifier_error_without_terminator_names_function() {
    let text = "\n\nfunction %noterm(i32) -> i32 {\nblock0(v0: i32):\n    v1 = iconst.i32 1\n}\n";
    // The block without a terminator starts on line 4.
    let err = BadCase::one("noterm.clif", text).expect_error("noterm.clif", 4);
    assert!(err.contains("%noterm"), "{err}");
}

#[test]
fn verifier_error_bad_block_reference() {
    let text = "function %jumps(i32) -> i32 {\nblock0(v0: i32):\n    jump block7\n}\n";
    let err = BadCase::one("jump.clif", text).expect_error("jump.clif", 3);
    assert!(err.contains("%jumps"), "{err}");
}

#[test]
fn verifier_error_in_second_file() {
    let bad = "function %bad2() {\nblock0:\n    v0 = iconst.i32 1\n    v1 = iconst.i64 2\n    \
               v2 = iadd v0, v1\n    return\n}\n";
    let err = BadCase::files(vec![
        ("one.clif", add_fn("%one", 1, 0).into()),
        ("two.clif", bad.into()),
    ])
    .expect_error("two.clif", 5);
    assert!(err.contains("%bad2"), "{err}");
}

#[test]
fn missing_file_is_named() {
    let dir = tempdir();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    write(dir.path(), "ok.clif", add_fn("%f", 1, 0));
    let run = run_in(
        dir.path(),
        &["ok.clif", "no-such-file.clif", "--emit-clif", "out/m.clif"],
    );
    assert_ne!(run.code, Some(0));
    assert!(run.code.is_some());
    assert!(run.stderr.contains("no-such-file.clif"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(!dir.path().join("out/m.clif").exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join("out")).unwrap().count(),
        0
    );
}

#[test]
fn missing_xz_file_is_named() {
    let dir = tempdir();
    let run = run_in(dir.path(), &["gone.clif.xz", "--report", "json"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("gone.clif.xz"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"));
    assert!(run.stdout.is_empty());
}

#[test]
fn unreadable_input_a_folder_is_named() {
    let dir = tempdir();
    std::fs::create_dir(dir.path().join("folder.clif")).unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let run = run_in(dir.path(), &["folder.clif", "--emit-clif", "out/m.clif"]);
    assert_ne!(run.code, Some(0));
    assert!(run.code.is_some());
    assert!(run.stderr.contains("folder.clif"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"));
    assert!(!dir.path().join("out/m.clif").exists());
}

#[test]
fn name_defined_twice_in_one_file() {
    let text = format!(
        "{}\n{}\n{}",
        add_fn("%a", 1, 0),
        add_fn("%b", 2, 0),
        add_fn("%a", 3, 0)
    );
    // Each function is 6 lines plus an empty line: the second %a starts on line 15.
    let err = BadCase::one("dup.clif", text).expect_error("dup.clif", 15);
    assert!(err.contains("%a"), "{err}");
    assert!(
        err.contains("dup.clif:1"),
        "the first definition is named too: {err}"
    );
}

#[test]
fn name_defined_in_two_files_names_both_either_order() {
    let first = add_fn("%shared", 1, 0);
    let second = format!("{}\n{}", add_fn("%other", 2, 0), add_fn("%shared", 9, 3));
    let case = || {
        BadCase::files(vec![
            ("first.clif", first.clone().into()),
            ("second.clif", second.clone().into()),
        ])
    };
    // second.clif after first.clif: the clash is at second.clif:8, the first at first.clif:1.
    let err = case().expect_error("second.clif", 8);
    assert!(err.contains("first.clif:1"), "both files are named: {err}");
    assert!(err.contains("%shared"), "{err}");
    // The other order: the clash is at first.clif:1, the first definition at second.clif:8.
    let err = case()
        .order(&["second.clif", "first.clif"])
        .expect_error("first.clif", 1);
    assert!(err.contains("second.clif:8"), "both files are named: {err}");
    assert!(err.contains("%shared"), "{err}");
}

#[test]
fn user_name_defined_in_two_files() {
    let f = "function u0:7() {\nblock0:\n    return\n}\n";
    let err = BadCase::files(vec![
        ("x.clif", f.into()),
        ("y.clif", format!("\n\n{f}").into()),
    ])
    .expect_error("y.clif", 3);
    assert!(err.contains("u0:7") && err.contains("x.clif:1"), "{err}");
}

#[test]
fn same_file_given_twice_is_a_duplicate() {
    let err = BadCase::one("twice.clif", add_fn("%t", 1, 0))
        .order(&["twice.clif", "twice.clif"])
        .expect_error("twice.clif", 1);
    assert!(err.contains("%t"), "{err}");
}

#[test]
fn linkage_directive_unknown_kind() {
    let text = format!(
        "; comment\n; linkage: %f sideways\n\n{}",
        add_fn("%f", 1, 0)
    );
    let err = BadCase::one("link.clif", text).expect_error("link.clif", 2);
    assert!(err.contains("sideways"), "{err}");
}

#[test]
fn linkage_directive_malformed() {
    let text = format!("{}\n; linkage: %f\n", add_fn("%f", 1, 0));
    BadCase::one("link.clif", text).expect_error("link.clif", 8);
    let text = format!("{}\n\n; linkage: %f local extra\n", add_fn("%f", 1, 0));
    BadCase::one("link.clif", text).expect_error("link.clif", 9);
    let text = format!("; linkage: f local\n{}", add_fn("%f", 1, 0));
    BadCase::one("link.clif", text).expect_error("link.clif", 1);
}

#[test]
fn linkage_directive_naming_no_function() {
    let text = format!("{}\n\n\n; linkage: %nobody local\n", add_fn("%f", 1, 0));
    let err = BadCase::one("link.clif", text).expect_error("link.clif", 10);
    assert!(err.contains("%nobody"), "{err}");
}

#[test]
fn linkage_directive_naming_no_function_in_second_file() {
    let err = BadCase::files(vec![
        ("a.clif", add_fn("%f", 1, 0).into()),
        ("b.clif", "; just comments\n; linkage: %g hidden\n".into()),
    ])
    .expect_error("b.clif", 2);
    assert!(err.contains("%g"), "{err}");
}

#[test]
fn linkage_directive_conflicting_names_both_lines() {
    let text = format!(
        "; linkage: %f local\n{}\n; linkage: %f hidden\n",
        add_fn("%f", 1, 0)
    );
    // Directive on line 1, %f on lines 2-7, an empty line 8, the clash on line 9.
    let err = BadCase::one("conf.clif", text).expect_error("conf.clif", 9);
    assert!(
        err.contains("conf.clif:1"),
        "the earlier directive is named: {err}"
    );
}

#[test]
fn alias_directive_malformed() {
    let text = format!("{}\n; alias: %g %f\n", add_fn("%f", 1, 0));
    BadCase::one("alias.clif", text).expect_error("alias.clif", 8);
    let text = format!("; alias: %g =\n{}", add_fn("%f", 1, 0));
    BadCase::one("alias.clif", text).expect_error("alias.clif", 1);
    let text = format!("\n; alias: bad-name = %f\n{}", add_fn("%f", 1, 0));
    BadCase::one("alias.clif", text).expect_error("alias.clif", 2);
    let text = format!("\n\n;; alias: %g = %\n{}", add_fn("%f", 1, 0));
    BadCase::one("alias.clif", text).expect_error("alias.clif", 3);
}

#[test]
fn alias_directive_naming_no_function() {
    let text = format!("{}\n; alias: %g = %nowhere\n", add_fn("%f", 1, 0));
    let err = BadCase::one("alias.clif", text).expect_error("alias.clif", 8);
    assert!(err.contains("%nowhere"), "{err}");
}

#[test]
fn alias_of_an_alias_is_rejected() {
    let text = format!("; alias: %g = %f\n; alias: %h = %g\n{}", add_fn("%f", 1, 0));
    BadCase::one("alias.clif", text).expect_error("alias.clif", 2);
}

#[test]
fn alias_clashing_with_a_function_in_another_file() {
    let err = BadCase::files(vec![
        (
            "a.clif",
            format!("; alias: %g = %f\n{}", add_fn("%f", 1, 0)).into(),
        ),
        ("b.clif", add_fn("%g", 2, 0).into()),
    ])
    .expect_error("a.clif", 1);
    assert!(err.contains("%g"), "{err}");
}

#[test]
fn non_utf8_names_the_line() {
    let mut bytes = add_fn("%f", 1, 0).into_bytes(); // 6 lines
    bytes.extend_from_slice(b"\n; caf\xe9 latin-1 comment\n");
    bytes.extend_from_slice(add_fn("%g", 2, 0).as_bytes());
    BadCase::one("latin1.clif", bytes).expect_error("latin1.clif", 8);
}

#[test]
fn non_utf8_on_first_line() {
    BadCase::one("bin.clif", b"\xff\xfe\x00\x01garbage".to_vec()).expect_error("bin.clif", 1);
}

#[test]
fn non_utf8_inside_xz_names_the_line() {
    let mut bytes = b"; ok\n; ok\n; \xc3\x28 bad\n".to_vec();
    bytes.extend_from_slice(add_fn("%f", 1, 0).as_bytes());
    BadCase::one("bad.clif.xz", xz_compress(&bytes)).expect_error("bad.clif.xz", 3);
}

#[test]
fn nul_bytes_are_an_error_not_a_crash() {
    BadCase::one("nul.clif", b"\0\0\0\0\n".to_vec()).expect_error("nul.clif", 1);
    let mut bytes = add_fn("%f", 1, 0).into_bytes();
    bytes.extend_from_slice(b"\0\0");
    BadCase::one("nul.clif", bytes).expect_error("nul.clif", 7);
}

#[test]
fn invalid_character_names_its_line() {
    // `$` is not a CLIF token: the error is on line 3, whatever follows it.
    let text = format!(
        "function %a(i32) -> i32 {{\nblock0(v0: i32):\n    v1 = iadd v0, v0 $\n    \
         return v1\n}}\n\n{}",
        add_fn("%b", 1, 0)
    );
    BadCase::one("dollar.clif", text).expect_error("dollar.clif", 3);
    // A byte-order mark is skipped at the start of a file only (see
    // `standard_input_and_a_byte_order_mark`); anywhere else it is a bad character.
    let text = format!("{}\u{feff}{}", add_fn("%f", 1, 0), add_fn("%g", 1, 0));
    BadCase::one("bom.clif", text).expect_error("bom.clif", 7);
    // A no-break space on line 3, before the first function.
    let text = format!(
        "; c\n\n\u{a0}\n{}\n{}",
        add_fn("%f", 1, 0),
        add_fn("%g", 2, 0)
    );
    BadCase::one("nbsp.clif", text).expect_error("nbsp.clif", 3);
}

#[test]
fn text_garbage() {
    BadCase::one("junk.clif", "hello world ( ]\n").expect_error("junk.clif", 1);
    BadCase::one("junk.clif", "\n\n\n}}}}{{{{\n").expect_error("junk.clif", 4);
    BadCase::one("junk.clif", "function\n").expect_error("junk.clif", 1);
}

#[test]
fn truncated_mid_line() {
    let text = "function %f(i32) -> i32 {\nblock0(v0: i32):\n    v1 = iadd v0";
    BadCase::one("trunc.clif", text).expect_error("trunc.clif", 3);
    let text = "function %f(i32) -> i32 {\nbloc";
    BadCase::one("trunc.clif", text).expect_error("trunc.clif", 2);
}

#[test]
fn truncated_xz_is_named() {
    let packed = xz_compress(example_basic().as_bytes());
    let half = packed[..packed.len() / 2].to_vec();
    let err = BadCase::one("half.clif.xz", half).expect_error("half.clif.xz", 0);
    assert!(!err.is_empty());
    let mut short = packed.clone();
    short.truncate(packed.len() - 4);
    BadCase::one("short.clif.xz", short).expect_error("short.clif.xz", 0);
}

#[test]
fn garbage_xz_is_named() {
    let junk: Vec<u8> = (0u32..300)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    BadCase::one("junk.clif.xz", junk).expect_error("junk.clif.xz", 0);
    // Plain CLIF text with an .xz name is not xz.
    BadCase::one("plain.clif.xz", add_fn("%f", 1, 0)).expect_error("plain.clif.xz", 0);
}

#[test]
fn an_error_in_any_file_writes_nothing_even_when_other_files_are_fine() {
    // Two good files and a bad third: still no output.
    BadCase::files(vec![
        ("a.clif", add_fn("%a", 1, 0).into()),
        ("b.clif", add_fn("%b", 1, 0).into()),
        ("c.clif", "function %c() {\nblock0:\n    oops\n}\n".into()),
    ])
    .args(&["--mode", "aliases", "--time-passes"])
    .expect_error("c.clif", 3);
}

#[test]
fn output_in_missing_folder_fails_before_anything() {
    let dir = tempdir();
    write(dir.path(), "ok.clif", example_basic());
    for report in ["json", "text"] {
        let run = run_in(
            dir.path(),
            &[
                "ok.clif",
                "--report",
                report,
                "--emit-clif",
                "nowhere/deeper/out.clif",
            ],
        );
        assert_ne!(run.code, Some(0), "{}", run.stderr);
        assert!(run.code.is_some());
        assert!(
            run.stderr.contains("nowhere/deeper/out.clif"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert!(
            run.stdout.is_empty(),
            "no report on failure: {}",
            run.stdout
        );
        assert!(!dir.path().join("nowhere").exists(), "no folder is created");
    }
}

#[test]
fn output_path_that_is_a_folder_fails_and_leaves_no_temporary() {
    let dir = tempdir();
    write(dir.path(), "ok.clif", example_basic());
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    let run = run_in(dir.path(), &["ok.clif", "--emit-clif", "taken"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("taken"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"));
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["ok.clif", "taken"],
        "no temporary file is left behind"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("taken")).unwrap().count(),
        0
    );
}

#[test]
fn failure_leaves_an_existing_output_file_untouched() {
    let dir = tempdir();
    write(
        dir.path(),
        "bad.clif",
        "function %f() {\nblock0:\n    bogus\n}\n",
    );
    write(dir.path(), "old.clif", "; the previous output\n");
    let run = run_in(dir.path(), &["bad.clif", "--emit-clif", "old.clif"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("bad.clif:3:"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.clif")).unwrap(),
        "; the previous output\n"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn every_prefix_of_a_module_fails_cleanly_or_succeeds() {
    // Truncate the example at every byte: never a panic, always a file:line message on failure,
    // and output only on success.
    let text = example_basic();
    let bytes = text.as_bytes();
    let workers = 4;
    std::thread::scope(|s| {
        for w in 0..workers {
            s.spawn(move || {
                let dir = tempdir();
                for cut in (w..=bytes.len()).step_by(workers) {
                    write(dir.path(), "cut.clif", &bytes[..cut]);
                    let _ = std::fs::remove_file(dir.path().join("o.clif"));
                    let run = run_in(
                        dir.path(),
                        &["cut.clif", "--report", "json", "--emit-clif", "o.clif"],
                    );
                    let context = format!("cut at {cut}\nstderr: {}", run.stderr);
                    assert!(!run.stderr.contains("panicked"), "{context}");
                    match run.code {
                        Some(0) => {
                            run.json();
                            assert!(dir.path().join("o.clif").exists(), "{context}");
                        }
                        Some(_) => {
                            assert!(run.stderr.contains("cut.clif:"), "{context}");
                            assert!(!dir.path().join("o.clif").exists(), "{context}");
                            assert!(run.stdout.is_empty(), "{context}");
                        }
                        None => panic!("killed by a signal: {context}"),
                    }
                }
            });
        }
    });
}

#[test]
fn bad_command_lines_fail_without_panicking() {
    let dir = tempdir();
    write(dir.path(), "ok.clif", add_fn("%f", 1, 0));
    for args in [
        &[][..],
        &["ok.clif", "--mode", "fastest"][..],
        &["ok.clif", "--default-linkage", "global"][..],
        &["ok.clif", "--report", "yaml"][..],
        &["ok.clif", "--report", "json", "--emit-clif", "-"][..],
    ] {
        let run = run_in(dir.path(), args);
        assert!(
            run.code.is_some() && run.code != Some(0),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
}

// ---------------------------------------------------------------------------------------------
// Good input
// ---------------------------------------------------------------------------------------------

/// Checks the exact shape of a JSON report; returns (functions, merged, classes).
/// The classes of a report: (kept, [(name, by)]).
type Classes = Vec<(String, Vec<(String, String)>)>;

fn check_report_shape(report: &Value) -> (u64, u64, Classes) {
    let obj = report.as_object().expect("the report is an object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["classes", "functions", "merged"], "{report}");
    let functions = obj["functions"]
        .as_u64()
        .expect("functions is an unsigned integer");
    let merged = obj["merged"]
        .as_u64()
        .expect("merged is an unsigned integer");
    let mut classes = Vec::new();
    for class in obj["classes"].as_array().expect("classes is an array") {
        let c = class.as_object().expect("a class is an object");
        let mut keys: Vec<&str> = c.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["kept", "replaced"], "{class}");
        let kept = c["kept"].as_str().expect("kept is a string").to_string();
        assert!(kept.starts_with('%') || kept.starts_with('u'), "{kept}");
        let mut replaced = Vec::new();
        let list = c["replaced"].as_array().expect("replaced is an array");
        assert!(
            !list.is_empty(),
            "a class replaces at least one function: {class}"
        );
        for r in list {
            let r = r.as_object().expect("a replacement is an object");
            let mut keys: Vec<&str> = r.keys().map(String::as_str).collect();
            keys.sort();
            assert_eq!(keys, ["by", "name"]);
            let name = r["name"].as_str().expect("name is a string").to_string();
            let by = r["by"].as_str().expect("by is a string").to_string();
            assert!(
                ["alias", "thunk", "removed"].contains(&by.as_str()),
                "unknown action {by}"
            );
            replaced.push((name, by));
        }
        classes.push((kept, replaced));
    }
    assert!(merged <= functions);
    (functions, merged, classes)
}

#[test]
fn empty_file_is_zero_functions() {
    let dir = tempdir();
    write(dir.path(), "empty.clif", "");
    let run = run_in(
        dir.path(),
        &["empty.clif", "--report", "json", "--emit-clif", "e.clif"],
    )
    .ok();
    assert_eq!(
        run.json(),
        json!({"functions": 0, "merged": 0, "classes": []})
    );
    // The emitted (empty) module reads back.
    let again = run_in(dir.path(), &["e.clif", "--report", "json"]).ok();
    assert_eq!(
        again.json(),
        json!({"functions": 0, "merged": 0, "classes": []})
    );
    // A file of comments only is empty too, and so is an empty .clif.xz.
    write(dir.path(), "comments.clif", "; nothing here\n\n;; really\n");
    write(dir.path(), "empty.clif.xz", xz_compress(b""));
    let run = run_in(
        dir.path(),
        &[
            "comments.clif",
            "empty.clif.xz",
            "empty.clif",
            "--report",
            "json",
        ],
    )
    .ok();
    assert_eq!(
        run.json(),
        json!({"functions": 0, "merged": 0, "classes": []})
    );
}

#[test]
fn json_report_shape_and_content_for_the_example() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let run = run_in(dir.path(), &["basic.clif", "--report", "json"]).ok();
    let report = run.json();
    let (functions, merged, classes) = check_report_shape(&report);
    assert_eq!(functions, 6);
    assert_eq!(merged, 3);
    let total: usize = classes.iter().map(|(_, r)| r.len()).sum();
    assert_eq!(total as u64, merged);
    assert_eq!(
        report,
        json!({
            "functions": 6,
            "merged": 3,
            "classes": [
                {"kept": "%caller1", "replaced": [{"name": "%caller2", "by": "thunk"}]},
                {"kept": "%fact0", "replaced": [{"name": "%fact1", "by": "thunk"}]},
                {"kept": "%helper", "replaced": [{"name": "%helper2", "by": "removed"}]},
            ]
        })
    );
    assert!(run.stderr.is_empty(), "nothing on stderr: {}", run.stderr);
}

#[test]
fn json_report_in_each_mode() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let by_mode = |mode: &str| {
        let run = run_in(
            dir.path(),
            &["basic.clif", "--report", "json", "--mode", mode],
        )
        .ok();
        let report = run.json();
        check_report_shape(&report).2
    };
    let actions = |classes: &Classes| {
        let mut a: Vec<(String, String)> = classes.iter().flat_map(|(_, r)| r.clone()).collect();
        a.sort();
        a
    };
    let p = |n: &str, b: &str| (n.to_string(), b.to_string());
    assert_eq!(
        actions(&by_mode("aliases")),
        [
            p("%caller2", "alias"),
            p("%fact1", "alias"),
            p("%helper2", "removed")
        ]
    );
    assert_eq!(
        actions(&by_mode("thunks")),
        [
            p("%caller2", "thunk"),
            p("%fact1", "thunk"),
            p("%helper2", "thunk")
        ]
    );
}

#[test]
fn json_is_the_only_thing_on_stdout_even_with_time_passes() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let run = run_in(
        dir.path(),
        &[
            "basic.clif",
            "--report",
            "json",
            "--time-passes",
            "--emit-clif",
            "o.clif",
        ],
    )
    .ok();
    check_report_shape(&run.json());
    assert!(run.stdout.trim_start().starts_with('{'));
    assert!(run.stdout.trim_end().ends_with('}'));
}

#[test]
fn text_report() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let text = run_in(dir.path(), &["basic.clif", "--report", "text"])
        .ok()
        .stdout;
    let default = run_in(dir.path(), &["basic.clif"]).ok().stdout;
    assert_eq!(text, default, "text is the default report");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "functions: 6, merged: 3, classes: 3");
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "text is not JSON"
    );
    for name in [
        "%caller1", "%caller2", "%fact0", "%fact1", "%helper", "%helper2",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().any(|w| w == name)),
            "{name} appears in\n{text}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("removed") && l.contains("%helper2")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("thunk") && l.contains("%fact1")),
        "{text}"
    );
}

#[test]
fn text_report_for_empty_module() {
    let dir = tempdir();
    write(dir.path(), "empty.clif", "");
    let run = run_in(dir.path(), &["empty.clif", "--report", "text"]).ok();
    assert_eq!(
        run.stdout.lines().next(),
        Some("functions: 0, merged: 0, classes: 0")
    );
}

#[test]
fn time_passes_prints_pass_time_ms() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    for extra in [
        &["--report", "json"][..],
        &["--report", "text"][..],
        &["--emit-clif", "-"][..],
    ] {
        let mut args = vec!["basic.clif", "--time-passes"];
        args.extend(extra);
        let run = run_in(dir.path(), &args).ok();
        let mut found = 0;
        for line in run.stderr.lines() {
            let (name, value) = line
                .split_once(": ")
                .unwrap_or_else(|| panic!("`name: value` lines only, got {line:?}"));
            let ms: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("not a number in {line:?}"));
            assert!(ms >= 0.0 && ms.is_finite(), "{line}");
            if name == "pass-time-ms" {
                assert!(value.contains('.'), "a float: {line}");
                found += 1;
            }
        }
        assert_eq!(found, 1, "one pass-time-ms line in\n{}", run.stderr);
    }
    // Without the flag, stderr is quiet.
    let run = run_in(dir.path(), &["basic.clif", "--report", "json"]).ok();
    assert!(!run.stderr.contains("pass-time-ms"));
}

#[test]
fn time_passes_on_empty_module() {
    let dir = tempdir();
    write(dir.path(), "empty.clif", "");
    let run = run_in(
        dir.path(),
        &["empty.clif", "--time-passes", "--report", "json"],
    )
    .ok();
    assert!(
        run.stderr.lines().any(|l| l
            .strip_prefix("pass-time-ms: ")
            .is_some_and(|v| v.parse::<f64>().is_ok())),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// --emit-clif
// ---------------------------------------------------------------------------------------------

#[test]
fn emitted_clif_parses_back_and_has_nothing_more_to_merge() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    for mode in ["safe", "aliases", "thunks"] {
        let first = format!("first-{mode}.clif");
        let second = format!("second-{mode}.clif");
        let run = run_in(
            dir.path(),
            &[
                "basic.clif",
                "--mode",
                mode,
                "--report",
                "json",
                "--emit-clif",
                &first,
            ],
        )
        .ok();
        let (functions, merged, _) = check_report_shape(&run.json());
        let again = run_in(
            dir.path(),
            &[
                &first,
                "--mode",
                mode,
                "--report",
                "json",
                "--emit-clif",
                &second,
            ],
        )
        .ok();
        let report = again.json();
        let (functions2, merged2, classes2) = check_report_shape(&report);
        assert_eq!(merged2, 0, "{mode}: nothing more to merge: {report}");
        assert!(classes2.is_empty(), "{mode}: {report}");
        // Every function that kept a body or a thunk is still there.
        let removed_or_aliased = match mode {
            "safe" => 1,    // %helper2 removed
            "aliases" => 3, // two aliases and %helper2 removed
            _ => 0,
        };
        assert_eq!(functions2, functions - removed_or_aliased, "{mode}");
        assert!(merged >= 3);
        // Emitting a merged module again changes nothing.
        let a = std::fs::read(dir.path().join(&first)).unwrap();
        let b = std::fs::read(dir.path().join(&second)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{mode}"
        );
    }
}

#[test]
fn emitted_clif_keeps_linkage_directives() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    run_in(
        dir.path(),
        &["basic.clif", "--mode", "thunks", "--emit-clif", "t.clif"],
    )
    .ok();
    let text = std::fs::read_to_string(dir.path().join("t.clif")).unwrap();
    assert!(
        text.lines().any(|l| l == "; linkage: %helper2 local"),
        "{text}"
    );
    // Read back with --default-linkage local: %helper2 stays local (directive), the rest too.
    let run = run_in(
        dir.path(),
        &[
            "t.clif",
            "--default-linkage",
            "local",
            "--mode",
            "thunks",
            "--report",
            "json",
        ],
    )
    .ok();
    assert_eq!(run.json()["merged"], 0);
}

#[test]
fn emit_to_stdout_is_valid_clif() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let run = run_in(dir.path(), &["basic.clif", "--emit-clif", "-"]).ok();
    assert!(run.stdout.contains("function %caller1"));
    write(dir.path(), "piped.clif", &run.stdout);
    let again = run_in(dir.path(), &["piped.clif", "--report", "json"]).ok();
    assert_eq!(again.json()["merged"], 0);
    // With a text report, the report is comments inside the CLIF.
    let run = run_in(
        dir.path(),
        &["basic.clif", "--emit-clif", "-", "--report", "text"],
    )
    .ok();
    assert!(
        run.stdout.lines().any(|l| l.starts_with("; functions: 6")),
        "{}",
        run.stdout
    );
    write(dir.path(), "piped2.clif", &run.stdout);
    run_in(dir.path(), &["piped2.clif", "--report", "json"]).ok();
}

#[test]
fn aliases_mode_writes_alias_directives_that_survive_a_round_trip() {
    let dir = tempdir();
    let text = format!("{}\n{}", add_fn("%f", 7, 0), add_fn("%g", 7, 10));
    write(dir.path(), "pair.clif", text);
    let run = run_in(
        dir.path(),
        &[
            "pair.clif",
            "--mode",
            "aliases",
            "--report",
            "json",
            "--emit-clif",
            "a1.clif",
        ],
    )
    .ok();
    assert_eq!(
        run.json(),
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%f", "replaced": [{"name": "%g", "by": "alias"}]}]})
    );
    let a1 = std::fs::read_to_string(dir.path().join("a1.clif")).unwrap();
    assert!(a1.lines().any(|l| l == "; alias: %g = %f"), "{a1}");
    assert!(!a1.contains("function %g"), "an alias has no body: {a1}");
    // Read it back (in each mode) and emit again: the alias is kept, the text is identical.
    for mode in ["aliases", "safe", "thunks"] {
        let out = format!("a2-{mode}.clif");
        let run = run_in(
            dir.path(),
            &[
                "a1.clif",
                "--mode",
                mode,
                "--report",
                "json",
                "--emit-clif",
                &out,
            ],
        )
        .ok();
        assert_eq!(
            run.json(),
            json!({"functions": 1, "merged": 0, "classes": []})
        );
        let a2 = std::fs::read_to_string(dir.path().join(&out)).unwrap();
        assert_eq!(a1, a2, "{mode}");
    }
}

#[test]
fn aliases_of_user_names_round_trip() {
    let dir = tempdir();
    let text = "function u0:10(i64) -> i64 {\nblock0(v0: i64):\n    v1 = iconst.i64 5\n    \
                v2 = band v0, v1\n    return v2\n}\n\nfunction u0:2(i64) -> i64 {\n\
                block0(v3: i64):\n    v4 = iconst.i64 5\n    v5 = band v3, v4\n    return v5\n}\n";
    write(dir.path(), "user.clif", text);
    let run = run_in(
        dir.path(),
        &[
            "user.clif",
            "--mode",
            "aliases",
            "--report",
            "json",
            "--emit-clif",
            "u1.clif",
        ],
    )
    .ok();
    // User names order numerically: u0:2 < u0:10, so u0:2 is kept.
    assert_eq!(
        run.json(),
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "u0:2", "replaced": [{"name": "u0:10", "by": "alias"}]}]})
    );
    let u1 = std::fs::read_to_string(dir.path().join("u1.clif")).unwrap();
    assert!(u1.lines().any(|l| l == "; alias: u0:10 = u0:2"), "{u1}");
    run_in(
        dir.path(),
        &["u1.clif", "--mode", "aliases", "--emit-clif", "u2.clif"],
    )
    .ok();
    assert_eq!(
        u1,
        std::fs::read_to_string(dir.path().join("u2.clif")).unwrap()
    );
}

#[test]
fn emitted_clif_is_byte_identical_across_runs() {
    let dir = tempdir();
    let (header, funcs) = determinism_module();
    write(dir.path(), "m.clif", join_module(&header, &funcs));
    for mode in ["safe", "aliases", "thunks"] {
        let mut outputs = Vec::new();
        for i in 0..3 {
            let out = format!("o{i}.clif");
            run_in(dir.path(), &["m.clif", "--mode", mode, "--emit-clif", &out]).ok();
            outputs.push(std::fs::read(dir.path().join(&out)).unwrap());
        }
        assert!(!outputs[0].is_empty());
        assert_eq!(outputs[0], outputs[1], "{mode}");
        assert_eq!(outputs[0], outputs[2], "{mode}");
        // And the output parses back.
        run_in(dir.path(), &["o0.clif", "--mode", mode, "--report", "json"]).ok();
    }
}

// ---------------------------------------------------------------------------------------------
// .clif.xz input
// ---------------------------------------------------------------------------------------------

#[test]
fn xz_input_is_read_directly() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    write(
        dir.path(),
        "basic.clif.xz",
        xz_compress(example_basic().as_bytes()),
    );
    let plain = run_in(dir.path(), &["basic.clif", "--report", "json"])
        .ok()
        .json();
    let packed = run_in(dir.path(), &["basic.clif.xz", "--report", "json"])
        .ok()
        .json();
    assert_eq!(plain, packed);
    assert_eq!(packed["merged"], 3);
    // Mixed with plain files into one module.
    write(
        dir.path(),
        "more.clif.xz",
        xz_compress(add_fn("%more", 3, 0).as_bytes()),
    );
    write(dir.path(), "more2.clif", add_fn("%more2", 3, 4));
    let mixed = run_in(
        dir.path(),
        &[
            "more.clif.xz",
            "more2.clif",
            "--report",
            "json",
            "--emit-clif",
            "mixed.clif",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        mixed,
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%more", "replaced": [{"name": "%more2", "by": "thunk"}]}]})
    );
}

#[test]
fn xz_input_made_by_the_xz_command() {
    let dir = tempdir();
    write(dir.path(), "basic.clif", example_basic());
    let status = Command::new("xz")
        .args(["-k", "basic.clif"])
        .current_dir(dir.path())
        .status();
    match status {
        Ok(s) if s.success() => {}
        _ => {
            eprintln!(
                "note: no working `xz` command; skipping (liblzma input is tested elsewhere)"
            );
            return;
        }
    }
    let packed = run_in(dir.path(), &["basic.clif.xz", "--report", "json"])
        .ok()
        .json();
    let plain = run_in(dir.path(), &["basic.clif", "--report", "json"])
        .ok()
        .json();
    assert_eq!(packed, plain);
}

#[test]
fn xz_input_of_concatenated_streams() {
    // The xz format allows several streams back to back; `xz -d` and `xzcat` read them all.
    let dir = tempdir();
    let mut bytes = xz_compress(format!("{}\n", add_fn("%a", 5, 0)).as_bytes());
    bytes.extend(xz_compress(add_fn("%b", 5, 3).as_bytes()));
    write(dir.path(), "multi.clif.xz", bytes);
    let run = run_in(dir.path(), &["multi.clif.xz", "--report", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.json(),
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%a", "replaced": [{"name": "%b", "by": "thunk"}]}]})
    );
}

#[test]
fn xz_with_trailing_garbage_is_an_error() {
    let mut bytes = xz_compress(add_fn("%a", 5, 0).as_bytes());
    bytes.extend_from_slice(b"trailing garbage\n");
    BadCase::one("tail.clif.xz", bytes).expect_error("tail.clif.xz", 0);
}

#[test]
fn xz_errors_keep_line_numbers_of_the_decompressed_text() {
    let text = format!(
        "{}\nfunction %g() {{\nblock0:\n    nonsense\n}}\n",
        add_fn("%f", 1, 0)
    );
    BadCase::one("err.clif.xz", xz_compress(text.as_bytes())).expect_error("err.clif.xz", 10);
}

// ---------------------------------------------------------------------------------------------
// Determinism: order of functions, order and split of files
// ---------------------------------------------------------------------------------------------

/// A module of several kinds of classes: equal helpers of different linkage, their callers,
/// self-recursive and mutually recursive pairs, user names, address-taking functions,
/// preemptible twins, and a lone function. Returns (directives, functions).
fn determinism_module() -> (String, Vec<String>) {
    let header = "; linkage: %h_local local\n; linkage: %pre1 preemptible\n\
                  ; linkage: %pre2 preemptible\n; linkage: %h_hidden hidden\n"
        .to_string();
    let mut funcs = vec![
        add_fn("%h_a", 3, 0),
        add_fn("%h_b", 3, 20),
        add_fn("%h_local", 3, 40),
        add_fn("%h_hidden", 3, 7),
        add_fn("%pre1", 11, 0),
        add_fn("%pre2", 11, 5),
        add_fn("%lone", 99, 0),
    ];
    for (caller, callee) in [("%c1", "%h_a"), ("%c2", "%h_b"), ("%c3", "%h_local")] {
        funcs.push(format!(
            "function {caller}(i32) -> i32 {{\n    sig0 = (i32) -> i32\n    fn0 = {callee} sig0\n\
             block0(v0: i32):\n    v1 = call fn0(v0)\n    v2 = iconst.i32 1\n    v3 = iadd v1, v2\n    \
             return v3\n}}\n"
        ));
    }
    for name in ["%fact0", "%fact1"] {
        funcs.push(format!(
            "function {name}(i32) -> i32 {{\n    sig0 = (i32) -> i32\n    fn0 = {name} sig0\n\
             block0(v0: i32):\n    v6 = iconst.i32 1\n    v1 = icmp ugt v0, v6\n    \
             brif v1, block1, block2\nblock1:\n    v7 = iconst.i32 -1\n    v2 = iadd v0, v7\n    \
             v3 = call fn0(v2)\n    v4 = imul v0, v3\n    return v4\nblock2:\n    \
             v5 = iconst.i32 1\n    return v5\n}}\n"
        ));
    }
    for (me, other, base) in [
        ("%ping0", "%pong0", 0),
        ("%pong0", "%ping0", 1),
        ("%ping1", "%pong1", 0),
        ("%pong1", "%ping1", 1),
    ] {
        funcs.push(format!(
            "function {me}(i32) -> i32 {{\n    sig0 = (i32) -> i32\n    fn0 = {other} sig0\n\
             block0(v0: i32):\n    brif v0, block1, block2\nblock1:\n    v1 = iconst.i32 1\n    \
             v2 = isub v0, v1\n    v3 = call fn0(v2)\n    return v3\nblock2:\n    \
             v4 = iconst.i32 {base}\n    return v4\n}}\n"
        ));
    }
    for name in ["u0:10", "u0:2", "u1:0"] {
        funcs.push(format!(
            "function {name}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = iconst.i64 5\n    \
             v2 = band v0, v1\n    return v2\n}}\n"
        ));
    }
    for (name, target) in [("%addr1", "%ping0"), ("%addr2", "%ping1")] {
        funcs.push(format!(
            "function {name}() -> i64 {{\n    sig0 = (i32) -> i32\n    fn0 = {target} sig0\n\
             block0:\n    v0 = func_addr.i64 fn0\n    return v0\n}}\n"
        ));
    }
    (header, funcs)
}

fn join_module(header: &str, funcs: &[String]) -> String {
    let mut text = header.to_string();
    for f in funcs {
        text.push('\n');
        text.push_str(f);
    }
    text
}

/// A deterministic shuffle (a small LCG; no randomness between runs).
fn shuffled(items: &[String], seed: u64) -> Vec<String> {
    let mut v = items.to_vec();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in (1..v.len()).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = ((state >> 33) % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

#[test]
fn report_does_not_depend_on_function_order() {
    let dir = tempdir();
    let (header, funcs) = determinism_module();
    for mode in ["safe", "aliases", "thunks"] {
        write(dir.path(), "orig.clif", join_module(&header, &funcs));
        let expected = run_in(
            dir.path(),
            &["orig.clif", "--mode", mode, "--report", "json"],
        )
        .ok()
        .json();
        let (_, merged, classes) = check_report_shape(&expected);
        assert!(merged >= 5 && classes.len() >= 5, "{mode}: {expected}");
        let mut reversed = funcs.clone();
        reversed.reverse();
        let mut orders = vec![("reversed", reversed)];
        for seed in 1..=4 {
            orders.push(("shuffled", shuffled(&funcs, seed)));
        }
        for (what, order) in orders {
            write(dir.path(), "perm.clif", join_module(&header, &order));
            let got = run_in(
                dir.path(),
                &["perm.clif", "--mode", mode, "--report", "json"],
            )
            .ok()
            .json();
            assert_eq!(got, expected, "{mode}, {what} order");
            // The text report agrees too.
            let t1 = run_in(dir.path(), &["perm.clif", "--mode", mode])
                .ok()
                .stdout;
            let t2 = run_in(dir.path(), &["orig.clif", "--mode", mode])
                .ok()
                .stdout;
            assert_eq!(t1, t2, "{mode}, {what} order");
        }
    }
}

#[test]
fn report_does_not_depend_on_file_split_or_order() {
    let dir = tempdir();
    let (header, funcs) = determinism_module();
    write(dir.path(), "whole.clif", join_module(&header, &funcs));
    let half = funcs.len() / 2;
    let mixed = shuffled(&funcs, 42);
    let splits: Vec<(String, String)> = vec![
        // Directives with the first half, then with the second half.
        (
            join_module(&header, &funcs[..half]),
            join_module("", &funcs[half..]),
        ),
        (
            join_module("", &funcs[..half]),
            join_module(&header, &funcs[half..]),
        ),
        (
            join_module("", &mixed[..3]),
            join_module(&header, &mixed[3..]),
        ),
    ];
    for mode in ["safe", "aliases", "thunks"] {
        let expected = run_in(
            dir.path(),
            &["whole.clif", "--mode", mode, "--report", "json"],
        )
        .ok()
        .json();
        for (i, (a, b)) in splits.iter().enumerate() {
            write(dir.path(), "a.clif", a);
            write(dir.path(), "b.clif", b);
            write(dir.path(), "b.clif.xz", xz_compress(b.as_bytes()));
            for files in [
                ["a.clif", "b.clif"],
                ["b.clif", "a.clif"],
                ["b.clif.xz", "a.clif"],
            ] {
                let mut args = files.to_vec();
                args.extend(["--mode", mode, "--report", "json"]);
                let got = run_in(dir.path(), &args).ok().json();
                assert_eq!(got, expected, "{mode}, split {i}, files {files:?}");
            }
        }
    }
}

#[test]
fn determinism_module_merges_what_it_should() {
    let dir = tempdir();
    let (header, funcs) = determinism_module();
    write(dir.path(), "m.clif", join_module(&header, &funcs));
    let report = run_in(dir.path(), &["m.clif", "--report", "json"])
        .ok()
        .json();
    let (functions, _, classes) = check_report_shape(&report);
    assert_eq!(functions as usize, funcs.len());
    let kept: Vec<&str> = classes.iter().map(|(k, _)| k.as_str()).collect();
    // User names sort first and numerically; the export helper %h_a is kept over hidden/local.
    assert!(kept.contains(&"u0:2"), "{report}");
    assert!(kept.contains(&"%h_a"), "{report}");
    assert!(kept.contains(&"%fact0") && kept.contains(&"%ping0") && kept.contains(&"%pong0"));
    let find = |name: &str| {
        classes
            .iter()
            .flat_map(|(_, r)| r.iter())
            .find(|(n, _)| n == name)
            .map(|(_, by)| by.clone())
    };
    assert_eq!(find("%h_local").as_deref(), Some("removed"), "{report}");
    assert_eq!(find("%h_hidden").as_deref(), Some("thunk"), "{report}");
    assert_eq!(find("%lone"), None);
    // Safe mode: addresses are identities, so the two address-takers differ.
    assert_eq!(find("%addr2"), None, "{report}");
}

// ---------------------------------------------------------------------------------------------
// Linkage
// ---------------------------------------------------------------------------------------------

#[test]
fn default_linkage_local_turns_thunk_into_removed() {
    let dir = tempdir();
    write(
        dir.path(),
        "pair.clif",
        format!("{}\n{}", add_fn("%f", 4, 0), add_fn("%g", 4, 3)),
    );
    let export = run_in(dir.path(), &["pair.clif", "--report", "json"])
        .ok()
        .json();
    assert_eq!(
        export,
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%f", "replaced": [{"name": "%g", "by": "thunk"}]}]})
    );
    let explicit = run_in(
        dir.path(),
        &[
            "pair.clif",
            "--report",
            "json",
            "--default-linkage",
            "export",
        ],
    )
    .ok()
    .json();
    assert_eq!(explicit, export);
    let local = run_in(
        dir.path(),
        &[
            "pair.clif",
            "--report",
            "json",
            "--default-linkage",
            "local",
            "--emit-clif",
            "l.clif",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        local,
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%f", "replaced": [{"name": "%g", "by": "removed"}]}]})
    );
    let emitted = std::fs::read_to_string(dir.path().join("l.clif")).unwrap();
    assert!(!emitted.contains("function %g"), "{emitted}");
    assert!(emitted.contains("; linkage: %f local"), "{emitted}");
    // A directive overrides the default: an exported %g stays, as a thunk.
    write(
        dir.path(),
        "pair2.clif",
        format!(
            "; linkage: %g export\n{}\n{}",
            add_fn("%f", 4, 0),
            add_fn("%g", 4, 3)
        ),
    );
    let overridden = run_in(
        dir.path(),
        &[
            "pair2.clif",
            "--report",
            "json",
            "--default-linkage",
            "local",
        ],
    )
    .ok()
    .json();
    // %g (export) is kept over %f (local); %f, local and unused, is removed.
    assert_eq!(
        overridden,
        json!({"functions": 2, "merged": 1, "classes": [
            {"kept": "%g", "replaced": [{"name": "%f", "by": "removed"}]}]})
    );
}

#[test]
fn hidden_and_preemptible_defaults_stay_thunks() {
    let dir = tempdir();
    write(
        dir.path(),
        "pair.clif",
        format!("{}\n{}", add_fn("%f", 4, 0), add_fn("%g", 4, 3)),
    );
    for kind in ["hidden", "preemptible"] {
        let report = run_in(
            dir.path(),
            &["pair.clif", "--report", "json", "--default-linkage", kind],
        )
        .ok()
        .json();
        let (_, merged, classes) = check_report_shape(&report);
        assert!(merged >= 1, "{kind}: {report}");
        for (_, replaced) in classes {
            for (_, by) in replaced {
                assert_eq!(by, "thunk", "{kind}: {report}");
            }
        }
    }
}

#[test]
fn private_copy_does_not_capture_an_imported_name() {
    // %user calls an external %p_merged that the module does not define. Merging the preemptible
    // twins %p and %q makes a private copy of their body; naming it %p_merged would silently
    // turn %user's call to the external function into a call to the copy.
    let dir = tempdir();
    let user = "function %user(i32) -> i32 {\n    sig0 = (i32) -> i32\n    fn0 = %p_merged sig0\n\
                block0(v0: i32):\n    v1 = call fn0(v0)\n    return v1\n}\n";
    let text = format!(
        "; linkage: %p preemptible\n; linkage: %q preemptible\n{}\n{}\n{user}",
        add_fn("%p", 7, 0),
        add_fn("%q", 7, 3)
    );
    write(dir.path(), "imp.clif", text);
    let run = run_in(
        dir.path(),
        &["imp.clif", "--report", "json", "--emit-clif", "o.clif"],
    )
    .ok();
    let report = run.json();
    assert_eq!(report["merged"], 2, "{report}");
    assert_ne!(
        report["classes"][0]["kept"].as_str(),
        Some("%p_merged"),
        "the private copy must not take a name the module refers to: {report}"
    );
    let emitted = std::fs::read_to_string(dir.path().join("o.clif")).unwrap();
    assert!(!emitted.contains("function %p_merged("), "{emitted}");
}

// ---------------------------------------------------------------------------------------------
// Re-merging a merged module
// ---------------------------------------------------------------------------------------------

#[test]
fn remerge_of_three_equal_exports_finds_nothing() {
    let dir = tempdir();
    let text = format!(
        "{}\n{}\n{}",
        add_fn("%f", 7, 0),
        add_fn("%g", 7, 3),
        add_fn("%h", 7, 6)
    );
    write(dir.path(), "three.clif", text);
    run_in(dir.path(), &["three.clif", "--emit-clif", "o.clif"]).ok();
    let again = run_in(dir.path(), &["o.clif", "--report", "json"])
        .ok()
        .json();
    assert_eq!(again, json!({"functions": 3, "merged": 0, "classes": []}));
}

#[test]
fn remerge_of_preemptible_twins_finds_nothing() {
    let dir = tempdir();
    let text = format!(
        "; linkage: %p preemptible\n; linkage: %q preemptible\n{}\n{}",
        add_fn("%p", 7, 0),
        add_fn("%q", 7, 3)
    );
    write(dir.path(), "pre.clif", text);
    run_in(dir.path(), &["pre.clif", "--emit-clif", "o.clif"]).ok();
    let again = run_in(dir.path(), &["o.clif", "--report", "json"])
        .ok()
        .json();
    assert_eq!(again, json!({"functions": 3, "merged": 0, "classes": []}));
}

// ---------------------------------------------------------------------------------------------
// Size
// ---------------------------------------------------------------------------------------------

#[test]
fn huge_names_work() {
    let dir = tempdir();
    let base = "n".repeat(100_000);
    let f = format!("%{base}");
    let g = format!("%{base}2");
    write(
        dir.path(),
        "huge.clif",
        format!("{}\n{}", add_fn(&f, 1, 0), add_fn(&g, 1, 9)),
    );
    for mode in ["safe", "aliases"] {
        let run = run_in(
            dir.path(),
            &[
                "huge.clif",
                "--mode",
                mode,
                "--report",
                "json",
                "--emit-clif",
                "h.clif",
            ],
        )
        .ok();
        let report = run.json();
        assert_eq!(report["merged"], 1);
        assert_eq!(report["classes"][0]["kept"].as_str(), Some(f.as_str()));
        assert_eq!(
            report["classes"][0]["replaced"][0]["name"].as_str(),
            Some(g.as_str())
        );
        let again = run_in(dir.path(), &["h.clif", "--mode", mode, "--report", "json"]).ok();
        assert_eq!(again.json()["merged"], 0);
    }
    // A huge name in an error message: still a clean error.
    write(
        dir.path(),
        "dup.clif",
        format!("{}\n{}", add_fn(&f, 1, 0), add_fn(&f, 2, 0)),
    );
    let run = run_in(dir.path(), &["dup.clif"]);
    assert_ne!(run.code, Some(0));
    assert!(run.code.is_some());
    assert!(
        run.stderr.contains("dup.clif:8:"),
        "{}",
        &run.stderr[..200.min(run.stderr.len())]
    );
    assert!(!run.stderr.contains("panicked"));
}

#[test]
fn ten_thousand_functions() {
    let dir = tempdir();
    let n = 10_000;
    let classes = 100;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&add_fn(
            &format!("%f{i}"),
            (i % classes) as i32,
            (i % 7) as u32,
        ));
        text.push('\n');
    }
    write(dir.path(), "big.clif", &text);
    let run = run_in(
        dir.path(),
        &[
            "big.clif",
            "--report",
            "json",
            "--emit-clif",
            "big-out.clif",
            "--time-passes",
        ],
    )
    .ok();
    let report = run.json();
    let (functions, merged, found) = check_report_shape(&report);
    assert_eq!(functions, n as u64);
    assert_eq!(merged, (n - classes) as u64);
    assert_eq!(found.len(), classes);
    let mut kept: Vec<String> = found.iter().map(|(k, _)| k.clone()).collect();
    kept.sort();
    let mut expected: Vec<String> = (0..classes)
        .map(|k| {
            (k..n)
                .step_by(classes)
                .map(|i| format!("%f{i}"))
                .min()
                .unwrap()
        })
        .collect();
    expected.sort();
    assert_eq!(
        kept, expected,
        "the least name by bytes is kept in each class"
    );
    for (_, replaced) in &found {
        assert_eq!(replaced.len(), n / classes - 1);
        assert!(replaced.iter().all(|(_, by)| by == "thunk"));
    }
    // The output parses back (its thunks are not checked here: see the re-merge tests).
    let again = run_in(dir.path(), &["big-out.clif", "--report", "json"])
        .ok()
        .json();
    assert_eq!(again["functions"], n);
    // The same module compressed.
    write(dir.path(), "big.clif.xz", xz_compress(text.as_bytes()));
    let packed = run_in(dir.path(), &["big.clif.xz", "--report", "json"])
        .ok()
        .json();
    assert_eq!(packed, report);
}

// ---------------------------------------------------------------------------------------------
// Outputs never replace what is not theirs; inputs from standard input
// ---------------------------------------------------------------------------------------------

/// A symlink as output: its target is written (atomically), the link stays a link.
#[test]
fn output_through_a_symlink_writes_its_target() {
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    std::os::unix::fs::symlink("target.clif", dir.path().join("link.clif")).unwrap();
    let input = input.to_str().unwrap();
    run_in(dir.path(), &[input, "--emit-clif", "link.clif"]).ok();
    let link = std::fs::symlink_metadata(dir.path().join("link.clif")).unwrap();
    assert!(link.file_type().is_symlink(), "the symlink was replaced");
    let written = std::fs::read_to_string(dir.path().join("target.clif")).unwrap();
    assert!(written.contains("function %caller1"), "{written}");
}

/// A FIFO as output is written into, not replaced by a regular file.
#[test]
fn output_to_a_fifo_is_written_into() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    let fifo = dir.path().join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let input = input.to_str().unwrap();
    run_in(dir.path(), &[input, "--emit-clif", "out.fifo"]).ok();
    let text = reader.join().unwrap();
    assert!(text.contains("function %caller1"), "{text}");
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
}

/// `/dev/null` as output is written into and stays a device.
#[test]
fn output_to_dev_null_leaves_the_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    let input = input.to_str().unwrap();
    let run = run_in(dir.path(), &[input, "-o", "/dev/null"]).ok();
    assert!(run.stdout.contains("functions:"), "{}", run.stdout);
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is no longer a device"
    );
}

/// Two outputs naming one file (also through a symlink), or an output naming an input, are
/// refused before any work, and nothing is written.
#[test]
fn outputs_that_collide_are_refused() {
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    std::os::unix::fs::symlink("same.o", dir.path().join("alias.o")).unwrap();
    std::os::unix::fs::symlink("in.clif", dir.path().join("in-link.clif")).unwrap();
    let input = input.to_str().unwrap();
    for (args, expect) in [
        (vec!["-o", "same.o", "--emit-clif", "same.o"], "same file"),
        (vec!["-o", "same.o", "--emit-clif", "alias.o"], "same file"),
        (vec!["-o", "./same.o", "--emit-clif", "same.o"], "same file"),
        (vec!["--emit-clif", "in.clif"], "is the input"),
        (vec!["-o", "in-link.clif"], "is the input"),
    ] {
        let mut all = vec![input];
        all.extend(&args);
        let run = run_in(dir.path(), &all);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(expect), "{args:?}: {}", run.stderr);
        assert!(!dir.path().join("same.o").exists(), "{args:?} wrote same.o");
    }
    assert_eq!(std::fs::read_to_string(input).unwrap(), example_basic());
}

/// When one output cannot be written, none is: the object is not left behind when the CLIF
/// cannot be written (`/dev/full` refuses every write).
#[test]
fn outputs_are_all_written_or_none() {
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    let input = input.to_str().unwrap();
    let run = run_in(
        dir.path(),
        &[input, "-o", "out.o", "--emit-clif", "/dev/full"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("/dev/full"), "{}", run.stderr);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("in.clif")],
        "left behind"
    );
}

/// A new output file gets the permissions any new file gets (not a temporary file's 0600); an
/// existing one keeps its own.
#[test]
fn output_permissions_are_those_of_a_new_file_or_the_old_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    let kept = write(dir.path(), "kept.o", b"old");
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    // Under umask 022, whatever the test runner's is.
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args([&input, Path::new("-o"), Path::new("kept.o")])
        .args(["--emit-clif", "new.clif"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    Run::from_output(out).ok();
    let mode = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
    };
    assert_eq!(mode("kept.o") & 0o777, 0o640);
    assert_eq!(mode("new.clif") & 0o777, 0o644);
}

/// `-` reads standard input, named `<stdin>` in messages; a byte-order mark is skipped.
#[test]
fn standard_input_and_a_byte_order_mark() {
    let dir = tempdir();
    let read_stdin = |text: &[u8]| {
        let mut child = Command::new(BIN)
            .args(["-", "--report", "json"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(text).unwrap();
        Run::from_output(child.wait_with_output().unwrap())
    };
    let run = read_stdin(example_basic().as_bytes()).ok();
    assert_eq!(run.json()["merged"], 3);
    let bom = [b"\xef\xbb\xbf".as_slice(), example_basic().as_bytes()].concat();
    assert_eq!(read_stdin(&bom).ok().json()["merged"], 3);
    let run = read_stdin(b"function %f(\n");
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.starts_with("error: <stdin>:"), "{}", run.stderr);
    let file = write(dir.path(), "bom.clif", &bom);
    let run = run_in(dir.path(), &[file.to_str().unwrap(), "--report", "json"]).ok();
    assert_eq!(run.json()["merged"], 3);
}

/// `--opt-level` takes Cranelift's spelling, `speed_and_size`, and the dashed one.
#[test]
fn opt_level_speed_and_size_both_spellings() {
    let dir = tempdir();
    let input = write(dir.path(), "in.clif", example_basic());
    let input = input.to_str().unwrap();
    for level in ["speed_and_size", "speed-and-size"] {
        run_in(dir.path(), &[input, "-o", "out.o", "--opt-level", level]).ok();
    }
}
