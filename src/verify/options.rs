//! [`VerifyOptions`]: how much `--verify` runs.

/// How much to run.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Argument tuples per function.
    pub runs: usize,
    /// Seed of the pseudo-random arguments.
    pub seed: u64,
    /// Instructions one run may execute (on each side).
    pub fuel: u64,
    /// A function's remaining runs are not done once this many of its runs were inconclusive
    /// (they are costly). After the first two, its arguments are small numbers only, which
    /// more often make loops and recursion end.
    pub max_inconclusive: usize,
    /// Calls that may be in progress at once.
    pub max_depth: usize,
    /// Bytes of stack slots that may be live at once.
    pub max_stack_bytes: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            runs: 64,
            seed: 0x5eed_c11f,
            fuel: 50_000,
            max_inconclusive: 6,
            max_depth: 2_000,
            max_stack_bytes: 16 << 20,
        }
    }
}
