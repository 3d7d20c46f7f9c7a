//! Thunks: writing a function whose body only forwards its arguments to another and returns its
//! results, and recognizing one.

use crate::module::FuncName;
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{
    Block, DataFlowGraph, ExtFuncData, Function, Inst, InstructionData, Layout, Opcode, Signature,
    UserFuncName, Value, ValueList, types,
};
use cranelift_codegen::isa::CallConv;

/// Whether `func` only passes its parameters, in order, to one direct call and returns that
/// call's results: the shape of a thunk.
pub fn is_forwarding_thunk(func: &Function) -> bool {
    // Counting what was ever created spares a walk of the layout for almost every function. A
    // thunk that also holds dead instructions is not recognised: it becomes a new thunk, which
    // is correct, only not idempotent.
    if func.dfg.num_insts() > 2 || func.dfg.num_blocks() > 1 {
        return false;
    }
    let mut blocks = func.layout.blocks();
    let (Some(entry), None) = (blocks.next(), blocks.next()) else {
        return false;
    };
    let params = func.dfg.block_params(entry);
    let insts: Vec<_> = func.layout.block_insts(entry).collect();
    let forwards = |args: &[cranelift_codegen::ir::Value]| args == params;
    match insts[..] {
        [only] => match func.dfg.insts[only] {
            InstructionData::Call {
                opcode: Opcode::ReturnCall,
                args,
                ..
            } => forwards(args.as_slice(&func.dfg.value_lists)),
            _ => false,
        },
        [call, ret] => {
            let is_call = matches!(
                func.dfg.insts[call],
                InstructionData::Call { opcode: Opcode::Call, args, .. }
                    if forwards(args.as_slice(&func.dfg.value_lists))
            );
            let returns_results = matches!(
                func.dfg.insts[ret],
                InstructionData::MultiAry { opcode: Opcode::Return, args }
                    if args.as_slice(&func.dfg.value_lists) == func.dfg.inst_results(call)
            );
            is_call && returns_results
        }
        _ => false,
    }
}

/// A function named `g` with signature `sig` that passes its arguments to `f` and returns its
/// results: a `return_call` under the `tail` convention, a call and a return otherwise.
pub fn write_thunk(g: &FuncName, sig: &Signature, f: &FuncName) -> Function {
    let mut func = Function::with_name_signature(g.to_user_func_name(), sig.clone());
    write_thunk_body(&mut func, f);
    func
}

/// The largest body (in instructions created) whose memory a thunk reuses.
pub(crate) const REUSE_MAX_INSTS: usize = 256;

/// Replaces the body of `func`, named `g`, by a thunk calling `f` ([`write_thunk`]'s), reusing
/// its memory: the same function as `write_thunk` writes, without freeing and allocating again
/// every table of the function.
pub(crate) fn rewrite_as_thunk(func: &mut Function, g: &FuncName, f: &FuncName) {
    let sig = std::mem::replace(&mut func.signature, Signature::new(CallConv::Fast));
    // The name stays when it already is `g` (the merges pass a function's own name): one
    // allocation and one free fewer per thunk.
    let name = std::mem::take(&mut func.name);
    func.clear();
    // `Function::clear` leaves the exception tables (cranelift 0.135).
    func.dfg.exception_tables.clear();
    func.name = if is_named(&name, g) {
        name
    } else {
        g.to_user_func_name()
    };
    func.signature = sig;
    write_thunk_body(func, f);
}

/// Whether a function defined as `name` is named `g`.
fn is_named(name: &UserFuncName, g: &FuncName) -> bool {
    match (name, g) {
        (UserFuncName::User(u), FuncName::User { namespace, index }) => {
            u.namespace == *namespace && u.index == *index
        }
        (UserFuncName::Testcase(t), FuncName::Testcase(text)) => t.raw() == text.as_bytes(),
        _ => false,
    }
}

/// Writes the body of a thunk calling `f` into `func`, which has a signature and nothing else.
///
/// The two instructions are made and appended directly, as `InstBuilder` would through a
/// cursor, without copying the parameters and the results out of the value pool first (each
/// copy was an allocation; a thunk is written for most merged functions).
fn write_thunk_body(func: &mut Function, f: &FuncName) {
    let callee_name = f.to_external(func);
    // One copy of the signature, the callee's; the parameters are read from the function's own.
    let sig = func.signature.clone();
    let sig_ref = func.import_signature(sig);
    let callee = func.import_function(ExtFuncData {
        name: callee_name,
        signature: sig_ref,
        colocated: true,
        patchable: false,
    });
    let stencil = &mut func.stencil;
    let dfg = &mut stencil.dfg;
    let block = dfg.make_block();
    // Block parameters are new values, numbered in order: the call's arguments are the
    // values from `first` on.
    let first = dfg.num_values();
    for param in &stencil.signature.params {
        dfg.append_block_param(block, param.value_type);
    }
    let params = stencil.signature.params.len();
    stencil.layout.append_block(block);
    let mut args = ValueList::new();
    args.extend(
        (first..first + params).map(Value::new),
        &mut dfg.value_lists,
    );
    debug_assert_eq!(args.as_slice(&dfg.value_lists), dfg.block_params(block));
    let opcode = match stencil.signature.call_conv {
        CallConv::Tail => Opcode::ReturnCall,
        _ => Opcode::Call,
    };
    let call = append_inst(
        dfg,
        &mut stencil.layout,
        block,
        InstructionData::Call {
            opcode,
            args,
            func_ref: callee,
        },
    );
    if opcode == Opcode::Call {
        dfg.make_inst_results(call, types::INVALID);
        // The results of the call, as a list of their own in the same pool.
        let results = dfg.inst_results_list(call).deep_clone(&mut dfg.value_lists);
        let ret = InstructionData::MultiAry {
            opcode: Opcode::Return,
            args: results,
        };
        append_inst(dfg, &mut stencil.layout, block, ret);
    }
}

/// Makes the instruction `data` and appends it to `block`, without results: a `return` and a
/// `return_call` have none (asking Cranelift for them was a fifth of a thunk's cost), and the
/// caller makes a `call`'s.
fn append_inst(
    dfg: &mut DataFlowGraph,
    layout: &mut Layout,
    block: Block,
    data: InstructionData,
) -> Inst {
    let inst = dfg.make_inst(data);
    layout.append_inst(inst, block);
    inst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Function {
        let mut funcs = cranelift_reader::parse_functions(text).expect("valid CLIF");
        funcs.remove(0)
    }

    /// The thunk as Cranelift's `InstBuilder` writes it through a cursor: what
    /// `write_thunk_body` made before it made the instructions directly.
    fn thunk_by_builder(g: &FuncName, sig: &Signature, f: &FuncName) -> Function {
        use cranelift_codegen::cursor::{Cursor, FuncCursor};
        use cranelift_codegen::ir::InstBuilder;
        let mut func = Function::with_name_signature(g.to_user_func_name(), sig.clone());
        let callee_name = f.to_external(&mut func);
        let sig_ref = func.import_signature(sig.clone());
        let callee = func.import_function(ExtFuncData {
            name: callee_name,
            signature: sig_ref,
            colocated: true,
            patchable: false,
        });
        let block = func.dfg.make_block();
        for p in &sig.params {
            func.dfg.append_block_param(block, p.value_type);
        }
        let mut pos = FuncCursor::new(&mut func);
        pos.insert_block(block);
        let args = pos.func.dfg.block_params(block).to_vec();
        if sig.call_conv == CallConv::Tail {
            pos.ins().return_call(callee, &args);
        } else {
            let call = pos.ins().call(callee, &args);
            let results = pos.func.dfg.inst_results(call).to_vec();
            pos.ins().return_(&results);
        }
        func
    }

    /// The instructions made directly are those the builder makes, table for table (values,
    /// lists in the pool, layout), for no, one and many parameters and results, and a tail call.
    #[test]
    fn a_thunk_is_what_the_instruction_builder_writes() {
        use cranelift_codegen::ir::AbiParam;
        use cranelift_codegen::ir::types::{F64, I8, I32, I64};
        let g = FuncName::parse("u0:3").unwrap();
        let f = FuncName::parse("%kept").unwrap();
        let shapes: [(&[_], &[_], CallConv); 5] = [
            (&[], &[], CallConv::SystemV),
            (&[I32], &[I32], CallConv::SystemV),
            (&[I64, F64, I8, I32, I64], &[I64, F64], CallConv::Fast),
            (&[I32, I32], &[], CallConv::SystemV),
            (&[I64, I32], &[I64], CallConv::Tail),
        ];
        for (params, returns, call_conv) in shapes {
            let mut sig = Signature::new(call_conv);
            sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            sig.returns
                .extend(returns.iter().map(|&t| AbiParam::new(t)));
            let direct = write_thunk(&g, &sig, &f);
            let built = thunk_by_builder(&g, &sig, &f);
            assert!(
                direct == built,
                "direct:\n{}builder:\n{}",
                direct.display(),
                built.display()
            );
        }
    }

    /// The thunk written into an old body is the very function `write_thunk` makes, for every
    /// calling convention, with and without results, and from a body with exception tables,
    /// jump tables, stack slots and constants to forget.
    #[test]
    fn thunk_in_place_equals_a_fresh_thunk() {
        let bodies = [
            "function %g(i32) -> i32 tail {
                sig0 = (i32) -> i32 tail
                fn0 = %callee sig0
            block0(v0: i32):
                try_call fn0(v0), sig0, block1(ret0), [ tag1: block2(exn0), default: block3 ]
            block1(v1: i32):
                return v1
            block2(v2: i64):
                v3 = iconst.i32 1
                return v3
            block3:
                v4 = iconst.i32 2
                return v4
            }",
            "function %g(i64, f64) system_v {
                ss0 = explicit_slot 16
            block0(v0: i64, v1: f64):
                v9 = stack_addr.i64 ss0
                store v1, v9
                v2 = vconst.i8x16 0x01
                br_table v0, block1, [block1, block2]
            block1:
                return
            block2:
                trap user1
            }",
            "function u0:7() -> i8 fast {
            block0:
                v0 = iconst.i8 3
                return v0
            }",
            // Old signatures longer and shorter than the thunk's, under other conventions.
            "function %g(i32, i64) -> i64 system_v {
                sig0 = (i64, i64, f64, i32) -> i64, i64, i64 tail
                sig1 = () fast
                fn0 = %wide sig0
                fn1 = %empty sig1
            block0(v0: i32, v1: i64):
                v2 = f64const 0x1.0p0
                v3, v4, v5 = call fn0(v1, v1, v2, v0)
                call fn1()
                return v5
            }",
            "function %g(i32, i64, f32) -> i64, i32 fast {
                sig0 = () system_v
                fn0 = %empty sig0
            block0(v0: i32, v1: i64, v2: f32):
                call fn0()
                return v1, v0
            }",
        ];
        for text in bodies {
            let mut func = parse(text);
            let g = FuncName::of_function(&func);
            let f = FuncName::parse("%kept").unwrap();
            let fresh = write_thunk(&g, &func.signature, &f);
            rewrite_as_thunk(&mut func, &g, &f);
            assert!(
                func == fresh,
                "in place:\n{}fresh:\n{}",
                func.display(),
                fresh.display()
            );
            assert!(func.dfg.exception_tables.is_empty());
        }
    }

    /// A body rewritten under another name than its own takes that name (the name is kept
    /// only when it is the thunk's), user or testcase, whatever the name was.
    #[test]
    fn thunk_in_place_takes_the_name_it_is_given() {
        let f = FuncName::parse("%kept").unwrap();
        for (own, given) in [
            ("%g", "%h"),
            ("%g", "u0:4"),
            ("u0:4", "u0:5"),
            ("u1:4", "u0:4"),
            ("u0:4", "%g"),
        ] {
            let mut func = parse(&format!(
                "function {own}(i32) -> i32 system_v {{
                block0(v0: i32):
                    return v0
                }}"
            ));
            let g = FuncName::parse(given).unwrap();
            let fresh = write_thunk(&g, &func.signature, &f);
            rewrite_as_thunk(&mut func, &g, &f);
            assert_eq!(FuncName::of_function(&func), g);
            assert!(func == fresh, "{own} as {given}:\n{}", func.display());
        }
    }
}
