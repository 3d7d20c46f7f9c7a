//! hostile9: the shape hash reads branch targets from each block's terminator only
//! (`src/compare/walk.rs`). Functions equal but for numbering and block layout must get equal
//! hashes, or they never meet to be compared and the merge is lost: `br_table` with repeated
//! targets and a default that is also an entry, `try_call` with exception tables (tags and a
//! default), cold blocks, unreachable blocks, blocks laid out in another order. A function that
//! differs only where a terminator sends its targets stays apart.

use clif_merge::{ClifModule, Mode, ReadOptions, merge_module, read_module_text};
use std::path::Path;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("shape.clif"), text, ReadOptions::default()).unwrap()
}

/// The names merged into another function, sorted.
fn merged_names(text: &str) -> Vec<String> {
    let mut module = read(text);
    let report = merge_module(&mut module, Mode::Aliases).0;
    let mut names: Vec<String> = (report.classes.iter())
        .flat_map(|c| c.replaced.iter().map(|m| m.name.to_string()))
        .collect();
    names.sort();
    names
}

/// `%name`: a `br_table` over three entries (two the same block) and a default; the blocks
/// laid out in `order` (a permutation of 1..=3, block 2 cold), numbered by `numbers`.
fn br_table(name: &str, order: [usize; 3], numbers: [usize; 3], answers: [i32; 3]) -> String {
    let block = |i: usize| format!("block{}", numbers[i - 1]);
    let mut t = format!(
        "function %{name}(i32) -> i32 {{\nblock0(v0: i32):\n    br_table v0, {}, [{}, {}, {}]\n",
        block(3),
        block(1),
        block(2),
        block(1)
    );
    for i in order {
        let cold = if i == 2 { " cold" } else { "" };
        t += &format!(
            "{}{cold}:\n    v{} = iconst.i32 {}\n    return v{}\n",
            block(i),
            10 + numbers[i - 1],
            answers[i - 1],
            10 + numbers[i - 1]
        );
    }
    t + "}\n\n"
}

/// `%name`: a `try_call` whose normal return, tag and default handlers are blocks laid out in
/// `order`, numbered by `numbers`; the tag handler adds `tag_adds`.
fn try_call(name: &str, order: [usize; 3], numbers: [usize; 3], tag_adds: i64) -> String {
    let block = |i: usize| format!("block{}", numbers[i - 1]);
    let mut t = format!(
        "function %{name}(i64) -> i64 tail {{
    sig0 = (i64) -> i64 tail
    fn0 = %callee sig0
block0(v0: i64):
    try_call fn0(v0), sig0, {}(ret0), [ tag1: {}(exn0), default: {}(exn0) ]
",
        block(1),
        block(2),
        block(3)
    );
    for i in order {
        let (p, c, r) = (20 + 3 * i, 21 + 3 * i, 22 + 3 * i);
        let add = [0, tag_adds, 2][i - 1];
        let cold = if i == 3 { " cold" } else { "" };
        t += &format!(
            "{}(v{p}: i64){cold}:\n    v{c} = iconst.i64 {add}\n    v{r} = iadd v{p}, v{c}\n    return v{r}\n",
            block(i)
        );
    }
    t + "}\n\n"
}

#[test]
fn br_tables_laid_out_and_numbered_otherwise_merge() {
    let text = br_table("a", [1, 2, 3], [1, 2, 3], [10, 20, 30])
        + &br_table("b", [3, 2, 1], [7, 4, 9], [10, 20, 30])
        + &br_table("c", [2, 3, 1], [2, 3, 1], [10, 20, 30])
        // Entry and default answers swapped: another function.
        + &br_table("d", [1, 2, 3], [1, 2, 3], [30, 20, 10]);
    assert_eq!(merged_names(&text), ["%b", "%c"]);
}

#[test]
fn br_tables_with_an_unreachable_block_merge() {
    let a = br_table("a", [1, 2, 3], [1, 2, 3], [10, 20, 30]);
    let b = br_table("b", [2, 1, 3], [5, 6, 8], [10, 20, 30]).replace(
        "}\n\n",
        "block40:\n    v40 = iconst.i32 40\n    return v40\n}\n\n",
    );
    assert_eq!(merged_names(&(a + &b)), ["%b"]);
}

#[test]
fn try_calls_with_handlers_laid_out_and_numbered_otherwise_merge() {
    let text = try_call("a", [1, 2, 3], [1, 2, 3], 1)
        + &try_call("b", [3, 1, 2], [6, 5, 4], 1)
        + &try_call("c", [2, 3, 1], [9, 2, 7], 1)
        // The tag's handler does what the default's does in the others: another function.
        + &try_call("d", [1, 2, 3], [1, 2, 3], 2);
    assert_eq!(merged_names(&text), ["%b", "%c"]);
}
