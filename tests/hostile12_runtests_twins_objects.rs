//! hostile12: Cranelift's run tests (`../shared/runtests/`) through the object writer *with
//! twins*: `tests/hostile4_runtests_objects.rs` merges each file as it is, where few functions
//! are equal, so its objects hold few thunks, aliases or shared bodies. Here every function of
//! a file gets a twin under another name, with the function's run lines: an exact copy (so that
//! every mode makes it an alias, a thunk or removes it, through a one-jump thunk or machine-code
//! folding), or a near twin whose first integer constant differs in its lowest bit (only of a
//! function that touches no memory: elsewhere a constant may be an offset, and the twin would
//! access outside its slot, which `stack-addr-64.clif`'s did and crashed merged; so that
//! `--similar` shares a body between the two and the twin's runs go through a thunk passing
//! that constant). Each module is merged in every mode, exact and with `--similar` (every group
//! taken), written as an x86_64 object as `clif-merge -o` writes it, linked with a C driver
//! making every scalar run line's call (the function's and its twin's), and run: it must
//! print what the same module's unmerged object prints. Files that cannot be built or run
//! unmerged are skipped, as hostile4 skips them. The harness (driver, flags, object, link) is
//! hostile4's. Without `../shared`, or off x86_64 Linux, the test says so and passes.

#[path = "runtests/cases.rs"]
#[allow(dead_code)]
mod cases;
#[path = "common/files.rs"]
mod files;

use cases::{RunFile, RunLine};
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

fn runtests_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/runtests");
    if !dir.is_dir() {
        eprintln!("note: skipping: ../shared is not beside the repository");
        return None;
    }
    Some(dir)
}

/// How the objects are compiled, beyond the file's flags: `--opt-level` and
/// `--function-sections` (hostile4 takes the defaults).
#[derive(Clone, Copy, Debug, Default)]
struct Build {
    opt_level: OptLevel,
    function_sections: bool,
}

/// How a function's twin differs from it.
#[derive(Clone, Copy, Debug)]
enum Twin {
    /// Not at all: an exact copy under another name.
    Exact,
    /// Its first integer constant differs in its lowest bit.
    Near,
}

/// `text` with, after it, a twin of every function (`%name_twin`) followed by the function's
/// run lines, made to call the twin. None when no twin differs as `twin` asks (a near twin of
/// a file without integer constants).
fn with_twins(text: &str, twin: Twin) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = text.to_string();
    out.push('\n');
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = function_name(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(end) = (i..lines.len()).find(|&j| lines[j] == "}") else {
            break;
        };
        let renamed = |l: &str| l.replacen(&format!("%{name}("), &format!("%{name}_twin("), 1);
        let mut body: Vec<String> = lines[i..=end].iter().map(|l| l.to_string()).collect();
        body[0] = renamed(&body[0]);
        if let Twin::Near = twin {
            // A constant of a function that touches memory may be an offset or a size: flipped,
            // it makes an access out of its slot, which the unmerged program may survive by luck.
            let touches_memory = (body.iter()).any(|l| MEMORY_WORDS.iter().any(|w| l.contains(w)));
            let at = body.iter().position(|l| near_constant(l).is_some());
            match at.filter(|_| !touches_memory) {
                Some(k) => body[k] = near_constant(&body[k]).unwrap(),
                None => {
                    i = end + 1;
                    continue;
                }
            }
        }
        changed = true;
        out += &body.join("\n");
        out.push('\n');
        let mut j = end + 1;
        while j < lines.len() && (lines[j].starts_with(';') || lines[j].trim().is_empty()) {
            if lines[j].starts_with("; run:") || lines[j].starts_with("; print:") {
                out += &renamed(lines[j]);
                out.push('\n');
            }
            j += 1;
        }
        out.push('\n');
        i = end + 1;
    }
    changed.then_some(out)
}

/// Words of instructions and entities that reach memory, or pass values to code that may.
const MEMORY_WORDS: [&str; 9] = [
    "load",
    "store",
    "_slot",
    "stack_",
    "global_value",
    "symbol_value",
    "call",
    "atomic",
    "heap",
];

/// The name of the function a `function %name(` line opens.
fn function_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("function %")?;
    rest.split_once('(').map(|(name, _)| name)
}

/// `line` with its integer constant's lowest bit flipped, when it is an `iconst` of a decimal
/// or hex constant.
fn near_constant(line: &str) -> Option<String> {
    let (head, value) = line.split_once(" = iconst.")?;
    let (ty, rest) = value.split_once(' ')?;
    let literal = rest.split_whitespace().next()?;
    let parsed = match literal.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(&hex.replace('_', ""), 16).ok()?,
        None => literal.parse::<i128>().ok()?,
    };
    Some(format!("{head} = iconst.{ty} {}", parsed ^ 1))
}

/// The C type of a scalar CLIF type, or None.
fn c_type(ty: types::Type) -> Option<&'static str> {
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

fn scalar(sig: &Signature) -> bool {
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
fn c_value(value: &DataValue) -> Option<String> {
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
fn driver(file: &RunFile) -> Option<String> {
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
struct Arch {
    /// The architecture as `target` lines and `--target` name it.
    name: &'static str,
    cc: &'static str,
    /// The emulator and its arguments, or nothing for the host.
    runner: &'static [&'static str],
    /// The CPU preset of the objects.
    cpu: &'static str,
}

const X86_64: Arch = Arch {
    name: "x86_64",
    cc: "cc",
    runner: &[],
    cpu: "native",
};

const AARCH64: Arch = Arch {
    name: "aarch64",
    cc: "aarch64-linux-gnu-gcc",
    runner: &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
    cpu: "baseline",
};

/// The file's `set` lines and its first `arch` target's features, as object flags.
fn isa_flags(text: &str, arch: Arch) -> Option<Vec<String>> {
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

fn object(
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
fn run(arch: Arch, dir: &Path, tag: &str, driver: &Path, object: &[u8]) -> Result<String, String> {
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
fn skipped(name: &str, why: &str) -> (Vec<String>, bool) {
    if std::env::var_os("RUNTESTS_SKIPS").is_some() {
        let why = why.lines().next().unwrap_or_default();
        eprintln!("skipped {name}: {why}");
    }
    (Vec::new(), false)
}

/// The file with twins as `twin` makes them, in every configuration: the differences, and
/// whether it ran at all.
fn check_file(arch: Arch, build: Build, path: &Path, twin: Twin) -> (Vec<String>, bool) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let original = std::fs::read_to_string(path).unwrap();
    let Some(text) = with_twins(&original, twin) else {
        return (Vec::new(), false);
    };
    let Some(flags) = isa_flags(&text, arch) else {
        return (Vec::new(), false);
    };
    let Ok(Some(file)) = RunFile::read(name.clone(), text.clone()) else {
        return (Vec::new(), false);
    };
    let Some(source) = driver(&file) else {
        return (Vec::new(), false);
    };
    let module = match read_module_text(path, &text, ReadOptions::default()) {
        Ok(module) => module,
        Err(e) => return skipped(&name, &e.to_string()),
    };
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
    let expected = match object((arch, build), &module, Mode::Safe, &flags, false)
        .and_then(|unmerged| run(arch, dir.path(), "unmerged", &driver, &unmerged))
    {
        Ok(expected) => expected,
        Err(e) => return skipped(&name, &e),
    };
    let every_group = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let mut differences = Vec::new();
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(every_group.clone())] {
            let tag = format!(
                "{twin:?}-{mode:?}{}",
                if similar.is_some() { "-similar" } else { "" }
            );
            let mut merged = module.clone();
            merge_module_with(&mut merged, mode, similar.as_ref());
            let got = object((arch, build), &merged, mode, &flags, true)
                .and_then(|bytes| run(arch, dir.path(), &tag, &driver, &bytes));
            match got {
                Ok(out) if out == expected => {}
                Ok(out) => {
                    let first = expected
                        .lines()
                        .zip(out.lines())
                        .find(|(a, b)| a != b)
                        .map(|(a, b)| format!("line {a} unmerged, {b} merged"))
                        .unwrap_or_else(|| "another number of lines".into());
                    differences.push(format!("{name} {tag}: {first}"));
                }
                Err(e) => differences.push(format!("{name} {tag}: {e}")),
            }
        }
    }
    (differences, true)
}

/// Every file on `arch` with twins as `twin` makes them; `at_least` files must run (else the
/// harness is broken).
fn every_file(arch: Arch, build: Build, twin: Twin, at_least: usize) {
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
    let paths = files::clif_files(&dir);
    let results: Vec<(Vec<String>, bool)> = paths
        .par_iter()
        .map(|p| check_file(arch, build, p, twin))
        .collect();
    let ran = results.iter().filter(|r| r.1).count();
    let differences: Vec<String> = results.into_iter().flat_map(|r| r.0).collect();
    eprintln!(
        "runtests with {twin:?} twins through {} objects ({build:?}): {ran} of {} files ran",
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

#[test]
fn runtests_with_exact_twins_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    every_file(X86_64, Build::default(), Twin::Exact, 100);
}

#[test]
fn runtests_with_near_twins_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    every_file(X86_64, Build::default(), Twin::Near, 50);
}

/// The exact twins at `--opt-level speed_and_size` with `--function-sections`, and at
/// `--opt-level none` (a minute: `cargo test --test hostile12_runtests_twins_objects --
/// --ignored`).
#[test]
#[ignore = "slow: every run-test file with twins linked and run twelve more times"]
fn runtests_with_exact_twins_print_the_same_at_other_opt_levels_and_with_function_sections() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    let builds = [
        Build {
            opt_level: OptLevel::SpeedAndSize,
            function_sections: true,
        },
        Build {
            opt_level: OptLevel::None,
            function_sections: false,
        },
    ];
    for build in builds {
        every_file(X86_64, build, Twin::Exact, 100);
    }
}

/// The exact and near twins on aarch64 under qemu (the files' aarch64 targets: `use_bti`,
/// `sign_return_address` and the like as their `target` lines set them, on one-jump thunks and
/// folded code): `cargo test --test hostile12_runtests_twins_objects -- --ignored`.
#[test]
#[ignore = "slow: every run-test file with twins linked and run under qemu-aarch64 fourteen times"]
fn runtests_with_twins_through_aarch64_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: skipping: the run tests' aarch64 objects run under qemu on Linux");
        return;
    }
    every_file(AARCH64, Build::default(), Twin::Exact, 100);
    every_file(AARCH64, Build::default(), Twin::Near, 40);
}
