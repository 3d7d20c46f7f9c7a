//! Cranelift's run tests as native programs: a C driver for a run-test file's run lines (scalar
//! signatures), its objects written for x86_64 or aarch64, linked and run. Shared by the tests
//! that merge the run tests and compare what the merged and unmerged programs print
//! (`hostile4_runtests_objects`, `hostile12_runtests_twins_objects`); each includes it with
//! `tests/runtests/cases.rs` as `cases` and `tests/common/files.rs` as `files` beside it.

use crate::cases::{RunFile, RunLine};
use clif_merge::emit::object::{IsaSettings, ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::{
    ClifModule, FuncName, Mode, ReadOptions, SimilarOptions, merge_module_with, read_module_text,
};
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{ArgumentPurpose, Signature, types};
use cranelift_codegen::isa::CallConv;
use cranelift_reader::RunCommand;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn runtests_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/runtests");
    if !dir.is_dir() {
        eprintln!("note: skipping: ../shared is not beside the repository");
        return None;
    }
    Some(dir)
}

/// How the objects are compiled, beyond the file's flags: `--opt-level` and
/// `--function-sections` (the defaults: `speed`, one text section).
#[derive(Clone, Copy, Debug, Default)]
pub struct Build {
    pub opt_level: OptLevel,
    pub function_sections: bool,
}

/// The C type of a scalar CLIF type, or None.
pub fn c_type(ty: types::Type) -> Option<&'static str> {
    Some(match ty {
        types::I8 => "uint8_t",
        types::I16 => "uint16_t",
        types::I32 => "uint32_t",
        types::I64 => "uint64_t",
        types::F32 => "float",
        types::F64 => "double",
        _ => return None,
    })
}

pub fn scalar(sig: &Signature) -> bool {
    let all = |ps: &[cranelift_codegen::ir::AbiParam]| {
        ps.iter()
            .all(|p| p.purpose == ArgumentPurpose::Normal && c_type(p.value_type).is_some())
    };
    // C calls in the platform's convention (`tail` puts arguments elsewhere).
    let c_convention = matches!(
        sig.call_conv,
        CallConv::Fast | CallConv::SystemV | CallConv::AppleAarch64
    );
    c_convention
        && all(&sig.params)
        && all(&sig.returns)
        && sig.returns.len() == 1
        && sig.params.len() <= 6
}

/// A C expression of `value`.
pub fn c_value(value: &DataValue) -> Option<String> {
    Some(match value {
        DataValue::I8(x) => format!("(uint8_t){}", *x as u8),
        DataValue::I16(x) => format!("(uint16_t){}", *x as u16),
        DataValue::I32(x) => format!("(uint32_t){}u", *x as u32),
        DataValue::I64(x) => format!("(uint64_t){}ull", *x as u64),
        DataValue::F32(x) => format!("f32_of({:#x}u)", x.bits()),
        DataValue::F64(x) => format!("f64_of({:#x}ull)", x.bits()),
        _ => return None,
    })
}

/// The C driver making every scalar run line's call: one output line per run line, its line
/// number and the result's bits. Lines that name a function not by `%name`, or values it
/// cannot write, are left out.
pub fn driver(file: &RunFile) -> Option<String> {
    let mut decls = std::collections::BTreeMap::new();
    let mut calls = String::new();
    for RunLine {
        func,
        signature,
        command,
        line,
        ..
    } in &file.lines
    {
        let (RunCommand::Run(invocation, _, _) | RunCommand::Print(invocation)) = command;
        let FuncName::Testcase(name) = func else {
            continue;
        };
        if !scalar(signature) {
            continue;
        }
        let Some(args) = invocation
            .args
            .iter()
            .map(c_value)
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let ret = c_type(signature.returns[0].value_type).unwrap();
        let params: Vec<_> = signature
            .params
            .iter()
            .map(|p| c_type(p.value_type).unwrap())
            .collect();
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        decls.insert(name.clone(), format!("extern {ret} {name}({params});\n"));
        let bits = match ret {
            "float" => "(unsigned long long)bits_of_f32",
            "double" => "(unsigned long long)bits_of_f64",
            _ => "(unsigned long long)",
        };
        calls += &format!(
            "    {{ {ret} r = {name}({}); printf(\"{line} %llx\\n\", {bits}(r)); }}\n",
            args.join(", ")
        );
    }
    if calls.is_empty() {
        return None;
    }
    Some(format!(
        "#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n\
         static float f32_of(uint32_t b) {{ float f; memcpy(&f, &b, 4); return f; }}\n\
         static double f64_of(uint64_t b) {{ double f; memcpy(&f, &b, 8); return f; }}\n\
         static uint32_t bits_of_f32(float f) {{ uint32_t b; memcpy(&b, &f, 4); return b; }}\n\
         static uint64_t bits_of_f64(double f) {{ uint64_t b; memcpy(&b, &f, 8); return b; }}\n\
         {}int main(void) {{\n{calls}    return 0;\n}}\n",
        decls.into_values().collect::<String>()
    ))
}

/// Where the objects run: x86_64 natively, aarch64 under qemu.
#[derive(Clone, Copy)]
pub struct Arch {
    /// The architecture as `target` lines and `--target` name it.
    pub name: &'static str,
    /// The C compiler that links its objects.
    pub cc: &'static str,
    /// The emulator and its arguments, or nothing for the host.
    pub runner: &'static [&'static str],
    /// The CPU preset of the objects.
    pub cpu: &'static str,
}

pub const X86_64: Arch = Arch {
    name: "x86_64",
    cc: "cc",
    runner: &[],
    cpu: "native",
};

pub const AARCH64: Arch = Arch {
    name: "aarch64",
    cc: "aarch64-linux-gnu-gcc",
    runner: &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
    cpu: "baseline",
};

/// The file's `set` lines and its first `arch` target's features, as object flags.
pub fn isa_flags(text: &str, arch: Arch) -> Option<Vec<String>> {
    let mut flags = Vec::new();
    let mut target_lines = 0;
    let mut x86_64 = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("set") => flags.extend(words.map(str::to_string)),
            Some("target") => {
                target_lines += 1;
                if x86_64.is_none() && words.next() == Some(arch.name) {
                    x86_64 = Some(words.map(str::to_string).collect::<Vec<_>>());
                }
            }
            _ => {}
        }
    }
    match (target_lines, x86_64) {
        (0, _) => Some(flags),
        (_, Some(features)) => Some(flags.into_iter().chain(features).collect()),
        (_, None) => None,
    }
}

pub fn object(
    (arch, build): (Arch, Build),
    module: &ClifModule,
    mode: Mode,
    flags: &[String],
    fold: bool,
) -> Result<Vec<u8>, String> {
    let options = ObjectOptions {
        target: parse_target(arch.name).unwrap(),
        opt_level: build.opt_level,
        isa: IsaSettings {
            cpu: Some(arch.cpu.into()),
            flags: flags.to_vec(),
        },
        function_sections: build.function_sections,
        mode,
        fold_machine_code: fold,
    };
    std::panic::catch_unwind(|| write_object(module, 0, &options))
        .map_err(|_| "the object writer panics".to_string())?
        .map(|o| o.bytes)
        .map_err(|e| e.to_string())
}

/// Links `object` with the driver and runs the program: its output, or what went wrong.
pub fn run(
    arch: Arch,
    dir: &Path,
    tag: &str,
    driver: &Path,
    object: &[u8],
) -> Result<String, String> {
    let o = dir.join(format!("{tag}.o"));
    let exe = dir.join(tag);
    std::fs::write(&o, object).unwrap();
    let link = Command::new(arch.cc)
        .arg(driver)
        .arg(&o)
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .map_err(|e| e.to_string())?;
    if !link.status.success() {
        return Err(format!(
            "link: {}",
            String::from_utf8_lossy(&link.stderr).trim()
        ));
    }
    // A program that does not end in a minute (a call the driver makes wrongly) is killed.
    let out = Command::new("timeout")
        .arg("60")
        .args(arch.runner)
        .arg(&exe)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("run: {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A file whose unmerged program cannot be built or run: said (with `RUNTESTS_SKIPS` set).
pub fn skipped(name: &str, why: &str) -> (Vec<String>, bool) {
    if std::env::var_os("RUNTESTS_SKIPS").is_some() {
        let why = why.lines().next().unwrap_or_default();
        eprintln!("skipped {name}: {why}");
    }
    (Vec::new(), false)
}

/// The result of checking one file: the differences, and whether it ran at all.
pub type Checked = (Vec<String>, bool);

/// A run-test file ready to be merged and compared: its module, the ISA flags its `target`
/// lines ask for, its driver compiled in a folder of its own, and what the unmerged program
/// prints.
pub struct Unmerged {
    pub name: String,
    pub arch: Arch,
    pub build: Build,
    pub module: ClifModule,
    pub flags: Vec<String>,
    pub dir: tempfile::TempDir,
    pub driver: PathBuf,
    pub expected: String,
}

/// `text` (the file at `path`, perhaps changed) read, its driver compiled and its unmerged
/// object linked and run; `Err` with what to return when the file does not run on `arch`.
pub fn unmerged(arch: Arch, build: Build, path: &Path, text: &str) -> Result<Unmerged, Checked> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let flags = isa_flags(text, arch).ok_or((Vec::new(), false))?;
    let Ok(Some(file)) = RunFile::read(name.clone(), text.to_string()) else {
        return Err((Vec::new(), false));
    };
    let source = driver(&file).ok_or((Vec::new(), false))?;
    let module = read_module_text(path, text, ReadOptions::default())
        .map_err(|e| skipped(&name, &e.to_string()))?;
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("driver.c");
    std::fs::write(&c, source).unwrap();
    let driver = dir.path().join("driver.o");
    let compiled = Command::new(arch.cc)
        .args(["-O1", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&driver)
        .status()
        .unwrap();
    assert!(compiled.success(), "{name}: the driver does not compile");
    let expected = object((arch, build), &module, Mode::Safe, &flags, false)
        .and_then(|unmerged| run(arch, dir.path(), "unmerged", &driver, &unmerged))
        .map_err(|e| skipped(&name, &e))?;
    Ok(Unmerged {
        name,
        arch,
        build,
        module,
        flags,
        dir,
        driver,
        expected,
    })
}

impl Unmerged {
    /// The module merged in `mode` (with `similar`), written with folding, linked and run: a
    /// line for `differences` when it prints otherwise than the unmerged program.
    pub fn compare_merged(
        &self,
        tag: &str,
        mode: Mode,
        similar: Option<&SimilarOptions>,
    ) -> Option<String> {
        let mut merged = self.module.clone();
        merge_module_with(&mut merged, mode, similar);
        let got = object((self.arch, self.build), &merged, mode, &self.flags, true)
            .and_then(|bytes| run(self.arch, self.dir.path(), tag, &self.driver, &bytes));
        let name = &self.name;
        match got {
            Ok(out) if out == self.expected => None,
            Ok(out) => {
                let first = (self.expected.lines().zip(out.lines()))
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("line {a} unmerged, {b} merged"))
                    .unwrap_or_else(|| "another number of lines".into());
                Some(format!("{name} {tag}: {first}"))
            }
            Err(e) => Some(format!("{name} {tag}: {e}")),
        }
    }
}

/// `check` on every run-test file (`what` names them in the line said), for `arch` (skipped, said, where its tools are missing
/// outside CI); `at_least` files must run (else the harness is broken), and no file may
/// print otherwise merged.
pub fn every_file(
    arch: Arch,
    what: &str,
    at_least: usize,
    check: impl Fn(&Path) -> Checked + Sync,
) {
    let Some(dir) = runtests_dir() else { return };
    let tools = std::iter::once(arch.cc).chain(arch.runner.first().copied());
    for tool in tools {
        let found = Command::new(tool).arg("--version").output().is_ok();
        if !found {
            assert!(std::env::var_os("CI").is_none(), "CI needs {tool}");
            eprintln!("note: skipping: {tool} is not installed");
            return;
        }
    }
    let paths = crate::files::clif_files(&dir);
    let results: Vec<Checked> = paths.par_iter().map(|p| check(p)).collect();
    let ran = results.iter().filter(|r| r.1).count();
    let differences: Vec<String> = results.into_iter().flat_map(|r| r.0).collect();
    eprintln!(
        "{what} through {} objects: {ran} of {} files ran",
        arch.name,
        paths.len()
    );
    assert!(
        ran >= at_least,
        "only {ran} files ran: the harness is broken"
    );
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
