//! Phase 2: every defined function compiled by Cranelift, or recognized as a jump thunk.

use super::error::ObjectError;
use super::slots::Slots;
use crate::edit::thunk::is_forwarding_thunk;
use crate::module::{ClifModule, FuncName, FunctionId, ModuleFunction};
use crate::policy::frame::reads_own_frame;
use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{Function, InstructionData};
use cranelift_codegen::isa;
use cranelift_entity::{EntityRef, PrimaryMap};
use cranelift_module::{ModuleReloc, ModuleRelocTarget};
use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// A relocation whose target is a slot or something outside the module.
#[derive(Clone, Debug)]
pub(super) struct Relocation {
    pub(super) offset: u32,
    pub(super) kind: Reloc,
    pub(super) addend: i64,
    pub(super) target: Target,
}

#[derive(Clone, Debug)]
pub(super) enum Target {
    Slot(u32),
    /// An offset inside the function itself.
    SelfOffset(u32),
    Other(ModuleRelocTarget),
}

/// The code of one defined function.
#[derive(Clone, Debug)]
pub(super) enum Code {
    /// Compiled by Cranelift.
    Compiled {
        bytes: Vec<u8>,
        alignment: u64,
        relocs: Vec<Relocation>,
    },
    /// One jump to the slot.
    Thunk(u32),
    /// No code: an alias of the slot.
    AliasOf(u32),
    /// No symbol at all.
    Removed,
}

/// Phase 2: compiles (or recognizes as a thunk) every defined function; by id (functions a merge
/// took away are `Removed`). Functions compile on the pool; an error is the first function's in
/// module order, whatever the threads. With a `cache`, a function it holds (an equal one) takes
/// its code from there, and the code of each function compiled is kept there.
pub(super) fn compile_all(
    module: &ClifModule,
    slots: &Slots,
    isa: &dyn isa::TargetIsa,
    cache: Option<&CodeCache>,
) -> Result<PrimaryMap<FunctionId, Code>, ObjectError> {
    let jumps = jumps_off_cycles(module);
    let ids = module.ids();
    let target = cache.map(|_| CompiledFor::of(isa));
    let compiled = crate::parallel::map_weighted(
        ids,
        |&id| module.function(id).func.dfg.num_insts() * COMPILE_WEIGHT,
        cranelift_codegen::Context::new,
        |ctx, _, &id| {
            let mf = module.function(id);
            match &jumps[id.index()] {
                Some(target) => Ok(Code::Thunk(slots.index[target])),
                None => match cache {
                    Some(cache) => {
                        let target = target.as_ref().expect("made with the cache");
                        cache.code(ctx, mf, slots, (isa, target))
                    }
                    None => compile(ctx, mf, slots, isa),
                },
            }
        },
    );
    let mut out: PrimaryMap<FunctionId, Code> = PrimaryMap::with_capacity(module.id_count());
    for _ in 0..module.id_count() {
        out.push(Code::Removed);
    }
    for (&id, code) in ids.iter().zip(compiled) {
        out[id] = code?;
    }
    Ok(out)
}

/// How much more compiling an instruction costs than the fingerprint walk over it that
/// [`crate::parallel::map_weighted`]'s weights count (about a hundred times).
const COMPILE_WEIGHT: usize = 100;

/// `mf` compiled by Cranelift, its references to functions by slot.
fn compile(
    ctx: &mut cranelift_codegen::Context,
    mf: &ModuleFunction,
    slots: &Slots,
    isa: &dyn isa::TargetIsa,
) -> Result<Code, ObjectError> {
    ctx.clear();
    ctx.func = slots.renamed(&mf.func);
    // Cranelift may panic on input it verified but cannot lower; that is an error about this
    // function, not a crash of the tool.
    let result =
        crate::guard::catch_panic(|| ctx.compile(isa, &mut ControlPlane::default()).map(|_| ()));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(ObjectError::compile(mf, codegen_message(&e.inner))),
        Err(panic) => {
            return Err(ObjectError::compile(
                mf,
                format!("Cranelift failed: {panic}"),
            ));
        }
    }
    let compiled = ctx.compiled_code().expect("compiled above");
    let bytes = compiled.buffer.data().to_vec();
    let alignment = u64::from(compiled.buffer.alignment);
    let relocs = (compiled.buffer.relocs().iter())
        .map(|r| {
            let name =
                ModuleReloc::from_mach_reloc(r, &ctx.func, cranelift_module::FuncId::from_u32(0))
                    .name;
            let target = match name {
                ModuleRelocTarget::User {
                    namespace: 0,
                    index,
                } => Target::Slot(index),
                ModuleRelocTarget::FunctionOffset(_, off) => Target::SelfOffset(off),
                other => Target::Other(other),
            };
            Relocation {
                offset: r.offset,
                kind: r.kind,
                addend: r.addend,
                target,
            }
        })
        .collect();
    Ok(Code::Compiled {
        bytes,
        alignment,
        relocs,
    })
}

/// Code compiled for one module that changes a little between compiles (each round of similar
/// merging measures it, then the object writer compiles what came out), by the function itself
/// and what it is compiled for: a function equal to one compiled before (every field, names
/// included) for the same target and flags compiles to the same code. Each relocation's slot is kept as the slot's name, so that an entry holds whatever slot
/// the name gets next time.
#[derive(Default)]
pub struct CodeCache {
    by_function: Mutex<FxHashMap<u64, Vec<CacheEntry>>>,
}

/// A function compiled, what it was compiled for, and its code.
type CacheEntry = (Function, Arc<CompiledFor>, Arc<CachedCode>);

/// What a function was compiled for beside itself: the target and every flag (shared and the
/// ISA's), as text, and the text's hash, taken once per object rather than for every
/// function looked up. One cache may serve objects of other targets or flags (a library
/// user's choice), and code compiled for one must never answer another.
#[derive(PartialEq, Eq)]
struct CompiledFor {
    text: String,
    hash: u64,
}

impl CompiledFor {
    fn of(isa: &dyn isa::TargetIsa) -> Arc<Self> {
        let mut text = format!("{}\n{}", isa.triple(), isa.flags());
        for flag in isa.isa_flags() {
            text.push_str(&format!("\n{flag}"));
        }
        let hash = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, &text);
        Arc::new(CompiledFor { text, hash })
    }
}

/// A cached function's code: [`Code::Compiled`] with slots as names.
struct CachedCode {
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<(Relocation, Option<FuncName>)>,
}

impl CodeCache {
    /// `mf`'s code, from the cache or compiled (and then cached).
    fn code(
        &self,
        ctx: &mut cranelift_codegen::Context,
        mf: &ModuleFunction,
        slots: &Slots,
        (isa, target): (&dyn isa::TargetIsa, &Arc<CompiledFor>),
    ) -> Result<Code, ObjectError> {
        // What Cranelift compiles is hashed (names are in `params`) with what it is compiled
        // for, the whole compared.
        let key = {
            let mut hasher = rustc_hash::FxHasher::default();
            mf.func.stencil.hash(&mut hasher);
            hasher.write_u64(target.hash);
            hasher.finish()
        };
        let cached = (self.by_function.lock().expect("no panic holds it"))
            .get(&key)
            .and_then(|same_hash| {
                (same_hash.iter()).find(|(f, t, _)| t == target && *f == *mf.func)
            })
            .map(|(_, _, code)| code.clone());
        if let Some(cached) = cached {
            return Ok(cached.code(slots));
        }
        let code = compile(ctx, mf, slots, isa)?;
        if let Code::Compiled {
            bytes,
            alignment,
            relocs,
        } = &code
        {
            let relocs = (relocs.iter())
                .map(|r| match r.target {
                    Target::Slot(s) => (r.clone(), Some(slots.slots[s as usize].name.clone())),
                    _ => (r.clone(), None),
                })
                .collect();
            let cached = CachedCode {
                bytes: bytes.clone(),
                alignment: *alignment,
                relocs,
            };
            (self.by_function.lock().expect("no panic holds it"))
                .entry(key)
                .or_default()
                .push((Function::clone(&mf.func), target.clone(), Arc::new(cached)));
        }
        Ok(code)
    }
}

impl CachedCode {
    /// The code, each named relocation target given its slot in `slots`.
    fn code(&self, slots: &Slots) -> Code {
        let relocs = (self.relocs.iter())
            .map(|(r, name)| match name {
                Some(name) => Relocation {
                    target: Target::Slot(slots.index[name]),
                    ..r.clone()
                },
                None => r.clone(),
            })
            .collect();
        Code::Compiled {
            bytes: self.bytes.clone(),
            alignment: self.alignment,
            relocs,
        }
    }
}

/// By id, the function each defined function jumps to ([`thunk_target`]), except where the
/// jumps make a cycle (`%g` forwarding to its own alias, `%p` and `%q` forwarding to each
/// other): compiled, such functions call each other until the stack overflows; as jumps they
/// would loop forever. So every function on a cycle stays compiled, one calling itself by name
/// included.
fn jumps_off_cycles(module: &ClifModule) -> Vec<Option<FuncName>> {
    let mut jumps: Vec<Option<FuncName>> = vec![None; module.id_count()];
    for (id, mf) in module.iter() {
        jumps[id.index()] = thunk_target(module, &mf.func);
    }
    let next = |jumps: &[Option<FuncName>], at: usize| {
        jumps[at]
            .as_ref()
            .and_then(|t| module.resolve(t))
            .map(|id| id.index())
    };
    // Each function jumps to at most one: walk from each, marking the walk, until a function
    // walked before; if it is on this walk, the walk from there on is a cycle.
    const UNSEEN: usize = usize::MAX;
    let mut walk_of = vec![UNSEEN; jumps.len()];
    let mut on_cycle = Vec::new();
    for start in 0..jumps.len() {
        let mut path = Vec::new();
        let mut at = Some(start);
        while let Some(here) = at.filter(|&h| walk_of[h] == UNSEEN) {
            walk_of[here] = start;
            path.push(here);
            at = next(&jumps, here);
        }
        if let Some(seen) = at.filter(|&h| walk_of[h] == start) {
            let from = path.iter().position(|&p| p == seen).expect("on this walk");
            on_cycle.extend_from_slice(&path[from..]);
        }
    }
    for at in on_cycle {
        jumps[at] = None;
    }
    jumps
}

/// The function a forwarding thunk jumps to, when the callee has exactly `func`'s signature (so
/// that a jump is correct whatever the convention) as declared and, in the module, as defined,
/// nothing the compiled function would do
/// before the call can be observed ([`prologue_is_unobservable`]), and the callee is no module
/// function that reads its own frame (a jump is a tail call: the callee would see the thunk's
/// caller as its own, see `crate::policy::frame`).
fn thunk_target(module: &ClifModule, func: &Function) -> Option<FuncName> {
    if !is_forwarding_thunk(func) || !prologue_is_unobservable(func) {
        return None;
    }
    let entry = func.layout.entry_block()?;
    let first = func.layout.first_inst(entry)?;
    let InstructionData::Call { func_ref, .. } = func.dfg.insts[first] else {
        return None;
    };
    let ext = &func.dfg.ext_funcs[func_ref];
    // A patchable call site is there to be patched at run time; a jump is not one.
    if ext.patchable || func.dfg.signatures[ext.signature] != func.signature {
        return None;
    }
    // A function forwarding to itself is a cycle of one: `jumps_off_cycles` keeps it compiled.
    let target = FuncName::of_external(&ext.name, func)?;
    // The callee as defined, where the module defines it: a jump hands over its code, so its
    // signature must be the thunk's too (`-> i8 uext` declared at the call but `-> i8` defined:
    // compiled, the thunk extends the result itself; jumping, nothing would).
    let unfit = module.resolve(&target).is_some_and(|id| {
        let callee = &module.function(id).func;
        callee.signature != func.signature || reads_own_frame(callee)
    });
    (!unfit).then_some(target)
}

/// Whether a jump may stand for `func`'s prologue: it has no stack limit (a function that calls
/// always checks the limit in its prologue, so the check traps where a jump would not) and no
/// stack slots (every declared slot grows the frame, which a guard page or stack probe can
/// observe).
fn prologue_is_unobservable(func: &Function) -> bool {
    func.stack_limit.is_none()
        && func.sized_stack_slots.is_empty()
        && func.dynamic_stack_slots.is_empty()
}

/// What Cranelift said, readably: a verifier error as the verifier writes it (the instruction
/// and the rule), anything else as Cranelift's debug form, which names the problem.
fn codegen_message(error: &cranelift_codegen::CodegenError) -> String {
    match error {
        cranelift_codegen::CodegenError::Verifier(errors) => {
            let each: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
            format!("verifier, with the target's flags: {}", each.join("; "))
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ObjectOptions, OptLevel, parse_target, write_object, write_object_using};
    use super::CodeCache;
    use crate::module::ClifModule;
    use crate::{Mode, ReadOptions, read_module_text};
    use std::path::Path;

    fn module(text: &str) -> ClifModule {
        read_module_text(Path::new("m.clif"), text, ReadOptions::default()).unwrap()
    }

    fn options() -> ObjectOptions {
        ObjectOptions {
            target: parse_target("x86_64-unknown-linux-gnu").unwrap(),
            opt_level: OptLevel::Speed,
            isa: Default::default(),
            function_sections: false,
            mode: Mode::Safe,
            fold_machine_code: true,
        }
    }

    /// `u0:0` calls `CALLEE` and adds 3. User names (`u0:N`) are the function's parameters,
    /// not its stencil, so that two callers of other names have one stencil.
    const CALLER: &str = "function u0:0(i64) -> i64 {\n    fn0 = CALLEE(i64) -> i64\n\
                          block0(v0: i64):\n    v1 = call fn0(v0)\n    v3 = iconst.i64 3\n    \
                          v2 = iadd v1, v3\n    return v2\n}\n";

    /// `u0:1` and `u0:2`, and `u0:9` first when `zero`.
    fn callees(zero: bool) -> String {
        let add = |name: &str, k: i64| {
            format!(
                "function {name}(i64) -> i64 {{\nblock0(v0: i64):\n    v2 = iconst.i64 {k}\n    \
                 v1 = iadd v0, v2\n    return v1\n}}\n\n"
            )
        };
        let zero = if zero { add("u0:9", 9) } else { String::new() };
        zero + &add("u0:1", 1) + &add("u0:2", 2)
    }

    /// Code taken from the cache is what compiling would give: a function that calls another
    /// name (the same instructions) is compiled again, and one whose callee's slot moved (a
    /// function added before it) keeps its code with the relocation given the new slot.
    #[test]
    fn cached_code_is_the_code_compiling_gives() {
        let cache = CodeCache::default();
        let first = module(&(callees(false) + &CALLER.replace("CALLEE", "u0:1")));
        let written = write_object_using(&first, 0, &options(), &[], Some(&cache)).unwrap();
        let compiled = write_object(&first, 0, &options()).unwrap();
        assert_eq!(written.bytes, compiled.bytes);
        let other_callee = module(&(callees(false) + &CALLER.replace("CALLEE", "u0:2")));
        let moved = module(&(callees(true) + &CALLER.replace("CALLEE", "u0:1")));
        for changed in [other_callee, moved] {
            let cached = write_object_using(&changed, 0, &options(), &[], Some(&cache)).unwrap();
            let compiled = write_object(&changed, 0, &options()).unwrap();
            assert_eq!(cached.bytes, compiled.bytes);
        }
    }
}
