//! clif-merge: LLVM's MergeFunctions pass for Cranelift IR.
//!
//! The pipeline:
//! 1. `read`: `.clif` files (or `.clif.xz`) → a [`Module`] of functions with linkage and aliases,
//!    parsed by cranelift-reader and checked by the CLIF verifier. Embedders build a [`Module`]
//!    from their own [`cranelift_codegen::ir::Function`]s instead.
//! 2. `compare`: every function → a fingerprint, its fields in a CFG-ordered walk with values and
//!    blocks by serial number; fingerprints are totally ordered, and hashed.
//! 3. `merge`: an ordered tree of fingerprints (`fn_tree`) makes the first classes; a worklist
//!    (`deferred`) splits them by the classes of the functions they call, until stable. Equal
//!    recursive functions merge.
//! 4. `merge::actions`: per class, keep one function; redirect callers, and turn the others into
//!    thunks or aliases, or remove them.
//! 5. `emit` and `report`: the module back as CLIF, and what was merged (JSON or text).

pub mod compare;
pub mod emit;
mod guard;
pub mod merge;
pub mod module;
pub mod output;
mod parallel;
pub mod read;
pub mod references;
pub mod report;
pub mod verify;

pub use compare::{Fingerprint, compare};
pub use guard::panic_is_caught;
pub use merge::{Action, MergeReport, Mode, PassTimes, merge_module};
pub use module::{Alias, FuncId, FuncName, Linkage, Module, ModuleFunction};
pub use read::{InputError, ReadOptions, read_files, read_module_text};
