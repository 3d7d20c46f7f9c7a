//! Cranelift's own run tests as a conformance gate: every run line that passes on the original
//! passes on the merged module.
//!
//! `../shared/runtests/` holds the run-test files of Cranelift's filetests (see its README).
//! Each file that cranelift-reader parses and that has an x86_64 target (or none: the host) is
//! read with the library's reader, in these steps:
//!
//! 1. **Baseline.** Every `; run:` line is run on the unmerged module, compiled with
//!    cranelift-jit for each of the file's x86_64 targets (its `set` flags and ISA flags, on the
//!    host's triple, as Cranelift builds it; a target whose features the host lacks is skipped).
//!    A line that cannot run or fails there is a limit of this harness, counted with its reason;
//!    the others are kept.
//! 2. **Each file merged**, in every configuration: modes `safe`, `aliases` and `thunks`;
//!    without `--similar`, with it (the cost model's choice), and taking every similar group
//!    the pass finds (no minimum saving, no register budget); functions exported (the
//!    command line's default) and all `local` (`--default-linkage local`). Every kept line
//!    runs on the merged module: a function merged away is called through what replaced it
//!    (its alias, its thunk, the kept function its callers now call, or for a removed similar
//!    member a stand-in passing its values to the shared body). A result other than the
//!    expected one is a difference.
//! 3. **All files in one module**, each file's functions renamed with a prefix of its own, so
//!    that merges across files happen; compiled for the host with every feature it has and the
//!    union of the files' boolean flags. Baseline first, then every configuration.
//! 4. **That module twice over**: every function also under a second name, so that each run
//!    line, run under both names, goes through an alias, a thunk or a redirect (or the merge's
//!    rules keep the two apart, which the test explains: a forwarding thunk stays as it is,
//!    an address taken stays distinct outside `--mode aliases`, a function that reads its own
//!    frame never becomes a thunk).
//! 5. **With near twins**, for the configurations with `--similar`: every function also has a
//!    twin whose first constant differs in its lowest bit, so that similar merging shares a
//!    body between the two and the run line goes through it.
//!
//! The test prints the lines checked per configuration (by how they reached their code) and
//! every line that could not run, by reason; it fails on any difference. Without `../shared`
//! it says so and passes.
//!
//! A run line runs the function it follows, as Cranelift's runner does, even where it names
//! another (a few files do).

mod cases;
mod combine;
mod jit;
mod libcalls;
mod resolve;
mod twins;

#[path = "../common/files.rs"]
mod files;

use cases::{RunFile, RunLine, native_isa};
use clif_merge::read::{ReadOptions, read_module_text};
use clif_merge::similar::RegisterBudget;
use clif_merge::{ClifModule, FuncName, Mode, SimilarOptions, SymbolLinkage, merge_module_with};
use cranelift_codegen::data_value::{DataValue, DisplayDataValues};
use cranelift_codegen::ir::Signature;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_reader::{Comparison, RunCommand};
use jit::{CodeCache, Compiled};
use rayon::prelude::*;
use resolve::{Route, Runnable};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How similar merging takes part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Similar {
    Off,
    /// The cost model's choice (`--similar`).
    Priced,
    /// Every group the pass finds: no minimum saving, no register budget.
    Every,
}

/// One way to merge.
#[derive(Clone, Copy, Debug)]
struct Config {
    mode: Mode,
    similar: Similar,
    linkage: SymbolLinkage,
}

impl Config {
    fn all() -> Vec<Config> {
        let mut out = Vec::new();
        for linkage in [SymbolLinkage::Export, SymbolLinkage::Local] {
            for similar in [Similar::Off, Similar::Priced, Similar::Every] {
                for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                    out.push(Config {
                        mode,
                        similar,
                        linkage,
                    });
                }
            }
        }
        out
    }

    fn label(&self) -> String {
        let similar = match self.similar {
            Similar::Off => "",
            Similar::Priced => " --similar",
            Similar::Every => " --similar(every group)",
        };
        let linkage = match self.linkage {
            SymbolLinkage::Export => "",
            _ => " --default-linkage local",
        };
        format!("--mode {}{similar}{linkage}", self.mode.keyword())
    }

    fn similar_options(&self) -> Option<SimilarOptions> {
        match self.similar {
            Similar::Off => None,
            Similar::Priced => Some(SimilarOptions::default()),
            Similar::Every => Some(SimilarOptions {
                min_saving: i64::MIN,
                registers: RegisterBudget {
                    int: usize::MAX,
                    float: usize::MAX,
                },
                ..SimilarOptions::default()
            }),
        }
    }

    /// `module` merged this way, callable under every original name.
    fn merge(&self, module: &ClifModule) -> Runnable {
        let mut merged = module.clone();
        let options = self.similar_options();
        let (report, _) = merge_module_with(&mut merged, self.mode, options.as_ref());
        Runnable::new(module, merged, &report)
    }
}

/// Where a check runs: each file on its own, all in one module, that module twice over, or
/// with near twins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    PerFile,
    Combined,
    TwiceOver,
    NearTwins,
}

impl Stage {
    fn label(self) -> &'static str {
        match self {
            Stage::PerFile => "each file",
            Stage::Combined => "all files in one module",
            Stage::TwiceOver => "that module twice over",
            Stage::NearTwins => "with near twins",
        }
    }
}

/// What the checks found.
#[derive(Default)]
struct Tally {
    /// Run lines (once per target) that could not run, by reason: where.
    cannot_run: BTreeMap<String, Vec<String>>,
    /// Run lines that passed unmerged, per stage.
    baseline: BTreeMap<Stage, usize>,
    /// Per stage and configuration: lines checked, by route.
    checked: BTreeMap<(Stage, usize), BTreeMap<Route, usize>>,
    /// Every difference, described.
    differences: Vec<String>,
    /// Run lines that name a function other than the one they follow.
    names_another: usize,
    /// Run lines of the module twice over whose function was merged with its twin under
    /// neither name, for a reason of the merge's rules: how many, by reason.
    apart: BTreeMap<&'static str, usize>,
    /// The same, with no reason: each is a failure.
    unmerged_twins: Vec<String>,
}

impl Tally {
    /// Counts a run line that could not run at `at` because of `reason`; a compiler's message
    /// counts by its cause, the instruction goes with the place.
    fn cannot(&mut self, reason: impl Into<String>, at: String) {
        let reason = reason.into();
        let (reason, at) = match reason.split_once(": inst = ") {
            Some((cause, inst)) => (cause.to_string(), format!("{at} {inst}")),
            None => (reason, at),
        };
        self.cannot_run.entry(reason).or_default().push(at);
    }

    fn add(&mut self, other: Tally) {
        for (reason, at) in other.cannot_run {
            self.cannot_run.entry(reason).or_default().extend(at);
        }
        for (stage, n) in other.baseline {
            *self.baseline.entry(stage).or_default() += n;
        }
        for (key, routes) in other.checked {
            let mine = self.checked.entry(key).or_default();
            for (route, n) in routes {
                *mine.entry(route).or_default() += n;
            }
        }
        self.differences.extend(other.differences);
        self.names_another += other.names_another;
        for (why, n) in other.apart {
            *self.apart.entry(why).or_default() += n;
        }
        self.unmerged_twins.extend(other.unmerged_twins);
    }
}

/// Whether `actual` is what `command` expects.
fn meets(command: &RunCommand, actual: &[DataValue]) -> bool {
    let RunCommand::Run(_, comparison, expected) = command else {
        return true;
    };
    let equal =
        actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, e)| a.bitwise_eq(e));
    match comparison {
        Comparison::Equals => equal,
        Comparison::NotEquals => !equal,
    }
}

/// A run line of some file, as one stage calls it.
struct Check<'a> {
    file: &'a str,
    line: &'a RunLine,
    /// The function to run, under its name in the stage's module.
    func: FuncName,
}

impl Check<'_> {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line.line)
    }

    /// Runs the line's function `callee` in `compiled`: its results, or why it cannot run.
    fn run(&self, compiled: &Compiled, callee: &FuncName) -> Result<Vec<DataValue>, String> {
        if jit::has_wide_values(&self.line.signature) {
            return Err("a value wider than 16 bytes".into());
        }
        let args = match &self.line.command {
            RunCommand::Run(invocation, _, _) => &invocation.args,
            RunCommand::Print(_) => return Err("a print line: nothing to compare".into()),
        };
        // SAFETY: the function has the line's signature; on the unmerged module it returned
        // (the baseline runs first), and the merged module must do the same.
        unsafe { compiled.call(callee, &self.line.signature, args) }
    }

    /// Runs the line unmerged: whether it passes; why not into `tally`.
    fn baseline(&self, compiled: &Compiled, target: &str, tally: &mut Tally) -> bool {
        match self.run(compiled, &self.func) {
            Ok(actual) if meets(&self.line.command, &actual) => true,
            Ok(actual) => {
                let at = format!(
                    "{}{target}: {} gives {}",
                    self.at(),
                    self.line.command,
                    DisplayDataValues(&actual)
                );
                tally.cannot("fails unmerged (a limit of this harness)", at);
                false
            }
            Err(why) => {
                tally.cannot(why, format!("{}{target}", self.at()));
                false
            }
        }
    }

    /// Runs the line on a merged module under `name`; a difference into `tally`. How the line
    /// reached its code.
    fn merged(
        &self,
        runnable: &Runnable,
        compiled: &Compiled,
        name: &FuncName,
        what: &str,
        tally: &mut Tally,
        key: (Stage, usize),
    ) -> Route {
        let (callee, route) = runnable.callee(name);
        let outcome = self.run(compiled, &callee);
        let problem = match &outcome {
            Ok(actual) if meets(&self.line.command, actual) => None,
            Ok(actual) => Some(format!("gives {}", DisplayDataValues(actual))),
            Err(why) => Some(format!("cannot run: {why}")),
        };
        match problem {
            None => {
                *tally
                    .checked
                    .entry(key)
                    .or_default()
                    .entry(route)
                    .or_default() += 1
            }
            Some(problem) => tally.differences.push(format!(
                "{} ({what}): {} runs {callee} ({}) and {problem}",
                self.at(),
                self.line.command,
                route.word()
            )),
        }
        route
    }
}

/// The distinct signatures of `lines`, for the trampolines.
fn signatures<'a>(lines: impl Iterator<Item = &'a RunLine>) -> Vec<Signature> {
    let mut out: Vec<Signature> = Vec::new();
    for line in lines {
        if !out.contains(&line.signature) {
            out.push(line.signature.clone());
        }
    }
    out
}

/// A file read by the library, with each linkage.
struct ReadFile<'a> {
    file: &'a RunFile,
    export: ClifModule,
    local: ClifModule,
}

impl ReadFile<'_> {
    fn module(&self, linkage: SymbolLinkage) -> &ClifModule {
        match linkage {
            SymbolLinkage::Local => &self.local,
            _ => &self.export,
        }
    }
}

/// Reads `file` with the library's reader; `Err` with the reader's message.
fn read(file: &RunFile) -> Result<ReadFile<'_>, String> {
    let read_with = |default_linkage| {
        let options = ReadOptions {
            default_linkage,
            verify: true,
        };
        read_module_text(Path::new(&file.name), &file.text, options)
    };
    let export = read_with(SymbolLinkage::Export).map_err(|e| e.message)?;
    let local = read_with(SymbolLinkage::Local).map_err(|e| e.message)?;
    Ok(ReadFile {
        file,
        export,
        local,
    })
}

/// A target of a file whose baseline ran: its ISA, its code, the run lines that pass.
struct TargetRun<'a> {
    isa: &'a OwnedTargetIsa,
    cache: CodeCache,
    /// [`cases::Target::label`].
    label: String,
    passing: Vec<&'a Check<'a>>,
}

/// Step 1 for one file: every run line on the unmerged `module`, per target; what cannot
/// run or fails into `tally`.
fn baseline<'a>(
    file: &'a RunFile,
    module: &ClifModule,
    checks: &'a [Check<'a>],
    signatures: &[Signature],
    tally: &mut Tally,
) -> Vec<TargetRun<'a>> {
    let mut targets = Vec::new();
    for target in &file.targets {
        let label = target.label();
        let isa = match &target.isa {
            Ok(isa) => isa,
            Err(why) => {
                for check in checks {
                    tally.cannot(why.clone(), format!("{}{label}", check.at()));
                }
                continue;
            }
        };
        let cache = CodeCache::default();
        let compiled = Compiled::new(module, isa, signatures, &cache);
        let passing: Vec<&Check> = (checks.iter())
            .filter(|c| c.baseline(&compiled, &label, tally))
            .collect();
        *tally.baseline.entry(Stage::PerFile).or_default() += passing.len();
        targets.push(TargetRun {
            isa,
            cache,
            label,
            passing,
        });
    }
    targets
}

/// Steps 1 and 2 for one file.
fn check_file(file: &RunFile, configs: &[Config]) -> Tally {
    let mut tally = Tally {
        names_another: file.lines.iter().filter(|l| l.names_another).count(),
        ..Tally::default()
    };
    for bad in &file.bad_lines {
        tally.cannot(
            "the run line does not parse",
            format!("{}: {bad}", file.name),
        );
    }
    let checks: Vec<Check> = (file.lines.iter())
        .map(|line| Check {
            file: &file.name,
            line,
            func: line.func.clone(),
        })
        .collect();
    let read = match read(file) {
        Ok(read) => read,
        Err(why) => {
            let reason = format!("the library refuses the file: {}", cause(&why));
            for target in &file.targets {
                for check in &checks {
                    let at = format!("{}{}", check.at(), target.label());
                    tally.cannot(reason.clone(), at);
                }
            }
            return tally;
        }
    };
    let sigs = signatures(file.lines.iter());
    let targets = baseline(file, &read.export, &checks, &sigs, &mut tally);
    if targets.iter().all(|t| t.passing.is_empty()) {
        return tally;
    }
    // Step 2: every configuration.
    for (n, config) in configs.iter().enumerate() {
        let runnable = config.merge(read.module(config.linkage));
        for target in &targets {
            if target.passing.is_empty() {
                continue;
            }
            let compiled = Compiled::new(&runnable.module, target.isa, &sigs, &target.cache);
            let what = format!("{}{}", config.label(), target.label);
            for check in &target.passing {
                let key = (Stage::PerFile, n);
                check.merged(&runnable, &compiled, &check.func, &what, &mut tally, key);
            }
        }
    }
    tally
}

/// The cause in a reader's message, without the instruction it was found at (`in function
/// %f: verifier: inst3 (v1 = get_pinned_reg.i64): GetPinnedReg/SetPinnedReg need an ISA!`),
/// so that equal causes count together.
fn cause(message: &str) -> &str {
    message
        .rsplit_once("): ")
        .map_or(message, |(_, cause)| cause)
}

/// The ISA for the module of all files: the host's, with every feature it has and every
/// boolean flag some file turns on (so that what compiles in one file compiles here: i128
/// arguments, many results), but for `enable_probestack`, whose default outline strategy calls
/// a routine the host does not have.
fn combined_isa(files: &[&RunFile]) -> OwnedTargetIsa {
    let defaults = settings::Flags::new(settings::builder());
    let mut builder = settings::builder();
    for file in files {
        for target in &file.targets {
            let Ok(isa) = &target.isa else { continue };
            for (value, default) in isa.flags().iter().zip(defaults.iter()) {
                let turned_on = value.as_bool() == Some(true) && default.as_bool() == Some(false);
                if turned_on && value.name != "enable_probestack" {
                    builder.enable(value.name).expect("a boolean flag");
                }
            }
        }
    }
    native_isa(settings::Flags::new(builder)).expect("the host ISA")
}

/// Every read file's functions in one module, each file under a prefix of its own (once with
/// each linkage), and their run lines under the new names.
fn combine_files<'a>(files: &'a [ReadFile]) -> ([ClifModule; 2], Vec<Check<'a>>) {
    let mut export = ClifModule::new();
    let mut local = ClifModule::new();
    let mut checks = Vec::new();
    for read in files {
        let prefix = combine::file_prefix(&read.file.name);
        combine::add_prefixed(&mut export, &read.export, &prefix);
        combine::add_prefixed(&mut local, &read.local, &prefix);
        for line in &read.file.lines {
            checks.push(Check {
                file: &read.file.name,
                line,
                func: combine::prefixed(&prefix, &line.func),
            });
        }
    }
    ([export, local], checks)
}

/// What every check of the module of all files shares: the ISA, its code, the trampolines'
/// signatures and the run lines that pass unmerged.
struct Combined<'a> {
    isa: OwnedTargetIsa,
    cache: CodeCache,
    signatures: Vec<Signature>,
    passing: Vec<&'a Check<'a>>,
}

impl Combined<'_> {
    /// Merges `module` (a module of `stage`) as `config` says and runs every passing line on
    /// it; for the module twice over, under both names.
    fn check(&self, stage: Stage, n: usize, config: &Config, module: &ClifModule) -> Tally {
        let mut tally = Tally::default();
        let runnable = config.merge(module);
        let compiled = Compiled::new(&runnable.module, &self.isa, &self.signatures, &self.cache);
        let what = format!("{}, {}", config.label(), stage.label());
        let key = (stage, n);
        for check in &self.passing {
            let route = check.merged(&runnable, &compiled, &check.func, &what, &mut tally, key);
            if stage != Stage::TwiceOver {
                continue;
            }
            let twin = combine::prefixed(combine::TWIN, &check.func);
            let twin_route = check.merged(&runnable, &compiled, &twin, &what, &mut tally, key);
            if !route.is_merged() && !twin_route.is_merged() {
                match twins::why_apart(module, &check.func, config.mode) {
                    Some(why) => *tally.apart.entry(why).or_default() += 1,
                    None => (tally.unmerged_twins).push(format!("{} ({what})", check.at())),
                }
            }
        }
        tally
    }
}

/// Steps 3 to 5: all files in one module, twice over, and with near twins.
fn check_combined(files: &[ReadFile], configs: &[Config]) -> Tally {
    let mut tally = Tally::default();
    let isa = combined_isa(&files.iter().map(|r| r.file).collect::<Vec<_>>());
    let (combined, checks) = combine_files(files);
    let signatures = signatures(checks.iter().map(|c| c.line));
    let cache = CodeCache::default();
    let compiled = Compiled::new(&combined[0], &isa, &signatures, &cache);
    let label = " (all files in one module)";
    let passing: Vec<&Check> = (checks.iter())
        .filter(|c| c.baseline(&compiled, label, &mut tally))
        .collect();
    drop(compiled);
    tally.baseline.insert(Stage::Combined, passing.len());
    let shared = Combined {
        isa,
        cache,
        signatures,
        passing,
    };
    let twice = combined.each_ref().map(combine::twice_over);
    let near = combined.each_ref().map(combine::with_near_twins);
    let stages = [Stage::Combined, Stage::TwiceOver, Stage::NearTwins];
    let jobs: Vec<(usize, Stage)> = (0..configs.len())
        .flat_map(|n| stages.map(|stage| (n, stage)))
        // Near twins are for similar merging.
        .filter(|&(n, stage)| stage != Stage::NearTwins || configs[n].similar != Similar::Off)
        .collect();
    let tallies: Vec<Tally> = (jobs.into_par_iter())
        .map(|(n, stage)| {
            let local = usize::from(configs[n].linkage == SymbolLinkage::Local);
            let module = match stage {
                Stage::Combined => &combined[local],
                Stage::TwiceOver => &twice[local],
                _ => &near[local],
            };
            shared.check(stage, n, &configs[n], module)
        })
        .collect();
    for t in tallies {
        tally.add(t);
    }
    tally
}

/// The harness can fail: in the first file where it can, the run lines of a function sent to
/// another function of the same signature (a wrong merge) give differences. The number found,
/// and where.
fn self_check(files: &[RunFile]) -> (usize, String) {
    for file in files {
        let Ok(read) = read(file) else { continue };
        let Some(isa) = file.targets.iter().find_map(|t| t.isa.as_ref().ok()) else {
            continue;
        };
        let lines = &file.lines;
        let pair = lines.iter().find_map(|g| {
            let f = lines
                .iter()
                .find(|f| f.func != g.func && f.signature == g.signature)?;
            Some((f.func.clone(), g.func.clone()))
        });
        let Some((f, g)) = pair else { continue };
        let runnable = Runnable::new(&read.export, read.export.clone(), &Default::default())
            .with_wrong_redirect(g.clone(), f.clone());
        let cache = CodeCache::default();
        let compiled = Compiled::new(&runnable.module, isa, &signatures(lines.iter()), &cache);
        let mut tally = Tally::default();
        for line in lines.iter().filter(|l| l.func == g) {
            let check = Check {
                file: &file.name,
                line,
                func: g.clone(),
            };
            let key = (Stage::PerFile, 0);
            check.merged(&runnable, &compiled, &g, "self-check", &mut tally, key);
        }
        if !tally.differences.is_empty() {
            return (
                tally.differences.len(),
                format!("{g} sent to {f} in {}", file.name),
            );
        }
    }
    (0, String::new())
}

/// The run-test folder, when `../shared` is beside the repository.
fn runtests_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/runtests");
    dir.is_dir().then_some(dir)
}

fn print_summary(tally: &Tally, configs: &[Config], files: (usize, usize, usize)) {
    let (all, host, read) = files;
    println!(
        "runtests: {all} files; {host} with an x86_64 target or none; {read} read by the library"
    );
    for (stage, n) in &tally.baseline {
        println!("  {}: {n} run lines pass unmerged", stage.label());
    }
    if tally.names_another > 0 {
        println!(
            "  {} run lines name another function than the one they follow (run on the one \
             they follow, as Cranelift does)",
            tally.names_another
        );
    }
    println!("run lines checked on merged modules:");
    for ((stage, n), routes) in &tally.checked {
        let total: usize = routes.values().sum();
        let merged: usize = (routes.iter())
            .filter(|(r, _)| r.is_merged())
            .map(|(_, n)| n)
            .sum();
        let by: Vec<String> = (routes.iter())
            .map(|(r, n)| format!("{} {n}", r.word()))
            .collect();
        println!(
            "  {:<24} {:<52} {total:>6} ({merged} through a merge: {})",
            stage.label(),
            configs[*n].label(),
            by.join(", ")
        );
    }
    if !tally.apart.is_empty() {
        println!("run lines of the module twice over whose function stayed apart from its twin:");
        for (why, n) in &tally.apart {
            println!("  {n:>5}  {why}");
        }
    }
    let cannot: usize = tally.cannot_run.values().map(Vec::len).sum();
    println!("could not run ({cannot} run lines, once per target and stage), by reason:");
    for (reason, at) in &tally.cannot_run {
        let some: Vec<&str> = at.iter().take(3).map(String::as_str).collect();
        println!("  {:>5}  {reason}  (e.g. {})", at.len(), some.join("; "));
    }
}

/// Reads every run-test file under `dir`: the files with a host target, and the count of all.
fn read_files(dir: &Path, tally: &mut Tally) -> (Vec<RunFile>, usize) {
    let paths = files::clif_files(dir);
    let mut files = Vec::new();
    for path in &paths {
        let name = path
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        match RunFile::read(name.clone(), text) {
            Ok(Some(file)) => files.push(file),
            Ok(None) => {}
            Err(e) => tally.cannot(format!("cranelift-reader refuses the file: {e}"), name),
        }
    }
    (files, paths.len())
}

/// The whole gate; `Err` on any difference.
fn gate() -> Result<(), libtest_mimic::Failed> {
    if !cfg!(target_arch = "x86_64") {
        println!("runtests: SKIPPED: the run lines are checked on an x86_64 host only");
        return Ok(());
    }
    let Some(dir) = runtests_dir() else {
        println!("runtests: SKIPPED: ../shared/runtests is not beside the repository");
        return Ok(());
    };
    let start = Instant::now();
    let mut tally = Tally::default();
    let (files, all) = read_files(&dir, &mut tally);
    let (found, wrong) = self_check(&files);
    if found == 0 {
        return Err("the harness found no difference in a wrong merge".into());
    }
    println!("runtests: self-check: a wrong merge ({wrong}) gives {found} differences");
    let configs = Config::all();
    let per_file: Vec<Tally> = (files.par_iter())
        .map(|file| check_file(file, &configs))
        .collect();
    for t in per_file {
        tally.add(t);
    }
    let per_file_time = start.elapsed();
    let read: Vec<ReadFile> = files.iter().filter_map(|f| read(f).ok()).collect();
    tally.add(check_combined(&read, &configs));
    print_summary(&tally, &configs, (all, files.len(), read.len()));
    println!(
        "runtests: {:.1} s ({:.1} s for the files one by one)",
        start.elapsed().as_secs_f64(),
        per_file_time.as_secs_f64()
    );
    let mut failures = Vec::new();
    if !tally.unmerged_twins.is_empty() {
        let n = tally.unmerged_twins.len();
        println!("NOT MERGED WITH THEIR TWINS, and no rule says why ({n} run lines):");
        for at in &tally.unmerged_twins {
            println!("  {at}");
        }
        failures.push(format!("{n} run lines not merged with their twins"));
    }
    if !tally.differences.is_empty() {
        let n = tally.differences.len();
        println!("DIFFERENCES ({n}):");
        for d in &tally.differences {
            println!("  {d}");
        }
        failures.push(format!("{n} differences"));
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(failures.join(", ").into()),
    }
}

/// One trial, so that `cargo test` filters and `--list` work as for other tests.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let trials = vec![libtest_mimic::Trial::test("runtests", gate)];
    libtest_mimic::run(&args, trials).exit();
}
