//! The report of a merge, for tools (JSON, a stable contract) and for people (text).

use crate::emit::object::ObjectReport;
use crate::pass::MergeReport;
use crate::sizes::{EntrySizes, SavedByKind, SizeAttribution};
use std::fmt::Write;

/// One JSON object: `functions`, `merged`, `classes[{kept, replaced[{name, by}]}]`, with
/// similar merging `similar[{shared, parameters, members[{name, by}]}]`, with a summary
/// `global{summary_functions, shared[{shared, parameters, members}]}`, and `object` when an object was
/// written. With the size attribution ([`crate::sizes`], `--size-baseline`): every class,
/// similar group and global shared body gains `saved_bytes` (a shared body also `holders`,
/// the program's functions with its content), and `object` gains
/// `saved_by_kind{alias, thunk, removed, folded, similar}` (and `global` with a summary) after
/// `text_bytes_unmerged`. A similar group that passes read-only records has `record_bytes`, as
/// `object` has for all of them: bytes outside text.
pub fn to_json(report: &MergeReport, object: Option<&ObjectReport>) -> String {
    let mut value = serde_json::to_value(report).expect("a report always serializes");
    if let Some(object) = object {
        let mut object_value = serde_json::to_value(object).expect("a report always serializes");
        if let Some(sizes) = &object.sizes {
            add_saved_bytes(&mut value, sizes);
            object_value = with_saved_by_kind(object_value, &sizes.by_kind);
        }
        value["object"] = object_value;
    }
    add_record_bytes(&mut value, report);
    serde_json::to_string_pretty(&value).expect("a report always serializes")
}

/// Adds `record_bytes` to every similar group that passes read-only records: what its
/// records add outside text (`saved_bytes` counts text only).
fn add_record_bytes(value: &mut serde_json::Value, report: &MergeReport) {
    let Some(groups) = value
        .get_mut("similar")
        .and_then(serde_json::Value::as_array_mut)
    else {
        return;
    };
    for (entry, group) in groups.iter_mut().zip(report.similar.iter().flatten()) {
        let bytes: u64 = group.records.iter().map(|r| r.footprint()).sum();
        if bytes > 0 {
            entry["record_bytes"] = bytes.into();
        }
    }
}

/// Adds `saved_bytes` to every class, similar group and global shared body of the report.
fn add_saved_bytes(report: &mut serde_json::Value, sizes: &SizeAttribution) {
    set_saved_bytes(report.get_mut("classes"), &sizes.classes);
    set_saved_bytes(report.get_mut("similar"), &sizes.similar);
    let global = report.get_mut("global").and_then(|g| g.get_mut("shared"));
    set_saved_bytes(global, &sizes.global);
    let global = report.get_mut("global").and_then(|g| g.get_mut("shared"));
    if let Some(bodies) = global.and_then(serde_json::Value::as_array_mut) {
        for (body, holders) in bodies.iter_mut().zip(&sizes.global_holders) {
            body["holders"] = (*holders).into();
        }
    }
}

/// Adds each entry's `saved_bytes` to the list's entry of the same place.
fn set_saved_bytes(list: Option<&mut serde_json::Value>, entries: &[EntrySizes]) {
    let Some(list) = list.and_then(serde_json::Value::as_array_mut) else {
        return;
    };
    for (entry, sizes) in list.iter_mut().zip(entries) {
        entry["saved_bytes"] = sizes.saved.into();
    }
}

/// `object` with `saved_by_kind` right after `text_bytes_unmerged`.
fn with_saved_by_kind(object: serde_json::Value, by_kind: &SavedByKind) -> serde_json::Value {
    let serde_json::Value::Object(fields) = object else {
        return object;
    };
    let mut out = serde_json::Map::new();
    for (key, value) in fields {
        let after = key == "text_bytes_unmerged";
        out.insert(key, value);
        if after {
            out.insert(
                "saved_by_kind".to_string(),
                serde_json::to_value(by_kind).expect("a report always serializes"),
            );
        }
    }
    serde_json::Value::Object(out)
}

/// The largest savings the text report lists by default (`--top N` changes it).
pub const DEFAULT_TOP: usize = 10;

/// A summary line, then one block per class, then the object's figures; with the size
/// attribution, then where the bytes went, the [`DEFAULT_TOP`] largest savings first.
pub fn to_text(report: &MergeReport, object: Option<&ObjectReport>) -> String {
    to_text_top(report, object, Some(DEFAULT_TOP))
}

/// [`to_text`], listing the `top` largest savings of the size attribution (all when None).
pub fn to_text_top(
    report: &MergeReport,
    object: Option<&ObjectReport>,
    top: Option<usize>,
) -> String {
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
            "object: {} ({}), text bytes: {}{}{}",
            o.target,
            o.format,
            o.text_bytes,
            o.text_bytes_unmerged
                .map(|u| format!(
                    " (unmerged: {u}, saved: {})",
                    u as i64 - o.text_bytes as i64
                ))
                .unwrap_or_default(),
            match o.record_bytes {
                0 => String::new(),
                n => format!(", read-only records: {n} bytes"),
            }
        );
        let _ = writeln!(
            out,
            "compiled: {}, aliases: {}, thunks: {}, removed: {}, folded machine code: {}",
            o.functions_compiled, o.aliases, o.thunks, o.removed, o.folded_machine_code
        );
        if let Some(sizes) = &o.sizes {
            out.push_str(&crate::sizes::to_text(report, sizes, top));
        }
    }
    out
}
