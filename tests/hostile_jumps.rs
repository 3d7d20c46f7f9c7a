//! The object writer's one-jump thunks (`src/emit/object/code.rs`, `thunk_target`): a function
//! that only forwards to another becomes `jmp f` / `b f`. Its own rule: "a function forwarding
//! to itself recurses until the stack overflows; a jump to itself would loop instead", so a
//! function calling itself by its own name stays compiled. The same holds for a function that
//! reaches itself through an alias or through other forwarders: those must not become a cycle of
//! jumps either. Nothing here is merged: the forwarders are the input's own functions.

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::{Mode, ReadOptions, read_module_text};
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "common/cc.rs"]
mod cc;
use std::time::{Duration, Instant};

/// `%g` calls itself through its alias `%a`; `%p` and `%q` call each other; `%s` calls itself
/// by name (the case the rule already covers).
const FORWARDERS: &str = "
function %g(i32) -> i32 {
    fn0 = %a(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}

function %p(i32) -> i32 {
    fn0 = %q(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}

function %q(i32) -> i32 {
    fn0 = %p(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}

function %s(i32) -> i32 {
    fn0 = %s(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}

; alias: %a = %g
";

fn object() -> Vec<u8> {
    let module = read_module_text(
        Path::new("forwarders.clif"),
        FORWARDERS,
        ReadOptions::default(),
    )
    .unwrap();
    let options = ObjectOptions {
        target: parse_target("x86_64").unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: true,
    };
    write_object(&module, 0, &options).unwrap().bytes
}

/// How the program that calls `name(1)` ends: Some(signal) when a signal killed it (a stack
/// overflow: SIGSEGV), None when it still ran after 10 seconds (a loop of jumps; killed).
/// Skipped (returns Err) off x86_64 Linux or without `cc`.
fn how_calling_ends(object: &[u8], name: &str) -> Result<Option<i32>, ()> {
    use std::os::unix::process::ExitStatusExt as _;
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Err(());
    }
    let dir = tempfile::tempdir().unwrap();
    let (driver, obj, exe) = (
        dir.path().join("driver.c"),
        dir.path().join("forwarders.o"),
        dir.path().join("run"),
    );
    let source = format!("int {name}(int);\nint main(void) {{ return {name}(1); }}\n");
    std::fs::write(&driver, source).unwrap();
    std::fs::write(&obj, object).unwrap();
    let Ok(status) = Command::new("cc")
        .arg(&driver)
        .arg(&obj)
        .arg("-o")
        .arg(&exe)
        .status()
    else {
        assert!(std::env::var_os("CI").is_none(), "CI needs cc");
        eprintln!("note: skipping: cc is not installed");
        return Err(());
    };
    assert!(status.success());
    let mut child = Command::new(&exe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Some(status) = child.try_wait().unwrap() {
            return Ok(status.signal());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    Ok(None)
}

const SIGSEGV: i32 = 11;

/// The rule's own case holds: `%s`, which calls itself by name, overflows the stack.
#[test]
fn a_function_calling_itself_by_name_still_overflows_the_stack() {
    if let Ok(end) = how_calling_ends(&object(), "s") {
        assert_eq!(end, Some(SIGSEGV), "%s(1)");
    }
}

/// `%g` calls itself through `%a`: written as `jmp a`, and `a` is `g`'s own address, so
/// `g(1)` spins forever where the compiled function overflowed the stack.
#[test]
fn a_function_calling_itself_through_an_alias_still_overflows_the_stack() {
    if let Ok(end) = how_calling_ends(&object(), "g") {
        assert_eq!(end, Some(SIGSEGV), "%g(1) ran 10 s without ending");
    }
}

/// `%p` and `%q` call each other: written as `jmp q` and `jmp p`, a loop of two jumps.
#[test]
fn functions_forwarding_to_each_other_still_overflow_the_stack() {
    if let Ok(end) = how_calling_ends(&object(), "p") {
        assert_eq!(end, Some(SIGSEGV), "%p(1) ran 10 s without ending");
    }
}

/// `%g(i32) -> i8 uext` forwards to `%f`, declared `-> i8 uext` at the call but defined
/// `-> i8`: compiled, `%g` zero-extends the result itself; a jump to `%f` would hand back `%f`'s
/// register as it is (0x1ff for 0x1ff). The jump is made only when the definition's signature
/// is the thunk's too.
#[test]
fn a_forwarder_to_a_callee_defined_without_its_extension_stays_compiled() {
    let text = "
function %f(i32) -> i8 {
block0(v0: i32):
    v1 = ireduce.i8 v0
    return v1
}

function %g(i32) -> i8 uext {
    fn0 = %f(i32) -> i8 uext
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}
";
    let module = read_module_text(Path::new("uext.clif"), text, ReadOptions::default()).unwrap();
    let options = ObjectOptions {
        target: parse_target("x86_64").unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: true,
    };
    let written = write_object(&module, 0, &options).unwrap();
    let g = written
        .functions
        .iter()
        .find(|c| c.name.to_string() == "%g");
    assert_eq!(
        g.map(|c| c.form),
        Some(clif_merge::emit::object::CodeForm::Compiled),
        "{:?}",
        written.functions
    );
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return;
    }
    // Read as an `int`, the zero-extended byte is 255.
    let driver = "#include <stdio.h>\nint g(int);\nint main(void) { printf(\"%d\\n\", g(0x1ff)); return 0; }\n";
    if let Some(out) = cc::link_and_run(&written.bytes, driver) {
        assert_eq!(out, "255\n");
    }
}
