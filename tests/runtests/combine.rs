//! Modules of many files: each file's functions renamed with a prefix of their own, so that
//! names do not clash and merges across files can happen; a module twice over, every function
//! also under a second name; and a module with a near twin of every function, one constant
//! changed, for similar merging.

use clif_merge::{Alias, ClifModule, FuncName};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64, Imm64};
use cranelift_codegen::ir::{ExternalName, Function, GlobalValueData, InstructionData};

/// `name` with `prefix` in front: `%prefix_name` (a user name `u1:2` becomes `%prefix_u1_2`).
pub fn prefixed(prefix: &str, name: &FuncName) -> FuncName {
    match name {
        FuncName::Testcase(t) => FuncName::Testcase(format!("{prefix}_{t}").into()),
        FuncName::User { namespace, index } => {
            FuncName::Testcase(format!("{prefix}_u{namespace}_{index}").into())
        }
    }
}

/// A prefix made of a file's path: its letters and digits, `_` for everything else.
pub fn file_prefix(file: &str) -> String {
    let stem = file.strip_suffix(".clif").unwrap_or(file);
    let chars = stem.chars();
    let cleaned: String = chars
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("t_{cleaned}")
}

/// Adds every function and alias of `from` to `into`, each under `prefix`, with the same
/// linkage; references to names `from` defines are renamed alike, others stay.
pub fn add_prefixed(into: &mut ClifModule, from: &ClifModule, prefix: &str) {
    for mf in from.functions() {
        let func = renamed(&mf.func, from, prefix);
        into.define(func, mf.linkage, None)
            .unwrap_or_else(|e| panic!("{}: {e}", prefixed(prefix, &mf.name)));
    }
    for alias in from.aliases() {
        let alias = Alias {
            name: prefixed(prefix, &alias.name),
            target: prefixed(prefix, &alias.target),
            linkage: alias.linkage,
        };
        into.add_alias(alias)
            .expect("a fresh alias of a defined function");
    }
}

/// `func` of `module`, its name and its references to `module`'s names under `prefix`.
fn renamed(func: &Function, module: &ClifModule, prefix: &str) -> Function {
    let mut func = func.clone();
    let local = |func: &Function, name: &ExternalName| {
        FuncName::of_external(name, func)
            .filter(|n| module.lookup(n).is_some())
            .map(|n| prefixed(prefix, &n))
    };
    let refs: Vec<_> = func.dfg.ext_funcs.keys().collect();
    for r in refs {
        if let Some(new) = local(&func, &func.dfg.ext_funcs[r].name) {
            func.dfg.ext_funcs[r].name = new.to_external(&mut func);
        }
    }
    let gvs: Vec<_> = func.global_values.keys().collect();
    for gv in gvs {
        let GlobalValueData::Symbol { name, .. } = &func.global_values[gv] else {
            continue;
        };
        if let Some(new) = local(&func, name) {
            let new = new.to_external(&mut func);
            if let GlobalValueData::Symbol { name, .. } = &mut func.global_values[gv] {
                *name = new;
            }
        }
    }
    func.name = prefixed(prefix, &FuncName::of_function(&func)).to_user_func_name();
    func
}

/// The prefix of the second copy in [`twice_over`].
pub const TWIN: &str = "twin";

/// `module` and a copy of it with every name under [`TWIN`]: each function has an equal twin,
/// so every function is merged.
pub fn twice_over(module: &ClifModule) -> ClifModule {
    let mut out = module.clone();
    add_prefixed(&mut out, module, TWIN);
    out
}

/// The prefix of the near twins in [`with_near_twins`].
pub const NEAR: &str = "near";

/// `module` and a near twin of every function, under [`NEAR`]: the same body but for its first
/// `iconst`, `f32const` or `f64const` in layout order, whose lowest bit is flipped (a function
/// without one is an exact twin). A function and its near twin are similar: they share a body
/// with the constant as a parameter, and callers of near twins call near twins, so callees
/// become parameters too.
pub fn with_near_twins(module: &ClifModule) -> ClifModule {
    let mut twins = module.clone();
    let ids: Vec<_> = twins.ids().to_vec();
    for id in ids {
        flip_first_constant(&mut twins.function_mut(id).func);
    }
    let mut out = module.clone();
    add_prefixed(&mut out, &twins, NEAR);
    out
}

/// Flips the lowest bit of `func`'s first constant, if it has one.
fn flip_first_constant(func: &mut Function) {
    let insts: Vec<_> = (func.layout.blocks())
        .flat_map(|b| func.layout.block_insts(b))
        .collect();
    for inst in insts {
        match &mut func.dfg.insts[inst] {
            InstructionData::UnaryImm { imm, .. } => *imm = Imm64::new(imm.bits() ^ 1),
            InstructionData::UnaryIeee32 { imm, .. } => *imm = Ieee32::with_bits(imm.bits() ^ 1),
            InstructionData::UnaryIeee64 { imm, .. } => *imm = Ieee64::with_bits(imm.bits() ^ 1),
            _ => continue,
        }
        return;
    }
}
