//! `--verify`'s limits on runs that do not end. A run that comes back to a state it was in never
//! ends: it is stopped there, out of fuel (`src/verify/state/cycle.rs`). A run whose state only
//! seems to repeat — it changes where the comparison must look: registers, memory, the stack,
//! the pinned register, the calls not run — runs on to its end. A run first takes a multiple of the
//! longest run of its function that ended, at least a 32nd of the fuel, and the whole fuel only
//! when it ends on no fill, until one such run did not end in it (`short_fuel` in
//! `src/verify/mod.rs`).

use clif_merge::verify::{Observed, Outcome, Run, Trap, VerifyOptions, run_function, verify_merge};
use clif_merge::{ClifModule, FuncName, Mode, ReadOptions, merge_module, read_module_text};
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::TrapCode;
use std::path::Path;
use std::time::Instant;

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap()
}

/// Runs `%name` of the module `text` on `args` with `fuel`, as `--verify` runs a side.
fn run(text: &str, name: &str, args: &[DataValue], fuel: u64) -> Run {
    let options = VerifyOptions {
        fuel,
        ..VerifyOptions::default()
    };
    let name = FuncName::parse(name).unwrap();
    run_function(&read(text), &name, args, &options)
}

/// `%bump(p)`: adds one to the counter `p` points to (in memory or on the stack), and traps
/// (`user1`) when it reaches 3000. Each call's frame is gone when the loop calling it is back
/// at its head: only the counter tells one pass from the next.
const BUMP: &str = "
function %bump(i64) {
block0(v0: i64):
    v1 = load.i64 notrap aligned v0
    v2 = iconst.i64 1
    v3 = iadd v1, v2
    store notrap aligned v3, v0
    v4 = iconst.i64 3000
    v5 = icmp uge v3, v4
    trapnz v5, user1
    return
}
";

fn traps_user1(run: &Run) -> bool {
    matches!(run.outcome, Outcome::Trapped(Trap::Code(code)) if code == TrapCode::user(1).unwrap())
}

/// A loop whose registers repeat but for a counter ends (3,000 passes, 9,000 instructions).
#[test]
fn a_loop_counting_in_a_register_ends() {
    let text = "
function %count() -> i64 {
block0:
    v0 = iconst.i64 3000
    v9 = iconst.i64 -1
    jump block1(v0)
block1(v1: i64):
    v2 = iadd v1, v9
    brif v2, block1(v2), block2
block2:
    return v2
}
";
    let run = run(text, "%count", &[], 50_000);
    assert!(
        matches!(&run.outcome, Outcome::Returned(v) if v == &[Observed::Value(DataValue::I64(0))]),
        "{}",
        run.outcome
    );
}

/// A loop that calls `%bump` on a counter in memory: its registers and stack are the same at
/// every pass, its memory is not. It ends with `%bump`'s trap, not out of fuel.
#[test]
fn a_loop_counting_in_memory_ends() {
    let text = format!(
        "{BUMP}
function %loop() {{
    fn0 = %bump(i64)
block0:
    v0 = iconst.i64 0x1000
    v1 = iconst.i64 0
    store notrap aligned v1, v0
    jump block1
block1:
    call fn0(v0)
    jump block1
}}
"
    );
    let run = run(&text, "%loop", &[], 50_000);
    assert!(traps_user1(&run), "{}", run.outcome);
}

/// The same counter in a stack slot of the loop's frame: only the stack's bytes change.
#[test]
fn a_loop_counting_on_the_stack_ends() {
    let text = format!(
        "{BUMP}
function %loop() {{
    ss0 = explicit_slot 8
    fn0 = %bump(i64)
block0:
    v0 = stack_addr.i64 ss0
    v1 = iconst.i64 0
    store notrap aligned v1, v0
    jump block1
block1:
    call fn0(v0)
    jump block1
}}
"
    );
    let run = run(&text, "%loop", &[], 50_000);
    assert!(traps_user1(&run), "{}", run.outcome);
}

/// The same counter in the pinned register.
#[test]
fn a_loop_counting_in_the_pinned_register_ends() {
    let text = "
set enable_pinned_reg
function %bump_pinned() {
block0:
    v0 = get_pinned_reg.i64
    v3 = iconst.i64 1
    v1 = iadd v0, v3
    set_pinned_reg v1
    v4 = iconst.i64 3000
    v2 = icmp uge v1, v4
    trapnz v2, user1
    return
}

function %loop() {
    fn0 = %bump_pinned()
block0:
    v0 = iconst.i64 0
    set_pinned_reg v0
    jump block1
block1:
    call fn0()
    jump block1
}
";
    let run = run(text, "%loop", &[], 50_000);
    assert!(traps_user1(&run), "{}", run.outcome);
}

/// A loop calling an import with the same arguments: the import answers the same each time,
/// but each call is one more call (and may write memory): the loop runs to the end of its fuel,
/// making every call, and is not cut where its registers first repeat.
#[test]
fn a_loop_calling_an_import_runs_to_the_end_of_its_fuel() {
    let text = "
function %loop() {
    fn0 = %ext(i64) -> i64
block0:
    v0 = iconst.i64 7
    jump block1
block1:
    v1 = call fn0(v0)
    jump block1
}
";
    let run = run(text, "%loop", &[], 50_000);
    assert!(matches!(run.outcome, Outcome::OutOfFuel), "{}", run.outcome);
    assert!(
        run.imports.len() >= 20_000,
        "the loop was cut after {} calls",
        run.imports.len()
    );
}

/// A loop that chases pointers through memory nothing stored to comes back to a pointer it
/// followed before, and from there does the same forever: it is stopped there, out of fuel. With
/// a hundred million instructions of fuel it takes less time than a loop that never comes back
/// takes to run a million.
#[test]
fn a_loop_that_comes_back_to_the_same_state_is_stopped_early() {
    let chase = "
function %chase(i64) -> i64 {
block0(v0: i64):
    v8 = iconst.i64 0xff8
    v9 = iconst.i64 0xfff
    v1 = band v0, v8
    jump block1(v1)
block1(v2: i64):
    v3 = load.i64 notrap aligned v2
    v4 = band v3, v8
    v5 = icmp eq v4, v9
    brif v5, block2, block1(v4)
block2:
    return v4
}
";
    let count = "
function %count_on() {
block0:
    v0 = iconst.i64 0
    v1 = iconst.i64 1
    jump block1(v0)
block1(v2: i64):
    v3 = iadd v2, v1
    jump block1(v3)
}
";
    let start = Instant::now();
    let endless = run(count, "%count_on", &[], 1_000_000);
    let a_million = start.elapsed();
    assert!(
        matches!(endless.outcome, Outcome::OutOfFuel),
        "{}",
        endless.outcome
    );
    let start = Instant::now();
    let cycle = run(chase, "%chase", &[DataValue::I64(8)], 100_000_000);
    let took = start.elapsed();
    assert!(
        matches!(cycle.outcome, Outcome::OutOfFuel),
        "{}",
        cycle.outcome
    );
    assert!(
        took < a_million,
        "a run in a cycle ran on for {took:?} (a million instructions: {a_million:?})"
    );
}

/// `%g` returns at once on the original side; the module planted as its merge loops forever
/// in a cycle when the argument is 0: a mismatch (the merged side runs out of fuel where the
/// original ended), found at once.
#[test]
fn a_merged_side_in_a_cycle_where_the_original_ends_is_a_mismatch() {
    let f = "block0(v0: i64):\n    v2 = iconst.i64 1\n    v1 = iadd v0, v2\n    return v1";
    let g = "block0(v0: i64):\n    v2 = iconst.i64 2\n    v1 = iadd v0, v2\n    return v1";
    let looping = "block0(v0: i64):\n    brif v0, block2, block1\nblock1:\n    jump block1\nblock2:\n    v2 = iconst.i64 2\n    v1 = iadd v0, v2\n    return v1";
    let module = |g: &str| {
        format!("function %f(i64) -> i64 {{\n{f}\n}}\n\nfunction %g(i64) -> i64 {{\n{g}\n}}\n")
    };
    let original = read(&module(g));
    let mut merged = original.clone();
    let report = merge_module(&mut merged, Mode::Safe).0;
    assert_eq!(report.merged, 0);
    let checked = verify_merge(
        &original,
        &read(&module(looping)),
        &report,
        &VerifyOptions::default(),
    );
    let found = (checked.mismatches.iter())
        .any(|m| matches!(m.merged.outcome, Outcome::OutOfFuel) && m.args == [DataValue::I64(0)]);
    assert!(found, "{}", checked.summary());
}

/// `%f` loops forever (a counter that never comes back) when its argument is -1, and takes
/// 4,000 passes (about 8,000 instructions) otherwise. Its first runs (0, then 1) end; the third
/// (-1) is inconclusive; the runs after it take four times the longest run that ended, so they
/// still end: all 64 runs are run, and only those on -1 are inconclusive.
#[test]
fn runs_after_an_inconclusive_one_take_a_multiple_of_the_longest_that_ended() {
    let checked = verify_f(&long_or_endless(-1));
    assert_eq!(checked.runs, 64, "{}", checked.summary());
    assert!(
        (1..=5).contains(&checked.inconclusive),
        "{}",
        checked.summary()
    );
    assert_eq!(checked.partly_checked, 1, "{}", checked.summary());
}

/// The same function when its first run (0) never ends: no run of it ended yet, so the runs
/// after it take an eighth of the fuel (6,250 instructions), fewer than its runs that end need.
/// The first of them that does not end in it is run again in the whole fuel, ends there, and
/// raises the fuel of the later runs to four times its length: all 64 runs are run, only those
/// on 0 are inconclusive. (Before, every later run was inconclusive and the function was cut
/// short after six, never checked.) Random arguments are 0 about one time in 16 (an edge value
/// or a small number): the function is not cut short here, so that those do not end the check.
#[test]
fn runs_after_a_first_inconclusive_one_that_need_more_fuel_are_run_in_the_whole_fuel() {
    let options = VerifyOptions {
        max_inconclusive: 64,
        ..VerifyOptions::default()
    };
    let checked = verify_f_with(&long_or_endless(0), options);
    assert_eq!(checked.runs, 64, "{}", checked.summary());
    assert!(
        (1..=8).contains(&checked.inconclusive),
        "{}",
        checked.summary()
    );
    assert_eq!(checked.cut_short, 0, "{}", checked.summary());
    assert_eq!(checked.partly_checked, 1, "{}", checked.summary());
}

/// `%f`: loops forever when its argument is `endless`, else 4,000 times; a `nop` of its own
/// (`v9`) tells the merged module's `%f` apart, so that it is run rather than taken as unchanged.
fn long_or_endless(endless: i64) -> String {
    format!(
        "
function %f(i64) -> i64 {{
block0(v0: i64):
    v7 = iconst.i64 {endless}
    v1 = icmp eq v0, v7
    v2 = iconst.i64 4000
    v3 = iconst.i64 0
    v4 = select v1, v3, v2
    v8 = iconst.i64 -1
    NOP
    jump block1(v4)
block1(v5: i64):
    v6 = iadd v5, v8
    brif v6, block1(v6), block2
block2:
    return v6
}}
"
    )
}

/// `verify_merge` of `text` (its `NOP` left out) against itself with the `NOP` an unused
/// constant, checking `%f` only.
fn verify_f(text: &str) -> clif_merge::verify::VerifyReport {
    verify_f_with(text, VerifyOptions::default())
}

/// [`verify_f`] with `options`.
fn verify_f_with(text: &str, options: VerifyOptions) -> clif_merge::verify::VerifyReport {
    let original = read(&text.replace("    NOP\n", ""));
    let merged = read(&text.replace("NOP", "v9 = iconst.i64 9"));
    let mut copy = original.clone();
    let report = merge_module(&mut copy, Mode::Safe).0;
    let options = VerifyOptions {
        only: Some([FuncName::parse("%f").unwrap()].into_iter().collect()),
        ..options
    };
    verify_merge(&original, &merged, &report, &options)
}
