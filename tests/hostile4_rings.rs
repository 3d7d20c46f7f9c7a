//! Hostile inputs for the exact pass's refinement (`src/partition.rs`): generated modules of
//! call chains and rings (mutual recursion of every length, rings that differ in one constant
//! deep inside, self-recursion beside calls to an equal twin), with imports, aliases and
//! preemptible functions mixed in. Each function `%fI(x)` returns its constant when `x == 0`
//! and otherwise calls its callee with `x - 1`, so what it computes is the sequence of
//! constants along its chain of callees, ending at an import or a preemptible callee (whose
//! name is all that is known of it). Two functions compute the same thing exactly when those
//! sequences are equal: the naive reference here. The pass's classes must be the reference's
//! (more is a wrong merge, fewer a missed one), in every mode, and `verify_merge` must pass.

use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{
    ClifModule, Mode, ReadOptions, SimilarOptions, merge_module, merge_module_with,
    read_module_text,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a function calls when its argument is not 0.
#[derive(Clone, Copy, Debug)]
enum Callee {
    /// Function `i` of the module, by its own name.
    Function(usize),
    /// Function `i` of the module, through its alias `%aI`.
    Alias(usize),
    /// An import `%extI`.
    Import(usize),
}

#[derive(Clone, Debug)]
struct Func {
    constant: i64,
    callee: Callee,
    preemptible: bool,
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn generate(rng: &mut Rng) -> Vec<Func> {
    let n = 2 + rng.below(11) as usize;
    // Few constants, so that long equal stretches are common and differences hide deep.
    let constants = 1 + rng.below(3) as i64;
    (0..n)
        .map(|i| {
            let callee = match rng.below(10) {
                0 => Callee::Import(rng.below(2) as usize),
                1 | 2 => Callee::Alias(rng.below(n as u64) as usize),
                // Rings: mostly the next function, so that rings of several lengths form.
                3..=6 => Callee::Function((i + 1) % n),
                _ => Callee::Function(rng.below(n as u64) as usize),
            };
            Func {
                constant: rng.below(constants as u64) as i64,
                callee,
                preemptible: rng.below(8) == 0,
            }
        })
        .collect()
}

fn text(funcs: &[Func]) -> String {
    let mut out = String::new();
    for (i, f) in funcs.iter().enumerate() {
        let callee = match f.callee {
            Callee::Function(j) => format!("%f{j}"),
            Callee::Alias(j) => format!("%a{j}"),
            Callee::Import(j) => format!("%ext{j}"),
        };
        out += &format!(
            "function %f{i}(i32) -> i32 {{
    fn0 = {callee}(i32) -> i32
block0(v0: i32):
    brif v0, block1, block2
block1:
    v4 = iconst.i32 -1
    v1 = iadd v0, v4
    v2 = call fn0(v1)
    return v2
block2:
    v3 = iconst.i32 {}
    return v3
}}

",
            f.constant
        );
    }
    for (i, f) in funcs.iter().enumerate() {
        out += &format!("; alias: %a{i} = %f{i}\n");
        if f.preemptible {
            out += &format!("; linkage: %f{i} preemptible\n");
        }
    }
    out
}

/// What function `i` computes: its constants along its callees, `n` steps deep (enough to
/// tell apart any two of `n` functions), ending at the name of an import or preemptible callee.
fn behaviour(funcs: &[Func], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = i;
    for _ in 0..=2 * funcs.len() {
        out.push(funcs[at].constant.to_string());
        let next = match funcs[at].callee {
            Callee::Import(j) => {
                out.push(format!("ext{j}"));
                return out;
            }
            Callee::Function(j) | Callee::Alias(j) => j,
        };
        // An alias is a symbol of its own at this module's definition: even an alias of a
        // preemptible function runs the body here.
        if funcs[next].preemptible && matches!(funcs[at].callee, Callee::Function(_)) {
            // Calls by that name may run another definition: only the name is known.
            out.push(format!("preemptible f{next}"));
            return out;
        }
        at = next;
    }
    out
}

/// The reference's classes of two or more, as sets of names.
fn reference(funcs: &[Func]) -> BTreeSet<BTreeSet<String>> {
    let mut by: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for i in 0..funcs.len() {
        by.entry(behaviour(funcs, i))
            .or_default()
            .insert(format!("%f{i}"));
    }
    by.into_values().filter(|c| c.len() > 1).collect()
}

/// What `verify_merge` runs: a difference between two rings shows within a few laps of the
/// longest ring (12 functions), so runs deeper than 64 calls tell nothing more, and in a debug
/// build each one costs a second or more.
fn verify_options() -> VerifyOptions {
    VerifyOptions {
        max_depth: 64,
        ..VerifyOptions::default()
    }
}

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("rings.clif"), text, ReadOptions::default()).unwrap()
}

/// Checks one module in every mode; the first difference, if any.
fn check(funcs: &[Func]) -> Result<(), String> {
    let text = text(funcs);
    let original = read(&text);
    let expected = reference(funcs);
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let mut merged = original.clone();
        let (report, _) = merge_module(&mut merged, mode);
        // Names of the input only (a private copy of preemptible members is the merge's own).
        let got: BTreeSet<BTreeSet<String>> = report
            .classes
            .iter()
            .map(|c| {
                std::iter::once(&c.kept)
                    .chain(c.replaced.iter().map(|r| &r.name))
                    .map(|n| n.to_string())
                    .filter(|n| n.starts_with("%f") && n[2..].bytes().all(|b| b.is_ascii_digit()))
                    .collect::<BTreeSet<_>>()
            })
            .filter(|c| c.len() > 1)
            .collect();
        if got != expected {
            return Err(format!(
                "{mode:?}: classes {got:?}, the reference's {expected:?}\n{text}"
            ));
        }
        let checked = verify_merge(&original, &merged, &report, &verify_options());
        if !checked.is_ok() {
            return Err(format!("{mode:?}: {}\n{text}", checked.summary()));
        }
        // A merge the check ran no run of to its end was not checked at all.
        if report.merged > 0 && checked.completed_runs() == 0 {
            return Err(format!(
                "{mode:?}: no run ended: {}\n{text}",
                checked.summary()
            ));
        }
    }
    Ok(())
}

/// The same module with similar merging taking every group it finds (rings that differ in
/// constants share bodies that take them as parameters): what it computes must not change.
fn check_similar(funcs: &[Func]) -> Result<(), String> {
    let text = text(funcs);
    let original = read(&text);
    let forced = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let mut merged = original.clone();
        let (report, _) = merge_module_with(&mut merged, mode, Some(&forced));
        let checked = verify_merge(&original, &merged, &report, &verify_options());
        if !checked.is_ok() {
            return Err(format!("{mode:?} --similar: {}\n{text}", checked.summary()));
        }
    }
    Ok(())
}

/// Similar merging over generated rings (constants 0–2, so most rings are similar) computes
/// what the input computes, in every mode.
#[test]
fn rings_merged_as_similar_compute_the_same() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..30 {
        let funcs = generate(&mut rng);
        if let Err(e) = check_similar(&funcs) {
            panic!("{e}");
        }
    }
}

/// Rings of several lengths, a constant changed deep inside one, self-recursion against a
/// twin: the cases written out, then 60 generated modules.
#[test]
fn rings_merge_exactly_as_their_behaviour_says() {
    use Callee::*;
    let f = |constant, callee| Func {
        constant,
        callee,
        preemptible: false,
    };
    let cases: Vec<Vec<Func>> = vec![
        // A ring of 2 and a ring of 3 of one constant: all five equal.
        vec![
            f(1, Function(1)),
            f(1, Function(0)),
            f(1, Function(3)),
            f(1, Function(4)),
            f(1, Function(2)),
        ],
        // Rings of 4 and 4 that differ in the last constant: none equal.
        vec![
            f(1, Function(1)),
            f(1, Function(2)),
            f(1, Function(3)),
            f(1, Function(0)),
            f(1, Function(5)),
            f(1, Function(6)),
            f(1, Function(7)),
            f(2, Function(4)),
        ],
        // Self-recursion, a call to it and a call to its twin.
        vec![
            f(1, Function(0)),
            f(1, Function(0)),
            f(1, Function(1)),
            f(1, Alias(2)),
        ],
        // A ring through a preemptible function: its callers stay apart from an equal ring.
        vec![
            f(1, Function(1)),
            Func {
                preemptible: true,
                ..f(1, Function(0))
            },
            f(1, Function(3)),
            f(1, Function(2)),
        ],
    ];
    for funcs in &cases {
        if let Err(e) = check(funcs) {
            panic!("{e}");
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..60 {
        let funcs = generate(&mut rng);
        if let Err(e) = check(&funcs) {
            panic!("{e}");
        }
    }
}
