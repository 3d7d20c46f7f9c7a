//! The public paths from before the layering (issue 22) still name the same items: the rules,
//! edits, report and entry points that moved out of `merge` (to `policy`, `edit` and the pass)
//! are re-exported where they were, and at the root as before.

use clif_merge::merge::{self, MergedClass, Replacement};
use clif_merge::{ClifModule, FuncName, MergeReport, Mode, PassTimes, SimilarOptions};

#[test]
fn the_moved_items_keep_their_paths() {
    // The same types under both paths (a mismatch would not compile).
    let report: merge::MergeReport = MergeReport::default();
    let mode: merge::Mode = Mode::Thunks;
    let action: merge::Action = clif_merge::Action::Thunk;
    let _: Option<&MergedClass> = report.classes.first();
    let _: Option<&Replacement> = report.classes.first().and_then(|c| c.replaced.first());
    let merge_module: fn(&mut ClifModule, Mode) -> (MergeReport, PassTimes) = merge::merge_module;
    let merge_module_with: fn(
        &mut ClifModule,
        Mode,
        Option<&SimilarOptions>,
    ) -> (MergeReport, PassTimes) = merge::merge_module_with;
    assert_eq!((mode.keyword(), action.keyword()), ("thunks", "thunk"));

    // And they still do what they did.
    let (f, g) = (
        FuncName::parse("%f").unwrap(),
        FuncName::parse("%g").unwrap(),
    );
    let sig = cranelift_codegen::ir::Signature::new(cranelift_codegen::isa::CallConv::Fast);
    let thunk = merge::thunk::write_thunk(&g, &sig, &f);
    assert!(merge::thunk::is_forwarding_thunk(&thunk));
    assert!(!merge::frame::reads_own_frame(&thunk));
    let mut module = ClifModule::new();
    module
        .define(thunk, clif_merge::SymbolLinkage::Export, None)
        .unwrap();
    assert_eq!(merge_module(&mut module.clone(), mode).0.merged, 0);
    assert_eq!(merge_module_with(&mut module, mode, None).0.merged, 0);
}
