//! How the merge driver compares names: a call to a module function compares the callee's class,
//! everything else its identity.

use crate::compare::{NameKey, RefKind, Resolver};
use crate::module::{ClifModule, Symbol};
use crate::policy::Mode;
use cranelift_codegen::ir::{ExternalName, FuncRef, Function};
use cranelift_entity::EntityRef;

/// How the driver compares names inside module functions.
///
/// - A call to a module function that is not preemptible compares the callee's *class*: the
///   call will be redirected to the class's kept function, which does the same thing.
/// - A preemptible callee is compared by identity: another definition may replace it at link
///   time, so a call to it is not a call to its class.
/// - An address (`func_addr`) is identity: after merging, a thunk keeps its own address. Only in
///   [`Mode::Aliases`], where merged functions share one address, does it compare the class.
/// - Imports, libcalls and symbols are identity.
pub struct ModuleResolver<'m> {
    module: &'m ClifModule,
    mode: Mode,
}

impl<'m> ModuleResolver<'m> {
    /// The resolver of `module`'s functions under `mode`.
    pub fn new(module: &'m ClifModule, mode: Mode) -> Self {
        ModuleResolver { module, mode }
    }
}

impl ModuleResolver<'_> {
    /// How a reference to `symbol` (None: not a module symbol) is compared.
    fn key_for(&self, symbol: Option<Symbol>, kind: RefKind) -> NameKey {
        let Some(symbol) = symbol else {
            return NameKey::Identity;
        };
        let preemptible = match symbol {
            Symbol::Function(id) => self.module.function(id).linkage.is_preemptible(),
            Symbol::Alias(i) => self.module.aliases()[i].linkage.is_preemptible(),
        };
        if preemptible {
            return NameKey::Identity;
        }
        let by_class = match kind {
            RefKind::Call => true,
            RefKind::Address => self.mode == Mode::Aliases,
        };
        match (by_class, self.module.resolve_symbol(symbol)) {
            (true, Some(id)) => NameKey::Class(id),
            _ => NameKey::Identity,
        }
    }
}

impl Resolver for ModuleResolver<'_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        self.key_for(self.module.lookup_external(name, func), kind)
    }
}

/// A [`ModuleResolver`] for one function whose declarations were looked up already.
pub(crate) struct DeclaredResolver<'r, 'm> {
    pub(crate) module: &'r ModuleResolver<'m>,
    /// What each `FuncRef` of the function stands for.
    pub(crate) callees: &'r [Option<Symbol>],
}

impl Resolver for DeclaredResolver<'_, '_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        self.module.resolve(func, name, kind)
    }

    fn resolve_func_ref(&self, _: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        self.module.key_for(self.callees[func_ref.index()], kind)
    }
}
