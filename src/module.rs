//! The module: the functions a merge works on, their names and linkage, the aliases, and the
//! references between them.
//!
//! A module is the set of *defined* functions (a name, a [`Function`] and a [`SymbolLinkage`]) plus
//! aliases (a second name for a defined function, recorded for the object writer). Every other
//! name a function refers to is an import. Names are exactly as CLIF writes them: `%foo` (a
//! testcase name) or `u0:3` (a user name); a callee declaration `fn0 = colocated u0:5 sig0`
//! refers to the defined function of that name when there is one.

use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{
    ExternalName, Function, GlobalValueData, Inst, InstructionData, UserExternalName, UserFuncName,
};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::fmt;
use std::path::PathBuf;

/// The name of a function, exactly as CLIF writes it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum FuncName {
    /// `u<namespace>:<index>`
    User { namespace: u32, index: u32 },
    /// `%name`
    Testcase(Box<str>),
}

impl FuncName {
    /// The name a function definition carries.
    pub fn of_function(func: &Function) -> FuncName {
        match &func.name {
            UserFuncName::User(u) => FuncName::User {
                namespace: u.namespace,
                index: u.index,
            },
            UserFuncName::Testcase(t) => {
                FuncName::Testcase(String::from_utf8_lossy(t.raw()).into())
            }
        }
    }

    /// The name an external reference inside `func` refers to, if it is a plain function name
    /// (not a libcall or a known symbol).
    pub fn of_external(name: &ExternalName, func: &Function) -> Option<FuncName> {
        match name {
            ExternalName::User(r) => {
                let u = &func.params.user_named_funcs()[*r];
                Some(FuncName::User {
                    namespace: u.namespace,
                    index: u.index,
                })
            }
            ExternalName::TestCase(t) => {
                Some(FuncName::Testcase(String::from_utf8_lossy(t.raw()).into()))
            }
            ExternalName::LibCall(_) | ExternalName::KnownSymbol(_) => None,
        }
    }

    /// The name as a function definition's name.
    pub fn to_user_func_name(&self) -> UserFuncName {
        match self {
            FuncName::User { namespace, index } => UserFuncName::user(*namespace, *index),
            FuncName::Testcase(t) => UserFuncName::testcase(t.as_bytes()),
        }
    }

    /// The name as an external reference from inside `func` (user names are interned in
    /// `func`'s table).
    pub fn to_external(&self, func: &mut Function) -> ExternalName {
        match self {
            FuncName::User { namespace, index } => ExternalName::User(
                func.declare_imported_user_function(UserExternalName::new(*namespace, *index)),
            ),
            FuncName::Testcase(t) => ExternalName::testcase(t.as_bytes()),
        }
    }

    /// Parses `%name` or `u<ns>:<index>` as written in CLIF.
    pub fn parse(text: &str) -> Option<FuncName> {
        if let Some(rest) = text.strip_prefix('%') {
            // `%` alone is a name too: cranelift-reader accepts the empty testcase name.
            let valid = rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            return valid.then(|| FuncName::Testcase(rest.into()));
        }
        let rest = text.strip_prefix('u')?;
        let (ns, idx) = rest.split_once(':')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(ns) || !digits(idx) {
            return None;
        }
        Some(FuncName::User {
            namespace: ns.parse().ok()?,
            index: idx.parse().ok()?,
        })
    }
}

/// The documented order of names, used wherever a choice must not depend on input order:
/// user names first, by namespace then index numerically (`u0:2` < `u0:10`), then testcase names
/// by their bytes.
impl Ord for FuncName {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (
                FuncName::User {
                    namespace: a,
                    index: b,
                },
                FuncName::User {
                    namespace: c,
                    index: d,
                },
            ) => (a, b).cmp(&(c, d)),
            (FuncName::User { .. }, FuncName::Testcase(_)) => Ordering::Less,
            (FuncName::Testcase(_), FuncName::User { .. }) => Ordering::Greater,
            (FuncName::Testcase(a), FuncName::Testcase(b)) => a.as_bytes().cmp(b.as_bytes()),
        }
    }
}

impl PartialOrd for FuncName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for FuncName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FuncName::User { namespace, index } => write!(f, "u{namespace}:{index}"),
            FuncName::Testcase(t) => write!(f, "%{t}"),
        }
    }
}

/// How a defined function's symbol is seen by the rest of the program.
///
/// The declaration order is the order in which class members are considered for keeping.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
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
}

impl SymbolLinkage {
    /// The keyword used in `; linkage:` directives and on the command line.
    pub fn keyword(self) -> &'static str {
        match self {
            SymbolLinkage::Export => "export",
            SymbolLinkage::Hidden => "hidden",
            SymbolLinkage::Local => "local",
            SymbolLinkage::Preemptible => "preemptible",
        }
    }

    pub fn from_keyword(word: &str) -> Option<SymbolLinkage> {
        Some(match word {
            "export" => SymbolLinkage::Export,
            "hidden" => SymbolLinkage::Hidden,
            "local" => SymbolLinkage::Local,
            "preemptible" => SymbolLinkage::Preemptible,
            _ => return None,
        })
    }

    /// Whether another definition may replace this one at link time, so that neither its body
    /// nor its calls may be assumed.
    pub fn is_preemptible(self) -> bool {
        self == SymbolLinkage::Preemptible
    }
}

/// Where a function came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

/// The index of a defined function in its module.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct FunctionId(pub u32);

impl FunctionId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A defined function.
#[derive(Clone, Debug)]
pub struct ModuleFunction {
    pub name: FuncName,
    pub func: Function,
    pub linkage: SymbolLinkage,
    pub origin: Option<Origin>,
}

/// A second name for a defined function: a symbol at the target's address, with its own linkage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alias {
    pub name: FuncName,
    pub target: FuncName,
    pub linkage: SymbolLinkage,
}

/// What a name in the module stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symbol {
    Function(FunctionId),
    /// Index into [`ClifModule::aliases`].
    Alias(usize),
}

/// Names to symbols, looked up without building a [`FuncName`] (the merge driver looks up every
/// callee of every function).
#[derive(Clone, Debug, Default)]
struct SymbolTable {
    user: FxHashMap<(u32, u32), Symbol>,
    testcase: FxHashMap<Box<str>, Symbol>,
}

impl SymbolTable {
    fn get(&self, name: &FuncName) -> Option<Symbol> {
        match name {
            FuncName::User { namespace, index } => self.user.get(&(*namespace, *index)).copied(),
            FuncName::Testcase(t) => self.testcase.get(t).copied(),
        }
    }

    fn get_external(&self, name: &ExternalName, func: &Function) -> Option<Symbol> {
        match name {
            ExternalName::User(r) => {
                let u = &func.params.user_named_funcs()[*r];
                self.user.get(&(u.namespace, u.index)).copied()
            }
            ExternalName::TestCase(t) => {
                let text = std::str::from_utf8(t.raw()).ok()?;
                self.testcase.get(text).copied()
            }
            ExternalName::LibCall(_) | ExternalName::KnownSymbol(_) => None,
        }
    }

    fn insert(&mut self, name: &FuncName, symbol: Symbol) {
        match name {
            FuncName::User { namespace, index } => {
                self.user.insert((*namespace, *index), symbol);
            }
            FuncName::Testcase(t) => {
                self.testcase.insert(t.clone(), symbol);
            }
        }
    }
}

/// Errors in building a module (the reader adds file and line).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModuleError {
    #[error("{0} is defined twice")]
    DuplicateName(FuncName),
    #[error("alias {alias} names {target}, which is not a function defined in the module")]
    AliasTargetUndefined { alias: FuncName, target: FuncName },
    #[error("in function {function}: {message}")]
    UndeclaredReference { function: FuncName, message: String },
}

/// A module of CLIF functions.
#[derive(Clone, Debug, Default)]
pub struct ClifModule {
    functions: Vec<ModuleFunction>,
    aliases: Vec<Alias>,
    symbols: SymbolTable,
}

impl ClifModule {
    pub fn new() -> ClifModule {
        ClifModule::default()
    }

    /// Adds a defined function; its name is `func.name`. A function that refers to a
    /// declaration it does not have (see [`crate::references`]) is refused.
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
        self.define_checked(func, linkage, origin)
    }

    /// [`ClifModule::define`] for a function whose references were already checked (the reader
    /// checks them first, to report the declaration's line).
    pub(crate) fn define_checked(
        &mut self,
        func: Function,
        linkage: SymbolLinkage,
        origin: Option<Origin>,
    ) -> Result<FunctionId, ModuleError> {
        let name = FuncName::of_function(&func);
        let id = FunctionId(self.functions.len() as u32);
        self.claim_name(&name, Symbol::Function(id))?;
        self.functions.push(ModuleFunction {
            name,
            func,
            linkage,
            origin,
        });
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
            Some(Symbol::Function(id)) => self.functions[id.index()].linkage = linkage,
            Some(Symbol::Alias(i)) => self.aliases[i].linkage = linkage,
            None => return false,
        }
        true
    }

    pub fn functions(&self) -> &[ModuleFunction] {
        &self.functions
    }

    pub fn function(&self, id: FunctionId) -> &ModuleFunction {
        &self.functions[id.index()]
    }

    /// The functions, to change in place (their names must stay as they are).
    pub(crate) fn functions_mut(&mut self) -> &mut [ModuleFunction] {
        &mut self.functions
    }

    pub fn function_mut(&mut self, id: FunctionId) -> &mut ModuleFunction {
        &mut self.functions[id.index()]
    }

    pub fn aliases(&self) -> &[Alias] {
        &self.aliases
    }

    pub fn ids(&self) -> impl Iterator<Item = FunctionId> + use<> {
        (0..self.functions.len() as u32).map(FunctionId)
    }

    pub fn lookup(&self, name: &FuncName) -> Option<Symbol> {
        self.symbols.get(name)
    }

    /// What an external name inside `func` stands for, if it names a symbol of the module.
    pub fn lookup_external(&self, name: &ExternalName, func: &Function) -> Option<Symbol> {
        self.symbols.get_external(name, func)
    }

    /// What each external function declared in `func` stands for, indexed by `FuncRef`.
    pub fn callee_symbols(&self, func: &Function) -> Box<[Option<Symbol>]> {
        func.dfg
            .ext_funcs
            .values()
            .map(|ext| self.lookup_external(&ext.name, func))
            .collect()
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

    /// Functions whose address is observable inside the module: named by `func_addr`, by a
    /// `symbol` global value, or by an alias (an alias shares its target's address).
    pub fn address_taken(&self) -> Vec<bool> {
        let mut taken = vec![false; self.functions.len()];
        let mut mark = |name: &ExternalName, func: &Function| {
            let symbol = self.lookup_external(name, func);
            if let Some(id) = symbol.and_then(|s| self.resolve_symbol(s)) {
                taken[id.index()] = true;
            }
        };
        for mf in &self.functions {
            let func = &mf.func;
            for gv in func.global_values.values() {
                if let GlobalValueData::Symbol { name, .. } = gv {
                    mark(name, func);
                }
            }
            if func.dfg.ext_funcs.is_empty() {
                continue;
            }
            for block in func.layout.blocks() {
                for inst in func.layout.block_insts(block) {
                    if let InstructionData::FuncAddr { func_ref, .. } = func.dfg.insts[inst] {
                        mark(&func.dfg.ext_funcs[func_ref].name, func);
                    }
                }
            }
        }
        for alias in &self.aliases {
            if let Some(id) = self.resolve(&alias.target) {
                taken[id.index()] = true;
            }
        }
        taken
    }

    /// Applies the merge actions' changes to the list of symbols: drops the functions marked
    /// `gone`, inserts each new function before the one it names, and adds aliases. An existing
    /// alias whose target became an alias is pointed at that alias's target.
    pub(crate) fn update(
        &mut self,
        gone: Vec<bool>,
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
        if insert_before.is_empty() && !gone.contains(&true) {
            // Indices are unchanged: only the aliases are new.
            for alias in new_aliases {
                self.symbols
                    .insert(&alias.name, Symbol::Alias(self.aliases.len()));
                self.aliases.push(alias);
            }
            return;
        }
        insert_before.sort_by_key(|(before, _)| *before);
        let mut inserts = insert_before.into_iter().peekable();
        let old = std::mem::take(&mut self.functions);
        let mut functions = Vec::with_capacity(old.len() + inserts.len());
        for (i, mf) in old.into_iter().enumerate() {
            while let Some((_, copy)) = inserts.next_if(|(before, _)| before.index() == i) {
                functions.push(copy);
            }
            if !gone[i] {
                functions.push(mf);
            }
        }
        functions.extend(inserts.map(|(_, copy)| copy));
        let mut aliases = std::mem::take(&mut self.aliases);
        aliases.extend(new_aliases);
        let mut symbols = SymbolTable::default();
        for (i, f) in functions.iter().enumerate() {
            symbols.insert(&f.name, Symbol::Function(FunctionId(i as u32)));
        }
        for (i, a) in aliases.iter().enumerate() {
            symbols.insert(&a.name, Symbol::Alias(i));
        }
        self.functions = functions;
        self.aliases = aliases;
        self.symbols = symbols;
    }

    /// Takes the module apart (functions, aliases).
    pub fn into_parts(self) -> (Vec<ModuleFunction>, Vec<Alias>) {
        (self.functions, self.aliases)
    }
}

/// Whether any instruction of `func`, in the layout or not, is a `func_addr`: a scan of the
/// instruction storage, which is quicker than the layout's lists.
pub fn uses_func_addr(func: &Function) -> bool {
    !func.dfg.ext_funcs.is_empty()
        && (0..func.dfg.num_insts()).any(|i| {
            matches!(
                func.dfg.insts[Inst::new(i)],
                InstructionData::FuncAddr { .. }
            )
        })
}

/// The function names whose *address* `func` uses: `func_addr` operands and `symbol` globals.
pub fn addresses_named(func: &Function) -> Vec<FuncName> {
    let mut names = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if let InstructionData::FuncAddr { func_ref, .. } = func.dfg.insts[inst] {
                let ext = &func.dfg.ext_funcs[func_ref];
                names.extend(FuncName::of_external(&ext.name, func));
            }
        }
    }
    for (_, gv) in func.global_values.iter() {
        if let GlobalValueData::Symbol { name, .. } = gv {
            names.extend(FuncName::of_external(name, func));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for text in ["%foo", "%a_1", "u0:3", "u805306368:7"] {
            assert_eq!(FuncName::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(FuncName::parse("%").unwrap().to_string(), "%");
        for bad in ["%a-b", "u0", "u:1", "ux:1", "u0:", "foo", "u0:1x"] {
            assert_eq!(FuncName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn user_names_order_numerically_before_testcase_names() {
        let n = |s| FuncName::parse(s).unwrap();
        assert!(n("u0:2") < n("u0:10"));
        assert!(n("u0:10") < n("u1:0"));
        assert!(n("u9:9") < n("%a"));
        assert!(n("%a") < n("%b"));
    }
}
