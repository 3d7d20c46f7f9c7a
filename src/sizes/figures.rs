//! The figures of the size attribution: what each entry and each kind saved. Plain data, so
//! that the object report can carry them without depending on how they are computed.

use crate::module::FuncName;
use crate::policy::Action;
use serde::Serialize;

/// The kinds of merge a byte saved is put down to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SavingKind {
    /// An exact class's member made an alias of the kept function.
    Alias,
    /// An exact class's member made a thunk.
    Thunk,
    /// An exact class's member removed.
    Removed,
    /// Machine-code folding: compiled code identical to another function's.
    Folded,
    /// A similar group: members made thunks to a shared body with parameters.
    Similar,
    /// Global merging: members made thunks to a shared body other units hold too.
    Global,
}

impl SavingKind {
    /// The kind of an exact merge's action.
    pub(super) fn of(action: Action) -> SavingKind {
        match action {
            Action::Alias => SavingKind::Alias,
            Action::Thunk => SavingKind::Thunk,
            Action::Removed => SavingKind::Removed,
        }
    }

    /// The word the reports use.
    pub fn keyword(self) -> &'static str {
        match self {
            SavingKind::Alias => "alias",
            SavingKind::Thunk => "thunk",
            SavingKind::Removed => "removed",
            SavingKind::Folded => "folded",
            SavingKind::Similar => "similar",
            SavingKind::Global => "global",
        }
    }
}

/// `text_bytes_unmerged - text_bytes` by kind; the values add up to it exactly. `global` is
/// there (and serialized) only with global merging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SavedByKind {
    /// Exact classes' aliases.
    pub alias: i64,
    /// Exact classes' thunks.
    pub thunk: i64,
    /// Exact classes' removed functions.
    pub removed: i64,
    /// Machine-code folding.
    pub folded: i64,
    /// Similar groups.
    pub similar: i64,
    /// Global merging's shared bodies (None without a summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global: Option<i64>,
}

impl SavedByKind {
    /// The sum of the kinds: `text_bytes_unmerged - text_bytes`.
    pub fn total(&self) -> i64 {
        self.alias
            + self.thunk
            + self.removed
            + self.folded
            + self.similar
            + self.global.unwrap_or(0)
    }

    /// Each kind that may occur, with its bytes, in the order of the JSON report.
    pub fn kinds(&self) -> Vec<(SavingKind, i64)> {
        let mut kinds = vec![
            (SavingKind::Alias, self.alias),
            (SavingKind::Thunk, self.thunk),
            (SavingKind::Removed, self.removed),
            (SavingKind::Folded, self.folded),
            (SavingKind::Similar, self.similar),
        ];
        kinds.extend(self.global.map(|g| (SavingKind::Global, g)));
        kinds
    }

    pub(super) fn add(&mut self, kind: SavingKind, bytes: i64) {
        match kind {
            SavingKind::Alias => self.alias += bytes,
            SavingKind::Thunk => self.thunk += bytes,
            SavingKind::Removed => self.removed += bytes,
            SavingKind::Folded => self.folded += bytes,
            SavingKind::Similar => self.similar += bytes,
            SavingKind::Global => *self.global.get_or_insert(0) += bytes,
        }
    }
}

/// One function of an entry: its bytes before and after (footprints, padding included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberBytes {
    /// The function.
    pub name: FuncName,
    /// What it is in the entry: `kept`, `shared`, or what it became (`alias`, `thunk`,
    /// `removed`); a function machine-code folding then took says `folded`.
    pub role: &'static str,
    /// The kind its saving counts as.
    pub kind: SavingKind,
    /// Bytes in the unmerged object (0 for a function the merge made).
    pub before: u64,
    /// Bytes in the merged object (0 for an alias or a removed function).
    pub after: u64,
}

/// What one class, similar group, shared body or fold saved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntrySizes {
    /// Net bytes saved: the members' `before - after`, plus `moved`.
    pub saved: i64,
    /// Its functions.
    pub members: Vec<MemberBytes>,
    /// Padding change of functions no merge touched that lie after this entry's last function in
    /// the layout (see [`crate::sizes`]).
    pub moved: i64,
}

/// Where the bytes went: the figures of [`crate::sizes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SizeAttribution {
    /// Text bytes of the merged object.
    pub text_bytes: u64,
    /// Text bytes of the unmerged object.
    pub text_bytes_unmerged: u64,
    /// The saving by kind.
    pub by_kind: SavedByKind,
    /// One per exact class, in the report's order.
    pub classes: Vec<EntrySizes>,
    /// One per similar group, in the report's order.
    pub similar: Vec<EntrySizes>,
    /// One per global shared body, in the report's order.
    pub global: Vec<EntrySizes>,
    /// One per global shared body: the functions of the whole program that hold its content
    /// ([`super::global_holders`]); the link keeps one copy of the body for all of them.
    pub global_holders: Vec<usize>,
    /// Machine-code folds not in any of the above, one per function whose code the folded ones
    /// share, by its name.
    pub folded: Vec<(FuncName, EntrySizes)>,
    /// Functions no merge touched, with their bytes in the merged object, in module order.
    pub untouched: Vec<(FuncName, u64)>,
}
