//! The library's errors: one type, [`Error`], for every step of the pipeline, each variant the
//! step's own typed error.

#[cfg(feature = "object")]
use crate::emit::object::ObjectError;
use crate::module::ModuleError;
#[cfg(feature = "pipeline")]
use crate::output::OutputError;
#[cfg(feature = "reader")]
use crate::read::InputError;

/// An error of any step of the pipeline. Each message names the file and line of bad input, or
/// the function that Cranelift refused; none of them is a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading: the input is not valid CLIF, or its directives are wrong.
    #[cfg(feature = "reader")]
    #[error(transparent)]
    Input(#[from] InputError),
    /// Building a module by hand (not through the reader).
    #[error(transparent)]
    Module(#[from] ModuleError),
    /// Compiling or writing the object.
    #[cfg(feature = "object")]
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// Writing outputs.
    #[cfg(feature = "pipeline")]
    #[error(transparent)]
    Output(#[from] OutputError),
    /// An entry point was given an option it cannot honour (a summary for global merging,
    /// whose shared bodies need symbols that only the object writer makes).
    #[error("{0}")]
    Unsupported(String),
    /// `--verify` found functions that behave differently after merging; the report says which.
    #[cfg(feature = "verify")]
    #[error(
        "--verify: {} runs behave differently after merging; nothing written",
        .0.mismatches.len()
    )]
    VerifyFailed(Box<crate::verify::VerifyReport>),
}

/// A result of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
