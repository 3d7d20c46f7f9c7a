//! `--emit-clif` writes what was read: a module emitted as CLIF reads back as the same module
//! (every function compares `Equal`, same names, linkages and aliases), and emitting what was
//! read back gives the same bytes again.
//!
//! Inputs: every CLIF file of the project (filetests, examples, object test data); every file of
//! Cranelift's run tests (`../shared/runtests`) that cranelift-reader parses, merged in every
//! mode with and without `--similar`; one function per value type that uses the type in every
//! place a type can be written (signatures, block parameters, type suffixes, stack maps,
//! dynamic types and their suffixes, constants); and generated modules whose functions use
//! every kind of entity: user names in callees and in `symbol` global values, testcase names
//! with offsets, `load` and `iadd_imm` global values, a stack limit, constants, dynamic types
//! used as type suffixes and dynamic stack slots, alias regions, jump tables (`br_table`) and
//! exception tables (`try_call`).

mod common;

use clif_merge::read::read_module_text;
use clif_merge::{
    ClifModule, Mode, ModuleFunction, ReadOptions, SimilarOptions, SymbolLinkage, compare, emit,
    merge_module_with,
};
use common::clif_files;
use common::r#gen::{Choices, GenConfig, external_name, generate_with, pseudo_random_choices};
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::immediates::{Imm64, Offset32};
use cranelift_codegen::ir::types::{self, I32, I32X4, I64, Type};
use cranelift_codegen::ir::{
    DynamicStackSlotData, DynamicTypeData, Function, GlobalValueData, InstBuilder, MemFlagsData,
    StackSlotKind, UserFuncName,
};
use std::path::{Path, PathBuf};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

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
    // A dynamic vector type is written as a type suffix only through its `dtN`.
    let lane = pos.ins().iconst(I32, ch.range(-8, 8));
    let dynamic = I32X4.vector_to_dynamic().unwrap();
    pos.ins().splat(dynamic, lane);
    // Instructions that verify only with an ISA whose flags allow them: the emitted text says
    // which flags (`set` lines).
    if ch.chance(30) {
        pos.ins().get_frame_pointer(I64);
    }
    if ch.chance(30) {
        let pinned = pos.ins().get_pinned_reg(I64);
        pos.ins().set_pinned_reg(pinned);
    }
}

/// The host's ISA with the flags every instruction `add_entities` makes needs.
fn permissive_host_isa() -> cranelift_codegen::isa::OwnedTargetIsa {
    use cranelift_codegen::settings::{self, Configurable};
    let mut flags = settings::builder();
    flags.enable("enable_pinned_reg").unwrap();
    flags.enable("preserve_frame_pointers").unwrap();
    cranelift_native::builder()
        .unwrap()
        .finish(settings::Flags::new(flags))
        .unwrap()
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
    let isa = permissive_host_isa();
    let (mut frame_pointer, mut pinned) = (0, 0);
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
            if let Err(e) = clif_merge::read::verify_clif(&func, Some(&*isa)) {
                panic!(
                    "a generated function with every entity: {e}\n{}",
                    func.display()
                );
            }
            module.define(func, SymbolLinkage::Export, None).unwrap();
        }
        let text = try_call_function("t", &mut ch);
        let with_try_call = read_module_text(Path::new("t.clif"), &text, ReadOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        for mf in with_try_call.functions() {
            module.define((*mf.func).clone(), mf.linkage, None).unwrap();
        }
        let emitted = assert_round_trip(&format!("case {case}"), &module);
        for needle in [
            "symbol",
            "dt0 = ",
            "dss0 = ",
            "const0 = ",
            "try_call",
            "splat.dt",
        ] {
            assert!(
                emitted.contains(needle),
                "case {case}: no {needle}\n{emitted}"
            );
        }
        frame_pointer += emitted.contains("set preserve_frame_pointers=true") as usize;
        pinned += emitted.contains("set enable_pinned_reg=true") as usize;
    }
    assert!(frame_pointer > 0 && pinned > 0, "{frame_pointer} {pinned}");
}

/// Every value type the reader spells: the scalars, and vectors of every lane type from 2
/// lanes up to 64 bytes.
fn every_value_type() -> Vec<Type> {
    let lanes = [
        types::I8,
        types::I16,
        types::I32,
        types::I64,
        types::I128,
        types::F16,
        types::F32,
        types::F64,
        types::F128,
    ];
    let mut all = lanes.to_vec();
    for lane in lanes {
        let mut count = 2;
        while let Some(vector) = lane.by(count).filter(|v| v.bytes() <= 64) {
            all.push(vector);
            count *= 2;
        }
    }
    all
}

/// A function that writes `ty` in every place a type can be written: its signature and a
/// declared signature, block parameters, the type suffixes of loads, calls (with a stack map
/// entry of the type) and `select`; for a vector that has a dynamic counterpart, also a `dyn_scale_target_const` global value,
/// a dynamic type, a dynamic stack slot and the dynamic type as a suffix (`splat.dt0`), and,
/// for a 128-bit vector, a constant.
fn function_using_type(ty: Type) -> String {
    let bytes = ty.bytes();
    let mut preamble = format!(
        "    ss0 = explicit_slot {bytes}, align = 16\n    gv0 = symbol colocated %data\n    \
         gv1 = load.i64 notrap aligned gv0+8\n    gv2 = iadd_imm.i64 gv1, 16\n    stack_limit = gv2\n"
    );
    let mut body = String::new();
    // Dynamic types exist for the vectors that have a dynamic counterpart (up to 256 bits).
    if ty.is_vector() && ty.vector_to_dynamic().is_some() {
        preamble.push_str(&format!(
            "    gv3 = dyn_scale_target_const.{ty}\n    dt0 = {ty}*gv3\n    \
             dss0 = explicit_dynamic_slot dt0\n"
        ));
        body.push_str(
            "    v10 = extractlane v5, 0\n    v11 = splat.dt0 v10\n    \
             v12 = dynamic_stack_addr.i64 dss0\n    v13 = extract_vector v11, 0\n    \
             store notrap v13, v12\n",
        );
        if bytes == 16 {
            preamble.push_str("    const0 = 0x000102030405060708090a0b0c0d0e0f\n");
            body.push_str(&format!(
                "    v15 = vconst.{ty} const0\n    store notrap v15, v1\n"
            ));
        }
    }
    preamble.push_str(&format!(
        "    sig0 = ({ty}, i64) -> {ty} system_v\n    fn0 = %callee sig0\n"
    ));
    let name = ty.to_string();
    format!(
        "function %uses_{name}({ty}, i64) -> {ty} system_v {{\n{preamble}\n\
         block0(v0: {ty}, v1: i64):\n    v2 = stack_addr.i64 ss0\n    \
         store notrap v0, v2\n    v3 = load.{ty} notrap aligned v1+8\n    \
         v4 = call fn0(v3, v1), stack_map=[{ty} @ ss0+0]\n    brif v1, block1(v4), block2(v0)\n\n\
         block1(v5: {ty}):\n    v6 = symbol_value.i64 gv0\n    \
         store notrap v5, v6\n    store notrap v3, v6+8\n{body}    jump block2(v5)\n\n\
         block2(v8: {ty}):\n    v9 = select.{ty} v1, v8, v0\n    return v9\n}}\n"
    )
}

/// Every value type, in every place a type can be written, reads back as written.
#[test]
fn every_type_in_every_place_round_trips() {
    let mut text = String::new();
    for ty in every_value_type() {
        text.push_str(&function_using_type(ty));
        text.push('\n');
    }
    let module = read_module_text(Path::new("types.clif"), &text, ReadOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let emitted = assert_round_trip("every type", &module);
    assert!(emitted.contains("splat.dt0"), "{emitted}");
    assert!(emitted.contains("stack_map=[i128x2 @ ss0+0]"), "{emitted}");
}

/// `../shared/runtests`, or None with a note when `../shared` is not beside the repository.
fn runtests() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/runtests");
    if dir.is_dir() {
        return Some(dir);
    }
    let why = format!(
        "{} is missing (../shared is not beside the clone)",
        dir.display()
    );
    assert!(std::env::var_os("CI").is_none(), "under CI: {why}");
    let _ = writeln!(std::io::stderr(), "note: skipping: {why}");
    None
}

/// Every file of Cranelift's run tests that cranelift-reader parses is read (functions exported,
/// and local), merged in every mode, without and with `--similar` (also taking every group the
/// pass finds), emitted, and read back as the same module.
#[test]
fn every_runtest_round_trips_after_merging_in_every_mode() {
    let Some(dir) = runtests() else { return };
    let every_group = SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    };
    let configurations = [None, Some(SimilarOptions::default()), Some(every_group)];
    let (mut files, mut merged) = (0, 0);
    for path in clif_files(&dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        if cranelift_reader::parse_test(&text, Default::default()).is_err() {
            eprintln!("note: {} does not parse, skipped", path.display());
            continue;
        }
        files += 1;
        for default_linkage in [SymbolLinkage::Export, SymbolLinkage::Local] {
            let options = ReadOptions {
                default_linkage,
                ..ReadOptions::default()
            };
            let module = read_module_text(&path, &text, options)
                .unwrap_or_else(|e| panic!("a run test that parses is refused: {e}"));
            for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                for similar in &configurations {
                    let mut module = module.clone();
                    let (report, _) = merge_module_with(&mut module, mode, similar.as_ref());
                    merged += report.merged;
                    let what = format!(
                        "{} ({mode:?}, {default_linkage:?}, similar: {:?})",
                        path.display(),
                        similar.as_ref().map(|s| s.min_saving)
                    );
                    assert_round_trip(&what, &module);
                }
            }
        }
    }
    eprintln!(
        "{files} run test files round-trip in 18 configurations ({merged} functions merged in all)"
    );
    assert!(files > 350, "only {files} run test files were read");
}
