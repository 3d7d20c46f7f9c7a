//! Read-only records of constants (issue 21, item 4): with `-o`, a similar group whose
//! constants would go to the stack gives each member a record of them instead, when that saves
//! more measured. Linked and run on x86_64 and aarch64 (qemu), as an executable and as a shared
//! library, in every mode: the program prints what the unmerged one prints; the object holds
//! fewer bytes of code and read-only data than without `--similar`; the output does not depend
//! on threads; `--emit-clif` keeps stack arguments (CLIF has no data objects).

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target};
use clif_merge::pipeline::{self, PipelineOptions, PipelineOutput};
use clif_merge::{ClifModule, MergeOptions, Mode, ReadOptions, SimilarOptions, read_module_text};
use cranelift_codegen::ir::immediates::Ieee64;
use object::{Object as _, ObjectSection as _};
use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Command;

#[path = "common/link.rs"]
mod link;

use link::{Toolchain, run_ok, toolchain};

/// `%NAME(i64) -> i64` whose twelve constants (i64, i32 and i8 extended both ways, an f64's
/// bits) come from `seed`: every use of a constant is a hole.
fn member(name: &str, seed: u64, linkage: &str) -> String {
    let c = |k: u64| (seed * 0x9e37_79b9 + k * 0x85eb_ca6b) % (1 << 40) + (1 << 33);
    let narrow = (seed * 37 + 200) % 256;
    let mut text =
        format!("; linkage: %{name} {linkage}\nfunction %{name}(i64) -> i64 system_v {{\n");
    text += "block0(v0: i64):\n";
    let mut acc = "v0".to_string();
    for k in 0..8 {
        text += &format!(
            "    v{a} = iconst.i64 {}\n    v{b} = imul {acc}, v{a}\n    v{r} = rotl v{b}, v0\n",
            c(k),
            a = 100 + 3 * k,
            b = 101 + 3 * k,
            r = 102 + 3 * k
        );
        acc = format!("v{}", 102 + 3 * k);
    }
    text += &format!(
        "    v200 = iconst.i32 {}\n    v201 = ireduce.i32 {acc}\n    v202 = iadd v201, v200\n    \
         v203 = uextend.i64 v202\n    v204 = iconst.i8 {narrow}\n    v205 = sextend.i64 v204\n    \
         v206 = iconst.i8 {}\n    v207 = uextend.i64 v206\n    v208 = f64const {}\n    \
         v209 = bitcast.i64 v208\n    v210 = bxor v203, v205\n    v211 = iadd v210, v207\n    \
         v212 = bxor v211, v209\n    v213 = bxor v212, {acc}\n    return v213\n}}\n",
        (seed * 7919) as i32 - 40_000,
        (narrow * 3) % 256,
        Ieee64::with_float(-1.5 * seed as f64 - 0.25)
    );
    text
}

/// Four exported members (thunks in every mode), four local ones each called twice by an
/// exported caller (removed in `safe` and `aliases`: the callers pass the records).
fn module_text() -> String {
    let mut text = String::new();
    for m in 0..4 {
        text += &member(&format!("k{m}"), m + 1, "export");
        text += &member(&format!("l{m}"), m + 11, "local");
        text += &format!(
            "\nfunction %call_l{m}(i64) -> i64 system_v {{\n    sig0 = (i64) -> i64 system_v\n    \
             fn0 = colocated %l{m} sig0\nblock0(v0: i64):\n    v1 = call fn0(v0)\n    \
             v2 = call fn0(v1)\n    return v2\n}}\n"
        );
    }
    text
}

const DRIVER: &str = r#"#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
int64_t k0(int64_t), k1(int64_t), k2(int64_t), k3(int64_t);
int64_t call_l0(int64_t), call_l1(int64_t), call_l2(int64_t), call_l3(int64_t);
int main(void) {
    const int64_t xs[] = {0, 1, -7, 123456789, INT64_MIN, INT64_MAX};
    for (unsigned i = 0; i < 6; i++) {
        int64_t x = xs[i];
        printf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 "\n",
               k0(x), k1(x), k2(x), k3(x));
        printf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 "\n",
               call_l0(x), call_l1(x), call_l2(x), call_l3(x));
    }
    return 0;
}
"#;

fn module() -> ClifModule {
    read_module_text(
        Path::new("records.clif"),
        &module_text(),
        ReadOptions::default(),
    )
    .expect("valid CLIF")
}

/// The pipeline writing `triple`'s object in `mode`, with `--similar` or without.
fn build(
    triple: &str,
    mode: Mode,
    similar: bool,
    threads: usize,
    emit_clif: bool,
) -> PipelineOutput {
    let options = PipelineOptions {
        merge: MergeOptions {
            mode,
            similar: similar.then(SimilarOptions::default),
            threads: NonZeroUsize::new(threads),
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
        emit_clif,
        ..Default::default()
    };
    pipeline::run(module(), &options).expect("the pipeline runs")
}

fn object_bytes(out: &PipelineOutput) -> &[u8] {
    &out.object.as_ref().expect("an object").bytes
}

/// Bytes of code and read-only data (`.text`, `.rodata*`, `.data.rel.ro*`) of an object.
fn code_and_rodata(bytes: &[u8]) -> u64 {
    let file = object::File::parse(bytes).unwrap();
    (file.sections())
        .filter(|s| {
            let name = s.name().unwrap_or("");
            name.starts_with(".text")
                || name.starts_with(".rodata")
                || name.starts_with(".data.rel.ro")
        })
        .map(|s| s.size())
        .sum()
}

/// Links `object` with [`DRIVER`] into an executable, or into a shared library the executable
/// loads; what the program printed.
fn link_and_run(tc: &Toolchain, dir: &Path, label: &str, object: &[u8], shared: bool) -> String {
    let obj = dir.join(format!("{label}.o"));
    std::fs::write(&obj, object).unwrap();
    let driver = dir.join("driver.c");
    std::fs::write(&driver, DRIVER).unwrap();
    if shared {
        return link::run_with_shared_library(tc, dir, label, &obj, &driver, None);
    }
    let exe = dir.join(label);
    run_ok(
        Command::new(tc.cc)
            .arg(&driver)
            .arg(&obj)
            .arg("-o")
            .arg(&exe),
    );
    link::run_program(tc, &exe)
}

fn records_link_and_run(aarch64: bool) {
    let Some(tc) = toolchain(aarch64) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let unmerged = build(tc.triple, Mode::Safe, false, 1, false);
    let expected = link_and_run(&tc, dir.path(), "unmerged", object_bytes(&unmerged), false);
    assert_eq!(expected.lines().count(), 12, "the driver ran");
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let exact = build(tc.triple, mode, false, 1, false);
        let merged = build(tc.triple, mode, true, 1, false);
        let groups = merged.report.similar.as_ref().expect("similar groups");
        let records: usize = groups.iter().map(|g| g.records.len()).sum();
        assert_eq!(
            records, 8,
            "{} {mode:?}: every member passes a record",
            tc.triple
        );
        let (before, after) = (
            code_and_rodata(object_bytes(&exact)),
            code_and_rodata(object_bytes(&merged)),
        );
        assert!(
            after < before,
            "{} {mode:?}: code and read-only data {before} -> {after}",
            tc.triple
        );
        for shared in [false, true] {
            let label = format!("records_{}_{shared}", mode.keyword());
            let out = link_and_run(&tc, dir.path(), &label, object_bytes(&merged), shared);
            assert_eq!(out, expected, "{label}: {}", tc.triple);
        }
    }
}

#[test]
fn records_linked_and_run_print_what_the_unmerged_program_does_x86_64() {
    records_link_and_run(false);
}

#[test]
fn records_linked_and_run_print_what_the_unmerged_program_does_aarch64() {
    records_link_and_run(true);
}

/// One object, whatever the threads; `--emit-clif` (CLIF has no data objects) keeps stack
/// arguments.
#[test]
fn records_do_not_depend_on_threads_and_stay_out_of_clif() {
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let one = build(triple, Mode::Safe, true, 1, false);
        let four = build(triple, Mode::Safe, true, 4, false);
        assert_eq!(object_bytes(&one), object_bytes(&four), "{triple}");
        let clif = build(triple, Mode::Safe, true, 1, true);
        let groups = clif.report.similar.as_ref().expect("similar groups");
        assert!(
            groups.iter().all(|g| g.records.is_empty()),
            "{triple}: no records with --emit-clif"
        );
    }
}

/// A record is local data of the object, so its address is taken as a colocated symbol's: on
/// x86_64 without PIC, `lea` with a PC-relative relocation, not `movabs` with an absolute one
/// (`R_X86_64_64`, 3 bytes more a member). (Under PIC, Cranelift 0.135 takes every symbol's
/// address from the GOT, colocated or not, and aarch64 without PIC loads an absolute address:
/// nothing to gain there.)
#[test]
fn a_record_address_is_pc_relative_without_pic() {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget};
    const R_X86_64_64: u32 = 1;
    let mut options = PipelineOptions {
        merge: MergeOptions {
            similar: Some(SimilarOptions::default()),
            ..MergeOptions::default()
        },
        object: Some(ObjectOptions {
            target: parse_target("x86_64-unknown-linux-gnu").unwrap(),
            opt_level: OptLevel::Speed,
            isa: Default::default(),
            function_sections: false,
            mode: Mode::Safe,
            fold_machine_code: true,
        }),
        ..Default::default()
    };
    let object = options.object.as_mut().unwrap();
    object.isa.flags.push("is_pic=false".to_string());
    let merged = pipeline::run(module(), &options).expect("the pipeline runs");
    let groups = merged.report.similar.as_ref().expect("similar groups");
    let records: Vec<String> = (groups.iter().flat_map(|g| &g.records))
        .map(|r| r.name.to_string().trim_start_matches('%').to_string())
        .collect();
    assert!(!records.is_empty(), "records");
    let file = object::File::parse(object_bytes(&merged)).unwrap();
    let mut seen = 0;
    for section in file.sections() {
        for (_, reloc) in section.relocations() {
            let RelocationTarget::Symbol(index) = reloc.target() else {
                continue;
            };
            let name = file.symbol_by_index(index).unwrap().name().unwrap_or("");
            if !records.iter().any(|r| r == name) {
                continue;
            }
            seen += 1;
            let object::RelocationFlags::Elf { r_type } = reloc.flags() else {
                panic!("an ELF relocation");
            };
            assert_ne!(
                r_type, R_X86_64_64,
                "the record {name} is addressed absolutely"
            );
        }
    }
    assert!(seen > 0, "no relocation names a record ({records:?})");
}

/// The records' bytes are reported, since `text_bytes` and `saved_bytes` count text only: the
/// object's `record_bytes` covers its read-only data (each record padded to 8), each group that
/// passes records says its own, and the text report names them.
#[test]
fn the_report_counts_the_records_bytes() {
    use object::{Object as _, ObjectSection as _};
    let merged = build("x86_64-unknown-linux-gnu", Mode::Safe, true, 1, false);
    let object = merged.object.as_ref().expect("an object");
    let file = object::File::parse(&*object.bytes).unwrap();
    let rodata: u64 = (file.sections())
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".rodata")))
        .map(|s| s.size())
        .sum();
    let reported = object.report.record_bytes;
    assert!(
        rodata > 0 && rodata <= reported && reported < rodata + 8,
        ".rodata {rodata}, reported {reported}"
    );
    let json: serde_json::Value = serde_json::from_str(&clif_merge::report::to_json(
        &merged.report,
        Some(&object.report),
    ))
    .unwrap();
    assert_eq!(json["object"]["record_bytes"], reported);
    let per_group: u64 = (json["similar"].as_array().unwrap().iter())
        .filter_map(|g| g["record_bytes"].as_u64())
        .sum();
    assert_eq!(per_group, reported);
    let text = clif_merge::report::to_text(&merged.report, Some(&object.report));
    assert!(
        text.contains(&format!("read-only records: {reported} bytes")),
        "{text}"
    );
    let exact = build("x86_64-unknown-linux-gnu", Mode::Safe, false, 1, false);
    let exact_report = &exact.object.as_ref().unwrap().report;
    assert_eq!(exact_report.record_bytes, 0);
    let exact_json = clif_merge::report::to_json(&exact.report, Some(exact_report));
    assert!(!exact_json.contains("record_bytes"), "absent when 0");
}
