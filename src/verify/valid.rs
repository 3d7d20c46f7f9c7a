//! The merged module is valid CLIF: every function the merge wrote or changed passes the CLIF
//! verifier. Running it proves nothing of the kind (the interpreter runs what it is given), and a
//! function that is not valid CLIF cannot be compiled or read back. It is held to the rule
//! reading holds every function to (`crate::verifier`): with an ISA (the host's) only where it
//! uses an instruction that needs one. With the host's ISA for all, a right merge of code for a
//! 32-bit target (`stack_addr.i32`) failed on the pointer width it was read without.

use super::outcome::Mismatch;
use crate::module::{ClifModule, FuncName};
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings;

/// A mismatch for every function of `merged` that is new or differs from the function of its
/// name in `original` and fails the CLIF verifier, in module order. (The functions it leaves as
/// they were were verified when read.)
pub(super) fn invalid_functions(original: &ClifModule, merged: &ClifModule) -> Vec<Mismatch> {
    let isa = host_isa();
    let mut found = Vec::new();
    for mf in merged.functions() {
        let unchanged = original
            .resolve(&mf.name)
            .is_some_and(|id| original.function(id).func == mf.func);
        if unchanged {
            continue;
        }
        if let Err(why) = verify(&mf.func, isa.as_deref()) {
            found.push(invalid(&mf.name, why));
        }
    }
    found
}

/// The host's ISA, for the instructions that need one to verify, with the flags that allow
/// them (`enable_pinned_reg`, `preserve_frame_pointers`): the merge copies such instructions,
/// never makes them, so the original was read with the flags its file set for them (which the
/// module does not keep), and the check is of what the merge wrote around them. With default
/// flags, a right merge that redirected a call in a function using the pinned register was
/// reported not valid CLIF. None on a host Cranelift does not support.
fn host_isa() -> Option<OwnedTargetIsa> {
    use settings::Configurable;
    let mut flags = settings::builder();
    for flag in ["enable_pinned_reg", "preserve_frame_pointers"] {
        flags.enable(flag).expect("a shared flag of Cranelift");
    }
    isa::lookup(target_lexicon::Triple::host())
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()
}

/// The verifier's first error on `func`, with the count of the others.
fn verify(func: &Function, isa: Option<&dyn isa::TargetIsa>) -> Result<(), String> {
    let verified = crate::guard::catch_panic(|| crate::verifier::verify_clif(func, isa))
        .map_err(|panic| format!("the CLIF verifier failed: {panic}"))?;
    let Err(errors) = verified else {
        return Ok(());
    };
    let first = &errors.0[0];
    let context = first
        .context
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    let more = match errors.0.len() {
        1 => String::new(),
        n => format!(" (and {} more verifier errors)", n - 1),
    };
    Err(format!(
        "{}{context}: {}{more}",
        first.location, first.message
    ))
}

fn invalid(name: &FuncName, why: String) -> Mismatch {
    Mismatch::unrun(name, format!("not valid CLIF after merging: {why}"))
}
