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
//! # As a library
//!
//! [`crate::pipeline::run`] with `size_baseline` and an object puts the attribution in the
//! object's report; [`attribute`] computes it from two objects written by
//! [`crate::emit::object::write_object`].
//!
//! ```
//! use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target};
//! use clif_merge::pipeline::{PipelineOptions, run};
//! use clif_merge::{Mode, read_module_text};
//!
//! let text = "
//!     function %a(i64) -> i64 {
//!     block0(v0: i64):
//!         v1 = iconst.i64 7
//!         v2 = imul v0, v1
//!         v3 = iadd v2, v1
//!         return v3
//!     }
//!     function %b(i64) -> i64 {
//!     block0(v0: i64):
//!         v1 = iconst.i64 7
//!         v2 = imul v0, v1
//!         v3 = iadd v2, v1
//!         return v3
//!     }
//! ";
//! let module = read_module_text("a.clif".as_ref(), text, Default::default()).unwrap();
//! let options = PipelineOptions {
//!     object: Some(ObjectOptions {
//!         target: parse_target("x86_64-unknown-linux-gnu").unwrap(),
//!         opt_level: OptLevel::Speed,
//!         isa: Default::default(),
//!         function_sections: false,
//!         mode: Mode::Safe,
//!         fold_machine_code: true,
//!     }),
//!     size_baseline: true,
//!     ..Default::default()
//! };
//! let done = run(module, &options).unwrap();
//! let sizes = done.object.unwrap().report.sizes.unwrap();
//! let saved = sizes.text_bytes_unmerged as i64 - sizes.text_bytes as i64;
//! // `%b` became a thunk: the class saved it all, as `thunk`.
//! assert_eq!(sizes.classes[0].saved, saved);
//! assert_eq!(sizes.by_kind.thunk, saved);
//! assert_eq!(sizes.by_kind.total(), saved);
//! ```
//!
//! | file | what |
//! |---|---|
//! | `footprint.rs` | footprints of an object's functions |
//! | `figures.rs` | what entries and kinds saved, as data ([`SizeAttribution`]) |
//! | `attribution.rs` | computing them from two objects ([`attribute`]) |
//! | `text.rs` | the text form, largest savings first ([`to_text`]) |
//! | `page.rs` | the self-contained HTML page ([`to_html`]) |
//! | `diff.rs` | per-symbol differences of two objects ([`diff_objects`]) |
//! | `holders.rs` | global merging: the program's functions that hold a shared body's content |

mod attribution;
mod diff;
mod figures;
mod footprint;
mod holders;
mod page;
mod text;

pub use attribution::attribute;
pub use diff::{ObjectDiff, PADDING_ROW, SymbolChange, diff_objects};
pub use figures::{EntrySizes, MemberBytes, SavedByKind, SavingKind, SizeAttribution};
pub use holders::global_holders;
pub use page::to_html;
pub use text::{Saving, savings, to_text};
