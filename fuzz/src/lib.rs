//! What the fuzz targets check, and the module generator they drive.
//!
//! - [`check_text`]: bytes as a `.clif` file: read (parse and verify) in-process. Bad input must
//!   be an error naming the file; good input goes through [`check_module`].
//! - [`generated_module`]: a module of valid functions from the property tests' generator
//!   (`../tests/common`, shared by path): functions calling one another, renumbered and
//!   redirected copies (which merge), mutated copies (which mostly do not), linkages, aliases.
//! - [`check_module`]: in every mode, merge, write the reports, emit CLIF, read it back, and
//!   check that it holds the same functions (each comparing `Equal` to what was written), with
//!   the same linkages and aliases.
//!
//! A violated check panics, which libFuzzer reports as a crash with the input saved.
//!
//! Inputs naming an entity numbered above a million are skipped unless
//! `CLIF_MERGE_FUZZ_STRICT=1` (see [`known_bug`]).

#[path = "../../tests/common/mod.rs"]
pub mod common;

use clif_merge::read::read_module_text;
use clif_merge::{Alias, FuncName, SymbolLinkage, Mode, ClifModule, ReadOptions, emit, merge_module, report};
use common::generator::{Callee, Choices, GenConfig, fixed_externals, generate_with};
use common::mutate::{ALL_KINDS, mutate_one_field, renumber};
use cranelift_codegen::ir::{ExternalName, Function, UserFuncName};
use std::path::Path;

pub const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];
pub const LINKAGES: [SymbolLinkage; 4] = [
    SymbolLinkage::Export,
    SymbolLinkage::Hidden,
    SymbolLinkage::Local,
    SymbolLinkage::Preemptible,
];

// ---------------------------------------------------------------------------------------------
// Known bugs
// ---------------------------------------------------------------------------------------------

fn strict() -> bool {
    std::env::var_os("CLIF_MERGE_FUZZ_STRICT").is_some_and(|v| v != "0")
}

/// Spans of runs of ASCII digits.
fn digit_runs(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        Some((start, i))
    })
}

/// An entity named with a number above a million (`ss4000000`): cranelift-reader creates every
/// entity up to the largest number, so below `read`'s limit (10,000,000) each costs up to a
/// gigabyte (past libFuzzer's default `-rss_limit_mb`), and a `;` inside a quoted string still
/// hides a number above the limit from `read` (an ignored test in `tests/hostile.rs`).
fn names_huge_entity(bytes: &[u8]) -> bool {
    digit_runs(bytes).any(|(s, e)| {
        let after_letter = s > 0 && bytes[s - 1].is_ascii_alphabetic();
        let hex = s > 1 && bytes[s - 1] == b'x' && bytes[s - 2] == b'0';
        let big = e - s > 7
            || std::str::from_utf8(&bytes[s..e])
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
                .is_none_or(|n| n > 1_000_000);
        after_letter && !hex && big
    })
}

/// Whether `text` is skipped (unless strict mode is on): entity numbers above a million.
pub fn known_bug(text: &str) -> bool {
    if strict() {
        return false;
    }
    names_huge_entity(text.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

fn read_module(file: &Path, text: &str, linkage: SymbolLinkage) -> Result<ClifModule, String> {
    let options = ReadOptions {
        default_linkage: linkage,
        verify: true,
    };
    read_module_text(file, text, options).map_err(|e| e.to_string())
}

/// Bytes as a CLIF file: an error naming the file, or a module that passes [`check_module`].
/// The default linkage is chosen by the length of the input. Text that is not UTF-8 (which the
/// command refuses before parsing) is read with replacement characters.
pub fn check_text(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if known_bug(&text) {
        return;
    }
    let linkage = LINKAGES[bytes.len() % LINKAGES.len()];
    match read_module(Path::new("fuzz.clif"), &text, linkage) {
        Ok(module) => check_module(&module),
        Err(e) => assert!(e.starts_with("fuzz.clif"), "the error names no file: {e}"),
    }
}

fn names_and_linkages(m: &ClifModule) -> Vec<(String, SymbolLinkage)> {
    m.functions()
        .map(|f| (f.name.to_string(), f.linkage))
        .collect()
}

/// Merges `module` in every mode; the reports and the emitted CLIF must be consistent.
pub fn check_module(module: &ClifModule) {
    for mode in MODES {
        let mut merged = module.clone();
        let (merge_report, _) = merge_module(&mut merged, mode);
        assert_eq!(merge_report.functions, module.functions().len(), "{mode:?}");
        assert!(merge_report.merged <= merge_report.functions, "{mode:?}");
        for class in &merge_report.classes {
            assert!(!class.replaced.is_empty(), "{mode:?}: a class of one");
        }
        let json = report::to_json(&merge_report, None);
        assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
        let _ = report::to_text(&merge_report, None);
        let clif = emit::module_to_clif(&merged);
        let back =
            read_module(Path::new("emitted.clif"), &clif, SymbolLinkage::Export).unwrap_or_else(|e| {
                panic!("{mode:?}: the emitted CLIF does not read back: {e}\n{clif}")
            });
        assert_eq!(
            names_and_linkages(&back),
            names_and_linkages(&merged),
            "{mode:?}: other functions or linkages read back\n{clif}"
        );
        assert_eq!(
            back.aliases(),
            merged.aliases(),
            "{mode:?}: other aliases read back\n{clif}"
        );
        for (written, read) in merged.functions().zip(back.functions()) {
            assert!(
                clif_merge::compare(&written.func, &read.func).is_eq(),
                "{mode:?}: {} reads back as another function:\n{}\n--- emitted ---\n{clif}",
                written.name,
                read.func.display()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The generated module
// ---------------------------------------------------------------------------------------------

/// `f`'s calls to module functions `%f<j>` renamed to `%<prefix><j>`.
fn retarget_calls(f: &mut Function, prefix: &str) {
    for ext in f.dfg.ext_funcs.values_mut() {
        if let ExternalName::TestCase(t) = &ext.name {
            let name = String::from_utf8_lossy(t.raw()).into_owned();
            if let Some(j) = name.strip_prefix('f') {
                ext.name = ExternalName::testcase(format!("{prefix}{j}"));
            }
        }
    }
}

/// A module of generated functions; every decision reads `data` (see `common::gen`).
///
/// Base functions `%f0..` call external functions and one another (addresses taken too);
/// then members derived from them: `%c<i>` renumbered copies, `%r<i>` renumbered copies calling
/// the `%c`s (equal only through the refinement of classes), `%m<i>` copies with one field
/// mutated. Each gets a linkage, and some get aliases.
pub fn generated_module(data: &[u32]) -> ClifModule {
    let mut ch = Choices::new(data);
    let bases = 1 + ch.below(4);
    let sigs: Vec<_> = (0..bases)
        .map(|_| common::generator::random_signature(&mut ch, true))
        .collect();
    let mut callees = fixed_externals();
    for (i, sig) in sigs.iter().enumerate() {
        callees.push(Callee {
            name: format!("f{i}"),
            sig: sig.clone(),
            colocated: ch.chance(50),
        });
    }
    let mut functions: Vec<Function> = Vec::new();
    for (i, sig) in sigs.iter().enumerate() {
        let config = GenConfig {
            max_blocks: 5,
            max_insts: 6,
            addr_callees: (0..callees.len()).collect(),
            callees: callees.clone(),
            name: UserFuncName::testcase(format!("f{i}")),
            signature: Some(sig.clone()),
        };
        functions.push(generate_with(&mut ch, &config));
    }
    for i in 0..bases {
        if ch.chance(70) {
            let mut c = renumber(&functions[i], &mut ch);
            c.name = UserFuncName::testcase(format!("c{i}"));
            functions.push(c);
        }
    }
    for i in 0..bases {
        if ch.chance(40) {
            let mut r = renumber(&functions[i], &mut ch);
            r.name = UserFuncName::testcase(format!("r{i}"));
            retarget_calls(&mut r, "c");
            functions.push(r);
        }
    }
    for i in 0..bases {
        if ch.chance(40) {
            let kind = ch.pick(&ALL_KINDS);
            if let Some(mut m) = mutate_one_field(&functions[i], kind, &mut ch) {
                m.name = UserFuncName::testcase(format!("m{i}"));
                functions.push(m);
            }
        }
    }
    let mut module = ClifModule::new();
    let mut names = Vec::new();
    for f in functions {
        let linkage = if ch.chance(40) {
            LINKAGES[ch.below(LINKAGES.len())]
        } else {
            SymbolLinkage::Export
        };
        names.push(FuncName::of_function(&f));
        // A name the generator made twice is skipped.
        let _ = module.define(f, linkage, None);
    }
    for a in 0..ch.below(3) {
        let target = names[ch.below(names.len())].clone();
        let alias = Alias {
            name: FuncName::parse(&format!("%a{a}")).unwrap(),
            target,
            linkage: LINKAGES[ch.below(LINKAGES.len())],
        };
        let _ = module.add_alias(alias);
    }
    module
}

/// The module the generator makes of `data` goes through [`check_module`], and so does the
/// module its emitted CLIF reads back as (which the reader, not the builder, made).
pub fn check_generated(data: &[u32]) {
    let module = generated_module(data);
    check_module(&module);
    let clif = emit::module_to_clif(&module);
    let back = read_module(Path::new("generated.clif"), &clif, SymbolLinkage::Export)
        .unwrap_or_else(|e| panic!("a generated module does not read back: {e}\n{clif}"));
    check_module(&back);
}
