//! Summaries: what round 2 of global merging knows of the other units, as a versioned text file.
//!
//! ```text
//! clif-merge summary 1
//! encoding 2
//! f 5d1c…(32 hex digits) export - u0:12
//! f 0b93…(32 hex digits) local a %helper
//! ```
//!
//! The first line names the format and its version ([`SUMMARY_VERSION`]), the second the
//! comparison encoding the keys were computed with ([`crate::compare::ENCODING_VERSION`]). Then
//! one line per defined function, sorted by name and then by the rest of the line, no line twice:
//! `f`, the function's content key ([`super::key`]), its linkage, `a` when its address is
//! taken in its unit (`-` otherwise), and its name as CLIF writes it. A summary is plain ASCII
//! with `\n` line ends, holds no paths, times or machine facts, and is the same for the same
//! units on every machine and in every build with these two versions.

use super::key::content_key;
use crate::compare::{ENCODING_VERSION, FingerprintWriter};
use crate::module::{ClifModule, FuncName, SymbolLinkage};
use crate::parallel;
use crate::refs::ModuleRefs;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;

/// The version of the summary format; a summary of another version is refused.
pub const SUMMARY_VERSION: u32 = 1;

/// One defined function of a unit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SummaryEntry {
    /// The function's name.
    pub name: FuncName,
    /// Its content key.
    pub key: u128,
    /// Its linkage.
    pub linkage: SymbolLinkage,
    /// Whether its address is taken in its unit.
    pub address_taken: bool,
}

/// The functions of one or more units (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    entries: Vec<SummaryEntry>,
}

/// A summary that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{line}: {message}")]
pub struct SummaryError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl Summary {
    /// The summary of a unit: every function with a body (round 1).
    pub fn of_module(module: &ClifModule) -> Summary {
        let refs = ModuleRefs::of(module);
        let entries = parallel::map(module.ids(), FingerprintWriter::new, |writer, _, &id| {
            let mf = module.function(id);
            SummaryEntry {
                name: mf.name.clone(),
                key: content_key(writer, &mf.func),
                linkage: mf.linkage,
                address_taken: refs.address_taken(id),
            }
        });
        Summary::from_entries(entries)
    }

    /// A summary of these entries, in summary order.
    pub fn from_entries(mut entries: Vec<SummaryEntry>) -> Summary {
        entries.sort();
        entries.dedup();
        Summary { entries }
    }

    /// Every entry, in summary order.
    pub fn entries(&self) -> &[SummaryEntry] {
        &self.entries
    }

    /// The union of summaries: associative and commutative, so the result is the same bytes in
    /// any order and grouping. A k-way merge of sorted lists: linear in the entries for a
    /// bounded number of inputs (`O(n log k)` for k inputs).
    pub fn combine(parts: &[Summary]) -> Summary {
        let mut heap: BinaryHeap<Reverse<(&SummaryEntry, usize, usize)>> = parts
            .iter()
            .enumerate()
            .filter_map(|(p, s)| s.entries.first().map(|e| Reverse((e, p, 0))))
            .collect();
        let mut entries: Vec<SummaryEntry> =
            Vec::with_capacity(parts.iter().map(|s| s.entries.len()).sum());
        while let Some(Reverse((entry, p, i))) = heap.pop() {
            if entries.last() != Some(entry) {
                entries.push(entry.clone());
            }
            if let Some(next) = parts[p].entries.get(i + 1) {
                heap.push(Reverse((next, p, i + 1)));
            }
        }
        Summary { entries }
    }

    /// The summary as text (see the module docs).
    pub fn to_text(&self) -> String {
        let mut text =
            format!("clif-merge summary {SUMMARY_VERSION}\nencoding {ENCODING_VERSION}\n");
        for e in &self.entries {
            let address = if e.address_taken { "a" } else { "-" };
            let linkage = e.linkage.keyword();
            writeln!(text, "f {:032x} {linkage} {address} {}", e.key, e.name).unwrap();
        }
        text
    }

    /// Reads a summary written by [`Summary::to_text`].
    pub fn parse(text: &str) -> Result<Summary, SummaryError> {
        let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
        expect_header(
            lines.next(),
            "clif-merge summary",
            SUMMARY_VERSION,
            "format",
        )?;
        expect_header(
            lines.next(),
            "encoding",
            ENCODING_VERSION,
            "comparison encoding",
        )?;
        let mut entries: Vec<SummaryEntry> = Vec::new();
        for (line, text) in lines {
            if text.is_empty() {
                continue;
            }
            let entry = parse_entry(text).map_err(|message| SummaryError { line, message })?;
            if entries.last().is_some_and(|last| *last >= entry) {
                return Err(SummaryError {
                    line,
                    message: "entries are not sorted (or one is repeated)".into(),
                });
            }
            entries.push(entry);
        }
        Ok(Summary { entries })
    }
}

fn expect_header(
    line: Option<(usize, &str)>,
    word: &str,
    version: u32,
    what: &str,
) -> Result<(), SummaryError> {
    let (line, text) = line.unwrap_or((1, ""));
    let Some(found) = text.strip_prefix(word).and_then(|r| r.strip_prefix(' ')) else {
        return Err(SummaryError {
            line,
            message: format!("not a clif-merge summary: expected `{word} {version}`"),
        });
    };
    if found != version.to_string() {
        return Err(SummaryError {
            line,
            message: format!(
                "summary {what} version {found}, this clif-merge reads version {version}: \
                 make the summaries again with this clif-merge"
            ),
        });
    }
    Ok(())
}

fn parse_entry(text: &str) -> Result<SummaryEntry, String> {
    let fields: Vec<&str> = text.splitn(5, ' ').collect();
    let [kind, key, linkage, address, name] = fields.as_slice() else {
        return Err(format!("expected `f KEY LINKAGE a|- NAME`: {text}"));
    };
    if *kind != "f" {
        return Err(format!("unknown entry kind `{kind}`"));
    }
    if key.len() != 32 {
        return Err(format!("a key has 32 hex digits: {key}"));
    }
    let key = u128::from_str_radix(key, 16).map_err(|_| format!("bad key {key}"))?;
    let linkage =
        SymbolLinkage::from_keyword(linkage).ok_or_else(|| format!("unknown linkage {linkage}"))?;
    let address_taken = match *address {
        "a" => true,
        "-" => false,
        other => return Err(format!("expected `a` or `-`, found `{other}`")),
    };
    let name = FuncName::parse(name).ok_or_else(|| format!("bad function name {name}"))?;
    Ok(SummaryEntry {
        name,
        key,
        linkage,
        address_taken,
    })
}
