//! Cranelift's run-test files as this test sees them: the targets the host can run, each an
//! ISA built from the file's `set` and `target` lines, and the run lines, each with the
//! function it follows.

use clif_merge::FuncName;
use cranelift_codegen::ir::Signature;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_reader::{IsaSpec, ParseOptions, RunCommand, parse_run_command, parse_test};
use target_lexicon::Architecture;

/// One file of run tests.
pub struct RunFile {
    /// Its path under the run-test folder, as messages name it.
    pub name: String,
    /// Its text.
    pub text: String,
    /// Its x86_64 targets (the host's, when it names none), in file order.
    pub targets: Vec<Target>,
    /// Its run lines.
    pub lines: Vec<RunLine>,
    /// Run lines that did not parse, with the message.
    pub bad_lines: Vec<String>,
}

/// A target of a file: the ISA to compile for, or why the host cannot run it.
pub struct Target {
    /// `target` line's position among the file's x86_64 targets, from 1 (0: no target line).
    pub number: usize,
    /// The ISA, or why not.
    pub isa: Result<OwnedTargetIsa, String>,
}

/// One `; run:` line.
pub struct RunLine {
    /// The function it follows, which is the one Cranelift runs.
    pub func: FuncName,
    /// That function's signature.
    pub signature: Signature,
    /// The command.
    pub command: RunCommand,
    /// Its line in the file, from 1.
    pub line: usize,
    /// Whether the line names a function other than the one it follows (Cranelift runs the one
    /// it follows).
    pub names_another: bool,
}

impl Target {
    /// How messages name it, after a place: ` target N`, or ` (host)` for a file without
    /// target lines.
    pub fn label(&self) -> String {
        match self.number {
            0 => " (host)".to_string(),
            n => format!(" target {n}"),
        }
    }
}

impl RunFile {
    /// Reads `text` of the file `name`; `Err` when cranelift-reader refuses it, `Ok(None)` when
    /// it has targets but no x86_64 one.
    pub fn read(name: String, text: String) -> Result<Option<RunFile>, String> {
        let test = parse_test(&text, ParseOptions::default()).map_err(|e| e.to_string())?;
        // cranelift-reader skips targets this build of Cranelift does not support (Pulley):
        // a file whose target lines all name such targets has no host target.
        let has_target_lines =
            (text.lines()).any(|l| l.split_whitespace().next() == Some("target"));
        let targets = match &test.isa_spec {
            IsaSpec::None(_) if has_target_lines => Vec::new(),
            spec => host_targets(spec),
        };
        if targets.is_empty() {
            return Ok(None);
        }
        let mut lines = Vec::new();
        let mut bad_lines = Vec::new();
        let mut cursor = LineCursor::new(&text);
        for (func, details) in &test.functions {
            cursor.seek(details.location.line_number);
            for comment in &details.comments {
                let line = cursor.find(comment.text);
                match parse_run_command(comment.text, &func.signature) {
                    Ok(Some(command)) => {
                        let func_name = FuncName::of_function(func);
                        let invoked = match &command {
                            RunCommand::Print(i) | RunCommand::Run(i, _, _) => &i.func,
                        };
                        let names_another = func_name.to_string() != format!("%{invoked}");
                        lines.push(RunLine {
                            func: func_name,
                            signature: func.signature.clone(),
                            command,
                            line,
                            names_another,
                        });
                    }
                    Ok(None) => {}
                    Err(e) => bad_lines.push(format!("line {line}: {e}")),
                }
            }
        }
        // The parsed file borrows `text`, which the file keeps.
        drop(test);
        Ok(Some(RunFile {
            name,
            text,
            targets,
            lines,
            bad_lines,
        }))
    }
}

/// The host's ISA with every feature it has, and `flags`.
pub fn native_isa(flags: settings::Flags) -> Result<OwnedTargetIsa, String> {
    let builder = cranelift_native::builder_with_options(true).map_err(str::to_string)?;
    builder.finish(flags).map_err(|e| e.to_string())
}

/// The file's x86_64 targets; the host's own for a file without target lines.
fn host_targets(spec: &IsaSpec) -> Vec<Target> {
    match spec {
        IsaSpec::None(flags) => vec![Target {
            number: 0,
            isa: native_isa(flags.clone()),
        }],
        IsaSpec::Some(isas) => isas
            .iter()
            .filter(|isa| isa.triple().architecture == Architecture::X86_64)
            .enumerate()
            .map(|(n, isa)| Target {
                number: n + 1,
                isa: host_isa_like(isa),
            })
            .collect(),
    }
}

/// The ISA `requested` on this host: its flags and ISA flags on the host's triple, as
/// Cranelift's run tests build it; `Err` when the host lacks a feature it asks for.
fn host_isa_like(requested: &OwnedTargetIsa) -> Result<OwnedTargetIsa, String> {
    let flags = requested.flags().clone();
    if flags.enable_pinned_reg() {
        return Err("sets enable_pinned_reg, which Cranelift's run tests refuse".into());
    }
    let host = native_isa(flags.clone())?;
    let host_flags = host.isa_flags();
    for wanted in requested.isa_flags() {
        if wanted.as_bool() != Some(true) {
            continue;
        }
        let has = host_flags
            .iter()
            .any(|f| f.name == wanted.name && f.as_bool() == Some(true));
        if !has {
            return Err(format!("the host lacks {}", wanted.name));
        }
    }
    let mut builder = cranelift_native::builder_with_options(false).map_err(str::to_string)?;
    for value in requested.isa_flags() {
        builder
            .set(value.name, &value.value_string())
            .map_err(|e| format!("ISA flag {}: {e}", value.name))?;
    }
    builder.finish(flags).map_err(|e| e.to_string())
}

/// Finds comment lines in a file, in order.
struct LineCursor<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> LineCursor<'a> {
    fn new(text: &'a str) -> Self {
        LineCursor {
            lines: text.lines().collect(),
            next: 0,
        }
    }

    /// Looks on from `line` (from 1).
    fn seek(&mut self, line: usize) {
        self.next = line.saturating_sub(1);
    }

    /// The line (from 1) of the next line whose text is `comment`; 0 when there is none.
    fn find(&mut self, comment: &str) -> usize {
        let comment = comment.trim();
        let found = self.lines[self.next..]
            .iter()
            .position(|l| l.trim().ends_with(comment));
        match found {
            Some(at) => {
                self.next += at + 1;
                self.next
            }
            None => 0,
        }
    }
}
