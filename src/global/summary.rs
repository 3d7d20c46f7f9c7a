//! Summaries: what round 2 of global merging knows of the other units, as a versioned text file.
//!
//! ```text
//! clif-merge summary 5
//! encoding 2
//! f 5d1c…(32 hex digits) export - u0:12 p 77a0…(32 hex digits) i2a cu0:612 n%table
//! f 9e04…(32 hex digits) export - u0:13 r 41b7…(32 hex digits) p 3c58…(32 hex digits) i7
//! f 0b93…(32 hex digits) local a %helper
//! ```
//!
//! The first line names the format and its version ([`SUMMARY_VERSION`]), the second the
//! comparison encoding the keys were computed with ([`crate::compare::ENCODING_VERSION`]). Then
//! one line per defined function, sorted by name and then by the rest of the line, no line twice:
//! `f`, the function's content key (`global/key.rs`), its linkage, `a` when its address is
//! taken in its unit (`-` otherwise), and its name as CLIF writes it; then, for a function that
//! calls itself, `r` and its content key with those calls written as calls of its name (the key
//! of a copy of it in another unit that calls it); then, for a function that
//! may share a body with parameters, `p`, its *parameter key* (the same hash of its fingerprint
//! with holes, `crate::similar::across`) and the value of each hole in walk order: `i` and the
//! hexadecimal bits of an integer constant, `f`/`d` those of an `f32`/`f64` constant, `n` and the
//! name of a `symbol`, `c` and the name of a callee. A summary is plain ASCII with `\n` line
//! ends (`\r\n` reads the same), holds no paths, times or machine facts, and is the same for the same units on every
//! machine and in every build with these two versions.

use super::key::{FunctionKey, ParamRecord, function_key, walk_weight};
use crate::compare::{ENCODING_VERSION, FingerprintWriter, Hole};
use crate::module::{ClifModule, FuncName, SymbolLinkage};
use crate::parallel;
use crate::refs::{FunctionRefs, ModuleRefs};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;

/// The version of the summary format and of its keys' hash (3: token runs hashed in four
/// lanes; 4: the `r` key of functions that call themselves; 5: constants are holes at each
/// use, so parameter keys and holes changed); a summary of another version is refused.
pub const SUMMARY_VERSION: u32 = 5;

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
    /// For a function that calls itself: its content key with those calls written as calls of
    /// its name (`FunctionKey::self_by_name` in `global/key.rs`).
    pub self_by_name: Option<u128>,
    /// Its parameter key and hole values, when it may share a body with parameters.
    pub param: Option<ParamRecord>,
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
        // References are found in the keying pass, while each function is in the cache: a pass
        // of its own cost a tenth of summarizing. Only whether an address is taken needs them
        // all, and is read after.
        let keyed = parallel::map_weighted(
            module.ids(),
            walk_weight(module),
            FingerprintWriter::new,
            |writer, _, &id| {
                let refs = FunctionRefs::of(module, &module.function(id).func);
                let key = function_key(module, &refs.callees, id, writer);
                (refs, key)
            },
        );
        let (functions, keys): (Vec<FunctionRefs>, Vec<FunctionKey>) = keyed.into_iter().unzip();
        let refs = ModuleRefs::from_functions(module, functions);
        let entries = module
            .ids()
            .iter()
            .zip(keys)
            .map(|(&id, key)| {
                let mf = module.function(id);
                SummaryEntry {
                    name: mf.name.clone(),
                    key: key.key,
                    linkage: mf.linkage,
                    address_taken: refs.address_taken(id),
                    self_by_name: key.self_by_name,
                    param: key.param,
                }
            })
            .collect();
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
    /// any order and grouping. A k-way merge of the sorted lists that moves entries, never
    /// copies them: linear in the entries for a bounded number of inputs (`O(n log k)` for k
    /// inputs).
    pub fn combine(parts: impl IntoIterator<Item = Summary>) -> Summary {
        let mut lists: Vec<std::vec::IntoIter<SummaryEntry>> =
            parts.into_iter().map(|s| s.entries.into_iter()).collect();
        let total = lists.iter().map(ExactSizeIterator::len).sum();
        let mut heap: BinaryHeap<Reverse<(SummaryEntry, usize)>> = lists
            .iter_mut()
            .enumerate()
            .filter_map(|(p, list)| list.next().map(|e| Reverse((e, p))))
            .collect();
        let mut entries: Vec<SummaryEntry> = Vec::with_capacity(total);
        while let Some(Reverse((entry, p))) = heap.pop() {
            if let Some(next) = lists[p].next() {
                heap.push(Reverse((next, p)));
            }
            if entries.last() != Some(&entry) {
                entries.push(entry);
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
            write!(text, "f {:032x} {linkage} {address} {}", e.key, e.name).unwrap();
            if let Some(key) = e.self_by_name {
                write!(text, " r {key:032x}").unwrap();
            }
            if let Some(param) = &e.param {
                write!(text, " p {:032x}", param.key).unwrap();
                for hole in &param.holes {
                    text.push(' ');
                    write_hole(&mut text, hole);
                }
            }
            text.push('\n');
        }
        text
    }

    /// Reads a summary written by [`Summary::to_text`]; `\r\n` line ends (a summary that went
    /// through a Windows editor or git's `autocrlf`) read as `\n`. A message that quotes the
    /// text shows its control characters escaped (`\t`, `\u{1b}`), so that it prints as one
    /// line.
    pub fn parse(text: &str) -> Result<Summary, SummaryError> {
        Summary::parse_lines(text).map_err(|e| SummaryError {
            line: e.line,
            message: e.message.chars().map(shown).collect(),
        })
    }

    fn parse_lines(text: &str) -> Result<Summary, SummaryError> {
        let mut lines = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .enumerate()
            .map(|(i, l)| (i + 1, l));
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

/// A character of a message as it can be printed on one line: control characters escaped.
fn shown(c: char) -> String {
    match c.is_control() {
        true => c.escape_debug().to_string(),
        false => c.to_string(),
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

fn write_hole(text: &mut String, hole: &Hole) {
    match hole {
        Hole::Int(bits) => write!(text, "i{bits:x}"),
        Hole::F32(bits) => write!(text, "f{bits:x}"),
        Hole::F64(bits) => write!(text, "d{bits:x}"),
        Hole::Name(name) => write!(text, "n{name}"),
        Hole::Callee(name) => write!(text, "c{name}"),
        Hole::SelfCall => write!(text, "s"),
    }
    .unwrap();
}

fn parse_hole(word: &str) -> Result<Hole, String> {
    let bad = || format!("bad hole value `{word}`");
    let (tag, rest) = word.split_at_checked(1).ok_or_else(bad)?;
    let name = || FuncName::parse(rest).ok_or_else(bad);
    Ok(match tag {
        "i" => Hole::Int(u64::from_str_radix(rest, 16).map_err(|_| bad())?),
        "f" => Hole::F32(u32::from_str_radix(rest, 16).map_err(|_| bad())?),
        "d" => Hole::F64(u64::from_str_radix(rest, 16).map_err(|_| bad())?),
        "n" => Hole::Name(name()?),
        "c" => Hole::Callee(name()?),
        "s" if rest.is_empty() => Hole::SelfCall,
        _ => return Err(bad()),
    })
}

fn parse_key(key: &str) -> Result<u128, String> {
    if key.len() != 32 {
        return Err(format!("a key has 32 hex digits: {key}"));
    }
    u128::from_str_radix(key, 16).map_err(|_| format!("bad key {key}"))
}

fn parse_entry(text: &str) -> Result<SummaryEntry, String> {
    let fields: Vec<&str> = text.split(' ').collect();
    let (&[kind, key, linkage, address, name], rest) = fields.split_at(fields.len().min(5)) else {
        return Err(format!(
            "expected `f KEY LINKAGE a|- NAME [r KEY] [p KEY HOLE...]`: {text}"
        ));
    };
    let (self_by_name, rest) = match rest {
        ["r", key, rest @ ..] => (Some(parse_key(key)?), rest),
        _ => (None, rest),
    };
    let param = match rest {
        [] => None,
        ["p", key, holes @ ..] => Some(ParamRecord {
            key: parse_key(key)?,
            holes: holes
                .iter()
                .map(|h| parse_hole(h))
                .collect::<Result<_, _>>()?,
        }),
        _ => return Err(format!("expected `p KEY HOLE...` after the name: {text}")),
    };
    if kind != "f" {
        return Err(format!("unknown entry kind `{kind}`"));
    }
    let key = parse_key(key)?;
    let linkage =
        SymbolLinkage::from_keyword(linkage).ok_or_else(|| format!("unknown linkage {linkage}"))?;
    let address_taken = match address {
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
        self_by_name,
        param,
    })
}
