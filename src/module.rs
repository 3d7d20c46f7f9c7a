//! The module: the functions a merge works on, their names and linkage, and the aliases.
//!
//! A module is the set of *defined* functions (a name, a [`Function`] and a [`SymbolLinkage`])
//! plus aliases (a second name for a defined function, recorded for the object writer). Every
//! other name a function refers to is an import. Names are exactly as CLIF writes them: `%foo` (a
//! testcase name) or `u0:3` (a user name); a callee declaration `fn0 = colocated u0:5 sig0`
//! refers to the defined function of that name when there is one.
//!
//! Ids are stable: a [`FunctionId`] names the same function for the module's whole life. A
//! function that a merge removes or turns into an alias keeps its id, name, linkage and signature
//! (its body is dropped) but leaves the *layout*, the list of functions that have a body, in
//! output order. What references what is found in [`crate::refs`].

use cranelift_codegen::ir::{ExternalName, Function, UserFuncName};
use cranelift_entity::{EntitySet, PrimaryMap, entity_impl};
use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;

pub use crate::name::FuncName;

/// How a defined function's symbol is seen by the rest of the program.
///
/// The declaration order is the order in which class members are considered for keeping, but
/// for `linkonce`, which comes first (`crate::policy::kept_order`).
/// With the `cli` feature, also a [`clap::ValueEnum`] (`--default-linkage`), `linkonce` left out.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum SymbolLinkage {
    /// Visible to every object and the outside world (the default).
    #[default]
    Export,
    /// Visible to the other objects of the same link, not outside it.
    Hidden,
    /// Visible only inside this module.
    Local,
    /// May be replaced by another definition at link time (LLVM's weak/interposable).
    Preemptible,
    /// One of identical definitions that several objects of a program may hold, of which the
    /// linker keeps one (LLVM's `linkonce_odr` hidden: an ELF COMDAT group, a Mach-O weak
    /// definition); visible to the objects of the link, not outside it. Global merging
    /// ([`crate::global`]) names such a function after its content, so every copy is the same
    /// function. A merge never replaces it, and never assumes that calls to it reach this
    /// copy; a function equal to it calls it (every copy is the same function).
    #[cfg_attr(feature = "cli", value(skip))]
    LinkOnce,
}

impl SymbolLinkage {
    /// The keyword used in `; linkage:` directives and on the command line.
    pub fn keyword(self) -> &'static str {
        match self {
            SymbolLinkage::Export => "export",
            SymbolLinkage::Hidden => "hidden",
            SymbolLinkage::Local => "local",
            SymbolLinkage::Preemptible => "preemptible",
            SymbolLinkage::LinkOnce => "linkonce",
        }
    }

    /// The linkage a keyword names.
    pub fn from_keyword(word: &str) -> Option<SymbolLinkage> {
        Some(match word {
            "export" => SymbolLinkage::Export,
            "hidden" => SymbolLinkage::Hidden,
            "local" => SymbolLinkage::Local,
            "preemptible" => SymbolLinkage::Preemptible,
            "linkonce" => SymbolLinkage::LinkOnce,
            _ => return None,
        })
    }

    /// Whether another definition may replace this one at link time, so that neither its body
    /// nor its calls may be assumed.
    pub fn is_preemptible(self) -> bool {
        matches!(self, SymbolLinkage::Preemptible | SymbolLinkage::LinkOnce)
    }
}

/// Where a function came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file it was read from: one name shared by every function of the file (a name of its
    /// own for each was 5 MB of a 100,000-function module).
    pub file: Arc<Path>,
    /// The line of its `function` keyword.
    pub line: usize,
}

/// A defined function of a [`ClifModule`]; stable for the module's life (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionId(u32);
entity_impl!(FunctionId, "func");

/// A defined function.
#[derive(Clone, Debug)]
pub struct ModuleFunction {
    /// Its name (the same as `func.name`).
    pub name: FuncName,
    /// Its CLIF. Boxed: a `Function` is about 1 KB inline, and a module of 100,000 functions
    /// would otherwise hold a table of 100 MB that is copied whenever it grows, beside the
    /// functions the reader hands over (a second copy of each at the peak of reading).
    pub func: Box<Function>,
    /// How its symbol is seen.
    pub linkage: SymbolLinkage,
    /// Where it was read from, if it was.
    pub origin: Option<Origin>,
}

/// A second name for a defined function: a symbol at the target's address, with its own linkage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The alias's own name.
    pub name: FuncName,
    /// The defined function it names.
    pub target: FuncName,
    /// How the alias's symbol is seen.
    pub linkage: SymbolLinkage,
}

/// What a name in the module stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symbol {
    /// A defined function.
    Function(FunctionId),
    /// Index into [`ClifModule::aliases`].
    Alias(usize),
}

/// Names to symbols, looked up without building a [`FuncName`] (the merge driver looks up every
/// callee of every function).
///
/// Testcase names are keyed by their bytes: a name inside a function is bytes, and a key is
/// always the UTF-8 of a [`FuncName`], so bytes that are not UTF-8 find nothing, as a name that
/// is not UTF-8 never named a symbol, without checking them first (a third of a lookup).
#[derive(Clone, Debug, Default)]
struct SymbolTable {
    user: FxHashMap<(u32, u32), Symbol>,
    testcase: FxHashMap<Box<[u8]>, Symbol>,
}

impl SymbolTable {
    fn get(&self, name: &FuncName) -> Option<Symbol> {
        match name {
            FuncName::User { namespace, index } => self.user.get(&(*namespace, *index)).copied(),
            FuncName::Testcase(t) => self.testcase.get(t.as_bytes()).copied(),
        }
    }

    fn get_external(&self, name: &ExternalName, func: &Function) -> Option<Symbol> {
        match name {
            ExternalName::User(r) => {
                let u = &func.params.user_named_funcs()[*r];
                self.user.get(&(u.namespace, u.index)).copied()
            }
            ExternalName::TestCase(t) => self.testcase.get(t.raw()).copied(),
            ExternalName::LibCall(_) | ExternalName::KnownSymbol(_) => None,
        }
    }

    /// [`SymbolTable::get`] of a function definition's name, without building a [`FuncName`].
    fn get_defined(&self, name: &UserFuncName) -> Option<Symbol> {
        match name {
            UserFuncName::User(u) => self.user.get(&(u.namespace, u.index)).copied(),
            UserFuncName::Testcase(t) => match std::str::from_utf8(t.raw()) {
                Ok(_) => self.testcase.get(t.raw()).copied(),
                // A definition's name that is not UTF-8 is its lossy `FuncName`.
                Err(_) => self.get(&FuncName::testcase(t.raw())),
            },
        }
    }

    fn remove(&mut self, name: &FuncName) {
        match name {
            FuncName::User { namespace, index } => {
                self.user.remove(&(*namespace, *index));
            }
            FuncName::Testcase(t) => {
                self.testcase.remove(t.as_bytes());
            }
        }
    }

    fn insert(&mut self, name: &FuncName, symbol: Symbol) {
        match name {
            FuncName::User { namespace, index } => {
                self.user.insert((*namespace, *index), symbol);
            }
            FuncName::Testcase(t) => {
                self.testcase.insert(t.as_bytes().into(), symbol);
            }
        }
    }
}

/// Errors in building a module (the reader adds file and line).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModuleError {
    #[error("{0} is defined twice")]
    /// Two functions or aliases with one name.
    DuplicateName(FuncName),
    #[error("alias {alias} names {target}, which is not a function defined in the module")]
    /// An alias of a name that is not a defined function.
    AliasTargetUndefined {
        /// The alias.
        alias: FuncName,
        /// What it names.
        target: FuncName,
    },
    #[error("in function {function}: {message}")]
    /// A function refers to an entity it does not declare.
    UndeclaredReference {
        /// The function.
        function: FuncName,
        /// Which reference.
        message: String,
    },
    #[error("in function {function}: the name {name} is not UTF-8, which Cranelift cannot print")]
    /// A function holds a testcase name (its own, a callee's or a symbol's) whose bytes are not
    /// UTF-8: Cranelift's printing of it panics.
    NameNotUtf8 {
        /// The function (its name as far as it is UTF-8, the rest replaced).
        function: FuncName,
        /// The name, likewise.
        name: FuncName,
    },
}

/// A module of CLIF functions.
#[derive(Clone, Debug, Default)]
pub struct ClifModule {
    functions: PrimaryMap<FunctionId, ModuleFunction>,
    /// The functions that have a body, in output order.
    layout: Vec<FunctionId>,
    /// Functions that a merge removed or turned into aliases (not in the layout).
    merged_away: EntitySet<FunctionId>,
    aliases: Vec<Alias>,
    symbols: SymbolTable,
}

impl ClifModule {
    /// An empty module.
    pub fn new() -> ClifModule {
        ClifModule::default()
    }

    /// Adds a defined function; its name is `func.name`. A function that refers to a
    /// declaration it does not have (see `crate::references`) is refused.
    pub fn define(
        &mut self,
        func: Function,
        linkage: SymbolLinkage,
        origin: Option<Origin>,
    ) -> Result<FunctionId, ModuleError> {
        if let Some((_, message)) = crate::references::undeclared_reference(&func) {
            return Err(ModuleError::UndeclaredReference {
                function: FuncName::of_function(&func),
                message,
            });
        }
        if let Some(name) = FuncName::first_not_utf8(&func) {
            return Err(ModuleError::NameNotUtf8 {
                function: FuncName::of_function(&func),
                name,
            });
        }
        self.define_checked(Box::new(func), linkage, origin)
    }

    /// [`ClifModule::define`] for a function whose references were already checked (the reader
    /// checks them first, to report the declaration's line).
    pub(crate) fn define_checked(
        &mut self,
        func: Box<Function>,
        linkage: SymbolLinkage,
        origin: Option<Origin>,
    ) -> Result<FunctionId, ModuleError> {
        let name = FuncName::of_function(&func);
        let id = self.functions.next_key();
        self.claim_name(&name, Symbol::Function(id))?;
        self.functions.push(ModuleFunction {
            name,
            func,
            linkage,
            origin,
        });
        self.layout.push(id);
        Ok(id)
    }

    /// Adds an alias; its target must already be defined (aliases are resolved at the end of
    /// reading, so files may list them in any order).
    pub fn add_alias(&mut self, alias: Alias) -> Result<(), ModuleError> {
        if !matches!(self.symbols.get(&alias.target), Some(Symbol::Function(_))) {
            return Err(ModuleError::AliasTargetUndefined {
                alias: alias.name.clone(),
                target: alias.target.clone(),
            });
        }
        self.claim_name(&alias.name, Symbol::Alias(self.aliases.len()))?;
        self.aliases.push(alias);
        Ok(())
    }

    fn claim_name(&mut self, name: &FuncName, symbol: Symbol) -> Result<(), ModuleError> {
        if self.symbols.get(name).is_some() {
            return Err(ModuleError::DuplicateName(name.clone()));
        }
        self.symbols.insert(name, symbol);
        Ok(())
    }

    /// Sets the linkage of a function or alias; false when the name is not defined.
    pub fn set_linkage(&mut self, name: &FuncName, linkage: SymbolLinkage) -> bool {
        match self.lookup(name) {
            Some(Symbol::Function(id)) => self.functions[id].linkage = linkage,
            Some(Symbol::Alias(i)) => self.aliases[i].linkage = linkage,
            None => return false,
        }
        true
    }

    /// The functions that have a body, in output order.
    pub fn functions(&self) -> impl ExactSizeIterator<Item = &ModuleFunction> + '_ {
        self.layout.iter().map(|&id| &self.functions[id])
    }

    /// The functions that have a body, with their ids, in output order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (FunctionId, &ModuleFunction)> + '_ {
        self.layout.iter().map(|&id| (id, &self.functions[id]))
    }

    /// The ids of the functions that have a body, in output order.
    pub fn ids(&self) -> &[FunctionId] {
        &self.layout
    }

    /// How many functions have a body.
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// Whether no function has a body.
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// Every id ever given out (merged-away functions included): the size of a map by id.
    pub fn id_count(&self) -> usize {
        self.functions.len()
    }

    /// A function by id; a merged-away function keeps its name, linkage and signature.
    pub fn function(&self, id: FunctionId) -> &ModuleFunction {
        &self.functions[id]
    }

    /// A function by id, to change (its name must stay as it is).
    pub fn function_mut(&mut self, id: FunctionId) -> &mut ModuleFunction {
        &mut self.functions[id]
    }

    /// Whether a merge removed `id` or made it an alias.
    pub fn is_merged_away(&self, id: FunctionId) -> bool {
        self.merged_away.contains(id)
    }

    /// Every function by id, to change in place (names must stay as they are); merged-away
    /// functions included.
    pub(crate) fn all_functions_mut(&mut self) -> &mut [ModuleFunction] {
        self.functions.values_mut().into_slice()
    }

    /// The aliases, in order.
    pub fn aliases(&self) -> &[Alias] {
        &self.aliases
    }

    /// What a name stands for in the module.
    pub fn lookup(&self, name: &FuncName) -> Option<Symbol> {
        self.symbols.get(name)
    }

    /// What the name `func` is defined with stands for in the module (a function of that name
    /// defined already, or an alias).
    pub(crate) fn lookup_defined(&self, func: &Function) -> Option<Symbol> {
        self.symbols.get_defined(&func.name)
    }

    /// What an external name inside `func` stands for, if it names a symbol of the module.
    pub fn lookup_external(&self, name: &ExternalName, func: &Function) -> Option<Symbol> {
        self.symbols.get_external(name, func)
    }

    /// The defined function a symbol stands for, through an alias if need be.
    pub fn resolve_symbol(&self, symbol: Symbol) -> Option<FunctionId> {
        match symbol {
            Symbol::Function(id) => Some(id),
            Symbol::Alias(i) => self.resolve_alias_target(&self.aliases[i].target),
        }
    }

    /// The defined function a name stands for, through an alias if need be.
    pub fn resolve(&self, name: &FuncName) -> Option<FunctionId> {
        self.resolve_symbol(self.lookup(name)?)
    }

    fn resolve_alias_target(&self, target: &FuncName) -> Option<FunctionId> {
        match self.lookup(target)? {
            Symbol::Function(id) => Some(id),
            Symbol::Alias(_) => None,
        }
    }

    /// The linkage of the symbol a name stands for (the alias's own for an alias).
    pub fn linkage_of(&self, name: &FuncName) -> Option<SymbolLinkage> {
        match self.lookup(name)? {
            Symbol::Function(id) => Some(self.function(id).linkage),
            Symbol::Alias(i) => Some(self.aliases[i].linkage),
        }
    }

    /// Applies the merge's changes to the list of symbols: takes the functions in `gone` out of
    /// the layout (their bodies are dropped), adds each new function to the layout before the one
    /// it names, and adds aliases. An existing alias whose target became an alias is pointed at
    /// that alias's target.
    pub(crate) fn update(
        &mut self,
        gone: EntitySet<FunctionId>,
        mut insert_before: Vec<(FunctionId, ModuleFunction)>,
        new_aliases: Vec<Alias>,
    ) {
        let final_target: FxHashMap<&FuncName, &FuncName> =
            new_aliases.iter().map(|a| (&a.name, &a.target)).collect();
        for alias in &mut self.aliases {
            if let Some(t) = final_target.get(&alias.target) {
                alias.target = (*t).clone();
            }
        }
        insert_before.sort_by_key(|(before, _)| *before);
        let mut inserts = insert_before.into_iter().peekable();
        let old = std::mem::take(&mut self.layout);
        let mut layout = Vec::with_capacity(old.len() + inserts.len());
        for id in old {
            while let Some((_, copy)) = inserts.next_if(|(before, _)| *before == id) {
                layout.push(self.add_function(copy));
            }
            if gone.contains(id) {
                self.drop_body(id);
            } else {
                layout.push(id);
            }
        }
        for (_, copy) in inserts {
            layout.push(self.add_function(copy));
        }
        self.layout = layout;
        for alias in new_aliases {
            self.symbols
                .insert(&alias.name, Symbol::Alias(self.aliases.len()));
            self.aliases.push(alias);
        }
    }

    /// A new function under a name nobody holds.
    fn add_function(&mut self, mf: ModuleFunction) -> FunctionId {
        let id = self.functions.push(mf);
        self.symbols
            .insert(&self.functions[id].name, Symbol::Function(id));
        id
    }

    /// Marks `id` merged away: its name stops naming it (an alias may take it) and its body is
    /// dropped, its signature kept.
    fn drop_body(&mut self, id: FunctionId) {
        self.merged_away.insert(id);
        let mf = &mut self.functions[id];
        self.symbols.remove(&mf.name);
        let signature = mf.func.signature.clone();
        *mf.func = Function::with_name_signature(mf.func.name.clone(), signature);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::{ExtFuncData, Signature, UserExternalName};
    use cranelift_codegen::isa::CallConv;

    /// A function that declares `callee` and nothing else.
    fn caller_of(callee: ExternalName) -> (Function, cranelift_codegen::ir::FuncRef) {
        let mut func = Function::with_name_signature(
            UserFuncName::testcase("caller"),
            Signature::new(CallConv::SystemV),
        );
        let signature = func.import_signature(Signature::new(CallConv::SystemV));
        let fr = func.import_function(ExtFuncData {
            name: callee,
            signature,
            colocated: true,
            patchable: false,
        });
        (func, fr)
    }

    /// A name inside a function finds the symbol of the same name, testcase or user; bytes that
    /// are not UTF-8 find nothing (no definition has them: `define` refuses such a name, which
    /// Cranelift cannot print), not even a symbol named by their lossy text.
    #[test]
    fn external_names_find_their_symbols_by_their_bytes() {
        let mut module = ClifModule::new();
        let sig = Signature::new(CallConv::SystemV);
        let define = |module: &mut ClifModule, name: UserFuncName| {
            let func = Function::with_name_signature(name, sig.clone());
            module.define(func, SymbolLinkage::Local, None)
        };
        let plain = define(&mut module, UserFuncName::testcase("plain")).unwrap();
        let user = define(&mut module, UserFuncName::user(1, 7)).unwrap();
        let lossy = define(&mut module, UserFuncName::testcase("a\u{fffd}b")).unwrap();
        let odd_bytes: &[u8] = &[b'a', 0xff, b'b'];
        assert!(matches!(
            define(&mut module, UserFuncName::testcase(odd_bytes)),
            Err(ModuleError::NameNotUtf8 { .. })
        ));

        let lookup = |name: ExternalName| {
            let (func, fr) = caller_of(name);
            module.lookup_external(&func.dfg.ext_funcs[fr].name, &func)
        };
        assert_eq!(
            lookup(ExternalName::testcase("plain")),
            Some(Symbol::Function(plain))
        );
        assert_eq!(lookup(ExternalName::testcase("plai")), None);
        assert_eq!(lookup(ExternalName::testcase(odd_bytes)), None);
        assert_eq!(
            lookup(ExternalName::testcase("a\u{fffd}b")),
            Some(Symbol::Function(lossy))
        );
        let (mut func, _) = caller_of(ExternalName::testcase("x"));
        let r = func.declare_imported_user_function(UserExternalName::new(1, 7));
        assert_eq!(
            module.lookup_external(&ExternalName::User(r), &func),
            Some(Symbol::Function(user))
        );
        // A definition's own name finds its function.
        for id in [plain, user, lossy] {
            let defined =
                Function::with_name_signature(module.function(id).func.name.clone(), sig.clone());
            assert_eq!(module.lookup_defined(&defined), Some(Symbol::Function(id)));
        }
    }
}
