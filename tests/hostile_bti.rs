//! Branch protection in objects: with aarch64's `use_bti`, every function another object may
//! call through a pointer starts with a landing pad (`bti c`, `bti jc`, or a `paci[ab]sp`, which
//! is one too); an indirect call (`blr`) to a function without one faults on a guarded page.
//! The object writer's one-jump thunks and machine-code folding (`src/emit/object/code.rs`,
//! `target.rs`) and `MergingModule`'s thunks (`src/merging_module/jump.rs`) are `bti c; b`
//! there.

use clif_merge::emit::object::{ObjectOptions, OptLevel, parse_target, write_object};
use clif_merge::pipeline::{PipelineOptions, run};
use clif_merge::{ClifModule, MergeOptions, Mode, ReadOptions, read_module_text};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind};
use std::path::Path;

#[path = "common/build.rs"]
mod build;
#[path = "common/link.rs"]
mod link;

/// `bti c`, `bti jc`, `paciasp`, `pacibsp`.
const LANDING_PADS: [u32; 4] = [0xd503_245f, 0xd503_24df, 0xd503_233f, 0xd503_237f];

fn basic() -> ClifModule {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.clif");
    let text = std::fs::read_to_string(&path).unwrap();
    read_module_text(&path, &text, ReadOptions::default()).unwrap()
}

fn bti_options(mode: Mode, flags: &[&str]) -> ObjectOptions {
    let isa = clif_merge::emit::object::IsaSettings {
        flags: flags.iter().map(|f| f.to_string()).collect(),
        ..Default::default()
    };
    ObjectOptions {
        target: parse_target("aarch64").unwrap(),
        opt_level: OptLevel::Speed,
        isa,
        function_sections: false,
        mode,
        fold_machine_code: true,
    }
}

/// The global function symbols of an aarch64 ELF object that do not start with a landing pad,
/// with their first instruction; and how many global function symbols there are.
fn without_landing_pad(bytes: &[u8]) -> (Vec<(String, u32)>, usize) {
    let file = object::File::parse(bytes).unwrap();
    let (mut missing, mut global) = (Vec::new(), 0);
    for symbol in file.symbols() {
        if symbol.kind() != SymbolKind::Text || symbol.is_undefined() || !symbol.is_global() {
            continue;
        }
        global += 1;
        let section = file
            .section_by_index(symbol.section_index().unwrap())
            .unwrap();
        let data = section.data().unwrap();
        let at = (symbol.address() - section.address()) as usize;
        let word = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        if !LANDING_PADS.contains(&word) {
            missing.push((symbol.name().unwrap().to_string(), word));
        }
    }
    (missing, global)
}

fn merged_object(mode: Mode, flags: &[&str]) -> Vec<u8> {
    let pipeline = PipelineOptions {
        merge: MergeOptions {
            mode,
            ..MergeOptions::default()
        },
        object: Some(bti_options(mode, flags)),
        ..Default::default()
    };
    run(basic(), &pipeline).unwrap().object.unwrap().bytes
}

/// The check itself: the unmerged object with BTI has a landing pad at every function, the
/// merged object without BTI has none (so the check sees the thunks).
#[test]
fn the_landing_pad_check_sees_pads_and_their_absence() {
    let unmerged = write_object(&basic(), 0, &bti_options(Mode::Safe, &["use_bti"])).unwrap();
    let (missing, global) = without_landing_pad(&unmerged.bytes);
    assert!(missing.is_empty(), "unmerged with BTI: {missing:x?}");
    assert_eq!(global, 5, "basic.clif's global functions");
    let (missing, _) = without_landing_pad(&merged_object(Mode::Safe, &[]));
    assert_eq!(
        missing.len(),
        5,
        "without BTI no function has a pad: {missing:x?}"
    );
}

/// basic.clif merged in safe or thunks mode for aarch64 with `--set use_bti`: `%caller2` and
/// `%fact1` become thunks; a bare `b` (0x14000000) there would fault on a `blr` to them (they are
/// exported: any object may take their address).
/// `clif-merge examples/basic.clif -o m.o --target aarch64 --set use_bti`, then
/// `aarch64-linux-gnu-objdump -d m.o`.
#[test]
fn with_bti_every_exported_function_of_a_merged_object_starts_with_a_landing_pad() {
    for mode in [Mode::Safe, Mode::Thunks] {
        let (missing, global) = without_landing_pad(&merged_object(mode, &["use_bti"]));
        assert!(global >= 4, "{mode:?}: {global} global functions");
        assert!(
            missing.is_empty(),
            "{mode:?}: exported functions without a landing pad (name, first word): {missing:x?}"
        );
    }
}

/// Nothing merges here, yet the object writer writes `%g`, which forwards to `%f`, and `%h`,
/// whose machine code equals `%f`'s (folded), as one jump: with `use_bti` it needs its pad.
#[test]
fn with_bti_forwarding_and_folded_functions_keep_a_landing_pad() {
    let text = "
function %f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 3
    v2 = imul v0, v1
    return v2
}
function %g(i32) -> i32 {
    fn0 = %f(i32) -> i32
block0(v0: i32):
    v1 = call fn0(v0)
    return v1
}
function %h(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 3
    v2 = imul v1, v0
    return v2
}
";
    let module = read_module_text(Path::new("fwd.clif"), text, ReadOptions::default()).unwrap();
    let written = write_object(&module, 0, &bti_options(Mode::Safe, &["use_bti"])).unwrap();
    let (missing, global) = without_landing_pad(&written.bytes);
    assert_eq!(global, 3);
    assert!(
        missing.is_empty(),
        "functions without a landing pad (name, first word): {missing:x?}"
    );
}

/// A freestanding aarch64 program (no libc, whose start files carry no landing pads) that calls
/// `NAME(5)` through a function pointer and exits with the result, linked with `-z force-bti`
/// so that qemu (`-cpu max`) guards its pages.
const BTI_DRIVER: &str = r#"
int fact0(int); int fact1(int);
int (*volatile fp)(int);
static void sys_exit(long code) {
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93;
    __asm__ volatile("svc 0" :: "r"(x0), "r"(x8));
    for (;;) {}
}
void _start(void) {
    fp = NAME;
    sys_exit(fp(5));
}
"#;

/// The exit status of the BTI driver calling `name` of `object` through a pointer, or None
/// (with a note) without the aarch64 toolchain.
fn call_through_a_pointer_with_bti(object: &[u8], name: &str) -> Option<Option<i32>> {
    let tc = link::toolchain(true)?;
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("merged.o");
    std::fs::write(&obj, object).unwrap();
    let driver = BTI_DRIVER.replace("NAME", name);
    Some(link::run_freestanding_with_bti(
        &tc,
        dir.path(),
        &driver,
        &obj,
    ))
}

/// At run time: under BTI, `fact0` (compiled, `bti c` first) called through a pointer returns
/// 120; so does `fact1`, merged into a thunk of it (a bare `b` raised SIGILL, qemu: "uncaught
/// target signal 4").
#[test]
fn with_bti_a_merged_function_called_through_a_pointer_runs() {
    let object = merged_object(Mode::Safe, &["use_bti", "is_pic"]);
    let Some(kept) = call_through_a_pointer_with_bti(&object, "fact0") else {
        return;
    };
    assert_eq!(
        kept,
        Some(120),
        "the kept function, through a pointer under BTI"
    );
    let thunk = call_through_a_pointer_with_bti(&object, "fact1").unwrap();
    assert_eq!(thunk, Some(120), "the thunk, through a pointer under BTI");
}

/// `MergingModule` writes its thunks as `bti c; b` too: an object of `fact0` and `fact1` (equal:
/// `x * 24`, so 5 gives 120) built through it for aarch64 with `use_bti`, linked with
/// `-z force-bti`, and both called through a pointer; the thunk `fact1` is the 8 bytes.
#[test]
fn with_bti_a_merging_module_thunk_called_through_a_pointer_runs() {
    use cranelift_codegen::ir::{AbiParam, InstBuilder, types};
    use cranelift_codegen::settings::{self, Configurable};
    use cranelift_module::{Linkage, Module, default_libcall_names};
    use cranelift_object::{ObjectBuilder, ObjectModule};

    let mut flags = settings::builder();
    flags.set("is_pic", "true").unwrap();
    let mut isa = cranelift_codegen::isa::lookup_by_name("aarch64-unknown-linux-gnu").unwrap();
    isa.enable("use_bti").unwrap();
    let isa = isa.finish(settings::Flags::new(flags)).unwrap();
    let builder = ObjectBuilder::new(isa, "bti", default_libcall_names()).unwrap();
    let mut module = clif_merge::MergingModule::deferred(ObjectModule::new(builder));
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));
    for name in ["fact0", "fact1"] {
        let id = module
            .declare_function(name, Linkage::Export, &sig)
            .unwrap();
        build::build(&mut module, id, |b, _, params| {
            b.ins().imul_imm_s(params[0], 24)
        });
    }
    let (object, report) = module.finish().unwrap();
    assert_eq!(report.merged, 1, "{report:?}");
    let bytes = object.finish().emit().unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let fact1 = file.symbols().find(|s| s.name() == Ok("fact1")).unwrap();
    let text = file
        .section_by_index(fact1.section_index().unwrap())
        .unwrap();
    let at = (fact1.address() - text.address()) as usize;
    let code = &text.data().unwrap()[at..at + 8];
    assert_eq!(
        code[..4],
        LANDING_PADS[0].to_le_bytes(),
        "fact1 starts with bti c"
    );
    assert_eq!(
        u32::from_le_bytes(code[4..].try_into().unwrap()) >> 26,
        0b000101,
        "then b"
    );
    let Some(kept) = call_through_a_pointer_with_bti(&bytes, "fact0") else {
        return;
    };
    assert_eq!(
        kept,
        Some(120),
        "the kept function, through a pointer under BTI"
    );
    let thunk = call_through_a_pointer_with_bti(&bytes, "fact1").unwrap();
    assert_eq!(thunk, Some(120), "the thunk, through a pointer under BTI");
}
