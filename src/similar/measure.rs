//! What a group really saves, when an object is written: the cost model is an estimate (a
//! group it prices at a few bytes may cost some), but with `-o` every function is compiled
//! anyway, so each chosen group can be compiled as it would be written and kept only when it
//! saves.
//!
//! A group's measured saving is
//!
//! ```text
//! members' code − (shared body's code + each thunk's code) − what the callers grow
//! ```
//!
//! where code is the compiled size with the padding that aligns the next function, by the
//! same ISA and flags the object writer uses. Members of equal machine code, which the object
//! folds into one body anyway, count once; a member whose code a function outside the group
//! shares counts nothing (that function keeps the body: removing the member saves no byte),
//! and neither does a member the object writes as one jump. Every caller of removed members is
//! compiled too, as it is and with its calls redirected to the shared body: what it grows is
//! measured (a call site passing stack arguments grows by what Cranelift makes of them, which
//! no constant prices well: 12–25 bytes an argument on x86_64, less in a caller that already
//! passes some, so the sites of a few callers tell nothing of the others'). For the calls a
//! member makes (its body is replaced anyway), a site costs what the measured ones did on
//! average, or the model's price when none was measured. A member's body,
//! the shared body or a thunk that Cranelift fails to compile makes the group rejected, never
//! an error: the members stay as they were, which compiled or will be reported by the object
//! writer.

use super::cost::{CostModel, GroupShape};
use crate::guard::catch_panic;
use crate::module::{ClifModule, FunctionId};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_entity::PrimaryMap;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// For each function of a module, the class of functions the object writer compiles to equal
/// code (which it may fold into one body), or None where it writes no code of its own (a jump
/// thunk): [`crate::emit::object::equal_code_classes`].
pub type CodeClasses = PrimaryMap<FunctionId, Option<u32>>;

/// How a judge finds a module's [`CodeClasses`]: None when it cannot (a function that does not
/// compile, which the object writer reports).
pub type FindCodeClasses = dyn Fn(&ClifModule) -> Option<CodeClasses> + Send + Sync;

/// The ISA a group's code is measured with: the object writer's (see
/// [`crate::emit::object::target_isa`]).
#[derive(Clone)]
pub struct SizeJudge {
    isa: OwnedTargetIsa,
    folding: Option<Arc<FindCodeClasses>>,
}

impl SizeJudge {
    /// Measures with `isa`, which must be the one the object is compiled with, for an object
    /// that does not fold machine code.
    pub fn new(isa: OwnedTargetIsa) -> SizeJudge {
        SizeJudge { isa, folding: None }
    }

    /// The same judge, for an object that folds functions of equal machine code: `classes`
    /// finds them before the groups are measured (the pipeline passes
    /// [`crate::emit::object::equal_code_classes`] with the object's options). Without it, a
    /// member whose code a function outside its group shares is credited bytes that folding
    /// removes anyway, and the object grows.
    pub fn with_folding(self, classes: Arc<FindCodeClasses>) -> SizeJudge {
        SizeJudge {
            folding: Some(classes),
            ..self
        }
    }

    /// The module's classes of equal code, when the object folds and they can be found.
    pub(super) fn code_classes(&self, module: &ClifModule) -> Option<CodeClasses> {
        self.folding.as_ref().and_then(|find| find(module))
    }

    /// What taking one read-only record's address costs beside the code, or None where it
    /// would be an absolute relocation in text (aarch64 without PIC: a position-independent
    /// executable linked from the object would need text relocations, which ld.lld leaves
    /// broken). x86_64 takes it with a PC-relative `lea`: directly without PIC, and under PIC
    /// from the GOT load the object writer marks relaxable, which linkers rewrite into the
    /// `lea` on ELF (`relax.rs`); nothing. Elsewhere under PIC (aarch64, Mach-O) the load
    /// stays: a GOT entry (8 bytes) and its dynamic relocation (24) per record.
    pub(super) fn record_address_cost(&self) -> Option<u64> {
        let triple = self.isa.triple();
        let x86_64 = triple.architecture == target_lexicon::Architecture::X86_64;
        match (self.isa.flags().is_pic(), x86_64) {
            (false, true) => Some(0),
            (false, false) => None,
            (true, true) if triple.binary_format == target_lexicon::BinaryFormat::Elf => Some(0),
            (true, _) => Some(8 + 24),
        }
    }

    /// What identifies the code the ISA makes: its triple and every setting.
    fn identity(&self) -> String {
        let isa_flags: Vec<String> = (self.isa.isa_flags().iter())
            .map(|f| f.to_string())
            .collect();
        format!(
            "{} {} {} folding={}",
            self.isa.triple(),
            self.isa.flags(),
            isa_flags.join(" "),
            self.folding.is_some()
        )
    }

    /// The bytes `func` takes in the text section: its code rounded up to its alignment (the
    /// padding before the next function). None when Cranelift cannot compile it.
    pub fn code_size(&self, ctx: &mut cranelift_codegen::Context, func: &Function) -> Option<u64> {
        self.code(ctx, func).map(|(size, _)| size)
    }

    /// [`Self::code_size`], with the code itself: its bytes and relocations, each relocation's
    /// target by name, so that two functions whose code the object would fold into one body
    /// have equal code.
    fn code(&self, ctx: &mut cranelift_codegen::Context, func: &Function) -> Option<(u64, Code)> {
        ctx.clear();
        ctx.func = func.clone();
        let isa: &dyn TargetIsa = &*self.isa;
        let compiled = catch_panic(|| ctx.compile(isa, &mut ControlPlane::default()).map(|_| ()));
        if !matches!(compiled, Ok(Ok(()))) {
            return None;
        }
        let code = ctx.compiled_code()?;
        let alignment = u64::from(code.buffer.alignment)
            .max(isa.symbol_alignment())
            .max(1);
        let relocs = (code.buffer.relocs().iter())
            .map(|r| {
                let target = r.target.display(Some(&ctx.func.params)).to_string();
                (r.offset, format!("{:?}", r.kind), r.addend, target)
            })
            .collect();
        let size = (code.buffer.data().len() as u64).next_multiple_of(alignment);
        Some((size, (code.buffer.data().to_vec(), relocs)))
    }
}

/// A module's [`CodeClasses`], with each class's number of functions.
pub(super) struct ClassSizes {
    class: CodeClasses,
    size: FxHashMap<u32, usize>,
}

impl ClassSizes {
    pub(super) fn of(class: CodeClasses) -> ClassSizes {
        let mut size: FxHashMap<u32, usize> = FxHashMap::default();
        for c in class.values().flatten() {
            *size.entry(*c).or_default() += 1;
        }
        ClassSizes { class, size }
    }
}

/// A function's machine code: bytes, and relocations (offset, kind, addend, target).
type Code = (Vec<u8>, Vec<(u32, String, i64, String)>);

impl PartialEq for SizeJudge {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for SizeJudge {}

impl std::fmt::Debug for SizeJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SizeJudge({})", self.isa.triple())
    }
}

/// What one group's merge writes and removes, to be measured.
pub(super) struct Trial<'a> {
    /// The shared body.
    pub(super) shared: Function,
    /// The thunks of the members that keep a symbol.
    pub(super) thunks: Vec<Function>,
    /// Direct calls to the members that are removed, each passing the extra arguments.
    pub(super) removed_call_sites: u64,
    /// Some of the functions that make those calls, to be measured.
    pub(super) callers: Vec<CallerTrial<'a>>,
    /// The parameters added, and how many of them go to the stack.
    pub(super) parameters: u64,
    pub(super) stack_arguments: u64,
}

/// A function that calls removed members: as it is, and with those calls redirected to the
/// shared body passing the members' values.
pub(super) struct CallerTrial<'a> {
    pub(super) id: FunctionId,
    pub(super) before: &'a Function,
    pub(super) after: Function,
    /// The calls of removed members it makes.
    pub(super) sites: u64,
}

impl SizeJudge {
    /// The bytes the `members` of a group take, measured; None when one does not compile, or
    /// (with the module's `classes`, an object that folds) when a member's machine code is
    /// another function's, in the group or outside it: folded with it, the member costs
    /// nothing, and merging it makes its code differ (the thunks of a group pass other
    /// values), which unfolds it and every function that refers to it (their code was one
    /// because their callees were). Without classes, members whose machine code is equal
    /// count once. A member written as a jump counts nothing. Measured once per group: every
    /// way of writing the group ([`Trial`]) removes the same members.
    pub(super) fn members_size(
        &self,
        ctx: &mut cranelift_codegen::Context,
        members: &[(FunctionId, &Function)],
        classes: Option<&ClassSizes>,
    ) -> Option<u64> {
        let mut before = 0u64;
        let mut seen = rustc_hash::FxHashSet::default();
        for &(id, func) in members {
            let (size, code) = self.code(ctx, func)?;
            let first_of_code = seen.insert(code);
            let counts = match classes {
                None => true,
                // Written as one jump: nothing to remove.
                Some(classes) => match classes.class[id] {
                    None => false,
                    Some(class) if classes.size.get(&class) != Some(&1) => return None,
                    Some(_) => true,
                },
            };
            if first_of_code && counts {
                before += size;
            }
        }
        Some(before)
    }

    /// The bytes `trial` saves, measured, its members taking `before` bytes
    /// ([`SizeJudge::members_size`]); None when something in it does not compile.
    pub(super) fn saving(
        &self,
        ctx: &mut cranelift_codegen::Context,
        cost: &CostModel,
        trial: &Trial,
        (before, classes): (u64, Option<&ClassSizes>),
    ) -> Option<i64> {
        let mut after = self.code_size(ctx, &trial.shared)?;
        for thunk in &trial.thunks {
            after += self.code_size(ctx, thunk)?;
        }
        Some(before as i64 - after as i64 - self.call_sites_cost(ctx, cost, trial, classes))
    }

    /// What the callers of removed members grow: measured on [`Trial::callers`], their
    /// average for the other sites (the model's price when no caller compiled). With the
    /// module's `classes`, a caller whose machine code another function shares, or that is
    /// written as one jump, had no bytes of its own: it grows by all it becomes.
    fn call_sites_cost(
        &self,
        ctx: &mut cranelift_codegen::Context,
        cost: &CostModel,
        trial: &Trial,
        classes: Option<&ClassSizes>,
    ) -> i64 {
        let (mut grown, mut measured_sites) = (0i64, 0u64);
        for caller in &trial.callers {
            let own_code = classes.is_none_or(|c| {
                (c.class[caller.id]).is_some_and(|class| c.size.get(&class) == Some(&1))
            });
            let before = match own_code {
                true => self.code_size(ctx, caller.before),
                false => Some(0),
            };
            let after = self.code_size(ctx, &caller.after);
            if let (Some(before), Some(after)) = (before, after) {
                grown += after as i64 - before as i64;
                measured_sites += caller.sites;
            }
        }
        let unmeasured = trial.removed_call_sites.saturating_sub(measured_sites) as i64;
        if unmeasured == 0 {
            return grown;
        }
        if measured_sites == 0 {
            return model_call_sites_cost(cost, trial);
        }
        // The measured average, rounded up: the judge must not promise bytes it cannot see.
        let measured_sites = measured_sites as i64;
        grown + (grown * unmeasured + measured_sites - 1).div_euclid(measured_sites)
    }
}

/// The model's price of the extra arguments at the call sites of removed members.
fn model_call_sites_cost(cost: &CostModel, trial: &Trial) -> i64 {
    let one_site = GroupShape {
        members: 0,
        thunks: 0,
        removed_call_sites: 1,
        instructions: Default::default(),
        parameters: trial.parameters,
        stack_arguments: trial.stack_arguments,
    };
    let none = GroupShape {
        removed_call_sites: 0,
        ..one_site
    };
    // The saving is linear in the call sites: one site's share, times the sites.
    (cost.saving(&none) - cost.saving(&one_site)) * trial.removed_call_sites as i64
}
