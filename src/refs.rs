//! What every function refers to, found once per module and read by every consumer: the merge
//! driver (which calls may be redirected), the merge policy (whose address is taken), the
//! object writer (address-significance tables, machine-code folding) and `--verify`.
//!
//! A function refers to other functions in three ways: a call through an external-function
//! declaration (`fnN`), the address of such a declaration (`func_addr`), and a `symbol` global
//! value. An alias also takes its target's address: both names are one address.

use crate::module::{ClifModule, FuncName, FunctionId, Symbol};
use crate::parallel;
use cranelift_codegen::ir::{FuncRef, Function, GlobalValueData, Inst, InstructionData};
use cranelift_entity::{EntityRef, EntitySet, SecondaryMap};

/// What one function refers to.
#[derive(Clone, Debug, Default)]
pub struct FunctionRefs {
    /// What each external-function declaration names in the module, by `FuncRef`.
    pub callees: Box<[Option<Symbol>]>,
    /// Declarations whose address is taken (`func_addr`), in `FuncRef` order, each once.
    pub address_uses: Box<[FuncRef]>,
    /// Every name, in the module or not, whose address the function uses (`func_addr`
    /// operands, then `symbol` global values), in declaration order, repeats included.
    pub addresses: Box<[FuncName]>,
}

impl FunctionRefs {
    /// Finds `func`'s references in `module`. Instructions are scanned in storage order, not
    /// layout order: an instruction that is not in the layout is dead, and counting it too is
    /// only conservative (and cheaper than the walk).
    pub fn of(module: &ClifModule, func: &Function) -> FunctionRefs {
        let callees = func
            .dfg
            .ext_funcs
            .values()
            .map(|ext| module.lookup_external(&ext.name, func))
            .collect();
        let mut address_uses: Vec<FuncRef> = Vec::new();
        if !func.dfg.ext_funcs.is_empty() {
            for i in 0..func.dfg.num_insts() {
                if let InstructionData::FuncAddr { func_ref, .. } = func.dfg.insts[Inst::new(i)] {
                    address_uses.push(func_ref);
                }
            }
        }
        let mut addresses: Vec<FuncName> = address_uses
            .iter()
            .filter_map(|&r| FuncName::of_external(&func.dfg.ext_funcs[r].name, func))
            .collect();
        for gv in func.global_values.values() {
            if let GlobalValueData::Symbol { name, .. } = gv {
                addresses.extend(FuncName::of_external(name, func));
            }
        }
        address_uses.sort_unstable();
        address_uses.dedup();
        FunctionRefs {
            callees,
            address_uses: address_uses.into(),
            addresses: addresses.into(),
        }
    }
}

/// What every function of a module refers to.
#[derive(Clone, Debug, Default)]
pub struct ModuleRefs {
    /// By id; a function without a body (or made after the references were found) refers to
    /// nothing. A vector rather than a `SecondaryMap`: in the usual module, whose ids are its
    /// layout, the references found in layout order are this vector as they come.
    functions: Vec<FunctionRefs>,
    /// What a function without references of its own refers to.
    nothing: FunctionRefs,
    address_taken: EntitySet<FunctionId>,
}

impl ModuleRefs {
    /// Finds the references of every function of `module` (in parallel in a large module).
    pub fn of(module: &ClifModule) -> ModuleRefs {
        ModuleRefs::of_with(module, || (), |_, _| ()).0
    }

    /// [`ModuleRefs::of`], and `also` of every function with a body, in the same pass (each
    /// thread has its own scratch state from `init`).
    pub fn of_with<S, R: Send + Clone>(
        module: &ClifModule,
        init: impl Fn() -> S + Sync,
        also: impl Fn(&mut S, &Function) -> R + Sync,
    ) -> (ModuleRefs, SecondaryMap<FunctionId, Option<R>>) {
        let ids = module.ids();
        let found = parallel::map(ids, init, |state, _, &id| {
            let func = &module.function(id).func;
            (FunctionRefs::of(module, func), also(state, func))
        });
        let mut extra = SecondaryMap::new();
        extra.resize(module.id_count());
        let mut functions = Vec::with_capacity(ids.len());
        for (&id, (function_refs, r)) in ids.iter().zip(found) {
            functions.push(function_refs);
            extra[id] = Some(r);
        }
        (ModuleRefs::from_functions(module, functions), extra)
    }

    /// The references of `module` from those of each function with a body, found by
    /// [`FunctionRefs::of`] in [`ClifModule::ids`] order (for a pass that finds them while it
    /// reads each function for its own ends).
    pub fn from_functions(module: &ClifModule, functions: Vec<FunctionRefs>) -> ModuleRefs {
        let ids = module.ids();
        let in_id_order =
            ids.len() == module.id_count() && ids.iter().enumerate().all(|(i, id)| id.index() == i);
        let functions = if in_id_order {
            functions
        } else {
            let mut by_id: Vec<FunctionRefs> = Vec::new();
            by_id.resize_with(module.id_count(), FunctionRefs::default);
            for (&id, function_refs) in ids.iter().zip(functions) {
                by_id[id.index()] = function_refs;
            }
            by_id
        };
        let mut refs = ModuleRefs {
            functions,
            ..ModuleRefs::default()
        };
        refs.address_taken = refs.find_address_taken(module);
        refs
    }

    /// What `f` refers to.
    pub fn of_function(&self, f: FunctionId) -> &FunctionRefs {
        self.functions.get(f.index()).unwrap_or(&self.nothing)
    }

    /// Whether the address of the defined function `f` is observable inside the module: named
    /// by `func_addr`, by a `symbol` global value, or by an alias.
    pub fn address_taken(&self, f: FunctionId) -> bool {
        self.address_taken.contains(f)
    }

    fn find_address_taken(&self, module: &ClifModule) -> EntitySet<FunctionId> {
        let mut taken = EntitySet::with_capacity(module.id_count());
        for &id in module.ids() {
            for name in &self.of_function(id).addresses {
                if let Some(target) = module.resolve(name) {
                    taken.insert(target);
                }
            }
        }
        for alias in module.aliases() {
            if let Some(target) = module.resolve(&alias.target) {
                taken.insert(target);
            }
        }
        taken
    }
}
