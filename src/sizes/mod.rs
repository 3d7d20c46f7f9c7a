//! Where the bytes went: size attribution of a merge, measured on the compiled objects, as data,
//! as text, as a page, and the per-symbol difference of two objects.
//!
//! # Attribution (`--size-baseline`)
//!
//! The module is compiled twice, merged and unmerged (no merging, no machine-code folding).
//! Every text byte of each object belongs to exactly one function, its *footprint*: its own
//! bytes and the alignment padding before it (the first function of a section also owns what
//! precedes it, the last what follows it); an alias or a removed function owns none. A
//! function's saving is its footprint unmerged minus its footprint merged (a function the merge
//! made, a private copy or a shared body, had 0 before: its bytes count against the saving).
//!
//! Each function a merge touched belongs to one *entry*: an exact class (its kept function and
//! the replaced ones), a similar group (its members and shared body), a global shared body (its
//! members in this unit and the body), or a machine-code fold (the functions whose code folding
//! took, by the function whose code they share). A name listed twice (a shared body that a later
//! round replaced is named by the function that replaced it; a kept function a later similar
//! round took) counts once: as a body (shared body, kept function) while it has code in the
//! merged object, else as a member; among bodies or among members, in the order of that list. The
//! entry's `saved_bytes` is the sum of its functions' savings. Its *kind*, per function: an exact
//! class's replaced member counts as what it became (`alias`, `thunk`, `removed`), the kept
//! function as the class's first replaced member; similar groups count as `similar`, global
//! shared bodies as `global`, and any function whose code machine-code folding took as `folded`.
//!
//! Functions no merge touched keep their code, but the padding before them changes when what is
//! before them in the layout moves. That change is counted with the nearest touched function
//! before them in the layout (the input's order, then the functions the merge made), in that
//! function's entry and kind (`EntrySizes::moved`); changes before the first touched function
//! count with the first. So the kinds add up to `text_bytes_unmerged - text_bytes` exactly, and
//! so do the entries.
//!
//! | file | what |
//! |---|---|
//! | `footprint.rs` | footprints of an object's functions |
//! | `attribution.rs` | entries and kinds ([`attribute`]) |
//! | `text.rs` | the text form, largest savings first ([`to_text`]) |
//! | `page.rs` | the self-contained HTML page ([`to_html`]) |
//! | `diff.rs` | per-symbol differences of two objects ([`diff_objects`]) |
//! | `holders.rs` | global merging: the program's functions that hold a shared body's content |

mod attribution;
mod diff;
mod footprint;
mod holders;
mod page;
mod text;

pub use attribution::{
    EntrySizes, MemberBytes, SavedByKind, SavingKind, SizeAttribution, attribute,
};
pub use diff::{ObjectDiff, PADDING_ROW, SymbolChange, diff_objects};
pub use holders::global_holders;
pub use page::to_html;
pub use text::{Saving, savings, to_text};
