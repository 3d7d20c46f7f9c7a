//! clif-merge: LLVM's MergeFunctions pass for Cranelift IR, exact and deterministic.
//!
//! Functions that do exactly the same thing are merged: one keeps its body, the others become
//! thunks, aliases, or disappear, and their callers call the kept one. Equal recursive and
//! mutually recursive functions merge too, and the result does not depend on input order.
//!
//! ```
//! use clif_merge::{ClifModule, Mode, SymbolLinkage, merge_module};
//!
//! let text = "
//!     function %add1(i32) -> i32 {
//!     block0(v0: i32):
//!         v1 = iconst.i32 1
//!         v2 = iadd v0, v1
//!         return v2
//!     }
//!     function %inc(i32) -> i32 {
//!     block0(v9: i32):
//!         v8 = iconst.i32 1
//!         v7 = iadd v9, v8
//!         return v7
//!     }
//! ";
//! let mut module = ClifModule::new();
//! let mut ids = Vec::new();
//! for func in cranelift_reader::parse_functions(text).unwrap() {
//!     ids.push(module.define(func, SymbolLinkage::Local, None).unwrap());
//! }
//! let (report, _times) = merge_module(&mut module, Mode::Safe);
//! assert_eq!(report.merged, 1);
//! assert_eq!(report.classes[0].kept.to_string(), "%add1");
//! // `%inc` was local and nobody took its address: it is gone, and calls to it go to `%add1`.
//! assert_eq!(module.len(), 1);
//! // Ids are stable: `%inc`'s id still names it, and the report says where its body went.
//! assert!(module.is_merged_away(ids[1]));
//! assert_eq!(report.kept_for(ids[1]).unwrap().to_string(), "%add1");
//! assert_eq!(report.kept_for(ids[0]), None);
//! ```
//!
//! # Where everything lives
//!
//! The pipeline ([`pipeline`]) reads, merges, verifies and writes; each step is a module:
//!
//! | module | what it holds |
//! |---|---|
//! | [`batch`] | merging for embedders that compile each function themselves: typed decisions per key |
//! | [`merging_module`] | [`MergingModule`]: a cranelift-module `Module` that merges on the way to a JIT or object module, eagerly or at `finish` |
//! | [`MergeOptions`] | one set of options (mode, similar merging, summary, threads) that every entry point takes: [`merge_module_with_options`], [`pipeline`], [`batch`], [`MergingModule::with_options`] |
//! | [`pipeline`] | the whole job as one function (what the command line does): read, merge, verify, write, results as data |
//! | [`read`] | `.clif` text to a [`ClifModule`]: cranelift-reader, the CLIF verifier, `; linkage:` and `; alias:` directives, input limits |
//! | [`module`] | [`ClifModule`]: functions by stable [`FunctionId`], linkage, aliases, names |
//! | `references` (internal) | references between a function's declarations that neither the reader nor the verifier checks |
//! | [`refs`] | what every function refers to (callees, addresses taken), found once per module |
//! | [`compare`](mod@compare) | the total order over functions: a fingerprint per function (stable, versioned encoding; holes for similar merging) and its hash |
//! | `partition` (internal) | partition refinement to the greatest fixpoint, shared by the IR merge and folding |
//! | `policy` (internal) | the rules every merge follows: [`Mode`], [`Action`], which member keeps the body, what the others become, which may go, functions that read their own frame |
//! | `edit` (internal) | the IR edits every merge makes: thunks written and recognized ([`merge::thunk`]), calls with extra arguments, names a new function may take |
//! | [`merge`] | the IR merge: classes, the plan, the rewrite |
//! | [`similar`] | similar merging (`--similar`): functions equal but for constants, symbols or callees share one body with parameters |
//! | [`global`] | global merging across units: content keys, summaries and `combine`, round 2 |
//! | `pass` (internal) | the pass every entry point runs: global merging's round 2, the IR merge and similar merging in turn ([`merge_module_with_options`]), and one [`MergeReport`] of them all, with the stand-ins of removed similar members ([`MergeReport::stand_ins`]) |
//! | `fold` (internal) | machine-code folding after compilation, on the same policy and refiner |
//! | [`emit`] | the merged module as CLIF text, or as an ELF or Mach-O object ([`emit::object`]) |
//! | `verify` | `--verify`: every function run before and after merging in cranelift-interpreter (feature `verify`) |
//! | [`report`] | the report as JSON (a stable contract) or text |
//! | [`sizes`] | where the bytes went: size attribution by class and kind, its text and HTML forms, and the per-symbol diff of two objects |
//! | [`output`] | writing output files all or none, never replacing what is not a regular file |
//! | [`error`](Error) | [`Error`]: every step's typed error |
//!
//! The essay on *what* is compared and why is in [`compare`](mod@compare); the one on how classes are found
//! in [`merge`]; similar merging's rules in [`similar`]; the object writer's phases in
//! [`emit::object`].
//!
//! The modules are layers, each using only those below it, with no cycle
//! (`tests/module_cycles.rs`): at the bottom the module, the comparison and the references
//! (`module`, `compare`, `refs`, `partition`), then the rules and IR edits every merge shares
//! (`policy`, `edit`); on them the ways of merging, siblings that never use each other
//! ([`merge`], [`similar`], [`global`]); on those the pass that runs them and reports (`pass`);
//! on top the entry points ([`pipeline`], [`batch`], [`MergingModule`]) and what reads the
//! report (`verify`, [`report`], [`sizes`]).
//!
//! # Features
//!
//! An embedder builds only what it uses: with `default-features = false` the library is the
//! merge itself (the module, the comparison, exact, similar and global merging, [`batch`],
//! [`MergingModule`], [`MergeOptions`]) on cranelift-codegen without a backend,
//! cranelift-module, serde and a few small crates. Add what you need:
//!
//! | feature | what it adds | dependencies |
//! |---|---|---|
//! | `x86_64`, `aarch64` | the Cranelift backend of that target | (cranelift-codegen's `x86`, `arm64`) |
//! | `all-native-arch` | every native backend (also s390x, riscv64) | |
//! | `object` | `emit::object` (ELF and Mach-O objects) and machine-code folding; re-exports `cranelift_object` | cranelift-object, cranelift-native, object |
//! | `reader` | `read`: `.clif` text to a [`ClifModule`] ([`read_module_text`], [`read_files`]); re-exports `cranelift_reader` | cranelift-reader |
//! | `pipeline` | `pipeline` (the whole job as one function), `report` (JSON, text), `output` (all or none); implies `reader` and `object` | serde_json, tempfile |
//! | `parallel` | the parallel phases ([`MergeOptions::threads`]); without it one thread, the same results | rayon |
//! | `verify` | `verify`: every function run before and after merging | cranelift-interpreter |
//! | `xz` | `.clif.xz` input; implies `reader` | liblzma |
//! | `cli` | the `clif-merge` command; implies `pipeline`, `parallel`, `xz`, `verify`, `x86_64`, `aarch64` | clap, anyhow, indicatif |
//!
//! The default is `cli` and `all-native-arch`: everything. A `MergingModule` in front of an
//! `ObjectModule` for x86_64 needs `features = ["x86_64", "object"]`; with them
//! `MergingModule::for_object` makes one for a target named as on the command line
//! (`examples/embed.rs`, 15 lines in `main`, is the smallest embedder).
//!
//! The Cranelift crates the API names are re-exported ([`cranelift_codegen`],
//! [`cranelift_module`], [`cranelift_entity`], and `cranelift_object`, `cranelift_reader` with
//! their features): use them, and your Cranelift is the one this crate was built with.

pub mod batch;
pub mod compare;
pub(crate) mod edit;
pub mod emit;
mod error;
#[cfg(feature = "object")]
pub(crate) mod fold;
pub mod global;
mod guard;
pub mod merge;
pub mod merging_module;
pub mod module;
mod name;
#[cfg(feature = "pipeline")]
pub mod output;
mod parallel;
pub(crate) mod partition;
mod pass;
#[cfg(feature = "pipeline")]
pub mod pipeline;
pub(crate) mod policy;
#[cfg(feature = "reader")]
pub mod read;
pub(crate) mod references;
pub mod refs;
#[cfg(feature = "pipeline")]
pub mod report;
pub mod similar;
#[cfg(feature = "object")]
pub mod sizes;
#[cfg(any(feature = "reader", feature = "verify"))]
mod verifier;
#[cfg(feature = "verify")]
pub mod verify;

// The Cranelift crates the API names, so that an embedder uses the very versions this crate
// was built with.
pub use cranelift_codegen;
pub use cranelift_entity;
pub use cranelift_module;
#[cfg(feature = "object")]
pub use cranelift_object;
#[cfg(feature = "reader")]
pub use cranelift_reader;

pub use compare::{Fingerprint, compare};
pub use error::{Error, Result};
pub use guard::panic_is_caught;
pub use merge::PassTimes;
pub use merging_module::{FinishError, MergingModule};
pub use module::{Alias, ClifModule, FuncName, FunctionId, ModuleFunction, SymbolLinkage};
pub use pass::{MergeOptions, merge_module_with_options};
pub use pass::{MergeReport, merge_module, merge_module_with};
pub use policy::{Action, Mode};
#[cfg(feature = "reader")]
pub use read::{InputError, ReadOptions, read_files, read_module_text};
pub use similar::SimilarOptions;

/// The README's Rust examples, compiled and run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
