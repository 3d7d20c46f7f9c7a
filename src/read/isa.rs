//! The ISA that verifies the functions Cranelift's verifier can only check against one.
//!
//! `get_pinned_reg`, `set_pinned_reg`, `get_frame_pointer` and `get_return_address` are valid
//! CLIF only for a target whose flags allow them (`enable_pinned_reg`,
//! `preserve_frame_pointers`); without an ISA the verifier refuses them outright ("need an
//! ISA!"). A function that uses one is verified with the target's ISA: the one an embedder
//! gives ([`super::ModuleReader::with_isa`]), the object's target on the command line, or by
//! default the host's as `-o` would compile for it. The file's own `set` lines apply on top, as
//! they do in Cranelift's filetests. Every other function is verified without an ISA, as
//! before: an ISA adds checks (pointer widths, global value types) that IR meant for any target
//! need not pass.

use cranelift_codegen::isa::{self, OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_reader::IsaSpec;

pub use crate::verifier::{function_needs_isa, verify_clif};

/// The host's ISA, with the settings `-o` compiles with by default; None when objects cannot
/// be written for the host.
#[cfg(feature = "object")]
pub fn host_isa() -> Option<OwnedTargetIsa> {
    static HOST: std::sync::OnceLock<Option<OwnedTargetIsa>> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        use crate::emit::object::{ObjectOptions, host_target, target_isa};
        let options = ObjectOptions {
            target: host_target().ok()?,
            opt_level: Default::default(),
            isa: Default::default(),
            function_sections: false,
            mode: Default::default(),
            fold_machine_code: true,
        };
        target_isa(&options).ok()
    })
    .clone()
}

/// Without the `object` feature there is no object target to take the settings of: functions
/// that need an ISA are verified without one.
#[cfg(not(feature = "object"))]
pub fn host_isa() -> Option<OwnedTargetIsa> {
    None
}

/// The shared settings a file's `set` lines give, as `(name, value)`: every name a `set` line
/// names, even to Cranelift's default value, since the target's ISA may differ from that
/// default (`-o` preserves frame pointers) and the file's word wins. A file with `target` lines
/// gives them per target; the settings of the first target of `isa`'s architecture count, else
/// those of the first target, each with the `set` lines above its `target` line.
pub fn file_settings(
    spec: &IsaSpec,
    text: &str,
    isa: &dyn TargetIsa,
) -> Vec<(&'static str, String)> {
    let set_lines = SetLines::of(text);
    let (flags, names) = match spec {
        IsaSpec::None(flags) => (flags, &set_lines.all),
        IsaSpec::Some(isas) => {
            let arch = isa.triple().architecture;
            let chosen = isas
                .iter()
                .position(|i| i.triple().architecture == arch)
                .or((!isas.is_empty()).then_some(0));
            let Some(index) = chosen else {
                return Vec::new();
            };
            let names = set_lines.per_target.get(index).unwrap_or(&set_lines.all);
            (isas[index].flags(), names)
        }
    };
    flags
        .iter()
        .filter(|value| names.iter().any(|name| name == value.name))
        .map(|value| (value.name, value.value_string()))
        .collect()
}

/// The setting names a file's `set` lines give (`set NAME`, `set NAME=VALUE`, several to a
/// line), read from the lines above its first `function`, where the reader takes them.
#[derive(Debug, Default, PartialEq)]
struct SetLines {
    /// The names set above each `target` line, in the order of the targets.
    per_target: Vec<Vec<String>>,
    /// The names set anywhere above the first function.
    all: Vec<String>,
}

impl SetLines {
    fn of(text: &str) -> SetLines {
        let mut lines = SetLines::default();
        for line in text.lines() {
            let code = line.split(';').next().unwrap_or("");
            let mut words = code.split_whitespace();
            match words.next() {
                Some("function") => break,
                Some("set") => {
                    let names = words.map(|w| w.split('=').next().unwrap_or(w).to_string());
                    lines.all.extend(names);
                }
                Some("target") => lines.per_target.push(lines.all.clone()),
                _ => {}
            }
        }
        lines
    }
}

/// `isa` with the shared `settings` changed; its own target flags stay.
pub fn with_settings(
    isa: &dyn TargetIsa,
    settings: &[(&'static str, String)],
) -> Result<OwnedTargetIsa, String> {
    let mut shared = settings::builder();
    let values = isa.flags().iter().map(|v| (v.name, v.value_string()));
    for (name, value) in values.chain(settings.iter().cloned()) {
        shared
            .set(name, &value)
            .map_err(|e| format!("setting {name}={value}: {e}"))?;
    }
    let mut builder = isa::lookup(isa.triple().clone()).map_err(|e| e.to_string())?;
    for flag in isa.isa_flags() {
        let value = flag.value_string();
        builder
            .set(flag.name, &value)
            .map_err(|e| format!("setting {}={value}: {e}", flag.name))?;
    }
    builder
        .finish(settings::Flags::new(shared))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_lines_name_every_setting_above_the_first_function() {
        let text = "; set opt_level=none\nset preserve_frame_pointers=false enable_pinned_reg\n\
                    target x86_64\nset opt_level=speed ; comment\ntarget aarch64\n\
                    function %f() {\nblock0:\n    return\n}\nset is_pic\n";
        let lines = SetLines::of(text);
        let first = vec!["preserve_frame_pointers", "enable_pinned_reg"];
        let mut second = first.clone();
        second.push("opt_level");
        assert_eq!(lines.per_target, vec![first, second.clone()]);
        assert_eq!(lines.all, second);
    }
}
