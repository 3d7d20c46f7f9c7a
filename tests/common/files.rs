//! Finding test files.

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
