//! hostile8: thunks made directly and calls redirected as bodies are rewritten, in objects that
//! are linked and run.
//!
//! Pairs of equal functions whose thunks must pass unusual arguments: an `sret` pointer, an
//! `sarg` struct on the stack (x86_64), `uext`/`sext` results and parameters, twenty parameters
//! (stack arguments, integers and floats), two results, `tail` functions with stack arguments
//! and three results (their thunks are `return_call`s), `fast` and `preserve_all` (x86_64:
//! also `windows_fastcall`) callees; a caller that calls a merged function and takes its address
//! through one declaration; a declaration shared by two calls, one in a function that is itself
//! merged away. Each mode (`safe`, `aliases`, `thunks`) and linkage (`export`, `hidden`) writes
//! an object that a C driver is linked with (bfd, gold, lld; the driver first, and the object
//! first with `--gc-sections`) and run, x86_64 natively and
//! aarch64 under qemu: it prints what the program built from the same module with every
//! function kept apart prints. The merged module's CLIF (`--emit-clif`) is read again and its
//! object prints the same.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

#[path = "common/link.rs"]
mod link;

use link::{Toolchain, compile_driver, link_and_run, linkers, run_ok, toolchain};

const BIN: &str = env!("CARGO_BIN_EXE_clif-merge");

/// `count` parameters `v0: ty, ...` from `first`.
fn params(ty: &str, count: usize) -> String {
    (0..count)
        .map(|i| format!("v{i}: {ty}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The module. `{apart}` in each function is where the module kept apart gives the function a
/// stack slot of its own size (no behaviour, but a frame no other function has).
fn module(x86_64: bool) -> String {
    let i64s = |n: usize| vec!["i64"; n].join(", ");
    let mut t = String::new();
    for s in ["a", "b"] {
        // sret: three words written through the hidden pointer.
        writeln!(
            t,
            "function %sret_{s}(i64 sret, i64) system_v {{\n{{apart}}\nblock0(v0: i64, v1: i64):
    v2 = iadd_imm v1, 1
    v3 = imul_imm v1, 3
    store v1, v0
    store v2, v0+8
    store v3, v0+16
    return\n}}\n"
        )
        .unwrap();
        // Extended results and parameters.
        writeln!(
            t,
            "function %uext_{s}(i32) -> i8 uext system_v {{\n{{apart}}\nblock0(v0: i32):
    v1 = iadd_imm.i32 v0, 200
    v2 = ireduce.i8 v1
    return v2\n}}\n
function %sext_{s}(i8 sext, i16 sext) -> i16 sext system_v {{\n{{apart}}\nblock0(v0: i8, v1: i16):
    v2 = sextend.i16 v0
    v3 = imul v2, v1
    return v3\n}}\n"
        )
        .unwrap();
        // Twenty parameters: ten integers and ten floats.
        let mut body = String::new();
        let mut acc = "v0".to_string();
        for k in 1..10 {
            writeln!(body, "    v{} = imul_imm v{k}, {}", 100 + k, k + 1).unwrap();
            writeln!(body, "    v{} = iadd {acc}, v{}", 200 + k, 100 + k).unwrap();
            acc = format!("v{}", 200 + k);
        }
        let mut facc = "v10".to_string();
        for k in 11..20 {
            writeln!(body, "    v{} = fmul {facc}, v{k}", 300 + k).unwrap();
            facc = format!("v{}", 300 + k);
        }
        let fparams: Vec<String> = (10..20).map(|i| format!("v{i}: f64")).collect();
        writeln!(
            t,
            "function %many_{s}({}, {}) -> i64 system_v {{\n{{apart}}\nblock0({}, {}):\n{body}    v400 = fcvt_to_sint_sat.i64 {facc}
    v401 = iadd {acc}, v400
    return v401\n}}\n",
            i64s(10),
            ["f64"; 10].join(", "),
            params("i64", 10),
            fparams.join(", ")
        )
        .unwrap();
        // A struct argument on the stack (x86_64's C ABI passes a 24-byte struct so), and a
        // vmctx parameter.
        if x86_64 {
            writeln!(
                t,
                "function %sarg_{s}(i64 sarg(24), i64) -> i64 system_v {{\n{{apart}}\nblock0(v0: i64, v1: i64):
    v2 = load.i64 v0
    v3 = load.i64 v0+8
    v4 = load.i64 v0+16
    v5 = iadd v2, v3
    v6 = imul v4, v1
    v7 = iadd v5, v6
    return v7\n}}\n"
            )
            .unwrap();
        }
        writeln!(
            t,
            "function %vm_{s}(i64 vmctx, i64) -> i64 system_v {{\n{{apart}}\nblock0(v0: i64, v1: i64):
    v2 = isub v0, v1
    return v2\n}}\n"
        )
        .unwrap();
        // Two results.
        writeln!(
            t,
            "function %pair_{s}(i64) -> i64, i64 system_v {{\n{{apart}}\nblock0(v0: i64):
    v1 = imul_imm v0, 5
    v2 = isub v1, v0
    return v1, v2\n}}\n"
        )
        .unwrap();
        // tail: twelve parameters (stack arguments), and three results.
        writeln!(
            t,
            "function %tail_{s}({}) -> i64 tail {{\n{{apart}}\nblock0({}):
    v20 = imul_imm v11, 1000
    v21 = iadd v0, v20
    v22 = imul v21, v5
    return v22\n}}\n
function %tail3_{s}(i64) -> i64, i64, i64 tail {{\n{{apart}}\nblock0(v0: i64):
    v1 = iadd_imm v0, 1
    v2 = iadd_imm v0, 2
    v3 = iadd_imm v0, 3
    return v1, v2, v3\n}}\n",
            i64s(12),
            params("i64", 12)
        )
        .unwrap();
        // Callees of other conventions.
        let convs: &[&str] = if x86_64 {
            &["fast", "preserve_all", "windows_fastcall"]
        } else {
            &["fast", "preserve_all"]
        };
        for conv in convs {
            // `preserve_all` has no results: it writes its result through the first parameter.
            let (results, ret) = match *conv {
                "preserve_all" => ("", "store notrap v11, v0\n    return"),
                _ => (" -> i64", "return v11"),
            };
            writeln!(
                t,
                "function %{conv}_{s}(i64, i64, i64, i64, i64, i64){results} {conv} {{\n{{apart}}\nblock0({}):
    v10 = isub v1, v4
    v11 = imul v10, v3
    {ret}\n}}\n",
                params("i64", 6)
            )
            .unwrap();
        }
        // The function whose address is taken.
        writeln!(
            t,
            "function %g_{s}(i64) -> i64 system_v {{\n{{apart}}\nblock0(v0: i64):
    v1 = imul_imm v0, 7
    v2 = iadd_imm v1, 1
    return v2\n}}\n"
        )
        .unwrap();
    }
    // Callers, each different from the other ("b" adds 1000).
    for (s, add) in [("a", 0), ("b", 1000)] {
        writeln!(
            t,
            "function %call_tail_{s}(i64) -> i64 system_v {{
    sig0 = ({}) -> i64 tail
    sig1 = (i64) -> i64, i64, i64 tail
    fn0 = %tail_{s} sig0
    fn1 = %tail3_{s} sig1
{{apart}}
block0(v0: i64):
    v1 = iadd_imm v0, 1
    v2 = call fn0(v0, v1, v0, v1, v0, v1, v0, v1, v0, v1, v0, v1)
    v3, v4, v5 = call fn1(v0)
    v6 = imul_imm v4, 10
    v7 = imul_imm v5, 100
    v8 = iadd v2, v3
    v9 = iadd v8, v6
    v10 = iadd v9, v7
    v11 = iadd_imm v10, {add}
    return v11\n}}\n",
            i64s(12)
        )
        .unwrap();
        let convs: &[&str] = if x86_64 {
            &["fast", "preserve_all", "windows_fastcall"]
        } else {
            &["fast", "preserve_all"]
        };
        for conv in convs {
            let call = match *conv {
                "preserve_all" => {
                    "v20 = stack_addr.i64 ss0\n    call fn0(v20, v1, v0, v1, v0, v1)\n    v2 = load.i64 notrap v20"
                }
                _ => "v2 = call fn0(v0, v1, v0, v1, v0, v1)",
            };
            let results = if *conv == "preserve_all" {
                ""
            } else {
                " -> i64"
            };
            writeln!(
                t,
                "function %call_{conv}_{s}(i64) -> i64 system_v {{
    ss0 = explicit_slot 8
    sig0 = (i64, i64, i64, i64, i64, i64){results} {conv}
    fn0 = %{conv}_{s} sig0
{{apart}}
block0(v0: i64):
    v1 = iadd_imm v0, 3
    {call}
    v3 = iadd_imm v2, {add}
    return v3\n}}\n"
            )
            .unwrap();
        }
    }
    // One declaration for a call and an address; the address is returned on its own too.
    t.push_str(
        "function %both(i64) -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    fn0 = %g_b sig0
{apart}
block0(v0: i64):
    v1 = func_addr.i64 fn0
    v2 = call fn0(v0)
    v3 = call_indirect sig0, v1(v2)
    return v3
}

function %addr_g_b() -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    fn0 = %g_b sig0
{apart}
block0:
    v1 = func_addr.i64 fn0
    return v1
}

",
    );
    // Two equal callers sharing their callee's declaration in form: %h_b is merged away, its
    // calls go to %g_a through the class, %h_a's through the redirect.
    for (s, callee) in [("a", "g_b"), ("b", "g_a")] {
        writeln!(
            t,
            "function %h_{s}(i64) -> i64 system_v {{
    sig0 = (i64) -> i64 system_v
    fn0 = %{callee} sig0
{{apart}}
block0(v0: i64):
    v1 = call fn0(v0)
    v2 = call fn0(v1)
    return v2\n}}\n"
        )
        .unwrap();
    }
    t
}

/// `vN = iadd_imm[.ty] vA, K` (and `imul_imm`), which Cranelift 0.135 no longer has, as an
/// `iconst` and the instruction.
fn expand_imm(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let parts: Vec<&str> = t.split_whitespace().collect();
        if let [def, "=", op, arg, k] = parts[..]
            && let Some((base, ty)) = op
                .split_once("_imm")
                .map(|(b, rest)| (b, rest.strip_prefix('.').unwrap_or("i64")))
        {
            let n: u32 = def[1..].parse().unwrap();
            let c = n + 5000;
            writeln!(
                out,
                "    v{c} = iconst.{ty} {k}\n    {def} = {base} {} v{c}",
                arg
            )
            .unwrap();
        } else {
            writeln!(out, "{line}").unwrap();
        }
    }
    out
}

/// The module with every function kept apart (`apart`), or as written.
fn instantiate(template: &str, apart: bool) -> String {
    let template = &expand_imm(template);
    let mut out = String::new();
    let mut size = 8;
    for piece in template.split("{apart}") {
        if !out.is_empty() {
            if apart {
                write!(out, "    ss90 = explicit_slot {size}").unwrap();
            }
            size += 8;
        }
        out.push_str(piece);
    }
    out
}

fn driver(x86_64: bool) -> String {
    let mut d = String::from(
        "#include <stdio.h>
#include <stdint.h>
struct t3 { long a, b, c; };
struct p2 { long a, b; };
",
    );
    let convs: &[&str] = if x86_64 {
        &["fast", "preserve_all", "windows_fastcall"]
    } else {
        &["fast", "preserve_all"]
    };
    for s in ["a", "b"] {
        write!(
            d,
            "struct t3 sret_{s}(long);
unsigned char uext_{s}(int);
short sext_{s}(signed char, short);
long many_{s}(long, long, long, long, long, long, long, long, long, long, double, double, double, double, double, double, double, double, double, double);
struct p2 pair_{s}(long);
long g_{s}(long);
long vm_{s}(long, long);
long h_{s}(long);
long call_tail_{s}(long);
"
        )
        .unwrap();
        for conv in convs {
            writeln!(d, "long call_{conv}_{s}(long);").unwrap();
        }
    }
    if x86_64 {
        d.push_str("long sarg_a(struct t3, long);\nlong sarg_b(struct t3, long);\n");
    }
    d.push_str("long both(long);\nlong addr_g_b(void);\nint main(void) {\n");
    for s in ["a", "b"] {
        write!(
            d,
            "  {{ struct t3 r = sret_{s}(11); printf(\"sret_{s} %ld %ld %ld\\n\", r.a, r.b, r.c); }}
  printf(\"uext_{s} %d\\n\", (int)uext_{s}(100));
  printf(\"sext_{s} %d\\n\", (int)sext_{s}(-3, 1000));
  printf(\"many_{s} %ld\\n\", many_{s}(1,2,3,4,5,6,7,8,9,10, 1.5,2.0,0.5,3.0,1.25,2.0,4.0,0.5,1.0,3.0));
  {{ struct p2 r = pair_{s}(9); printf(\"pair_{s} %ld %ld\\n\", r.a, r.b); }}
  printf(\"g_{s} %ld h_{s} %ld\\n\", g_{s}(5), h_{s}(5));
  printf(\"call_tail_{s} %ld\\n\", call_tail_{s}(4));
  printf(\"vm_{s} %ld\\n\", vm_{s}(50, 8));
"
        )
        .unwrap();
        if x86_64 {
            writeln!(
                d,
                "  {{ struct t3 a = {{ 1, 20, 300 }}; printf(\"sarg_{s} %ld\\n\", sarg_{s}(a, 7)); }}"
            )
            .unwrap();
        }
        for conv in convs {
            writeln!(
                d,
                "  printf(\"call_{conv}_{s} %ld\\n\", call_{conv}_{s}(6));"
            )
            .unwrap();
        }
    }
    d.push_str(
        "  printf(\"both %ld\\n\", both(2));
  printf(\"address of g_b kept: %d\\n\", addr_g_b() == (long)(intptr_t)&g_b);
  return 0;
}
",
    );
    d
}

fn clif_merge(dir: &Path, args: &[&str]) -> String {
    run_ok(Command::new(BIN).current_dir(dir).args(args))
}

/// The object of `clif` for `tc`, written by `clif-merge` with `args`.
fn object(tc: &Toolchain, dir: &Path, clif: &str, name: &str, args: &[&str]) -> std::path::PathBuf {
    std::fs::write(dir.join(format!("{name}.clif")), clif).unwrap();
    let o = dir.join(format!("{name}.o"));
    let mut all = vec![
        format!("{name}.clif"),
        "--target".into(),
        tc.triple.into(),
        "-o".into(),
        format!("{name}.o"),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    let all: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
    clif_merge(dir, &all);
    o
}

fn check_target(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else { return };
    let x86_64 = !aarch64;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let template = module(x86_64);
    let driver_o = compile_driver(&tc, dir, &driver(x86_64));
    let apart = instantiate(&template, true);
    let merged = instantiate(&template, false);
    let base_o = object(&tc, dir, &apart, "apart", &["--report", "json"]);
    let expected = link_and_run(&tc, &dir.join("apart"), &[&driver_o, &base_o], "bfd", false)
        .unwrap_or_else(|e| panic!("the module kept apart: {e}"));
    assert!(expected.contains("address of g_b kept: 1"), "{expected}");
    assert!(!x86_64 || expected.contains("sarg_b 2121\n"), "{expected}");
    assert!(expected.contains("vm_b 42\n"), "{expected}");
    let linkers = linkers();
    let mut failures = Vec::new();
    for mode in ["safe", "aliases", "thunks"] {
        for linkage in ["export", "hidden"] {
            let name = format!("m_{mode}_{linkage}");
            let report = {
                std::fs::write(dir.join(format!("{name}.clif")), &merged).unwrap();
                clif_merge(
                    dir,
                    &[
                        &format!("{name}.clif"),
                        "--mode",
                        mode,
                        "--default-linkage",
                        linkage,
                        "--report",
                        "json",
                        "--emit-clif",
                        &format!("{name}.out.clif"),
                    ],
                )
            };
            assert!(report.contains("\"merged\""), "{report}");
            let o = object(
                &tc,
                dir,
                &merged,
                &name,
                &["--mode", mode, "--default-linkage", linkage],
            );
            for (linker, order) in linkers.iter().flat_map(|l| [(l, 0), (l, 1)]) {
                let exe = dir.join(format!("{name}_{linker}_{order}"));
                let objects: [&Path; 2] = match order {
                    0 => [&driver_o, &o],
                    _ => [&o, &driver_o],
                };
                match link_and_run(&tc, &exe, &objects, linker, order == 1) {
                    Ok(out) if out == expected => {}
                    Ok(out) => failures.push(format!(
                        "{} {mode} {linkage} {linker} order {order}: prints\n{out}instead of\n{expected}",
                        tc.triple
                    )),
                    Err(e) => {
                        failures.push(format!("{} {mode} {linkage} {linker}: {e}", tc.triple))
                    }
                }
            }
            // The emitted CLIF, read again (a second run, thunks mode) and written as an object.
            let again = std::fs::read_to_string(dir.join(format!("{name}.out.clif"))).unwrap();
            let o2 = object(
                &tc,
                dir,
                &again,
                &format!("{name}_again"),
                &["--mode", "thunks", "--default-linkage", linkage],
            );
            let exe = dir.join(format!("{name}_again"));
            match link_and_run(&tc, &exe, &[&driver_o, &o2], "bfd", false) {
                Ok(out) if out == expected => {}
                Ok(out) => failures.push(format!(
                    "{} {mode} {linkage} emitted CLIF again: prints\n{out}instead of\n{expected}",
                    tc.triple
                )),
                Err(e) => failures.push(format!(
                    "{} {mode} {linkage} emitted CLIF again: {e}",
                    tc.triple
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn thunks_of_unusual_signatures_run_as_the_functions_kept_apart_x86_64() {
    check_target(false);
}

#[test]
fn thunks_of_unusual_signatures_run_as_the_functions_kept_apart_aarch64() {
    check_target(true);
}

/// Two rich functions (source locations, user stack maps, a `try_call` with handlers, cold
/// blocks, constants, stack slots, a stack limit, user names): one of at most 256 instructions,
/// whose thunk is written into its own cleared memory, and one of more, whose thunk is made
/// anew. Each thunk is exactly the one `write_thunk` makes: nothing of the old body remains.
fn rich_function(name: &str, filler: usize) -> String {
    let mut t = format!(
        "function {name}(i64 vmctx, i64) -> i64 tail {{
    ss0 = explicit_slot 16, align = 16, key = 3
    gv0 = vmctx
    gv1 = load.i64 notrap aligned readonly gv0+8
    stack_limit = gv1
    region0 = 5 \"heap\"
    const0 = 0x00000000000000010000000000000002
    sig0 = (i64 vmctx, i64) -> i64 tail
    fn0 = u3:7 sig0
    fn1 = %thrower(i64 vmctx, i64) -> i64 tail
block0(v0: i64, v1: i64):
@0010    v2 = call fn0(v0, v1), stack_map=[i64 @ ss0+0]
@0011    v3 = vconst.i64x2 const0
"
    );
    let mut acc = "v2".to_string();
    for k in 0..filler {
        writeln!(t, "@{:04x}    v{} = iadd {acc}, v1", 0x100 + k, 100 + k).unwrap();
        acc = format!("v{}", 100 + k);
    }
    writeln!(
        t,
        "@0020    store notrap aligned region0 {acc}, v0+16
@0021    try_call fn1(v0, {acc}), sig0, block1(ret0), [ tag1: block2(exn0), default: block2(exn1) ]
block1(v4: i64):
    return v4
block2(v5: i64) cold:
    v6 = extractlane v3, 1
    v7 = iadd v5, v6
    return v7
}}"
    )
    .unwrap();
    t
}

#[test]
fn a_thunk_written_in_place_is_the_one_written_anew() {
    use clif_merge::merge::thunk::write_thunk;
    use clif_merge::{ClifModule, FuncName, Mode, SymbolLinkage, merge_module};
    for filler in [0, 200, 300] {
        let text = format!(
            "{}\n{}",
            rich_function("%kept", filler),
            rich_function("%gone", filler)
        );
        let mut module = ClifModule::new();
        let mut ids = Vec::new();
        for func in cranelift_reader::parse_functions(&text).unwrap() {
            ids.push(module.define(func, SymbolLinkage::Export, None).unwrap());
        }
        let (report, _) = merge_module(&mut module, Mode::Thunks);
        assert_eq!(report.merged, 1, "filler {filler}");
        // The kept function is the one of the smallest name, %gone.
        let kept = report.kept_for(ids[0]).expect("%kept is replaced").clone();
        let thunk = &module.function(ids[0]).func;
        let gone = FuncName::of_function(thunk);
        let fresh = write_thunk(&gone, &thunk.signature, &kept);
        assert_eq!(
            thunk.display().to_string(),
            fresh.display().to_string(),
            "filler {filler}"
        );
        assert_eq!(
            **thunk, fresh,
            "filler {filler}: the same tables, not only the same text"
        );
    }
}
