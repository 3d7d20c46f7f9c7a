//! The fast path against cranelift-interpreter's `step`: every handled opcode on every integer
//! type, on edge values, must leave the same values (and go to the same block) as `step` does.

use super::fast::{self, Next};
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst, Value};
use cranelift_interpreter::instruction::DfgInstructionContext;
use cranelift_interpreter::interpreter::InterpreterState;
use cranelift_interpreter::state::State;
use cranelift_interpreter::step::{ControlFlow, step};

const TYPES: [&str; 5] = ["i8", "i16", "i32", "i64", "i128"];
const BINARY: [&str; 6] = ["iadd", "isub", "imul", "band", "bor", "bxor"];
const CONDS: [&str; 10] = [
    "eq", "ne", "slt", "sge", "sgt", "sle", "ult", "uge", "ugt", "ule",
];

fn parse(text: &str) -> Function {
    cranelift_reader::parse_functions(text)
        .expect("valid CLIF")
        .remove(0)
}

/// Edge values of `ty`: 0, 1, -1, 2, MIN, MAX, MIN + 1, MAX - 1, a mixed bit pattern.
fn edges(ty: &str) -> Vec<DataValue> {
    let bits = match ty {
        "i8" => 8,
        "i16" => 16,
        "i32" => 32,
        "i64" => 64,
        _ => 128,
    };
    let (min, max) = if bits == 128 {
        (i128::MIN, i128::MAX)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    let t = cranelift_codegen::ir::Type::int(bits).unwrap();
    [
        0,
        1,
        -1,
        2,
        min,
        max,
        min + 1,
        max - 1,
        0x5a5a_a5a5_1234_5678_9abc_def0_0f0f_f0f0,
    ]
    .into_iter()
    .map(|n| DataValue::from_integer(n, t).unwrap())
    .collect()
}

/// A state with `func`'s frame and `values` set.
fn state_with<'a>(func: &'a Function, values: &[(Value, DataValue)]) -> InterpreterState<'a> {
    let mut state = InterpreterState::default();
    state.push_frame(func);
    for (v, d) in values {
        state.current_frame_mut().set(*v, d.clone());
    }
    state
}

fn first_inst(func: &Function) -> Inst {
    let entry = func.layout.entry_block().unwrap();
    func.layout.first_inst(entry).unwrap()
}

/// Runs the first instruction through both paths and asserts that it is handled and that the
/// values in `check` and the next block agree.
fn same_as_step(func: &Function, values: &[(Value, DataValue)], check: &[Value]) {
    let inst = first_inst(func);
    let mut fast_state = state_with(func, values);
    let next = fast::run(fast_state.current_frame_mut(), func, inst);
    let mut step_state = state_with(func, values);
    let flow = step(&mut step_state, DfgInstructionContext::new(inst, &func.dfg)).unwrap();
    let (want_next, set) = match flow {
        ControlFlow::Assign(vals) => (Next::Inst, (func.dfg.inst_results(inst), vals)),
        ControlFlow::ContinueAt(block, vals) => {
            (Next::Block(block), (func.dfg.block_params(block), vals))
        }
        _ => panic!("unexpected flow"),
    };
    step_state
        .current_frame_mut()
        .set_all(set.0, set.1.into_vec());
    assert_eq!(next, Some(want_next), "{func} on {values:?}");
    for &v in check {
        assert_eq!(
            fast_state.current_frame().get(v),
            step_state.current_frame().get(v),
            "{v} of {func} on {values:?}"
        );
    }
}

#[test]
fn binary_and_icmp_match_step() {
    for ty in TYPES {
        let ops = BINARY
            .iter()
            .map(|op| (format!("{op} v0, v1"), ty))
            .chain(CONDS.iter().map(|c| (format!("icmp {c} v0, v1"), "i8")));
        for (op, ret) in ops {
            let func = parse(&format!(
                "function %f({ty}, {ty}) -> {ret} {{\nblock0(v0: {ty}, v1: {ty}):\n\
                 v2 = {op}\nreturn v2\n}}"
            ));
            let [v0, v1] = func.dfg.block_params(func.layout.entry_block().unwrap()) else {
                unreachable!()
            };
            for a in edges(ty) {
                for b in edges(ty) {
                    let v2 = func.dfg.inst_results(first_inst(&func))[0];
                    same_as_step(&func, &[(*v0, a.clone()), (*v1, b)], &[v2]);
                }
            }
        }
    }
}

#[test]
fn iconst_matches_step() {
    // `iconst` makes no `i128`.
    for ty in &TYPES[..4] {
        let imms: Vec<i64> = match *ty {
            "i8" => vec![0, 1, -1, -128, 127, 255],
            "i16" => vec![0, 1, -1, -32768, 32767, 65535],
            "i32" => vec![0, 1, -1, i32::MIN.into(), i32::MAX.into(), u32::MAX.into()],
            _ => vec![0, 1, -1, i64::MIN, i64::MAX],
        };
        for imm in imms {
            let func = parse(&format!(
                "function %f() -> {ty} {{\nblock0:\nv0 = iconst.{ty} {imm}\nreturn v0\n}}"
            ));
            let v0 = func.dfg.inst_results(first_inst(&func))[0];
            same_as_step(&func, &[], &[v0]);
        }
    }
}

#[test]
fn branches_match_step() {
    for ty in TYPES {
        let brif = parse(&format!(
            "function %f({ty}, {ty}) -> {ty} {{\nblock0(v0: {ty}, v1: {ty}):\n\
             brif v0, block1(v1, v0), block2(v0)\n\
             block1(v2: {ty}, v3: {ty}):\nreturn v2\nblock2(v4: {ty}):\nreturn v4\n}}"
        ));
        // A loop's back edge passes its own parameters, swapped.
        let swap = parse(&format!(
            "function %f({ty}, {ty}) -> {ty} {{\nblock0(v0: {ty}, v1: {ty}):\n\
             jump block0(v1, v0)\n}}"
        ));
        for func in [&brif, &swap] {
            let entry = func.layout.entry_block().unwrap();
            let [v0, v1] = func.dfg.block_params(entry) else {
                unreachable!()
            };
            let all: Vec<Value> = func
                .dfg
                .values()
                .filter(|v| *v != *v0 && *v != *v1)
                .collect();
            for a in edges(ty) {
                let b = edges(ty)[8].clone();
                let values = [(*v0, a), (*v1, b)];
                let inst = first_inst(func);
                let mut fast_state = state_with(func, &values);
                let next = fast::run(fast_state.current_frame_mut(), func, inst);
                let Some(Next::Block(block)) = next else {
                    panic!("{func}: not handled")
                };
                let mut step_state = state_with(func, &values);
                let flow = step(&mut step_state, DfgInstructionContext::new(inst, &func.dfg));
                let Ok(ControlFlow::ContinueAt(want, args)) = flow else {
                    panic!("{func}: step did not branch")
                };
                assert_eq!(block, want, "{func} on {values:?}");
                let params = func.dfg.block_params(block);
                step_state
                    .current_frame_mut()
                    .set_all(params, args.into_vec());
                for &v in params.iter().chain(&all).filter(|v| params.contains(v)) {
                    assert_eq!(
                        fast_state.current_frame().get(v),
                        step_state.current_frame().get(v),
                        "{v} of {func} on {values:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn other_operands_are_left_to_step() {
    // Floats, vectors and other opcodes are not handled here.
    let f64 = |x: f64| DataValue::F64(x.into());
    let v128 = DataValue::V128([1; 16]);
    for (ty, body, arg) in [
        ("f64", "v2 = fadd v0, v1", f64(1.5)),
        ("i32x4", "v2 = iadd v0, v1", v128),
        ("i32", "v2 = udiv v0, v1", DataValue::I32(7)),
    ] {
        let func = parse(&format!(
            "function %f({ty}, {ty}) {{\nblock0(v0: {ty}, v1: {ty}):\n{body}\nreturn\n}}"
        ));
        let [v0, v1] = func.dfg.block_params(func.layout.entry_block().unwrap()) else {
            unreachable!()
        };
        let mut state = state_with(&func, &[(*v0, arg.clone()), (*v1, arg)]);
        let next = fast::run(state.current_frame_mut(), &func, first_inst(&func));
        assert_eq!(next, None, "{func}");
    }
}
