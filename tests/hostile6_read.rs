//! Hostile inputs for reading large files (sixth pass): a file of at least 4,096 functions is
//! cut into pieces, parsed in parallel and each function compacted (`compact` in
//! `src/read/mod.rs`). The same functions read from one large file and from two small ones
//! (each parsed whole, not compacted) must give byte-identical outputs, and an error in a large
//! file must name the line a small file names.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// A function using what a compaction could lose: a stack slot with an alignment, a dynamic
/// stack slot of a dynamic type, a chain of global values, an inline signature and one
/// declared, a user external name, a vector constant, a `br_table` (jump table), source
/// locations, a stack address with an offset and a function address. `i` varies names, the
/// lane read and the source locations, so that some functions merge and others do not.
fn rich(i: usize) -> String {
    format!(
        "function %r{i}(i64, i32) -> i32 system_v {{
    ss0 = explicit_slot 16, align = 8
    gv0 = symbol colocated %data{data}
    gv1 = load.i64 notrap aligned readonly gv0+8
    gv2 = iadd_imm.i64 gv1, 16
    gv3 = dyn_scale_target_const.i32x4
    dt0 = i32x4*gv3
    dss0 = explicit_dynamic_slot dt0
    sig0 = (i32) -> i32 system_v
    fn0 = %ext(i32) -> i32
    fn1 = u0:{user} sig0
    const0 = 0x000102030405060708090a0b0c0d0e0f

block0(v0: i64, v1: i32):
@{loc:04x}    v2 = symbol_value.i64 gv0
@0011    v3 = load.i32 notrap v2
@0012    v4 = vconst.i8x16 const0
@0013    v5 = extractlane v4, {lane}
@0014    v6 = uextend.i32 v5
    v7 = iadd v3, v6
    v8 = stack_addr.i64 ss0+4
    store.i32 notrap aligned v7, v8
    br_table v1, block3, [block1, block2, block1]

block1:
@0020    v9 = call fn0(v7)
    return v9

block2:
    v10 = call fn1(v7)
    v11 = func_addr.i64 fn0
    v12 = ireduce.i32 v11
    v13 = iadd v10, v12
    return v13

block3:
    v14 = load.i32 notrap aligned v8
    return v14
}}
",
        data = i % 7,
        user = i % 5,
        lane = i % 4,
        loc = (i * 16) % 65536,
    )
}

const FUNCTIONS: usize = 4_200;
const DIRECTIVES: &str = "; alias: %ra = %r5\n; linkage: %r6 local\n";

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// Every output of one large file (read in pieces) and of the same functions in two small
/// files: `--emit-clif`, the object and the JSON report (file names aside), in each mode,
/// exact and `--similar`.
#[test]
fn a_large_file_of_rich_functions_gives_the_outputs_of_small_files() {
    let dir = tempfile::tempdir().unwrap();
    let funcs: Vec<String> = (0..FUNCTIONS).map(rich).collect();
    let half = FUNCTIONS / 2;
    let big = format!("; a large file\n{}\n{DIRECTIVES}", funcs.join("\n"));
    std::fs::write(dir.path().join("big.clif"), big).unwrap();
    std::fs::write(dir.path().join("a.clif"), funcs[..half].join("\n")).unwrap();
    let b = format!("{}\n{DIRECTIVES}", funcs[half..].join("\n"));
    std::fs::write(dir.path().join("b.clif"), b).unwrap();
    for (mode, similar) in [("safe", false), ("aliases", true)] {
        let outputs = |inputs: &[&str], label: &str| {
            let clif = format!("{label}.clif.out");
            let object = format!("{label}.o");
            let mut args = inputs.to_vec();
            args.extend(["--mode", mode, "--emit-clif", &clif, "-o", &object]);
            args.extend(["--report", "json", "--threads", "2"]);
            if similar {
                args.push("--similar");
            }
            let out = run(dir.path(), &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{label}: {stderr}");
            let report = String::from_utf8(out.stdout).unwrap();
            let report = ["big.clif", "a.clif", "b.clif"]
                .iter()
                .fold(report, |r, name| r.replace(name, "FILE"));
            let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
            (read(&clif), read(&object), report)
        };
        let one = outputs(&["big.clif"], "one");
        let two = outputs(&["a.clif", "b.clif"], "two");
        assert!(
            one.0 == two.0,
            "{mode} similar={similar}: --emit-clif differs"
        );
        assert!(
            one.1 == two.1,
            "{mode} similar={similar}: the object differs"
        );
        assert_eq!(one.2, two.2, "{mode} similar={similar}: the report differs");
    }
}

/// Errors inside rich functions of a large file (a verifier error on a line with a source
/// location, a duplicate definition in another piece) name the line they are on.
#[test]
fn errors_in_a_large_file_of_rich_functions_name_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut funcs: Vec<String> = (0..FUNCTIONS).map(rich).collect();
    funcs[3_000] = funcs[3_000].replace(
        "@0014    v6 = uextend.i32 v5",
        "@0014    v6 = uextend.i32 v0",
    );
    let text = format!("; a large file\n{}", funcs.join("\n"));
    let line = text
        .lines()
        .position(|l| l.contains("v6 = uextend.i32 v0"))
        .unwrap()
        + 1;
    std::fs::write(dir.path().join("bad.clif"), &text).unwrap();
    for threads in ["1", "2"] {
        let out = run(dir.path(), &["bad.clif", "--threads", threads, "-o", "x.o"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("bad.clif:{line}: in function %r3000: verifier")),
            "line {line}: {stderr}"
        );
        assert!(!dir.path().join("x.o").exists());
    }
    let mut dup: Vec<String> = (0..FUNCTIONS).map(rich).collect();
    dup.push(rich(10));
    let text = format!("; a large file\n{}", dup.join("\n"));
    let lines: Vec<usize> = (text.lines().enumerate())
        .filter(|(_, l)| l.starts_with("function %r10("))
        .map(|(i, _)| i + 1)
        .collect();
    std::fs::write(dir.path().join("dup.clif"), &text).unwrap();
    let out = run(dir.path(), &["dup.clif", "--threads", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "dup.clif:{}: function %r10 is defined twice: also at dup.clif:{}",
        lines[1], lines[0]
    );
    assert!(stderr.contains(&expected), "{expected}: {stderr}");
}

/// A good function `%name` and, when `broken`, a function after it that the verifier refuses.
fn file_text(name: &str, broken: bool) -> String {
    let bad = if broken {
        "function %bad(i64) -> i32 {\nblock0(v0: i64):\n    return v0\n}\n"
    } else {
        ""
    };
    format!(
        "; alias: %{name}_alias = %{name}\n\
         function %{name}(i32) -> i32 {{\nblock0(v0: i32):\n    return v0\n}}\n\n{bad}"
    )
}

/// A file the library reader refuses leaves nothing behind: reading the corrected file next
/// succeeds. (The reader defines a file's functions one by one and stops at the first error,
/// so the functions before it stay defined: the corrected file's are "defined twice".)
#[test]
fn a_refused_file_can_be_read_again_once_corrected() {
    use clif_merge::ReadOptions;
    use clif_merge::read::ModuleReader;
    let mut reader = ModuleReader::new(ReadOptions::default());
    reader
        .read_text(Path::new("good.clif"), &file_text("good", false))
        .unwrap();
    let refused = reader.read_text(Path::new("x.clif"), &file_text("x", true));
    assert!(refused.is_err(), "the verifier refuses %bad");
    let again = reader.read_text(Path::new("x.clif"), &file_text("x", false));
    assert!(again.is_ok(), "the corrected file: {again:?}");
    let module = reader.finish().unwrap();
    assert_eq!(module.len(), 2, "%good and %x once each");
}

/// A module finished after a refused file holds only what the accepted files define: not the
/// refused file's functions read before its error, nor its directives (here an alias).
#[test]
fn a_module_finished_after_a_refused_file_holds_only_the_accepted_files() {
    use clif_merge::ReadOptions;
    use clif_merge::read::ModuleReader;
    let mut reader = ModuleReader::new(ReadOptions::default());
    reader
        .read_text(Path::new("good.clif"), &file_text("good", false))
        .unwrap();
    assert!((reader.read_text(Path::new("x.clif"), &file_text("x", true))).is_err());
    let module = reader.finish().expect("the accepted file's module");
    let names: Vec<String> = module.functions().map(|f| f.name.to_string()).collect();
    let aliases: Vec<String> = module
        .aliases()
        .iter()
        .map(|a| a.name.to_string())
        .collect();
    assert_eq!(
        (names, aliases),
        (vec!["%good".to_string()], vec!["%good_alias".to_string()]),
        "the refused file's %x and %x_alias stay out"
    );
}

/// A file refused for a parse error defines no function, but its directives stayed in the
/// reader: `finish` then fails on an alias of a function that was never read, although every
/// file it accepted is sound.
#[test]
fn a_file_refused_for_a_parse_error_leaves_no_directive() {
    use clif_merge::ReadOptions;
    use clif_merge::read::ModuleReader;
    let mut reader = ModuleReader::new(ReadOptions::default());
    reader
        .read_text(Path::new("good.clif"), &file_text("good", false))
        .unwrap();
    let text = file_text("x", false).replace("return v0", "bogus_op v0");
    assert!((reader.read_text(Path::new("x.clif"), &text)).is_err());
    let module = reader.finish();
    assert!(
        module.is_ok(),
        "the accepted file alone makes a module: {module:?}"
    );
}
