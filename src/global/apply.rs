//! Round 2: a unit's functions whose content another unit also holds become thunks to one
//! shared body named after that content, which every such unit emits and the linker keeps once.

use super::key::{OwnFunction, content_name_hash_of, content_tokens, function_key, walk_weight};
use super::report::{GlobalReport, SharedBody};
use super::summary::Summary;
use crate::compare::FingerprintWriter;
use crate::compare::stable_hash::{ContentHash, NameHasher};
use crate::edit::thunk::{is_forwarding_thunk, rewrite_as_thunk};
use crate::module::{ClifModule, FuncName, FunctionId, Symbol, SymbolLinkage};
use crate::parallel;
use crate::policy::frame::reads_own_frame;
use crate::refs::{FunctionRefs, ModuleRefs};
use crate::similar::SimilarOptions;
use cranelift_codegen::ir::Function;
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;

/// A body smaller than this many instructions is not worth a thunk in every unit.
pub const MIN_INSTRUCTIONS: usize = 2;

/// The name of the shared body of `func`'s content (`key::content_name_hash`).
pub fn shared_name(func: &Function) -> FuncName {
    name_of_content(super::key::content_name_hash(
        &mut FingerprintWriter::new(),
        func,
    ))
}

/// The name of a shared body whose content hash is `hash`.
fn name_of_content(hash: u128) -> FuncName {
    FuncName::Testcase(format!("clifmerge_{hash:032x}").into())
}

/// The symbol that the shared body named `name` (a content name `clifmerge_<hash>` or
/// `clifmerge_p<hash>`) gets in an object compiled as `build` (the target triple and every
/// setting that changes code, as the object writer spells them): the same prefix and the
/// BLAKE3 hash of the name and the build. None for any other name.
///
/// A content name names the IR; units compiled from equal IR with other settings (another
/// CPU, NaN canonicalization) hold other machine code, which must not go by one symbol, or
/// the linker would keep one build's copy for all. The build is added where the code is made,
/// so it holds whatever produced the CLIF (round 2 with `-o`, or CLIF compiled later).
pub fn shared_symbol(name: &FuncName, build: &str) -> Option<String> {
    let FuncName::Testcase(text) = name else {
        return None;
    };
    let text: &str = text;
    let rest = text.strip_prefix("clifmerge_")?;
    let hash = rest.strip_prefix('p').unwrap_or(rest);
    let is_content_name = hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_content_name {
        return None;
    }
    let prefix = &text[..text.len() - 32];
    let mut h = ContentHash::new();
    h.str("clif-merge shared body symbol");
    h.str(text);
    h.str(build);
    Some(format!("{prefix}{:032x}", h.finish()))
}

/// Round 2 of global merging on one unit (see [`crate::global`]): every function that
/// functions of other units equal, or equal but for callees (with `similar`: but for constants,
/// symbols and callees), according to `summary`, becomes a thunk to a shared body named after
/// its content, with [`SymbolLinkage::LinkOnce`]. Run the module's own merge after this one.
pub fn merge_with_summary(
    module: &mut ClifModule,
    summary: &Summary,
    similar: Option<&SimilarOptions>,
) -> GlobalReport {
    let refs = ModuleRefs::of(module);
    let own: Vec<Option<OwnFunction>> = parallel::map_weighted(
        module.ids(),
        walk_weight(module),
        FingerprintWriter::new,
        |writer, _, &id| {
            let mf = module.function(id);
            let refs_of = refs.of_function(id);
            let eligible = !mf.linkage.is_preemptible()
                && !refs_of.addresses.contains(&mf.name)
                && !refers_to_local(module, id, refs_of)
                && is_worth_sharing(&mf.func)
                // A thunk to a shared body would run it in a frame of its own.
                && !reads_own_frame(&mf.func);
            eligible.then(|| {
                let key = function_key(module, &refs_of.callees, id, writer);
                OwnFunction {
                    id,
                    key: key.key,
                    self_by_name: key.self_by_name,
                    param: key.param,
                }
            })
        },
    );
    let own: Vec<OwnFunction> = own.into_iter().flatten().collect();
    let mut report = GlobalReport {
        summary_functions: summary.entries().len(),
        shared: Vec::new(),
    };
    let mut done = FxHashSet::default();
    // A shared body never takes a name the unit already calls (an import): those calls would
    // call it.
    let mut in_use = None;
    report.shared = super::params::share_with_parameters(
        module,
        &refs,
        summary,
        &own,
        similar,
        &mut done,
        &mut in_use,
    );
    let alone = KeysAlone::of(summary);
    let elsewhere = keys_elsewhere(module, summary, &alone);
    let mut groups: BTreeMap<u128, Vec<Member>> = BTreeMap::new();
    for f in own.iter().filter(|f| !done.contains(&f.id)) {
        if elsewhere.contains(&f.key) {
            groups.entry(f.key).or_default().push(Member {
                id: f.id,
                self_by_name: false,
            });
        } else if let Some(key) = f
            .self_by_name
            .filter(|k| alone.is_alone(f.key) && elsewhere.contains(k))
        {
            // Another unit holds a copy of it that calls it: it joins that copy's body, its
            // own content with its calls of itself made calls of its name.
            groups.entry(key).or_default().push(Member {
                id: f.id,
                self_by_name: true,
            });
        }
    }
    for members in groups.into_values() {
        if let Some(shared) = share(module, &members, &mut in_use) {
            report.shared.push(shared);
        }
    }
    report.shared.sort_by(|a, b| a.shared.cmp(&b.shared));
    report
}

/// A function of the unit that becomes a thunk to a shared body without parameters.
pub(super) struct Member {
    pub(super) id: FunctionId,
    /// It joins by [`OwnFunction::self_by_name`]: its calls of itself are calls of its name in
    /// the shared body.
    pub(super) self_by_name: bool,
}

/// Which content keys one function of the summary holds alone. A function that calls itself
/// joins a body by its key with calls of itself by name only when no other function has its
/// own key (then it would join theirs): every unit decides this alike from the summary, so no
/// unit makes a thunk to a body that the function's unit will not make too.
struct KeysAlone {
    counts: rustc_hash::FxHashMap<u128, u32>,
}

impl KeysAlone {
    fn of(summary: &Summary) -> KeysAlone {
        let mut counts = rustc_hash::FxHashMap::default();
        for e in summary
            .entries()
            .iter()
            .filter(|e| !e.linkage.is_preemptible())
        {
            *counts.entry(e.key).or_default() += 1;
        }
        KeysAlone { counts }
    }

    /// Whether at most one function of the summary has `key` (none: a stale summary).
    fn is_alone(&self, key: u128) -> bool {
        self.counts.get(&key).is_none_or(|&n| n <= 1)
    }
}

/// The content keys of summary functions that this module does not define (functions of other
/// units), but for preemptible ones: their keys and, where they will join by it, their keys
/// with calls of themselves by name.
fn keys_elsewhere(module: &ClifModule, summary: &Summary, alone: &KeysAlone) -> FxHashSet<u128> {
    summary
        .entries()
        .iter()
        .filter(|e| !e.linkage.is_preemptible() && module.lookup(&e.name).is_none())
        .flat_map(|e| {
            let by_name = e.self_by_name.filter(|_| alone.is_alone(e.key));
            std::iter::once(e.key).chain(by_name)
        })
        .collect()
}

/// Whether `id` calls or takes the address of a `local` function or alias of its unit (other
/// than itself): another unit may have a local symbol of that name with another body, so the
/// name does not say what is called and the content key does not pin the behaviour.
fn refers_to_local(module: &ClifModule, id: FunctionId, refs: &FunctionRefs) -> bool {
    let is_local = |symbol: Symbol| {
        let linkage = match symbol {
            Symbol::Function(f) => module.function(f).linkage,
            Symbol::Alias(a) => module.aliases()[a].linkage,
        };
        linkage == SymbolLinkage::Local && symbol != Symbol::Function(id)
    };
    refs.callees.iter().flatten().any(|&s| is_local(s))
        || refs
            .addresses
            .iter()
            .filter_map(|name| module.lookup(name))
            .any(is_local)
}

fn is_worth_sharing(func: &Function) -> bool {
    if is_forwarding_thunk(func) {
        return false;
    }
    let mut count = 0;
    for block in func.layout.blocks() {
        count += func.layout.block_insts(block).count();
        if count >= MIN_INSTRUCTIONS {
            return true;
        }
    }
    false
}

/// Defines the shared body of `members` (one content key) and makes them thunks to it; None
/// when the module already has a function of that name (a unit merged twice) or refers to one
/// (an import; `in_use` caches [`crate::edit::names_in_use`]).
///
/// The body is made from a member that joined by its own key when there is one; otherwise
/// from one that joined by its key with calls of itself by name, whose body then keeps calling
/// it by name (it becomes a thunk to the body: the same recursion, one jump longer). Keys only
/// group: a member whose content tokens are not the body's (a key collision) stays as it is.
pub(super) fn share(
    module: &mut ClifModule,
    members: &[Member],
    in_use: &mut Option<FxHashSet<FuncName>>,
) -> Option<SharedBody> {
    let first = members
        .iter()
        .find(|m| !m.self_by_name)
        .unwrap_or(&members[0]);
    let mut writer = FingerprintWriter::new();
    let mut tokens_of =
        |m: &Member| content_tokens(&mut writer, &module.function(m.id).func, m.self_by_name);
    let tokens = tokens_of(first);
    let members: Vec<FunctionId> = members
        .iter()
        .filter(|m| m.id == first.id || tokens_of(m) == tokens)
        .map(|m| m.id)
        .collect();
    let name = name_of_content(content_name_hash_of(&tokens));
    if !crate::edit::name_is_free(module, in_use, &name) {
        return None;
    }
    let mf = module.function(first.id);
    let own = (!first.self_by_name).then_some(&mf.name);
    let body = shared_body(&mf.func, own, &name);
    // Where its code came from: an error compiling it names that file and line (hostile15).
    let origin = mf.origin.clone();
    module
        .define(body, SymbolLinkage::LinkOnce, origin)
        .expect("a fresh name; references of a verified function");
    let mut names: Vec<FuncName> = Vec::with_capacity(members.len());
    for &id in &members {
        let mf = module.function_mut(id);
        rewrite_as_thunk(&mut mf.func, &mf.name, &name);
        names.push(mf.name.clone());
    }
    names.sort();
    Some(SharedBody {
        shared: name,
        parameters: 0,
        members: names,
    })
}

/// `func` as the body named `shared`: when `own` (its name) is given, its calls to itself call
/// `shared`; otherwise they keep calling `func`'s name.
fn shared_body(func: &Function, own: Option<&FuncName>, shared: &FuncName) -> Function {
    let mut body = func.clone();
    body.name = shared.to_user_func_name();
    let self_refs: Vec<_> = body
        .dfg
        .ext_funcs
        .iter()
        .filter(|(_, data)| {
            own.is_some_and(|own| FuncName::of_external(&data.name, func).as_ref() == Some(own))
        })
        .map(|(r, _)| r)
        .collect();
    for r in self_refs {
        body.dfg.ext_funcs[r].name = shared.to_external(&mut body);
    }
    // Numbered by the walk: the text depends on the content, not on which member it came from.
    crate::similar::canonical::canonical_copy(&body)
}

/// For tests: the key of each function of `module` by name.
#[cfg(test)]
pub(crate) fn keys_by_name(module: &ClifModule) -> rustc_hash::FxHashMap<FuncName, u128> {
    let mut writer = FingerprintWriter::new();
    let refs = ModuleRefs::of(module);
    module
        .iter()
        .map(|(id, mf)| {
            (
                mf.name.clone(),
                function_key(module, &refs.of_function(id).callees, id, &mut writer).key,
            )
        })
        .collect()
}

/// For tests: the key of each function of `module` by name, written without holes.
#[cfg(test)]
pub(crate) fn plain_keys_by_name(module: &ClifModule) -> rustc_hash::FxHashMap<FuncName, u128> {
    let mut writer = FingerprintWriter::new();
    module
        .functions()
        .map(|mf| {
            (
                mf.name.clone(),
                super::key::content_name_hash(&mut writer, &mf.func),
            )
        })
        .collect()
}
