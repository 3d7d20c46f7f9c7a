//! hostile12: Cranelift's run tests (`../shared/runtests/`) through the object writer *with
//! twins*: `tests/hostile4_runtests_objects.rs` merges each file as it is, where few functions
//! are equal, so its objects hold few thunks, aliases or shared bodies. Here every function of
//! a file gets a twin under another name, with the function's run lines: an exact copy (so that
//! every mode makes it an alias, a thunk or removes it, through a one-jump thunk or machine-code
//! folding), or a near twin whose first integer constant differs in its lowest bit (only of a
//! function that touches no memory: elsewhere a constant may be an offset, and the twin would
//! access outside its slot, which `stack-addr-64.clif`'s did and crashed merged; so that
//! `--similar` shares a body between the two and the twin's runs go through a thunk passing
//! that constant). Each module is merged in every mode, exact and with `--similar` (every group
//! taken), written as an x86_64 object as `clif-merge -o` writes it, linked with a C driver
//! making every scalar run line's call (the function's and its twin's), and run: it must
//! print what the same module's unmerged object prints. Files that cannot be built or run
//! unmerged are skipped, as hostile4 skips them. The harness (driver, flags, object, link) is
//! hostile4's. Without `../shared`, or off x86_64 Linux, the test says so and passes.

#[path = "runtests/cases.rs"]
#[allow(dead_code)]
mod cases;
#[path = "common/files.rs"]
mod files;
#[path = "common/runtest_objects.rs"]
mod runtest_objects;

use clif_merge::emit::object::OptLevel;
use clif_merge::{Mode, SimilarOptions};
use runtest_objects::{AARCH64, Arch, Build, Checked, X86_64, every_file, unmerged};
use std::path::Path;

/// How a function's twin differs from it.
#[derive(Clone, Copy, Debug)]
enum Twin {
    /// Not at all: an exact copy under another name.
    Exact,
    /// Its first integer constant differs in its lowest bit.
    Near,
}

/// `text` with, after it, a twin of every function (`%name_twin`) followed by the function's
/// run lines, made to call the twin. None when no twin differs as `twin` asks (a near twin of
/// a file without integer constants).
fn with_twins(text: &str, twin: Twin) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = text.to_string();
    out.push('\n');
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = function_name(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(end) = (i..lines.len()).find(|&j| lines[j] == "}") else {
            break;
        };
        let renamed = |l: &str| l.replacen(&format!("%{name}("), &format!("%{name}_twin("), 1);
        let mut body: Vec<String> = lines[i..=end].iter().map(|l| l.to_string()).collect();
        body[0] = renamed(&body[0]);
        if let Twin::Near = twin {
            // A constant of a function that touches memory may be an offset or a size: flipped,
            // it makes an access out of its slot, which the unmerged program may survive by luck.
            let touches_memory = (body.iter()).any(|l| MEMORY_WORDS.iter().any(|w| l.contains(w)));
            let at = body.iter().position(|l| near_constant(l).is_some());
            match at.filter(|_| !touches_memory) {
                Some(k) => body[k] = near_constant(&body[k]).unwrap(),
                None => {
                    i = end + 1;
                    continue;
                }
            }
        }
        changed = true;
        out += &body.join("\n");
        out.push('\n');
        let mut j = end + 1;
        while j < lines.len() && (lines[j].starts_with(';') || lines[j].trim().is_empty()) {
            if lines[j].starts_with("; run:") || lines[j].starts_with("; print:") {
                out += &renamed(lines[j]);
                out.push('\n');
            }
            j += 1;
        }
        out.push('\n');
        i = end + 1;
    }
    changed.then_some(out)
}

/// Words of instructions and entities that reach memory, or pass values to code that may.
const MEMORY_WORDS: [&str; 9] = [
    "load",
    "store",
    "_slot",
    "stack_",
    "global_value",
    "symbol_value",
    "call",
    "atomic",
    "heap",
];

/// The name of the function a `function %name(` line opens.
fn function_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("function %")?;
    rest.split_once('(').map(|(name, _)| name)
}

/// `line` with its integer constant's lowest bit flipped, when it is an `iconst` of a decimal
/// or hex constant.
fn near_constant(line: &str) -> Option<String> {
    let (head, value) = line.split_once(" = iconst.")?;
    let (ty, rest) = value.split_once(' ')?;
    let literal = rest.split_whitespace().next()?;
    let parsed = match literal.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(&hex.replace('_', ""), 16).ok()?,
        None => literal.parse::<i128>().ok()?,
    };
    Some(format!("{head} = iconst.{ty} {}", parsed ^ 1))
}

/// The file with twins as `twin` makes them, in every configuration: the differences, and
/// whether it ran at all.
fn check_file(arch: Arch, build: Build, path: &Path, twin: Twin) -> Checked {
    let original = std::fs::read_to_string(path).unwrap();
    let Some(text) = with_twins(&original, twin) else {
        return (Vec::new(), false);
    };
    let file = match unmerged(arch, build, path, &text) {
        Ok(file) => file,
        Err(checked) => return checked,
    };
    let every_group = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let mut differences = Vec::new();
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        for similar in [None, Some(&every_group)] {
            let tag = format!(
                "{twin:?}-{mode:?}{}",
                if similar.is_some() { "-similar" } else { "" }
            );
            differences.extend(file.compare_merged(&tag, mode, similar));
        }
    }
    (differences, true)
}

/// Every file on `arch` with twins as `twin` makes them; `at_least` files must run (else the
/// harness is broken).
fn with_twins_every_file(arch: Arch, build: Build, twin: Twin, at_least: usize) {
    let what = format!("runtests with {twin:?} twins ({build:?})");
    every_file(arch, &what, at_least, |p| check_file(arch, build, p, twin));
}

#[test]
fn runtests_with_exact_twins_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    with_twins_every_file(X86_64, Build::default(), Twin::Exact, 100);
}

#[test]
fn runtests_with_near_twins_through_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    with_twins_every_file(X86_64, Build::default(), Twin::Near, 50);
}

/// The exact twins at `--opt-level speed_and_size` with `--function-sections`, and at
/// `--opt-level none` (a minute: `cargo test --test hostile12_runtests_twins_objects --
/// --ignored`).
#[test]
#[ignore = "slow: every run-test file with twins linked and run twelve more times"]
fn runtests_with_exact_twins_print_the_same_at_other_opt_levels_and_with_function_sections() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("note: skipping: the run tests' objects run on x86_64 Linux");
        return;
    }
    let builds = [
        Build {
            opt_level: OptLevel::SpeedAndSize,
            function_sections: true,
        },
        Build {
            opt_level: OptLevel::None,
            function_sections: false,
        },
    ];
    for build in builds {
        with_twins_every_file(X86_64, build, Twin::Exact, 100);
    }
}

/// The exact and near twins on aarch64 under qemu (the files' aarch64 targets: `use_bti`,
/// `sign_return_address` and the like as their `target` lines set them, on one-jump thunks and
/// folded code): `cargo test --test hostile12_runtests_twins_objects -- --ignored`.
#[test]
#[ignore = "slow: every run-test file with twins linked and run under qemu-aarch64 fourteen times"]
fn runtests_with_twins_through_aarch64_objects_print_what_the_unmerged_objects_print() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: skipping: the run tests' aarch64 objects run under qemu on Linux");
        return;
    }
    with_twins_every_file(AARCH64, Build::default(), Twin::Exact, 100);
    with_twins_every_file(AARCH64, Build::default(), Twin::Near, 40);
}
