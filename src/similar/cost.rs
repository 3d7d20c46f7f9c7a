//! When a similar merge pays: the cost model and the register budget.
//!
//! A group of `n` members, whose bodies have `I` instructions, merged with `k` parameters:
//!
//! ```text
//! before = n × body(I)
//! after  = body(I) + k × per_parameter                       the shared body
//!        + thunks × (thunk + k × per_argument)               members that keep a symbol
//!        + removed_call_sites × k × per_argument             callers of removed members
//! body(I) = per_function + I × per_instruction
//! ```
//!
//! The merge is made when `before − after` is at least the threshold
//! ([`super::SimilarOptions::min_saving`]). The constants are x86_64 bytes, fitted on the corpus
//! (see the README's "cost model" section, and `benches/similar_sizes.sh`): the compiled size of
//! a function against its instruction count, thunks with 0 to 6 extra arguments, and call sites
//! with extra arguments.

use cranelift_codegen::ir::{ArgumentPurpose, Signature, Type};

/// The constants of the model, in bytes (per instruction: hundredths of a byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// Machine code per CLIF instruction, in hundredths of a byte.
    pub per_instruction_centibytes: u64,
    /// Per function: prologue, epilogue and alignment padding.
    pub per_function: u64,
    /// A thunk that adds no argument: the call (or jump), its frame and padding.
    pub thunk: u64,
    /// One extra argument materialized at a call (a thunk's or a caller's).
    pub per_argument: u64,
    /// One parameter inside the shared body (register pressure: moves and spills).
    pub per_parameter: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            per_instruction_centibytes: 480,
            per_function: 24,
            thunk: 24,
            per_argument: 6,
            per_parameter: 4,
        }
    }
}

/// What a group's merge would touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    /// Members.
    pub members: u64,
    /// Members that keep a symbol (as a thunk).
    pub thunks: u64,
    /// Direct calls to the members that are removed (each passes the extra arguments).
    pub removed_call_sites: u64,
    /// Instructions of one member's body.
    pub instructions: u64,
    /// Parameters added.
    pub parameters: u64,
}

impl CostModel {
    /// The estimated size of a body of `instructions` instructions.
    pub fn body(&self, instructions: u64) -> u64 {
        self.per_function + instructions * self.per_instruction_centibytes / 100
    }

    /// The estimated bytes a merge of `group` saves (negative: it costs).
    pub fn saving(&self, group: &GroupShape) -> i64 {
        let body = self.body(group.instructions) as i64;
        let k = group.parameters as i64;
        let before = group.members as i64 * body;
        let after = body
            + k * self.per_parameter as i64
            + group.thunks as i64 * (self.thunk as i64 + k * self.per_argument as i64)
            + group.removed_call_sites as i64 * k * self.per_argument as i64;
        before - after
    }
}

/// How many arguments the target passes in registers; parameters beyond would go to the stack,
/// which a shared body never needs.
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

    /// Whether `sig`'s parameters followed by `extra` all fit in registers.
    pub fn fits(&self, sig: &Signature, extra: &[Type]) -> bool {
        let (mut int, mut float) = (0usize, 0usize);
        let mut count = |ty: Type| {
            if ty.is_float() || ty.is_vector() {
                float += 1;
            } else {
                int += ty.bytes().div_ceil(8).max(1) as usize;
            }
        };
        for p in &sig.params {
            if !matches!(p.purpose, ArgumentPurpose::StructArgument(_)) {
                count(p.value_type);
            }
        }
        extra.iter().copied().for_each(&mut count);
        int <= self.int && float <= self.float
    }
}

impl Default for RegisterBudget {
    fn default() -> Self {
        RegisterBudget::X86_64
    }
}
