//! What round 2 did to a unit: [`GlobalReport`] and its [`SharedBody`]s.

use crate::module::FuncName;
use serde::Serialize;

/// One shared body a unit emits, and its own functions that became thunks to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SharedBody {
    /// The shared body's name (`%clifmerge_<content key>`).
    pub shared: FuncName,
    /// Parameters the shared body takes (0: the members are equal).
    pub parameters: usize,
    /// This unit's functions that became thunks to it, by name.
    pub members: Vec<FuncName>,
}

/// What round 2 did to a unit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GlobalReport {
    /// Functions of the summary (all units).
    pub summary_functions: usize,
    /// The shared bodies, by name.
    pub shared: Vec<SharedBody>,
}

impl GlobalReport {
    /// This unit's functions that became thunks to a shared body.
    pub fn members(&self) -> usize {
        self.shared.iter().map(|s| s.members.len()).sum()
    }
}
