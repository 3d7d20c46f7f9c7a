//! Hostile tests of `--verify` with a similar group's read-only records (seventh pass): the
//! check runs the merged side with the bytes the object gets, so a correct merge with records
//! passes on every target and mode, and a record whose bytes are wrong (one field changed,
//! of each type: `i64`, `i8`, `f32`, `f64`) must be reported.

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target};
use clif_merge::pipeline::{self, PipelineOptions};
use clif_merge::verify::{VerifyOptions, verify_merge};
use clif_merge::{MergeOptions, Mode, ReadOptions, SimilarOptions, read_module_text};
use cranelift_codegen::ir::types;
use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::Path;

/// `%NAME(i64) -> i64`: ten wide `i64` constants multiplied in, an `i8` constant compared with
/// the low byte, an `f32` and an `f64` constant added to the value as a float; every constant
/// differs between members (`seed`).
fn member(name: &str, seed: u64, linkage: &str) -> String {
    let mut t = format!(
        "; linkage: %{name} {linkage}\nfunction %{name}(i64) -> i64 {{\nblock0(v0: i64):\n"
    );
    let mut acc = "v0".to_string();
    for k in 0..10u64 {
        let c = seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(k.wrapping_mul(0x85eb_ca6b)) as i64;
        let n = 100 + 10 * k;
        writeln!(
            t,
            "    v{n} = iconst.i64 {c}\n    v{} = imul {acc}, v{n}\n    v{} = rotl v{}, v0",
            n + 1,
            n + 2,
            n + 1
        )
        .unwrap();
        acc = format!("v{}", n + 2);
    }
    let narrow = (seed * 53 + 7) % 256;
    let f32_bits = 0x3fc0_0000u32 + seed as u32 * 0x1235;
    let f64_bits = 0x4004_0000_0000_0000u64 + seed * 0x1_2345_6789;
    write!(
        t,
        "    v300 = iconst.i8 {narrow}
    v301 = ireduce.i8 {acc}
    v302 = icmp slt v301, v300
    v303 = uextend.i64 v302
    v304 = iadd {acc}, v303
    v310 = f32const {f32}
    v311 = fcvt_from_sint.f32 v304
    v312 = fadd v311, v310
    v313 = bitcast.i32 v312
    v314 = uextend.i64 v313
    v320 = f64const {f64}
    v321 = fcvt_from_sint.f64 v304
    v322 = fmul v321, v320
    v323 = bitcast.i64 v322
    v324 = bxor v314, v323
    v325 = iadd v324, v304
    return v325
}}
",
        f32 = cranelift_codegen::ir::immediates::Ieee32::with_bits(f32_bits),
        f64 = cranelift_codegen::ir::immediates::Ieee64::with_bits(f64_bits),
    )
    .unwrap();
    t
}

/// Four members of `linkage` and a caller of each.
fn module_text(linkage: &str) -> String {
    let mut t: String = (0..4)
        .map(|i| member(&format!("m{i}"), i + 1, linkage))
        .collect();
    t += "\nfunction %caller(i64) -> i64 {\n";
    for i in 0..4 {
        writeln!(t, "    fn{i} = %m{i}(i64) -> i64").unwrap();
    }
    t += "block0(v0: i64):\n    v1 = call fn0(v0)\n    v2 = call fn1(v1)\n    v3 = call fn2(v2)\n    v4 = call fn3(v3)\n    return v4\n}\n";
    t
}

fn options(triple: &str, mode: Mode) -> PipelineOptions {
    PipelineOptions {
        merge: MergeOptions {
            mode,
            similar: Some(SimilarOptions::default()),
            threads: NonZeroUsize::new(1),
            ..MergeOptions::default()
        },
        object: Some(ObjectOptions {
            target: parse_target(triple).unwrap(),
            opt_level: OptLevel::Speed,
            isa: Default::default(),
            function_sections: false,
            mode,
            fold_machine_code: true,
        }),
        ..Default::default()
    }
}

const TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];
const MODES: [Mode; 3] = [Mode::Safe, Mode::Aliases, Mode::Thunks];

/// Every target, mode and linkage: the group takes records, the real merge passes, and each
/// record with one field's bits inverted (one record, one field at a time) is reported.
#[test]
fn a_wrong_record_field_of_each_type_is_reported_and_the_real_merge_passes() {
    for triple in TARGETS {
        for mode in MODES {
            for linkage in ["local", "export"] {
                let what = format!("{triple} {mode:?} {linkage}");
                let text = module_text(linkage);
                let original =
                    read_module_text(Path::new("r.clif"), &text, ReadOptions::default()).unwrap();
                let out = pipeline::run(original.clone(), &options(triple, mode)).unwrap();
                let groups = out.report.similar.clone().unwrap_or_default();
                let records: usize = groups.iter().map(|g| g.records.len()).sum();
                assert!(records > 0, "{what}: the group takes records");
                let verify = VerifyOptions::default();
                let ok = verify_merge(&original, &out.module, &out.report, &verify);
                assert!(ok.is_ok(), "{what}: the real merge: {}", ok.summary());
                let mut types_seen = Vec::new();
                for (g, group) in groups.iter().enumerate() {
                    for (r, record) in group.records.iter().enumerate().take(2) {
                        for (f, field) in record.fields.iter().enumerate() {
                            if types_seen.contains(&field.ty) && field.ty == types::I64 && f > 1 {
                                continue;
                            }
                            types_seen.push(field.ty);
                            let mut report = out.report.clone();
                            let fields = &mut report.similar.as_mut().unwrap()[g].records[r].fields;
                            fields[f].bits = !fields[f].bits;
                            let wrong = verify_merge(&original, &out.module, &report, &verify);
                            assert!(
                                !wrong.is_ok(),
                                "{what}: record {} field {f} ({}) inverted passes: {}",
                                record.name,
                                field.ty,
                                wrong.summary()
                            );
                        }
                    }
                }
                for ty in [types::I64, types::I8, types::F32, types::F64] {
                    assert!(
                        types_seen.contains(&ty),
                        "{what}: no {ty} field: {types_seen:?}"
                    );
                }
            }
        }
    }
}

/// A module that reads a data symbol named as the group's record would be (the name the first
/// run gives it): the merge must not define a record of that name, which would bind the
/// module's own reference to the record instead of the other object's data. Held: the group
/// then passes its constants otherwise, and the merge passes `--verify`.
#[test]
fn a_data_symbol_named_like_a_record_is_not_taken_by_one() {
    let triple = TARGETS[0];
    let text = module_text("local");
    let original = read_module_text(Path::new("r.clif"), &text, ReadOptions::default()).unwrap();
    let out = pipeline::run(original, &options(triple, Mode::Safe)).unwrap();
    let group = &out.report.similar.as_ref().unwrap()[0];
    let taken = group.records[0].name.to_string();
    let reader = format!(
        "\nfunction %reader() -> i64 {{\n    gv0 = symbol {taken}\nblock0:\n    v0 = symbol_value.i64 gv0\n    v1 = load.i64 notrap aligned v0\n    return v1\n}}\n"
    );
    let text = text + &reader;
    let original = read_module_text(Path::new("r.clif"), &text, ReadOptions::default()).unwrap();
    let out = pipeline::run(original.clone(), &options(triple, Mode::Safe)).unwrap();
    let names: Vec<String> = (out.report.similar.iter().flatten())
        .flat_map(|g| &g.records)
        .map(|r| r.name.to_string())
        .collect();
    assert!(!names.contains(&taken), "a record takes {taken}: {names:?}");
    let checked = verify_merge(
        &original,
        &out.module,
        &out.report,
        &VerifyOptions::default(),
    );
    assert!(checked.is_ok(), "{}", checked.summary());
}
