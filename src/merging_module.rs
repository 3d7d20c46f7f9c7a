//! [`MergingModule`]: a [`cranelift_module::Module`] that merges equal functions on their way to
//! another module (a `JITModule`, an `ObjectModule`), for embedders that build their functions
//! through cranelift-module.
//!
//! Declarations go straight to the inner module, so every `FuncId` and `DataId` is the inner
//! module's own; only function bodies (`define_function`) are held back or compared. Bodies
//! defined from bytes (`define_function_bytes`) are opaque: forwarded at once, never merged.
//!
//! Two timings:
//!
//! - [`MergingModule::deferred`]: bodies are kept until [`MergingModule::finish`], which merges
//!   them all at once with the exact, whole-module merge ([`crate::merge_module`], recursion
//!   included) and then defines every function in the inner module.
//! - [`MergingModule::new`] (eager): each body is compared, when it is defined, with the bodies
//!   defined before it; an equal one is defined as a thunk of the first. Cheaper in memory
//!   and latency, and what a JIT wants, but it only finds what order allows (a function is
//!   merged with an earlier one whose callees were already known equal).
//!
//! With the `object` feature, `MergingModule::for_object` makes the inner `ObjectModule` for a
//! target named as on the command line, compiled as `clif-merge -o` compiles.
//!
//! cranelift-module has no aliases and a JIT must be able to call every `FuncId`: a function the
//! merge replaced is always defined, as a thunk: one jump to the function holding its body (5
//! bytes on x86_64, 4 on aarch64) where the conventions allow it (see `jump.rs`), else a
//! compiled thunk calling it. A similar merge's member thunks pass values of their own: they
//! are always compiled.
//!
//! # Accepted and refused calls
//!
//! A `MergingModule` accepts and refuses definitions as the inner module would, at once: a
//! second definition (a body or bytes), a definition of an import, and (when the inner ISA
//! verifies) a body the verifier refuses. A function counts as defined, and a body as a merge
//! target, only once the inner module accepted it (deferred mode: once it passed those checks).
//! The inner module must not already hold definitions of the functions defined through the
//! `MergingModule` (cranelift-module cannot tell): deferred mode would find out only in
//! [`MergingModule::try_finish`].
//!
//! # Later declarations (eager mode)
//!
//! A merge is made once, when a function is defined, under the linkages of that moment; a later
//! `declare_function` of the same name changes a linkage as [`Linkage`]'s merge says (it never
//! narrows: `local` → `hidden` → `export`, and `local`/`hidden` → `preemptible` →
//! `export`). Only one change can make a merge unsafe: a function becoming **preemptible**,
//! since a strong definition elsewhere may then replace it.
//!
//! - `f`, the function thunks call: the thunks would run whatever replaces `f`. Refused
//!   ([`UnsafeDeclaration`]).
//! - `g`, a thunk, whose calls were compared as calls to `f` (so some body calling `g` was merged
//!   with, or recorded for, bodies calling `f`): refused. A thunk nobody's comparison relied on
//!   may become preemptible: whichever `g` runs computes `g`.
//! - Any other defined function: accepted; it is never again a merge target, and calls to it are
//!   compared by its own name.
//!
//! Every other change (to `hidden` or `export`, from `preemptible` to `export`, an `import`
//! declaration of a defined function, which leaves its linkage as it is) keeps every merge
//! safe: a thunk keeps its own symbol and address whatever its visibility. Deferred mode reads
//! the linkages at [`MergingModule::finish`], after every declaration.

mod jump;
#[cfg(feature = "object")]
mod object;

use crate::compare::{self, FingerprintWriter, NameKey, RefKind, Resolver};
use crate::edit::thunk::{is_forwarding_thunk, write_thunk};
use crate::module::{ClifModule, FuncName, FunctionId, SymbolLinkage};
use crate::pass::{MergeOptions, merge_module_with_options};
use crate::pass::{MergeReport, MergedClass, Replacement};
use crate::policy::Action;
use crate::policy::frame::reads_own_frame;
use crate::similar::SimilarOptions;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{ExternalName, Function, InstructionData, Signature, UserFuncName};
use cranelift_codegen::{Context, isa};
use cranelift_entity::EntityRef;
use cranelift_module::{
    DataDescription, DataId, FuncId, FuncOrDataId, Linkage, Module, ModuleDeclarations,
    ModuleError, ModuleReloc, ModuleResult,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;

/// The error of [`MergingModule::finish`].
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// The inner module refused a definition (a compilation error, a bad declaration).
    #[error("defining {function}: {source}")]
    Define {
        /// The function's linkage name.
        function: String,
        /// The inner module's error.
        #[source]
        source: Box<cranelift_module::ModuleError>,
    },
    /// The whole-module merge refused the held bodies (not expected: a body it cannot hold is
    /// defined unmerged).
    #[error(transparent)]
    Merge(#[from] crate::Error),
}

impl<M> From<FinishFailure<M>> for FinishError {
    fn from(failure: FinishFailure<M>) -> Self {
        failure.error
    }
}

/// The error of [`MergingModule::try_finish`]: the error, with the inner module handed back.
pub struct FinishFailure<M> {
    /// What went wrong.
    pub error: FinishError,
    /// The inner module, holding every definition made before the failure.
    pub module: M,
    /// The functions defined through the `MergingModule` that the inner module does not hold,
    /// the failed one included, in definition order; then any anonymous function of the merge
    /// (a private copy, a shared body) the inner module does not hold (only when one of them
    /// failed: they are defined first). A thunk already defined may call one of them.
    pub undefined: Vec<FuncId>,
}

impl<M> std::fmt::Debug for FinishFailure<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishFailure")
            .field("error", &self.error)
            .field("undefined", &self.undefined)
            .finish_non_exhaustive()
    }
}

impl<M> std::fmt::Display for FinishFailure<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl<M> std::error::Error for FinishFailure<M> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// Eager mode's refusal of a declaration that would make a merge already made unsafe (see the
/// module docs); returned as [`cranelift_module::ModuleError::Backend`].
#[derive(Debug, thiserror::Error)]
#[error("{function} cannot become preemptible: {reason}")]
pub struct UnsafeDeclaration {
    /// The function's linkage name.
    pub function: String,
    /// Which merge depends on it.
    pub reason: String,
}

/// A function body held for the merge (deferred mode).
struct Held {
    id: FuncId,
    func: Function,
    /// The caller's control plane, used when the body (or what replaces it) is compiled.
    ctrl_plane: ControlPlane,
}

/// What eager mode knows about the bodies defined so far.
#[derive(Default)]
struct Eager {
    /// (hash, tokens, classes of the callees) to the first function defined with it.
    seen: FxHashMap<(u64, Vec<u32>, Vec<FunctionId>), FuncId>,
    /// A function defined as a thunk, to the function holding its body.
    rep: FxHashMap<FuncId, FuncId>,
    /// Functions that must never become preemptible: the functions thunks call, and thunks
    /// whose calls were compared as calls to the function holding their body.
    pinned: FxHashSet<FuncId>,
    /// Functions defined through this module (their bodies, not bytes).
    defined: usize,
    writer: FingerprintWriter,
}

enum Timing {
    Eager(Box<Eager>),
    Deferred(Vec<Held>, Box<MergeOptions>),
}

/// A [`Module`] that merges equal functions before they reach the inner module `M`.
///
/// Declarations are forwarded to `M` as they come, so ids are `M`'s own. In **deferred** mode
/// ([`MergingModule::deferred`]) `define_function` checks the body (duplicate, import,
/// verifier) and keeps a copy of it: the [`Context`] does **not** hold compiled code
/// afterwards, and other compilation errors surface in [`MergingModule::finish`] (or
/// [`MergingModule::try_finish`], which hands the inner module back); the [`ControlPlane`]
/// given to `define_function_with_control_plane` is kept with the body and used when the body,
/// or the thunk that replaces it, is compiled at `finish`. In **eager** mode
/// ([`MergingModule::new`]) every function is defined at once, as itself or as a thunk, and
/// the context holds what was defined: the body and its compiled code, or the thunk's IR, with
/// compiled code only when the thunk was compiled rather than defined as one jump.
///
/// ```
/// use cranelift_jit::{JITBuilder, JITModule};
/// use cranelift_module::Module;
///
/// let builder = JITBuilder::new(cranelift_module::default_libcall_names()).unwrap();
/// let mut module = clif_merge::MergingModule::deferred(JITModule::new(builder));
/// // ... declare_function / define_function as with any Module ...
/// let (mut jit, report) = module.finish().unwrap();
/// jit.finalize_definitions().unwrap();
/// println!("{} functions merged", report.merged);
/// ```
pub struct MergingModule<M: Module> {
    inner: M,
    timing: Timing,
    /// Functions whose address is stored in data (`declare_func_in_data`).
    address_in_data: RefCell<FxHashSet<FuncId>>,
    /// Functions the inner module accepted a definition of (body or bytes) through this module
    /// (deferred mode: a held body that passed the checks), to refuse a second definition early.
    defined: FxHashSet<FuncId>,
}

impl<M: Module> MergingModule<M> {
    /// Eager merging: each function is compared with the ones defined before it and defined at
    /// once, as itself or as a thunk of an earlier equal function.
    pub fn new(inner: M) -> Self {
        Self::with_timing(inner, Timing::Eager(Box::default()))
    }

    /// Whole-module merging: bodies are kept until [`MergingModule::finish`]. The same as
    /// [`MergingModule::with_options`] with the default options (the exact merge,
    /// [`Mode::Safe`](crate::Mode::Safe)).
    pub fn deferred(inner: M) -> Self {
        Self::with_options(inner, MergeOptions::default())
    }

    /// Whole-module merging, then similar merging ([`crate::similar`]) as `similar` says:
    /// shared bodies become anonymous functions of the inner module; a removed similar member
    /// is still defined, as a thunk passing its values to its shared body.
    #[deprecated(
        since = "0.1.0",
        note = "use `MergingModule::with_options` with `MergeOptions { similar: Some(..), .. }`"
    )]
    pub fn deferred_similar(inner: M, similar: SimilarOptions) -> Self {
        let options = MergeOptions {
            similar: Some(similar),
            ..MergeOptions::default()
        };
        Self::with_options(inner, options)
    }

    /// Whole-module merging as `options` say: bodies are kept until
    /// [`MergingModule::finish`], which merges them under `options.mode`, with similar merging
    /// when `options.similar` asks for it (shared bodies become anonymous functions of the inner
    /// module, and a removed similar member is still defined, as a thunk passing its values to
    /// its shared body), on `options.threads` threads.
    ///
    /// cranelift-module has no aliases and cannot leave a declared function undefined: whatever
    /// the mode, a function the merge replaced is defined as a thunk of the function holding
    /// its body (one jump where the conventions allow it); the mode decides which functions may be merged and what the report
    /// says. A summary for global merging cannot be honoured (its shared bodies need symbols
    /// only the object writer makes): `finish` refuses it ([`crate::Error::Unsupported`]).
    ///
    /// The inner module is yours to build, with any ISA and flags, as here; an object for a
    /// target named as on the command line is shorter with `MergingModule::for_object`
    /// (feature `object`).
    ///
    /// ```
    /// use clif_merge::cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName, types};
    /// use clif_merge::cranelift_codegen::{Context, settings};
    /// use clif_merge::cranelift_module::{Linkage, Module, default_libcall_names};
    /// use clif_merge::cranelift_object::{ObjectBuilder, ObjectModule};
    /// use clif_merge::{MergeOptions, MergingModule, Mode};
    /// use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
    ///
    /// let isa = clif_merge::cranelift_codegen::isa::lookup_by_name("x86_64")
    ///     .unwrap()
    ///     .finish(settings::Flags::new(settings::builder()))
    ///     .unwrap();
    /// let builder = ObjectBuilder::new(isa, "demo", default_libcall_names()).unwrap();
    /// let options = MergeOptions { mode: Mode::Aliases, ..MergeOptions::default() };
    /// let mut module = MergingModule::with_options(ObjectModule::new(builder), options);
    ///
    /// // Two exported functions with one body: `x * 5`.
    /// for name in ["times5", "five_times"] {
    ///     let mut sig = module.make_signature();
    ///     sig.params.push(AbiParam::new(types::I64));
    ///     sig.returns.push(AbiParam::new(types::I64));
    ///     let id = module.declare_function(name, Linkage::Export, &sig).unwrap();
    ///     let mut ctx = Context::new();
    ///     ctx.func.signature = sig;
    ///     ctx.func.name = UserFuncName::user(0, id.as_u32());
    ///     let mut fctx = FunctionBuilderContext::new();
    ///     let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    ///     let block = b.create_block();
    ///     b.append_block_params_for_function_params(block);
    ///     b.switch_to_block(block);
    ///     let x = b.block_params(block)[0];
    ///     let y = b.ins().imul_imm_s(x, 5);
    ///     b.ins().return_(&[y]);
    ///     b.seal_all_blocks();
    ///     b.finalize(module.target_config());
    ///     module.define_function(id, &mut ctx).unwrap();
    /// }
    /// let (object, report) = module.finish().unwrap();
    /// assert_eq!(report.merged, 1);
    /// let bytes = object.finish().emit().unwrap();
    /// assert!(!bytes.is_empty());
    /// ```
    pub fn with_options(inner: M, options: MergeOptions) -> Self {
        Self::with_timing(inner, Timing::Deferred(Vec::new(), Box::new(options)))
    }

    fn with_timing(inner: M, timing: Timing) -> Self {
        MergingModule {
            inner,
            timing,
            address_in_data: RefCell::new(FxHashSet::default()),
            defined: FxHashSet::default(),
        }
    }

    /// The inner module (declarations only are safe to make through it).
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Merges (deferred mode), defines every function in the inner module and hands it back
    /// with what was merged. On failure the inner module is dropped; [`Self::try_finish`]
    /// hands it back.
    pub fn finish(self) -> Result<(M, MergeReport), FinishError> {
        self.try_finish().map_err(FinishError::from)
    }

    /// [`Self::finish`], handing the inner module back on failure. Eager mode never fails;
    /// deferred mode fails only when the inner module refuses a definition that passed the
    /// checks made at `define_function` (a compilation error other than the verifier's, a
    /// function the inner module already held).
    pub fn try_finish(self) -> Result<(M, MergeReport), FinishFailure<M>> {
        match self.timing {
            Timing::Deferred(held, options) => {
                let address_in_data = self.address_in_data.into_inner();
                finish_deferred(self.inner, held, &address_in_data, &options)
            }
            Timing::Eager(eager) => Ok((self.inner, eager_report(&eager))),
        }
    }

    fn linkage_name(&self, id: FuncId) -> String {
        self.inner
            .declarations()
            .get_function_decl(id)
            .linkage_name(id)
            .into_owned()
    }

    /// Refuses what the inner module would refuse: a definition of an import, a second
    /// definition. Records nothing: a function is defined once the inner module accepted it.
    // The error is the `Module` trait's own, returned as is.
    #[allow(clippy::result_large_err)]
    fn check_definable(&self, id: FuncId) -> ModuleResult<()> {
        let decl = self.inner.declarations().get_function_decl(id);
        if !decl.linkage.is_definable() {
            return Err(ModuleError::InvalidImportDefinition(self.linkage_name(id)));
        }
        if self.defined.contains(&id) {
            return Err(ModuleError::DuplicateDefinition(self.linkage_name(id)));
        }
        Ok(())
    }

    /// Refuses a body the inner module's compilation would refuse in its verifier.
    #[allow(clippy::result_large_err)]
    fn check_verifies(&self, ctx: &Context) -> ModuleResult<()> {
        ctx.verify_if(self.inner.isa())
            .map_err(ModuleError::Compilation)
    }

    /// Refuses (eager mode) a declaration of `name` with `linkage` that would make preemptible a
    /// function a merge depends on (see the module docs).
    #[allow(clippy::result_large_err)]
    fn check_declaration(&self, name: &str, linkage: Linkage) -> ModuleResult<()> {
        let Timing::Eager(eager) = &self.timing else {
            return Ok(());
        };
        let Some(FuncOrDataId::Func(id)) = self.inner.get_name(name) else {
            return Ok(());
        };
        let old = self.inner.declarations().get_function_decl(id).linkage;
        if !becomes_preemptible(old, linkage) || !eager.pinned.contains(&id) {
            return Ok(());
        }
        let reason = if eager.rep.values().any(|&f| f == id) {
            "thunks merged into it call it"
        } else {
            "it is a thunk, and bodies calling it were merged as calling the function it calls"
        };
        Err(ModuleError::Backend(
            UnsafeDeclaration {
                function: name.to_owned(),
                reason: reason.to_owned(),
            }
            .into(),
        ))
    }

    /// Eager mode: defines `func` in the inner module as itself, or as a thunk calling an
    /// earlier equal function; records it only once the inner module accepted it.
    #[allow(clippy::result_large_err)]
    fn define_eagerly(
        &mut self,
        func: FuncId,
        body: Function,
        ctx: &mut Context,
        ctrl_plane: &mut ControlPlane,
    ) -> ModuleResult<()> {
        let declarations = self.inner.declarations();
        let own_preemptible = is_preemptible(declarations, func);
        let Timing::Eager(eager) = &mut self.timing else {
            unreachable!("eager mode only");
        };
        let resolver = EagerResolver {
            own: user_name(func),
            rep: &eager.rep,
            defined: &self.defined,
            declarations,
            compared_as_rep: RefCell::default(),
        };
        let fingerprint = eager.writer.write(&body, &resolver);
        let compared_as_rep = resolver.compared_as_rep.into_inner();
        let key = (
            compare::hash(&fingerprint),
            fingerprint.tokens,
            fingerprint.class_refs,
        );
        // A target that became preemptible since it was recorded is no target any more.
        let target = eager
            .seen
            .get(&key)
            .copied()
            .filter(|&f| !is_preemptible(declarations, f));
        // A body that reads its own frame would see the thunk's (`crate::policy::frame`).
        let merge_into = target.filter(|_| !own_preemptible && !reads_own_frame(&body));
        match merge_into {
            Some(f) => {
                // The thunk replaces a body the inner module would have verified.
                self.check_verifies(ctx)?;
                let thunk = write_thunk(&user_name(func), &body.signature, &user_name(f));
                let own = std::mem::replace(&mut ctx.func, thunk);
                // `f`'s body has the signature of `body`: the key holds the whole signature.
                let defined =
                    jump::define_thunk(&mut self.inner, func, f, &body.signature, ctx, ctrl_plane);
                if defined.is_err() {
                    // The caller's context keeps its own function, not a thunk it never wrote.
                    ctx.func = own;
                }
                defined?;
            }
            None => self
                .inner
                .define_function_with_control_plane(func, ctx, ctrl_plane)?,
        }

        // Accepted: record it.
        let Timing::Eager(eager) = &mut self.timing else {
            unreachable!("eager mode only");
        };
        self.defined.insert(func);
        eager.defined += 1;
        let recorded = match merge_into {
            Some(f) => {
                eager.rep.insert(func, f);
                eager.pinned.insert(f);
                true
            }
            None if !own_preemptible => {
                eager.seen.insert(key, func);
                true
            }
            None => false,
        };
        if recorded {
            // This body's key (or its merge) holds for as long as these thunks stand for the
            // functions they call.
            eager.pinned.extend(compared_as_rep);
        }
        Ok(())
    }
}

fn is_preemptible(declarations: &ModuleDeclarations, id: FuncId) -> bool {
    declarations.get_function_decl(id).linkage == Linkage::Preemptible
}

/// Whether a declaration with `new` makes a function declared with `old` preemptible
/// (cranelift-module's linkage merge: only `local` and `hidden` turn `preemptible`).
fn becomes_preemptible(old: Linkage, new: Linkage) -> bool {
    matches!(old, Linkage::Local | Linkage::Hidden) && new == Linkage::Preemptible
}

/// The name cranelift-module gives function `id` inside bodies.
fn user_name(id: FuncId) -> FuncName {
    FuncName::User {
        namespace: 0,
        index: id.as_u32(),
    }
}

/// The function a user name `u0:N` names, if it is one.
fn func_id_of(name: &FuncName) -> Option<FuncId> {
    match name {
        FuncName::User {
            namespace: 0,
            index,
        } => Some(FuncId::from_u32(*index)),
        _ => None,
    }
}

fn symbol_linkage(linkage: Linkage, address_in_data: bool) -> SymbolLinkage {
    match linkage {
        Linkage::Export => SymbolLinkage::Export,
        Linkage::Hidden => SymbolLinkage::Hidden,
        // Data holds its address: it must stay, distinct (the merge cannot see data).
        Linkage::Local if address_in_data => SymbolLinkage::Hidden,
        Linkage::Local => SymbolLinkage::Local,
        // Import is refused at definition.
        Linkage::Preemptible | Linkage::Import => SymbolLinkage::Preemptible,
    }
}

/// Renames every external function of `func` found in `renames`.
fn rename_callees(func: &mut Function, renames: &FxHashMap<FuncName, FuncName>) {
    if renames.is_empty() {
        return;
    }
    let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
    for fr in refs {
        let Some(old) = FuncName::of_external(&func.dfg.ext_funcs[fr].name, func) else {
            continue;
        };
        if let Some(new) = renames.get(&old) {
            func.dfg.ext_funcs[fr].name = new.to_external(func);
        }
    }
}

fn define_in<M: Module>(
    inner: &mut M,
    id: FuncId,
    func: Function,
    ctrl_plane: &mut ControlPlane,
) -> Result<(), FinishError> {
    let mut ctx = Context::for_function(func);
    inner
        .define_function_with_control_plane(id, &mut ctx, ctrl_plane)
        .map_err(|source| define_error(inner, id, source))
}

/// The error of defining `id` in `inner` at `finish`, naming the function by its symbol.
fn define_error<M: Module>(inner: &M, id: FuncId, source: ModuleError) -> FinishError {
    FinishError::Define {
        function: inner
            .declarations()
            .get_function_decl(id)
            .linkage_name(id)
            .into_owned(),
        source: Box::new(source),
    }
}

/// `error`, of defining a function the merge made (a private copy, a shared body) named `made`
/// in `cm`, naming also the first of the embedder's functions (`ids`, by their place in `cm`)
/// that calls it: the anonymous symbol alone names nothing the embedder gave.
fn made_from<M: Module>(
    error: FinishError,
    inner: &M,
    cm: &ClifModule,
    ids: &[FuncId],
    made: &FuncName,
) -> FinishError {
    let FinishError::Define { function, source } = error else {
        return error;
    };
    let calls_made = |func: &Function| {
        (func.dfg.ext_funcs.values())
            .any(|ext| FuncName::of_external(&ext.name, func).as_ref() == Some(made))
    };
    let caller = (0..ids.len())
        .map(FunctionId::new)
        .find(|&fid| calls_made(&cm.function(fid).func));
    let function = match caller {
        Some(fid) => {
            let id = ids[fid.index()];
            let name = inner.declarations().get_function_decl(id).linkage_name(id);
            format!("{function}, the merge's body of {name}")
        }
        None => function,
    };
    FinishError::Define { function, source }
}

/// Defines `id`, with signature `sig`, as a thunk calling `kept` (renamed as `renames` says),
/// `kept_body` being the function of the merge that holds the name `kept`, if any (what is
/// defined for `kept`, that body, a copy of it or a similar stand-in, has its signature): as one
/// jump where allowed (`jump`), else compiled.
fn define_thunk_in<M: Module>(
    inner: &mut M,
    id: FuncId,
    sig: &Signature,
    kept: &FuncName,
    kept_body: Option<&Function>,
    renames: &FxHashMap<FuncName, FuncName>,
    ctrl_plane: &mut ControlPlane,
) -> Result<(), FinishError> {
    let kept = renames.get(kept).unwrap_or(kept);
    let thunk = write_thunk(&user_name(id), sig, kept);
    let Some((f, f_signature)) = func_id_of(kept).zip(kept_body.map(|b| &b.signature)) else {
        return define_in(inner, id, thunk, ctrl_plane);
    };
    let mut ctx = Context::for_function(thunk);
    jump::define_thunk(inner, id, f, f_signature, &mut ctx, ctrl_plane)
        .map_err(|source| define_error(inner, id, source))
}

/// The function `fid` now forwards to, when the merge made it a thunk in place: `fid` was
/// replaced by the function the merge kept, and its body is a forwarding thunk calling that
/// function, no more (`crate::edit::thunk`).
fn thunk_callee<'a>(
    cm: &ClifModule,
    report: &'a MergeReport,
    fid: FunctionId,
) -> Option<&'a FuncName> {
    let kept = report.kept_for(fid)?;
    let func = &cm.function(fid).func;
    if !is_forwarding_thunk(func) {
        return None;
    }
    let first = func.layout.first_inst(func.layout.entry_block()?)?;
    let InstructionData::Call { func_ref, .. } = func.dfg.insts[first] else {
        return None;
    };
    let ext = &func.dfg.ext_funcs[func_ref];
    let calls_kept = FuncName::of_external(&ext.name, func).as_ref() == Some(kept);
    (calls_kept && !ext.patchable).then_some(kept)
}

fn finish_deferred<M: Module>(
    mut inner: M,
    held: Vec<Held>,
    address_in_data: &FxHashSet<FuncId>,
    options: &MergeOptions,
) -> Result<(M, MergeReport), FinishFailure<M>> {
    let mut ids: Vec<FuncId> = held.iter().map(|h| h.id).collect();
    let mut defined = FxHashSet::default();
    let mut anonymous = Vec::new();
    let merged = if options.summary.is_some() {
        Err(FinishError::Merge(crate::Error::Unsupported(
            "a MergingModule cannot take a summary: global merging's shared bodies need \
             symbols only the object writer makes"
                .to_owned(),
        )))
    } else {
        merge_and_define(
            &mut inner,
            held,
            address_in_data,
            options,
            &mut defined,
            &mut anonymous,
        )
    };
    match merged {
        Ok(report) => Ok((inner, report)),
        Err(error) => Err(FinishFailure {
            error,
            module: inner,
            undefined: {
                ids.extend(anonymous);
                ids.retain(|id| !defined.contains(id));
                ids
            },
        }),
    }
}

/// Merges the held bodies and defines every function in `inner`, adding each one defined to
/// `defined` and each anonymous function it declares to `anonymous`.
fn merge_and_define<M: Module>(
    inner: &mut M,
    held: Vec<Held>,
    address_in_data: &FxHashSet<FuncId>,
    options: &MergeOptions,
    defined: &mut FxHashSet<FuncId>,
    anonymous: &mut Vec<FuncId>,
) -> Result<MergeReport, FinishError> {
    let mut cm = ClifModule::new();
    let mut ids = Vec::with_capacity(held.len());
    let mut planes = Vec::with_capacity(held.len());
    let mut unmerged = Vec::new();
    for held in held {
        // A body naming something it never declares (legal while unused: the inner module
        // compiles it), or holding a name that is not UTF-8 (which Cranelift cannot print),
        // cannot be compared: it goes to the inner module as it is.
        if crate::references::undeclared_reference(&held.func).is_some()
            || crate::module::FuncName::first_not_utf8(&held.func).is_some()
        {
            unmerged.push(held);
            continue;
        }
        let linkage = inner.declarations().get_function_decl(held.id).linkage;
        let linkage = symbol_linkage(linkage, address_in_data.contains(&held.id));
        cm.define(held.func, linkage, None)
            .map_err(crate::Error::from)?;
        ids.push(held.id);
        planes.push(held.ctrl_plane);
    }
    for mut held in unmerged {
        define_in(inner, held.id, held.func, &mut held.ctrl_plane)?;
        defined.insert(held.id);
    }
    // The inner module gets functions only: read-only records (data objects a similar group's
    // members would name) are the object writer's, so groups pass stack arguments here.
    let mut options = options.clone();
    if let Some(similar) = &mut options.similar {
        similar.records = Some(false);
    }
    let (report, _) = merge_module_with_options(&mut cm, &options);
    let stand_ins = crate::pass::stand_ins_by_id(&cm, &report);

    // Private copies (ids past the defined functions) become anonymous functions of the inner
    // module; every body that names them names the new id instead.
    let mut renames: FxHashMap<FuncName, FuncName> = FxHashMap::default();
    let mut copies = Vec::new();
    // (Every function past the held ones: a private copy that similar merging removed is not in
    // the layout any more, but thunks still call it.)
    for fid in (ids.len()..cm.id_count()).map(FunctionId::new) {
        if cm.is_merged_away(fid) && !stand_ins.contains_key(&fid) {
            continue;
        }
        let mf = cm.function(fid);
        let new_id = inner
            .declare_anonymous_function(&mf.func.signature)
            .map_err(|source| FinishError::Define {
                function: mf.name.to_string(),
                source: Box::new(source),
            })?;
        renames.insert(mf.name.clone(), user_name(new_id));
        copies.push((fid, new_id));
        anonymous.push(new_id);
    }
    // The merge's own functions first: should a held body fail, the thunks already defined
    // call only functions that are defined or that the failure lists.
    for &(fid, new_id) in &copies {
        let mut func = match stand_ins.get(&fid) {
            Some(stand_in) => stand_in.clone(),
            None => Function::clone(&cm.function(fid).func),
        };
        func.name = UserFuncName::user(0, new_id.as_u32());
        rename_callees(&mut func, &renames);
        // A private copy is the merge's own function: no caller gave a plane for it.
        define_in(inner, new_id, func, &mut ControlPlane::default())
            .map_err(|error| made_from(error, inner, &cm, &ids, &cm.function(fid).name))?;
        defined.insert(new_id);
    }

    for (i, &id) in ids.iter().enumerate() {
        let fid = FunctionId::new(i);
        let func = if let Some(stand_in) = stand_ins.get(&fid) {
            let mut func = stand_in.clone();
            rename_callees(&mut func, &renames);
            func
        } else if cm.is_merged_away(fid) {
            let kept = report
                .kept_for(fid)
                .expect("a merged-away function's body is in another function");
            match cm.resolve(kept).map(|k| &*cm.function(k).func) {
                // Removed, so only the embedder reaches it (by its id): a copy of the body, not a
                // thunk, for a body that reads its own frame (`crate::policy::frame`).
                Some(body) if reads_own_frame(body) => {
                    let mut func = body.clone();
                    func.name = UserFuncName::user(0, id.as_u32());
                    rename_callees(&mut func, &renames);
                    func
                }
                kept_body => {
                    let sig = &cm.function(fid).func.signature;
                    define_thunk_in(inner, id, sig, kept, kept_body, &renames, &mut planes[i])?;
                    defined.insert(id);
                    continue;
                }
            }
        } else if let Some(kept) = thunk_callee(&cm, &report, fid) {
            // A thunk the merge wrote in place (the function keeps its symbol).
            let kept_body = cm.resolve(kept).map(|k| &*cm.function(k).func);
            let sig = &cm.function(fid).func.signature;
            define_thunk_in(inner, id, sig, kept, kept_body, &renames, &mut planes[i])?;
            defined.insert(id);
            continue;
        } else {
            let mut func = Function::clone(&cm.function(fid).func);
            rename_callees(&mut func, &renames);
            func
        };
        define_in(inner, id, func, &mut planes[i])?;
        defined.insert(id);
    }
    Ok(report)
}

/// Eager mode's resolver: a called function already known is compared by the class of the function that
/// holds its body, the function itself by a fixed sentinel, anything else (addresses included)
/// by name.
struct EagerResolver<'a> {
    own: FuncName,
    rep: &'a FxHashMap<FuncId, FuncId>,
    defined: &'a FxHashSet<FuncId>,
    declarations: &'a ModuleDeclarations,
    /// Thunks whose calls were compared as calls to the function holding their body.
    compared_as_rep: RefCell<Vec<FuncId>>,
}

/// The sentinel class of the function being compared (no `FuncId` this large is ever given).
const SELF: u32 = u32::MAX - 1;

impl Resolver for EagerResolver<'_> {
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey {
        // An address is the symbol's own: a thunk's address is not its body's.
        let (RefKind::Call, Some(name)) = (kind, FuncName::of_external(name, func)) else {
            return NameKey::Identity;
        };
        if name == self.own {
            return NameKey::Class(FunctionId::from_u32(SELF));
        }
        match func_id_of(&name) {
            Some(id) if self.defined.contains(&id) => {
                // A preemptible thunk may be replaced: a call to it is a call to it.
                let rep = match self.rep.get(&id) {
                    Some(&rep) if !is_preemptible(self.declarations, id) => {
                        self.compared_as_rep.borrow_mut().push(id);
                        rep
                    }
                    _ => id,
                };
                NameKey::Class(FunctionId::from_u32(rep.as_u32()))
            }
            _ => NameKey::Identity,
        }
    }
}

fn eager_report(eager: &Eager) -> MergeReport {
    let mut by_kept: FxHashMap<FuncId, Vec<FuncId>> = FxHashMap::default();
    for (&g, &f) in &eager.rep {
        by_kept.entry(f).or_default().push(g);
    }
    let mut kept: Vec<_> = by_kept.into_iter().collect();
    kept.sort();
    let mut redirect_map = Vec::with_capacity(eager.rep.len());
    let classes = kept
        .into_iter()
        .enumerate()
        .map(|(c, (f, mut gs))| {
            gs.sort();
            redirect_map.extend(
                gs.iter()
                    .map(|g| (FunctionId::from_u32(g.as_u32()), c as u32)),
            );
            MergedClass {
                kept: user_name(f),
                replaced: gs
                    .into_iter()
                    .map(|g| Replacement {
                        name: user_name(g),
                        by: Action::Thunk,
                    })
                    .collect(),
            }
        })
        .collect();
    MergeReport {
        functions: eager.defined,
        merged: eager.rep.len(),
        classes,
        redirect_map: {
            redirect_map.sort_unstable();
            redirect_map
        },
        similar: None,
        global: None,
    }
}

impl<M: Module> Module for MergingModule<M> {
    fn isa(&self) -> &dyn isa::TargetIsa {
        self.inner.isa()
    }

    fn declarations(&self) -> &ModuleDeclarations {
        self.inner.declarations()
    }

    fn get_name(&self, name: &str) -> Option<cranelift_module::FuncOrDataId> {
        self.inner.get_name(name)
    }

    fn target_config(&self) -> isa::TargetFrontendConfig {
        self.inner.target_config()
    }

    fn make_context(&self) -> Context {
        self.inner.make_context()
    }

    fn clear_context(&self, ctx: &mut Context) {
        self.inner.clear_context(ctx)
    }

    fn make_signature(&self) -> Signature {
        self.inner.make_signature()
    }

    fn clear_signature(&self, sig: &mut Signature) {
        self.inner.clear_signature(sig)
    }

    fn declare_function(
        &mut self,
        name: &str,
        linkage: Linkage,
        signature: &Signature,
    ) -> ModuleResult<FuncId> {
        self.check_declaration(name, linkage)?;
        self.inner.declare_function(name, linkage, signature)
    }

    fn declare_anonymous_function(&mut self, signature: &Signature) -> ModuleResult<FuncId> {
        self.inner.declare_anonymous_function(signature)
    }

    fn declare_data(
        &mut self,
        name: &str,
        linkage: Linkage,
        writable: bool,
        tls: bool,
    ) -> ModuleResult<DataId> {
        self.inner.declare_data(name, linkage, writable, tls)
    }

    fn declare_anonymous_data(&mut self, writable: bool, tls: bool) -> ModuleResult<DataId> {
        self.inner.declare_anonymous_data(writable, tls)
    }

    fn declare_func_in_func(
        &mut self,
        func_id: FuncId,
        func: &mut Function,
    ) -> cranelift_codegen::ir::FuncRef {
        self.inner.declare_func_in_func(func_id, func)
    }

    fn declare_data_in_func(
        &self,
        data: DataId,
        func: &mut Function,
    ) -> cranelift_codegen::ir::GlobalValue {
        self.inner.declare_data_in_func(data, func)
    }

    fn declare_func_in_data(
        &self,
        func_id: FuncId,
        data: &mut DataDescription,
    ) -> cranelift_codegen::ir::FuncRef {
        self.address_in_data.borrow_mut().insert(func_id);
        self.inner.declare_func_in_data(func_id, data)
    }

    fn declare_data_in_data(
        &self,
        data_id: DataId,
        data: &mut DataDescription,
    ) -> cranelift_codegen::ir::GlobalValue {
        self.inner.declare_data_in_data(data_id, data)
    }

    fn define_function_with_control_plane(
        &mut self,
        func: FuncId,
        ctx: &mut Context,
        ctrl_plane: &mut ControlPlane,
    ) -> ModuleResult<()> {
        self.check_definable(func)?;
        let mut body = ctx.func.clone();
        body.name = UserFuncName::user(0, func.as_u32());
        if !matches!(self.timing, Timing::Deferred(..)) {
            return self.define_eagerly(func, body, ctx, ctrl_plane);
        }
        // Deferred: refuse now what the inner module's compiler would refuse at `finish`.
        self.check_verifies(ctx)?;
        if let Timing::Deferred(held, _) = &mut self.timing {
            held.push(Held {
                id: func,
                func: body,
                ctrl_plane: ctrl_plane.clone(),
            });
        }
        self.defined.insert(func);
        Ok(())
    }

    fn define_function_bytes(
        &mut self,
        func_id: FuncId,
        alignment: u64,
        bytes: &[u8],
        relocs: &[ModuleReloc],
    ) -> ModuleResult<()> {
        self.check_definable(func_id)?;
        self.inner
            .define_function_bytes(func_id, alignment, bytes, relocs)?;
        self.defined.insert(func_id);
        Ok(())
    }

    fn define_data(&mut self, data_id: DataId, data: &DataDescription) -> ModuleResult<()> {
        self.inner.define_data(data_id, data)
    }
}
