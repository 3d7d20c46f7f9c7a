//! Shared helpers for the property tests: a generator of random valid CLIF functions
//! (`gen`), an equivalence-preserving renumbering and single-field mutations (`mutate`), and an
//! independent, text-based canonical form used as an oracle for "same function" (`canon`).

#![allow(dead_code)]

pub mod canon;
// `gen` is a reserved word in edition 2024, hence the raw identifier (the file is `gen.rs`).
pub mod r#gen;
pub mod modgen;
pub mod mutate;

#[allow(unused_imports)]
pub use self::r#gen as generator;

use std::path::{Path, PathBuf};

/// Every `.clif` file under `dir`, recursively, in sorted order.
pub fn clif_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(clif_files(&path));
        } else if path.extension().is_some_and(|e| e == "clif") {
            found.push(path);
        }
    }
    found
}
