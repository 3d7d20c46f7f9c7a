//! hostile19: a large file (4096 functions or more, or 1 MiB or more) that is a plain list of
//! functions is parsed in pieces that start at its first `function` line; the lines above it
//! (only blank lines and comments, by the reader's test) are parsed by no piece. The test that
//! they are blank uses `str::trim`, which strips every Unicode white space character, while
//! Cranelift's lexer skips only ASCII white space and refuses the others as invalid
//! characters. So a line above the first function holding a no-break space (U+00A0), an em
//! space (U+2003), and so on, is an error in a small file and is silently accepted in a large
//! one: the same text is refused or read depending on how many functions follow it.

use clif_merge::{ReadOptions, read_module_text};
use std::path::Path;

/// `count` functions, each different from the others.
fn functions(count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = iconst.i64 {i}\n    \
                 v2 = iadd v0, v1\n    return v2\n}}\n\n"
            )
        })
        .collect()
}

/// The result of reading `text`: the number of functions, or the error as printed.
fn read(text: &str) -> Result<usize, String> {
    read_module_text(Path::new("f.clif"), text, ReadOptions::default())
        .map(|m| m.len())
        .map_err(|e| e.to_string())
}

/// A comment line, a line holding only U+00A0, then functions: `clif-merge small.clif` prints
/// `error: small.clif:2: invalid character` (exit 1) above 10 functions. hostile19 found the
/// same header above 4,200 functions read and merged (exit 0): the lines above the first
/// function were judged blank by Unicode's white space, so no piece held them. Judged by the
/// lexer's (ASCII's), the file is read whole and the error is the same.
#[test]
fn unicode_white_space_above_the_first_function_is_refused_whatever_the_size() {
    for header in [
        "; header\n\u{a0}\n",
        "\u{2003}; a comment\n",
        "\n\u{3000}\n",
    ] {
        let small = format!("{header}{}", functions(10));
        let large = format!("{header}{}", functions(4200));
        let small_read = read(&small);
        let large_read = read(&large);
        assert!(
            small_read
                .as_ref()
                .is_err_and(|e| e.contains("invalid character")),
            "{header:?}: {small_read:?}"
        );
        assert_eq!(small_read, large_read, "{header:?}");
    }
}

/// What holds: the same characters between two functions of a large file are found by the
/// piece that holds them (its parse fails and the file is parsed whole), with their line.
#[test]
fn unicode_white_space_between_functions_is_refused_in_a_large_file() {
    let (before, after) = (functions(3000), functions(1200).replace("%f", "%g"));
    let large = format!("{before}\u{a0}\n{after}");
    let line = before.lines().count() + 1;
    assert_eq!(
        read(&large),
        Err(format!("f.clif:{line}: invalid character"))
    );
}

/// Function `i` of the module below: every seventh is equal to function `i % 700` (classes
/// spread over every piece of the large file), each has a directive in its body, and lines end
/// with CRLF and are indented with tabs.
fn twin(i: usize) -> String {
    let k = if i.is_multiple_of(7) { i % 700 } else { i };
    format!(
        "function %t{i}(i64) -> i64 {{\r\n\t; linkage: %t{i} hidden\r\nblock0(v0: i64):\r\n\
         \tv1 = iconst.i64 {k}\r\n\tv2 = imul v0, v1\r\n\treturn v2\r\n}}\r\n\r\n"
    )
}

/// The merged module as CLIF, and the report, of `files` read as one module.
fn merged(files: &[String]) -> (String, String) {
    let mut reader = clif_merge::read::ModuleReader::new(ReadOptions::default());
    for (i, text) in files.iter().enumerate() {
        let name = format!("part{i}.clif");
        reader.read_text(Path::new(&name), text).expect("reads");
    }
    let mut module = reader.finish().expect("directives apply");
    let (report, _) = clif_merge::merge_module(&mut module, clif_merge::Mode::Safe);
    (
        clif_merge::emit::module_to_clif(&module),
        format!("{:?}", report.classes),
    )
}

/// What holds: 4,200 functions with a byte-order mark, CRLF, tabs and directives inside the
/// bodies, read as one large file (in pieces) and as three small files (each whole), merge
/// the same way and write the same CLIF.
#[test]
fn one_large_file_and_three_small_ones_merge_alike() {
    let all: Vec<String> = (0..4200).map(twin).collect();
    let large = format!("\u{feff}; header\r\n{}", all.concat());
    let small: Vec<String> = all.chunks(1400).map(|c| c.concat()).collect();
    let (large_clif, large_report) = merged(&[large]);
    let (small_clif, small_report) = merged(&small);
    assert!(large_report.len() > 1000, "{}", &large_report[..200]);
    assert_eq!(large_report, small_report);
    assert!(large_clif == small_clif, "the emitted CLIF differs");
}
