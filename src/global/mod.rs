//! Global merging: equal functions merged across separately compiled units, through stable
//! summaries, so that any linker folds them (seed `003`, "Global Function Merging", without the
//! linker's identical-code folding).
//!
//! # The flow
//!
//! 1. *Summarize* each unit ([`Summary::of_module`]): per defined function, a stable 128-bit key
//!    of its content (`key.rs`), its linkage and whether its address is taken.
//! 2. *Combine* the summaries ([`Summary::combine`]): a sorted union, the same bytes whatever the
//!    order and grouping of its inputs, so a build system may combine in a tree.
//! 3. *Merge each unit knowing the others* ([`merge_with_summary`], then the usual merge): a
//!    function whose key a function of *another* unit has becomes a thunk to a shared body named
//!    `%clifmerge_<key>`, emitted with [`SymbolLinkage::LinkOnce`](crate::SymbolLinkage): in an
//!    ELF COMDAT group or as a Mach-O weak definition, of which the linker keeps one copy;
//!    functions that differ only in callees the summary says are equal (or, with `--similar`,
//!    in constants, symbols and callees) share a body with parameters (`params`).
//!
//! # Why a stale or wrong summary costs bytes, never behaviour
//!
//! A unit may be rebuilt against a summary made before another unit changed, or a summary may be
//! wrong. Round 2 therefore never trusts the summary for what a function does:
//!
//! - A unit only ever redirects *its own* functions, to a body it emits *itself*, made from the
//!   very function it redirects or from another of its functions whose comparison tokens it
//!   compared with it (equal keys are not enough). It never makes a call or a symbol of its own
//!   go to another unit's function, and never changes a call to another unit's function.
//! - The shared body's name is derived from its full content: the key is a hash of every field
//!   the exact comparator compares, names of callees and data by identity (the names the unit
//!   really calls), and calls to itself as a self-reference (which call the shared body),
//!   hashed with BLAKE3 so that not even a unit crafted for it can collide with another's body.
//!   In an object, the body's symbol also names the build: the target and every codegen setting
//!   ([`shared_symbol`]), so that units compiled with other settings never share a copy. Equal
//!   symbols mean equal content compiled alike, so whichever copy the linker keeps, every
//!   member runs its own content. (Two copies whose blocks are laid out in another order may
//!   allocate registers otherwise: their instructions and behaviour are the same; see the
//!   comparator's table in `crate::compare`.)
//! - A function that refers to a `local` function of its unit is never shared: another unit may
//!   hold a local function of the same name and another body, so there the name would not say
//!   what is called.
//! - The summary only says *which* functions are worth it: a function whose partner changed or
//!   vanished still becomes a thunk to a shared body no other unit emits, which costs a thunk.
//!
//! Functions equal only because they call *different* functions of other units that are equal
//! (callers of duplicates, recursion through another unit) are found by the whole program's
//! exact merge computed from the summary (`classes`), but never made to call one of those
//! callees: a stale summary may be wrong about their equality. They share a body that takes the
//! callees as parameters, and each passes its own (`crate::similar::across`). With `--similar`,
//! functions equal but for constants, symbols and callees share a body likewise.
//!
//! The rules of one module still hold: preemptible functions are never shared; a function whose
//! address is taken keeps its own address (members are thunks, never aliases of the shared
//! body); functions of one unit with one key share one body and are then merged by the usual
//! pass.

mod apply;
mod classes;
pub(crate) mod key;
mod params;
mod report;
pub mod summary;

#[cfg(test)]
mod tests;

pub use apply::{MIN_INSTRUCTIONS, merge_with_summary, shared_name, shared_symbol};
pub use key::ParamRecord;
pub use report::{GlobalReport, SharedBody};
pub use summary::{SUMMARY_VERSION, Summary, SummaryEntry, SummaryError};
