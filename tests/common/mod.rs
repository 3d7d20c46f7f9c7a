//! Shared helpers for the property tests: a generator of random valid CLIF functions
//! (`gen`), an equivalence-preserving renumbering and single-field mutations (`mutate`), and an
//! independent, text-based canonical form used as an oracle for "same function" (`canon`).

#![allow(dead_code)]

pub mod canon;
pub mod equivalence;
pub mod genmod;
pub mod live;
// `gen` is a reserved word in edition 2024, hence the raw identifier (the file is `gen.rs`).
pub mod r#gen;
pub mod modgen;
pub mod mutate;
pub mod split;

#[allow(unused_imports)]
pub use self::r#gen as generator;

// Also included on its own by `tests/filetests.rs`, which needs nothing else from here.
mod files;
#[allow(unused_imports)]
pub use files::clif_files;
