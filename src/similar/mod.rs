//! Similar merging (`--similar`): functions equal but for some constants, `symbol` addresses or
//! direct callees become one *shared body* that takes those as parameters; each member becomes
//! a thunk that passes its own values, or — when nothing but our rewritten calls can reach it —
//! disappears, its callers calling the shared body with the values themselves.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | this essay, [`SimilarOptions`], the report's [`SimilarGroup`] |
//! | `entry.rs` | the entry points: [`merge_similar`], a removed member's [`stand_in`] |
//! | `find.rs` | candidates, fingerprints with holes, groups |
//! | `params.rs` | which positions become parameters, in what order |
//! | `cost.rs` | the cost model and the register budget |
//! | `measure.rs` | what a chosen group saves, compiled (with `-o`) |
//! | `choose.rs` | which members must keep a symbol; the subgroups that pay |
//! | `shared.rs` | writing the shared body |
//! | `canonical.rs` | the shared body renumbered in walk order |
//! | `record.rs` | read-only records of constants, for the object writer |
//! | `rewrite.rs` | members into thunks, callers of removed members |
//!
//! # What may differ
//!
//! A fingerprint written with *holes* (see `compare`) leaves out each use of a value an
//! `iconst`, `f32const`/`f64const` (by bits) makes, whichever value it is (the constant
//! instructions are not compared: equal constants GVN made one value match constants kept
//! apart), `symbol` global values that are an instruction's operand (not thread-local ones, not
//! bases of other global values), and direct callees declared without `patchable` that are
//! module functions (not preemptible) or imports — libcalls and known symbols stay exact. A
//! call of the function itself is a hole holding [`crate::compare::Hole::SelfCall`].
//! Everything else stays as exact as in the exact order: opcodes, types, condition codes,
//! memory flags, offsets, trap codes, blocks, the stack frame, signatures and conventions.
//! Functions whose fingerprints with holes are equal form a group.
//!
//! A function that some declaration (a caller's, or its own for a self-call) names with a
//! signature other than its own is not a member: legal CLIF, but neither a call of the shared
//! body nor a thunk would answer that call exactly as the function did.
//!
//! A call of a function to itself holds the same value in every member, so that
//! self-recursive members group; in the shared body it calls the shared body, passing the
//! parameters through. Where one member calls itself and another some other function of the
//! same signature, the position is a callee parameter: the recursive member passes its own
//! address (and keeps its symbol), as Swift's merger passes the function itself.
//! Mutually recursive members call each other through a callee parameter: each member's thunk
//! passes the address of its partner, whose thunk stays.
//!
//! # What it works on
//!
//! The module after the exact merge: exact classes are merged first (the greatest fixpoint), so
//! similar merging cannot lose an exact merge; it sees each class's kept body once. Forwarding
//! thunks and preemptible functions do not take part.
//!
//! Then the two take turns until neither finds anything ([`crate::merge_module_with`]), so that
//! a second run on the output merges nothing: a shared body may be equal to a function that was
//! there; removing the kept function of an exact class makes its thunks pass the same values to
//! the same body; merging one group changes the calls the cost model counts for another; and a
//! shared body may itself be similar to other functions. An earlier group whose shared body a
//! later round removes is reported with the body that has its code (see
//! [`crate::MergeReport`]).
//!
//! # Parameters and the shared body
//!
//! See `params.rs`: one parameter per distinct column of values, positions with one value stay
//! constants, parameters ordered by first position. The shared body is the body of the member
//! whose hole values are the least (so a function of the group's content), with the parameters
//! appended to its signature. Its name is `%similar_` and a 128-bit hash of the fingerprint with
//! holes, the parameter layout and the constant values: two modules that meet the same group
//! write the same shared body under the same name. A group whose name the module already uses
//! — defines, or refers to without defining it (an import) — is left alone: the shared body
//! would capture the import's calls. A callee parameter is called with
//! `call_indirect`: an indirect call costs a register and, on some cores, a branch-target
//! prediction, where the direct call cost nothing.
//!
//! A group adds at most [`SimilarOptions::max_parameters`] parameters; those that find no free
//! argument register ([`RegisterBudget`]) after the members' own are stack arguments. It is
//! merged only when the cost model ([`CostModel`]) says it saves at least
//! [`SimilarOptions::min_saving`] bytes. A group that does not is split (`choose.rs`) into
//! subgroups that do, completely: the members left over, met again as a group, would be left
//! again; and a group that does is still cut where its parts save more apart (members that
//! agree most go together). With a [`SizeJudge`] (an object is written), each chosen group is
//! compiled and kept only when it saves measured (`measure.rs`).
//!
//! # What members become
//!
//! The rules of exact merging, with thunks in place of aliases (a member cannot be an alias of
//! a body with another signature): a `local` member whose address is not taken — not by
//! `func_addr`, a `symbol`, an alias, a `try_call`, nor by being another group's callee
//! parameter — is removed in `safe` and `aliases` modes; every other member keeps its symbol as
//! a thunk, in every mode. A shared body of an earlier round is no symbol of the input: as a
//! member it goes by the first rule in `thunks` mode too.

pub(crate) mod across;
pub(crate) mod canonical;
mod choose;
mod cost;
mod entry;
mod find;
mod measure;
mod params;
mod record;
mod rewrite;
mod shared;
#[cfg(test)]
mod tests;

pub use cost::{CostModel, GroupShape, InstructionMix, RegisterBudget};
pub(crate) use entry::merge_similar_after;
pub use entry::{merge_similar, stand_in};
pub use measure::{CodeClasses, FindCodeClasses, SizeJudge};
pub use params::POINTER;
pub use record::{ConstantRecord, RecordField};
pub use rewrite::Prior;

use crate::edit::callsite::ExtraArgument;
use crate::module::FuncName;
use crate::policy::Action;
use serde::Serialize;

/// How similar merging decides.
///
/// ```
/// use clif_merge::similar::RegisterBudget;
/// use clif_merge::{MergeOptions, SimilarOptions};
///
/// // For an aarch64 object, with groups merged only when they save 16 bytes or more.
/// let similar = SimilarOptions {
///     min_saving: 16,
///     registers: RegisterBudget::AARCH64,
///     ..SimilarOptions::default()
/// };
/// let options = MergeOptions { similar: Some(similar), ..MergeOptions::default() };
/// assert_eq!(options.similar.unwrap().min_saving, 16);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimilarOptions {
    /// A group is merged when the model says it saves at least this many bytes.
    pub min_saving: i64,
    /// The target's argument registers: the added parameters that find none free after the
    /// members' own go to the stack, which the cost model charges.
    pub registers: RegisterBudget,
    /// At most this many parameters a shared body adds (registers and stack together): a
    /// bound on the thunks' frames and on the search, not on what pays (the cost decides).
    pub max_parameters: usize,
    /// The cost model's constants.
    pub cost: CostModel,
    /// When an object is written: the ISA that compiles it. Each chosen group is then
    /// compiled as it would be written, and kept only when it saves at least `min_saving`
    /// bytes measured (`measure.rs`), not estimated.
    pub judge: Option<SizeJudge>,
    /// With a judge: whether a group whose parameters go to the stack may give each member a
    /// read-only record of its constants instead, when that saves more, measured with the
    /// records' bytes ([`ConstantRecord`], `record.rs`). Only an object can hold records (not
    /// CLIF text, nor what `--verify` runs). `None`: the pipeline decides (yes when it writes
    /// an object and neither emits CLIF nor verifies; no otherwise); `Some(false)`: stack
    /// arguments only. `Some(true)` is for a caller that writes the object itself, with
    /// [`crate::emit::object::write_object_with_records`].
    pub records: Option<bool>,
}

impl Default for SimilarOptions {
    fn default() -> Self {
        SimilarOptions {
            min_saving: 1,
            registers: RegisterBudget::default(),
            max_parameters: MAX_PARAMETERS,
            cost: CostModel::default(),
            judge: None,
            records: None,
        }
    }
}

/// The default [`SimilarOptions::max_parameters`]: groups whose members differ in up to 32
/// constants, addresses and callees (Binaryen's merger passes up to 26); beyond the free
/// argument registers they are stack arguments.
pub const MAX_PARAMETERS: usize = 32;

impl SimilarOptions {
    /// Whether groups may pass read-only records ([`SimilarOptions::records`]).
    pub(crate) fn with_records(&self) -> bool {
        self.judge.is_some() && self.records == Some(true)
    }

    /// Whether a group may add `count` parameters (at least one, at most
    /// [`SimilarOptions::max_parameters`]).
    pub(crate) fn takes_parameters(&self, count: usize) -> bool {
        (1..=self.max_parameters).contains(&count)
    }
}

/// One member of a merged group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimilarMember {
    /// Its name.
    pub name: FuncName,
    /// What it became: [`Action::Thunk`] or [`Action::Removed`].
    pub by: Action,
    /// The values it passes to the shared body, in parameter order.
    #[serde(skip)]
    pub arguments: Vec<ExtraArgument>,
}

/// One group of similar functions merged into a shared body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimilarGroup {
    /// The shared body's name.
    pub shared: FuncName,
    /// How many parameters the shared body adds to the members' signature.
    pub parameters: usize,
    /// The members, by name.
    pub members: Vec<SimilarMember>,
    /// What the cost model counted of the group.
    #[serde(skip)]
    pub shape: GroupShape,
    /// The bytes the cost model says the merge saves.
    #[serde(skip)]
    pub predicted_saving: i64,
    /// The bytes it saves measured, when a [`SizeJudge`] measured it.
    #[serde(skip)]
    pub measured_saving: Option<i64>,
    /// The members' read-only records of constants, when the group passes them (with
    /// [`SimilarOptions::records`]): data objects the object writer must define. Each member
    /// passes its record's address as its last argument.
    #[serde(skip)]
    pub records: Vec<ConstantRecord>,
}

/// The signature of a member of `group` whose shared body has signature `shared_sig`: the
/// shared body's without the parameters the group added.
pub fn member_signature(
    group: &SimilarGroup,
    shared_sig: &cranelift_codegen::ir::Signature,
) -> cranelift_codegen::ir::Signature {
    let mut sig = shared_sig.clone();
    let own = sig.params.len() - group.parameters;
    sig.params.truncate(own);
    sig
}
