//! A [`ClifModule`] compiled for the host with cranelift-jit, its functions called with
//! [`DataValue`]s through trampolines, as Cranelift's own run tests call them.
//!
//! Every defined function is compiled under a symbol of its own; an alias is the address of its
//! target. A function that cannot run is left out with the reason, and so is every function
//! that refers to it: one that refers to a name the module does not define (the run tests'
//! `%__cranelift_throw` host call), one that Cranelift cannot compile for this ISA, and one
//! that calls a libcall the host does not provide.
//!
//! Machine code is kept in a [`CodeCache`] by the function's text: a merge changes few
//! functions, and the other configurations of a file reuse the code of all the others (a
//! function's code depends only on its text and the ISA; the functions it refers to are
//! relocations, resolved by name in each module).

use clif_merge::{ClifModule, FuncName};
use cranelift_codegen::FinalizedRelocTarget;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{
    AbiParam, ExternalName, Function, GlobalValueData, InstBuilder, MemFlagsData, Signature,
    UserExternalName, UserFuncName,
};
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc, ModuleRelocTarget};
use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

/// Every argument and result has a slot of this many bytes in the trampoline's buffer: the
/// widest value the x86_64 backend passes (a 128-bit vector or `i128`).
const SLOT_BYTES: usize = 16;

/// Libcalls the host's C library provides (the others come from [`crate::libcalls`]).
const C_LIBCALLS: [&str; 4] = ["memcpy", "memset", "memmove", "memcmp"];

/// A module compiled and ready to call.
pub struct Compiled {
    jit: Option<JITModule>,
    /// Defined functions and aliases that were compiled.
    ids: HashMap<FuncName, FuncId>,
    /// One trampoline per signature a run line calls, or why there is none.
    trampolines: HashMap<Signature, Result<FuncId, String>>,
    /// The functions left out, each with the reason.
    left_out: BTreeMap<FuncName, String>,
}

impl Compiled {
    /// Compiles `module` for `isa` (whose code `cache` holds), with a trampoline for each of
    /// `signatures`.
    pub fn new(
        module: &ClifModule,
        isa: &OwnedTargetIsa,
        signatures: &[Signature],
        cache: &CodeCache,
    ) -> Compiled {
        let mut left_out = unresolved_references(module);
        let codes: HashMap<&FuncName, Arc<Result<Code, String>>> = module
            .functions()
            .filter(|mf| !left_out.contains_key(&mf.name))
            .map(|mf| (&mf.name, cache.code(&mf.func, isa)))
            .collect();
        for (name, code) in &codes {
            if let Err(why) = &**code {
                left_out.insert((*name).clone(), why.clone());
            }
        }
        spread_to_referrers(module, &mut left_out);
        let mut jit = new_jit(isa);
        let mut ids = HashMap::new();
        let runnable: Vec<_> = module
            .functions()
            .filter(|mf| !left_out.contains_key(&mf.name))
            .collect();
        for (n, mf) in runnable.iter().enumerate() {
            let id = jit
                .declare_function(&format!("f{n}"), Linkage::Local, &mf.func.signature)
                .expect("a fresh name");
            ids.insert(mf.name.clone(), id);
        }
        for alias in module.aliases() {
            let target = module.resolve(&alias.target).expect("a defined target");
            if let Some(&id) = ids.get(&module.function(target).name) {
                ids.insert(alias.name.clone(), id);
            }
        }
        for mf in &runnable {
            let code = codes[&mf.name].as_ref().as_ref().expect("compiled");
            code.define(&mut jit, ids[&mf.name], &ids);
        }
        let mut trampolines = HashMap::new();
        for (n, signature) in signatures.iter().enumerate() {
            if trampolines.contains_key(signature) || has_wide_values(signature) {
                continue;
            }
            let mut call_sig = Signature::new(isa.default_call_conv());
            call_sig.params = vec![AbiParam::new(isa.pointer_type()); 2];
            let id = jit
                .declare_function(&format!("trampoline{n}"), Linkage::Local, &call_sig)
                .expect("a fresh name");
            let code = cache.code(&trampoline(call_sig, signature, isa), isa);
            let trampoline = match &*code {
                Ok(code) => {
                    code.define(&mut jit, id, &ids);
                    Ok(id)
                }
                Err(why) => Err(format!("its signature: {why}")),
            };
            trampolines.insert(signature.clone(), trampoline);
        }
        jit.finalize_definitions().expect("every symbol resolves");
        Compiled {
            jit: Some(jit),
            ids,
            trampolines,
            left_out,
        }
    }

    /// Why `name` cannot be called, when it cannot.
    pub fn why_not(&self, name: &FuncName) -> Option<&str> {
        self.left_out.get(name).map(String::as_str)
    }

    /// Calls `name`, whose signature is `signature`, with `args`; its results.
    ///
    /// # Safety
    ///
    /// The function must have `signature`, return, and touch no memory it does not own: true
    /// of Cranelift's run tests, which the caller has run on the unmerged module first.
    pub unsafe fn call(
        &self,
        name: &FuncName,
        signature: &Signature,
        args: &[DataValue],
    ) -> Result<Vec<DataValue>, String> {
        if let Some(why) = self.why_not(name) {
            return Err(why.to_string());
        }
        let jit = self.jit.as_ref().expect("a live module");
        let id = *self.ids.get(name).ok_or(format!("{name} is not defined"))?;
        let trampoline = self.trampolines[signature].clone()?;
        let slots = signature.params.len().max(signature.returns.len());
        let mut buffer = vec![0u128; slots];
        for (slot, arg) in buffer.iter_mut().zip(args) {
            // SAFETY: a slot holds 16 bytes, the widest value a run test passes (checked by
            // `has_wide_values` before a line is run).
            unsafe { arg.write_value_to(slot) };
        }
        let callee = jit.get_finalized_function(id);
        let code = jit.get_finalized_function(trampoline);
        // SAFETY: the trampoline was compiled for this signature in the ISA's default calling
        // convention, the host's C convention; the caller vouches for the callee.
        unsafe {
            let trampoline: extern "C" fn(*const u8, *mut u128) = std::mem::transmute(code);
            trampoline(callee, buffer.as_mut_ptr());
        }
        let results = signature
            .returns
            .iter()
            .zip(&buffer)
            // SAFETY: the trampoline stored a value of this type in the slot.
            .map(|(r, slot)| unsafe { DataValue::read_value_from(slot, r.value_type) })
            .collect();
        Ok(results)
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        if let Some(jit) = self.jit.take() {
            // SAFETY: no pointer into the module's code outlives it.
            unsafe { jit.free_memory() };
        }
    }
}

/// A JIT module for `isa` that finds our libcalls first.
fn new_jit(isa: &OwnedTargetIsa) -> JITModule {
    let mut builder = JITBuilder::with_isa(isa.clone(), cranelift_module::default_libcall_names());
    builder.symbol_lookup_fn(Box::new(crate::libcalls::lookup));
    JITModule::new(builder)
}

/// Whether a value of `signature` is wider than a trampoline slot.
pub fn has_wide_values(signature: &Signature) -> bool {
    let params = signature.params.iter().chain(&signature.returns);
    params
        .map(|p| p.value_type.bytes() as usize)
        .any(|b| b > SLOT_BYTES)
}

/// Machine code by function text, for one ISA.
#[derive(Default)]
pub struct CodeCache(Mutex<HashMap<String, Arc<Result<Code, String>>>>);

impl CodeCache {
    /// The code of `func` for `isa`, compiled unless it was before; `Err` with the reason
    /// when it cannot be compiled or linked.
    fn code(&self, func: &Function, isa: &OwnedTargetIsa) -> Arc<Result<Code, String>> {
        let key = func.display().to_string();
        if let Some(code) = self.0.lock().unwrap().get(&key) {
            return code.clone();
        }
        let code = Arc::new(Code::compile(func, &**isa));
        self.0.lock().unwrap().insert(key, code.clone());
        code
    }
}

/// A function's machine code and relocations, with the functions it refers to by name.
pub struct Code {
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<(ModuleReloc, Option<FuncName>)>,
}

impl Code {
    /// Compiles `func`.
    fn compile(func: &Function, isa: &dyn TargetIsa) -> Result<Code, String> {
        let (func, names) = with_numbered_names(func);
        let mut ctx = cranelift_codegen::Context::for_function(func);
        let mut ctrl_plane = Default::default();
        let compiled = quietly(|| {
            ctx.compile(isa, &mut ctrl_plane)
                .map(|_| ())
                .map_err(|e| e.inner.to_string())
        });
        match compiled {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("does not compile: {e}")),
            Err(panic) => return Err(format!("Cranelift panics: {panic}")),
        }
        let code = ctx.compiled_code().expect("compiled");
        let libcall_names = cranelift_module::default_libcall_names();
        let mut relocs = Vec::new();
        for reloc in code.buffer.relocs() {
            if let FinalizedRelocTarget::ExternalName(ExternalName::LibCall(libcall)) = reloc.target
            {
                let name = libcall_names(libcall);
                let ours = crate::libcalls::lookup(&name).is_some();
                if !ours && !C_LIBCALLS.contains(&&*name) {
                    return Err(format!(
                        "calls the libcall {name}, which the host does not provide"
                    ));
                }
            }
            let module_reloc = ModuleReloc::from_mach_reloc(reloc, &ctx.func, FuncId::from_u32(0));
            let name = match module_reloc.name {
                ModuleRelocTarget::User { index, .. } => Some(names[index as usize].clone()),
                _ => None,
            };
            relocs.push((module_reloc, name));
        }
        Ok(Code {
            bytes: code.code_buffer().to_vec(),
            alignment: u64::from(code.buffer.alignment),
            relocs,
        })
    }

    /// Defines this code as `id` in `jit`, the functions it refers to named by `ids`.
    fn define(&self, jit: &mut JITModule, id: FuncId, ids: &HashMap<FuncName, FuncId>) {
        let relocs: Vec<ModuleReloc> = (self.relocs.iter())
            .map(|(reloc, name)| {
                let target = match (&reloc.name, name) {
                    (_, Some(name)) => ModuleRelocTarget::user(0, ids[name].as_u32()),
                    (ModuleRelocTarget::FunctionOffset(_, offset), None) => {
                        ModuleRelocTarget::FunctionOffset(id, *offset)
                    }
                    (other, None) => other.clone(),
                };
                ModuleReloc {
                    name: target,
                    ..reloc.clone()
                }
            })
            .collect();
        jit.define_function_bytes(id, self.alignment, &self.bytes, &relocs)
            .expect("a declared function, defined once");
    }
}

/// `func` with every function it refers to named `u0:<n>`, and those names by `n`.
fn with_numbered_names(func: &Function) -> (Function, Vec<FuncName>) {
    let mut func = func.clone();
    let mut names: Vec<FuncName> = Vec::new();
    let mut number = |func: &mut Function, name: FuncName| {
        let n = names.iter().position(|m| *m == name).unwrap_or_else(|| {
            names.push(name);
            names.len() - 1
        });
        ExternalName::user(func.declare_imported_user_function(UserExternalName::new(0, n as u32)))
    };
    let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
    for r in refs {
        if let Some(name) = FuncName::of_external(&func.dfg.ext_funcs[r].name, &func) {
            func.dfg.ext_funcs[r].name = number(&mut func, name);
        }
    }
    let gvs: Vec<_> = func.global_values.keys().collect();
    for gv in gvs {
        let GlobalValueData::Symbol { name, .. } = &func.global_values[gv] else {
            continue;
        };
        if let Some(target) = FuncName::of_external(name, &func) {
            let new = number(&mut func, target);
            if let GlobalValueData::Symbol { name, .. } = &mut func.global_values[gv] {
                *name = new;
            }
        }
    }
    (func, names)
}

/// The functions of `module` that refer to a function name it does not define, or to a
/// known symbol the JIT cannot resolve.
fn unresolved_references(module: &ClifModule) -> BTreeMap<FuncName, String> {
    let mut left_out = BTreeMap::new();
    for mf in module.functions() {
        let func = &mf.func;
        for name in external_names(func) {
            let why = match name {
                ExternalName::KnownSymbol(k) => Some(format!("refers to the known symbol {k:?}")),
                ExternalName::LibCall(_) => None,
                _ => FuncName::of_external(name, func)
                    .filter(|n| module.resolve(n).is_none())
                    .map(|n| format!("refers to {n}, which no file defines")),
            };
            if let Some(why) = why {
                left_out.insert(mf.name.clone(), why);
                break;
            }
        }
    }
    left_out
}

/// Adds to `left_out` every function that refers to one left out (and aliases of them), with
/// the same reason.
fn spread_to_referrers(module: &ClifModule, left_out: &mut BTreeMap<FuncName, String>) {
    loop {
        let mut added = Vec::new();
        for alias in module.aliases() {
            if let Some(target) = module.resolve(&alias.target)
                && let Some(why) = left_out.get(&module.function(target).name)
                && !left_out.contains_key(&alias.name)
            {
                added.push((alias.name.clone(), why.clone()));
            }
        }
        for mf in module.functions() {
            if left_out.contains_key(&mf.name) {
                continue;
            }
            let refs = external_names(&mf.func).filter_map(|n| FuncName::of_external(n, &mf.func));
            if let Some(why) = refs.filter_map(|n| left_out.get(&n)).next() {
                added.push((mf.name.clone(), why.clone()));
            }
        }
        if added.is_empty() {
            return;
        }
        left_out.extend(added);
    }
}

/// Every external name `func` refers to, by call or by address.
fn external_names(func: &Function) -> impl Iterator<Item = &ExternalName> {
    let ext = func.dfg.ext_funcs.values().map(|e| &e.name);
    let symbols = func.global_values.values().filter_map(|gv| match gv {
        GlobalValueData::Symbol { name, .. } => Some(name),
        _ => None,
    });
    ext.chain(symbols)
}

thread_local! {
    /// Whether this thread is inside [`quietly`].
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`; a panic becomes `Err` with its message, and is not printed.
fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.get() {
                default(info);
            }
        }));
    });
    QUIET.set(true);
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.set(false);
    result.map_err(|panic| {
        let message = (panic.downcast_ref::<String>().map(String::as_str))
            .or_else(|| panic.downcast_ref::<&str>().copied());
        message.unwrap_or("a panic").to_string()
    })
}

/// A function `(callee, buffer)` that loads the arguments of `signature` from the buffer's
/// slots, calls `callee` with them, and stores its results into the same slots.
fn trampoline(call_sig: Signature, signature: &Signature, isa: &OwnedTargetIsa) -> Function {
    let mut func = Function::with_name_signature(UserFuncName::default(), call_sig);
    let mut context = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut context);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.seal_block(block);
    let (callee, buffer) = {
        let params = b.func.dfg.block_params(block);
        (params[0], params[1])
    };
    let offset = |i: usize| (i * SLOT_BYTES) as i32;
    let args: Vec<_> = (signature.params.iter().enumerate())
        .map(|(i, p)| {
            b.ins()
                .load(p.value_type, MemFlagsData::trusted(), buffer, offset(i))
        })
        .collect();
    let sig_ref = b.import_signature(signature.clone());
    let call = b.ins().call_indirect(sig_ref, callee, &args);
    let results = b.inst_results(call).to_vec();
    for (i, value) in results.into_iter().enumerate() {
        b.ins()
            .store(MemFlagsData::trusted(), value, buffer, offset(i));
    }
    b.ins().return_(&[]);
    b.finalize(isa.frontend_config());
    func
}
