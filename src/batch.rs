//! Merging for embedders that compile every function themselves (wasmtime-style compilers, or
//! any code generator that does not go through cranelift-module): hand over the functions, get
//! back, for each, what to compile or which other function stands for it, as typed data.
//!
//! Functions are named by `func.name`, as their callers name them (`u0:N` user names, as
//! cranelift-module gives them, or testcase names); a call to a name that is not among the
//! entries is an import. The merge is the exact one ([`crate::merge`]), or what a
//! [`MergeOptions`] asks for ([`merge_functions_with`]): the result does not depend on the order
//! of the entries.

use crate::error::{Error, Result};
use crate::module::{ClifModule, FuncName, FunctionId, Symbol, SymbolLinkage};
use crate::pass::MergeOptions;
use crate::pass::MergeReport;
use crate::policy::Mode;
use cranelift_codegen::ir::Function;
use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;

/// One function to merge.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'f, K> {
    /// The embedder's own key for it (a `FuncId`, an index, a name).
    pub key: K,
    /// Its CLIF; its name is the one its callers use.
    pub func: &'f Function,
    /// How its symbol is seen (see [`SymbolLinkage`]).
    pub linkage: SymbolLinkage,
}

/// Where a function's body is, after the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body<K> {
    /// In this entry.
    Entry(K),
    /// In [`Merged::private_copies`]`[i]` (a class of preemptible functions only).
    PrivateCopy(usize),
}

/// What the embedder does with one entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision<K> {
    /// Compile this function under the entry's name: the entry's own body (calls to merged
    /// functions redirected), or a thunk that calls the function holding its body.
    Compile(Box<Function>),
    /// Compile nothing: the entry's symbol is an alias of the body's address.
    AliasOf(Body<K>),
    /// Compile nothing and define no symbol: nothing can reach the entry any more (it was
    /// `local`, and every call to it now calls the body).
    Removed(Body<K>),
}

/// The merge of a batch of entries.
#[derive(Clone, Debug)]
pub struct Merged<K> {
    /// Every entry's decision, in the order of the entries.
    pub decisions: Vec<(K, Decision<K>)>,
    /// Functions to compile that are no entry: private copies of bodies whose every owner is
    /// preemptible, each `local`, under a name no entry has.
    pub private_copies: Vec<Function>,
    /// What the pass did, as for a module.
    pub report: MergeReport,
}

/// Merges `entries` (whose names must be distinct) under `mode`: the exact merge,
/// [`merge_functions_with`] with only a mode.
pub fn merge_functions<K: Clone>(entries: &[Entry<'_, K>], mode: Mode) -> Result<Merged<K>> {
    let options = MergeOptions {
        mode,
        ..MergeOptions::default()
    };
    merge_functions_with(entries, &options)
}

/// Merges `entries` (whose names must be distinct) as `options` say. With similar merging, a
/// member whose calls now go to a shared body is compiled as a thunk passing its values to
/// that body (the embedder may still call it by its key), and shared bodies are private copies.
/// A summary for global merging is refused ([`crate::Error::Unsupported`]): its shared bodies
/// need symbols only the object writer makes.
///
/// ```
/// use clif_merge::batch::{Decision, Entry, merge_functions_with};
/// use clif_merge::{MergeOptions, SimilarOptions, SymbolLinkage};
///
/// // Equal but for one constant: similar merging gives them one body with a parameter.
/// let funcs = cranelift_reader::parse_functions(
///     "function u0:0(i64) -> i64 system_v {
///      block0(v0: i64):
///          v1 = iconst.i64 37
///          v2 = imul v0, v1
///          v3 = iconst.i64 11
///          v4 = iadd v2, v3
///          v5 = imul v4, v0
///          v6 = isub v5, v2
///          return v6
///      }
///      function u0:1(i64) -> i64 system_v {
///      block0(v0: i64):
///          v1 = iconst.i64 41
///          v2 = imul v0, v1
///          v3 = iconst.i64 11
///          v4 = iadd v2, v3
///          v5 = imul v4, v0
///          v6 = isub v5, v2
///          return v6
///      }",
/// )
/// .unwrap();
/// let entries: Vec<_> = funcs
///     .iter()
///     .enumerate()
///     .map(|(key, func)| Entry { key, func, linkage: SymbolLinkage::Export })
///     .collect();
/// // Functions this small save bytes only when compiled (the embedder's call); the default
/// // `min_saving` keeps the groups the cost model says save, this forces every group that fits.
/// let similar = SimilarOptions { min_saving: i64::MIN / 2, ..SimilarOptions::default() };
/// let options = MergeOptions {
///     similar: Some(similar),
///     ..MergeOptions::default()
/// };
/// let merged = merge_functions_with(&entries, &options).unwrap();
/// // Both become thunks passing their constant to one shared body, compiled once.
/// assert_eq!(merged.private_copies.len(), 1);
/// assert!(merged.decisions.iter().all(|(_, d)| matches!(d, Decision::Compile(_))));
/// ```
pub fn merge_functions_with<K: Clone>(
    entries: &[Entry<'_, K>],
    options: &MergeOptions,
) -> Result<Merged<K>> {
    if options.summary.is_some() {
        return Err(Error::Unsupported(
            "batch merging cannot take a summary: global merging's shared bodies need symbols \
             only the object writer makes"
                .to_owned(),
        ));
    }
    let mut module = ClifModule::new();
    for entry in entries {
        module.define(entry.func.clone(), entry.linkage, None)?;
    }
    let (report, _) = crate::pass::merge_module_with_options(&mut module, options);
    let stand_ins = crate::pass::stand_ins_by_id(&module, &report);
    // Ids are stable: entry `i` is `FunctionId(i)`; the ids past the entries that still hold a
    // body (or stand in for a removed similar member) are the private copies, in order.
    let copies: Vec<FunctionId> = (entries.len()..module.id_count())
        .map(FunctionId::new)
        .filter(|id| !module.is_merged_away(*id) || stand_ins.contains_key(id))
        .collect();
    let body = |id: FunctionId| match entries.get(id.index()) {
        Some(entry) => Body::Entry(entry.key.clone()),
        None => Body::PrivateCopy(
            copies
                .binary_search(&id)
                .expect("a body past the entries is a private copy"),
        ),
    };
    // Every function by name, merged-away ones included: a kept function that similar merging
    // removed no longer has a symbol, but its stand-in holds its body.
    let by_name: FxHashMap<&FuncName, FunctionId> = (0..module.id_count())
        .map(FunctionId::new)
        .map(|f| (&module.function(f).name, f))
        .collect();
    let compiled = |id: FunctionId| match stand_ins.get(&id) {
        Some(stand_in) => stand_in.clone(),
        None => Function::clone(&module.function(id).func),
    };
    let decisions = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let id = FunctionId::new(i);
            let mf = module.function(id);
            let decision = if !module.is_merged_away(id) || stand_ins.contains_key(&id) {
                Decision::Compile(Box::new(compiled(id)))
            } else {
                let kept_name = report
                    .kept_for(id)
                    .expect("a merged-away function's body is in another function");
                let kept = module
                    .resolve(kept_name)
                    .or_else(|| by_name.get(kept_name).copied())
                    .expect("a merged-away function's body is in a defined function");
                match module.lookup(&mf.name) {
                    Some(Symbol::Alias(_)) => Decision::AliasOf(body(kept)),
                    _ => Decision::Removed(body(kept)),
                }
            };
            (entry.key.clone(), decision)
        })
        .collect();
    let private_copies = copies.iter().map(|&id| compiled(id)).collect();
    Ok(Merged {
        decisions,
        private_copies,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Function> {
        cranelift_reader::parse_functions(text).expect("valid CLIF")
    }

    const FUNCTIONS: &str = "
        function u0:0(i32) -> i32 system_v {
        block0(v0: i32):
            v1 = iconst.i32 3
            v2 = imul v0, v1
            return v2
        }
        function u0:1(i32) -> i32 system_v {
        block0(v0: i32):
            v1 = iconst.i32 3
            v2 = imul v0, v1
            return v2
        }
        function u0:2(i32) -> i32 system_v {
            sig0 = (i32) -> i32 system_v
            fn0 = colocated u0:1 sig0
        block0(v0: i32):
            v1 = call fn0(v0)
            return v1
        }
        function u0:3(i32) -> i32 system_v {
        block0(v0: i32):
            v1 = iconst.i32 3
            v2 = imul v0, v1
            return v2
        }";

    fn entries<'f>(
        funcs: &'f [Function],
        linkages: &[SymbolLinkage],
    ) -> Vec<Entry<'f, &'static str>> {
        let keys = ["a", "b", "c", "d"];
        funcs
            .iter()
            .zip(linkages)
            .zip(keys)
            .map(|((func, &linkage), key)| Entry { key, func, linkage })
            .collect()
    }

    #[test]
    fn each_entry_is_compiled_aliased_or_removed_with_typed_targets() {
        use SymbolLinkage::*;
        let funcs = parse(FUNCTIONS);
        let merged = merge_functions(
            &entries(&funcs, &[Export, Local, Export, Hidden]),
            Mode::Safe,
        )
        .unwrap();
        let decision = |key: &str| &merged.decisions.iter().find(|d| d.0 == key).unwrap().1;
        // `a` keeps the body; `b` was local and nobody takes its address: removed.
        assert!(matches!(decision("a"), Decision::Compile(_)));
        assert_eq!(decision("b"), &Decision::Removed(Body::Entry("a")));
        // `c` calls `b`: its call now goes to `a`.
        let Decision::Compile(c) = decision("c") else {
            panic!("c is compiled")
        };
        assert!(
            c.display().to_string().contains("colocated u0:0"),
            "{}",
            c.display()
        );
        // `d` is hidden: others may reach it, so it stays, as a thunk.
        let Decision::Compile(d) = decision("d") else {
            panic!("d is compiled")
        };
        assert!(
            d.display().to_string().contains("call fn0"),
            "{}",
            d.display()
        );
        assert!(merged.private_copies.is_empty());
        assert_eq!(merged.report.merged, 2);

        let aliases = merge_functions(
            &entries(&funcs, &[Export, Local, Export, Hidden]),
            Mode::Aliases,
        )
        .unwrap();
        assert_eq!(aliases.decisions[3].1, Decision::AliasOf(Body::Entry("a")));
    }

    #[test]
    fn preemptible_classes_get_a_private_copy() {
        use SymbolLinkage::*;
        let funcs = parse(FUNCTIONS);
        let all = [Preemptible, Preemptible, Export, Preemptible];
        let merged = merge_functions(&entries(&funcs, &all), Mode::Aliases).unwrap();
        assert_eq!(merged.private_copies.len(), 1);
        for key in ["a", "b", "d"] {
            let decision = &merged.decisions.iter().find(|d| d.0 == key).unwrap().1;
            assert_eq!(decision, &Decision::AliasOf(Body::PrivateCopy(0)), "{key}");
        }
    }

    /// `u0:0` and `u0:1` differ in one constant; `u0:2` is local and differs in another;
    /// `u0:3` calls `u0:2`.
    const NEAR_DUPLICATES: &str = "
        function u0:0(i64) -> i64 system_v {
        block0(v0: i64):
            v1 = iconst.i64 37
            v2 = imul v0, v1
            v3 = iconst.i64 11
            v4 = iadd v2, v3
            v5 = imul v4, v0
            v6 = isub v5, v2
            return v6
        }
        function u0:1(i64) -> i64 system_v {
        block0(v0: i64):
            v1 = iconst.i64 41
            v2 = imul v0, v1
            v3 = iconst.i64 11
            v4 = iadd v2, v3
            v5 = imul v4, v0
            v6 = isub v5, v2
            return v6
        }
        function u0:2(i64) -> i64 system_v {
        block0(v0: i64):
            v1 = iconst.i64 43
            v2 = imul v0, v1
            v3 = iconst.i64 11
            v4 = iadd v2, v3
            v5 = imul v4, v0
            v6 = isub v5, v2
            return v6
        }
        function u0:3(i64) -> i64 system_v {
            sig0 = (i64) -> i64 system_v
            fn0 = colocated u0:2 sig0
        block0(v0: i64):
            v1 = call fn0(v0)
            return v1
        }";

    fn similar_options() -> MergeOptions {
        MergeOptions {
            similar: Some(crate::SimilarOptions::default()),
            ..MergeOptions::default()
        }
    }

    #[test]
    fn similar_options_merge_near_duplicates_into_one_private_shared_body() {
        use SymbolLinkage::*;
        let funcs = parse(NEAR_DUPLICATES);
        let entries = entries(&funcs, &[Export, Export, Local, Export]);
        let exact = merge_functions(&entries, Mode::Safe).unwrap();
        assert_eq!(exact.report.merged, 0, "no two are equal");
        let merged = merge_functions_with(&entries, &similar_options()).unwrap();
        let groups = merged.report.similar.as_ref().expect("similar merging ran");
        assert_eq!(groups.len(), 1, "{:?}", merged.report);
        assert_eq!(merged.private_copies.len(), 1, "the shared body");
        let shared = merged.private_copies[0].name.to_string();
        // Every entry is compiled: the exported members as thunks to the shared body, the local
        // one (removed from its callers) as a stand-in its key can still be called through.
        for (key, decision) in &merged.decisions {
            let Decision::Compile(func) = decision else {
                panic!("{key} is compiled: {decision:?}")
            };
            let text = func.display().to_string();
            if *key == "d" {
                assert!(text.contains(&shared), "d calls the shared body: {text}");
            } else {
                assert!(text.contains(&shared), "{key} is a thunk: {text}");
                assert!(!text.contains("imul"), "{key} is a thunk: {text}");
            }
        }
        let c = &merged.decisions[2].1;
        let Decision::Compile(c) = c else { panic!() };
        assert!(
            c.display().to_string().contains("43"),
            "c passes its constant"
        );
    }

    #[test]
    fn options_choose_the_mode_and_a_summary_is_refused() {
        use SymbolLinkage::*;
        let funcs = parse(FUNCTIONS);
        let entries = entries(&funcs, &[Export, Local, Export, Hidden]);
        let aliases = MergeOptions {
            mode: Mode::Aliases,
            ..MergeOptions::default()
        };
        let by_options = merge_functions_with(&entries, &aliases).unwrap();
        let by_mode = merge_functions(&entries, Mode::Aliases).unwrap();
        assert_eq!(by_options.decisions, by_mode.decisions);
        assert_eq!(
            by_options.decisions[3].1,
            Decision::AliasOf(Body::Entry("a"))
        );
        let summary = MergeOptions {
            summary: Some(crate::global::Summary::default()),
            ..MergeOptions::default()
        };
        let refused = merge_functions_with(&entries, &summary).unwrap_err();
        assert!(matches!(refused, Error::Unsupported(_)), "{refused}");
    }

    #[test]
    fn the_decisions_do_not_depend_on_the_order_of_the_entries() {
        use SymbolLinkage::*;
        let funcs = parse(FUNCTIONS);
        let linkages = [Export, Local, Export, Hidden];
        let forward = merge_functions(&entries(&funcs, &linkages), Mode::Safe).unwrap();
        let mut reversed_entries = entries(&funcs, &linkages);
        reversed_entries.reverse();
        let mut reversed = merge_functions(&reversed_entries, Mode::Safe).unwrap();
        reversed.decisions.reverse();
        assert_eq!(forward.decisions, reversed.decisions);
    }
}
