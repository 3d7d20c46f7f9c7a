//! hostile12: `--verify`'s memory model (`state.rs`): what is mapped (below 16 MiB, 16 MiB on
//! either side of 2^32, the stack, symbols) and how stack addresses are compared ((slot,
//! offset)), on wrong merges planted by hand (`tests/common/planted.rs`).

#[path = "common/planted.rs"]
mod wrong_merges;

use wrong_merges::planted;

/// `%f(x)`: loads the word at `(x & 0xff) + offset` (an access that may trap) and returns 0.
fn loads_near_zero(offset: i64) -> String {
    format!(
        "block0(v0: i64):
    v1 = iconst.i64 0xff
    v2 = band v0, v1
    v6 = iconst.i64 {offset}
    v3 = iadd v2, v6
    v4 = load.i64 v3
    v5 = iconst.i64 0
    return v5"
    )
}

/// Returns 0.
const RETURNS_ZERO: &str = "block0(v0: i64):\n    v5 = iconst.i64 0\n    return v5";

/// The planted merge gives `%g` (which returns 0) `%f`'s body, which loads 8 bytes at
/// `(x & 0xff) - 8`: where `x & 0xff` is below 8 (0, 1, 2 among the edge values) that is the
/// top of the address space (`0xffff_ffff_ffff_fff8` and up), unmapped in every process, and
/// natively the merged `%g` faults. `faults` takes an access as mapped when its end, wrapped,
/// is below 16 MiB (`end <= MAPPED` with `end = raw + len` wrapping; the window at 2^32 checks
/// `end >= raw`, this one does not): the load does not trap, both sides return 0, and the
/// wrong merge is reported ok. (A fill of `0xFF` bytes read as a pointer and loaded from is
/// mapped the same way.)
#[test]
fn a_load_at_the_top_of_the_address_space_traps() {
    let (reported, summary) = planted("(i64) -> i64", &loads_near_zero(-8), RETURNS_ZERO, "");
    assert!(reported, "{summary}");
}

/// The held neighbour: 16 bytes lower (`0xffff_ffff_ffff_fff0` and up: the end does not wrap)
/// the load traps, and the same wrong merge is found.
#[test]
fn a_load_just_below_the_top_of_the_address_space_traps() {
    let (reported, summary) = planted("(i64) -> i64", &loads_near_zero(-16), RETURNS_ZERO, "");
    assert!(reported, "{summary}");
}

/// `%f(x)`: stores `x` in its slot 0, calls `callee` with that slot's address, then passes the
/// address to the import `%ext`, which reads what the slot holds, and returns 0.
fn passes_its_slot(callee: &str) -> String {
    format!(
        "    ss0 = explicit_slot 8
    fn0 = %{callee}(i64)
    fn1 = %ext(i64)
block0(v0: i64):
    v1 = stack_addr.i64 ss0
    store v0, v1
    call fn0(v1)
    call fn1(v1)
    v2 = iconst.i64 0
    return v2"
    )
}

/// `%into_caller(p)` stores 7 at `p` (the caller's slot); `%into_own(p)` stores 7 in its own
/// slot 0.
const STORERS: &str = "
function %into_caller(i64) {
    ss0 = explicit_slot 8
block0(v0: i64):
    v1 = iconst.i64 7
    store v1, v0
    v2 = stack_addr.i64 ss0
    return
}

function %into_own(i64) {
    ss0 = explicit_slot 8
block0(v0: i64):
    v1 = iconst.i64 7
    v2 = stack_addr.i64 ss0
    store v1, v2
    return
}
";

/// `%f` has its callee write 7 into `%f`'s slot before `%ext` reads it; `%g`'s callee writes 7
/// into its own slot, and `%ext` reads `x`. The planted merge gives `%g` `%f`'s body: natively
/// `%ext` is passed a slot that holds 7, not `x`. A stack address is compared as (slot,
/// offset) with no frame: both stores are `[slot 0 + 0] = 7` and both calls of `%ext` pass
/// `slot 0 + 0`, so the two sides look the same and the merge is reported ok.
#[test]
fn a_store_into_the_callers_slot_differs_from_one_into_the_callees() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &passes_its_slot("into_caller"),
        &passes_its_slot("into_own"),
        STORERS,
    );
    assert!(reported, "{summary}");
}

/// The held neighbour: when the callee stores into a slot of another number (its slot 1), the
/// stores differ and the wrong merge is found.
#[test]
fn a_store_into_the_callers_slot_differs_from_one_into_another_slot_of_the_callee() {
    let other_slot = STORERS
        .replace(
            "function %into_own(i64) {\n    ss0 = explicit_slot 8",
            "function %into_own(i64) {\n    ss0 = explicit_slot 8\n    ss1 = explicit_slot 8",
        )
        .replace(
            "v2 = stack_addr.i64 ss0\n    store v1, v2",
            "v2 = stack_addr.i64 ss1\n    store v1, v2",
        );
    let (reported, summary) = planted(
        "(i64) -> i64",
        &passes_its_slot("into_caller"),
        &passes_its_slot("into_own"),
        &other_slot,
    );
    assert!(reported, "{summary}");
}

/// `%f()`: the word at the data symbol `%symbol`.
fn loads_symbol(symbol: &str) -> String {
    format!(
        "    gv0 = symbol %{symbol}\nblock0:\n    v0 = symbol_value.i64 gv0\n    \
         v1 = load.i64 v0\n    return v1"
    )
}

/// A data symbol's address is `SYMBOLS | (fnv(name) & 0xffff_ffff) << 12`: 32 bits of a hash
/// of its name, and two names whose hashes agree there are one symbol. `%d337081` and
/// `%d523190` agree (`0x4503ed22`, found by a birthday search over 2^16 names; a module of
/// 10,000 data symbols has such a pair about once in a hundred). `%g` loads the other symbol
/// than `%f`; the planted merge gives `%g` `%f`'s body: both sides read one page, the same
/// words, and the merge is reported ok. Natively they are two objects.
#[test]
fn a_merge_that_loads_another_data_symbol_is_found_whatever_their_names() {
    let (reported, summary) = planted(
        "() -> i64",
        &loads_symbol("d337081"),
        &loads_symbol("d523190"),
        "",
    );
    assert!(reported, "{summary}");
}

/// The held neighbour: with names whose hashes differ the same wrong merge is found.
#[test]
fn a_merge_that_loads_another_data_symbol_is_found() {
    let (reported, summary) = planted(
        "() -> i64",
        &loads_symbol("d337081"),
        &loads_symbol("d337082"),
        "",
    );
    assert!(reported, "{summary}");
}

/// `%f(x)`: stores `v1`, as `value` defines it, at 0x1000 and returns 0.
fn stores(value: &str) -> String {
    format!(
        "    ss0 = explicit_slot 8\nblock0(v0: i64):\n{value}\n    v2 = iconst.i64 0x1000\n    \
         store v1, v2\n    v3 = iconst.i64 0\n    return v3"
    )
}

/// The number a stack address of slot 0, offset 0 of the run's first frame was compared as
/// (`0x53 << 56 | 1 << 48`) until stack addresses were compared as places, and what calls not
/// run still hash it as.
const SLOT_0_TAG: &str = "0x5301_0000_0000_0000";

/// `%f` stores the address of its slot 0 at 0x1000 and returns 0; `%g` stores the number a
/// stack address was compared as there: the planted merge (`%g` given `%f`'s body) stores a
/// stack address where the original stored a plain number, which natively differ. hostile12:
/// reported ok while stack addresses were that number; now a place (`Observed::Stack`), which
/// no number equals.
#[test]
fn a_stack_address_differs_from_the_number_it_is_compared_as() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &stores("    v1 = stack_addr.i64 ss0"),
        &stores(&format!("    v1 = iconst.i64 {SLOT_0_TAG}")),
        "",
    );
    assert!(reported, "{summary}");
}

/// The held neighbour: against the number one above (`offset 1` of slot 0) the same wrong merge
/// is found.
#[test]
fn a_stack_address_differs_from_another_number() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &stores("    v1 = stack_addr.i64 ss0"),
        &stores("    v1 = iconst.i64 0x5301_0000_0000_0001"),
        "",
    );
    assert!(reported, "{summary}");
}

/// A stack address keeps its type: `%g` stores the 32-bit address of its slot (4 bytes), `%f`
/// the 64-bit one (8 bytes). Both were the same 64-bit number while stack addresses were
/// numbers (a 32-bit one was widened), so the planted merge (`%g` given `%f`'s body) passed;
/// natively it writes four bytes more.
#[test]
fn a_32_bit_stack_address_stored_differs_from_a_64_bit_one() {
    let (reported, summary) = planted(
        "(i64) -> i64",
        &stores("    v1 = stack_addr.i64 ss0"),
        &stores("    v1 = stack_addr.i32 ss0"),
        "",
    );
    assert!(reported, "{summary}");
}
