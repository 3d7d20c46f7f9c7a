//! Runs every `filetests/**/*.clif` file, each as its own test (libtest-mimic), named by its
//! path under `filetests/`: `cargo test --test filetests -- classes/merge-class-of-three.clif`
//! runs one file (any substring of the name selects; `--exact` for exactly one).
//!
//! A file starts with `test merge` and options (`mode=safe|aliases|thunks`,
//! `default-linkage=export|hidden|local|preemptible`, `similar` for `--similar` with every group that fits
//! forced: these files are about what may differ, not about what pays). The whole file is one module; it is
//! merged, and the `; check:`, `; nextln:`, `; not:`, ... directives of its comment lines are
//! checked (with the `filecheck` crate) against the text report followed by the `--emit-clif`
//! output. The emitted CLIF must also read back and verify.

#[path = "common/files.rs"]
mod files;

use clif_merge::read::{ReadOptions, read_module_text};
use clif_merge::{Mode, SimilarOptions, SymbolLinkage, emit, merge_module_with, report};
use std::path::Path;

struct TestOptions {
    mode: Mode,
    default_linkage: SymbolLinkage,
    similar: bool,
}

fn parse_test_line(text: &str) -> Result<TestOptions, String> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut words = first.split_whitespace();
    if (words.next(), words.next()) != (Some("test"), Some("merge")) {
        return Err("the first line must be `test merge [options]`".into());
    }
    let mut options = TestOptions {
        mode: Mode::Safe,
        default_linkage: SymbolLinkage::Export,
        similar: false,
    };
    for word in words {
        match word.split_once('=') {
            Some(("mode", m)) => {
                options.mode = Mode::from_keyword(m).ok_or(format!("unknown mode `{m}`"))?
            }
            Some(("default-linkage", l)) => {
                options.default_linkage =
                    SymbolLinkage::from_keyword(l).ok_or(format!("unknown linkage `{l}`"))?
            }
            None if word == "similar" => options.similar = true,
            _ => return Err(format!("unknown option `{word}`")),
        }
    }
    Ok(options)
}

/// The text the directives are checked against: the report, then the merged module.
fn run_file(path: &Path, text: &str) -> Result<String, String> {
    let options = parse_test_line(text)?;
    let read_options = ReadOptions {
        default_linkage: options.default_linkage,
        verify: true,
    };
    let mut module = read_module_text(path, text, read_options).map_err(|e| e.to_string())?;
    let similar = options.similar.then(|| SimilarOptions {
        min_saving: i64::MIN / 2,
        ..SimilarOptions::default()
    });
    let (merge_report, _) = merge_module_with(&mut module, options.mode, similar.as_ref());
    let clif = emit::module_to_clif(&module);
    // The output must be CLIF that reads back and verifies, directives included, and every
    // function must read back as exactly the function that was written.
    let reread = read_module_text(Path::new("<emitted>"), &clif, ReadOptions::default())
        .map_err(|e| format!("emitted CLIF does not read back: {e}\n{clif}"))?;
    for (written, read) in module.functions().zip(reread.functions()) {
        if clif_merge::compare(&written.func, &read.func).is_ne() {
            return Err(format!(
                "{} reads back as a different function:\n{}",
                written.name,
                read.func.display()
            ));
        }
    }
    Ok(format!("{}\n{clif}", report::to_text(&merge_report, None)))
}

fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let output = run_file(path, &text)?;
    let mut builder = filecheck::CheckerBuilder::new();
    let mut directives = 0;
    for line in text.lines() {
        if let Some(comment) = line.trim_start().strip_prefix(';') {
            let found = builder
                .directive(comment)
                .map_err(|e| format!("bad directive `{comment}`: {e}"))?;
            directives += usize::from(found);
        }
    }
    if directives == 0 {
        return Err("no check directives: a test that cannot fail".into());
    }
    let checker = builder.finish();
    let (ok, explanation) = checker
        .explain(&output, filecheck::NO_VARIABLES)
        .map_err(|e| e.to_string())?;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "directives failed:\n{explanation}\n--- output ---\n{output}"
        ))
    }
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests");
    let files = files::clif_files(&root);
    assert!(!files.is_empty(), "no filetests under {}", root.display());
    let trials = files
        .into_iter()
        .map(|file| {
            // The name is the path under filetests/, with `/` whatever the platform.
            let name = file
                .strip_prefix(&root)
                .expect("under filetests/")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            libtest_mimic::Trial::test(name, move || {
                check_file(&file).map_err(|e| format!("FAIL {}: {e}", file.display()).into())
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
