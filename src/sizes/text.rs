//! The text form of the attribution: the kinds, then the entries, largest savings first.

use super::figures::{EntrySizes, SizeAttribution};
use crate::module::FuncName;
use crate::pass::MergeReport;
use std::fmt::Write;

/// One entry of the attribution, for listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saving<'a> {
    /// `class`, `similar`, `global` or `folded`.
    pub what: &'static str,
    /// The function whose body remains: the class's kept function, the shared body, or the
    /// function whose code folded ones share.
    pub name: &'a FuncName,
    /// Its figures.
    pub sizes: &'a EntrySizes,
    /// For a global shared body: the program's functions that hold its content.
    pub holders: Option<usize>,
}

/// Every entry, largest saving first (then by kind and name, so that the order is the same on
/// every run).
pub fn savings<'a>(report: &'a MergeReport, sizes: &'a SizeAttribution) -> Vec<Saving<'a>> {
    let mut all: Vec<Saving<'a>> = Vec::new();
    let each = |what, name, sizes| Saving {
        what,
        name,
        sizes,
        holders: None,
    };
    all.extend(
        report
            .classes
            .iter()
            .zip(&sizes.classes)
            .map(|(c, s)| each("class", &c.kept, s)),
    );
    all.extend(
        report
            .similar
            .iter()
            .flatten()
            .zip(&sizes.similar)
            .map(|(g, s)| each("similar", &g.shared, s)),
    );
    all.extend(
        report
            .global
            .iter()
            .flat_map(|g| &g.shared)
            .zip(&sizes.global)
            .enumerate()
            .map(|(at, (g, s))| Saving {
                holders: sizes.global_holders.get(at).copied(),
                ..each("global", &g.shared, s)
            }),
    );
    all.extend(sizes.folded.iter().map(|(kept, s)| each("folded", kept, s)));
    all.sort_by(|a, b| {
        b.sizes
            .saved
            .cmp(&a.sizes.saved)
            .then_with(|| a.what.cmp(b.what))
            .then_with(|| a.name.cmp(b.name))
    });
    all
}

/// The attribution as text: totals, the kinds, then the `top` largest savings (all when None),
/// each with its functions' bytes before and after.
pub fn to_text(report: &MergeReport, sizes: &SizeAttribution, top: Option<usize>) -> String {
    let mut out = String::new();
    let saved = sizes.text_bytes_unmerged as i64 - sizes.text_bytes as i64;
    let _ = writeln!(
        out,
        "where the bytes went: {saved} text bytes saved ({} unmerged, {} merged)",
        sizes.text_bytes_unmerged, sizes.text_bytes
    );
    let kinds: Vec<String> = sizes
        .by_kind
        .kinds()
        .iter()
        .map(|(kind, bytes)| format!("{} {bytes}", kind.keyword()))
        .collect();
    let _ = writeln!(out, "  by kind: {}", kinds.join(", "));
    let all = savings(report, sizes);
    let shown = top.unwrap_or(all.len()).min(all.len());
    for s in &all[..shown] {
        let holders = s
            .holders
            .map(|h| format!(", {h} in the program"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:>8} saved  {} {} ({} functions{holders})",
            s.sizes.saved,
            s.what,
            s.name,
            s.sizes.members.len()
        );
        for m in &s.sizes.members {
            let _ = writeln!(
                out,
                "    {:>8} -> {:<8} {:<8} {}",
                m.before, m.after, m.role, m.name
            );
        }
        if s.sizes.moved != 0 {
            let _ = writeln!(
                out,
                "    {:>8} padding of functions after it",
                s.sizes.moved
            );
        }
    }
    if shown < all.len() {
        let _ = writeln!(out, "  ... {} more (--top N shows more)", all.len() - shown);
    }
    out
}
