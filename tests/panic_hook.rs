//! The library never changes the process's panic hook: a panic it catches (here, an instruction
//! cranelift-interpreter does not implement, which `--verify` turns into an unsupported run)
//! reaches the hook the program installed, with `panic_is_caught()` telling the hook that the
//! library will report it. One test in its own binary, since the hook is process-wide.

use clif_merge::verify::{Outcome, VerifyOptions, run_function, verify_merge};
use clif_merge::{FuncName, Mode, ReadOptions, merge_module, panic_is_caught, read_module_text};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Two equal functions the interpreter panics on (`unimplemented!("GetFramePointer")`).
const FRAME_POINTERS: &str = "
function %f() -> i64 system_v {
block0:
    v0 = get_frame_pointer.i64
    return v0
}

function %g() -> i64 system_v {
block0:
    v0 = get_frame_pointer.i64
    return v0
}
";

/// Calls of the test's hook, and how many of them came while the library was catching.
static CALLS: AtomicUsize = AtomicUsize::new(0);
static CAUGHT_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Counts; says what panicked unless the library catches it (a failed assertion is shown).
fn counting_hook(info: &std::panic::PanicHookInfo<'_>) {
    CALLS.fetch_add(1, SeqCst);
    if panic_is_caught() {
        CAUGHT_CALLS.fetch_add(1, SeqCst);
    } else {
        eprintln!("{info}");
    }
}

fn counts() -> (usize, usize) {
    (CALLS.load(SeqCst), CAUGHT_CALLS.load(SeqCst))
}

#[test]
fn caught_panics_reach_the_programs_own_hook_marked_as_caught() {
    std::panic::set_hook(Box::new(counting_hook));
    let path = Path::new("frame_pointers.clif");
    // (The CLIF verifier wants an ISA for `get_frame_pointer`; the interpreter needs none.)
    let options = ReadOptions {
        verify: false,
        ..ReadOptions::default()
    };
    let module = read_module_text(path, FRAME_POINTERS, options).unwrap_or_else(|e| panic!("{e}"));

    let f = FuncName::parse("%f").expect("a name");
    let run = run_function(&module, &f, &[], &VerifyOptions::default());
    assert!(
        matches!(&run.outcome, Outcome::Unsupported(why) if why.contains("GetFramePointer")),
        "{:?}",
        run.outcome
    );
    // The panic went to this test's hook (the library installed none of its own), marked as
    // caught; the mark does not outlive the call.
    assert_eq!(counts(), (1, 1));
    assert!(!panic_is_caught());

    // `%g` becomes an alias of `%f` (a frame reader is never a thunk): its runs are made, on
    // both sides (a module the merge left as it was would run nothing: every function
    // unchanged).
    let mut merged = module.clone();
    let (report, _) = merge_module(&mut merged, Mode::Aliases);
    assert_eq!(report.merged, 1, "{report:?}");
    let checked = verify_merge(&module, &merged, &report, &VerifyOptions::default());
    assert!(checked.is_ok(), "{:?}", checked.mismatches);
    assert!(checked.unsupported > 0, "{}", checked.summary());
    let (calls, caught) = counts();
    assert!(
        calls > 1 && calls == caught,
        "{calls} calls, {caught} caught"
    );

    // A panic outside the library still reaches the hook, not marked.
    let ours = std::panic::catch_unwind(|| panic!("the test's own panic"));
    assert!(ours.is_err());
    assert_eq!(counts(), (calls + 1, caught));

    // And the hook installed now is still the test's: taking it back and calling it counts.
    let hook = std::panic::take_hook();
    let ours = std::panic::catch_unwind(|| panic!("again"));
    assert!(ours.is_err());
    assert_eq!(
        counts(),
        (calls + 1, caught),
        "the default hook is back in place"
    );
    std::panic::set_hook(hook);
    let _ = std::panic::catch_unwind(|| panic!("through the test's hook again"));
    assert_eq!(counts(), (calls + 2, caught));
    let _ = std::panic::take_hook();
}
