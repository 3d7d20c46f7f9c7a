//! Callees run alone: whether two calls into the module that differ in arguments the callee
//! may observe differ where the callee shows it (see `module_calls.rs`).

use super::inputs::mix;
use super::memory::Fill;
use super::options::VerifyOptions;
use super::outcome::{ModuleCall, Run};
use super::run::Side;
use cranelift_codegen::data_value::DataValue;

/// Whether the runs `a` of the original and `b` of the merged side, alike in all but the calls
/// into the module they recorded, differ where it shows: in a call whose callee (the
/// original's) behaves otherwise on the merged side's arguments than on the original's.
///
/// A difference in arguments the callee's demanded bits see is not yet one the callee shows:
/// those bits are what it *may* observe, and a callee can hide a difference in ways they do not
/// model (`x * 0`, a value compared and then dropped). Reported as such, the mutation check's
/// proofs of equivalence were refuted. So the callee runs alone on both argument vectors, on
/// `side` (the original module's), on `fill` and on memory read as cleared, erased and hashed
/// on other seeds, in the whole fuel; the difference shows when the two runs of one memory end
/// and differ in what they store or call, or return in bits the caller looks at, or when, not
/// both ended, their stores or calls not run part ways before either stopped. Arguments
/// that are stack addresses, or more or fewer than the callee takes, cannot run alone: such a
/// difference does not show. Nor do calls
/// made in another order among the run's effects or another number of calls with the same
/// effects: a call that always traps as the merged body does before it (a mutant the proofs
/// show equivalent). The runs alone of one function are at most `budget` (a right merge's
/// calls never differ: they cost it nothing).
pub(super) fn difference_shows(
    side: &mut Side<'_>,
    (a, b): (&Run, &Run),
    options: &VerifyOptions,
    fill: Fill,
    budget: &mut usize,
) -> bool {
    if !one_callee_each(&a.calls, &b.calls) {
        return false;
    }
    let mut differing = (a.calls.iter().zip(&b.calls)).filter(|(x, y)| !x.same_arguments(y));
    // Every differing call, within the function's budget: a wrong one may follow any number
    // the callee hides.
    differing.any(|(x, y)| callee_tells_apart(side, (x, y), options, fill, budget))
}

/// Whether two records of calls call the same functions in the same order (as the merge made
/// them: [`ModuleCall::stands_for`]), so that their calls pair one by one. A right merge's may
/// not: a forwarder's body entered first on one side only records its callee's calls, a dead
/// call removed or two calls swapped shift the pairs, and a callee run alone on another
/// function's arguments is no evidence.
fn one_callee_each(a: &[ModuleCall], b: &[ModuleCall]) -> bool {
    a.len() == b.len() && (a.iter().zip(b)).all(|(x, y)| x.stands_for == y.stands_for)
}

/// Whether the callee of `x` (on `side`) tells `x`'s arguments from `y`'s (see
/// [`difference_shows`]).
fn callee_tells_apart(
    side: &mut Side<'_>,
    (x, y): (&ModuleCall, &ModuleCall),
    options: &VerifyOptions,
    fill: Fill,
    budget: &mut usize,
) -> bool {
    let values = |call: &ModuleCall| -> Option<Vec<DataValue>> {
        call.args.iter().map(|arg| arg.value().cloned()).collect()
    };
    let (Some(callee), Some(x_args), Some(y_args)) =
        (side.function(&x.callee), values(x), values(y))
    else {
        return false;
    };
    // Another number of arguments is a callee the record does not know to take extra ones (a
    // shared body of a later similar round, which takes its members' and its group's): not one
    // that can run on both.
    let arity = callee.signature.params.len();
    if x_args.len() != arity || y_args.len() != arity {
        return false;
    }
    let seed = match fill {
        Fill::Hashed(seed) => seed,
        Fill::Byte(byte) => u64::from(byte),
    };
    let hashed = (1..=HASHED_FILLS_ALONE).map(|k| Fill::Hashed(mix(seed ^ CALLEE_FILL_SEED ^ k)));
    let mut fills: Vec<Fill> = [fill, Fill::Byte(0), Fill::Byte(0xff)]
        .into_iter()
        .chain(hashed)
        .collect();
    fills.dedup();
    fills.into_iter().any(|fill| {
        if *budget < 2 {
            return false;
        }
        *budget -= 2;
        let on_x = side.run(callee, &x_args, options, options.fuel, fill);
        let on_y = side.run(callee, &y_args, options, options.fuel, fill);
        let ended = |run: &Run| !run.outcome.is_inconclusive() && !run.outcome.is_unsupported();
        match ended(&on_x) && ended(&on_y) {
            true => !on_x.same_effects_seen(&on_y, &x.results_demanded),
            false => on_x.effects_part_ways(&on_y),
        }
    })
}

/// On how many hashed fills besides the run's a callee runs alone ([`difference_shows`]).
const HASHED_FILLS_ALONE: u64 = 13;

/// The most runs alone of callees one function's check makes ([`difference_shows`]).
pub(super) const RUNS_ALONE_PER_FUNCTION: usize = 256;

/// Mixed into the seed of the hashed memory a callee runs alone on (`difference_shows`).
const CALLEE_FILL_SEED: u64 = 0xca11_ee5e_ed00_0001;
