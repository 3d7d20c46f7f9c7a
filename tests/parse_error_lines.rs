//! A statement cut short is reported on its own line. Every file of the project's filetests
//! and examples is mutated one instruction line at a time: the line loses its last operand
//! (`v3 = iadd v1, v2` becomes `v3 = iadd v1,` and `v3 = iadd v1`; `v2 = iconst.i32 7`
//! becomes `v2 = iconst.i32`), and reading must fail on that line, whatever follows it.

mod common;

use clif_merge::{ReadOptions, read_module_text};
use common::clif_files;
use std::path::Path;

/// The mutations of `line` that leave its last operand out, when it is an instruction with
/// two value operands or an `iconst`.
fn cut_short(line: &str) -> Vec<String> {
    let trimmed = line.trim_end();
    if trimmed.trim_start().starts_with(';') {
        return Vec::new();
    }
    let Some((_, rhs)) = trimmed.split_once(" = ") else {
        return Vec::new();
    };
    let words: Vec<&str> = rhs.split_whitespace().collect();
    match words.as_slice() {
        [op, _] if op.starts_with("iconst.") => {
            vec![trimmed[..trimmed.rfind(' ').unwrap()].to_string()]
        }
        [op, a, b] if a.ends_with(',') && b.starts_with('v') && !op.contains('.') => {
            let without = &trimmed[..trimmed.rfind(' ').unwrap()];
            vec![
                without.to_string(),
                without.trim_end_matches(',').to_string(),
            ]
        }
        _ => Vec::new(),
    }
}

#[test]
fn a_statement_cut_short_is_reported_on_its_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for path in ["filetests", "examples"]
        .iter()
        .flat_map(|dir| clif_files(&root.join(dir)))
    {
        let text = std::fs::read_to_string(&path).unwrap();
        if read_module_text(&path, &text, ReadOptions::default()).is_err() {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            for mutated_line in cut_short(line) {
                let mut mutated = lines.clone();
                mutated[i] = &mutated_line;
                let mutated = mutated.join("\n") + "\n";
                let error = read_module_text(&path, &mutated, ReadOptions::default()).expect_err(
                    &format!("{}:{}: `{mutated_line}` is read", path.display(), i + 1),
                );
                assert_eq!(
                    error.line,
                    i + 1,
                    "`{mutated_line}` (line {}): {error}",
                    i + 1
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} statements cut short, each reported on its line");
    assert!(checked > 200, "only {checked} mutations");
}
