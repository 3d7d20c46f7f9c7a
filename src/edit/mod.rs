//! The IR edits every merge makes, beside the rules of `crate::policy` in the bottom layer: the
//! exact merge (`crate::merge`), similar merging (`crate::similar`) and global merging
//! (`crate::global`) write them, and none of those is needed to write them.
//!
//! | file | what it holds |
//! |---|---|
//! | `thunk.rs` | writing and recognizing thunks |
//! | `callsite.rs` | calls that pass extra arguments (for similar merging) |
//! | `names.rs` | the names a new function may not take |

pub(crate) mod callsite;
mod names;
pub mod thunk;

pub(crate) use names::{name_is_free, names_in_use};
