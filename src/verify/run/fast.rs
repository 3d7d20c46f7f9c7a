//! The instructions runs execute most, evaluated here directly on the frame: for each, what
//! cranelift-interpreter's `step` computes, without its closures, lane splitting and `SmallVec`
//! of results (most of the time of `--verify` on real code went there). Anything else, or any
//! operand of another kind than these handle, is left to `step` (`None`).

use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, BlockArg, BlockCall, Function, Inst, InstructionData, Opcode};
use cranelift_interpreter::frame::Frame;

/// Where the run goes after an instruction run here.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// The next instruction of the block.
    Inst,
    /// The start of this block, its parameters set.
    Block(Block),
}

/// The most block arguments a branch run here passes (a wider one goes to `step`).
const MAX_BLOCK_ARGS: usize = 8;

/// Runs `inst` of `func` on `frame` when it is one of the instructions handled here; `None`
/// (the frame untouched) otherwise.
pub(super) fn run(frame: &mut Frame, func: &Function, inst: Inst) -> Option<Next> {
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => {
            let ty = func.dfg.ctrl_typevar(inst);
            let value = DataValue::from_integer(i128::from(imm.bits()), ty).ok()?;
            assign(frame, func, inst, value)
        }
        InstructionData::Binary { opcode, args }
            if matches!(
                opcode,
                Opcode::Iadd
                    | Opcode::Isub
                    | Opcode::Imul
                    | Opcode::Band
                    | Opcode::Bor
                    | Opcode::Bxor
            ) =>
        {
            let value = binary(opcode, frame.get(args[0]), frame.get(args[1]))?;
            assign(frame, func, inst, value)
        }
        InstructionData::IntCompare { cond, args, .. } => {
            let holds = compare(cond, frame.get(args[0]), frame.get(args[1]))?;
            assign(frame, func, inst, DataValue::I8(i8::from(holds)))
        }
        InstructionData::Jump { destination, .. } => enter(frame, func, destination),
        InstructionData::Brif { arg, blocks, .. } => {
            let taken = if nonzero(frame.get(arg))? {
                blocks[0]
            } else {
                blocks[1]
            };
            enter(frame, func, taken)
        }
        _ => None,
    }
}

/// Sets the single result of `inst` to `value`.
fn assign(frame: &mut Frame, func: &Function, inst: Inst, value: DataValue) -> Option<Next> {
    let [result] = func.dfg.inst_results(inst) else {
        return None;
    };
    frame.set(*result, value);
    Some(Next::Inst)
}

/// Sets the parameters of `call`'s block to its arguments, all read before any is set (a loop
/// passes its own parameters, swapped).
fn enter(frame: &mut Frame, func: &Function, call: BlockCall) -> Option<Next> {
    let pool = &func.dfg.value_lists;
    let block = call.block(pool);
    let params = func.dfg.block_params(block);
    if params.len() > MAX_BLOCK_ARGS || call.len(pool) != params.len() {
        return None;
    }
    let mut values: [DataValue; MAX_BLOCK_ARGS] = std::array::from_fn(|_| DataValue::I8(0));
    for (slot, arg) in values.iter_mut().zip(call.args(pool)) {
        let BlockArg::Value(v) = arg else {
            return None;
        };
        *slot = frame.get(v).clone();
    }
    for (&param, value) in params.iter().zip(values) {
        frame.set(param, value);
    }
    Some(Next::Block(block))
}

/// `opcode` on two integers of one type, as the interpreter's `DataValueExt` computes it.
fn binary(opcode: Opcode, a: &DataValue, b: &DataValue) -> Option<DataValue> {
    macro_rules! each_int {
        ($($variant:ident),*) => {
            match (a, b) {
                $((DataValue::$variant(x), DataValue::$variant(y)) => {
                    Some(DataValue::$variant(match opcode {
                        Opcode::Iadd => x.wrapping_add(*y),
                        Opcode::Isub => x.wrapping_sub(*y),
                        Opcode::Imul => x.wrapping_mul(*y),
                        Opcode::Band => x & y,
                        Opcode::Bor => x | y,
                        Opcode::Bxor => x ^ y,
                        _ => return None,
                    }))
                })*
                _ => None,
            }
        };
    }
    each_int!(I8, I16, I32, I64, I128)
}

/// Whether `cond` holds of two integers of one type.
fn compare(cond: IntCC, a: &DataValue, b: &DataValue) -> Option<bool> {
    macro_rules! each_int {
        ($($variant:ident: $unsigned:ty),*) => {
            match (a, b) {
                $((DataValue::$variant(x), DataValue::$variant(y)) => {
                    let (ux, uy) = (*x as $unsigned, *y as $unsigned);
                    Some(match cond {
                        IntCC::Equal => x == y,
                        IntCC::NotEqual => x != y,
                        IntCC::SignedGreaterThan => x > y,
                        IntCC::SignedGreaterThanOrEqual => x >= y,
                        IntCC::SignedLessThan => x < y,
                        IntCC::SignedLessThanOrEqual => x <= y,
                        IntCC::UnsignedGreaterThan => ux > uy,
                        IntCC::UnsignedGreaterThanOrEqual => ux >= uy,
                        IntCC::UnsignedLessThan => ux < uy,
                        IntCC::UnsignedLessThanOrEqual => ux <= uy,
                    })
                })*
                _ => None,
            }
        };
    }
    each_int!(I8: u8, I16: u16, I32: u32, I64: u64, I128: u128)
}

/// Whether an integer is not zero (`brif`'s condition).
fn nonzero(v: &DataValue) -> Option<bool> {
    match v {
        DataValue::I8(x) => Some(*x != 0),
        DataValue::I16(x) => Some(*x != 0),
        DataValue::I32(x) => Some(*x != 0),
        DataValue::I64(x) => Some(*x != 0),
        DataValue::I128(x) => Some(*x != 0),
        _ => None,
    }
}
