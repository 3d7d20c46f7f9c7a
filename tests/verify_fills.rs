//! `--verify`'s runs that do not end on lazily filled memory. Memory nothing stored to reads as
//! a hash of the address and the run's seed, mostly small numbers: a hash table none of whose
//! control bytes reads as empty is probed forever, a tree none of whose pointers reads as null
//! is walked forever. Such a run is run again on the same arguments with other fills — another
//! draw of hashed memory, then every byte `0x00`, then every byte `0xFF` — and the first run
//! that ends is checked, its fill the same on both sides (`other_fills` in `src/verify/mod.rs`).
//! A run that ends on no fill stays inconclusive.

#[path = "common/planted.rs"]
mod planted;

use clif_merge::verify::{Fill, VerifyOptions, VerifyReport, verify_merge};
use clif_merge::{FuncName, Mode};
use planted::{merged, planted, read};

/// `%f(table, key)`: a SwissTable-like probe. The table's first word is the bucket mask, its
/// second the address of the control bytes; the key's low 7 bits are its tag. The probe reads
/// one control byte at a time from position 0, with a stride growing by one at each step (a
/// triangular probe, which visits every position of a power-of-two table): an empty byte
/// (`0xFF`) ends it with `EMPTY_RESULT`, a byte equal to the tag with its position. On hashed
/// memory the mask is mostly a small number, so that the probe cycles over a few control bytes,
/// mostly small numbers too: a tag none of them equals is never found and no byte is empty.
const PROBE: &str = "
block0(v0: i64, v1: i64):
    v2 = load.i64 notrap aligned v0
    v3 = load.i64 notrap aligned v0+8
    v20 = iconst.i64 127
    v4 = band v1, v20
    v5 = iconst.i64 0
    NOP
    jump block1(v5, v5)
block1(v6: i64, v7: i64):
    v8 = iadd v3, v6
    v9 = uload8.i64 notrap v8
    v21 = iconst.i64 255
    v10 = icmp eq v9, v21
    brif v10, block3, block2
block2:
    v11 = icmp eq v9, v4
    brif v11, block4, block5
block5:
    v22 = iconst.i64 1
    v12 = iadd v7, v22
    v13 = iadd v6, v12
    v14 = band v13, v2
    jump block1(v14, v12)
block3:
    v15 = iconst.i64 EMPTY_RESULT
    return v15
block4:
    return v6";

/// The probe returning `empty` when it finds an empty byte (`NOP` left in place).
fn probe(empty: i64) -> String {
    PROBE.replace("EMPTY_RESULT", &empty.to_string())
}

/// `%f` of the module `text` (one with a `NOP` line) checked against the same module with a
/// `nop` of its own in `%f` (so that the merged side is run, not taken as unchanged).
fn verify_changed(text: &str) -> VerifyReport {
    let original = read(&text.replace("    NOP\n", ""));
    let changed = read(&text.replace("NOP", "v99 = iconst.i64 99"));
    let report = merged(&original, Mode::Safe).0;
    let options = VerifyOptions {
        only: Some([FuncName::parse("%f").unwrap()].into_iter().collect()),
        ..VerifyOptions::default()
    };
    verify_merge(&original, &changed, &report, &options)
}

/// The probe's runs whose tag no byte read equals found no empty byte on hashed memory and ran
/// out of fuel; the first of them cut the fuel of the others, and six cut the function short.
/// Now each such run ends on erased memory (`0xFF`), and every run of the function is checked.
#[test]
fn a_probe_that_finds_no_empty_byte_ends_on_erased_memory() {
    let text = format!("function %f(i64, i64) -> i64 {{{}\n}}\n", probe(-1));
    let checked = verify_changed(&text);
    assert!(checked.is_ok(), "{}", checked.summary());
    assert_eq!(checked.inconclusive, 0, "{}", checked.summary());
    assert_eq!(checked.runs, 64, "{}", checked.summary());
    assert_eq!(checked.fully_checked, 1, "{}", checked.summary());
    assert!(checked.on_other_fills > 0, "{}", checked.summary());
    let ended_on_other = format!("; {} runs ended on another fill", checked.on_other_fills);
    assert!(
        checked.summary().contains(&ended_on_other),
        "{}",
        checked.summary()
    );
}

/// `%f` and `%g` probe alike but for what they return when they find an empty byte, which
/// hashed memory never holds where the probe looks: a "merge" that gives `%g` `%f`'s body
/// passed, as none of the runs that differ ended. Now they end on erased memory, on both sides,
/// and the difference is reported, with the fill it was found on; the same each time.
#[test]
fn a_wrong_merge_of_a_probe_is_reported_on_erased_memory() {
    let (f, g) = (probe(-1), probe(-2));
    let (f, g) = (f.replace("    NOP\n", ""), g.replace("    NOP\n", ""));
    let (reported, summary) = planted("(i64, i64) -> i64", &f, &g, "");
    assert!(reported, "{summary}");
    let (again, summary_again) = planted("(i64, i64) -> i64", &f, &g, "");
    assert_eq!((reported, &summary), (again, &summary_again));
}

/// The mismatch of a wrong merge found on erased memory says so.
#[test]
fn a_mismatch_found_on_another_fill_names_it() {
    let module = |g: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{{}\n}}\n\nfunction %g(i64, i64) -> i64 {{{g}\n}}\n",
            probe(-1)
        )
        .replace("    NOP\n", "")
    };
    let original = read(&module(&probe(-2)));
    let report = merged(&original, Mode::Aliases).0;
    let wrong = read(&module(&probe(-1)));
    let checked = verify_merge(&original, &wrong, &report, &VerifyOptions::default());
    let on_erased: Vec<_> = (checked.mismatches.iter())
        .filter(|m| m.memory == Fill::Byte(0xff))
        .collect();
    assert!(!on_erased.is_empty(), "{}", checked.summary());
    let text = on_erased[0].to_string();
    assert!(
        text.contains("(memory nothing stored to reads 0xff everywhere)"),
        "{text}"
    );
}

/// `%f(node)`: counts the nodes of a binary tree, each node two pointers (left, right), a null
/// pointer no node. On hashed memory the pointers read are mostly small numbers, never null
/// where the walk goes: the recursion goes too deep. Memory read as zeros (a cleared heap)
/// has null pointers: the walk ends.
const TREE: &str = "
function %f(i64) -> i64 {
    fn0 = %f(i64) -> i64
block0(v0: i64):
    NOP
    brif v0, block1, block2
block1:
    v1 = load.i64 notrap aligned v0
    v2 = load.i64 notrap aligned v0+8
    v3 = call fn0(v1)
    v4 = call fn0(v2)
    v5 = iadd v3, v4
    v8 = iconst.i64 1
    v6 = iadd v5, v8
    return v6
block2:
    v7 = iconst.i64 0
    return v7
}
";

/// The tree walk's runs on a non-null pointer went too deep on hashed memory; each now ends on
/// cleared memory (`0x00`).
#[test]
fn a_tree_walk_whose_pointers_are_never_null_ends_on_cleared_memory() {
    let checked = verify_changed(TREE);
    assert!(checked.is_ok(), "{}", checked.summary());
    assert_eq!(checked.inconclusive, 0, "{}", checked.summary());
    assert_eq!(checked.fully_checked, 1, "{}", checked.summary());
}

/// `%f(p)`: scans memory from `p` for a word no fill holds (neither a small number, nor all
/// zeros, nor all ones): it ends on no fill. Its runs stay inconclusive, and the function is
/// not checked at all.
#[test]
fn a_run_that_ends_on_no_fill_stays_inconclusive() {
    let text = "
function %f(i64) -> i64 {
block0(v0: i64):
    NOP
    jump block1(v0)
block1(v1: i64):
    v2 = load.i64 notrap v1
    v5 = iconst.i64 0x5a5a_5a5a_5a5a_5a5a
    v3 = icmp eq v2, v5
    v6 = iconst.i64 8
    v4 = iadd v1, v6
    brif v3, block2, block1(v4)
block2:
    return v1
}
";
    let checked = verify_changed(text);
    assert!(checked.inconclusive > 0, "{}", checked.summary());
    assert_eq!(checked.fully_checked, 0, "{}", checked.summary());
    assert_eq!(checked.partly_checked, 0, "{}", checked.summary());
    assert_eq!(checked.unchecked, 1, "{}", checked.summary());
}
