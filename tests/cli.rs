//! Data-driven tests of the `clif-merge` command (the real binary), in the manner of
//! wasm-tools' and LLVM lit's tests: every case file under `tests/cli/` is one test, named by its
//! path under `tests/cli/` (`cargo test --test cli -- bad-input/syntax-error.clif`), and its
//! expected output is a snapshot next to it. `BLESS=1 cargo test --test cli` writes the snapshots.
//!
//! # Case files
//!
//! `tests/cli/**/*.clif` (cases with CLIF in them) and `tests/cli/**/*.txt` (cases without).
//! The directives are comment lines of the case file, read from the lines before the first
//! `;---` marker (from every line when there is none), in order:
//!
//! - `; RUN: COMMAND` runs COMMAND with `sh -c`, in the case's own empty temporary folder, with
//!   the folder of the `clif-merge` binary under test first in `PATH` (so `clif-merge` is the
//!   binary Cargo built), `LC_ALL=C`, and standard input empty (use `<` or a pipe). A line ending
//!   in `\` continues on the next `; RUN:` line. Substitutions: `%s` the case file, `%S` its
//!   folder, `%t` the temporary folder (also the working folder, so plain names like `a.clif`
//!   are inside it), `%{root}` the crate's folder (e.g. `%{root}/examples/basic.clif`), `%%` a
//!   `%`. Any other `%` is an error (a typo would otherwise pass as text).
//! - `; XZ: IN OUT` compresses IN into OUT with the xz2 crate (level 6; no `xz` command needed).
//!   Same substitutions; relative paths are in the temporary folder.
//! - `;--- NAME` (split-file, as in LLVM): before the first step runs, every line after the
//!   marker, up to the next marker or the end of the case file, is written to `%t/NAME` (folders
//!   created). Line numbers in a part count from 1, as in the file it becomes; lines are written
//!   exactly, their newlines included (so a part cannot end without a newline: produce such a
//!   file with `printf` or `head -c`).
//!
//! To check a file that a command wrote, `cat` it (or read it back with `clif-merge`) in a later
//! `RUN`; `cmp A B` (or `COMMAND | cmp - FILE`) asserts that two outputs are the same bytes, and
//! `ls -A DIR` that a folder holds nothing more than it should.
//!
//! # Snapshots
//!
//! The snapshot of `DIR/NAME.EXT` is `DIR/NAME.out`. For every `RUN` it holds the line as written
//! (`$ COMMAND`, before substitution), `exit N` (or `killed by signal N`), then the standard
//! output and standard error, each under a `--- stdout` / `--- stderr` line and left out when
//! empty; a stream that does not end with a newline gets a `\ no newline at end` line, one that is
//! not UTF-8 is shown lossily with a `\ not UTF-8` line. Normalized so that runs agree: the paths
//! of `%t`, `%s`, `%S` and `%{root}` are shown as those placeholders, and a standard error line
//! `NAME-ms: 1.234` (`--time-passes`) as `NAME-ms: <ms>`; only a non-negative decimal number with
//! a fractional part is replaced, so a malformed time still shows up as a difference.
//!
//! A case fails when its output differs from its snapshot (the message names the case file and
//! shows the first difference), when the snapshot is missing, when a snapshot has no case file,
//! and, whatever the snapshot says and even under `BLESS=1`, when a command panicked (`panicked`
//! or `RUST_BACKTRACE` on standard error) or was killed by a signal.
//!
//! What cannot be written as data (symlinks, FIFOs, devices, permissions, generated inputs,
//! properties over permutations of inputs) is tested in `tests/cli_properties.rs`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

fn cases_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli")
}

/// One step of a case, in order.
enum Step {
    /// The command as written in the case file.
    Run(String),
    /// Input and output, as written.
    Xz(String, String),
}

struct Case {
    steps: Vec<Step>,
    /// Split-file parts: (relative name, bytes).
    parts: Vec<(String, Vec<u8>)>,
}

fn parse_case(text: &str) -> Result<Case, String> {
    let mut steps = Vec::new();
    let mut parts: Vec<(String, Vec<u8>)> = Vec::new();
    let mut continued: Option<(usize, String)> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let lineno = i + 1;
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if let Some(name) = trimmed.strip_prefix(";---") {
            let name = name.trim();
            let path = Path::new(name);
            if name.is_empty()
                || path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(format!(
                    "line {lineno}: `;--- NAME` needs a relative name, got `{name}`"
                ));
            }
            if parts.iter().any(|(n, _)| n == name) {
                return Err(format!("line {lineno}: part `{name}` defined twice"));
            }
            parts.push((name.to_string(), Vec::new()));
            continue;
        }
        if let Some((_, bytes)) = parts.last_mut() {
            bytes.extend_from_slice(line.as_bytes());
            continue;
        }
        let directive = trimmed.trim_start();
        if let Some(run) = directive.strip_prefix("; RUN:") {
            let run = run.trim();
            let (start, mut command) = continued.take().unwrap_or((lineno, String::new()));
            match run.strip_suffix('\\') {
                Some(head) => {
                    command.push_str(head.trim_end());
                    command.push(' ');
                    continued = Some((start, command));
                }
                None => {
                    command.push_str(run);
                    steps.push(Step::Run(command));
                }
            }
            continue;
        }
        if let Some((start, _)) = continued {
            return Err(format!(
                "line {start}: a `; RUN:` line ends in `\\` but line {lineno} does not continue it"
            ));
        }
        if let Some(args) = directive.strip_prefix("; XZ:") {
            let args: Vec<&str> = args.split_whitespace().collect();
            match args[..] {
                [input, output] => steps.push(Step::Xz(input.into(), output.into())),
                _ => return Err(format!("line {lineno}: `; XZ: IN OUT` takes two paths")),
            }
        } else if directive.starts_with("; RUN") || directive.starts_with("; XZ") {
            return Err(format!("line {lineno}: malformed directive `{directive}`"));
        }
    }
    if let Some((start, _)) = continued {
        return Err(format!("line {start}: the last `; RUN:` line ends in `\\`"));
    }
    if !steps.iter().any(|s| matches!(s, Step::Run(_))) {
        return Err("no `; RUN:` line: a case that checks nothing".into());
    }
    Ok(Case { steps, parts })
}

/// The paths substituted for `%s`, `%S`, `%t`, `%{root}`.
struct Paths {
    case: PathBuf,
    case_dir: PathBuf,
    temp: PathBuf,
    root: PathBuf,
}

fn substitute(text: &str, paths: &Paths) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (with, len) = if after.starts_with("{root}") {
            (paths.root.to_string_lossy(), "{root}".len())
        } else {
            match after.chars().next() {
                Some('%') => ("%".into(), 1),
                Some('s') => (paths.case.to_string_lossy(), 1),
                Some('S') => (paths.case_dir.to_string_lossy(), 1),
                Some('t') => (paths.temp.to_string_lossy(), 1),
                _ => {
                    return Err(format!(
                        "unknown substitution at `{}` in `{text}` (write `%%` for a `%`)",
                        &rest[at..]
                    ));
                }
            }
        };
        out.push_str(&with);
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Replaces the paths of the run by their placeholders, the longest path first (the case file
/// and the temporary folder may be inside the crate's folder).
fn normalize_paths(text: &str, paths: &Paths) -> String {
    let mut pairs: Vec<(String, &str)> = vec![
        (paths.case.to_string_lossy().into_owned(), "%s"),
        (paths.case_dir.to_string_lossy().into_owned(), "%S"),
        (paths.temp.to_string_lossy().into_owned(), "%t"),
        (paths.root.to_string_lossy().into_owned(), "%{root}"),
    ];
    pairs.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let mut text = text.to_string();
    for (path, placeholder) in pairs {
        text = text.replace(&path, placeholder);
    }
    text
}

/// `NAME-ms: 1.234` becomes `NAME-ms: <ms>`; nothing else changes.
fn normalize_times(text: &str) -> String {
    let is_time = |value: &str| {
        value.split_once('.').is_some_and(|(int, frac)| {
            !int.is_empty()
                && !frac.is_empty()
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
        })
    };
    text.split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches('\n');
            match body.split_once(": ") {
                Some((name, value))
                    if name.ends_with("-ms")
                        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                        && is_time(value) =>
                {
                    format!("{name}: <ms>{}", &line[body.len()..])
                }
                _ => line.to_string(),
            }
        })
        .collect()
}

fn show_stream(out: &mut String, label: &str, bytes: &[u8], paths: &Paths, times: bool) {
    if bytes.is_empty() {
        return;
    }
    let (text, utf8) = match std::str::from_utf8(bytes) {
        Ok(t) => (t.to_string(), true),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
    };
    let mut text = normalize_paths(&text, paths);
    if times {
        text = normalize_times(&text);
    }
    writeln!(out, "--- {label}").unwrap();
    out.push_str(&text);
    if !text.ends_with('\n') {
        out.push_str("\n\\ no newline at end\n");
    }
    if !utf8 {
        out.push_str("\\ not UTF-8\n");
    }
}

fn xz_compress(input: &Path, output: &Path) -> Result<(), String> {
    let bytes = std::fs::read(input).map_err(|e| format!("XZ: {}: {e}", input.display()))?;
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    enc.write_all(&bytes).map_err(|e| e.to_string())?;
    let packed = enc.finish().map_err(|e| e.to_string())?;
    std::fs::write(output, packed).map_err(|e| format!("XZ: {}: {e}", output.display()))
}

/// Runs a case; returns its snapshot text, or why it cannot have one.
fn run_case(file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("reading the case: {e}"))?;
    let case = parse_case(&text)?;
    let temp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    let paths = Paths {
        case: file.to_path_buf(),
        case_dir: file.parent().unwrap().to_path_buf(),
        temp: temp.path().canonicalize().map_err(|e| e.to_string())?,
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    };
    for (name, bytes) in &case.parts {
        let path = paths.temp.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(&path, bytes).map_err(|e| format!("writing part {name}: {e}"))?;
    }
    let bin_dir = Path::new(BIN).parent().unwrap();
    let search_path = match std::env::var_os("PATH") {
        Some(p) => {
            let mut dirs = vec![bin_dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&p));
            std::env::join_paths(dirs).map_err(|e| e.to_string())?
        }
        None => bin_dir.as_os_str().to_owned(),
    };
    let mut snapshot = String::new();
    let mut fatal = Vec::new();
    for step in &case.steps {
        match step {
            Step::Xz(input, output) => {
                let input = paths.temp.join(substitute(input, &paths)?);
                let output = paths.temp.join(substitute(output, &paths)?);
                xz_compress(&input, &output)?;
            }
            Step::Run(command) => {
                let expanded = substitute(command, &paths)?;
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(&expanded)
                    .current_dir(&paths.temp)
                    .env("PATH", &search_path)
                    .env("LC_ALL", "C")
                    .env_remove("CLICOLOR_FORCE")
                    .env_remove("RUST_BACKTRACE")
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("running sh: {e}"))?;
                if !snapshot.is_empty() {
                    snapshot.push('\n');
                }
                writeln!(snapshot, "$ {command}").unwrap();
                match out.status.code() {
                    Some(code) => writeln!(snapshot, "exit {code}").unwrap(),
                    None => {
                        use std::os::unix::process::ExitStatusExt;
                        let signal = out.status.signal().unwrap_or(0);
                        writeln!(snapshot, "killed by signal {signal}").unwrap();
                        fatal.push(format!("`{command}` was killed by signal {signal}"));
                    }
                }
                let stderr = String::from_utf8_lossy(&out.stderr);
                if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
                    fatal.push(format!("`{command}` panicked:\n{stderr}"));
                }
                show_stream(&mut snapshot, "stdout", &out.stdout, &paths, false);
                show_stream(&mut snapshot, "stderr", &out.stderr, &paths, true);
            }
        }
    }
    if fatal.is_empty() {
        Ok(snapshot)
    } else {
        Err(format!(
            "{}\n--- the whole output ---\n{snapshot}",
            fatal.join("\n")
        ))
    }
}

/// The first differing line, with a few lines of context on each side.
fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let at = (0..e.len().max(a.len()))
        .find(|&i| e.get(i) != a.get(i))
        .unwrap_or(e.len().min(a.len()));
    let from = at.saturating_sub(3);
    let mut out = format!("first difference at snapshot line {}:\n", at + 1);
    for (label, lines) in [("expected", &e), ("actual", &a)] {
        writeln!(out, "  {label}:").unwrap();
        for (i, line) in lines.iter().enumerate().skip(from).take(at + 4 - from) {
            let mark = if i == at { '>' } else { ' ' };
            writeln!(out, "  {mark}{:5} | {line}", i + 1).unwrap();
        }
        if at >= lines.len() {
            writeln!(out, "  >{:5} | (end)", at + 1).unwrap();
        }
    }
    out
}

fn snapshot_of(case: &Path) -> PathBuf {
    case.with_extension("out")
}

fn check_case(file: &Path, bless: bool) -> Result<(), String> {
    let actual = run_case(file)?;
    let snap = snapshot_of(file);
    let expected = match std::fs::read_to_string(&snap) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", snap.display())),
    };
    if expected.as_deref() == Some(actual.as_str()) {
        return Ok(());
    }
    if bless {
        return std::fs::write(&snap, &actual).map_err(|e| format!("{}: {e}", snap.display()));
    }
    match expected {
        None => Err(format!(
            "no snapshot {} (BLESS=1 writes it); the output is:\n{actual}",
            snap.display()
        )),
        Some(expected) => Err(format!(
            "the output differs from {} (BLESS=1 rewrites it)\n{}\n--- the whole output ---\n{actual}",
            snap.display(),
            first_difference(&expected, &actual)
        )),
    }
}

fn collect(dir: &Path, cases: &mut Vec<PathBuf>, snapshots: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        match path.extension().and_then(|e| e.to_str()) {
            _ if path.is_dir() => collect(&path, cases, snapshots),
            Some("clif" | "txt") => cases.push(path),
            Some("out") => snapshots.push(path),
            _ => {}
        }
    }
}

fn name_of(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .expect("under tests/cli")
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The normalization and substitutions the snapshots rely on do what the documentation says.
fn runner_self_check() -> Result<(), String> {
    let times =
        "read-ms: 0.125\npass-time-ms: 12.000\nx-ms: 1\ny-ms: -1.5\nz-ms: 1.5e3\nother: 1.5\n";
    let want = "read-ms: <ms>\npass-time-ms: <ms>\nx-ms: 1\ny-ms: -1.5\nz-ms: 1.5e3\nother: 1.5\n";
    if normalize_times(times) != want {
        return Err(format!("normalize_times gave {:?}", normalize_times(times)));
    }
    let paths = Paths {
        case: "/r/tests/cli/a/b.clif".into(),
        case_dir: "/r/tests/cli/a".into(),
        temp: "/tmp/x".into(),
        root: "/r".into(),
    };
    let got = substitute("%s %S %t %{root} 100%% %%f", &paths)?;
    if got != "/r/tests/cli/a/b.clif /r/tests/cli/a /tmp/x /r 100% %f" {
        return Err(format!("substitute gave {got:?}"));
    }
    if substitute("printf %f", &paths).is_ok() {
        return Err("an unknown substitution must be an error".into());
    }
    let shown = normalize_paths(
        "/r/tests/cli/a/b.clif /r/tests/cli/a/c /tmp/x/o /r/e",
        &paths,
    );
    if shown != "%s %S/c %t/o %{root}/e" {
        return Err(format!("normalize_paths gave {shown:?}"));
    }
    Ok(())
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let bless = std::env::var_os("BLESS").is_some_and(|v| !v.is_empty() && v != "0");
    let root = cases_root();
    let (mut cases, mut snapshots) = (Vec::new(), Vec::new());
    collect(&root, &mut cases, &mut snapshots);
    assert!(!cases.is_empty(), "no cases under {}", root.display());
    let mut trials = Vec::new();
    // Every snapshot belongs to exactly one case: two cases may not share a stem, and a
    // snapshot whose case was renamed or deleted is an error.
    {
        let cases = cases.clone();
        let root = root.clone();
        trials.push(libtest_mimic::Trial::test(
            "snapshots-have-cases",
            move || {
                let mut problems = Vec::new();
                for (i, a) in cases.iter().enumerate() {
                    for b in &cases[i + 1..] {
                        if snapshot_of(a) == snapshot_of(b) {
                            problems.push(format!(
                                "{} and {} would share one snapshot",
                                name_of(a, &root),
                                name_of(b, &root)
                            ));
                        }
                    }
                }
                for snap in &snapshots {
                    if !cases.iter().any(|c| &snapshot_of(c) == snap) {
                        problems.push(format!("{} has no case file", name_of(snap, &root)));
                    }
                }
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(problems.join("\n").into())
                }
            },
        ));
    }
    trials.push(libtest_mimic::Trial::test("runner-self-check", || {
        runner_self_check().map_err(Into::into)
    }));
    for file in cases {
        let name = name_of(&file, &root);
        trials.push(libtest_mimic::Trial::test(name, move || {
            check_case(&file, bless).map_err(|e| format!("FAIL {}: {e}", file.display()).into())
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}
