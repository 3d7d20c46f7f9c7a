//! An edit that stands for a unit changed between two builds. Used by the global merging
//! tests (which include this file on its own).

use clif_merge::ClifModule;

/// `module` after an edit: every `every`-th `i64` constant of four or more digits is one larger
/// (genmod's mixing constants; the small ones bound its loops and recursions). Only 64-bit
/// constants: one more than a narrower constant's largest value is no value of its type.
pub fn bump_constants(module: &ClifModule, every: usize) -> ClifModule {
    use cranelift_codegen::ir::{InstructionData, Opcode, immediates::Imm64, types::I64};
    let mut changed = ClifModule::new();
    let mut seen = 0;
    for mf in module.functions() {
        let mut func = mf.func.clone();
        let insts: Vec<_> = func
            .layout
            .blocks()
            .flat_map(|b| func.layout.block_insts(b))
            .collect();
        for inst in insts {
            let results = func.dfg.inst_results(inst);
            let wide = results
                .first()
                .is_some_and(|&r| func.dfg.value_type(r) == I64);
            if let InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } = &mut func.dfg.insts[inst]
                && wide
                && imm.bits().unsigned_abs() >= 1000
            {
                seen += 1;
                if seen % every == 0 {
                    *imm = Imm64::new(imm.bits().wrapping_add(1));
                }
            }
        }
        changed.define(*func, mf.linkage, None).unwrap();
    }
    changed
}
