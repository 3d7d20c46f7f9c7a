//! hostile18: `br_table` indices that are loaded words up to a small difference, steered by
//! pinning the loaded word (`steer_table_loads` in `src/verify/guide.rs`), on planted wrong
//! merges (`tests/common/planted.rs`) and real merges.

#[path = "common/planted.rs"]
mod wrong_merges;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, verify_merge};
use wrong_merges::{merged, planted, read, real_merge_passes};

/// A body of `(i64) -> i64`: `load` (defining `v1`, the index, from the pointer `v0`) and
/// `index` (defining `v3` from `v1`), then a table of `len` entries whose entry `case` returns
/// `k` and every other entry and the default 5.
fn table_body(load: &str, index: &str, len: usize, case: usize, k: i64) -> String {
    let cases: Vec<&str> = (0..len)
        .map(|i| if i == case { "block2" } else { "block1" })
        .collect();
    format!(
        "block0(v0: i64):\n{load}{index}    br_table v3, block1, [{}]\nblock1:\n    \
         v4 = iconst.i64 5\n    return v4\nblock2:\n    v5 = iconst.i64 {k}\n    return v5",
        cases.join(", ")
    )
}

/// Whether the planted merge of `%g` (entry `case` returns 7) into `%f` (it returns 6) is
/// reported, with the summary.
fn reported(load: &str, index: &str, len: usize, case: usize) -> (bool, String) {
    planted(
        "(i64) -> i64",
        &table_body(load, index, len, case, 6),
        &table_body(load, index, len, case, 7),
        "",
    )
}

/// The index at every width a word is loaded with, zero- or sign-extended, minus one (Wasm's
/// cases numbered from one): entry 30 of 40 is reached by pinning the loaded word to 31.
#[test]
fn a_case_of_a_table_indexed_by_a_loaded_word_of_any_width_is_reached() {
    let minus_one = "    v2 = iconst.i32 1\n    v3 = isub v9, v2\n";
    for (what, load) in [
        ("uload8", "    v9 = uload8.i32 v0\n"),
        ("sload8", "    v9 = sload8.i32 v0\n"),
        ("uload16", "    v9 = uload16.i32 v0\n"),
        ("sload16", "    v9 = sload16.i32 v0\n"),
        ("i32", "    v9 = load.i32 v0\n"),
        (
            "i64 reduced",
            "    v8 = load.i64 v0\n    v9 = ireduce.i32 v8\n",
        ),
        (
            "i8 extended",
            "    v8 = load.i8 v0\n    v9 = uextend.i32 v8\n",
        ),
    ] {
        let (reported, summary) = reported(load, minus_one, 40, 30);
        assert!(reported, "{what}: the wrong merge passed: {summary}");
    }
}

/// The index the loaded word plus one, or minus eight (the farthest a difference may be): the
/// pin is the case's index minus or plus that.
#[test]
fn a_case_of_a_table_indexed_by_a_loaded_word_moved_by_a_small_constant_is_reached() {
    for (what, index) in [
        ("plus one", "    v2 = iconst.i32 1\n    v3 = iadd v9, v2\n"),
        (
            "minus eight",
            "    v2 = iconst.i32 8\n    v3 = isub v9, v2\n",
        ),
        (
            "plus eight",
            "    v2 = iconst.i32 8\n    v3 = iadd v9, v2\n",
        ),
        ("plus zero", "    v2 = iconst.i32 0\n    v3 = iadd v9, v2\n"),
    ] {
        let load = "    v9 = load.i32 v0\n";
        let (reported, summary) = reported(load, index, 40, 30);
        assert!(reported, "{what}: the wrong merge passed: {summary}");
    }
}

/// A case past 255 of a table indexed by a loaded byte plus a constant: the byte is the case
/// minus the constant, mod 256.
#[test]
fn a_case_of_a_table_indexed_by_a_loaded_byte_plus_a_large_constant_is_reached() {
    let load = "    v9 = uload8.i32 v0\n";
    let index = "    v2 = iconst.i32 250\n    v3 = iadd v9, v2\n";
    let (reported, summary) = reported(load, index, 300, 290);
    assert!(reported, "the wrong merge passed: {summary}");
}

/// Right merges of copies of the functions above, called by a third: pins on both sides, no
/// mismatch, in every mode.
#[test]
fn right_merges_of_tables_indexed_by_loaded_words_pass() {
    for mode in [Mode::Safe, Mode::Thunks, Mode::Aliases] {
        for (load, len, case) in [
            ("    v9 = load.i32 v0\n", 40, 30),
            ("    v9 = uload8.i32 v0\n", 1, 0),
            ("    v9 = sload16.i32 v0\n", 3, 2),
        ] {
            let index = "    v2 = iconst.i32 1\n    v3 = isub v9, v2\n";
            let body = table_body(load, index, len, case, 6);
            let module = format!(
                "function %f(i64) -> i64 {{\n{body}\n}}\n\nfunction %g(i64) -> i64 {{\n{body}\n}}\n\n\
                 function %h(i64) -> i64 {{\n    fn0 = %g(i64) -> i64\n    fn1 = %f(i64) -> i64\n\
                 block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = call fn1(v0)\n    \
                 v3 = iadd v1, v2\n    return v3\n}}\n"
            );
            let (ok, summary, merged) = real_merge_passes(&module, mode);
            assert_eq!(merged, 1, "{mode:?}: {summary}");
            assert!(
                ok,
                "{mode:?} {load}: the right merge was reported: {summary}"
            );
        }
    }
}

/// The planted merge of a `br_table` body behind a loaded tag compared with `tag` (the table's
/// index the word after the tag, minus one; entry `case` of `len` tells `%f` and `%g` apart),
/// checked with at most `max_runs` runs: whether it is reported, with the summary.
fn behind_a_tag(tag: i64, len: usize, case: usize, max_runs: usize) -> (bool, String) {
    let load = format!(
        "    v7 = load.i32 v0\n    v71 = iconst.i32 {tag}\n    v6 = icmp eq v7, v71\n    \
         brif v6, block9, block1\nblock9:\n    v9 = load.i32 v0+4\n"
    );
    let index = "    v2 = iconst.i32 1\n    v3 = isub v9, v2\n";
    let f = table_body(&load, index, len, case, 6);
    let g = table_body(&load, index, len, case, 7);
    let module = |g: &str| {
        format!("function %f(i64) -> i64 {{\n{f}\n}}\n\nfunction %g(i64) -> i64 {{\n{g}\n}}\n")
    };
    let original = read(&module(&g));
    let (report, _) = merged(&original, Mode::Aliases);
    assert_eq!(report.merged, 0, "the two bodies differ: nothing merges");
    let options = VerifyOptions {
        max_runs: Some(max_runs),
        ..VerifyOptions::default()
    };
    let checked = verify_merge(&original, &read(&module(&f)), &report, &options);
    (!checked.is_ok(), checked.summary())
}

/// `if (p->kind == 50) switch (p->op - 1) { ... case 30: ... }`: the tag is pinned to 50 (the
/// loaded-word rule for comparisons), and the one run that reaches the table with its word
/// unpinned queues pins for its cases, one tuple per case, into a queue of at most 64
/// (`QUEUED`) already holding the tag's neighbours and tuples steering the pointer towards
/// each case (a pointer of 0 or 1 is near any small index): the cases that did not fit were
/// dropped, and no later run queued them again (the table's word pinned is no load logged),
/// so case 30 of 40 was never reached, not in 4,000 runs. Now a table whose index is a loaded
/// word is not steered by arguments, and a run with the word pinned re-queues the cases still
/// missed (a pinned word counts as loaded for the table).
#[test]
fn a_case_of_a_table_behind_a_pinned_tag_is_reached() {
    let (reported, summary) = behind_a_tag(50, 40, 3, 256);
    assert!(reported, "control, case 3: {summary}");
    for max_runs in [4_000, 256] {
        let (reported, summary) = behind_a_tag(50, 40, 30, max_runs);
        assert!(
            reported,
            "max_runs {max_runs}: the wrong merge passed: {summary}"
        );
    }
}

/// As above with a tag of 3, which hashed memory reads by itself in about one run in 17 of
/// those that reach memory: the run that reads it reaches the table, but the queue is full of
/// the tag comparison's neighbours by then (one case fits), and each guided tuple it queues
/// pins only the table's word and runs on another draw of hashed memory (the seed is the
/// run's), where the tag is mostly not 3. Tuples that run on the memory of the run they were
/// made from, with a queue of their own for pinned words, reported it, but cost the corpus's
/// mutation check 5 of 119 mutants it reported (the argument-steered tuples lost half their
/// turns), so they were not kept.
#[test]
#[ignore = "defect: a table behind a tag hashed memory read by chance is not reached (the queue is full of the tag's neighbours; the guided runs draw memory anew)"]
fn a_case_of_a_table_behind_a_tag_hashed_memory_reads_is_reached() {
    for max_runs in [4_000, 256] {
        let (reported, summary) = behind_a_tag(3, 40, 30, max_runs);
        assert!(
            reported,
            "max_runs {max_runs}: the wrong merge passed: {summary}"
        );
    }
}

/// One table of 60 entries on a loaded word minus one, case 50 told apart: steered one case a
/// guided run, in order, about four runs a case while the steered pointers took every other
/// guided turn, it needed 384 runs and the default most is 256 (4 x 64). With the loaded
/// word's tuples in a queue of their own it is reached within the default. Tables of this size
/// are common where this rule came from (Wasm's `br_table` dispatch).
#[test]
fn a_late_case_of_a_sixty_entry_table_on_a_loaded_word_is_reached_with_default_options() {
    let load = "    v9 = load.i32 v0\n";
    let index = "    v2 = iconst.i32 1\n    v3 = isub v9, v2\n";
    let (reported, summary) = reported(load, index, 60, 50);
    assert!(reported, "the wrong merge passed: {summary}");
}
