//! The `--size-report` page in a real browser: headless Chromium loads it (and a copy whose
//! appended script clicks every legend entry and opens every entry), logs nothing on its console,
//! and its DOM holds the top savings of the JSON report as elements; a screenshot is left at
//! `$CARGO_TARGET_TMPDIR/size-report-*.png` to look at. Skipped with a note without Chromium
//! (Debian package `chromium-headless-shell`). Modules: `examples/basic.clif`, and a `genmod.py`
//! module with similar merging (`../shared`, skipped with a note without it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

/// The headless Chromium on `PATH`, if any.
fn chromium() -> Option<&'static str> {
    let found = ["chromium-headless-shell", "chromium", "chromium-browser"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs chromium-headless-shell"
        );
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping: no chromium-headless-shell on PATH"
        );
    }
    found
}

/// Runs Chromium headless on `page` with `args`; returns (standard output, its console lines).
fn chromium_run(chromium: &str, page: &Path, args: &[&str]) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--log-level=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{chromium} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// The names of the `n` largest savings of a JSON report (classes' kept functions and similar
/// groups' shared bodies).
fn top_savings(json: &serde_json::Value, n: usize) -> Vec<String> {
    let mut all: Vec<(i64, String)> = Vec::new();
    for (list, name) in [("classes", "kept"), ("similar", "shared")] {
        for entry in json[list].as_array().into_iter().flatten() {
            let saved = entry["saved_bytes"].as_i64().expect("saved_bytes");
            all.push((saved, entry[name].as_str().unwrap().to_string()));
        }
    }
    all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    all.into_iter().take(n).map(|(_, name)| name).collect()
}

/// Writes the page of `input` (with `extra` arguments), loads it, checks it, and takes its
/// screenshot as `shot`.
fn check_page(chromium: &str, input: &Path, extra: &[&str], shot: &str) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("sizes.html");
    let out = Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .arg(input)
        .arg("-o")
        .arg(dir.path().join("m.o"))
        .arg("--size-report")
        .arg(&page)
        .args(["--report", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    for network in ["http:", "https:", " src=", " href=", "@import"] {
        assert!(
            !html.contains(network),
            "the page must fetch nothing: {network}"
        );
    }
    // The page as written, then a copy whose script works every control.
    let (dom, console) = chromium_run(chromium, &page, &["--dump-dom"]);
    assert!(console.is_empty(), "console: {console:#?}");
    let probe = dir.path().join("probe.html");
    let clicks = "<script>document.querySelectorAll('.legend span').forEach(function (s) \
                  { s.click(); s.click(); s.click(); });\
                  document.querySelectorAll('details').forEach(function (d) { d.open = true; });\
                  document.body.setAttribute('data-probed', 'yes');</script></body>";
    std::fs::write(&probe, html.replace("</body>", clicks)).unwrap();
    let (probed, console) = chromium_run(chromium, &probe, &["--dump-dom"]);
    assert!(console.is_empty(), "console after clicks: {console:#?}");
    assert!(
        probed.contains("data-probed=\"yes\""),
        "the probe script ran"
    );
    let top = top_savings(&json, 5);
    assert!(!top.is_empty(), "the module merges");
    for name in &top {
        assert!(
            dom.contains(&format!("data-name=\"{name}\"")),
            "{name} is one of the top savings, and not on the page"
        );
    }
    // The largest saving comes first.
    let first = dom.find("id=\"entry-0\"").expect("an entry");
    assert!(dom[first..].starts_with("id=\"entry-0\" data-kinds="));
    assert!(dom[first..dom[first..].find("</summary>").unwrap() + first].contains(&top[0]));
    for id in ["totals", "kinds", "entries", "remains"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "#{id}");
    }
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let _ = std::fs::remove_file(&screenshot);
    let shot_arg = format!("--screenshot={}", screenshot.display());
    let (_, console) = chromium_run(chromium, &page, &[&shot_arg, "--window-size=1100,900"]);
    assert!(console.is_empty(), "console: {console:#?}");
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5000,
        "a real picture"
    );
}

#[test]
fn the_size_page_of_the_example_loads_without_errors_and_shows_the_top_classes() {
    let Some(chromium) = chromium() else { return };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.clif");
    check_page(chromium, &example, &[], "size-report-basic.png");
}

#[test]
fn the_size_page_of_a_genmod_module_with_similar_merging_loads_and_shows_the_top_savings() {
    let Some(chromium) = chromium() else { return };
    let Some(genmod) = common::genmod::genmod() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--functions",
        "300",
        "--dup-rate",
        "0.3",
        "--near-rate",
        "0.3",
        "--seed",
        "5",
    ];
    let (clif, _, _) = common::genmod::generate(&genmod, dir.path(), &args);
    check_page(chromium, &clif, &["--similar"], "size-report-genmod.png");
}
