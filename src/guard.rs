//! Turning a panic inside Cranelift into an error. Cranelift's reader, verifier, interpreter and
//! code generator assume well-formed input in places and panic otherwise; for a user that is an
//! error about their input, not a crash of the tool.
//!
//! The panic hook is the process's, not the library's: it is never changed here (that would
//! race with other threads and replace an embedder's hook). Instead, this thread is marked as
//! inside a caught region, so that a hook can stay quiet for such panics (see
//! [`panic_is_caught`]).

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    /// Set while this thread runs code whose panics are caught and turned into errors.
    static CAUGHT: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is running code inside clif_merge whose panics the library
/// catches and turns into errors (a Cranelift panic on hostile input, an instruction the
/// interpreter cannot run). Such a panic is reported to the caller as an error or an
/// unsupported run, so a program's panic hook may consult this to stay quiet for it; the
/// library itself never touches the panic hook.
///
/// ```
/// let default = std::panic::take_hook();
/// std::panic::set_hook(Box::new(move |info| {
///     if !clif_merge::panic_is_caught() {
///         default(info);
///     }
/// }));
/// ```
pub fn panic_is_caught() -> bool {
    CAUGHT.with(Cell::get)
}

/// Runs `f` with this thread marked as inside a caught region; a panic becomes `Err` with its
/// payload. (Reading, compiling and `--verify` use these; the merge itself does not.)
#[cfg_attr(
    not(any(feature = "reader", feature = "object", feature = "verify")),
    allow(dead_code)
)]
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Box<dyn Any + Send>> {
    // Restoring the previous mark (not clearing it) keeps an enclosing region marked.
    let was = CAUGHT.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    CAUGHT.with(|c| c.set(was));
    result
}

/// Runs `f`; a panic becomes `Err` with its message.
#[cfg_attr(
    not(any(feature = "reader", feature = "object", feature = "verify")),
    allow(dead_code)
)]
pub(crate) fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch(f).map_err(|panic| panic_message(&*panic).unwrap_or_else(|| "a panic".to_string()))
}

/// The message a panic was raised with, when it is text.
#[cfg_attr(
    not(any(feature = "reader", feature = "object", feature = "verify")),
    allow(dead_code)
)]
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> Option<String> {
    if let Some(s) = panic.downcast_ref::<&str>() {
        Some((*s).to_string())
    } else {
        panic.downcast_ref::<String>().cloned()
    }
}
