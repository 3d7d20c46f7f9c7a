//! hostile8: the exact comparator against Cranelift's code generator.
//!
//! The strongest oracle of the comparator: two functions it calls equal compile to the same
//! machine code. Functions of `../shared/runtests` and a sample of `../shared/corpus` are
//! changed in one field at the text level (an immediate, a type, a condition code, a memory
//! flag, a trap code, a calling convention, a parameter's purpose or extension, a stack slot's
//! size or alignment, a global value's offset or flags, constant bytes, float bits, block
//! parameter types, jump table and handler order, cold blocks, `colocated`/`patchable`, the
//! order of two declarations, an unused declaration, operands, entity references). The
//! original and each variant that parses and verifies go into one module and are merged; when
//! the merge puts them in one class, both are compiled (x86_64 and aarch64, `opt_level=speed`)
//! and their code must be the same (x86_64 also at `opt_level=none`): bytes, relocations (offset, kind, target name, addend),
//! traps, call sites, patchable call sites, user stack maps and frame layout.
//!
//! The reverse (same code, not merged) is counted for information only.
//!
//! A module-level variant puts each run-test file and a renamed copy of it, one function of
//! the copy changed, into one module: the functions that call the changed one are compared
//! through classes, and a pair merged among them compiles to the same code with every call
//! target replaced by its class's kept name.

use clif_merge::{ClifModule, Mode, SymbolLinkage, merge_module};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{Function, UserFuncName};
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, FinalizedRelocTarget};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

fn shared() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: ../shared is absent; the codegen differential is skipped");
        None
    }
}

thread_local! {
    /// Set while Cranelift compiles: its panics are caught and quiet.
    static COMPILING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn isa_for(triple: &str, opt_level: &str) -> OwnedTargetIsa {
    let mut flags = settings::builder();
    flags.set("opt_level", opt_level).unwrap();
    flags.enable("enable_llvm_abi_extensions").unwrap();
    flags.set("tls_model", "elf_gd").unwrap();
    let mut builder = isa::lookup(target_lexicon::Triple::from_str(triple).unwrap()).unwrap();
    if triple.starts_with("x86_64") {
        for feature in [
            "has_sse41",
            "has_sse42",
            "has_popcnt",
            "has_bmi1",
            "has_lzcnt",
        ] {
            builder.enable(feature).unwrap();
        }
    }
    builder.finish(settings::Flags::new(flags)).unwrap()
}

fn isas() -> Vec<OwnedTargetIsa> {
    // Panics of the code generator are caught and counted as no code: keep them quiet.
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !COMPILING.with(|c| c.get()) {
                default(info);
            }
        }));
    });
    vec![
        isa_for("x86_64-unknown-linux-gnu", "speed"),
        isa_for("aarch64-unknown-linux-gnu", "speed"),
        // Without the mid-end, on one target (the time of the test).
        isa_for("x86_64-unknown-linux-gnu", "none"),
    ]
}

/// Everything of `func`'s compiled code that another function's code would have to equal:
/// the bytes, and the metadata the object writer and the runtime read, with names by text.
fn machine_code(func: &Function, isa: &dyn isa::TargetIsa) -> Result<String, String> {
    // Cranelift panics on some functions it cannot lower (an i128 argument on x86_64 without
    // the LLVM extensions): that is no code either.
    COMPILING.with(|c| c.set(true));
    let buffer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut ctx = Context::for_function(func.clone());
        ctx.compile(isa, &mut ControlPlane::default())
            .map(|code| code.buffer.clone())
            .map_err(|e| format!("{:?}", e.inner))
    }))
    .map_err(|_| "Cranelift panicked".to_string());
    COMPILING.with(|c| c.set(false));
    let buffer = buffer??;
    let mut out = String::new();
    for b in buffer.data() {
        out.push_str(&format!("{b:02x}"));
    }
    out.push('\n');
    for r in buffer.relocs() {
        let target = match &r.target {
            FinalizedRelocTarget::ExternalName(name) => {
                name.display(Some(&func.params)).to_string()
            }
            other => format!("{other:?}"),
        };
        out.push_str(&format!(
            "reloc {} {:?} {target} {}\n",
            r.offset, r.kind, r.addend
        ));
    }
    for t in buffer.traps() {
        out.push_str(&format!("trap {} {}\n", t.offset, t.code));
    }
    for c in buffer.call_sites() {
        out.push_str(&format!("call {c:?}\n"));
    }
    for c in buffer.patchable_call_sites() {
        out.push_str(&format!("patchable {c:?}\n"));
    }
    for m in buffer.user_stack_maps() {
        out.push_str(&format!("stack map {m:?}\n"));
    }
    out.push_str(&format!("frame {:?}\n", buffer.frame_layout()));
    Ok(out)
}

/// Whether the merge puts `a` and `b` (named apart) in one class.
fn merged(a: &Function, b: &Function) -> bool {
    let mut module = ClifModule::new();
    module
        .define(a.clone(), SymbolLinkage::Export, None)
        .expect("the original defines");
    let mut b = b.clone();
    b.name = UserFuncName::testcase("hb8_variant");
    if module.define(b, SymbolLinkage::Export, None).is_err() {
        return false;
    }
    let (report, _) = merge_module(&mut module, Mode::Thunks);
    report.merged > 0
}

const TYPE_SETS: &[&[&str]] = &[
    &["i8", "i16", "i32", "i64", "i128"],
    &["f16", "f32", "f64", "f128"],
    &["i8x16", "i16x8", "i32x4", "i64x2", "f32x4", "f64x2"],
    &["i8x8", "i16x4", "i32x2", "f32x2"],
];
const INT_CCS: &[&str] = &[
    "eq", "ne", "slt", "sge", "sgt", "sle", "ult", "uge", "ugt", "ule",
];
const FLOAT_CCS: &[&str] = &[
    "ord", "uno", "eq", "ne", "one", "ueq", "lt", "le", "gt", "ge", "ult", "ule", "ugt", "uge",
];
const MEM_FLAGS: &[&str] = &["notrap", "aligned", "readonly", "can_move", "little", "big"];
const TRAP_CODES: &[&str] = &[
    "stk_ovf",
    "heap_oob",
    "int_ovf",
    "int_divz",
    "bad_toint",
    "user1",
    "user2",
    "user200",
];
const CALL_CONVS: &[&str] = &[
    "fast",
    "tail",
    "system_v",
    "windows_fastcall",
    "apple_aarch64",
    "probestack",
    "winch",
    "preserve_all",
];
const ENTITY_PREFIXES: &[&str] = &[
    "block", "region", "const", "dss", "sig", "ss", "gv", "fn", "jt", "dt", "v",
];
const FLAG_WORDS: &[&str] = &[
    "uext",
    "sext",
    "sret",
    "vmctx",
    "colocated",
    "patchable",
    "tls",
    "cold",
];
const INSERTED_MEM_FLAGS: &[&str] = &[
    "notrap", "aligned", "readonly", "can_move", "little", "big", "user1", "int_ovf",
];

/// The words of `line` outside comments and strings, with their byte ranges.
fn words(line: &str) -> Vec<(usize, usize)> {
    let end = line.find([';', '"']).unwrap_or(line.len());
    let bytes = line.as_bytes();
    let is_sep = |b: u8| b.is_ascii_whitespace() || b",()[]{}=<>".contains(&b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        if is_sep(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < end && !is_sep(bytes[i]) {
            i += 1;
        }
        out.push((start, i));
    }
    out
}

fn int_literal(word: &str) -> Option<i128> {
    let (neg, digits) = match word.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        if hex.contains(['.', 'p', 'P']) {
            return None;
        }
        i128::from_str_radix(&hex.replace('_', ""), 16).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        digits.replace('_', "").parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -value } else { value })
}

fn is_float_literal(word: &str) -> bool {
    let w = word.trim_start_matches(['-', '+']);
    (w.starts_with("0x") && w.contains('p')) || w.starts_with("Inf") || w.contains("NaN")
}

/// Other spellings of one float literal's neighbours: the sign flipped, the last mantissa
/// digit changed, a NaN's payload changed.
fn float_variants(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    match word.strip_prefix('-') {
        Some(rest) => out.push(rest.to_string()),
        None => out.push(format!("-{}", word.trim_start_matches('+'))),
    }
    if word.contains("NaN") {
        if word.contains(':') {
            out.push(word.split(':').next().unwrap().to_string());
            out.push(format!("{word}1"));
        } else {
            out.push(format!("{word}:0x1"));
        }
        out.push(word.replace("sNaN", "NaN").replace("NaN", "sNaN:0x1"));
    }
    if let Some(p) = word.find('p')
        && word.contains('.')
    {
        let digit = word.as_bytes()[p - 1];
        let flipped = if digit == b'0' { '1' } else { '0' };
        out.push(format!("{}{flipped}{}", &word[..p - 1], &word[p..]));
    }
    out
}

/// What one word may become.
fn word_replacements(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let others = |set: &[&str], w: &str| -> Vec<String> {
        set.iter()
            .filter(|&&s| s != w)
            .map(|s| s.to_string())
            .collect()
    };
    for set in TYPE_SETS {
        if set.contains(&word) {
            out.extend(others(set, word));
        }
        if let Some((op, ty)) = word.rsplit_once('.')
            && set.contains(&ty)
            && !op.is_empty()
        {
            out.extend(others(set, ty).into_iter().map(|t| format!("{op}.{t}")));
        }
    }
    if INT_CCS.contains(&word) {
        out.extend(others(INT_CCS, word));
    }
    if FLOAT_CCS.contains(&word) {
        out.extend(others(FLOAT_CCS, word));
    }
    if MEM_FLAGS.contains(&word) || TRAP_CODES.contains(&word) || FLAG_WORDS.contains(&word) {
        out.push(String::new());
    }
    if MEM_FLAGS.contains(&word) {
        out.extend(others(MEM_FLAGS, word));
    }
    if TRAP_CODES.contains(&word) {
        out.extend(others(TRAP_CODES, word));
    }
    if CALL_CONVS.contains(&word) {
        out.extend(others(CALL_CONVS, word));
    }
    match word {
        "uext" => out.push("sext".into()),
        "sext" => out.push("uext".into()),
        "sret" => out.push("vmctx".into()),
        "vmctx" => out.push("sret".into()),
        _ => {}
    }
    if let Some(arg) = word.strip_prefix("sarg(").and_then(|w| w.strip_suffix(')'))
        && let Ok(n) = arg.parse::<u32>()
    {
        out.push(format!("sarg({})", n + 8));
        out.push(String::new());
    }
    if let Some(n) = int_literal(word) {
        for m in [
            n.wrapping_add(1),
            n.wrapping_sub(1),
            n ^ 0x80,
            n.wrapping_neg(),
            n.wrapping_mul(2),
        ] {
            if m != n {
                out.push(m.to_string());
            }
        }
        if word.starts_with("0x") {
            out.push(format!("{:#x}", n.wrapping_add(1)));
        }
    }
    if is_float_literal(word) {
        out.extend(float_variants(word));
    }
    for prefix in ENTITY_PREFIXES {
        if let Some(digits) = word.strip_prefix(prefix)
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
        {
            let n: u64 = digits.parse().unwrap();
            out.push(format!("{prefix}{}", n + 1));
            if n > 0 {
                out.push(format!("{prefix}{}", n - 1));
            }
            break;
        }
    }
    if let Some(loc) = word.strip_prefix('@') {
        out.push(format!("@{loc}1"));
    }
    out
}

/// A declaration line's entity kind (`ss`, `gv`, ...), if it is one.
fn declaration_kind(line: &str) -> Option<&'static str> {
    let t = line.trim_start();
    let word = t.split_whitespace().next()?;
    if !t.contains(" = ") {
        return None;
    }
    ENTITY_PREFIXES.iter().copied().find(|p| {
        word.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Single-field variants of one function's text, each with what changed.
fn variants(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<(String, String)> = Vec::new();
    let with_line = |i: usize, new: String| -> String {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[i] = new;
        l.join("\n") + "\n"
    };
    for (i, line) in lines.iter().enumerate() {
        for (s, e) in words(line) {
            let word = &line[s..e];
            for r in word_replacements(word) {
                let new = format!("{}{r}{}", &line[..s], &line[e..]);
                out.push((
                    format!("line {}: {word} -> {r:?}", i + 1),
                    with_line(i, new),
                ));
            }
            // Memory flags added after a memory operation's opcode.
            let op = word.split('.').next().unwrap_or("");
            if op.contains("load") || op.contains("store") || op.starts_with("atomic") {
                for flag in INSERTED_MEM_FLAGS {
                    let new = format!("{} {flag}{}", &line[..e], &line[e..]);
                    out.push((
                        format!("line {}: +{flag} after {word}", i + 1),
                        with_line(i, new),
                    ));
                }
            }
        }
        // A block made cold; external functions made colocated or patchable.
        let t = line.trim_start();
        if t.starts_with("block") && t.trim_end().ends_with(':') && !t.contains(" cold") {
            let end = line.rfind(':').unwrap();
            let new = format!("{} cold{}", &line[..end], &line[end..]);
            out.push((format!("line {}: cold", i + 1), with_line(i, new)));
        }
        if declaration_kind(line) == Some("fn") {
            let eq = line.find(" = ").unwrap() + 3;
            for flag in ["colocated ", "patchable "] {
                if !line.contains(flag.trim()) {
                    let new = format!("{}{flag}{}", &line[..eq], &line[eq..]);
                    out.push((format!("line {}: +{flag}", i + 1), with_line(i, new)));
                }
            }
        }
        // Two entries of a bracketed list (jump table, handlers) swapped.
        if let (Some(open), Some(close)) = (line.find('['), line.rfind(']'))
            && open < close
        {
            let items: Vec<&str> = line[open + 1..close].split(',').collect();
            for k in 0..items.len().saturating_sub(1) {
                let mut swapped = items.clone();
                swapped.swap(k, k + 1);
                if swapped != items {
                    let new = format!("{}{}{}", &line[..=open], swapped.join(","), &line[close..]);
                    out.push((
                        format!("line {}: swap entries {k}", i + 1),
                        with_line(i, new),
                    ));
                }
            }
        }
    }
    // Declarations: two of a kind in the other order, and one unused declaration more.
    for i in 0..lines.len().saturating_sub(1) {
        if let (Some(a), Some(b)) = (declaration_kind(lines[i]), declaration_kind(lines[i + 1]))
            && a == b
        {
            let mut l: Vec<&str> = lines.clone();
            l.swap(i, i + 1);
            out.push((
                format!("lines {}-{} swapped", i + 1, i + 2),
                l.join("\n") + "\n",
            ));
        }
    }
    for i in 0..lines.len() {
        let Some(kind) = declaration_kind(lines[i]) else {
            continue;
        };
        if kind == "v" || kind == "block" {
            continue;
        }
        let last_of_kind = lines
            .get(i + 1)
            .is_none_or(|next| declaration_kind(next) != Some(kind));
        if !last_of_kind {
            continue;
        }
        let word = lines[i].split_whitespace().next().unwrap();
        let n: u64 = word[kind.len()..].parse().unwrap();
        let unused = lines[i].replacen(word, &format!("{kind}{}", n + 1), 1);
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l.insert(i + 1, unused);
        out.push((
            format!("line {}: unused {kind} declared", i + 2),
            l.join("\n") + "\n",
        ));
    }
    let mut seen = BTreeSet::new();
    out.retain(|(_, t)| t != text && seen.insert(t.clone()));
    out
}

/// Variants of `text` whose blocks are in another layout order (the entry stays first): two
/// neighbours swapped, or all after the entry reversed.
fn layout_variants(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<(String, String)> = Vec::new();
    // Blocks in another layout order (the entry stays first).
    let is_header = |l: &str| {
        let t = l.trim();
        t.starts_with("block") && t.ends_with(':')
    };
    let headers: Vec<usize> = (0..lines.len()).filter(|&i| is_header(lines[i])).collect();
    let close = lines
        .iter()
        .rposition(|l| l.trim() == "}")
        .unwrap_or(lines.len());
    let block_of =
        |k: usize| -> (usize, usize) { (headers[k], headers.get(k + 1).copied().unwrap_or(close)) };
    let with_blocks = |order: &[usize]| -> String {
        let mut l: Vec<&str> = lines[..headers[0]].to_vec();
        for &k in order {
            let (from, to) = block_of(k);
            l.extend_from_slice(&lines[from..to]);
        }
        l.extend_from_slice(&lines[close..]);
        l.join("\n") + "\n"
    };
    if headers.len() >= 3 {
        for k in 1..headers.len() - 1 {
            let mut order: Vec<usize> = (0..headers.len()).collect();
            order.swap(k, k + 1);
            out.push((
                format!("blocks {k} and {} swapped in the layout", k + 1),
                with_blocks(&order),
            ));
        }
        let mut order: Vec<usize> = (0..headers.len()).collect();
        order[1..].reverse();
        out.push((
            "blocks after the entry in reverse layout order".into(),
            with_blocks(&order),
        ));
    }
    out.retain(|(_, t)| t != text);
    out
}

/// `text` with every entity reference `{prefix}N` renumbered `{prefix}(top - N)`: the same
/// function with its values (or blocks) numbered the other way round. The entry block keeps
/// its number.
fn renumbered(text: &str, prefix: &str, top: u64) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if boundary && text[i..].starts_with(prefix) {
            let digits = text[i + prefix.len()..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let after = i + prefix.len() + digits;
            let word_ends = bytes
                .get(after)
                .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
            if digits > 0 && word_ends {
                let n: u64 = text[i + prefix.len()..after].parse().unwrap();
                let m = if prefix == "block" && n == 0 {
                    0
                } else {
                    top - n
                };
                out.push_str(&format!("{prefix}{m}"));
                i = after;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// [`layout_variants`], and the values and blocks numbered the other way round.
fn order_variants(text: &str) -> Vec<(String, String)> {
    let mut out = layout_variants(text);
    out.push((
        "values numbered backwards".into(),
        renumbered(text, "v", 100_000),
    ));
    out.push((
        "blocks numbered backwards".into(),
        renumbered(text, "block", 100_000),
    ));
    out
}

/// At most `n` of `items`, spread evenly.
fn spread<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|k| items[k * items.len() / n].clone()).collect()
}

fn parse_one(text: &str) -> Option<Function> {
    let mut funcs = cranelift_reader::parse_functions(text).ok()?;
    if funcs.len() != 1 {
        return None;
    }
    let func = funcs.pop()?;
    let flags = settings::Flags::new(settings::builder());
    cranelift_codegen::verify_function(&func, &flags).ok()?;
    Some(func)
}

/// Why [`parse_one`] refuses `text`.
fn why_refused(text: &str) -> String {
    match cranelift_reader::parse_functions(text) {
        Err(e) => format!("parse: {e}"),
        Ok(funcs) => {
            let flags = settings::Flags::new(settings::builder());
            match cranelift_codegen::verify_function(&funcs[0], &flags) {
                Err(e) => format!("verify: {e}"),
                Ok(()) => "accepted".into(),
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    functions: usize,
    variants: usize,
    merged: usize,
    compiled_pairs: usize,
    info_same_code_not_merged: usize,
    info_compared: usize,
    failures: Vec<String>,
}

/// Checks `func`'s variants: every merged one compiles to `func`'s code on every ISA.
fn check_function(
    func: &Function,
    isas: &[OwnedTargetIsa],
    per_function: usize,
    tally: &mut Tally,
) {
    check_function_with(func, isas, per_function, tally, variants)
}

/// [`check_function`] with the variants `make` gives.
fn check_function_with(
    func: &Function,
    isas: &[OwnedTargetIsa],
    per_function: usize,
    tally: &mut Tally,
    make: fn(&str) -> Vec<(String, String)>,
) {
    let text = func.display().to_string();
    let Some(original) = parse_one(&text) else {
        return;
    };
    let codes: Vec<Result<String, String>> = isas
        .iter()
        .map(|isa| machine_code(&original, &**isa))
        .collect();
    if codes.iter().all(|c| c.is_err()) {
        if std::env::var_os("HB8_SHOW").is_some() {
            eprintln!("{} compiles nowhere: {codes:?}", func.name);
        }
        return;
    }
    tally.functions += 1;
    let all = make(&text);
    for (what, variant_text) in spread(&all, per_function) {
        let Some(variant) = parse_one(&variant_text) else {
            continue;
        };
        tally.variants += 1;
        let is_merged = merged(&original, &variant);
        if !is_merged && std::env::var_os("HB8_SHOW_UNMERGED").is_some() {
            eprintln!("not merged: {}: {what}", func.name);
        }
        if is_merged {
            tally.merged += 1;
            if std::env::var_os("HB8_SHOW").is_some() {
                eprintln!("merged: {}: {what}", func.name);
            }
        } else if tally.info_compared >= 400 || !tally.variants.is_multiple_of(7) {
            continue;
        }
        let mut all_same = true;
        for (isa, code) in isas.iter().zip(&codes) {
            let Ok(code) = code else { continue };
            // A variant the verifier refuses with this target's flags (a global value's type
            // against the pointer's) is no function for it, merged or not.
            if cranelift_codegen::verify_function(&variant, &**isa).is_err() {
                continue;
            }
            let other = machine_code(&variant, &**isa);
            let same = other.as_ref() == Ok(code);
            all_same &= same;
            if is_merged && !same {
                tally.failures.push(format!(
                    "{}: {what}: merged, but the code differs on {} (opt_level {})\n--- original ---\n{text}--- variant ---\n{variant_text}--- original code ---\n{code}--- variant code ---\n{}",
                    func.name,
                    isa.triple(),
                    isa.flags().opt_level(),
                    match &other {
                        Ok(c) => c.clone(),
                        Err(e) => format!("does not compile: {e}"),
                    }
                ));
            }
        }
        if is_merged {
            tally.compiled_pairs += 1;
        } else {
            tally.info_compared += 1;
            if all_same {
                tally.info_same_code_not_merged += 1;
                if std::env::var_os("HB8_SHOW").is_some() {
                    eprintln!("same code, not merged: {}: {what}", func.name);
                }
            }
        }
    }
}

fn report(what: &str, tally: &Tally) {
    eprintln!(
        "{what}: {} functions, {} variants verified, {} merged (all compiled), \
         information: {} of {} unmerged variants compiled to the same code",
        tally.functions,
        tally.variants,
        tally.merged,
        tally.info_same_code_not_merged,
        tally.info_compared
    );
    assert!(
        tally.failures.is_empty(),
        "{} merged variants compile to other code; the first:\n{}",
        tally.failures.len(),
        tally.failures[0]
    );
}

fn runtest_functions(dir: &Path) -> Vec<Function> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "clif"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(test) = cranelift_reader::parse_test(&text, Default::default()) else {
            continue;
        };
        out.extend(test.functions.into_iter().map(|(f, _)| f));
    }
    out
}

/// Every function of Cranelift's run tests, up to 40 variants each: a merged variant compiles
/// to the original's code.
#[test]
fn merged_runtest_variants_compile_to_the_same_code() {
    let Some(shared) = shared() else { return };
    let isas = isas();
    let mut tally = Tally::default();
    for func in runtest_functions(&shared.join("runtests")) {
        check_function(&func, &isas, 40, &mut tally);
    }
    report("runtests", &tally);
    assert!(tally.functions > 500, "{} functions", tally.functions);
    assert!(tally.variants > 10_000, "{} variants", tally.variants);
}

/// Functions of the dprint corpus module (every 10th of those under 6 kB of text), up to 150
/// variants each.
#[test]
fn merged_corpus_variants_compile_to_the_same_code() {
    let Some(shared) = shared() else { return };
    let text = std::fs::read_to_string(shared.join("corpus/dprint_markdown.clif")).unwrap();
    let starts: Vec<usize> = text
        .match_indices("\nfunction ")
        .map(|(i, _)| i + 1)
        .collect();
    let isas = isas();
    let mut tally = Tally::default();
    let mut small = 0usize;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        let piece = &text[start..end];
        if piece.len() > 6000 {
            continue;
        }
        small += 1;
        if !small.is_multiple_of(10) {
            continue;
        }
        if let Some(func) = parse_one(piece) {
            check_function(&func, &isas, 150, &mut tally);
        }
    }
    report("corpus", &tally);
    assert!(tally.functions >= 10, "{} functions", tally.functions);
}

/// The oracle can fail: a variant that the test treats as merged although its code differs
/// is reported.
#[test]
fn the_oracle_sees_a_changed_immediate() {
    let isa = isa_for("x86_64-unknown-linux-gnu", "speed");
    let a = parse_one("function %f(i32) -> i32 {\nblock0(v0: i32):\n  v1 = iconst.i32 7\n  v2 = iadd v0, v1\n  return v2\n}\n").unwrap();
    let b = parse_one("function %f(i32) -> i32 {\nblock0(v0: i32):\n  v1 = iconst.i32 8\n  v2 = iadd v0, v1\n  return v2\n}\n").unwrap();
    assert!(!merged(&a, &b));
    assert_ne!(machine_code(&a, &*isa), machine_code(&b, &*isa));
    // A source location changes neither the merge nor the code.
    let c = parse_one("function %f(i32) -> i32 {\nblock0(v0: i32):\n@0001  v1 = iconst.i32 7\n  v2 = iadd v0, v1\n  return v2\n}\n").unwrap();
    assert!(merged(&a, &c));
    assert_eq!(machine_code(&a, &*isa), machine_code(&c, &*isa));
    let vs = variants(&a.display().to_string());
    assert!(vs.iter().any(|(w, _)| w.contains("7 -> \"8\"")), "{vs:?}");
}

/// Functions with what the run tests have little of: user stack maps, `try_call` with several
/// handlers, patchable and colocated callees, tail calls, keyed and aligned stack slots, every
/// kind of global value, a stack limit, constants, shuffles, half and quad floats, atomics.
const SEEDS: &[&str] = &[
    "function %stack_maps(i64, i32) -> i64 system_v {
    ss0 = explicit_slot 16, align = 16
    ss1 = explicit_slot 8, key = 7
    sig0 = (i64) -> i64 system_v
    fn0 = %callee sig0
block0(v0: i64, v1: i32):
    v20 = stack_addr.i64 ss0
    store notrap v0, v20
    v21 = stack_addr.i64 ss1
    store notrap v0, v21
    v2 = call fn0(v0), stack_map=[i64 @ ss0+0, i64 @ ss1+0]
    v3 = call fn0(v2), stack_map=[i64 @ ss0+8]
    brif v1, block1, block2
block1 cold:
    v4 = iadd v2, v3
    return v4
block2:
    return v3
}",
    "function %handlers(i64, i64) -> i64 tail {
    sig0 = (i64, i64) -> i64 tail
    fn0 = %thrower(i64, i64) -> i64 tail
block0(v0: i64, v1: i64):
    try_call fn0(v0, v1), sig0, block1(ret0), [ context v0, tag1: block2(exn0), tag2: block3(exn0), default: block4(exn1) ]
block1(v2: i64):
    return v2
block2(v3: i64):
    v10 = iconst.i64 1
    v11 = iadd v3, v10
    return v11
block3(v4: i64):
    v12 = iconst.i64 2
    v13 = iadd v4, v12
    return v13
block4(v5: i64):
    v14 = iconst.i64 3
    v15 = iadd v5, v14
    return v15
}",
    "function %patch_and_tail(i64) -> i64 tail {
    sig0 = (i64) tail
    sig1 = (i64) -> i64 tail
    fn0 = colocated patchable %hook sig0
    fn1 = colocated %next sig1
    fn2 = %far sig1
block0(v0: i64):
    call fn0(v0)
    v1 = call fn2(v0)
    return_call fn1(v1)
}",
    "function %globals(i64 vmctx, i64) -> i64 system_v {
    gv0 = vmctx
    gv1 = load.i64 notrap aligned readonly gv0+8
    gv2 = iadd_imm.i64 gv1, 16
    gv3 = symbol colocated %data+24
    gv4 = symbol %other
    gv5 = load.i64 notrap aligned gv1+64
    stack_limit = gv5
    ss0 = explicit_slot 32, align = 8
block0(v0: i64, v1: i64):
    v3 = symbol_value.i64 gv3
    v4 = symbol_value.i64 gv4
    v5 = load.i64 little v0+4
    v6 = iadd v3, v4
    v7 = iadd v5, v6
    v8 = stack_addr.i64 ss0+8
    store notrap aligned v7, v8
    v9 = load.i64 notrap aligned v8
    v10 = iadd v9, v1
    return v10
}",
    "function %tls() -> i64 system_v {
    gv0 = symbol colocated tls %tlsvar
block0:
    v0 = tls_value.i64 gv0
    v1 = load.i64 notrap v0
    return v1
}",
    "function %vectors(i8x16, i8x16) -> i8x16 system_v {
    const0 = 0x0f0e0d0c0b0a09080706050403020100
block0(v0: i8x16, v1: i8x16):
    v2 = vconst.i8x16 const0
    v3 = iadd v0, v2
    v4 = shuffle v3, v1, 0x1f1e1d1c1b1a19181716151413121110
    v5 = bxor v4, v2
    return v5
}",
    "function %floats(f32, f64) -> f64 system_v {
block0(v0: f32, v1: f64):
    v2 = f32const -0x0.0p0
    v3 = f32const +NaN:0x1
    v4 = fadd v0, v2
    v5 = fmin v4, v3
    v6 = fpromote.f64 v5
    v7 = f64const 0x1.8000000000001p3
    v8 = f64const -NaN:0x4
    v9 = fmul v6, v7
    v10 = fmax v9, v8
    v11 = fadd v10, v1
    return v11
}",
    "function %atomics(i64, i32) -> i32 system_v {
block0(v0: i64, v1: i32):
    v2 = atomic_rmw.i32 little add v0, v1
    v3 = atomic_cas.i32 notrap v0, v2, v1
    v4 = atomic_load.i32 aligned v0
    atomic_store notrap v4, v0
    fence
    v5 = iadd v3, v4
    v6 = iconst.i32 7
    v7 = udiv v5, v6
    v8 = uadd_overflow_trap v7, v6, user3
    trapz v8, user5
    return v8
}",
    "function %tables(i32, i64) -> i64 system_v {
block0(v0: i32, v1: i64):
    br_table v0, block4, [block1, block2, block3, block1]
block1:
    v2 = iconst.i64 10
    v3 = iadd v1, v2
    return v3
block2:
    v4 = iconst.i64 20
    v5 = isub v1, v4
    return v5
block3 cold:
    v8 = iconst.i64 3
    v6 = ishl v1, v8
    return v6
block4:
    v7 = select_spectre_guard v0, v1, v1
    trap user9
}",
    "function %extensions(i8 uext, i16 sext, i64 sarg(24)) -> i32 sext system_v {
    sig0 = (i8 sext, i64 vmctx) -> i8 uext fast
block0(v0: i8, v1: i16, v2: i64):
    v3 = uextend.i32 v0
    v4 = sextend.i32 v1
    v5 = iadd v3, v4
    v6 = load.i32 v2+8
    v7 = iadd v5, v6
    v8 = call_indirect sig0, v2(v0, v2)
    v9 = uextend.i32 v8
    v10 = iadd v7, v9
    return v10
}",
];

/// Every single-field variant of each seed (no cap): a merged one compiles to the seed's code.
#[test]
fn merged_variants_of_rich_seeds_compile_to_the_same_code() {
    let isas = isas();
    let mut tally = Tally::default();
    for seed in SEEDS {
        let func = parse_one(seed).unwrap_or_else(|| panic!("{}\n{seed}", why_refused(seed)));
        check_function(&func, &isas, usize::MAX, &mut tally);
    }
    report("seeds", &tally);
    assert_eq!(
        tally.functions,
        SEEDS.len(),
        "every seed compiles somewhere"
    );
}

/// `text` with every `%name` of `names` renamed `%name_hb8v`.
fn renamed(text: &str, names: &BTreeSet<String>) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        out.push_str(&rest[..end]);
        if names.contains(&rest[..end]) {
            out.push_str("_hb8v");
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `func`'s code with every name it refers to replaced by its class's kept name.
fn code_by_class(
    func: &Function,
    isa: &dyn isa::TargetIsa,
    class_of: &std::collections::BTreeMap<String, String>,
) -> Result<String, String> {
    let code = machine_code(func, isa)?;
    Ok(code
        .lines()
        .map(|line| match line.strip_prefix("reloc ") {
            Some(rest) => {
                let mut words: Vec<String> = rest.split(' ').map(str::to_string).collect();
                if let Some(kept) = words.get(2).and_then(|n| class_of.get(n)) {
                    words[2] = kept.clone();
                }
                format!("reloc {}\n", words.join(" "))
            }
            None => format!("{line}\n"),
        })
        .collect())
}

/// Each run-test file as one module with a renamed copy of itself, one function of the copy
/// changed in one field: the merge pairs every function with its copy except those that can
/// reach the change through calls; every pair it does merge among those compiles to the same
/// code, calls compared by the class of their callee (x86_64 and aarch64).
#[test]
fn merged_callers_of_a_changed_callee_compile_to_the_same_code() {
    let Some(shared) = shared() else { return };
    let isas = isas();
    let dir = shared.join("runtests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "clif"))
        .collect();
    files.sort();
    let (mut modules, mut compared, mut failures) = (0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(test) = cranelift_reader::parse_test(&text, Default::default()) else {
            continue;
        };
        let funcs: Vec<Function> = test.functions.into_iter().map(|(f, _)| f).collect();
        let name_of: Vec<Option<String>> = funcs
            .iter()
            .map(|f| match &f.name {
                UserFuncName::Testcase(t) => {
                    Some(t.to_string().trim_start_matches('%').to_string())
                }
                UserFuncName::User(_) => None,
            })
            .collect();
        let names: BTreeSet<String> = name_of.iter().flatten().cloned().collect();
        // Only files whose functions call one another.
        if funcs.len() < 2 || names.len() != funcs.len() {
            continue;
        }
        let texts: Vec<String> = funcs.iter().map(|f| f.display().to_string()).collect();
        let calls_into = |t: &str, set: &BTreeSet<String>| {
            set.iter()
                .any(|n| t.contains(&format!("%{n}(")) || t.contains(&format!("%{n} ")))
        };
        if !texts.iter().any(|t| calls_into(t, &names)) {
            continue;
        }
        for (m, changed) in texts.iter().enumerate() {
            let all = variants(changed);
            for (what, variant) in spread(&all, 3) {
                let copies: Vec<String> = texts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| renamed(if i == m { &variant } else { t }, &names))
                    .collect();
                let Some(originals) = texts
                    .iter()
                    .map(|t| parse_one(t))
                    .collect::<Option<Vec<_>>>()
                else {
                    continue;
                };
                let Some(copied) = copies
                    .iter()
                    .map(|t| parse_one(t))
                    .collect::<Option<Vec<_>>>()
                else {
                    continue;
                };
                let mut module = ClifModule::new();
                for f in originals.iter().chain(&copied) {
                    module
                        .define(f.clone(), SymbolLinkage::Export, None)
                        .unwrap();
                }
                modules += 1;
                let (report, _) = merge_module(&mut module, Mode::Thunks);
                let mut class_of = std::collections::BTreeMap::new();
                for class in &report.classes {
                    for r in &class.replaced {
                        class_of.insert(r.name.to_string(), class.kept.to_string());
                    }
                }
                let class = |n: &str| class_of.get(n).cloned().unwrap_or(n.to_string());
                // The functions that can reach the change: the changed one and its callers.
                let mut reach: BTreeSet<String> = name_of[m].iter().cloned().collect();
                loop {
                    let before = reach.len();
                    for (i, t) in texts.iter().enumerate() {
                        if calls_into(t, &reach) {
                            reach.extend(name_of[i].iter().cloned());
                        }
                    }
                    if reach.len() == before {
                        break;
                    }
                }
                for (i, (a, b)) in originals.iter().zip(&copied).enumerate() {
                    let (an, bn) = (format!("{}", a.name), format!("{}", b.name));
                    let a_name = an.trim_start_matches('%');
                    if !reach.contains(a_name) || class(&an) != class(&bn) {
                        continue;
                    }
                    for isa in &isas {
                        if cranelift_codegen::verify_function(b, &**isa).is_err() {
                            continue;
                        }
                        let (ca, cb) = (
                            code_by_class(a, &**isa, &class_of),
                            code_by_class(b, &**isa, &class_of),
                        );
                        if ca.is_err() {
                            continue;
                        }
                        compared += 1;
                        if ca != cb {
                            failures.push(format!(
                                "{}: {an} and {bn} merged (function {m} changed, {what}), but their code differs on {}:\n{}\n{:?}\n{:?}",
                                file.display(),
                                isa.triple(),
                                copies[i],
                                ca,
                                cb
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("modules {modules}, merged pairs reaching the change compiled {compared}");
    assert!(
        failures.is_empty(),
        "{} failures; the first:\n{}",
        failures.len(),
        failures[0]
    );
    assert!(modules > 300, "{modules} modules");
}

/// A loop whose two blocks are swapped in the layout: the same function, the same fingerprint
/// (the walk follows the control flow), merged, but Cranelift numbers its virtual registers in
/// layout order and the register allocator then picks other registers: x86_64 loads into r8
/// instead of r10, aarch64 uses x6/x7 instead of x5/x10. Same behaviour, other registers: the
/// comparator leaves layout order out on purpose (its table's row; `tests/entity_layout.rs`
/// keeps the case `layout_loads`), as LLVM's does. Found by this pass, which expected equal
/// code; the table said "same code" then.
const LOOP: &str = "function %f(i64, i32, i32) -> i32 {
block0(v0: i64, v1: i32, v2: i32):
    jump block1(v1, v2)
block1(v3: i32, v4: i32):
    v5 = uextend.i64 v3
    v6 = iadd v0, v5
    v7 = load.i32 v6
    jump block2(v7)
block2(v8: i32):
    v9 = uextend.i64 v8
    v10 = iadd v0, v9
    v11 = load.i32 v10
    brif v11, block2(v11), block3
block3:
    brif v4, block1(v7, v3), block4
block4:
    return v3
}
";

#[test]
fn functions_differing_only_in_block_layout_merge() {
    let original = parse_one(LOOP).unwrap();
    let swapped_text = layout_variants(LOOP)
        .into_iter()
        .find(|(what, _)| what.starts_with("blocks 1 and 2"))
        .unwrap()
        .1;
    assert!(swapped_text.find("block2(v8").unwrap() < swapped_text.find("block1(v3").unwrap());
    let swapped = parse_one(&swapped_text).unwrap();
    assert!(merged(&original, &swapped));
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let isa = isa_for(triple, "speed");
        let (a, b) = (
            machine_code(&original, &*isa),
            machine_code(&swapped, &*isa),
        );
        // The first line is the code's bytes.
        let size = |code: &Result<String, String>| -> Option<usize> {
            code.as_ref()
                .ok()
                .and_then(|c| c.lines().next())
                .map(str::len)
        };
        assert_eq!(
            size(&a),
            size(&b),
            "{triple}: the same instructions, in other registers"
        );
    }
}

/// Renumbering alone (values, blocks) compiles alike on the corpus sample and every eighth run
/// test: the table's "value numbers: same code" holds where layout order does not.
#[test]
fn merged_renumbered_functions_compile_to_the_same_code() {
    let Some(shared) = shared() else { return };
    fn renumbering(text: &str) -> Vec<(String, String)> {
        order_variants(text)
            .into_iter()
            .filter(|(what, _)| what.contains("numbered"))
            .collect()
    }
    let isas = isas();
    let mut tally = Tally::default();
    let text = std::fs::read_to_string(shared.join("corpus/dprint_markdown.clif")).unwrap();
    for (k, piece) in text.split("\nfunction ").enumerate().skip(1) {
        if piece.len() > 6000 || k % 10 != 0 {
            continue;
        }
        if let Some(func) = parse_one(&format!("function {piece}")) {
            check_function_with(&func, &isas, 2, &mut tally, renumbering);
        }
    }
    for func in runtest_functions(&shared.join("runtests"))
        .iter()
        .step_by(8)
    {
        check_function_with(func, &isas, 2, &mut tally, renumbering);
    }
    report("renumbered", &tally);
    assert!(tally.merged > 300, "{} merged", tally.merged);
}
