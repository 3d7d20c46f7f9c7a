//! hostile9: the reader's byte-level scans against text Cranelift's lexer reads otherwise than
//! a naive scan would: multi-line region strings that hold `function` lines, directives,
//! semicolons and quotes; multi-byte UTF-8 in names of comments and in strings; a carriage
//! return alone between tokens; strings and comments at the boundaries of the pieces a large
//! file is cut into. A file over 1 MiB that is a plain list of functions is read in pieces; the
//! same text after a `test verifier` line is read whole: the two must give the same module
//! (functions one line further down in the second). And the library reader after a refused
//! large file: nothing of it stays.

use clif_merge::read::{ModuleReader, read_module_text};
use clif_merge::{FuncName, ReadOptions, SymbolLinkage, emit};
use std::fmt::Write as _;
use std::path::Path;

/// Function `i` of the large file: each holds a region whose description spans lines that
/// read like `function` lines, directives, comments and quotes, and comments and strings in
/// several scripts.
fn function(i: usize) -> String {
    let mut t = String::new();
    writeln!(t, "function %f{i}(i64, i64) -> i64 {{ ; ünïcödé → 函数 \"").unwrap();
    // The description: opens on this line, holds a `;`, then lines that would be a function
    // start and directives, a line of multi-byte text, and a `\r` alone; closes after a `;`
    // of its own, followed by a comment holding a quote.
    writeln!(t, "    region0 = {i} \"desc ; not a comment").unwrap();
    writeln!(t, "function %fake{i}(i64) -> i64 {{").unwrap();
    writeln!(t, "; linkage: %f{i} local").unwrap();
    writeln!(t, "; alias: %fake_alias{i} = %f{i}").unwrap();
    writeln!(t, "  日本語の説明\r ünïcödé 🦀").unwrap();
    writeln!(t, "}};\" ; a comment \" with quotes").unwrap();
    writeln!(t, "    ss0 = explicit_slot 8 ; 🦀 function %c{i}() {{").unwrap();
    writeln!(t, "block0(v0: i64,\rv1: i64): ; \"unclosed in a comment").unwrap();
    for n in 0..20 {
        writeln!(t, "    v{} = iconst.i64 {}\r", 10 + n, n * 5 + i % 11).unwrap();
    }
    writeln!(t, "    v40 = iadd v0, v10").unwrap();
    writeln!(t, "    v41 = load.i64 notrap region0 v40").unwrap();
    writeln!(t, "    v42 = imul v41, v1").unwrap();
    writeln!(t, "    return v42").unwrap();
    writeln!(t, "}}").unwrap();
    // Between functions: a comment with a quote, then a string-looking comment line.
    t.push_str("; \" a lone quote in a comment\n;; function %commented() {\n\n");
    t
}

/// The file: well over 1 MiB, a plain list of functions (only comments before the first), a
/// directive at the end. Functions 64, 128, … start pieces.
fn large_file(count: usize, broken: Option<usize>) -> String {
    let mut text = String::from("; ünïcödé \" header comment\n\n");
    for i in 0..count {
        let mut f = function(i);
        if broken == Some(i) {
            f = f.replace("v42 = imul v41, v1", "v42 = imul v41, v99");
        }
        text.push_str(&f);
    }
    text.push_str("; linkage: %f3 hidden\n");
    text
}

/// Every function with its line, and the module as CLIF.
fn read(text: &str) -> Result<(Vec<(String, usize)>, String), String> {
    let module = read_module_text(Path::new("big.clif"), text, ReadOptions::default())
        .map_err(|e| e.to_string())?;
    let lines = (module.ids().iter())
        .map(|&id| {
            let f = module.function(id);
            (f.name.to_string(), f.origin.as_ref().map_or(0, |o| o.line))
        })
        .collect();
    Ok((lines, emit::module_to_clif(&module)))
}

const COUNT: usize = 2000;

#[test]
fn a_large_file_of_multi_line_strings_and_unicode_reads_in_pieces_as_whole() {
    let text = large_file(COUNT, None);
    assert!(text.len() > (1 << 20), "{} bytes", text.len());
    let (pieces_lines, pieces_clif) = read(&text).expect("the file reads");
    let (whole_lines, whole_clif) =
        read(&format!("test verifier\n{text}")).expect("the file reads whole");
    assert_eq!(pieces_lines.len(), COUNT, "every function, no %fake");
    let shifted: Vec<(String, usize)> = (whole_lines.into_iter())
        .map(|(name, line)| (name, line - 1))
        .collect();
    assert_eq!(pieces_lines, shifted);
    assert_eq!(pieces_clif, whole_clif);
    // The lines inside the strings are no directives: no function is local, no alias appears;
    // the directive at the end applies.
    let module = read_module_text(Path::new("big.clif"), &text, ReadOptions::default()).unwrap();
    let local = (module.functions())
        .filter(|f| f.linkage == SymbolLinkage::Local)
        .count();
    assert_eq!(local, 0, "a linkage directive inside a string applied");
    assert!(
        module.aliases().is_empty(),
        "an alias inside a string applied"
    );
    let f3 = FuncName::parse("%f3").unwrap();
    assert_eq!(module.linkage_of(&f3), Some(SymbolLinkage::Hidden));
    // Function 1000 starts at the line counted by hand.
    let per_function = function(0).lines().count();
    assert_eq!(pieces_lines[1000].1, 3 + 1000 * per_function);
}

/// A verifier error in a late piece (at a boundary and after one) names the same line in
/// pieces as whole.
#[test]
fn an_error_after_multi_line_strings_in_a_late_piece_names_the_same_line() {
    let per_function = function(0).lines().count();
    for broken in [1024, 1025, COUNT - 1] {
        let text = large_file(COUNT, Some(broken));
        let pieces = read(&text).expect_err("the verifier refuses v99");
        let whole = read(&format!("test verifier\n{text}")).expect_err("refused whole");
        // The `imul` line of function `broken`.
        let line = 3 + broken * per_function + 9 + 20 + 2;
        assert!(
            pieces.starts_with(&format!("big.clif:{line}:")),
            "{pieces} (line {line})"
        );
        assert!(
            whole.starts_with(&format!("big.clif:{}:", line + 1)),
            "{whole}"
        );
    }
}

/// The library reader refuses a large file (read in pieces) for an error in its last function:
/// none of its 1,999 good functions or its directives stay, and the corrected file reads next
/// into the module the corrected file alone gives.
#[test]
fn a_refused_large_file_leaves_the_reader_as_it_was() {
    let mut reader = ModuleReader::new(ReadOptions::default());
    let bad = large_file(COUNT, Some(COUNT - 1));
    assert!(reader.read_text(Path::new("big.clif"), &bad).is_err());
    let good = large_file(COUNT, None);
    reader
        .read_text(Path::new("big.clif"), &good)
        .expect("the corrected file");
    let module = reader.finish().expect("a module");
    let alone = read_module_text(Path::new("big.clif"), &good, ReadOptions::default()).unwrap();
    assert_eq!(emit::module_to_clif(&module), emit::module_to_clif(&alone));
}

/// A name defined twice in a large file, the second time in a late piece: the error names the
/// second definition's line and the first's, in pieces as whole.
#[test]
fn a_name_defined_twice_across_pieces_names_both_lines() {
    let per_function = function(0).lines().count();
    let text = large_file(COUNT, None).replacen("function %f1500(", "function %f3(", 1);
    let pieces = read(&text).expect_err("%f3 twice");
    let (first, second) = (3 + 3 * per_function, 3 + 1500 * per_function);
    assert_eq!(
        pieces,
        format!("big.clif:{second}: function %f3 is defined twice: also at big.clif:{first}")
    );
    let whole = read(&format!("test verifier\n{text}")).expect_err("refused whole");
    assert_eq!(
        whole,
        format!(
            "big.clif:{}: function %f3 is defined twice: also at big.clif:{}",
            second + 1,
            first + 1
        )
    );
}
