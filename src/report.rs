//! The report of a merge, for tools (JSON, a stable contract) and for people (text).

use crate::merge::MergeReport;
use std::fmt::Write;

/// One JSON object: `functions`, `merged`, `classes[{kept, replaced[{name, by}]}]`.
pub fn to_json(report: &MergeReport) -> String {
    serde_json::to_string_pretty(report).expect("a report always serializes")
}

/// A summary line, then one block per class.
pub fn to_text(report: &MergeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "functions: {}, merged: {}, classes: {}",
        report.functions,
        report.merged,
        report.classes.len()
    );
    for class in &report.classes {
        let _ = writeln!(out, "class kept {}", class.kept);
        for r in &class.replaced {
            let _ = writeln!(out, "  {} {}", r.by.keyword(), r.name);
        }
    }
    out
}
