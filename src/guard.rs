//! Turning a panic inside Cranelift into an error. Cranelift's reader, verifier and code
//! generator assume well-formed input in places and panic otherwise; for a user that is an error
//! about their input, not a crash of the tool.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`; a panic becomes `Err` with its message. The panic hook is silenced meanwhile, so
/// that the panic is not also printed as a crash.
pub(crate) fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    result.map_err(|panic| {
        if let Some(s) = panic.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = panic.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic".to_string()
        }
    })
}
