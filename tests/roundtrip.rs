//! `--emit-clif` writes what was read: a module emitted as CLIF reads back as the same module
//! (every function compares `Equal`, same names, linkages and aliases), and emitting what was
//! read back gives the same bytes again.
//!
//! Inputs: every CLIF file of the project (filetests, examples, object test data), and generated
//! modules whose functions use every kind of entity: user names in callees and in `symbol`
//! global values, testcase names with offsets, `load` and `iadd_imm` global values, a stack
//! limit, constants, dynamic types and dynamic stack slots, alias regions, jump tables
//! (`br_table`) and exception tables (`try_call`).

mod common;

use clif_merge::read::read_module_text;
use clif_merge::{ClifModule, ModuleFunction, ReadOptions, SymbolLinkage, compare, emit};
use common::clif_files;
use common::r#gen::{
    Choices, GenConfig, assert_valid, external_name, generate_with, pseudo_random_choices,
};
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::immediates::{Imm64, Offset32};
use cranelift_codegen::ir::types::{I32X4, I64};
use cranelift_codegen::ir::{
    DynamicStackSlotData, DynamicTypeData, Function, GlobalValueData, InstBuilder, MemFlagsData,
    StackSlotKind, UserFuncName,
};
use std::path::Path;

/// Emits `module`, reads it back and checks that it is the same module and that a second emit
/// is byte-identical; returns the first emitted text.
fn assert_round_trip(what: &str, module: &ClifModule) -> String {
    let first = emit::module_to_clif(module);
    let back = read_module_text(Path::new("emitted.clif"), &first, ReadOptions::default())
        .unwrap_or_else(|e| panic!("{what}: the emitted CLIF does not read back: {e}\n{first}"));
    let summary = |m: &ClifModule| -> Vec<(String, SymbolLinkage)> {
        m.functions()
            .map(|f: &ModuleFunction| (f.name.to_string(), f.linkage))
            .collect()
    };
    assert_eq!(
        summary(&back),
        summary(module),
        "{what}: functions\n{first}"
    );
    assert_eq!(back.aliases(), module.aliases(), "{what}: aliases\n{first}");
    for (written, read) in module.functions().zip(back.functions()) {
        assert!(
            compare(&written.func, &read.func).is_eq(),
            "{what}: {} reads back as another function:\n{}\n--- emitted ---\n{first}",
            written.name,
            read.func.display()
        );
    }
    let second = emit::module_to_clif(&back);
    assert_eq!(
        first, second,
        "{what}: the second emit differs from the first"
    );
    first
}

#[test]
fn every_clif_file_of_the_project_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<_> = ["filetests", "examples", "tests/data"]
        .iter()
        .flat_map(|dir| clif_files(&root.join(dir)))
        .collect();
    let mut checked = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        // Files that are meant to be refused (none today) are not this test's concern.
        let Ok(module) = read_module_text(path, &text, ReadOptions::default()) else {
            continue;
        };
        assert_round_trip(&path.display().to_string(), &module);
        checked += 1;
    }
    assert!(checked > 100, "only {checked} files were checked");
}

/// Adds, at the top of the entry block, uses of one entity of every kind the generator does
/// not make: global values (a user-named symbol, a testcase symbol with an offset, `load` and
/// `iadd_imm` over it) with a stack limit, a constant, and a dynamic stack slot of a dynamic
/// type; some unused declarations too.
fn add_entities(func: &mut Function, ch: &mut Choices) {
    let user = external_name(func, &format!("u{}:{}", ch.below(3), ch.below(100)));
    let testcase = external_name(func, &format!("data{}", ch.below(4)));
    let symbol = |name, offset: i64, colocated| GlobalValueData::Symbol {
        name,
        offset: Imm64::new(offset),
        colocated,
        tls: false,
    };
    let gv_user = func.create_global_value(symbol(user, 0, ch.chance(50)));
    let gv_data = func.create_global_value(symbol(testcase, ch.range(-64, 64), ch.chance(50)));
    let flags = func.dfg.mem_flags.insert_unchecked(MemFlagsData::trusted());
    let gv_load = func.create_global_value(GlobalValueData::Load {
        base: gv_data,
        offset: Offset32::new(ch.range(0, 32) as i32),
        global_type: I64,
        flags,
    });
    let gv_limit = func.create_global_value(GlobalValueData::IAddImm {
        base: gv_load,
        offset: Imm64::new(ch.range(0, 4096)),
        global_type: I64,
    });
    if ch.chance(50) {
        func.stack_limit = Some(gv_limit);
    }
    let gv_scale =
        func.create_global_value(GlobalValueData::DynScaleTargetConst { vector_type: I32X4 });
    let dt = func
        .dfg
        .make_dynamic_ty(DynamicTypeData::new(I32X4, gv_scale));
    let dss = func.create_dynamic_stack_slot(DynamicStackSlotData::new(
        StackSlotKind::ExplicitDynamicSlot,
        dt,
    ));
    if ch.chance(50) {
        let unused_dt = func
            .dfg
            .make_dynamic_ty(DynamicTypeData::new(I32X4, gv_scale));
        func.create_dynamic_stack_slot(DynamicStackSlotData::new(
            StackSlotKind::ExplicitDynamicSlot,
            unused_dt,
        ));
    }
    let bytes: Vec<u8> = (0..16).map(|_| ch.below(256) as u8).collect();
    let constant = func.dfg.constants.insert(bytes.into());
    let entry = func.layout.entry_block().unwrap();
    let mut pos = FuncCursor::new(func);
    pos.goto_first_insertion_point(entry);
    pos.ins().symbol_value(I64, gv_user);
    pos.ins().symbol_value(I64, gv_data);
    pos.ins().vconst(I32X4, constant);
    pos.ins().dynamic_stack_addr(I64, dss);
}

/// A function with a `try_call` whose exception table has random tags, a default handler and
/// a context value (read from text: the table's syntax is the reader's).
fn try_call_function(name: &str, ch: &mut Choices) -> String {
    let tags: Vec<String> = (0..1 + ch.below(3))
        .map(|i| format!("tag{}: block2(exn0)", i * 3 + ch.below(3)))
        .collect();
    let default = if ch.chance(50) {
        ", default: block3"
    } else {
        ""
    };
    format!(
        "function %{name}(i64) -> i64 tail {{\n    sig0 = (i64) -> i64 tail\n    \
         fn0 = u{ns}:{index} sig0\nblock0(v0: i64):\n    \
         try_call fn0(v0), sig0, block1(ret0), [ context v0, {tags}{default} ]\n\
         block1(v1: i64):\n    return v1\nblock2(v2: i64):\n    return v2\n\
         block3:\n    v3 = iconst.i64 {k}\n    return v3\n}}\n",
        ns = ch.below(3),
        index = ch.below(10),
        tags = tags.join(", "),
        k = ch.range(-5, 5),
    )
}

#[test]
fn generated_modules_with_every_entity_round_trip() {
    let mut seed = 0x5eed_c11f_u64;
    for case in 0..64 {
        let data = pseudo_random_choices(&mut seed, 4096);
        let mut ch = Choices::new(&data);
        let mut module = ClifModule::new();
        for i in 0..4 {
            let config = GenConfig {
                name: UserFuncName::testcase(format!("f{i}")),
                ..GenConfig::default()
            };
            let mut func = generate_with(&mut ch, &config);
            add_entities(&mut func, &mut ch);
            assert_valid(&func, "a generated function with every entity");
            module.define(func, SymbolLinkage::Export, None).unwrap();
        }
        let text = try_call_function("t", &mut ch);
        let with_try_call = read_module_text(Path::new("t.clif"), &text, ReadOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        for mf in with_try_call.functions() {
            module.define(mf.func.clone(), mf.linkage, None).unwrap();
        }
        let emitted = assert_round_trip(&format!("case {case}"), &module);
        for needle in ["symbol", "dt0 = ", "dss0 = ", "const0 = ", "try_call"] {
            assert!(
                emitted.contains(needle),
                "case {case}: no {needle}\n{emitted}"
            );
        }
    }
}
