//! The report of a merge, for tools (JSON, a stable contract) and for people (text).

use crate::emit::object::ObjectReport;
use crate::merge::MergeReport;
use std::fmt::Write;

/// One JSON object: `functions`, `merged`, `classes[{kept, replaced[{name, by}]}]`, with
/// similar merging `similar[{shared, parameters, members[{name, by}]}]`, with a summary
/// `global{summary_functions, shared[{shared, parameters, members}]}`, and `object` when an object was
/// written.
pub fn to_json(report: &MergeReport, object: Option<&ObjectReport>) -> String {
    let mut value = serde_json::to_value(report).expect("a report always serializes");
    if let Some(object) = object {
        value["object"] = serde_json::to_value(object).expect("a report always serializes");
    }
    serde_json::to_string_pretty(&value).expect("a report always serializes")
}

/// A summary line, then one block per class, then the object's figures.
pub fn to_text(report: &MergeReport, object: Option<&ObjectReport>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "functions: {}, merged: {}, classes: {}{}",
        report.functions,
        report.merged,
        report.classes.len(),
        match &report.similar {
            Some(groups) => format!(", similar groups: {}", groups.len()),
            None => String::new(),
        }
    );
    for class in &report.classes {
        let _ = writeln!(out, "class kept {}", class.kept);
        for r in &class.replaced {
            let _ = writeln!(out, "  {} {}", r.by.keyword(), r.name);
        }
    }
    for group in report.similar.iter().flatten() {
        let _ = writeln!(
            out,
            "similar shared {} (+{} parameters)",
            group.shared, group.parameters
        );
        for m in &group.members {
            let _ = writeln!(out, "  {} {}", m.by.keyword(), m.name);
        }
    }
    if let Some(global) = &report.global {
        let _ = writeln!(
            out,
            "global: {} functions in the summary, {} shared bodies, {} functions made thunks",
            global.summary_functions,
            global.shared.len(),
            global.members()
        );
        for shared in &global.shared {
            let parameters = match shared.parameters {
                0 => String::new(),
                n => format!(" (+{n} parameters)"),
            };
            let _ = writeln!(out, "global shared {}{parameters}", shared.shared);
            for m in &shared.members {
                let _ = writeln!(out, "  member {m}");
            }
        }
    }
    if let Some(o) = object {
        let _ = writeln!(
            out,
            "object: {} ({}), text bytes: {}{}",
            o.target,
            o.format,
            o.text_bytes,
            o.text_bytes_unmerged
                .map(|u| format!(
                    " (unmerged: {u}, saved: {})",
                    u as i64 - o.text_bytes as i64
                ))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "compiled: {}, aliases: {}, thunks: {}, removed: {}, folded machine code: {}",
            o.functions_compiled, o.aliases, o.thunks, o.removed, o.folded_machine_code
        );
    }
    out
}
