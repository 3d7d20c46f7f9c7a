//! Keeps the table "Declaration order and unused declarations, entity by entity" in
//! `src/compare/mod.rs` true: which function-level CLIF entities change the machine code by their
//! declaration order or by an unused declaration, and which count only where used.
//!
//! Each case compiles a base and a variant (`tests/data/entity_layout/`, one function `%f` each,
//! the first line saying how the file differs) at `speed`, without merging or folding, and
//! compares their `.text`: the bytes and the relocations (offset, kind, symbol, addend).
//!
//! The cases record what Cranelift does, not what we chose. If a Cranelift upgrade makes one
//! fail, the comparator must be revisited: a "same" case that now differs means the comparator
//! can call equal two functions that compile to different code; a "different" case that is now
//! the same means it compares more than it needs to. One "different" case is not compared on
//! purpose: block layout order can give other registers, never another behaviour (the table's
//! row says why).

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::read::read_files;
use clif_merge::{Mode, ReadOptions};
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

const X86_64: &str = "x86_64-unknown-linux-gnu";
const AARCH64: &str = "aarch64-unknown-linux-gnu";
const BOTH: &[&str] = &[X86_64, AARCH64];
/// `dynamic_stack_addr` has no x86_64 lowering in Cranelift 0.135.
const AARCH64_ONLY: &[&str] = &[AARCH64];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    StackSlots,
    DynamicStackSlots,
    GlobalValues,
    FunctionsAndSignatures,
    Constants,
    AliasRegions,
    BlockLayout,
    ValueNumbers,
}

struct Case {
    group: Group,
    base: &'static str,
    variant: &'static str,
    targets: &'static [&'static str],
    expect_same: bool,
    why: &'static str,
}

const fn case(
    group: Group,
    base: &'static str,
    variant: &'static str,
    targets: &'static [&'static str],
    expect_same: bool,
    why: &'static str,
) -> Case {
    Case {
        group,
        base,
        variant,
        targets,
        expect_same,
        why,
    }
}

use Group::*;
const SAME: bool = true;
const DIFFERENT: bool = false;

#[rustfmt::skip]
const CASES: &[Case] = &[
    case(StackSlots, "ss_base", "ss_order", BOTH, DIFFERENT,
        "slots are laid out in declaration order, so the order changes their offsets"),
    case(StackSlots, "ss_base", "ss_unused_last", BOTH, DIFFERENT,
        "an unused slot still takes frame space"),
    case(StackSlots, "ss_base", "ss_unused_first", BOTH, DIFFERENT,
        "an unused slot takes frame space and, declared first, shifts the other slots"),
    case(StackSlots, "ss_padding_base", "ss_padding_order", BOTH, DIFFERENT,
        "with alignment padding the order changes the frame size (48 vs 32 bytes)"),

    case(DynamicStackSlots, "dss_base", "dss_order", AARCH64_ONLY, DIFFERENT,
        "dynamic slots are part of the frame, laid out in declaration order"),
    case(DynamicStackSlots, "dss_base", "dss_unused", AARCH64_ONLY, DIFFERENT,
        "an unused dynamic slot still takes frame space"),
    case(DynamicStackSlots, "dss_base", "dss_dt_order", AARCH64_ONLY, SAME,
        "dynamic types count only through the slots that use them"),
    case(DynamicStackSlots, "dss_base", "dss_dt_unused", AARCH64_ONLY, SAME,
        "an unused dynamic type is not emitted"),

    case(GlobalValues, "gv_load_base", "gv_load_order", BOTH, SAME,
        "global values are expanded where used, by definition"),
    case(GlobalValues, "gv_load_base", "gv_load_unused", BOTH, SAME,
        "an unused global value emits no code"),
    case(GlobalValues, "gv_symbol_base", "gv_symbol_order", BOTH, SAME,
        "symbol global values are relocated where used"),
    case(GlobalValues, "gv_symbol_base", "gv_symbol_unused_first", BOTH, SAME,
        "an unused symbol emits no code and, declared first, shifts nothing"),

    case(FunctionsAndSignatures, "fn_base", "fn_order", BOTH, SAME,
        "calls and func_addr are relocated by name, not by fnN"),
    case(FunctionsAndSignatures, "fn_base", "fn_sig_order", BOTH, SAME,
        "a signature counts by its contents where used, not by sigN"),
    case(FunctionsAndSignatures, "fn_base", "fn_unused", BOTH, SAME,
        "an unused external function emits no code"),
    case(FunctionsAndSignatures, "fn_base", "fn_unused_first", BOTH, SAME,
        "an unused function and signature declared first shift nothing"),
    case(FunctionsAndSignatures, "fn_base", "fn_sig_unused", BOTH, SAME,
        "an unused signature leaves no trace"),

    case(Constants, "const_base", "const_order", BOTH, SAME,
        "the constant pool follows use order, not declaration order"),
    case(Constants, "const_base", "const_unused", BOTH, SAME,
        "an unused constant is not emitted"),
    case(Constants, "const_base", "const_unused_first", BOTH, SAME,
        "an unused constant declared first shifts nothing"),

    case(AliasRegions, "region_base", "region_order", BOTH, SAME,
        "regions count by the ids of the accesses, not by regionN"),
    case(AliasRegions, "region_base", "region_unused", BOTH, SAME,
        "an unused region changes no alias analysis"),
    case(AliasRegions, "region_base", "region_unused_first", BOTH, SAME,
        "an unused region declared first shifts nothing"),
    case(AliasRegions, "region_base", "region_none", BOTH, DIFFERENT,
        "control: the base's regions are used (they remove a load), so the cases above test something"),

    case(BlockLayout, "layout_diamond_base", "layout_diamond_swap", BOTH, SAME,
        "blocks are lowered in CFG reverse postorder, not in text order"),
    case(BlockLayout, "layout_diamond_base", "layout_diamond_join_first", BOTH, SAME,
        "blocks are lowered in CFG reverse postorder, not in text order"),
    case(BlockLayout, "layout_loop_base", "layout_loop_reversed", BOTH, SAME,
        "blocks are lowered in CFG reverse postorder, not in text order"),
    case(BlockLayout, "layout_loop_base", "layout_loop_shuffled", BOTH, SAME,
        "blocks are lowered in CFG reverse postorder, not in text order"),
    case(BlockLayout, "layout_cold_base", "layout_cold_last", BOTH, SAME,
        "cold blocks go to the end whatever their text position"),
    case(BlockLayout, "layout_loads_base", "layout_loads_swap", BOTH, DIFFERENT,
        "other registers only: behaviour is the same, and layout order is left out on purpose"),

    case(ValueNumbers, "layout_diamond_base", "numbering_diamond_shift", BOTH, SAME,
        "value numbers are names only"),
    case(ValueNumbers, "layout_diamond_base", "numbering_diamond_perm", BOTH, SAME,
        "value numbers are names only"),
    case(ValueNumbers, "layout_loop_base", "numbering_loop_perm", BOTH, SAME,
        "value numbers are names only, also for block parameters"),
    case(ValueNumbers, "ss_base", "numbering_slots_perm", BOTH, SAME,
        "value numbers are names only, also with stack slots"),
    case(ValueNumbers, "numbering_spills_base", "numbering_spills_reversed", BOTH, SAME,
        "register allocation does not depend on value numbers, even with spills"),
];

/// Compiling swaps the process-wide panic hook (`src/guard.rs`); run the tests one at a time so
/// that a failing assertion is not silenced by another test's compile.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/entity_layout")
}

/// What the linker sees of `%f`: the `.text` bytes and its relocations.
#[derive(PartialEq, Eq)]
struct Code {
    text: Vec<u8>,
    /// (offset, kind, symbol, addend)
    relocs: Vec<(u64, String, String, i64)>,
}

fn compile(name: &str, triple: &str) -> Code {
    let path = data_dir().join(format!("{name}.clif"));
    let module = read_files(std::slice::from_ref(&path), ReadOptions::default())
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let options = ObjectOptions {
        target: parse_target(triple).expect("a supported target"),
        isa: Default::default(),
        opt_level: OptLevel::Speed,
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: false,
    };
    let out = write_object(&module, 0, &options)
        .unwrap_or_else(|e| panic!("cannot compile {} for {triple}: {e:#}", path.display()));
    let file = object::File::parse(&*out.bytes).expect("a readable object");
    let text = file.section_by_name(".text").expect("a .text section");
    let relocs = text
        .relocations()
        .map(|(offset, r)| {
            let symbol = match r.target() {
                RelocationTarget::Symbol(i) => file
                    .symbol_by_index(i)
                    .and_then(|s| s.name().map(str::to_owned))
                    .unwrap_or_else(|e| format!("<bad symbol: {e}>")),
                other => format!("{other:?}"),
            };
            (offset, format!("{:?}", r.flags()), symbol, r.addend())
        })
        .collect();
    Code {
        text: text.data().expect(".text data").to_vec(),
        relocs,
    }
}

/// How two compilations differ, for the failure message.
fn difference(a: &Code, b: &Code) -> String {
    let mut parts = Vec::new();
    if a.text != b.text {
        let first = a.text.iter().zip(&b.text).position(|(x, y)| x != y);
        parts.push(format!(
            "text differs ({} vs {} bytes, first at {})",
            a.text.len(),
            b.text.len(),
            first.map_or("the end of the shorter".to_string(), |i| format!(
                "byte {i}"
            ))
        ));
    }
    if a.relocs != b.relocs {
        parts.push(format!(
            "relocations differ ({:?} vs {:?})",
            a.relocs, b.relocs
        ));
    }
    if parts.is_empty() {
        "text and relocations are identical".to_string()
    } else {
        parts.join("; ")
    }
}

fn check(group: Group) {
    let _serial = serial();
    let cases: Vec<&Case> = CASES.iter().filter(|c| c.group == group).collect();
    assert!(!cases.is_empty(), "no cases for {group:?}");
    let mut failures = Vec::new();
    for case in cases {
        for &triple in case.targets {
            let base = compile(case.base, triple);
            let variant = compile(case.variant, triple);
            if (base == variant) != case.expect_same {
                failures.push(format!(
                    "{}.clif vs {}.clif on {triple}: expected {}, but {}\n    \
                     expected because {}",
                    case.base,
                    case.variant,
                    if case.expect_same {
                        "the same code"
                    } else {
                        "different code"
                    },
                    difference(&base, &variant),
                    case.why,
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{group:?}: Cranelift no longer behaves as the table in src/compare/mod.rs says; \
         revisit the comparator.\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn stack_slots() {
    check(StackSlots);
}

#[test]
fn dynamic_stack_slots() {
    check(DynamicStackSlots);
}

#[test]
fn global_values() {
    check(GlobalValues);
}

#[test]
fn functions_and_signatures() {
    check(FunctionsAndSignatures);
}

#[test]
fn constants() {
    check(Constants);
}

#[test]
fn alias_regions() {
    check(AliasRegions);
}

#[test]
fn block_layout() {
    check(BlockLayout);
}

#[test]
fn value_numbers() {
    check(ValueNumbers);
}

/// A data file the table forgets would be a case that silently stopped running.
#[test]
fn every_data_file_is_in_the_table() {
    let _serial = serial();
    let named: BTreeSet<&str> = CASES.iter().flat_map(|c| [c.base, c.variant]).collect();
    for entry in std::fs::read_dir(data_dir()).expect("the data folder") {
        let path = entry.expect("a directory entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        assert!(
            named.contains(stem),
            "{} is in no case of CASES",
            path.display()
        );
    }
}
