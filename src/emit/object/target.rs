//! The targets objects are written for, how they are compiled ([`ObjectOptions`]), Cranelift's
//! flags for them, and the bytes of a jump.

use super::error::ObjectError;
use super::supported::{SUPPORTED_TARGETS, TARGET_SHORT_NAMES};
use crate::policy::Mode;
use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use std::str::FromStr;
use target_lexicon::{Architecture, BinaryFormat, Triple};

/// How an object is written.
#[derive(Clone, Debug)]
pub struct ObjectOptions {
    /// The target triple (see [`SUPPORTED_TARGETS`]).
    pub target: Triple,
    /// Cranelift's optimization level.
    pub opt_level: OptLevel,
    /// CPU preset and flags (default: the target's baseline).
    pub isa: IsaSettings,
    /// One text section per function.
    pub function_sections: bool,
    /// The rules for folded functions, as for IR merges.
    pub mode: Mode,
    /// Fold functions whose machine code is identical (phase 3).
    pub fold_machine_code: bool,
}

/// Cranelift's optimization level. With the `cli` feature, also a [`clap::ValueEnum`]
/// (`--opt-level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum OptLevel {
    /// No optimization (`opt_level=none`).
    None,
    #[default]
    /// `opt_level=speed`, the default.
    Speed,
    /// `opt_level=speed_and_size` (on the command line `speed-and-size` is accepted too).
    #[cfg_attr(
        feature = "cli",
        value(name = "speed_and_size", alias = "speed-and-size")
    )]
    SpeedAndSize,
}

impl OptLevel {
    fn setting(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }
}

/// Parses a target triple, or a short name of one ([`TARGET_SHORT_NAMES`]), and checks that
/// objects can be written for it.
pub fn parse_target(text: &str) -> Result<Triple, ObjectError> {
    let text = TARGET_SHORT_NAMES
        .iter()
        .find(|(short, _)| *short == text)
        .map_or(text, |&(_, triple)| triple);
    if !SUPPORTED_TARGETS.contains(&text) {
        return Err(ObjectError::UnsupportedTarget(text.to_string()));
    }
    Triple::from_str(text).map_err(|e| ObjectError::BadTarget(format!("bad target `{text}`: {e}")))
}

/// The host, when it is a supported target.
pub fn host_target() -> Result<Triple, ObjectError> {
    let host = Triple::host();
    let name = match (host.architecture, host.binary_format) {
        (Architecture::X86_64, BinaryFormat::Elf) => SUPPORTED_TARGETS[0],
        (Architecture::Aarch64(_), BinaryFormat::Elf) => SUPPORTED_TARGETS[1],
        (Architecture::X86_64, BinaryFormat::Macho) => SUPPORTED_TARGETS[2],
        (Architecture::Aarch64(_), BinaryFormat::Macho) => SUPPORTED_TARGETS[3],
        _ => return Err(ObjectError::HostNotSupported(host.to_string())),
    };
    parse_target(name)
}

/// The ISA objects are compiled for.
/// Cranelift settings beyond the defaults, as `clif-util` and wasmtime's `-C` take them. The
/// default is portable code for the target's baseline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IsaSettings {
    /// A Cranelift preset of the target (x86_64: `nehalem`, `haswell`, `skylake`, `znver1`, …),
    /// `baseline` (no preset), or `native` (the host's features; the target must be the host).
    pub cpu: Option<String>,
    /// Shared or target flags, each `NAME` (a boolean set to true, or a preset) or `NAME=VALUE`,
    /// applied in order after the preset and after this crate's own defaults, which they can
    /// override.
    pub flags: Vec<String>,
}

pub(super) fn build_isa(options: &ObjectOptions) -> Result<OwnedTargetIsa, ObjectError> {
    let mut flags = settings::builder();
    let isa_error = |e: &dyn std::fmt::Display| ObjectError::Isa(e.to_string());
    flags
        .set("opt_level", options.opt_level.setting())
        .map_err(|e| isa_error(&e))?;
    // Position-independent code links into executables and shared objects alike.
    flags.set("is_pic", "true").map_err(|e| isa_error(&e))?;
    // Cranelift's tail calls (`return_call`) rely on frame pointers on x86_64.
    flags
        .set("preserve_frame_pointers", "true")
        .map_err(|e| isa_error(&e))?;
    let mut isa_builder = isa::lookup(options.target.clone())
        .map_err(|e| ObjectError::Isa(format!("target {}: {e}", options.target)))?;
    apply_cpu(&mut isa_builder, options)?;
    for flag in &options.isa.flags {
        apply_flag(&mut flags, &mut isa_builder, flag, &options.target)?;
    }
    let isa = isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| isa_error(&e))?;
    Ok(isa)
}

/// What the machine code of a function depends on besides its IR: the target triple, every
/// shared setting (optimization level, NaN canonicalization, PIC, …) and every setting of the
/// ISA (the CPU's features, whether from a preset, `native` or a flag), as Cranelift prints
/// their values. Shared bodies' symbols name it (`crate::global::shared_symbol`).
pub(super) fn build_identity(isa: &dyn isa::TargetIsa) -> String {
    let isa_flags: Vec<String> = isa.isa_flags().iter().map(ToString::to_string).collect();
    format!(
        "target {}\n{}[{}]\n{}\n",
        isa.triple(),
        isa.flags(),
        isa.name(),
        isa_flags.join("\n")
    )
}

/// The CPU preset, or the host's features for `native`.
fn apply_cpu(isa_builder: &mut isa::Builder, options: &ObjectOptions) -> Result<(), ObjectError> {
    match options.isa.cpu.as_deref() {
        None | Some("baseline") => Ok(()),
        Some("native") => {
            let host = Triple::host();
            if (host.architecture, host.binary_format)
                != (options.target.architecture, options.target.binary_format)
            {
                return Err(ObjectError::Isa(format!(
                    "--target-cpu native describes the host ({host}), not the target {}",
                    options.target
                )));
            }
            cranelift_native::infer_native_flags(isa_builder)
                .map_err(|e| ObjectError::Isa(format!("cannot detect the host's features: {e}")))
        }
        Some(cpu) => isa_builder.enable(cpu).map_err(|_| {
            ObjectError::Isa(format!(
                "unknown CPU `{cpu}` for {}: use a Cranelift preset of the target (for x86_64: \
                 nehalem, haswell, skylake, znver1, ...), baseline or native",
                options.target
            ))
        }),
    }
}

/// One `NAME` or `NAME=VALUE`: a shared flag if Cranelift has one of that name, else a flag or
/// preset of the target.
fn apply_flag(
    flags: &mut settings::Builder,
    isa_builder: &mut isa::Builder,
    flag: &str,
    target: &Triple,
) -> Result<(), ObjectError> {
    let (name, value) = match flag.split_once('=') {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (flag.trim(), None),
    };
    let set = |config: &mut dyn Configurable| match value {
        Some(value) => config.set(name, value),
        None => config.enable(name),
    };
    let result = match set(flags) {
        Err(settings::SetError::BadName(_)) => set(isa_builder),
        other => other,
    };
    result.map_err(|e| match e {
        settings::SetError::BadName(_) => ObjectError::Isa(format!(
            "unknown setting `{name}`: not a Cranelift shared flag nor a flag of {target}"
        )),
        e => ObjectError::Isa(format!("setting `{flag}`: {e}")),
    })
}

/// The machine code of a thunk: one direct jump, and its relocation.
pub(super) struct JumpThunk {
    pub(super) bytes: &'static [u8],
    pub(super) alignment: u64,
    pub(super) reloc_offset: u32,
    pub(super) kind: Reloc,
    pub(super) addend: i64,
}

/// The thunk for `target`; with branch protection (`isa.is_branch_protection_enabled()`,
/// aarch64's `use_bti`) the jump follows a `bti c` landing pad, as every function Cranelift
/// compiles there begins with one: a thunk is a function any object may call through a pointer,
/// and an indirect call to code without a pad faults on a guarded page.
pub(super) fn jump_thunk(target: &Triple, branch_protection: bool) -> JumpThunk {
    match (target.architecture, target.binary_format) {
        // `jmp rel32`; the displacement is relative to the end of the instruction.
        (Architecture::X86_64, BinaryFormat::Elf) => JumpThunk {
            bytes: &[0xe9, 0, 0, 0, 0],
            alignment: 1,
            reloc_offset: 1,
            kind: Reloc::X86CallPLTRel4,
            addend: -4,
        },
        (Architecture::X86_64, _) => JumpThunk {
            bytes: &[0xe9, 0, 0, 0, 0],
            alignment: 1,
            reloc_offset: 1,
            kind: Reloc::X86CallPCRel4,
            addend: -4,
        },
        // `bti c; b imm26`.
        _ if branch_protection => JumpThunk {
            bytes: &[0x5f, 0x24, 0x03, 0xd5, 0x00, 0x00, 0x00, 0x14],
            alignment: 4,
            reloc_offset: 4,
            kind: Reloc::Arm64Call,
            addend: 0,
        },
        // `b imm26`.
        _ => JumpThunk {
            bytes: &[0x00, 0x00, 0x00, 0x14],
            alignment: 4,
            reloc_offset: 0,
            kind: Reloc::Arm64Call,
            addend: 0,
        },
    }
}
