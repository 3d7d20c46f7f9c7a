//! What can go wrong while writing an object.

use crate::module::ModuleFunction;

/// An error while compiling the module or writing its object.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The target is not one of [`super::supported::SUPPORTED_TARGETS`].
    #[error("unsupported target `{0}`; supported targets: {targets}", targets = super::supported::SUPPORTED_TARGETS.join(", "))]
    UnsupportedTarget(String),
    /// The target triple does not parse.
    #[error("{0}")]
    BadTarget(String),
    /// No target was given and the host is not a supported one.
    #[error("the host {0} is not a supported target; pass --target (one of {targets})", targets = super::supported::SUPPORTED_TARGETS.join(", "))]
    HostNotSupported(String),
    /// Cranelift refused the target or a flag.
    #[error("{0}")]
    Isa(String),
    /// Cranelift could not compile a function (an error, or a panic it was turned from).
    #[error("cannot compile {function}: {message}")]
    Compile {
        /// The function, with its file and line when known.
        function: String,
        /// What Cranelift said.
        message: String,
    },
    /// cranelift-module refused a declaration.
    #[error("cannot declare {name}")]
    Declare {
        /// The function's name, as in CLIF.
        name: String,
        /// Why.
        #[source]
        source: Box<cranelift_module::ModuleError>,
    },
    /// cranelift-module refused a definition.
    #[error(transparent)]
    Define(Box<cranelift_module::ModuleError>),
    /// An alias names a `linkonce` function (the reader refuses one; a module built through
    /// the library may hold one): the linker may keep another unit's copy of the function and
    /// drop this one, and the alias with it.
    #[error(
        "alias {alias} names {target}, whose linkage is linkonce: the linker may keep another \
         unit's copy of {target} and drop this one, and the alias with it"
    )]
    AliasOfLinkOnce {
        /// The alias, as in CLIF.
        alias: String,
        /// The function it names, as in CLIF.
        target: String,
    },
    /// The object could not be written, or read back for the address-significance table.
    #[error("{0}")]
    Write(String),
}

impl From<cranelift_module::ModuleError> for ObjectError {
    fn from(e: cranelift_module::ModuleError) -> ObjectError {
        ObjectError::Define(Box::new(e))
    }
}

impl ObjectError {
    /// A compile error about `mf`, named with its file and line when known.
    pub(super) fn compile(mf: &ModuleFunction, message: String) -> ObjectError {
        let function = match &mf.origin {
            Some(o) => format!("{} ({}:{})", mf.name, o.file.display(), o.line),
            None => mf.name.to_string(),
        };
        ObjectError::Compile { function, message }
    }

    /// An error of the object crate, while writing or reading back.
    pub(crate) fn write(e: impl std::fmt::Display) -> ObjectError {
        ObjectError::Write(e.to_string())
    }
}
