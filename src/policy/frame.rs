//! Functions that read their own frame: `get_frame_pointer`, `get_stack_pointer` and
//! `get_return_address` see the frame the function runs in and the caller it returns to. A
//! thunk that calls such a function puts a frame of its own between the function and its
//! callers: the body then returns the thunk's return address, and a walk of the frame chain
//! from it meets the thunk. So such a function may be removed (its callers call the kept body
//! directly) or become an alias (the same code at the same address), but it never becomes a
//! thunk that calls another body, neither in an exact nor in a similar merge. Nor does the object
//! writer make a function that forwards to one a jump (a tail call). Objects still fold
//! such functions into one-jump thunks (`crate::fold`), which add no frame.

use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode};
use cranelift_entity::EntityRef;

/// Whether `func` reads its own frame pointer, stack pointer or return address: whether an
/// instruction of its layout does.
///
/// The instructions are scanned in storage order and a match is then asked whether it is in
/// the layout (an instruction that is not is dead and reads nothing): the same answer as a
/// walk of the layout, for a fifth of its cost (the exact pass asks it of every member that
/// would become a thunk).
pub fn reads_own_frame(func: &Function) -> bool {
    (0..func.dfg.num_insts()).map(Inst::new).any(|inst| {
        matches!(
            func.dfg.insts[inst],
            InstructionData::NullAry {
                opcode: Opcode::GetFramePointer
                    | Opcode::GetStackPointer
                    | Opcode::GetReturnAddress
            }
        ) && func.layout.inst_block(inst).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Function {
        cranelift_reader::parse_functions(text)
            .expect("valid CLIF")
            .remove(0)
    }

    /// What the layout holds decides, in a reachable block or not; an instruction taken out of
    /// the layout (still stored, dead) reads nothing.
    #[test]
    fn only_an_instruction_of_the_layout_reads_the_frame() {
        for (op, reads) in [
            ("get_frame_pointer.i64", true),
            ("get_stack_pointer.i64", true),
            ("get_return_address.i64", true),
            ("iconst.i64 0", false),
        ] {
            let unreachable = parse(&format!(
                "function %f() -> i64 system_v {{
                block0:
                    v0 = iconst.i64 1
                    return v0
                block1:
                    v1 = {op}
                    return v1
                }}"
            ));
            assert_eq!(reads_own_frame(&unreachable), reads, "{op}");
        }
        let mut func = parse(
            "function %f() -> i64 system_v {
            block0:
                v0 = get_frame_pointer.i64
                v1 = iconst.i64 1
                return v1
            }",
        );
        assert!(reads_own_frame(&func));
        let entry = func.layout.entry_block().unwrap();
        let first = func.layout.first_inst(entry).unwrap();
        func.layout.remove_inst(first);
        assert_eq!(func.dfg.num_insts(), 3, "the instruction is still stored");
        assert!(!reads_own_frame(&func));
    }
}
