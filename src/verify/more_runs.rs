//! How many runs a function takes: its planned ones, and more while a side of its own decisions
//! is left untaken ([`MoreRuns`]).

use super::guide;
use super::options::VerifyOptions;
use cranelift_codegen::ir::Function;

/// Whether a function runs on: its planned runs ([`VerifyOptions::runs`]), then, a quarter of
/// them at a time, up to [`VerifyOptions::max_runs`] while a side of its own decisions (a
/// branch, a trap, a comparison: `guide::sides_in`) was taken by no run yet. Its blocks no run
/// reached are where a wrong merge hides: on the corpus's mutation check, runs past 64 reached
/// corrupted instructions 64 runs did not. A function whose runs took every side stops at its
/// planned runs, as before.
pub(super) struct MoreRuns {
    planned: usize,
    most: usize,
    step: usize,
    /// The sides of the function's own decisions.
    sides: usize,
}

impl MoreRuns {
    pub(super) fn new(options: &VerifyOptions, func: &Function) -> MoreRuns {
        MoreRuns {
            planned: options.runs,
            most: options.most_runs(),
            step: (options.runs / 4).max(1),
            sides: guide::sides_in(func),
        }
    }

    /// Whether run `run` is made; `covered` counts the sides the runs before it took.
    pub(super) fn go_on(&self, run: usize, covered: impl FnOnce() -> usize) -> bool {
        if run < self.planned {
            return true;
        }
        run < self.most && (!run.is_multiple_of(self.step) || covered() < self.sides)
    }
}
