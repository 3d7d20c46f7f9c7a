//! hostile10: the code cache (`emit::object::CodeCache`) through the library. It keyed code by
//! the function alone, so one cache handed to [`equal_code_classes`] with two object options
//! (another target, another flag) answered the second with the first's code (a defect, fixed:
//! the key holds the target and every flag). Each options alone with a cache of its own gives
//! the classes a fresh cache gives.

use clif_merge::emit::object::{
    CodeCache, IsaSettings, ObjectOptions, OptLevel, equal_code_classes, parse_target,
};
use clif_merge::{ClifModule, Mode, ReadOptions, read_module_text};
use std::path::Path;

fn options(target: &str, flags: &[&str]) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(target).unwrap(),
        opt_level: OptLevel::Speed,
        isa: IsaSettings {
            cpu: None,
            flags: flags.iter().map(|f| f.to_string()).collect(),
        },
        function_sections: false,
        mode: Mode::Safe,
        fold_machine_code: true,
    }
}

/// `%f(x, a)`: `x·8`, then a few multiplications and exclusive ors; `%g` is `%f` with an unused
/// constant (other CLIF, the same machine code on every target: one code class). The
/// multiplication by 8 is a shift or an address computation optimized, an `imul` at
/// `opt_level=none`.
fn f(name: &str, dead: bool) -> String {
    let mut t = format!(
        "function %{name}(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n    v2 = iconst.i64 5\n\
         v30 = iconst.i64 8\n    v31 = imul v0, v30\n"
    );
    let mut prev = "v31".to_string();
    for n in (3..15).step_by(2) {
        t += &format!(
            "    v{n} = imul {prev}, v1\n    v{} = bxor v{n}, v2\n",
            n + 1
        );
        prev = format!("v{}", n + 1);
    }
    if dead {
        t += "    v99 = iconst.i64 77\n";
    }
    t + &format!("    return {prev}\n}}\n\n")
}

fn read(text: &str) -> ClifModule {
    read_module_text(Path::new("cache.clif"), text, ReadOptions::default()).unwrap()
}

/// Whether `%f` and `%g` of `{%f, %g}` are one code class with `options`, after `warm` (the
/// module `{%f}` with other options) went through the same cache.
fn f_and_g_one_class(options: &ObjectOptions, warm: Option<&ObjectOptions>) -> bool {
    let cache = CodeCache::default();
    if let Some(warm) = warm {
        equal_code_classes(&read(&f("f", false)), warm, &cache).unwrap();
    }
    let both = read(&(f("f", false) + &f("g", true)));
    let classes = equal_code_classes(&both, options, &cache).unwrap();
    let ids = both.ids();
    classes[ids[0]].is_some() && classes[ids[0]] == classes[ids[1]]
}

/// `%f` compiled for x86_64 into a cache, then `{%f, %g}` for aarch64 with the same cache:
/// `%f` takes its x86_64 code from the cache, `%g` is compiled for aarch64, and the two are
/// told apart, where a fresh cache finds them one class. The same with one target and
/// `opt_level=none`, then the default (`speed`).
#[test]
fn a_cache_never_answers_one_isa_with_another_isas_code() {
    let aarch64 = options("aarch64-unknown-linux-gnu", &[]);
    let x86_64 = options("x86_64-unknown-linux-gnu", &[]);
    let unoptimized = options("x86_64-unknown-linux-gnu", &["opt_level=none"]);
    let mut wrong = Vec::new();
    for (asked, warm) in [(&aarch64, &x86_64), (&x86_64, &unoptimized)] {
        if !f_and_g_one_class(asked, Some(warm)) {
            wrong.push(format!("{} after {:?}", asked.target, warm.isa.flags));
        }
    }
    assert!(
        wrong.is_empty(),
        "split by a cache of other code: {wrong:?}"
    );
}

/// The held neighbour: one options, its own cache (warmed with the same options or not): one
/// class on both targets; and `%g` with a used constant instead (other machine code) is told
/// apart from `%f`, so the check can fail.
#[test]
fn a_cache_of_one_isa_keeps_its_classes() {
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let o = options(target, &[]);
        assert!(f_and_g_one_class(&o, None), "{target}, fresh");
        assert!(f_and_g_one_class(&o, Some(&o)), "{target}, warmed alike");
        let other = read(&(f("f", false) + &f("g", false).replace("iconst.i64 5", "iconst.i64 6")));
        let classes = equal_code_classes(&other, &o, &CodeCache::default()).unwrap();
        let ids = other.ids();
        assert_ne!(classes[ids[0]], classes[ids[1]], "{target}: other code");
    }
}

/// The pipeline's object from cached code, with global merging's round 2 (linkonce shared
/// bodies in COMDAT groups, thunks to them) and `--similar`, equals the merged module's
/// object written afresh: the three units of `tests/data/global`, each mode, both targets,
/// with and without function sections (held).
#[test]
fn global_merging_objects_from_cached_code_are_the_objects_compiling_gives() {
    use clif_merge::emit::object::write_object_with_records;
    use clif_merge::global::Summary;
    use clif_merge::pipeline::{PipelineOptions, run};
    use clif_merge::{MergeOptions, SimilarOptions, read_files};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/global");
    let units: Vec<ClifModule> = (0..3)
        .map(|k| {
            let path = dir.join(format!("unit{k}.clif"));
            read_files(&[path], ReadOptions::default()).unwrap()
        })
        .collect();
    let summary = Summary::combine(units.iter().map(Summary::of_module));
    let (mut compared, mut linkonce) = (0, 0);
    for unit in &units {
        for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
            for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                for function_sections in [false, true] {
                    let object = ObjectOptions {
                        function_sections,
                        mode,
                        ..options(target, &[])
                    };
                    let pipeline = PipelineOptions {
                        merge: MergeOptions {
                            mode,
                            summary: Some(summary.clone()),
                            similar: Some(SimilarOptions::default()),
                            ..MergeOptions::default()
                        },
                        object: Some(object.clone()),
                        ..Default::default()
                    };
                    let out = run(unit.clone(), &pipeline).unwrap();
                    let records: Vec<_> = (out.report.similar.iter().flatten())
                        .flat_map(|g| g.records.iter().cloned())
                        .collect();
                    let removed = out.report.removed();
                    let fresh =
                        write_object_with_records(&out.module, removed, &object, &records).unwrap();
                    assert!(
                        out.object.unwrap().bytes == fresh.bytes,
                        "{target} {mode:?} sections {function_sections}: differs from a fresh compile"
                    );
                    compared += 1;
                    linkonce += usize::from(
                        (out.module.functions())
                            .any(|f| f.linkage == clif_merge::SymbolLinkage::LinkOnce),
                    );
                }
            }
        }
    }
    assert_eq!(compared, 36);
    assert!(linkonce > 12, "only {linkonce} objects with shared bodies");
}
