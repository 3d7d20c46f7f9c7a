//! hostile8: the reader's one scan for directives and `function` lines, and large files read
//! in pieces.
//!
//! A file over 1 MiB that is a plain list of functions is cut at its `function` lines and the
//! pieces parsed apart; any other file is parsed whole. The same text with a `test verifier`
//! line in front is parsed whole (a line that is neither blank nor a comment before the first
//! function), so each case compares the two: the same functions with the same lines (one more
//! in the whole one), the same directives, and errors on the same line. The texts have CRLF
//! line ends, a tab after `function`, comments that hold `function` lines (at the start of a
//! line, after a closing brace, inside a block header), directives between functions and
//! inside them, functions at exactly the pieces' boundaries, and no newline at the end.
//!
//! The scans that run before the parser (limits, directives) must read the text as
//! Cranelift's lexer does; three ways they did not are tested below (all fixed): a vertical tab
//! or form feed between tokens (blanks to the lexer) hid alias and global value chains from the
//! chain limit; a number glued to a source location (`@0001v10000001`) hid it from the entity
//! number limit; a directive line inside a multi-line string was applied.

use clif_merge::read::read_module_text;
use clif_merge::{ReadOptions, emit};
use std::fmt::Write as _;
use std::path::Path;

/// Function `i` of the large file, in one of several layouts.
fn function(i: usize) -> String {
    let k = i % 7;
    let head = match i % 5 {
        0 => format!("function\t%f{i}(i64, i64) -> i64 {{"),
        1 => format!("function %f{i}(i64, i64) -> i64 {{ ; function %fake{i}() {{"),
        _ => format!("function %f{i}(i64, i64) -> i64 {{"),
    };
    let mut t = String::new();
    writeln!(t, "{head}").unwrap();
    writeln!(
        t,
        "    ; linkage: %f{i} {}",
        ["export", "local", "hidden"][i % 3]
    )
    .unwrap();
    writeln!(t, "    ss0 = explicit_slot 8 ; function %fake() {{").unwrap();
    writeln!(t, "    sig0 = (i64) -> i64").unwrap();
    if i > 0 {
        writeln!(t, "    fn0 = %f{}(i64, i64) -> i64", i - 1).unwrap();
    }
    writeln!(t, "block0(v0: i64, ; function %inside() {{").unwrap();
    writeln!(t, "       v1: i64):").unwrap();
    for n in 0..24 {
        writeln!(t, "    v{} = iconst.i64 {}", 10 + n, n * 3 + k).unwrap();
    }
    writeln!(t, "    v40 = iadd v0, v10").unwrap();
    writeln!(t, "    v41 = imul v40, v1").unwrap();
    if i > 0 && i.is_multiple_of(3) {
        writeln!(t, "    v42 = call fn0(v41, v1)").unwrap();
        writeln!(t, "    return v42").unwrap();
    } else {
        writeln!(t, "    return v41").unwrap();
    }
    writeln!(t, "}} ; function %after{i}() {{").unwrap();
    t.push_str(";; the next is a function\n; function %commented() {\n\n");
    t
}

/// The file: more than 1 MiB, CRLF line ends, no newline at the end.
fn large_file(count: usize, broken: Option<(usize, &str)>) -> String {
    let mut text = String::from("; a plain list of functions\n\n");
    for i in 0..count {
        let mut f = function(i);
        if let Some((at, line)) = broken
            && at == i
        {
            f = f.replace("v41 = imul v40, v1", line);
        }
        text.push_str(&f);
    }
    text.push_str("; alias: %alias_of_f0 = %f0\n");
    let text = text.replace('\n', "\r\n");
    text.trim_end().to_string()
}

/// Every function with its origin line, and the module as CLIF.
fn read(text: &str) -> Result<(Vec<(String, usize)>, String), String> {
    let module = read_module_text(Path::new("big.clif"), text, ReadOptions::default())
        .map_err(|e| e.to_string())?;
    let lines = module
        .ids()
        .iter()
        .map(|&id| {
            let f = module.function(id);
            (f.name.to_string(), f.origin.as_ref().map_or(0, |o| o.line))
        })
        .collect();
    Ok((lines, emit::module_to_clif(&module)))
}

const COUNT: usize = 2100;

#[test]
fn a_large_file_in_pieces_reads_as_the_same_text_parsed_whole() {
    let text = large_file(COUNT, None);
    assert!(text.len() > (1 << 20), "{} bytes", text.len());
    let (pieces, clif) = read(&text).unwrap();
    let (whole, whole_clif) = read(&format!("test verifier\r\n{text}")).unwrap();
    assert_eq!(pieces.len(), COUNT);
    let shifted: Vec<(String, usize)> = whole.into_iter().map(|(n, l)| (n, l - 1)).collect();
    assert_eq!(pieces, shifted);
    assert_eq!(clif, whole_clif);
    // Function i starts where the text says.
    let starts: Vec<usize> = text
        .split('\n')
        .enumerate()
        .filter(|(_, l)| l.starts_with("function"))
        .map(|(n, _)| n + 1)
        .collect();
    let mut by_name: Vec<(String, usize)> = pieces.clone();
    by_name.sort_by_key(|(n, _)| n[2..].parse::<usize>().unwrap());
    let lines: Vec<usize> = by_name.iter().map(|(_, l)| *l).collect();
    assert_eq!(lines, starts);
    assert!(
        clif.contains("; alias: %alias_of_f0 = %f0"),
        "the alias is kept"
    );
    assert!(
        clif.contains("; linkage: %f2 hidden"),
        "directives inside functions count"
    );
}

/// A verifier error in a function of a late piece, at a boundary (every 64th function starts
/// a piece) and just after one, names the same line as the whole parse.
#[test]
fn an_error_in_a_late_piece_names_the_line_the_whole_parse_names() {
    // A parse error (an undefined value) and a verifier error (operand types).
    let errors = [
        "v41 = imul v40, v99",
        "v43 = ireduce.i32 v40\n    v41 = iadd v43, v1",
    ];
    for (broken, line) in [64 * 20, 64 * 20 + 1, COUNT - 1]
        .into_iter()
        .flat_map(|b| errors.map(|e| (b, e)))
    {
        let text = large_file(COUNT, Some((broken, line)));
        let pieces = read(&text).unwrap_err();
        let whole = read(&format!("test verifier\r\n{text}")).unwrap_err();
        let line_of = |e: &str| -> usize {
            let rest = e.split("big.clif:").nth(1).unwrap();
            rest.split(':').next().unwrap().parse().unwrap()
        };
        assert_eq!(line_of(&pieces) + 1, line_of(&whole), "{pieces}\n{whole}");
        let expected = text
            .split('\n')
            .position(|l| l.contains(line.lines().last().unwrap()))
            .unwrap()
            + 1;
        assert_eq!(line_of(&pieces), expected, "{pieces}");
    }
}

/// `n` value aliases in a chain, `v{i}{gap}-> v{i-1}`.
fn alias_chain(n: usize, gap: &str) -> String {
    let mut text = String::from("function %f(i64) -> i64 {\nblock0(v0: i64):\n");
    for i in 1..=n {
        writeln!(text, "    v{i}{gap}-> v{}", i - 1).unwrap();
    }
    writeln!(text, "    return v{n}\n}}").unwrap();
    text
}

/// `n` global values in a chain of loads, `gv{i} ={gap}load ... gv{i-1}`, the last the stack
/// limit.
fn gv_chain(n: usize, gap: &str) -> String {
    let mut text = String::from("function %f(i64 vmctx) -> i64 {\n    gv0 = vmctx\n");
    for i in 1..=n {
        writeln!(
            text,
            "    gv{i} ={gap}load.i64 notrap aligned gv{}+8",
            i - 1
        )
        .unwrap();
    }
    writeln!(
        text,
        "    stack_limit = gv{n}\nblock0(v0: i64):\n    return v0\n}}"
    )
    .unwrap();
    text
}

/// The limit on alias and global value chains (which cranelift-reader and the verifier walk
/// from the start at every use: quadratic time) holds whatever whitespace separates the
/// tokens. Cranelift's lexer takes a vertical tab or a form feed as a blank, as it takes a
/// space; the limits scan takes them for punctuation, so `v2\x0c-> v1` is no alias to it and
/// the chain is never counted: 8,000 aliases are refused with spaces and read with form feeds,
/// and 40,000 take 18 s (debug build) instead of an error.
#[test]
fn a_chain_is_refused_whatever_blank_separates_its_tokens() {
    let refused = |text: &str| {
        read_module_text(Path::new("chain.clif"), text, ReadOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for (what, make) in [
        ("aliases", alias_chain as fn(usize, &str) -> String),
        ("global values", gv_chain),
    ] {
        let spaced = refused(&make(8000, " "));
        assert!(
            spaced
                .as_ref()
                .is_err_and(|e| e.contains("chains of value aliases")),
            "{what}: {spaced:?}"
        );
        for gap in ["\x0b", "\x0c", " \x0c "] {
            let result = refused(&make(8000, gap));
            assert_eq!(result, spaced, "{what} with {gap:?} between tokens");
        }
    }
}

/// The held half of the case above: tabs and carriage returns are blanks to the scan too.
#[test]
fn a_chain_is_refused_with_tabs_and_carriage_returns() {
    for gap in ["\t", "\r", " \t "] {
        let text = alias_chain(8000, gap);
        let e = read_module_text(Path::new("chain.clif"), &text, ReadOptions::default())
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_ref()
                .is_some_and(|e| e.contains("chains of value aliases")),
            "{gap:?}: {e:?}"
        );
    }
}

/// A region's description is a string, which may hold a line break (Cranelift's lexer ends a
/// string only at the next quote). A line of the string that reads like a directive is text of
/// the string, not a comment: it must not set a linkage or add an alias. The directive scan,
/// line by line, does not know strings (the limits scan does): `%f` becomes local and an alias
/// appears.
#[test]
fn a_directive_inside_a_string_is_no_directive() {
    use clif_merge::SymbolLinkage;
    let text = "function %f(i64) -> i64 {
    region0 = 1 \"first line
; linkage: %f local
; alias: %g = %f
last line\"
block0(v0: i64):
    v1 = load.i64 notrap region0 v0
    return v1
}
";
    let module = read_module_text(Path::new("s.clif"), text, ReadOptions::default()).unwrap();
    let id = module.ids()[0];
    let plain = text.replace("; linkage: %f local\n; alias: %g = %f\n", "");
    let expected = read_module_text(Path::new("s.clif"), &plain, ReadOptions::default()).unwrap();
    assert_eq!(
        module.function(id).linkage,
        expected.function(expected.ids()[0]).linkage
    );
    assert_ne!(module.function(id).linkage, SymbolLinkage::Local);
    assert!(module.aliases().is_empty(), "{:?}", module.aliases());
}

/// The held neighbour: the same lines in a comment are directives.
#[test]
fn a_directive_in_a_comment_inside_a_function_applies() {
    use clif_merge::SymbolLinkage;
    let text = "function %f(i64) -> i64 {
; linkage: %f local
block0(v0: i64):
    return v0
}
";
    let module = read_module_text(Path::new("s.clif"), text, ReadOptions::default()).unwrap();
    assert_eq!(
        module.function(module.ids()[0]).linkage,
        SymbolLinkage::Local
    );
}

/// Entity numbers above 10,000,000 are refused before parsing (cranelift-reader sizes a
/// function's tables by the largest number it meets). Cranelift's lexer ends a source location
/// at its last hex digit, so `@0001v10000001 = ...` is a location and then `v10000001`; the
/// limits scan reads `0001v10000001` as one word, no entity, and lets the number through. With
/// `v400000000` the command aborts ("memory allocation of 2684354560 bytes failed", SIGABRT,
/// under a 2 GB address-space limit) instead of naming the line.
#[test]
fn a_large_entity_number_after_a_source_location_is_refused() {
    let text = |gap: &str| {
        format!(
            "function %f() -> i32 {{\nblock0:\n@0001{gap}v10000001 = iconst.i32 1\n    v0 = iconst.i32 2\n    return v0\n}}\n"
        )
    };
    let read = |text: &str| {
        read_module_text(Path::new("at.clif"), text, ReadOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let spaced = read(&text(" "));
    assert!(
        spaced
            .as_ref()
            .is_err_and(|e| e.starts_with("at.clif:3: `v10000001`: entity numbers above")),
        "{spaced:?}"
    );
    assert_eq!(read(&text("")), spaced);
}
