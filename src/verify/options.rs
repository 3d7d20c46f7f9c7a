//! [`VerifyOptions`]: how much `--verify` runs.

use super::slack::MergedSlack;
use crate::module::FuncName;
use std::collections::BTreeSet;

/// How much to run.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Argument tuples per function, at least: a function whose runs still take sides of its
    /// decisions that no run took before runs on, past these, up to [`VerifyOptions::max_runs`].
    pub runs: usize,
    /// Argument tuples per function at most (None: four times [`VerifyOptions::runs`]): a
    /// function runs on past `runs`, a quarter of them at a time, while a side of its own
    /// branches, traps or comparisons was taken by no run yet (see `more_runs.rs`). `runs` when
    /// smaller (`Some(0)`: the planned runs only).
    pub max_runs: Option<usize>,
    /// Seed of the pseudo-random arguments.
    pub seed: u64,
    /// Instructions one run may execute (on each side); once a run of a function was
    /// inconclusive, its later runs take less (see [`verify_merge`](super::verify_merge)).
    pub fuel: u64,
    /// A function's remaining runs are not done once this many of its runs were inconclusive
    /// (they are costly). After the first two, its arguments are small numbers only, which
    /// more often make loops and recursion end.
    pub max_inconclusive: usize,
    /// Calls that may be in progress at once.
    pub max_depth: usize,
    /// Bytes of stack slots that may be live at once.
    pub max_stack_bytes: usize,
    /// Only these functions of the original are run (None: all). For checks of one function
    /// of a large module, such as the mutation check over the corpus.
    pub only: Option<BTreeSet<FuncName>>,
    /// Run also the functions the merge left unchanged with all they may call. By default
    /// they are not run: every run of one would be the same on both sides, so they are counted
    /// as [unchanged](super::VerifyReport::unchanged). Run, they count as fully checked when
    /// their runs end, as any other: the figure of what the check can run, with no function
    /// vouched for by that argument.
    pub run_unchanged: bool,
    /// Also compare the arguments of the calls the checked function makes into the module, in
    /// the bits the callee may observe (`module_calls.rs`): where they differ, the callee runs
    /// alone on both and a difference it shows on some memory is a mismatch, though no run of
    /// the function reached it. On by default.
    pub module_calls: bool,
}

impl VerifyOptions {
    /// Argument tuples per function at most ([`VerifyOptions::max_runs`]).
    pub(super) fn most_runs(&self) -> usize {
        self.max_runs
            .unwrap_or(self.runs.saturating_mul(MORE_RUNS_FACTOR))
            .max(self.runs)
    }

    /// The limits of the merged side of a run whose original ended: a merged function may take
    /// a few more instructions, calls and frames (a thunk on the way), not more than this. One
    /// that hits these limits where the original ended does not do the same (a loop that no
    /// longer ends, a recursion that no longer stops): a mismatch. Each call may become a chain
    /// of `slack`'s forwarders (exact thunks, similar thunks passing constants): the depth
    /// grows by that chain's frames; the fuel of a run grows by its instructions for each
    /// instruction the original ran ([`super::slack::MergedSlack::fuel_after`]).
    pub(super) fn for_merged_side(&self, slack: &MergedSlack) -> VerifyOptions {
        VerifyOptions {
            fuel: self.fuel.saturating_mul(4).saturating_add(1_000),
            max_depth: (self.max_depth.saturating_mul(2).saturating_add(2))
                .saturating_mul(slack.frames_per_call),
            max_stack_bytes: self.max_stack_bytes.saturating_mul(2),
            ..self.clone()
        }
    }
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            runs: 64,
            max_runs: None,
            seed: 0x5eed_c11f,
            fuel: 50_000,
            max_inconclusive: 6,
            // A run that recursed 2,000 calls deep allocated (and faulted in) a frame's
            // registers for each, 58 MB on real code, a tenth of `--verify`'s time on dprint
            // (the kernel's); no run of the corpus that ends goes deeper than 132 calls.
            max_depth: 512,
            max_stack_bytes: 16 << 20,
            only: None,
            run_unchanged: false,
            module_calls: true,
        }
    }
}

/// How many times its planned runs a function whose runs still take new sides runs at most
/// ([`VerifyOptions::max_runs`]).
const MORE_RUNS_FACTOR: usize = 4;
