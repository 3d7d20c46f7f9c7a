//! Merging for embedders that compile every function themselves (wasmtime-style compilers, or
//! any code generator that does not go through cranelift-module): hand over the functions, get
//! back, for each, what to compile or which other function stands for it, as typed data.
//!
//! Functions are named by `func.name`, as their callers name them (`u0:N` user names, as
//! cranelift-module gives them, or testcase names); a call to a name that is not among the
//! entries is an import. The merge is the exact one ([`crate::merge`]): the result does not
//! depend on the order of the entries.

use crate::error::Result;
use crate::merge::{MergeReport, Mode, merge_module};
use crate::module::{ClifModule, FunctionId, Symbol, SymbolLinkage};
use cranelift_codegen::ir::Function;
use cranelift_entity::EntityRef;

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

/// Merges `entries` (whose names must be distinct) under `mode`.
pub fn merge_functions<K: Clone>(entries: &[Entry<'_, K>], mode: Mode) -> Result<Merged<K>> {
    let mut module = ClifModule::new();
    for entry in entries {
        module.define(entry.func.clone(), entry.linkage, None)?;
    }
    let (report, _) = merge_module(&mut module, mode);
    // Ids are stable: entry `i` is `FunctionId(i)`; ids past the entries are private copies.
    let body = |id: FunctionId| match entries.get(id.index()) {
        Some(entry) => Body::Entry(entry.key.clone()),
        None => Body::PrivateCopy(id.index() - entries.len()),
    };
    let decisions = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let id = FunctionId::new(i);
            let mf = module.function(id);
            let decision = if !module.is_merged_away(id) {
                Decision::Compile(Box::new(mf.func.clone()))
            } else {
                let kept = report
                    .kept_for(id)
                    .and_then(|name| module.resolve(name))
                    .expect("a merged-away function's body is in a defined function");
                match module.lookup(&mf.name) {
                    Some(Symbol::Alias(_)) => Decision::AliasOf(body(kept)),
                    _ => Decision::Removed(body(kept)),
                }
            };
            (entry.key.clone(), decision)
        })
        .collect();
    let private_copies = module
        .ids()
        .iter()
        .filter(|id| id.index() >= entries.len())
        .map(|&id| module.function(id).func.clone())
        .collect();
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
