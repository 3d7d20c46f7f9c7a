//! When a similar merge pays: the cost model and the register budget.
//!
//! A group of `n` members, whose bodies have the instruction mix `I`, merged with `k`
//! parameters:
//!
//! ```text
//! before = n × body(I)
//! after  = body(I) + k × per_parameter + s × per_stack_argument   the shared body
//!        + thunks × (thunk + call)                                 members that keep a symbol
//!        + removed_call_sites × call                               callers of removed members
//! body(I) = per_function + Σ over the kinds of instruction: count × bytes of the kind
//! call    = k × per_argument + s × per_stack_argument
//! ```
//!
//! where `s` of the `k` parameters find no argument register after the members' own.
//!
//! The merge is made when `before − after` is at least the threshold
//! ([`super::SimilarOptions::min_saving`]). The constants are x86_64 bytes, fitted on the corpus
//! (see `docs/similar.md`, "Cost model", and `examples/similar_predict.rs --groups`): the
//! compiled size of the members of the groups merged against their instruction mix, the shared
//! bodies' and the thunks' against their parameters. Kinds count differently: a constant often
//! folds into an immediate but often needs a register of its own; a branch is a compare, a
//! jump and the moves of block arguments.

use cranelift_codegen::ir::{ArgumentPurpose, Function, Opcode, Signature, Type};

/// The constants of the model, in bytes (per instruction: hundredths of a byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// Machine code per constant (`iconst`, `f32const`, `f64const`), in hundredths of a byte.
    pub per_constant_centibytes: u64,
    /// Per call of any kind (the call, its argument and result moves).
    pub per_call_centibytes: u64,
    /// Per load or store.
    pub per_memory_centibytes: u64,
    /// Per branch or terminator (`jump`, `brif`, `br_table`, `return`, traps).
    pub per_branch_centibytes: u64,
    /// Per other instruction (arithmetic, conversions, comparisons).
    pub per_other_centibytes: u64,
    /// Per block parameter that is moved: of a block other than the entry block (the moves
    /// that pass it), or an argument of a function that calls.
    pub per_block_parameter_centibytes: u64,
    /// Per function: prologue, epilogue and alignment padding.
    pub per_function: u64,
    /// A thunk that adds no argument: the call (or jump), its frame and padding.
    pub thunk: u64,
    /// One extra argument materialized at a call (a thunk's or a caller's).
    pub per_argument: u64,
    /// One parameter inside the shared body (register pressure: moves and spills).
    pub per_parameter: u64,
    /// One added parameter passed on the stack, at each call and in the shared body.
    pub per_stack_argument: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            per_constant_centibytes: 666,
            per_call_centibytes: 360,
            per_memory_centibytes: 441,
            per_branch_centibytes: 1032,
            per_other_centibytes: 85,
            per_block_parameter_centibytes: 700,
            per_function: 16,
            thunk: 16,
            per_argument: 5,
            per_parameter: 6,
            per_stack_argument: 20,
        }
    }
}

/// How many instructions of each kind the cost model tells apart a body has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstructionMix {
    /// `iconst`, `f32const`, `f64const`.
    pub constants: u64,
    /// Calls of every kind.
    pub calls: u64,
    /// Loads and stores.
    pub memory: u64,
    /// Branches and terminators.
    pub branches: u64,
    /// Every other instruction.
    pub other: u64,
    /// Parameters of blocks other than the entry block (which branches pass), and, in a
    /// function that calls, the entry block's (its arguments, moved around the calls).
    pub block_parameters: u64,
}

impl InstructionMix {
    /// The mix of `func`'s body.
    pub fn of(func: &Function) -> InstructionMix {
        let mut mix = InstructionMix::default();
        let mut arguments = 0;
        let entry = func.layout.entry_block();
        for block in func.layout.blocks() {
            let params = func.dfg.block_params(block).len() as u64;
            if Some(block) == entry {
                arguments = params;
            } else {
                mix.block_parameters += params;
            }
            for inst in func.layout.block_insts(block) {
                let op = func.dfg.insts[inst].opcode();
                let kind = match op {
                    Opcode::Iconst | Opcode::F32const | Opcode::F64const => &mut mix.constants,
                    _ if op.is_call() => &mut mix.calls,
                    _ if op.can_load() || op.can_store() => &mut mix.memory,
                    _ if op.is_branch() || op.is_terminator() => &mut mix.branches,
                    _ => &mut mix.other,
                };
                *kind += 1;
            }
        }
        // The function's arguments arrive in their registers: in a leaf they stay there, and
        // no instruction passes them; a call clobbers those registers, so the arguments used
        // after it, or passed on elsewhere, are moved (and callee-saved registers saved).
        if mix.calls > 0 {
            mix.block_parameters += arguments;
        }
        mix
    }

    /// Its instructions, of every kind.
    pub fn total(&self) -> u64 {
        self.constants + self.calls + self.memory + self.branches + self.other
    }
}

/// What a group's merge would touch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupShape {
    /// Members.
    pub members: u64,
    /// Members that keep a symbol (as a thunk).
    pub thunks: u64,
    /// Direct calls to the members that are removed (each passes the extra arguments).
    pub removed_call_sites: u64,
    /// The instructions of one member's body, by kind.
    pub instructions: InstructionMix,
    /// Parameters added.
    pub parameters: u64,
    /// Of those, how many go to the stack.
    pub stack_arguments: u64,
}

impl CostModel {
    /// The estimated size of a body with the instructions `mix`.
    pub fn body(&self, mix: &InstructionMix) -> u64 {
        let centibytes = mix.constants * self.per_constant_centibytes
            + mix.calls * self.per_call_centibytes
            + mix.memory * self.per_memory_centibytes
            + mix.branches * self.per_branch_centibytes
            + mix.other * self.per_other_centibytes
            + mix.block_parameters * self.per_block_parameter_centibytes;
        self.per_function + centibytes / 100
    }

    /// The estimated bytes a merge of `group` saves (negative: it costs).
    pub fn saving(&self, group: &GroupShape) -> i64 {
        let body = self.body(&group.instructions) as i64;
        let k = group.parameters as i64;
        let per_call = k * self.per_argument as i64
            + group.stack_arguments as i64 * self.per_stack_argument as i64;
        let before = group.members as i64 * body;
        let after = body
            + k * self.per_parameter as i64
            + group.stack_arguments as i64 * self.per_stack_argument as i64
            + group.thunks as i64 * (self.thunk as i64 + per_call)
            + group.removed_call_sites as i64 * per_call;
        before - after
    }
}

/// How many arguments the target passes in registers: parameters a group adds that, after the
/// members' own, find no free register go to the stack, which the cost model charges
/// ([`CostModel::per_stack_argument`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterBudget {
    /// Integer and pointer arguments.
    pub int: usize,
    /// Float and vector arguments.
    pub float: usize,
}

impl RegisterBudget {
    /// x86_64 (System V and Cranelift's `tail`): rdi, rsi, rdx, rcx, r8, r9; xmm0–7.
    pub const X86_64: RegisterBudget = RegisterBudget { int: 6, float: 8 };
    /// aarch64 (AAPCS64 and `tail`): x0–x7; v0–v7.
    pub const AARCH64: RegisterBudget = RegisterBudget { int: 8, float: 8 };

    /// Whether `extra` (the added parameters) alone fit in the registers.
    pub fn fits(&self, extra: &[Type]) -> bool {
        let (int, float) = count_registers(extra.iter().copied());
        int <= self.int && float <= self.float
    }

    /// How many of `extra`, passed after `sig`'s parameters, go to the stack.
    pub fn stack_arguments(&self, sig: &Signature, extra: &[Type]) -> usize {
        let own = sig
            .params
            .iter()
            .filter(|p| !matches!(p.purpose, ArgumentPurpose::StructArgument(_)))
            .map(|p| p.value_type);
        let (int, float) = count_registers(own);
        let (extra_int, extra_float) = count_registers(extra.iter().copied());
        let spill =
            |own: usize, extra: usize, regs: usize| (own + extra).saturating_sub(regs.max(own));
        spill(int, extra_int, self.int) + spill(float, extra_float, self.float)
    }
}

/// The integer and float registers `types` take.
fn count_registers(types: impl Iterator<Item = Type>) -> (usize, usize) {
    let (mut int, mut float) = (0usize, 0usize);
    for ty in types {
        let (i, f) = registers_of(ty);
        int += i;
        float += f;
    }
    (int, float)
}

/// The integer and float registers one argument of type `ty` takes.
fn registers_of(ty: Type) -> (usize, usize) {
    if ty.is_float() || ty.is_vector() {
        (0, 1)
    } else {
        (ty.bytes().div_ceil(8).max(1) as usize, 0)
    }
}

impl RegisterBudget {}

impl Default for RegisterBudget {
    fn default() -> Self {
        RegisterBudget::X86_64
    }
}

#[cfg(test)]
mod tests {
    use super::InstructionMix;

    /// The entry block's parameters are the function's arguments, in registers on entry: in a
    /// leaf no instruction moves them. Every other block's parameters are moves at its branches.
    #[test]
    fn block_parameters_count_those_branches_pass_not_a_leafs_arguments() {
        let func = cranelift_reader::parse_functions(
            "function %f(i64, i64, i64) -> i64 system_v {
            block0(v0: i64, v1: i64, v2: i64):
                brif v0, block1(v1), block1(v2)
            block1(v3: i64):
                return v3
            }",
        )
        .expect("valid CLIF")
        .remove(0);
        let mix = InstructionMix::of(&func);
        assert_eq!(mix.block_parameters, 1);
        assert_eq!((mix.branches, mix.total()), (2, 2));
    }

    /// A call clobbers the argument registers: a function that calls moves its arguments.
    #[test]
    fn the_arguments_of_a_function_that_calls_count() {
        let func = cranelift_reader::parse_functions(
            "function %f(i64, i64, i64) -> i64 system_v {
                sig0 = (i64) -> i64 system_v
                fn0 = %g sig0
            block0(v0: i64, v1: i64, v2: i64):
                v3 = call fn0(v2)
                v4 = iadd v3, v0
                return v4
            }",
        )
        .expect("valid CLIF")
        .remove(0);
        assert_eq!(InstructionMix::of(&func).block_parameters, 3);
    }
}
