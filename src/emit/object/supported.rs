//! The targets objects can be written for, and the short names some of them go by.

/// The targets objects can be written for.
pub const SUPPORTED_TARGETS: &[&str] = &[
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// The short target names Cranelift's `isa::lookup_by_name` takes, as `(name, triple)`: each
/// stands for its Linux triple, the one a bare architecture most often means.
pub const TARGET_SHORT_NAMES: &[(&str, &str)] = &[
    ("x86_64", "x86_64-unknown-linux-gnu"),
    ("aarch64", "aarch64-unknown-linux-gnu"),
    ("arm64", "aarch64-unknown-linux-gnu"),
];
