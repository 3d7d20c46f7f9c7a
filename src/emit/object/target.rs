//! The targets objects are written for, Cranelift's flags for them, and the bytes of a jump.

use super::ObjectOptions;
use super::error::ObjectError;
use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use std::str::FromStr;
use target_lexicon::{Architecture, BinaryFormat, Triple};

/// The targets objects can be written for.
pub const SUPPORTED_TARGETS: &[&str] = &[
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// Cranelift's optimization level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// No optimization (`opt_level=none`).
    None,
    #[default]
    /// `opt_level=speed`, the default.
    Speed,
    /// `opt_level=speed_and_size`.
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

/// Parses a target triple and checks that objects can be written for it.
pub fn parse_target(text: &str) -> Result<Triple, ObjectError> {
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
    let isa = isa::lookup(options.target.clone())
        .map_err(|e| ObjectError::Isa(format!("target {}: {e}", options.target)))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| isa_error(&e))?;
    Ok(isa)
}

/// The machine code of a thunk: one direct jump, and its relocation.
pub(super) struct JumpThunk {
    pub(super) bytes: &'static [u8],
    pub(super) alignment: u64,
    pub(super) reloc_offset: u32,
    pub(super) kind: Reloc,
    pub(super) addend: i64,
}

pub(super) fn jump_thunk(target: &Triple) -> JumpThunk {
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
