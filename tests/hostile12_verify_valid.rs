//! hostile12: `--verify`'s validity check (`valid.rs`) on functions the merge wrote or changed:
//! it runs Cranelift's verifier on every one with the host's ISA and Cranelift's default flags,
//! where reading verifies a function with an ISA only when it uses an instruction that needs
//! one, and then with the file's `set` lines (`read/isa.rs`). Right merges are reported "not
//! valid CLIF after merging" and `clif-merge --verify` exits 1 writing nothing. Found by merging
//! Cranelift's own run tests with `--verify`, every function with a twin: 32-bit addresses
//! (`simd-extractlane-32`, `stack-32`, `stack-addr-32`, `fdemote_32`, ... for `pulley32`: shared
//! bodies, private copies), the pinned register (`pinned-reg`), `get_frame_pointer` (`throw`).

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{Mode, ReadOptions, SimilarOptions, merge_module_with, read_module_text};
use std::path::Path;

/// `%a` and `%b`: store a constant (5 and 6) in a stack slot through a 32-bit address, as code
/// for a 32-bit target does (`stack_addr.i32`), and load it back; `pointer` is the address
/// type.
fn near_twins(pointer: &str) -> String {
    let f = |name: &str, k: i32| {
        format!(
            "function %{name}() -> i32 {{
    ss0 = explicit_slot 8
block0:
    v0 = iconst.i32 {k}
    v1 = stack_addr.{pointer} ss0
    store notrap v0, v1
    v2 = load.i32 notrap v1
    return v2
}}

"
        )
    };
    f("a", 5) + &f("b", 6)
}

/// `near_twins(pointer)` merged with `--similar` (every group taken), and its check's
/// summary and mismatches, with how many functions were merged.
fn checked(pointer: &str) -> (bool, String, usize) {
    let text = near_twins(pointer);
    let original = read_module_text(Path::new("t.clif"), &text, ReadOptions::default())
        .expect("valid CLIF: no instruction needs an ISA, and none is checked against one");
    let mut merged = original.clone();
    let similar = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let (report, _) = merge_module_with(&mut merged, Mode::Aliases, Some(&similar));
    let v = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    let text = (v.mismatches.iter()).fold(v.summary(), |t, m| format!("{t}\n{m}"));
    (v.is_ok(), text, report.merged)
}

/// The shared body of `%a` and `%b` is their IR with the constant a parameter, its stack
/// address as 32 bits as theirs. Reading took both (the verifier without an ISA does not check
/// pointer widths); the validity check verifies the shared body with the host's ISA, whose
/// pointers are 64 bits: `not valid CLIF after merging: ... invalid pointer width (got 32,
/// expected 64)`, a mismatch, and `clif-merge --verify` exits 1 with nothing written, on a
/// right merge. The merged function should be held to the rule the original was read by.
#[test]
fn a_right_similar_merge_of_code_with_32_bit_addresses_is_valid() {
    let (ok, summary, merged) = checked("i32");
    assert!(merged > 0, "{summary}");
    assert!(ok, "{summary}");
}

/// The held neighbour: with 64-bit addresses the same merge passes.
#[test]
fn a_right_similar_merge_of_code_with_64_bit_addresses_is_valid() {
    let (ok, summary, merged) = checked("i64");
    assert!(merged > 0, "{summary}");
    assert!(ok, "{summary}");
}

/// `%a` and `%b`, the same, and `%c`, which calls `%b` and passes its result through the
/// pinned register (`set_pinned_reg`/`get_pinned_reg`: valid only with `enable_pinned_reg`,
/// which the file's `set` line gives); all `local`, so that the merge removes `%b` and
/// redirects `%c`'s call to `%a`. With `pinned`, the pinned register and its `set` line.
fn caller_of_a_removed_twin(pinned: bool) -> String {
    let (set, through) = match pinned {
        true => (
            "set enable_pinned_reg=true\n",
            "    set_pinned_reg v1\n    v2 = get_pinned_reg.i64\n",
        ),
        false => ("", "    v2 = iadd v1, v1\n"),
    };
    let twin = |name: &str| {
        format!(
            "function %{name}(i64) -> i64 {{\nblock0(v0: i64):\n    v1 = iconst.i64 3\n    \
             v2 = imul v0, v1\n    return v2\n}}\n\n"
        )
    };
    format!(
        "{set}\n{}{}function %c(i64) -> i64 {{\n    fn0 = %b(i64) -> i64\nblock0(v0: i64):\n    \
         v1 = call fn0(v0)\n{through}    return v2\n}}\n",
        twin("a"),
        twin("b")
    )
}

/// `caller_of_a_removed_twin(pinned)` read as local functions and merged exactly: its check's
/// summary and mismatches, and how many functions were merged.
fn checked_caller(pinned: bool) -> (bool, String, usize) {
    let options = ReadOptions {
        default_linkage: clif_merge::SymbolLinkage::Local,
        ..ReadOptions::default()
    };
    let text = caller_of_a_removed_twin(pinned);
    let original = read_module_text(Path::new("t.clif"), &text, options)
        .expect("valid CLIF: the file's set line enables the pinned register");
    let mut merged = original.clone();
    let (report, _) = merge_module_with(&mut merged, Mode::Safe, None);
    let v = verify_merge(&original, &merged, &report, &VerifyOptions::default());
    let text = (v.mismatches.iter()).fold(v.summary(), |t, m| format!("{t}\n{m}"));
    (v.is_ok(), text, report.merged)
}

/// `%c`'s call is redirected to `%a`, so the merge changed `%c` and the validity check
/// verifies it: with the host's ISA and Cranelift's default flags, not the file's `set
/// enable_pinned_reg=true` reading applied: `not valid CLIF after merging: ... GetPinnedReg/
/// SetPinnedReg cannot be used without enable_pinned_reg`, on a right merge. The same for
/// `get_frame_pointer` under `set preserve_frame_pointers` (the run tests' `throw.clif`), and
/// for the private copies `--default-linkage preemptible` makes (`pinned-reg.clif`).
#[test]
fn a_right_merge_of_a_caller_using_the_pinned_register_is_valid() {
    let (ok, summary, merged) = checked_caller(true);
    assert_eq!(merged, 1, "{summary}");
    assert!(ok, "{summary}");
}

/// The held neighbour: without the pinned register the same merge passes.
#[test]
fn a_right_merge_of_a_caller_is_valid() {
    let (ok, summary, merged) = checked_caller(false);
    assert_eq!(merged, 1, "{summary}");
    assert!(ok, "{summary}");
}
