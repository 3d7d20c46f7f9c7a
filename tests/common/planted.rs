//! Wrong merges planted by hand for `--verify`'s tests: a module the merge did not write,
//! checked against the report of the real merge of the original. A planted case is a wrong
//! merge only if the real merge did not merge what the planted module joins, which
//! [`planted`] asserts.
//!
//! Included on its own (`#[path]`) by the hostile verify tests, which need nothing else from
//! `tests/common`.

// Each test file uses some of these.
#![allow(dead_code)]

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{ClifModule, MergeReport, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

/// `text` read as one module, which must be valid.
pub fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// The report of merging `original` in `mode`, and the module the merge writes.
pub fn merged(original: &ClifModule, mode: Mode) -> (MergeReport, ClifModule) {
    let mut merged = original.clone();
    let report = merge_module(&mut merged, mode).0;
    (report, merged)
}

/// Whether `verify_merge` passes `wrong` as a merge of `original` with the report of merging
/// `original` in `mode`, with its summary.
pub fn passes(original: &str, wrong: &str, mode: Mode) -> (bool, String) {
    let original = read(original);
    let (report, _) = merged(&original, mode);
    let checked = verify_merge(&original, &read(wrong), &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary())
}

/// Whether the real merge of `original` in `mode` passes `verify_merge`, with its summary and
/// how many functions it merged.
pub fn real_merge_passes(original: &str, mode: Mode) -> (bool, String, usize) {
    let original = read(original);
    let (report, merged) = merged(&original, mode);
    let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    (checked.is_ok(), checked.summary(), report.merged)
}

/// `%f` and `%g` with bodies `f_body` and `g_body` (both of signature `sig`; the rest of the
/// module `rest`), and the same module with `%g` given `f_body`: whether `verify_merge`
/// *reports* that wrong "merge", with its summary.
pub fn planted(sig: &str, f_body: &str, g_body: &str, rest: &str) -> (bool, String) {
    let module = |g: &str| {
        format!("function %f{sig} {{\n{f_body}\n}}\n\nfunction %g{sig} {{\n{g}\n}}\n{rest}")
    };
    let original = module(g_body);
    let report = merged(&read(&original), Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    let (ok, summary) = passes(&original, &module(f_body), Mode::Aliases);
    (!ok, summary)
}

/// A body of signature `(i64) -> i64`: the `ty` at the pointer argument, sign-extended; with
/// `told_apart`, 7 where that is `told_apart` (a tag tested after it is loaded).
pub fn loaded_body(ty: &str, told_apart: Option<i64>) -> String {
    let load = match ty {
        "i64" => "    v1 = load.i64 v0\n".to_string(),
        _ => format!("    v8 = load.{ty} v0\n    v1 = sextend.i64 v8\n"),
    };
    let body = match told_apart {
        None => "    return v1".to_string(),
        Some(k) => format!(
            "    v9 = iconst.i64 {k}\n    v3 = icmp eq v1, v9\n    v4 = iconst.i64 7\n    \
             v5 = select v3, v4, v1\n    return v5"
        ),
    };
    format!("block0(v0: i64):\n{load}{body}")
}

/// `a` then `b` when `a_first`, else `b` then `a`: the two orders of a planted reordering.
pub fn in_order<'a>(a_first: bool, a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    if a_first { (a, b) } else { (b, a) }
}

/// The loop of the `(i64) -> i64` summing bodies: `block2(i, sum)` adds `i` to `sum` while `i`
/// is below `v4` (six instructions a pass; `v11` is 1), then `block4` returns the sum, plus one
/// when `differs` and `v4` is at least 2,048 (12,300 instructions and more). `bound` is the
/// loop head's first line, defining `v4` (empty when the caller defines it before the loop).
pub fn summing_loop(bound: &str, differs: bool) -> String {
    let end = if differs {
        "    v20 = iconst.i64 2048\n    v21 = icmp uge v4, v20\n    v22 = uextend.i64 v21\n    \
         v23 = iadd v3, v22\n    return v23"
    } else {
        "    return v3"
    };
    format!(
        "block2(v2: i64, v3: i64):
{bound}    v5 = icmp ult v2, v4
    brif v5, block3, block4
block3:
    v6 = iadd v3, v2
    v7 = iadd v2, v11
    jump block2(v7, v6)
block4:
{end}"
    )
}

/// On 0: a true cycle (stopped at once, cheap).
pub const WAITS_FOREVER: &str = "block1:\n    jump block1";

/// `%f(x)`: `endless` (a `block1`) when `x` is 0; else sums `i` for `i` below `x & 0xfff`
/// (up to 24,600 instructions, within the fuel of 50,000), see [`summing_loop`].
pub fn sum_below(differs: bool, endless: &str) -> String {
    format!(
        "block0(v0: i64):
    v1 = iconst.i64 0
    v10 = iconst.i64 0xfff
    v11 = iconst.i64 1
    brif v0, block2(v1, v1), block1
{endless}
{}",
        summing_loop("    v4 = band v0, v10\n", differs)
    )
}

/// The object of `module`, as `clif-merge -o` compiles it for x86_64: what a planted case's two
/// versions are linked and run natively from, to confirm it differs (or does not).
pub fn x86_64_object(module: &ClifModule) -> Vec<u8> {
    let options = ObjectOptions {
        target: parse_target("x86_64").unwrap(),
        opt_level: OptLevel::Speed,
        isa: Default::default(),
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: false,
    };
    write_object(module, 0, &options).unwrap().bytes
}
