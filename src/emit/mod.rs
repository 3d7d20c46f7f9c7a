//! Writing the merged module: as CLIF text (`clif`) or as a relocatable object (`object`).

pub mod clif;
#[cfg(feature = "object")]
pub mod object;

pub use clif::module_to_clif;
