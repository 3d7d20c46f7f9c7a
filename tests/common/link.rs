//! Linking objects with a C driver and running the program, natively or under qemu, with each
//! of the three ELF linkers; and the structure every COMDAT group of an object must have. Used
//! by the global merging tests (which include this file on its own).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

/// A C compiler and a way to run what it links.
pub struct Toolchain {
    /// The C compiler, which drives the link.
    pub cc: &'static str,
    /// The emulator and its arguments, or nothing for the host.
    pub runner: Vec<&'static str>,
    /// The target triple objects are written for.
    pub triple: &'static str,
}

/// Whether `tool --version` runs.
pub fn tool_exists(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The toolchain for x86_64 (the host) or aarch64 (a cross compiler and qemu); None, with a
/// note, when a tool is missing, except under CI (`CI` set), where that fails the test.
pub fn toolchain(aarch64: bool) -> Option<Toolchain> {
    let (cc, runner, triple) = if aarch64 {
        (
            "aarch64-linux-gnu-gcc",
            vec!["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
            "aarch64-unknown-linux-gnu",
        )
    } else {
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return None;
        }
        ("cc", Vec::new(), "x86_64-unknown-linux-gnu")
    };
    let tools: Vec<&str> = std::iter::once(cc).chain(runner.first().copied()).collect();
    if let Some(missing) = tools.iter().find(|t| !tool_exists(t)) {
        assert!(std::env::var_os("CI").is_none(), "CI needs {missing}");
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping: {missing} is not installed"
        );
        return None;
    }
    Some(Toolchain { cc, runner, triple })
}

/// Runs `cmd`, which must succeed; returns its standard output.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The ELF linkers a link can choose with `-fuse-ld=` (Debian: binutils and lld).
pub const LINKERS: [&str; 3] = ["bfd", "gold", "lld"];

/// The linkers of [`LINKERS`] that are installed (`ld.bfd`, `ld.gold`, `ld.lld`); under CI
/// all must be.
pub fn linkers() -> Vec<&'static str> {
    LINKERS
        .into_iter()
        .filter(|l| {
            let found = tool_exists(&format!("ld.{l}"));
            if !found {
                assert!(std::env::var_os("CI").is_none(), "CI needs ld.{l}");
                eprintln!("note: ld.{l} is not installed: links with it are skipped");
            }
            found
        })
        .collect()
}

/// Compiles a C driver into an object, once.
pub fn compile_driver(tc: &Toolchain, dir: &Path, source: &str) -> PathBuf {
    let c = dir.join("driver.c");
    std::fs::write(&c, source).unwrap();
    let o = dir.join("driver.o");
    run_ok(
        Command::new(tc.cc)
            .args(["-O1", "-c"])
            .arg(&c)
            .arg("-o")
            .arg(&o),
    );
    o
}

/// Links `objects` in this order with `linker` (one of [`LINKERS`], with `--gc-sections` when
/// `gc`) and runs the program: its output, or what went wrong (the link's or the run's error,
/// a crash).
pub fn link_and_run(
    tc: &Toolchain,
    exe: &Path,
    objects: &[&Path],
    linker: &str,
    gc: bool,
) -> Result<String, String> {
    let mut cmd = Command::new(tc.cc);
    cmd.arg(format!("-fuse-ld={linker}"));
    if !tc.runner.is_empty() && linker == "lld" {
        // A cross compiler looks for `ld.lld` among its own tools only.
        cmd.arg("-B").arg(lld_directory(exe)?);
    }
    if gc {
        cmd.arg("-Wl,--gc-sections");
    }
    let out = cmd
        .args(objects)
        .arg("-o")
        .arg(exe)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tc.cc))?;
    if !out.status.success() {
        return Err(format!(
            "the link fails: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut run = match tc.runner.split_first() {
        Some((runner, args)) => {
            let mut c = Command::new(runner);
            c.args(args).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let out = run.output().map_err(|e| format!("cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!("the program fails: {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What is wrong with the COMDAT groups of an ELF object, if anything: a group holds one
/// section with code and exactly the relocation sections that apply to its sections; the only
/// symbol defined in its sections is the group's signature (anything else would vanish when
/// the linker keeps another object's copy of the group); and every section flagged
/// `SHF_GROUP` is in a group.
pub fn group_defects(bytes: &[u8]) -> Vec<String> {
    use object::elf;
    use object::read::elf::{ElfFile64, SectionHeader as _};
    use object::{Endianness, Object as _, ObjectComdat as _, ObjectSymbol as _};
    let file = ElfFile64::<Endianness>::parse(bytes).expect("an ELF object");
    let endian = file.endian();
    let headers: Vec<_> = file.elf_section_table().iter().collect();
    let mut defects = Vec::new();
    let mut grouped = std::collections::BTreeSet::new();
    for comdat in file.comdats() {
        let signature = file.symbol_by_index(comdat.symbol()).unwrap();
        let signature = signature.name().unwrap().to_string();
        let members: Vec<usize> = comdat.sections().map(|s| s.0).collect();
        grouped.extend(members.iter().copied());
        let is_reloc =
            |i: usize| matches!(headers[i].sh_type(endian), elf::SHT_RELA | elf::SHT_REL);
        let code: Vec<usize> = members.iter().copied().filter(|&i| !is_reloc(i)).collect();
        if code.len() != 1 {
            defects.push(format!(
                "group {signature}: {} sections of code",
                code.len()
            ));
        }
        for (i, h) in headers.iter().enumerate() {
            let applies = is_reloc(i) && code.contains(&(h.sh_info(endian) as usize));
            if applies != members.contains(&i) && is_reloc(i) {
                defects.push(format!(
                    "group {signature}: relocation section {i} is {}",
                    if applies {
                        "outside it"
                    } else {
                        "in it, for another section"
                    }
                ));
            }
        }
        for symbol in file.symbols().filter(|s| s.is_definition()) {
            let in_group = symbol.section_index().is_some_and(|s| code.contains(&s.0));
            let name = symbol.name().unwrap();
            if in_group && name != signature {
                defects.push(format!("group {signature}: {name} is defined in it"));
            }
        }
    }
    for (i, h) in headers.iter().enumerate() {
        let flagged = h.sh_flags(endian) & u64::from(elf::SHF_GROUP) != 0;
        if flagged && !grouped.contains(&i) {
            defects.push(format!(
                "section {i} is flagged SHF_GROUP but is in no group"
            ));
        }
    }
    defects
}

/// A directory beside `exe` holding a link named `ld.lld` to the `ld.lld` of `PATH`.
fn lld_directory(exe: &Path) -> Result<PathBuf, String> {
    let dir = exe.with_extension("lld-bin");
    let link = dir.join("ld.lld");
    if link.exists() {
        return Ok(dir);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let lld = std::env::split_paths(&path)
        .map(|d| d.join("ld.lld"))
        .find(|p| p.exists())
        .ok_or("ld.lld is not on PATH")?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(lld, &link).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The exit status of a freestanding aarch64 program (no libc, whose start files carry no
/// landing pads) built from the C `driver` and `object`, linked with `-z force-bti` and run
/// under `qemu-aarch64 -cpu max`, which guards its pages: an indirect call to code without a
/// landing pad faults. `tc` must be the aarch64 toolchain.
pub fn run_freestanding_with_bti(
    tc: &Toolchain,
    dir: &Path,
    driver: &str,
    object: &Path,
) -> Option<i32> {
    let (source, exe) = (dir.join("bti_driver.c"), dir.join("bti_run"));
    std::fs::write(&source, driver).unwrap();
    run_ok(
        Command::new(tc.cc)
            .args(["-O1", "-ffreestanding", "-nostdlib", "-static"])
            .args(["-mbranch-protection=standard", "-Wl,-z,force-bti", "-o"])
            .arg(&exe)
            .arg(&source)
            .arg(object),
    );
    let run = Command::new("qemu-aarch64")
        .args(["-cpu", "max"])
        .arg(&exe)
        .output()
        .unwrap();
    run.status.code()
}

/// What the program `exe` prints, run natively or under `tc`'s emulator; it must succeed.
pub fn run_program(tc: &Toolchain, exe: &Path) -> String {
    let mut run = match tc.runner.split_first() {
        Some((runner, args)) => {
            let mut c = Command::new(runner);
            c.args(args).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    run_ok(&mut run)
}

/// Links `object` into the shared library `lib{label}.so` in `dir` (with `-fuse-ld=LINKER`
/// when given) and the C `driver` source into an executable that loads it; what it prints.
pub fn run_with_shared_library(
    tc: &Toolchain,
    dir: &Path,
    label: &str,
    object: &Path,
    driver: &Path,
    linker: Option<&str>,
) -> String {
    let lib = dir.join(format!("lib{label}.so"));
    let mut cc = Command::new(tc.cc);
    if let Some(linker) = linker {
        cc.arg(format!("-fuse-ld={linker}"));
    }
    run_ok(cc.arg("-shared").arg(object).arg("-o").arg(&lib));
    let exe = dir.join(format!("{label}_so"));
    run_ok(
        Command::new(tc.cc)
            .arg(driver)
            .arg(&lib)
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-o")
            .arg(&exe),
    );
    run_program(tc, &exe)
}
