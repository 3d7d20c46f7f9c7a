//! The entry points of similar merging: merging a module's groups (alone, or right after the
//! exact merge, reusing what it found), and the function that stands for a removed member.

use super::rewrite::{self, Prior, member_thunk};
use super::{SimilarGroup, SimilarMember, SimilarOptions};
use crate::module::ClifModule;
use crate::policy::Mode;

/// A function that stands for the removed member `member` of `group`: a thunk under its name
/// and signature `sig` that calls the shared body (of signature `shared_sig`) with the member's
/// values. `--verify` runs it in place of the member; [`crate::MergeReport::stand_ins`] makes
/// one for every removed member.
pub fn stand_in(
    group: &SimilarGroup,
    member: &SimilarMember,
    sig: &cranelift_codegen::ir::Signature,
    shared_sig: &cranelift_codegen::ir::Signature,
) -> cranelift_codegen::ir::Function {
    member_thunk(
        &member.name,
        sig,
        &group.shared,
        shared_sig,
        &member.arguments,
    )
}

/// Merges the groups of similar functions of `module` (already merged exactly) that pay, and
/// says what was done, the groups ordered by their shared body's name.
pub fn merge_similar(
    module: &mut ClifModule,
    mode: Mode,
    options: &SimilarOptions,
) -> Vec<SimilarGroup> {
    let made_from = module.id_count();
    rewrite::merge_similar(module, mode, options, None, made_from)
}

/// [`merge_similar`] right after the exact merge, reusing what it found of the module, in a
/// run that made the functions with ids from `made_from` on (no symbol of the input: a member
/// among them goes in thunks mode too, see `crate::policy`).
pub(crate) fn merge_similar_after(
    module: &mut ClifModule,
    mode: Mode,
    options: &SimilarOptions,
    prior: Prior,
    made_from: usize,
) -> Vec<SimilarGroup> {
    rewrite::merge_similar(module, mode, options, Some(prior), made_from)
}
