//! Functions that read their own frame: `get_frame_pointer`, `get_stack_pointer` and
//! `get_return_address` see the frame the function runs in and the caller it returns to. A
//! thunk that calls such a function puts a frame of its own between the function and its
//! callers: the body then returns the thunk's return address, and a walk of the frame chain
//! from it meets the thunk. So such a function may be removed (its callers call the kept body
//! directly) or become an alias (the same code at the same address), but it never becomes a
//! thunk that calls another body, neither in an exact nor in a similar merge. Nor does the object
//! writer make a function that forwards to one a jump (a tail call). Objects still fold
//! such functions into one-jump thunks (`crate::fold`), which add no frame.

use cranelift_codegen::ir::{Function, Opcode};

/// Whether `func` reads its own frame pointer, stack pointer or return address.
pub fn reads_own_frame(func: &Function) -> bool {
    func.layout.blocks().any(|block| {
        func.layout.block_insts(block).any(|inst| {
            matches!(
                func.dfg.insts[inst].opcode(),
                Opcode::GetFramePointer | Opcode::GetStackPointer | Opcode::GetReturnAddress
            )
        })
    })
}
