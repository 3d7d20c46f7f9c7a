//! Differential execution: runs every function of a module before and after merging in
//! cranelift-interpreter, on the same arguments, and checks that both do the same thing. First,
//! the merged module's symbols must be the original's as the report accounts for them (names,
//! linkage, aliases: `symbols.rs`), and every function the merge wrote or changed must pass the
//! CLIF verifier: one that does not is reported as a mismatch (`not valid CLIF after merging`),
//! whatever its runs do.
//!
//! For each function *defined* in the original module, and each alias of one (run as its
//! target, by the alias's name), whose signature the interpreter can run
//! (integer and float parameters and returns), the function is called by its name in the
//! original module, and the same name in the merged module: the function itself, a thunk, or an
//! alias, or — when the merge removed it — the kept function of its class (from the
//! [`MergeReport`]). Both runs must end the same way: the same results (floats compared by their
//! bits), or the same trap (its trap code), having called the module's imports in the same order
//! with the same arguments.
//!
//! How a module is run:
//! - Every name either module defines, aliases or refers to is known on both sides. A direct
//!   call runs the function of that name (an alias: its target). An address (`func_addr`) is
//!   a *slot* shared by the names that are one symbol on that side — an alias and its
//!   target — numbered the same way on both sides; calling through it runs the slot's
//!   function. A function the report says the merge made an alias is one symbol with its kept
//!   function on both sides. (So in `--mode aliases`, where the merge makes `%g` an alias of
//!   `%f` and the two addresses equal, comparing them is not reported as a difference: that is
//!   what the mode intends. An alias the report does not account for makes the merged side's
//!   addresses equal where the original's are not, and a run that compares them differs.)
//! - Functions that are not run — an import (a name the module refers to but does not define),
//!   a libcall, a `call_indirect` whose address is no function of the module — are modelled as
//!   pure functions: their results are a hash of the callee and the arguments (mostly small
//!   numbers). Every such call is recorded, and the two sequences of calls must be equal.
//! - Memory is lazily filled (`memory.rs`): a byte nothing stored to reads as a hash of its
//!   address and the run's seed, the same on both sides; every store is recorded and the two
//!   sequences of stores must be equal. Stack slots are laid out per frame; a stack address, in
//!   a result, a store or a call's argument, is compared as (frame, slot, offset), the frame
//!   by its place among the live frames that have slots (a merged side's thunks have none),
//!   since the frames of the two sides need not be at the same place. A `symbol`'s address is
//!   a page of its own, chosen by a hash of its name (`symbol_pages.rs`; a function's: its
//!   slot's address). Memory is mapped below 16 MiB, 16 MiB on either side
//!   of 2^32 (where 32-bit address arithmetic from small numbers lands: a wasm shadow stack
//!   pointer read as a small number, minus its frame, plus a heap's base), at the stack and at
//!   symbols; an access that may trap (no `notrap`) anywhere else traps with its trap code.
//! - A name one side does not have at all (a function the merge removed, a private copy it
//!   added) is *absent* on that side: calling it is a *dangling call*, which never matches a
//!   normal end.
//! - Calls are followed by a loop here (not by recursion in the interpreter), with a limit on
//!   the instructions run (`fuel`), on the depth of calls, and on the stack, so that every run
//!   ends. A run whose original hits a limit is run again on the same arguments with other
//!   fills of memory nothing stored to (another draw of hashed memory, then every byte `0x00`,
//!   then every byte `0xFF`: `other_fills`), and the first run that ends is the run, its merged
//!   side on the same fill; a run that hits a limit on every fill is *inconclusive* (the
//!   merged side is not run). The merged side has four times the fuel and twice the depth and
//!   stack, and more for the merged module's forwarders (`slack.rs`: each call may pass a chain
//!   of thunks, whose frames multiply the depth and whose instructions are added to the fuel
//!   for each instruction the original ran): when it hits them where the original ended, it
//!   does not do the same (a loop that no longer ends), a mismatch. A run in which the
//!   interpreter cannot run an instruction (it panics or reports an error) is *unsupported*,
//!   counted by opcode in the summary, not a mismatch — but a run unsupported on one side only
//!   is one, since both sides run the same bodies. A function whose runs keep being
//!   inconclusive is run with small arguments, then no more. A run that comes back to a state
//!   it was in (every register, memory, the stack) never ends: it is stopped there, out of
//!   fuel, as the fuel would have stopped it (`state/cycle.rs`). A run first takes twice the
//!   most instructions a run of its function that ended took, at least a 32nd of the fuel
//!   (`short_fuel`), on its first fill and then on the others; one that ends on none is run on
//!   its first fill in the whole fuel, until two such runs of the function did not end in the
//!   whole fuel after at least an eighth of it (one stopped in a cycle sooner cost little):
//!   then its runs that end on no fill in the short fuel are inconclusive. One run in 16
//!   starts on a byte fill (`fills.rs`, `first_fill`: run 15 on `0x00`, run 31 on `0xFF`, and
//!   so on), since a run that ends on hashed memory is tried on no other; it takes the
//!   arguments of the latest earlier run that returned on hashed memory and no run on that
//!   byte took yet (`Reached`), not its own random ones, whose pointers mostly trap on both
//!   sides before memory is read (its guided turn passes to the next run). A run that does
//!   not end is still compared up to where it stopped: the merged side's stores and calls not
//!   run must be the original's that far, and it must not stop for good having done less
//!   (`prefix_parts_ways`).
//!
//! Arguments are pseudo-random from a seed and the function's name, and start with edge values
//! (0, 1, -1, MIN, MAX, NaN for floats, each parameter a step further along them than the one
//! before, so that no two parameters are equal in all of them); every argument of a `vmctx`
//! parameter is made a multiple of 16, as a context structure's address is; a share of the
//! random integers
//! are the constants the function tests a parameter for equality with and the indices it
//! switches over, which random numbers miss (`inputs.rs`). Every other run after the edge
//! values takes a *guided* tuple when one is queued (`guide.rs`): the original side records the operands of each
//! comparison a branch or a conditional trap decided on, and where a side no run took yet, an
//! argument equal (up to a small difference) to one operand is made the other operand or its
//! neighbour. A function runs on past its planned runs, up to four times as many, while a side
//! of its own decisions is left untaken (`more_runs.rs`). The whole check is deterministic.
//!
//! So a run is known without running it twice when nothing it reaches changed: the original
//! side records every name and address slot it resolved to a function (`Machine`), and when
//! the function and all of those run the same function on the merged side (`Unchanged`: equal
//! bodies, stand-ins of the same kind), the merged side's run is the original's. On real code
//! most functions are not touched by the merge; this halves their cost. A function that calls
//! no address and whose direct callees, theirs and so on are all unchanged too
//! (`Unchanged::closed`) is not run at all: it is counted as *unchanged*, apart from the
//! checked ones.

mod alone;
pub mod demanded;
mod fills;
mod guide;
mod inputs;
mod memory;
mod module_calls;
mod more_runs;
mod names;
mod options;
mod outcome;
mod report;
mod run;
mod slack;
mod state;
mod symbol_pages;
mod symbols;
mod valid;

pub use memory::{Fill, Pin};
pub use options::VerifyOptions;
pub use outcome::{
    Callee, ImportCall, Mismatch, ModuleCall, Observed, Outcome, Run, StackAddress, Store, Trap,
};
pub use report::VerifyReport;

use crate::module::{ClifModule, FuncName, ModuleFunction};
use crate::pass::MergeReport;
use crate::policy::Action;
use crate::similar::ConstantRecord;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{ArgumentPurpose, Function, Signature, Type, types};
use fills::{Reached, first_fill, other_fills};
use inputs::{
    EDGE_RUNS, Rng, arguments, context_parameters, fnv, mix, steering_values, with_aligned_contexts,
};
use more_runs::MoreRuns;
use names::{Names, Resolved, Stubs, Unchanged};
use run::Side;
use rustc_hash::FxHashMap;
use slack::MergedSlack;

/// Runs every function of `original` and its counterpart in `merged` (the result of merging
/// `original`, as `report` says) on `options.runs` argument tuples, and reports every
/// difference. See the module docs.
///
/// ```
/// use clif_merge::verify::{VerifyOptions, verify_merge};
/// use clif_merge::{Mode, ReadOptions, merge_module, read_module_text};
/// use std::path::Path;
///
/// let text = "
///     function %twice(i32) -> i32 {
///     block0(v0: i32):
///         v1 = iadd v0, v0
///         return v1
///     }
///     function %double(i32) -> i32 {
///     block0(v0: i32):
///         v1 = iadd v0, v0
///         return v1
///     }
/// ";
/// let original = read_module_text(Path::new("t.clif"), text, ReadOptions::default()).unwrap();
/// let mut merged = original.clone();
/// let (report, _) = merge_module(&mut merged, Mode::Safe);
/// assert_eq!(report.merged, 1);
/// let checked = verify_merge(&original, &merged, &report, &VerifyOptions::default());
/// assert!(checked.is_ok(), "{}", checked.summary());
/// ```
pub fn verify_merge(
    original: &ClifModule,
    merged: &ClifModule,
    report: &MergeReport,
    options: &VerifyOptions,
) -> VerifyReport {
    let removed = removed_functions(report);
    let symbol_mismatches = symbols::symbol_mismatches(original, merged, report);
    let with_stand_ins = similar_stand_ins(merged, report);
    let merged = with_stand_ins.as_ref().unwrap_or(merged);
    let slack = MergedSlack::of(merged);
    let names = Names::new(&[original, merged]);
    let stubs_a = Stubs::new(original, &names.names);
    let stubs_b = Stubs::new(merged, &names.names);
    let intended = aliases_made(report);
    let merged_as = std::sync::Arc::new(module_calls::MergedAs::of(report));
    let resolved = [
        Resolved::new(
            original,
            original,
            &names,
            &stubs_a,
            &one_symbol(original, &intended),
            options.module_calls,
        )
        .with_merged_as(&merged_as),
        Resolved::new(
            merged,
            original,
            &names,
            &stubs_b,
            &one_symbol(merged, &intended),
            options.module_calls,
        )
        .with_merged_as(&merged_as)
        .with_similar_groups(
            &names,
            original,
            report.similar.as_deref().unwrap_or_default(),
        ),
    ];
    let unchanged = Unchanged::new(&resolved[0], &resolved[1]);
    let closed = unchanged.closed(&resolved[0], &names);
    // The merged module's read-only data: the records similar groups pass (little-endian, as
    // both targets are), which its shared bodies load.
    let records: Vec<&ConstantRecord> = (report.similar.iter().flatten())
        .flat_map(|group| &group.records)
        .collect();
    let aliases = alias_entries(original);
    let functions: Vec<&ModuleFunction> = original.functions().chain(&aliases).collect();
    // Pieces of functions checked on the pool, each with its own two sides, then reported in
    // module order: the report is the same whatever the threads.
    let pieces: Vec<&[&ModuleFunction]> = functions.chunks(64).collect();
    let reports = crate::parallel::map_large(&pieces, |piece| {
        let mut sides = [
            Side::new(&resolved[0], &names),
            Side::new(&resolved[1], &names),
        ];
        // The original side records its decisions, for the guided arguments.
        sides[0].trace = Some(guide::Trace::default());
        sides[0].log_loads();
        for record in &records {
            sides[1].define_data(&record.name, &record.bytes(true));
        }
        let mut out = VerifyReport::default();
        for mf in piece.iter() {
            let same = (&unchanged, closed.as_slice());
            let limits = (options, &slack);
            check_or_skip(&mut out, &mut sides, same, mf, merged, &removed, limits);
        }
        out
    });
    let mut out = VerifyReport {
        mismatches: [
            symbol_mismatches,
            valid::invalid_functions(original, merged),
        ]
        .concat(),
        ..VerifyReport::default()
    };
    for piece in reports {
        out.absorb(piece);
    }
    // By function name, each function's in the order of its runs: the same report whatever the
    // order of the module's functions (as the merge's report is).
    out.mismatches.sort_by(|a, b| a.function.cmp(&b.function));
    out
}

/// Each alias of `original` as an entry of its own: its name with its target's body. Other
/// objects call an alias by its name, so the merged module's function of that name must do
/// what the target did (a merge that re-targets an alias is wrong even where nothing inside
/// the module uses it).
fn alias_entries(original: &ClifModule) -> Vec<ModuleFunction> {
    (original.aliases().iter())
        .filter_map(|alias| {
            let target = original.function(original.resolve(&alias.target)?);
            Some(ModuleFunction {
                name: alias.name.clone(),
                func: target.func.clone(),
                linkage: alias.linkage,
                origin: None,
            })
        })
        .collect()
}

/// Checks `mf` against its counterpart in `merged`, or counts it as skipped.
fn check_or_skip<'a>(
    out: &mut VerifyReport,
    sides: &mut [Side<'a>; 2],
    (unchanged, closed): (&Unchanged, &[bool]),
    mf: &'a ModuleFunction,
    merged: &'a ClifModule,
    removed: &FxHashMap<FuncName, FuncName>,
    (options, slack): (&VerifyOptions, &MergedSlack),
) {
    let func = &*mf.func;
    if options
        .only
        .as_ref()
        .is_some_and(|only| !only.contains(&mf.name))
    {
        return;
    }
    if !runnable_signature(&func.signature) {
        out.skipped += 1;
        out.unchecked += 1;
        return;
    }
    out.functions += 1;
    let (target, ran_as) = counterpart(merged, &mf.name, removed);
    // The same code calling the same code: every run would be the same on both sides.
    if ran_as.is_none() && closed[sides[0].name_index(&mf.name)] && !options.run_unchanged {
        out.unchanged += 1;
        return;
    }
    match target.filter(|t| t.signature == func.signature) {
        Some(target) => {
            // The merged side of a run is the original's when both run the same function and
            // the run resolved nothing the merge changed (see `Unchanged`).
            let same_entry = match &ran_as {
                None => unchanged.names[sides[0].name_index(&mf.name)],
                Some(_) => *func == *target,
            };
            let unchanged = same_entry.then_some(unchanged);
            check_function(out, sides, unchanged, mf, target, ran_as, (options, slack))
        }
        None => {
            // Not run at all: counted so, or the summary's shares would not add up.
            out.unchecked += 1;
            out.mismatches.push(no_counterpart(mf, target, ran_as));
        }
    }
}

/// `merged` with a stand-in for every member a similar merge removed (a thunk passing its
/// values to the shared body, see [`MergeReport::stand_ins`]), so that it can be called by
/// its name; None when there is none.
fn similar_stand_ins(merged: &ClifModule, report: &MergeReport) -> Option<ClifModule> {
    let stand_ins = report.stand_ins(merged);
    if stand_ins.is_empty() {
        return None;
    }
    let mut module = merged.clone();
    for func in stand_ins {
        // Also for a private copy the exact merge made, which the original does not have.
        let _ = module.define(func, crate::module::SymbolLinkage::Local, None);
    }
    Some(module)
}

/// The functions the report says the merge made aliases, each with its class's kept function:
/// in `--mode aliases` their addresses are equal by intent, so the check takes them as one
/// symbol on both sides.
fn aliases_made(report: &MergeReport) -> Vec<(&FuncName, &FuncName)> {
    (report.classes.iter())
        .flat_map(|class| {
            (class.replaced.iter())
                .filter(|r| r.by == Action::Alias)
                .map(move |r| (&r.name, &class.kept))
        })
        .collect()
}

/// The names that are one symbol on `module`'s side: each of its aliases and its target, and
/// the pairs of `intended`. Each side has its own: an alias the merged module has and the
/// report does not account for makes two addresses equal there that the original tells apart,
/// which a run that compares them must see.
fn one_symbol<'a>(
    module: &'a ClifModule,
    intended: &[(&'a FuncName, &'a FuncName)],
) -> Vec<(&'a FuncName, &'a FuncName)> {
    (module.aliases().iter())
        .map(|a| (&a.name, &a.target))
        .chain(intended.iter().copied())
        .collect()
}

/// The kept function of every removed one.
fn removed_functions(report: &MergeReport) -> FxHashMap<FuncName, FuncName> {
    let mut removed = FxHashMap::default();
    for class in &report.classes {
        for r in &class.replaced {
            if r.by == Action::Removed {
                removed.insert(r.name.clone(), class.kept.clone());
            }
        }
    }
    removed
}

/// What runs in `merged` for the function `name`: the same name, or the kept function of a
/// removed one (then also the kept function's name).
fn counterpart<'m>(
    merged: &'m ClifModule,
    name: &FuncName,
    removed: &FxHashMap<FuncName, FuncName>,
) -> (Option<&'m Function>, Option<FuncName>) {
    match merged.resolve(name) {
        Some(id) => (Some(&*merged.function(id).func), None),
        None => match removed.get(name) {
            Some(kept) => (
                merged.resolve(kept).map(|id| &*merged.function(id).func),
                Some(kept.clone()),
            ),
            None => (None, None),
        },
    }
}

/// The mismatch of a function whose counterpart is missing or has another signature.
fn no_counterpart(
    mf: &ModuleFunction,
    target: Option<&Function>,
    ran_as: Option<FuncName>,
) -> Mismatch {
    let problem = match target {
        None => format!("{} is not in the merged module", mf.name),
        Some(t) => format!(
            "its signature is {}, not {}",
            t.signature, mf.func.signature
        ),
    };
    Mismatch {
        function: mf.name.clone(),
        ran_as,
        args: Vec::new(),
        memory: Fill::default(),
        pinned: Vec::new(),
        original: Run::not_run(Outcome::NotRunnable("not run".into())),
        merged: Run::not_run(Outcome::NotRunnable(problem)),
    }
}

/// Runs `mf` on the original side and `target` on the merged side, on the same arguments, and
/// records the runs, their mismatches and how fully the function was checked in `out`.
fn check_function<'a>(
    out: &mut VerifyReport,
    sides: &mut [Side<'a>; 2],
    unchanged: Option<&Unchanged>,
    mf: &'a ModuleFunction,
    target: &'a Function,
    ran_as: Option<FuncName>,
    (options, slack): (&VerifyOptions, &MergedSlack),
) {
    let func = &mf.func;
    let name_hash = fnv(mf.name.to_string().as_bytes());
    let mut rng = Rng::new(options.seed ^ name_hash);
    let types: Vec<Type> = func.signature.params.iter().map(|p| p.value_type).collect();
    let steering = steering_values(func);
    let contexts = context_parameters(func);
    let mut inconclusive = 0;
    // Runs past the edge values that did not end (see `EDGE_RUNS_SAY_LITTLE`).
    let mut inconclusive_past_edges = 0;
    let mut spent = FuelSpent::default();
    let merged_options = options.for_merged_side(slack);
    let runs_before = out.runs;
    let incomplete_before = out.inconclusive + out.unsupported;
    let mut search = guide::Search::default();
    let mut reached = Reached::default();
    let mut guided_lost = 0;
    // The runs alone of callees left (`alone::difference_shows`).
    let mut alone = alone::RUNS_ALONE_PER_FUNCTION;
    // The most instructions a run of the function that ended took.
    let mut longest = 0;
    let mismatch = |args, memory, pinned, (original, merged)| Mismatch {
        function: mf.name.clone(),
        ran_as: ran_as.clone(),
        args,
        memory,
        pinned,
        original,
        merged,
    };
    let more = MoreRuns::new(options, func);
    for run in 0.. {
        if !more.go_on(run, || search.covered_in(func)) {
            break;
        }
        if inconclusive >= options.max_inconclusive.max(1) {
            out.cut_short += 1;
            break;
        }
        let small = inconclusive_past_edges >= 2;
        let on_edges = run < EDGE_RUNS;
        let aligned = |args| with_aligned_contexts(&contexts, args);
        let plain = aligned(arguments(&types, run, small, &[], &mut rng.clone()));
        let steered = aligned(arguments(&types, run, small, &steering, &mut rng));
        let memory_seed = mix(options.seed ^ name_hash ^ run as u64);
        let first_fill = first_fill(run, memory_seed);
        // A byte-fill run on arguments that reached memory on hashed memory (see `fills.rs`);
        // its turn for a guided tuple, if any, passes to the next.
        let reaching = reached.take_for(first_fill);
        let borrowed = reaching.is_some();
        let guided = (reaching.is_none()
            && run >= GUIDED_FROM
            && guided_turn(run)
            && guided_lost < MAX_GUIDED_LOST)
            .then(|| search.next())
            .flatten()
            .map(|g| guide::Guided {
                args: aligned(g.args),
                pins: g.pins,
            });
        let is_guided = guided.is_some();
        let fuel = short_fuel(options.fuel, longest);
        // A guided tuple takes its share of the whole fuel, as a run that ends on no fill
        // would: it aims at a side no run took yet, often deeper. Never less than any other
        // run takes first: where every run that ended took more than the share, the guided
        // side past the same loop was never reached (hostile12).
        let whole = if spent.whole_fuel() {
            fuel
        } else {
            options.fuel
        };
        let unpinned = |args| guide::Guided {
            args,
            pins: Vec::new(),
        };
        let (preferred, plain, attempt_fuel) = match (reaching, guided) {
            (Some(tuple), _) => (unpinned(tuple.clone()), tuple, fuel),
            (None, Some(tuple)) => {
                let share = (options.fuel / GUIDED_FUEL_SHARE).max(fuel);
                (tuple, plain, share.min(whole))
            }
            (None, None) => (unpinned(steered), plain, fuel),
        };
        let (args, a, took_preferred) = run_original(
            &mut sides[0],
            func,
            (&preferred, plain),
            (attempt_fuel, fuel),
            (options, on_edges),
            first_fill,
            &mut spent,
        );
        // The pins of the tuple taken hold on both sides of every run on these arguments.
        let pins = if took_preferred {
            preferred.pins
        } else {
            Vec::new()
        };
        for side in sides.iter_mut() {
            side.pin(&pins);
        }
        if is_guided && !took_preferred {
            guided_lost += 1;
        }
        // A run that does not end in the short fuel is run longer (`run_longer`).
        let (a, fill) = match a.outcome.is_inconclusive() {
            true => {
                let first = (a, first_fill, memory_seed);
                let limits = (options, fuel, on_edges);
                run_longer(&mut sides[0], func, &args, limits, first, &mut spent)
            }
            false => (a, first_fill),
        };
        if let Some(trace) = &sides[0].trace {
            search.absorb(&args, &pins, trace, &sides[0].loads());
        }
        if !borrowed {
            reached.record(&args, fill, matches!(a.outcome, Outcome::Returned(_)));
        }
        out.runs += 1;
        let ended = !a.outcome.is_inconclusive() && !a.outcome.is_unsupported();
        if ended && fill != first_fill {
            out.on_other_fills += 1;
        }
        if a.outcome.is_inconclusive() {
            // Inconclusive whatever the merged side does, but what the original did before it
            // stopped is what it did on these arguments and this memory: the merged side must
            // do the same up to there (`prefix_parts_ways`).
            out.inconclusive += 1;
            inconclusive += 1;
            inconclusive_past_edges += usize::from(!on_edges);
            let fuel = slack.fuel_after(merged_options.fuel, sides[0].steps);
            let limits = (&merged_options, fuel);
            if let Some(b) = prefix_parts_ways(&a, &mut sides[1], target, &args, fill, limits) {
                out.mismatches.push(mismatch(args, fill, pins, (a, b)));
            }
            continue;
        }
        longest = longest.max(sides[0].steps);
        let b = match unchanged {
            Some(unchanged) if sides[0].resolved_only(unchanged) => a.clone(),
            _ => {
                let fuel = slack.fuel_after(merged_options.fuel, sides[0].steps);
                sides[1].run(target, &args, &merged_options, fuel, fill)
            }
        };
        if b.outcome.is_inconclusive() && a.outcome.is_unsupported() {
            out.inconclusive += 1;
            inconclusive += 1;
            inconclusive_past_edges += usize::from(!on_edges);
        } else if a.outcome.is_unsupported() && b.outcome.is_unsupported() {
            out.unsupported += 1;
            *out.unsupported_at
                .entry(sides[0].unsupported_at.clone())
                .or_default() += 1;
        } else if !a.same_effects(&b)
            || alone::difference_shows(&mut sides[0], (&a, &b), options, fill, &mut alone)
        {
            // (Otherwise an unsupported run on one side only is a mismatch: both sides run the
            // same bodies, so the interpreter should fail on both.)
            out.mismatches.push(mismatch(args, fill, pins, (a, b)));
        }
    }
    for side in sides.iter_mut() {
        side.pin(&[]);
    }
    let runs = out.runs - runs_before;
    let incomplete = out.inconclusive + out.unsupported - incomplete_before;
    out.count_coverage(runs, incomplete, options.runs);
}

/// The merged side's run on the arguments, memory and pins of an original run `a` that did not
/// end, when their stores or calls not run part ways before the shorter sequence stops. A run
/// that does not end in the fuel (a loop over a buffer, each pass calling into the module) was
/// compared in nothing, so a wrong merge that stores elsewhere from its first pass on went
/// unreported wherever the function's runs that ended stopped before the loop (a corrupted
/// loop start on the corpus's mutation check). So is a merged side that did less than the
/// original did before it stopped, and will never do more: it ended (a trap, a return), hit
/// its own limits (four times the fuel and more, twice the depth: a right merge does there
/// all the original did), or was stopped in a cycle that stores nothing (hostile18: a loop
/// that stores forever merged with one that spins). The merged side runs in the fuel the
/// original took, with its slack ([`super::slack::MergedSlack::fuel_after`]).
fn prefix_parts_ways<'a>(
    a: &Run,
    merged: &mut Side<'a>,
    target: &'a Function,
    args: &[DataValue],
    fill: Fill,
    (options, fuel): (&VerifyOptions, u64),
) -> Option<Run> {
    // Nothing done, nothing to part ways in: not run (a recursion that went too deep).
    if !a.has_effects() {
        return None;
    }
    let b = merged.run(target, args, options, fuel, fill);
    let cycle_stored = merged.stopped_in_storing_cycle;
    (a.effects_part_ways(&b) || a.did_more_than_stopped(&b, cycle_stored)).then_some(b)
}

/// The fuel a run of a function takes first, on each fill: a multiple of the most instructions
/// a run of it that ended took, at least a share of the fuel, at most all of it. A run that
/// does not end is mostly a loop or a recursion that does not end on what memory holds (a
/// probe loop over a hash table no slot of which is empty) or on its arguments (a hash over a
/// length of 2^31), and runs that end take far less: on the corpus, half of them fewer than
/// 40 instructions and 99.4 % fewer than 1,562. Each run that did not end took the whole fuel
/// before it was run on other fills; past the prologues of wasm code (`state.rs`, `WRAPPED`)
/// such runs were two thirds of `--verify`'s instructions on dprint. A run that would end on
/// its first fill after more is run on the other fills in this fuel, and only when it ends on
/// none, on its first fill in the whole fuel (until one such run of the function did not end
/// in it either).
fn short_fuel(fuel: u64, longest: u64) -> u64 {
    longest
        .saturating_mul(LONGEST_RUN_FACTOR)
        .clamp(fuel / SHORT_FUEL_SHARE, fuel.max(1))
}

/// The least share of the fuel a run takes first ([`short_fuel`]).
const SHORT_FUEL_SHARE: u64 = 32;

// OWN_FILL_FIRST: a run that does not end in the short fuel is run on its own memory in a
// quarter of the fuel (`OWN_FILL_SHARE`) before it is run on other fills, until one such run of
// the function did not end in it. Another fill is another input, and one on which the run ends
// at once (an early exit on a flag that reads 0) stood for the run that did not end, whose long
// loop was never compared: a wrong merge behind it was reported ok and fully checked
// (hostile12). Steered and guided arguments too, instead of being dropped for random ones. Not
// the whole fuel: most such runs are probe loops on hashed memory that never end, and on dprint
// the whole fuel took `--verify` from 5.6 to 10.7 times the merge; of the runs that ended in
// it, three in four took under 11,600 instructions.

/// How many runs of a function that took the whole fuel and did not end keep its later runs
/// from the whole fuel: one may be an endless wait on an argument (a counter counting up
/// forever on 0), which says nothing of how long its other runs take (hostile10). Runs on edge
/// values do not count (`EDGE_RUNS_SAY_LITTLE`).
const MAX_COSTLY_WHOLE_RUNS: usize = 2;

// EDGE_RUNS_SAY_LITTLE: a run on edge values (0, 1, -1, MIN, MAX: the first `EDGE_RUNS`) that
// does not end neither makes the later arguments small nor keeps the later runs from the whole
// fuel. Edge values are where a function most often waits or counts for ever (on 0, on 1, on
// -1 as a length), and say nothing of how its other arguments run: two such runs made every
// later argument a number from 0 to 16 and kept every later run from the whole fuel, so that
// a wrong merge told apart from 1,024, or past a loop longer than the short fuel, was reported
// ok (hostile12). They still count toward `max_inconclusive`.

/// The share of the fuel a run that did not end in the whole fuel must have taken to keep the
/// function's later runs from the whole fuel; a run stopped in a cycle sooner does not.
const COSTLY_SHARE: u64 = 8;

/// How many times the longest run of a function that ended a run may take first.
const LONGEST_RUN_FACTOR: u64 = 2;

/// The first run that may take guided arguments (`guide.rs`): the runs before it are the edge
/// values of every parameter.
const GUIDED_FROM: usize = EDGE_RUNS;

/// Whether run `run` (from [`GUIDED_FROM`]) takes a queued guided tuple when there is one,
/// rather than random arguments.
fn guided_turn(run: usize) -> bool {
    run % 2 == 1
}

/// The share of the fuel a run on a guided tuple may take: less, since a guided tuple aims at a
/// side no run took yet, often a loop's or a recursion's that does not end.
const GUIDED_FUEL_SHARE: u64 = 8;

/// Guided tuples of a function that may fail to end in their share of the fuel before the
/// function takes no more (each costs that share and a plain run).
const MAX_GUIDED_LOST: usize = 2;

/// The original side of a run: on the `preferred` arguments (steering values or a guided
/// tuple) when they differ from the `plain` ones and that run ends within `attempt_fuel` (or
/// in [`own_fill_fuel`], see `OWN_FILL_FIRST`), else on the `plain` ones within `fuel`
/// (preferred arguments take a run where random ones do not; where that is a loop too long to
/// check, the run is what it would have been without them). The arguments run, the run, and
/// whether the preferred arguments were taken.
fn run_original<'a>(
    side: &mut Side<'a>,
    func: &'a Function,
    (preferred, plain): (&guide::Guided, Vec<DataValue>),
    (attempt_fuel, fuel): (u64, u64),
    (options, on_edges): (&VerifyOptions, bool),
    fill: Fill,
    spent: &mut FuelSpent,
) -> (Vec<DataValue>, Run, bool) {
    let differs = preferred
        .args
        .iter()
        .zip(&plain)
        .any(|(s, p)| !s.bitwise_eq(p));
    if differs || !preferred.pins.is_empty() {
        side.pin(&preferred.pins);
        let mut run = side.run(func, &preferred.args, options, attempt_fuel, fill);
        if run.outcome.is_inconclusive()
            && spent.own_fill_first(attempt_fuel, own_fill_fuel(options))
        {
            let args = &preferred.args;
            run = longer_on_own_fill(side, func, args, (options, on_edges), fill, spent);
        }
        if !run.outcome.is_inconclusive() {
            return (preferred.args.clone(), run, true);
        }
    }
    // The last run's pins (of this function or an earlier one) hold no more.
    side.pin(&[]);
    let run = side.run(func, &plain, options, fuel, fill);
    (plain, run, false)
}

/// What a function's runs in the whole fuel so far say of its later runs' fuel.
#[derive(Default)]
struct FuelSpent {
    /// Runs past the edge values that did not end in the whole fuel, costly (see
    /// [`MAX_COSTLY_WHOLE_RUNS`]).
    costly_whole_runs: usize,
    /// Whether a run on its own fill in [`OWN_FILL_SHARE`] of the fuel, before the other fills,
    /// did not end, costly (`OWN_FILL_FIRST`).
    own_fill_lost: bool,
}

impl FuelSpent {
    /// Whether no later run of the function is given the whole fuel.
    fn whole_fuel(&self) -> bool {
        self.costly_whole_runs >= MAX_COSTLY_WHOLE_RUNS
    }

    /// Whether a run that did not end in `fuel` is run in `longer` fuel on its own fill before
    /// the other fills (`OWN_FILL_FIRST`).
    fn own_fill_first(&self, fuel: u64, longer: u64) -> bool {
        fuel < longer && !self.own_fill_lost
    }

    /// Records `run`, which took `steps` of the whole `fuel`; whether it did not end, costly.
    /// Only a costly run keeps the later ones from the whole fuel: one stopped early, in a
    /// state it was in before (an endless wait on a zero argument), cost little and says
    /// nothing of how long the others run.
    fn record(&mut self, run: &Run, steps: u64, fuel: u64, on_edges: bool) -> bool {
        let costly = costly(run, steps, fuel);
        self.costly_whole_runs += usize::from(costly && !on_edges);
        costly
    }
}

/// Whether `run`, which took `steps` of `fuel`, did not end and took enough of it to say that
/// the function's runs may be long (see [`COSTLY_SHARE`]).
fn costly(run: &Run, steps: u64, fuel: u64) -> bool {
    run.outcome.is_inconclusive() && steps >= fuel / COSTLY_SHARE
}

impl FuelSpent {}

/// The share of the fuel a run that did not end in the short fuel takes on its own fill
/// before the other fills (`OWN_FILL_FIRST`).
const OWN_FILL_SHARE: u64 = 4;

/// The fuel of a run on its own fill before the other fills (`OWN_FILL_FIRST`).
fn own_fill_fuel(options: &VerifyOptions) -> u64 {
    options.fuel / OWN_FILL_SHARE
}

/// The original side of a run on `args` in [`own_fill_fuel`] on `fill`, before the other
/// fills; whether it did not end, costly, is recorded in `spent` (`OWN_FILL_FIRST`), but for a
/// run on edge values (`EDGE_RUNS_SAY_LITTLE`: one counting for ever on 0 spent the function's
/// own-fill runs, and a wrong merge past a loop its later runs took on their own fill was
/// reported ok, hostile16).
fn longer_on_own_fill<'a>(
    side: &mut Side<'a>,
    func: &'a Function,
    args: &[DataValue],
    (options, on_edges): (&VerifyOptions, bool),
    fill: Fill,
    spent: &mut FuelSpent,
) -> Run {
    let fuel = own_fill_fuel(options);
    let run = side.run(func, args, options, fuel, fill);
    spent.own_fill_lost |= !on_edges && costly(&run, side.steps, fuel);
    run
}

/// The original side of a run that did not end in the short `fuel` on its first fill
/// (`first`: the run, its fill and the seed of its hashed memory): run again on that fill in
/// [`own_fill_fuel`] while no such run of the function was lost (`OWN_FILL_FIRST`), then on the
/// other fills in the short fuel ([`run_on_other_fills`]), then on its fill in the whole fuel
/// while the function may take it. The run taken and its fill.
fn run_longer<'a>(
    side: &mut Side<'a>,
    func: &'a Function,
    args: &[DataValue],
    (options, fuel, on_edges): (&VerifyOptions, u64, bool),
    (first, first_fill, seed): (Run, Fill, u64),
    spent: &mut FuelSpent,
) -> (Run, Fill) {
    let first = match spent.own_fill_first(fuel, own_fill_fuel(options)) {
        true => {
            let run = longer_on_own_fill(side, func, args, (options, on_edges), first_fill, spent);
            if !run.outcome.is_inconclusive() {
                return (run, first_fill);
            }
            first
        }
        false => first,
    };
    let (run, fill) =
        run_on_other_fills(side, func, args, options, fuel, (first, first_fill, seed));
    if run.outcome.is_inconclusive() && fuel < options.fuel && !spent.whole_fuel() {
        let run = side.run(func, args, options, options.fuel, first_fill);
        spent.record(&run, side.steps, options.fuel, on_edges);
        return (run, first_fill);
    }
    (run, fill)
}

/// The original side of a run that did not end on hashed memory from `seed` (`first`), run
/// again on the same `args` with memory nothing stored to read as each of [`other_fills`] in
/// turn, until a run ends (returns, traps or calls a function the module does not have): that
/// run and its fill (the merged side runs on it too), else `first` and its fill. Each fill is
/// a pure function of the address, the same on both sides: a run that ends on one is checked
/// as any other; one that ends on none stays inconclusive.
fn run_on_other_fills<'a>(
    side: &mut Side<'a>,
    func: &'a Function,
    args: &[DataValue],
    options: &VerifyOptions,
    fuel: u64,
    (first, first_fill, seed): (Run, Fill, u64),
) -> (Run, Fill) {
    for fill in other_fills(seed).into_iter().filter(|&f| f != first_fill) {
        let run = side.run(func, args, options, fuel, fill);
        if !run.outcome.is_inconclusive() && !run.outcome.is_unsupported() {
            return (run, fill);
        }
    }
    (first, first_fill)
}

/// Runs the function `name` of `module` once on `args`, as `verify_merge` runs each side: for
/// tests that compare the interpreter with compiled code.
pub fn run_function(
    module: &ClifModule,
    name: &FuncName,
    args: &[DataValue],
    options: &VerifyOptions,
) -> Run {
    let names = Names::new(&[module]);
    let stubs = Stubs::new(module, &names.names);
    let resolved = Resolved::new(
        module,
        module,
        &names,
        &stubs,
        &one_symbol(module, &[]),
        options.module_calls,
    );
    let mut side = Side::new(&resolved, &names);
    match module.resolve(name) {
        Some(id) => {
            let func = &module.function(id).func;
            side.run(
                func,
                args,
                options,
                options.fuel,
                Fill::Hashed(options.seed),
            )
        }
        None => Run::not_run(Outcome::NotRunnable(format!("{name} is not defined"))),
    }
}

/// Whether the interpreter can be called with this signature from here: integers, floats and
/// vectors of them up to 128 bits (no struct arguments).
pub fn runnable_signature(sig: &Signature) -> bool {
    let lane = |ty: Type| {
        matches!(
            ty,
            types::I8
                | types::I16
                | types::I32
                | types::I64
                | types::I128
                | types::F32
                | types::F64
        )
    };
    // Scalars, and vectors of those lanes of at most 128 bits (what `DataValue` holds).
    let scalar = |ty: Type| lane(ty.lane_type()) && ty.bits() <= 128 && !ty.is_dynamic_vector();
    sig.params
        .iter()
        .all(|p| scalar(p.value_type) && !matches!(p.purpose, ArgumentPurpose::StructArgument(_)))
        && sig.returns.iter().all(|p| scalar(p.value_type))
}
