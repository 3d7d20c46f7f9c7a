//! What eager merging saves an embedder that defines duplicates: a corpus module defined twice
//! under other names (as a JIT that loads the same wasm module twice would), once into a plain
//! `ObjectModule` and through `MergingModule` (eager, in module order and with callees defined
//! before their callers; deferred), alternating; wall time of the definitions (compilation
//! included, and `finish` for deferred), functions compiled, and the object's `.text` bytes
//! (thunks are one jump: 5 bytes on x86_64).
//!
//!     cargo bench --bench eager [-- FILE.clif]      # default ../shared/corpus/dprint_markdown.clif
//!
//! `EAGER_RUNS` sets the pairs of runs (default 3).

use clif_merge::{ClifModule, FuncName, MergingModule, ReadOptions, read_files};
use cranelift_codegen::ir::{ExternalName, Function, UserExternalName, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/corpus/dprint_markdown.clif"));
    if !path.exists() {
        println!("note: skipping: {} is missing", path.display());
        return;
    }
    let module =
        read_files(std::slice::from_ref(&path), ReadOptions::default()).expect("a valid module");
    let runs: usize = std::env::var("EAGER_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let module_order: Vec<usize> = (0..module.len()).collect();
    let callees_first = callees_first(&module);
    let (mut plain, mut eager, mut eager_sorted) = (Vec::new(), Vec::new(), Vec::new());
    let (mut merged, mut merged_sorted) = (0, 0);
    let (mut deferred, mut merged_deferred) = (Vec::new(), 0);
    // `.text` bytes: plain, eager (module order, callees first), deferred.
    let mut text = [0; 4];
    for _ in 0..runs {
        let mut object = object_module();
        let start = Instant::now();
        define_twice(&mut object, &module, &module_order);
        plain.push(start.elapsed());
        text[0] = text_bytes(object);
        let [_, text_eager, text_sorted, _] = &mut text;
        for (order, times, merged, text) in [
            (&module_order, &mut eager, &mut merged, text_eager),
            (
                &callees_first,
                &mut eager_sorted,
                &mut merged_sorted,
                text_sorted,
            ),
        ] {
            let mut merging = MergingModule::new(object_module());
            let start = Instant::now();
            define_twice(&mut merging, &module, order);
            times.push(start.elapsed());
            let (object, report) = merging.finish().expect("finish");
            *merged = report.merged;
            *text = text_bytes(object);
        }
        // Deferred: definitions are kept; `finish` merges and compiles.
        let mut merging = MergingModule::deferred(object_module());
        let start = Instant::now();
        define_twice(&mut merging, &module, &module_order);
        let (object, report) = merging.finish().expect("finish");
        merged_deferred = report.merged;
        deferred.push(start.elapsed());
        text[3] = text_bytes(object);
    }
    let defined = 2 * module.len();
    let p = median(&mut plain);
    println!(
        "{}: {} functions defined twice ({defined} definitions)",
        path.display(),
        module.len()
    );
    println!(
        "plain ObjectModule:                     {defined} compiled, {:.0} ms (median of {runs}), \
         {} bytes of .text",
        ms(p),
        text[0]
    );
    for (what, times, merged, text) in [
        ("eager, module order", &mut eager, merged, text[1]),
        (
            "eager, callees first",
            &mut eager_sorted,
            merged_sorted,
            text[2],
        ),
        (
            "deferred, with finish",
            &mut deferred,
            merged_deferred,
            text[3],
        ),
    ] {
        let e = median(times);
        println!(
            "MergingModule ({what}): {} compiled, {merged} thunks, {:.0} ms ({:.2} of plain), \
             {text} bytes of .text",
            defined - merged,
            ms(e),
            e.as_secs_f64() / p.as_secs_f64()
        );
    }
}

/// The functions in an order where a callee comes before its callers (a depth-first post-order;
/// a cycle is cut where it is met).
fn callees_first(module: &ClifModule) -> Vec<usize> {
    let index: HashMap<FuncName, usize> = module
        .functions()
        .enumerate()
        .map(|(i, mf)| (mf.name.clone(), i))
        .collect();
    let callees: Vec<Vec<usize>> = module
        .functions()
        .map(|mf| {
            mf.func
                .dfg
                .ext_funcs
                .values()
                .filter_map(|ext| FuncName::of_external(&ext.name, &mf.func))
                .filter_map(|n| index.get(&n).copied())
                .collect()
        })
        .collect();
    let mut seen = vec![false; callees.len()];
    let mut order = Vec::with_capacity(callees.len());
    for root in 0..callees.len() {
        // Iterative DFS: (function, next callee to visit).
        let mut stack = vec![(root, 0)];
        while let Some((f, next)) = stack.pop() {
            if next == 0 {
                if seen[f] {
                    continue;
                }
                seen[f] = true;
            }
            match callees[f].get(next) {
                Some(&c) => {
                    stack.push((f, next + 1));
                    if !seen[c] {
                        stack.push((c, 0));
                    }
                }
                None => order.push(f),
            }
        }
    }
    order
}

fn object_module() -> ObjectModule {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").unwrap();
    flags.set("is_pic", "true").unwrap();
    flags.set("preserve_frame_pointers", "true").unwrap();
    let isa = cranelift_native::builder()
        .unwrap()
        .finish(settings::Flags::new(flags))
        .unwrap();
    ObjectModule::new(ObjectBuilder::new(isa, "eager", default_libcall_names()).unwrap())
}

/// Declares every function of `module` twice (`c0_…`, `c1_…`), and the names it calls but does
/// not define as imports; then defines copy 0, then copy 1, each in `order`.
fn define_twice<M: Module>(target: &mut M, module: &ClifModule, order: &[usize]) {
    let index: HashMap<FuncName, usize> = module
        .functions()
        .enumerate()
        .map(|(i, mf)| (mf.name.clone(), i))
        .collect();
    let mut ids: [Vec<FuncId>; 2] = [Vec::new(), Vec::new()];
    for (copy, copy_ids) in ids.iter_mut().enumerate() {
        for mf in module.functions() {
            let name = format!("c{copy}_{}", mf.name).replace([':', '%'], "_");
            let id = target
                .declare_function(&name, Linkage::Export, &mf.func.signature)
                .unwrap();
            copy_ids.push(id);
        }
    }
    let mut imports: HashMap<FuncName, FuncId> = HashMap::new();
    let mut ctx = target.make_context();
    let functions: Vec<_> = module.functions().collect();
    for copy_ids in &ids {
        for &i in order {
            let mf = functions[i];
            let mut func: Function = (*mf.func).clone();
            for r in func.dfg.ext_funcs.keys().collect::<Vec<_>>() {
                let Some(name) = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func) else {
                    continue;
                };
                let id = match index.get(&name) {
                    Some(&j) => copy_ids[j],
                    None => *imports.entry(name.clone()).or_insert_with(|| {
                        let sig = func.dfg.signatures[func.dfg.ext_funcs[r].signature].clone();
                        let text = name.to_string().replace([':', '%'], "_");
                        target
                            .declare_function(&text, Linkage::Import, &sig)
                            .unwrap()
                    }),
                };
                let user =
                    func.declare_imported_user_function(UserExternalName::new(0, id.as_u32()));
                func.dfg.ext_funcs[r].name = ExternalName::user(user);
            }
            func.name = UserFuncName::user(0, copy_ids[i].as_u32());
            ctx.func = func;
            target.define_function(copy_ids[i], &mut ctx).unwrap();
            target.clear_context(&mut ctx);
        }
    }
}

/// The bytes of code in the object `module` writes.
fn text_bytes(module: ObjectModule) -> u64 {
    use object::{Object, ObjectSection, SectionKind};
    let bytes = module.finish().emit().expect("an object");
    let file = object::File::parse(&*bytes).expect("a valid object");
    file.sections()
        .filter(|s| s.kind() == SectionKind::Text)
        .map(|s| s.size())
        .sum()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
