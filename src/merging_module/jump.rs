//! One-jump thunks: a function the merge replaced, defined in the inner module as one direct
//! jump to the function holding its body (5 bytes on x86_64, 4 on aarch64), as the object
//! writer defines its thunks, instead of the compiled thunk that calls it (`write_thunk`'s:
//! `push; mov; call; mov; pop; ret`, 14 bytes on x86_64).
//!
//! A jump stands for the compiled thunk when each of these holds, else the thunk is compiled:
//!
//! - **The same signature.** The thunk's signature is the one `f`'s code was compiled with:
//!   arguments, the stack arguments' area and the results are then where `f` expects them,
//!   whatever the calling convention (`tail` pops its stack arguments in the callee, which `f`
//!   does for the thunk's caller as the thunk would have).
//! - **`f` does not read its own frame** (`crate::policy::frame`): a jump is a tail call, `f`
//!   would see the thunk's caller as its own. The caller never writes a thunk to such a body.
//! - **A landing pad where one is needed.** With branch protection (aarch64 `use_bti`) every
//!   function that may be called indirectly starts with a landing pad, as Cranelift's own code
//!   does: the thunk is `bti c; b` (8 bytes), as the object writer's.
//! - **The inner module resolves the relocation, with the reach of the call it replaces.** The
//!   jump carries the relocation Cranelift gives the compiled thunk's own call to `f` (a
//!   colocated call: `X86CallPCRel4`, `Arm64Call`, whether or not the code is PIC), so every
//!   inner module that accepts the compiled thunk resolves the jump as it would that call:
//!   cranelift-object writes `R_X86_64_PLT32` (Mach-O: `X86_64_RELOC_BRANCH`) or
//!   `R_AARCH64_CALL26`; cranelift-jit patches a rel32 that must reach `f` (±2 GiB, as for
//!   every call between its functions: it panics at finalize rather than jump elsewhere), and
//!   for a `b`/`bl` beyond ±128 MiB branches through a veneer it reserves after the function,
//!   which a jump uses as a call does. Other targets keep the compiled thunk.
//!
//! What changes for the code that runs: no frame of the thunk's own (a stack walk goes from `f`
//! to the thunk's caller, 16 bytes less stack), and nothing else.

use cranelift_codegen::Context;
use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Signature;
use cranelift_codegen::isa::TargetIsa;
use cranelift_module::{FuncId, Module, ModuleReloc, ModuleRelocTarget, ModuleResult};
use target_lexicon::Architecture;

/// The machine code of a one-jump thunk for one target, and its relocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Jump {
    /// The instruction, its displacement zero.
    pub(crate) bytes: &'static [u8],
    pub(crate) alignment: u64,
    /// Where the displacement is.
    pub(crate) reloc_offset: u32,
    pub(crate) kind: Reloc,
    pub(crate) addend: i64,
}

/// The jump for `isa`'s architecture, with the relocation of a direct call (see the module
/// docs), behind a landing pad where branch protection asks for one; None where there is no
/// such jump.
pub(crate) fn jump_for(isa: &dyn TargetIsa) -> Option<Jump> {
    let branch_protection = isa.is_branch_protection_enabled();
    match isa.triple().architecture {
        // `jmp rel32`; the displacement is relative to the end of the instruction. (Cranelift
        // protects branches on aarch64 only; were it to on x86_64, the jump would need a pad.)
        Architecture::X86_64 if !branch_protection => Some(Jump {
            bytes: &[0xe9, 0, 0, 0, 0],
            alignment: 1,
            reloc_offset: 1,
            kind: Reloc::X86CallPCRel4,
            addend: -4,
        }),
        // `bti c; b imm26`.
        Architecture::Aarch64(_) if branch_protection => Some(Jump {
            bytes: &[0x5f, 0x24, 0x03, 0xd5, 0x00, 0x00, 0x00, 0x14],
            alignment: 4,
            reloc_offset: 4,
            kind: Reloc::Arm64Call,
            addend: 0,
        }),
        // `b imm26`.
        Architecture::Aarch64(_) => Some(Jump {
            bytes: &[0x00, 0x00, 0x00, 0x14],
            alignment: 4,
            reloc_offset: 0,
            kind: Reloc::Arm64Call,
            addend: 0,
        }),
        _ => None,
    }
}

/// Defines `g` in `inner` as the thunk `ctx.func` (`write_thunk`'s, passing its arguments to
/// `f`): one jump to `f` when the rules of the module docs allow it, `f_signature` being the
/// signature `f`'s code was compiled with; else compiled, as any function. `ctx` keeps the
/// thunk, and holds compiled code only when the thunk was compiled.
// The error is the `Module` trait's own, returned as is.
#[allow(clippy::result_large_err)]
pub(super) fn define_thunk<M: Module>(
    inner: &mut M,
    g: FuncId,
    f: FuncId,
    f_signature: &Signature,
    ctx: &mut Context,
    ctrl_plane: &mut ControlPlane,
) -> ModuleResult<()> {
    let jump = jump_for(inner.isa()).filter(|_| ctx.func.signature == *f_signature);
    let Some(jump) = jump else {
        return inner.define_function_with_control_plane(g, ctx, ctrl_plane);
    };
    // Nothing was compiled: no code of an earlier compilation may pass for the thunk's.
    ctx.take_compiled_code();
    let reloc = ModuleReloc {
        offset: jump.reloc_offset,
        kind: jump.kind,
        addend: jump.addend,
        name: ModuleRelocTarget::user(0, f.as_u32()),
    };
    inner.define_function_bytes(g, jump.alignment, jump.bytes, &[reloc])
}

// The targets a jump is written for are built in (the default features).
#[cfg(all(feature = "x86_64", feature = "aarch64"))]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::thunk::write_thunk;
    use crate::module::FuncName;
    use cranelift_codegen::ir::{AbiParam, types};
    use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
    use cranelift_codegen::settings::{self, Configurable};

    fn isa(triple: &str, flags: &[(&str, &str)], isa_flags: &[&str]) -> OwnedTargetIsa {
        let mut shared = settings::builder();
        for (name, value) in flags {
            shared.set(name, value).unwrap();
        }
        let mut builder = cranelift_codegen::isa::lookup_by_name(triple).unwrap();
        for flag in isa_flags {
            builder.enable(flag).unwrap();
        }
        builder.finish(settings::Flags::new(shared)).unwrap()
    }

    /// The relocations of the compiled thunk `u0:1` → `u0:0` for `isa`.
    fn compiled_thunk_relocs(isa: &dyn TargetIsa, call_conv: CallConv) -> Vec<(Reloc, i64)> {
        let mut sig = Signature::new(call_conv);
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let f = FuncName::User {
            namespace: 0,
            index: 0,
        };
        let g = FuncName::User {
            namespace: 0,
            index: 1,
        };
        let mut ctx = Context::for_function(write_thunk(&g, &sig, &f));
        let code = ctx.compile(isa, &mut ControlPlane::default()).unwrap();
        code.buffer
            .relocs()
            .iter()
            .map(|r| (r.kind, r.addend))
            .collect()
    }

    /// The jump's relocation is the one Cranelift gives the compiled thunk's call (so that
    /// every inner module resolves it as it resolves that call), PIC or not, for a call and a
    /// `return_call` alike; this guards the rule against a Cranelift upgrade.
    #[test]
    fn jump_has_the_relocation_of_the_call_it_replaces() {
        for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
            for pic in ["false", "true"] {
                let flags = [("is_pic", pic), ("preserve_frame_pointers", "true")];
                let isa = isa(triple, &flags, &[]);
                let jump = jump_for(&*isa).expect("a jump for x86_64 and aarch64");
                for call_conv in [CallConv::SystemV, CallConv::Tail] {
                    assert_eq!(
                        compiled_thunk_relocs(&*isa, call_conv),
                        [(jump.kind, jump.addend)],
                        "{triple}, is_pic={pic}, {call_conv}"
                    );
                }
            }
        }
    }

    /// A branch is no landing pad: with BTI, the jump follows `bti c`, and the relocation is
    /// the branch's.
    #[test]
    fn with_branch_protection_the_jump_follows_a_landing_pad() {
        let jump = jump_for(&*isa("aarch64-unknown-linux-gnu", &[], &["use_bti"])).unwrap();
        assert_eq!(jump.bytes[..4], 0xd503_245fu32.to_le_bytes());
        assert_eq!(jump.bytes[4..], 0x1400_0000u32.to_le_bytes());
        assert_eq!((jump.reloc_offset, jump.kind), (4, Reloc::Arm64Call));
    }

    /// Other targets have no jump: their thunks stay compiled.
    #[cfg(feature = "all-native-arch")]
    #[test]
    fn no_jump_on_other_targets() {
        assert_eq!(
            jump_for(&*isa("riscv64gc-unknown-linux-gnu", &[], &[])),
            None
        );
        assert_eq!(jump_for(&*isa("s390x-unknown-linux-gnu", &[], &[])), None);
    }
}
