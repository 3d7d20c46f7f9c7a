//! Cranelift's verifier as reading runs it: a function that uses an instruction the verifier
//! checks only against an ISA is verified with one; every other function without, since an
//! ISA adds checks (pointer widths, global value types) that IR meant for any target need not
//! pass. Reading (`read/isa.rs` picks the ISA) and `--verify`'s check of what the merge wrote
//! hold functions to this one rule.

use cranelift_codegen::ir::{Function, Opcode};
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::settings;
use cranelift_codegen::verifier::VerifierErrors;

/// Whether `opcode` is one the verifier checks only against an ISA.
pub fn needs_isa(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::GetPinnedReg
            | Opcode::SetPinnedReg
            | Opcode::GetFramePointer
            | Opcode::GetReturnAddress
    )
}

/// Whether `func` uses an instruction the verifier checks only against an ISA.
pub fn function_needs_isa(func: &Function) -> bool {
    func.layout
        .blocks()
        .flat_map(|block| func.layout.block_insts(block))
        .any(|inst| needs_isa(func.dfg.insts[inst].opcode()))
}

/// Runs Cranelift's verifier on `func` as reading does: with `isa` when the function uses an
/// instruction that needs one ([`function_needs_isa`]), else with Cranelift's default flags.
pub fn verify_clif(func: &Function, isa: Option<&dyn TargetIsa>) -> Result<(), VerifierErrors> {
    match isa {
        Some(isa) if function_needs_isa(func) => cranelift_codegen::verify_function(func, isa),
        _ => {
            let flags = settings::Flags::new(settings::builder());
            cranelift_codegen::verify_function(func, &flags)
        }
    }
}
