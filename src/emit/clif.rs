//! Writing a module back as CLIF text that cranelift-reader parses and the verifier accepts.
//!
//! The text opens with the directives that carry what CLIF itself cannot say (see `read`): a
//! `; linkage:` line for every symbol whose linkage is not `export`, and an `; alias:` line for
//! every alias, followed by `; linkage:` for the alias when needed. The functions follow in
//! module order, printed by Cranelift's own `Display`.

use crate::module::{Linkage, Module};
use std::fmt::Write;

/// The module as CLIF text.
pub fn module_to_clif(module: &Module) -> String {
    let mut out = String::new();
    for mf in module.functions() {
        if mf.linkage != Linkage::Export {
            let _ = writeln!(out, "; linkage: {} {}", mf.name, mf.linkage.keyword());
        }
    }
    for alias in module.aliases() {
        let _ = writeln!(out, "; alias: {} = {}", alias.name, alias.target);
        if alias.linkage != Linkage::Export {
            let _ = writeln!(out, "; linkage: {} {}", alias.name, alias.linkage.keyword());
        }
    }
    for mf in module.functions() {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = write!(out, "{}", mf.func.display());
    }
    out
}
