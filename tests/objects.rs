//! Proof by linking and running: the objects written for merged modules behave exactly as the
//! objects of the same modules compiled without merging, and their symbols are what `docs/objects.md`
//! and `src/emit/object/` promise.
//!
//! Each module of `tests/data/objects/*.clif` is compiled twice per configuration: without
//! merging or machine-code folding (the reference), and merged in one mode (safe, aliases or
//! thunks), each with and without `--function-sections`. Both objects are linked, into separate
//! executables, with the same generated C driver, which calls every visible `system_v` function
//! of the module on a fixed pseudo-random sequence of inputs and prints the results; the outputs
//! must be identical. On x86_64 the system `cc` links and the executable runs natively; on
//! aarch64 `aarch64-linux-gnu-gcc` links and `qemu-aarch64 -L /usr/aarch64-linux-gnu` runs it.
//!
//! Conventions of the test modules, which the driver follows:
//! - `mem_*` takes a pointer to 16 words (`i64`) as its first argument; the driver fills the
//!   words before each call and prints them after it.
//! - `addr_*` takes nothing and returns a function's address (`func_addr`). The driver prints
//!   whether it equals the address C has for that function, calls through it when the function
//!   is `system_v`, and prints which of these addresses are equal: the only output allowed to
//!   differ between builds, and then only in aliases mode, where it must match the object
//!   (equal exactly when the two symbols share section and address).
//! - `self_*` is called once more with its own address.
//! - A module with visible preemptible functions is also linked with a driver that overrides
//!   each of them with a strong C definition: that links only if they stayed weak, and callers
//!   must then reach the C definitions.
//!
//! The objects are read back with the `object` crate: aliases share section, address and size
//! with their target; thunks are one jump (5 bytes on x86_64, 4 on aarch64) with the right
//! relocation, symbol size and alignment; removed functions have no symbol; `local` stays
//! local, `hidden` hidden and `preemptible` weak; the JSON report's counts and symbol map agree
//! with the object. One test checks the same facts in the output of `readelf -sW`, `readelf -SW`
//! and `nm`; Mach-O objects are parsed back and checked like ELF ones (they are not linked).
//!
//! Missing tools: the test fails when the environment variable `CI` is set, naming the Debian
//! package to install, and otherwise prints a note and returns.

use clif_merge::emit::object::{
    ObjectOptions, ObjectOutput, OptLevel, parse_target, symbol_name, write_object,
};
use clif_merge::read::read_files;
use clif_merge::refs::{FunctionRefs, ModuleRefs};
use clif_merge::{
    Action, ClifModule, FuncName, MergeReport, Mode, ReadOptions, SimilarOptions, SymbolLinkage,
    merge_module_with,
};
use cranelift_codegen::ir::{self, InstructionData, types};
use cranelift_codegen::isa::CallConv;
use object::read::elf::{ElfFile64, SectionHeader as _};
use object::{
    Endianness, Object as _, ObjectSection as _, ObjectSymbol as _, RelocationFlags,
    RelocationTarget, SectionIndex, SymbolFlags, SymbolIndex, SymbolKind, SymbolScope,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
// A skip note goes past the test harness's capture, so that `cargo test` shows it.
use std::io::Write as _;

/// Calls per visible function (and per call through a returned address), at least.
const ITERATIONS: usize = 200;

/// Calls the driver makes in all, at least.
const MIN_CALLS: usize = 1000;

/// How long one executable may run.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Targets and tools
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    fn elf_triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-gnu",
            Arch::Aarch64 => "aarch64-unknown-linux-gnu",
        }
    }

    fn macho_triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-apple-darwin",
            Arch::Aarch64 => "aarch64-apple-darwin",
        }
    }

    /// The promised size of a thunk: `jmp rel32` or `b imm26`.
    fn thunk_len(self) -> u64 {
        match self {
            Arch::X86_64 => 5,
            Arch::Aarch64 => 4,
        }
    }

    /// The promised alignment of a thunk.
    fn thunk_align(self) -> u64 {
        match self {
            Arch::X86_64 => 1,
            Arch::Aarch64 => 4,
        }
    }

    /// Offset of the branch relocation inside a thunk.
    fn thunk_reloc_offset(self) -> u64 {
        match self {
            Arch::X86_64 => 1,
            Arch::Aarch64 => 0,
        }
    }

    /// Whether `code` starts with the thunk's jump.
    fn is_jump(self, code: &[u8]) -> bool {
        match self {
            Arch::X86_64 => code.first() == Some(&0xe9),
            Arch::Aarch64 => {
                code.len() >= 4
                    && u32::from_le_bytes([code[0], code[1], code[2], code[3]]) & 0xfc00_0000
                        == 0x1400_0000
            }
        }
    }

    /// Whether a relocation is a direct branch of this architecture and format.
    fn is_branch_reloc(self, flags: RelocationFlags) -> bool {
        match (self, flags) {
            (Arch::X86_64, RelocationFlags::Elf { r_type }) => {
                r_type == object::elf::R_X86_64_PLT32 || r_type == object::elf::R_X86_64_PC32
            }
            (Arch::Aarch64, RelocationFlags::Elf { r_type }) => {
                r_type == object::elf::R_AARCH64_JUMP26 || r_type == object::elf::R_AARCH64_CALL26
            }
            (
                Arch::X86_64,
                RelocationFlags::MachO {
                    r_type, r_pcrel, ..
                },
            ) => r_pcrel && r_type == object::macho::X86_64_RELOC_BRANCH,
            (
                Arch::Aarch64,
                RelocationFlags::MachO {
                    r_type, r_pcrel, ..
                },
            ) => r_pcrel && r_type == object::macho::ARM64_RELOC_BRANCH26,
            _ => false,
        }
    }
}

/// How to compile C, link and run for one architecture.
struct Toolchain {
    cc: &'static str,
    /// Prefix of the command that runs an executable (empty: run it directly).
    runner: Vec<&'static str>,
}

/// Whether `tool --version` runs.
fn tool_exists(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Checks that every `(tool, package)` is installed. When one is missing: fails under CI (the
/// environment variable `CI` is set), otherwise prints a note and returns false.
fn require_tools(what: &str, tools: &[(&str, &str)]) -> bool {
    let missing: Vec<String> = tools
        .iter()
        .filter(|(tool, _)| !tool_exists(tool))
        .map(|(tool, package)| format!("`{tool}` (Debian package {package})"))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "{what} needs {}; install with `apt-get install -y gcc-aarch64-linux-gnu \
         libc6-dev-arm64-cross qemu-user binutils gcc`",
        missing.join(", ")
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    let _ = writeln!(std::io::stderr(), "note: skipping: {message}");
    false
}

const HOST_IS_X86_64_LINUX: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));
const HOST_IS_AARCH64_LINUX: bool = cfg!(all(target_arch = "aarch64", target_os = "linux"));

/// The toolchain that links and runs executables of `arch`, or None (with a note) when this
/// machine has none.
fn toolchain(arch: Arch) -> Option<Toolchain> {
    let native = match arch {
        Arch::X86_64 => HOST_IS_X86_64_LINUX,
        Arch::Aarch64 => HOST_IS_AARCH64_LINUX,
    };
    if native {
        return require_tools("linking native executables", &[("cc", "gcc")]).then(|| Toolchain {
            cc: "cc",
            runner: Vec::new(),
        });
    }
    match arch {
        Arch::X86_64 => {
            let _ = writeln!(
                std::io::stderr(),
                "note: skipping: x86_64 executables run only on an x86_64 Linux host"
            );
            None
        }
        Arch::Aarch64 => require_tools(
            "linking and running aarch64 executables",
            &[
                ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
                ("qemu-aarch64", "qemu-user"),
            ],
        )
        .then(|| Toolchain {
            cc: "aarch64-linux-gnu-gcc",
            runner: vec!["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Modules and objects
// ---------------------------------------------------------------------------------------------

fn data_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/objects")
        .join(format!("{name}.clif"))
}

fn load(name: &str) -> ClifModule {
    read_files(&[data_path(name)], ReadOptions::default())
        .unwrap_or_else(|e| panic!("cannot read {name}.clif: {e}"))
}

fn options(triple: &str, mode: Mode, function_sections: bool, fold: bool) -> ObjectOptions {
    ObjectOptions {
        target: parse_target(triple).expect("a supported target"),
        isa: Default::default(),
        opt_level: OptLevel::Speed,
        function_sections,
        mode,
        fold_machine_code: fold,
    }
}

/// A module merged in one mode and compiled.
struct Built {
    report: MergeReport,
    merged: ClifModule,
    object: ObjectOutput,
}

/// The reference: the module compiled as it is, without merging or folding.
fn build_reference(module: &ClifModule, triple: &str, function_sections: bool) -> ObjectOutput {
    write_object(
        module,
        0,
        &options(triple, Mode::Safe, function_sections, false),
    )
    .unwrap_or_else(|e| panic!("cannot write the reference object for {triple}: {e:#}"))
}

fn build_merged(module: &ClifModule, mode: Mode, triple: &str, function_sections: bool) -> Built {
    build_merged_with(module, mode, triple, function_sections, None)
}

/// [`build_merged`], with similar merging when `similar` says so.
fn build_merged_with(
    module: &ClifModule,
    mode: Mode,
    triple: &str,
    function_sections: bool,
    similar: Option<&SimilarOptions>,
) -> Built {
    let mut merged = module.clone();
    let (report, _) = merge_module_with(&mut merged, mode, similar);
    let removed = report.removed();
    let object = write_object(
        &merged,
        removed,
        &options(triple, mode, function_sections, true),
    )
    .unwrap_or_else(|e| panic!("cannot write the merged object ({mode:?}, {triple}): {e:#}"));
    Built {
        report,
        merged,
        object,
    }
}

/// What the merge did to each replaced function: name -> (action, kept).
fn ir_actions(report: &MergeReport) -> BTreeMap<String, (Action, String)> {
    report
        .classes
        .iter()
        .flat_map(|c| {
            c.replaced
                .iter()
                .map(|r| (r.name.to_string(), (r.by, c.kept.to_string())))
        })
        .collect()
}

/// Every name of the input that may get a symbol: functions and aliases, with their linkage
/// and whether they are aliases.
fn input_names(module: &ClifModule) -> Vec<(FuncName, SymbolLinkage, bool)> {
    let mut names: Vec<_> = module
        .functions()
        .map(|f| (f.name.clone(), f.linkage, false))
        .collect();
    names.extend(
        module
            .aliases()
            .iter()
            .map(|a| (a.name.clone(), a.linkage, true)),
    );
    names
}

// ---------------------------------------------------------------------------------------------
// The C driver
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CType {
    U8,
    U16,
    U32,
    U64,
}

impl CType {
    fn of(ty: ir::Type) -> Option<CType> {
        Some(match ty {
            types::I8 => CType::U8,
            types::I16 => CType::U16,
            types::I32 => CType::U32,
            types::I64 => CType::U64,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            CType::U8 => "uint8_t",
            CType::U16 => "uint16_t",
            CType::U32 => "uint32_t",
            CType::U64 => "uint64_t",
        }
    }
}

/// A C prototype: parameters and an optional result.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CSig {
    params: Vec<CType>,
    ret: Option<CType>,
}

impl CSig {
    /// The C prototype of a `system_v` signature of integers, if it is one.
    fn of(sig: &ir::Signature) -> Option<CSig> {
        if sig.call_conv != CallConv::SystemV || sig.returns.len() > 1 {
            return None;
        }
        let params = sig
            .params
            .iter()
            .map(|p| CType::of(p.value_type))
            .collect::<Option<Vec<_>>>()?;
        let ret = match sig.returns.first() {
            None => None,
            Some(r) => Some(CType::of(r.value_type)?),
        };
        Some(CSig { params, ret })
    }

    fn ret_name(&self) -> &'static str {
        self.ret.map_or("void", CType::name)
    }

    fn param_list(&self) -> String {
        if self.params.is_empty() {
            "void".to_string()
        } else {
            let names: Vec<_> = self.params.iter().map(|t| t.name()).collect();
            names.join(", ")
        }
    }
}

/// A function the driver calls.
#[derive(Clone, Debug)]
struct Callee {
    symbol: String,
    sig: CSig,
    linkage: SymbolLinkage,
    role: Role,
}

#[derive(Clone, Debug)]
enum Role {
    Plain,
    /// First argument: a pointer to 16 words.
    Mem,
    /// Compares its argument with its own address.
    SelfAddr,
    /// Returns the address of `target`.
    Addr(AddrTarget),
}

#[derive(Clone, Debug)]
struct AddrTarget {
    name: FuncName,
    symbol: String,
    /// Declared for C (not local), so C can take its address.
    visible: bool,
    /// Its prototype, when C can call it.
    sig: Option<CSig>,
}

/// What the driver knows of a module: the functions it calls, and every name C can see.
struct DriverPlan {
    callees: Vec<Callee>,
    /// Calls per call site: `ITERATIONS`, or more for small modules.
    iterations: usize,
    /// Visible names that are not callees (for their address): symbol names.
    address_only: BTreeSet<String>,
}

impl DriverPlan {
    fn addr_callees(&self) -> impl Iterator<Item = (&Callee, &AddrTarget)> {
        self.callees.iter().filter_map(|c| match &c.role {
            Role::Addr(t) => Some((c, t)),
            _ => None,
        })
    }

    /// Whether the override driver defines `name` in C.
    fn overrides(&self, name: &str, override_preemptible: bool) -> bool {
        override_preemptible
            && self.callees.iter().any(|c| {
                c.symbol == name && c.linkage == SymbolLinkage::Preemptible && c.sig.ret.is_some()
            })
    }

    fn has_preemptible(&self) -> bool {
        self.callees
            .iter()
            .any(|c| c.linkage == SymbolLinkage::Preemptible && c.sig.ret.is_some())
    }
}

fn plan_driver(module: &ClifModule) -> DriverPlan {
    let mut visible: BTreeMap<FuncName, (SymbolLinkage, ir::Signature)> = BTreeMap::new();
    for f in module.functions() {
        if f.linkage != SymbolLinkage::Local {
            visible.insert(f.name.clone(), (f.linkage, f.func.signature.clone()));
        }
    }
    for a in module.aliases() {
        let target = module
            .resolve(&a.target)
            .expect("an alias names a defined function");
        if a.linkage != SymbolLinkage::Local {
            visible.insert(
                a.name.clone(),
                (a.linkage, module.function(target).func.signature.clone()),
            );
        }
    }
    let mut callees = Vec::new();
    let mut address_only = BTreeSet::new();
    for (name, (linkage, sig)) in &visible {
        let symbol = symbol_name(name);
        let Some(csig) = CSig::of(sig) else {
            address_only.insert(symbol);
            continue;
        };
        let role = if symbol.starts_with("mem_") {
            assert_eq!(
                csig.params.first(),
                Some(&CType::U64),
                "{name}: a mem_ function takes a pointer first"
            );
            Role::Mem
        } else if symbol.starts_with("self_") {
            assert_eq!(
                csig.params,
                [CType::U64],
                "{name}: a self_ function takes an address"
            );
            Role::SelfAddr
        } else if symbol.starts_with("addr_") {
            let id = module.resolve(name).expect("addr_ functions are defined");
            let func = &module.function(id).func;
            assert!(
                csig.params.is_empty() && csig.ret == Some(CType::U64),
                "{name}: () -> i64"
            );
            let (target, target_sig) = func_addr_target(func)
                .unwrap_or_else(|| panic!("{name}: an addr_ function uses func_addr"));
            Role::Addr(AddrTarget {
                symbol: symbol_name(&target),
                visible: visible.contains_key(&target),
                sig: CSig::of(&target_sig),
                name: target,
            })
        } else {
            Role::Plain
        };
        callees.push(Callee {
            symbol,
            sig: csig,
            linkage: *linkage,
            role,
        });
    }
    let call_sites = callees
        .iter()
        .filter(|c| match &c.role {
            Role::Addr(t) => t.sig.as_ref().is_some_and(|s| s.ret.is_some()),
            _ => true,
        })
        .count();
    DriverPlan {
        callees,
        iterations: ITERATIONS.max(MIN_CALLS.div_ceil(call_sites.max(1))),
        address_only,
    }
}

/// The function (and its signature) whose address `func` takes first.
fn func_addr_target(func: &ir::Function) -> Option<(FuncName, ir::Signature)> {
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if let InstructionData::FuncAddr { func_ref, .. } = func.dfg.insts[inst] {
                let ext = &func.dfg.ext_funcs[func_ref];
                let name = FuncName::of_external(&ext.name, func)?;
                return Some((name, func.dfg.signatures[ext.signature].clone()));
            }
        }
    }
    None
}

/// The C source of the driver. With `override_preemptible`, every visible preemptible function
/// with a result is defined in C (strongly) instead of declared.
fn driver_source(plan: &DriverPlan, override_preemptible: bool) -> String {
    let mut c = String::new();
    c.push_str("/* Generated by tests/objects.rs. */\n");
    c.push_str("#include <inttypes.h>\n#include <stdint.h>\n#include <stdio.h>\n\n");
    for callee in &plan.callees {
        let sig = &callee.sig;
        if plan.overrides(&callee.symbol, override_preemptible) {
            let params: Vec<String> = sig
                .params
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{} a{i}", t.name()))
                .collect();
            let params = if params.is_empty() {
                "void".to_string()
            } else {
                params.join(", ")
            };
            let mut body = String::from("0x5bd1e995u");
            for i in 0..sig.params.len() {
                write!(body, " + (uint64_t) a{i} * {}u", 2 * i + 3).unwrap();
            }
            writeln!(
                c,
                "{ret} {name}({params}) {{ return ({ret}) ({body}); }}",
                ret = sig.ret_name(),
                name = callee.symbol,
            )
            .unwrap();
        } else {
            writeln!(
                c,
                "extern {} {}({});",
                sig.ret_name(),
                callee.symbol,
                sig.param_list()
            )
            .unwrap();
        }
    }
    for name in &plan.address_only {
        writeln!(c, "extern void {name}(void);").unwrap();
    }
    c.push_str(
        r#"
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

/* Inputs of every size: zero, small, small negative, 32-bit, powers of two, extremes, any. */
static uint64_t arg(void) {
    uint64_t r = rnd();
    switch (r & 7) {
    case 0: return 0;
    case 1: return (r >> 8) % 17;
    case 2: return (uint64_t) -(int64_t) ((r >> 8) % 300);
    case 3: return r >> 32;
    case 4: return (uint64_t) 1 << ((r >> 8) & 63);
    case 5: return ((r >> 8) & 1) ? UINT64_MAX : (uint64_t) INT64_MIN;
    default: return r;
    }
}

static uint64_t buf[16];

static void fill(void) {
    for (int k = 0; k < 16; k++) buf[k] = arg();
}

static void dump(void) {
    for (int k = 0; k < 16; k++) printf(" %016" PRIx64, buf[k]);
}

int main(void) {
"#,
    );
    writeln!(c, "    for (int i = 0; i < {}; i++) {{", plan.iterations).unwrap();
    for callee in &plan.callees {
        let sig = &callee.sig;
        match callee.role {
            Role::Addr(_) => continue,
            Role::Plain | Role::Mem | Role::SelfAddr => {}
        }
        c.push_str("        {\n");
        let mem = matches!(callee.role, Role::Mem);
        if mem {
            c.push_str("            fill();\n");
        }
        let mut args = Vec::new();
        for (k, t) in sig.params.iter().enumerate() {
            if mem && k == 0 {
                c.push_str("            uint64_t a0 = (uint64_t) (uintptr_t) buf;\n");
            } else {
                writeln!(c, "            uint64_t a{k} = arg();").unwrap();
            }
            args.push(format!("({}) a{k}", t.name()));
        }
        let call = format!("{}({})", callee.symbol, args.join(", "));
        match sig.ret {
            Some(_) => writeln!(c, "            uint64_t r = (uint64_t) {call};").unwrap(),
            None => writeln!(c, "            uint64_t r = 0; {call};").unwrap(),
        }
        writeln!(
            c,
            "            printf(\"{} %d %\" PRIu64, i, r);",
            callee.symbol
        )
        .unwrap();
        if mem {
            c.push_str("            dump();\n");
        }
        c.push_str("            printf(\"\\n\");\n        }\n");
    }
    c.push_str("    }\n");

    for callee in &plan.callees {
        if let Role::SelfAddr = callee.role {
            writeln!(
                c,
                "    printf(\"self {0} %d\\n\", (int) {0}((uint64_t) (uintptr_t) &{0}));",
                callee.symbol
            )
            .unwrap();
        }
    }

    let addrs: Vec<(&Callee, &AddrTarget)> = plan.addr_callees().collect();
    if !addrs.is_empty() {
        writeln!(c, "    uint64_t addr[{}];", addrs.len()).unwrap();
    }
    for (k, (callee, target)) in addrs.iter().enumerate() {
        writeln!(c, "    addr[{k}] = {}();", callee.symbol).unwrap();
        if target.visible {
            writeln!(
                c,
                "    printf(\"addr-c {} %d\\n\", addr[{k}] == (uint64_t) (uintptr_t) &{});",
                callee.symbol, target.symbol
            )
            .unwrap();
        }
        if let Some(sig) = &target.sig
            && sig.ret.is_some()
        {
            let args: Vec<String> = (0..sig.params.len()).map(|j| format!("a{j}")).collect();
            writeln!(c, "    for (int i = 0; i < {}; i++) {{", plan.iterations).unwrap();
            for (j, t) in sig.params.iter().enumerate() {
                writeln!(c, "        {} a{j} = ({}) arg();", t.name(), t.name()).unwrap();
            }
            writeln!(
                c,
                "        {ret} (*fp)({params}) = ({ret} (*)({params})) (uintptr_t) addr[{k}];",
                ret = sig.ret_name(),
                params = sig.param_list()
            )
            .unwrap();
            writeln!(
                c,
                "        printf(\"addr-call {} %d %\" PRIu64 \"\\n\", i, (uint64_t) fp({}));",
                callee.symbol,
                args.join(", ")
            )
            .unwrap();
            c.push_str("    }\n");
        }
    }
    for i in 0..addrs.len() {
        for j in i + 1..addrs.len() {
            writeln!(
                c,
                "    printf(\"addr-eq {} {} %d\\n\", addr[{i}] == addr[{j}]);",
                addrs[i].0.symbol, addrs[j].0.symbol
            )
            .unwrap();
        }
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// The `addr-eq` lines the driver must print for an object: two returned addresses are equal
/// exactly when their targets are the same function, or share section and address in the
/// object (aliases), unless one is overridden by C.
fn expected_addr_eq(
    plan: &DriverPlan,
    bytes: &[u8],
    symbols: &BTreeMap<String, String>,
    override_preemptible: bool,
) -> Vec<String> {
    let file = object::File::parse(bytes).expect("a readable object");
    let syms = text_symbols(&file);
    let location = |t: &AddrTarget| -> Option<Location> {
        if t.visible && plan.overrides(&t.symbol, override_preemptible) {
            return None;
        }
        let symbol = symbols
            .get(&t.name.to_string())
            .unwrap_or_else(|| panic!("the address of {} is taken, yet it has no symbol", t.name));
        Some(syms[symbol].location)
    };
    let addrs: Vec<(&Callee, &AddrTarget)> = plan.addr_callees().collect();
    let mut lines = Vec::new();
    for i in 0..addrs.len() {
        for j in i + 1..addrs.len() {
            let (a, b) = (addrs[i].1, addrs[j].1);
            let equal = a.name == b.name
                || matches!((location(a), location(b)), (Some(x), Some(y)) if x == y);
            lines.push(format!(
                "addr-eq {} {} {}",
                addrs[i].0.symbol,
                addrs[j].0.symbol,
                u8::from(equal)
            ));
        }
    }
    lines
}

// ---------------------------------------------------------------------------------------------
// Compiling, linking, running
// ---------------------------------------------------------------------------------------------

fn run_tool(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {cmd:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles the driver to an object.
fn compile_driver(tc: &Toolchain, dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    let o = dir.join(format!("{name}.o"));
    std::fs::write(&c, source).unwrap();
    run_tool(
        Command::new(tc.cc)
            .arg("-O1")
            .arg("-c")
            .arg(&c)
            .arg("-o")
            .arg(&o),
        &format!("compiling the driver {}", c.display()),
    );
    o
}

/// Links `driver` with the object `bytes` and runs the executable; returns its standard output.
fn link_and_run(tc: &Toolchain, dir: &Path, label: &str, driver: &Path, bytes: &[u8]) -> String {
    let obj = dir.join(format!("{label}.o"));
    let exe = dir.join(label);
    std::fs::write(&obj, bytes).unwrap();
    run_tool(
        Command::new(tc.cc)
            .arg(driver)
            .arg(&obj)
            .arg("-o")
            .arg(&exe),
        &format!("linking {label} (object kept at {})", obj.display()),
    );
    let stdout_path = dir.join(format!("{label}.stdout"));
    let stderr_path = dir.join(format!("{label}.stderr"));
    let mut cmd = match tc.runner.split_first() {
        Some((runner, args)) => {
            let mut cmd = Command::new(runner);
            cmd.args(args).arg(&exe);
            cmd
        }
        None => Command::new(&exe),
    };
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{label}: {cmd:?} ran for more than {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        status.success(),
        "{label}: {cmd:?} failed ({status})\nstderr:\n{stderr}\nlast lines of stdout:\n{}",
        last_lines(&stdout, 10)
    );
    stdout
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Splits a driver's output into its `addr-eq` lines and the rest.
fn split_output(out: &str) -> (Vec<String>, Vec<String>) {
    let (eq, rest): (Vec<&str>, Vec<&str>) = out.lines().partition(|l| l.starts_with("addr-eq "));
    (
        eq.into_iter().map(String::from).collect(),
        rest.into_iter().map(String::from).collect(),
    )
}

fn assert_same_lines(reference: &[String], merged: &[String], context: &str) {
    if reference == merged {
        return;
    }
    let first = reference
        .iter()
        .zip(merged)
        .position(|(a, b)| a != b)
        .unwrap_or(reference.len().min(merged.len()));
    panic!(
        "{context}: the merged build prints something else than the unmerged one \
         ({} lines against {}); first difference at line {}:\n  unmerged: {}\n  merged:   {}",
        reference.len(),
        merged.len(),
        first + 1,
        reference.get(first).map_or("<end>", String::as_str),
        merged.get(first).map_or("<end>", String::as_str),
    );
}

/// The whole proof for one module, mode and architecture: compile, check the symbols, link,
/// run, compare.
/// What a similar merge promises of the object: groups were merged, and in `safe` and `aliases`
/// modes a removed member has no symbol, while every member kept as a thunk has one. Thunks mode
/// removes no member of the input `module` (a shared body of an earlier round may go).
fn check_similar_symbols(module: &ClifModule, built: &Built, mode: Mode) {
    let groups = built.report.similar.as_ref().expect("similar merging ran");
    let file = object::File::parse(&*built.object.bytes).unwrap();
    for member in groups.iter().flat_map(|g| &g.members) {
        let symbol = symbol_name(&member.name);
        let present = has_any_symbol(&file, &symbol);
        match member.by {
            Action::Removed => {
                let input = module.lookup(&member.name).is_some();
                assert!(
                    mode != Mode::Thunks || !input,
                    "{symbol}: thunks mode removes nothing of the input"
                );
                assert!(!present, "{symbol} was removed but has a symbol");
            }
            _ => assert!(present, "{symbol} is a thunk but has no symbol"),
        }
    }
}

fn link_and_run_case(module_name: &str, mode: Mode, arch: Arch) {
    link_and_run_case_with(module_name, mode, arch, None);
}

/// Similar merging forced on every group that fits.
fn forced_similar() -> SimilarOptions {
    SimilarOptions {
        min_saving: i64::MIN,
        ..SimilarOptions::default()
    }
}

/// [`link_and_run_case`] with similar merging: the same runs must print the same, every
/// similar group is in the report, and a removed member has no symbol. (The exact merge's
/// symbol checks do not apply: similar thunks pass constants.)
fn link_and_run_similar_case(module_name: &str, mode: Mode, arch: Arch) {
    link_and_run_case_with(module_name, mode, arch, Some(&forced_similar()));
}

fn link_and_run_case_with(
    module_name: &str,
    mode: Mode,
    arch: Arch,
    similar: Option<&SimilarOptions>,
) {
    let Some(tc) = toolchain(arch) else {
        return;
    };
    let module = load(module_name);
    let plan = plan_driver(&module);
    let dir = tempfile::tempdir().unwrap();
    let mut variants = vec![false];
    if plan.has_preemptible() {
        variants.push(true);
    }
    let drivers: Vec<(bool, PathBuf)> = variants
        .iter()
        .map(|&ov| {
            let name = if ov { "driver_override" } else { "driver" };
            (
                ov,
                compile_driver(&tc, dir.path(), name, &driver_source(&plan, ov)),
            )
        })
        .collect();
    let triple = arch.elf_triple();
    for function_sections in [false, true] {
        let fs = if function_sections { "fs" } else { "nofs" };
        let reference = build_reference(&module, triple, function_sections);
        let built = build_merged_with(&module, mode, triple, function_sections, similar);
        for (ov, driver) in &drivers {
            let variant = if *ov { "override" } else { "plain" };
            let context = format!(
                "{module_name}.clif, --mode {}, --target {triple}, {fs}, {variant} driver",
                mode.keyword()
            );
            let ref_out = link_and_run(
                &tc,
                dir.path(),
                &format!("ref_{fs}_{variant}"),
                driver,
                &reference.bytes,
            );
            let merged_out = link_and_run(
                &tc,
                dir.path(),
                &format!("merged_{fs}_{variant}"),
                driver,
                &built.object.bytes,
            );
            let (ref_eq, ref_rest) = split_output(&ref_out);
            let (merged_eq, merged_rest) = split_output(&merged_out);
            let calls = ref_rest
                .iter()
                .filter(|l| !l.starts_with("addr-c ") && !l.starts_with("self "))
                .count();
            assert!(calls >= MIN_CALLS, "{context}: only {calls} calls");
            assert_same_lines(&ref_rest, &merged_rest, &context);
            for line in &merged_rest {
                // C and the module agree on every address, and `self_*` recognizes its own.
                if line.starts_with("addr-c ") || line.starts_with("self ") {
                    assert!(line.ends_with(" 1"), "{context}: {line}");
                }
            }
            let expected_ref =
                expected_addr_eq(&plan, &reference.bytes, &reference.report.symbols, *ov);
            assert_eq!(ref_eq, expected_ref, "{context}: addresses, unmerged build");
            let expected = expected_addr_eq(
                &plan,
                &built.object.bytes,
                &built.object.report.symbols,
                *ov,
            );
            assert_eq!(merged_eq, expected, "{context}: addresses, merged build");
            if mode != Mode::Aliases {
                // Every symbol keeps its own address: nothing compares equal that did not.
                assert_eq!(merged_eq, ref_eq, "{context}: distinct addresses");
            }
        }
        // The objects behave; now what they say about themselves.
        check_reference(&module, &reference);
        if similar.is_none() {
            check_symbols(&module, &built, mode, arch, function_sections);
        } else {
            check_similar_symbols(&module, &built, mode);
            // The module written for similar merging has a group of every kind.
            let groups = built.report.similar.as_ref().map_or(0, Vec::len);
            assert!(
                module_name != "similar" || groups >= 6,
                "{groups} similar groups"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading objects back
// ---------------------------------------------------------------------------------------------

/// Section (index) and address: where a symbol is.
type Location = (usize, u64);

#[derive(Clone, Debug)]
struct Sym {
    location: Location,
    size: u64,
    scope: SymbolScope,
    weak: bool,
    flags: SymbolFlags<SectionIndex, SymbolIndex>,
}

/// The defined code symbols of an object, by name.
fn text_symbols(file: &object::File) -> BTreeMap<String, Sym> {
    let mut out = BTreeMap::new();
    for s in file.symbols() {
        if !s.is_definition() || s.kind() != SymbolKind::Text {
            continue;
        }
        let name = s.name().expect("a UTF-8 symbol name").to_string();
        let section = s.section_index().expect("a defined symbol has a section");
        let sym = Sym {
            location: (section.0, s.address()),
            size: s.size(),
            scope: s.scope(),
            weak: s.is_weak(),
            flags: s.flags(),
        };
        assert!(
            out.insert(name.clone(), sym).is_none(),
            "symbol {name} defined twice"
        );
    }
    out
}

/// Whether the object has any symbol (defined or not) of that name.
fn has_any_symbol(file: &object::File, name: &str) -> bool {
    file.symbols().any(|s| s.name() == Ok(name))
}

/// The code at a symbol, to the end of its section.
fn code_at<'a>(file: &'a object::File, sym: &Sym) -> &'a [u8] {
    let section = file.section_by_index(SectionIndex(sym.location.0)).unwrap();
    let data = section.data().unwrap();
    let offset = (sym.location.1 - section.address()) as usize;
    &data[offset..]
}

/// Where the direct branch at `offset` (relative to the symbol) of the code at `sym` goes, if
/// there is such a relocation.
fn branch_target(file: &object::File, arch: Arch, sym: &Sym, offset: u64) -> Option<Location> {
    let section = file.section_by_index(SectionIndex(sym.location.0)).unwrap();
    let at = sym.location.1 - section.address() + offset;
    let (_, reloc) = section.relocations().find(|(o, _)| *o == at)?;
    assert!(
        arch.is_branch_reloc(reloc.flags()),
        "the relocation at {at:#x} is not a branch: {:?}",
        reloc.flags()
    );
    match reloc.target() {
        RelocationTarget::Symbol(i) => {
            let target = file.symbol_by_index(i).unwrap();
            Some((target.section_index()?.0, target.address()))
        }
        other => panic!("a thunk's relocation names {other:?}, not a symbol"),
    }
}

fn is_thunk(file: &object::File, arch: Arch, sym: &Sym, elf: bool) -> bool {
    arch.is_jump(code_at(file, sym))
        && (!elf || sym.size == arch.thunk_len())
        && branch_target(file, arch, sym, arch.thunk_reloc_offset()).is_some()
}

/// The locations of the symbols that the code at `location` refers to by relocation, after
/// following thunks: the code runs from `location` to the next symbol or the section's end.
fn addresses_used_by_code(
    file: &object::File,
    arch: Arch,
    syms: &BTreeMap<String, Sym>,
    mut location: Location,
) -> BTreeSet<Location> {
    let elf = file.format() == object::BinaryFormat::Elf;
    for _ in 0..=syms.len() {
        let sym = syms
            .values()
            .find(|s| s.location == location)
            .expect("a symbol at the location");
        if !is_thunk(file, arch, sym, elf) {
            break;
        }
        location = branch_target(file, arch, sym, arch.thunk_reloc_offset()).unwrap();
    }
    let section = file.section_by_index(SectionIndex(location.0)).unwrap();
    let end = syms
        .values()
        .map(|s| s.location)
        .filter(|l| l.0 == location.0 && l.1 > location.1)
        .map(|l| l.1)
        .min()
        .unwrap_or(section.address() + section.size());
    let mut used = BTreeSet::new();
    for (offset, reloc) in section.relocations() {
        let at = section.address() + offset;
        if at < location.1 || at >= end {
            continue;
        }
        if let RelocationTarget::Symbol(i) = reloc.target() {
            let target = file.symbol_by_index(i).unwrap();
            if let Some(section) = target.section_index() {
                used.insert((section.0, target.address()));
            }
        }
    }
    used
}

/// Asserts that `sym` is a minimal thunk jumping to `target`.
fn check_thunk(
    file: &object::File,
    syms: &BTreeMap<String, Sym>,
    arch: Arch,
    name: &str,
    target: Option<Location>,
    function_sections: bool,
) {
    let sym = &syms[name];
    let elf = file.format() == object::BinaryFormat::Elf;
    let code = code_at(file, sym);
    assert!(
        arch.is_jump(code),
        "{name}: a thunk starts with a jump: {:02x?}",
        &code[..4.min(code.len())]
    );
    let to = branch_target(file, arch, sym, arch.thunk_reloc_offset())
        .unwrap_or_else(|| panic!("{name}: the jump has no relocation"));
    if let Some(target) = target {
        assert_eq!(to, target, "{name}: the thunk jumps to the kept function");
    }
    assert_eq!(
        sym.location.1 % arch.thunk_align(),
        0,
        "{name}: thunk alignment"
    );
    if elf {
        assert_eq!(sym.size, arch.thunk_len(), "{name}: thunk symbol size");
        let section = file.section_by_index(SectionIndex(sym.location.0)).unwrap();
        if function_sections {
            assert_eq!(
                section.size(),
                arch.thunk_len(),
                "{name}: thunk section size"
            );
            assert_eq!(
                section.align(),
                arch.thunk_align(),
                "{name}: thunk section alignment"
            );
        } else {
            // No padding before a thunk: the code before it ends where it starts.
            let previous_end = syms
                .values()
                .filter(|s| s.location.0 == sym.location.0 && s.location.1 < sym.location.1)
                .map(|s| s.location.1 + s.size)
                .max()
                .unwrap_or(section.address());
            assert_eq!(
                previous_end, sym.location.1,
                "{name}: padding before a thunk"
            );
        }
    }
}

/// Binding and visibility for a linkage.
fn check_binding(name: &str, sym: &Sym, linkage: SymbolLinkage) {
    let (scope, weak) = match linkage {
        SymbolLinkage::Export => (SymbolScope::Dynamic, false),
        SymbolLinkage::Hidden => (SymbolScope::Linkage, false),
        SymbolLinkage::Local => (SymbolScope::Compilation, false),
        SymbolLinkage::Preemptible => (SymbolScope::Dynamic, true),
        SymbolLinkage::LinkOnce => (SymbolScope::Linkage, true),
    };
    assert_eq!(sym.scope, scope, "{name} ({linkage:?}): symbol scope");
    assert_eq!(sym.weak, weak, "{name} ({linkage:?}): weak binding");
}

/// The unmerged object: every function has its symbol, and nothing is folded.
fn check_reference(module: &ClifModule, reference: &ObjectOutput) {
    let r = &reference.report;
    assert_eq!(
        (r.removed, r.folded_machine_code),
        (0, 0),
        "reference report"
    );
    assert_eq!(r.aliases, module.aliases().len(), "reference aliases");
    let file = object::File::parse(&*reference.bytes).unwrap();
    let syms = text_symbols(&file);
    let prefix = symbol_prefix(&file);
    for (name, linkage, _) in input_names(module) {
        let symbol = format!("{prefix}{}", symbol_name(&name));
        let sym = syms
            .get(&symbol)
            .unwrap_or_else(|| panic!("reference: {name} has no symbol"));
        check_binding(&symbol, sym, linkage);
    }
}

fn symbol_prefix(file: &object::File) -> &'static str {
    if file.format() == object::BinaryFormat::MachO {
        "_"
    } else {
        ""
    }
}

/// Every symbol fact of a merged object.
fn check_symbols(
    original: &ClifModule,
    built: &Built,
    mode: Mode,
    arch: Arch,
    function_sections: bool,
) {
    let report = &built.object.report;
    let file = object::File::parse(&*built.object.bytes).expect("a readable object");
    let elf = file.format() == object::BinaryFormat::Elf;
    assert_eq!(report.format, if elf { "elf" } else { "macho" });
    let prefix = symbol_prefix(&file);
    let syms = text_symbols(&file);
    let actions = ir_actions(&built.report);
    let refs = ModuleRefs::of(original);
    let location_of = |clif_name: &str| -> Location {
        let symbol = report
            .symbols
            .get(clif_name)
            .unwrap_or_else(|| panic!("{clif_name} has no symbol"));
        syms[symbol].location
    };

    // The report's symbol map is exactly the object's code symbols.
    let reported: BTreeSet<&String> = report.symbols.values().collect();
    let present: BTreeSet<&String> = syms.keys().collect();
    assert_eq!(reported, present, "report symbols against object symbols");

    let mut without_symbol = 0;
    for (name, linkage, is_alias) in input_names(original) {
        let clif = name.to_string();
        let symbol = format!("{prefix}{}", symbol_name(&name));
        match report.symbols.get(&clif) {
            None => {
                // Removed: no symbol at all, and only a local nobody takes the address of.
                without_symbol += 1;
                assert!(
                    !has_any_symbol(&file, &symbol),
                    "{clif} was removed, yet the object has a symbol {symbol}"
                );
                let id = original.resolve(&name).unwrap();
                assert!(
                    !is_alias
                        && linkage == SymbolLinkage::Local
                        && !refs.address_taken(id)
                        && mode != Mode::Thunks,
                    "{clif} ({linkage:?}) has no symbol in mode {mode:?}"
                );
            }
            Some(s) => {
                assert_eq!(s, &symbol, "{clif}: symbol name");
                check_binding(&symbol, &syms[s], linkage);
            }
        }
        match actions.get(&clif) {
            None => {}
            Some((Action::Removed, _)) => {
                assert!(!report.symbols.contains_key(&clif), "{clif} was removed");
            }
            Some((Action::Alias, kept)) => {
                let sym = &syms[&symbol];
                let target = &syms[&report.symbols[kept]];
                assert_eq!(
                    sym.location, target.location,
                    "{clif} is an alias of {kept}"
                );
                assert_eq!(
                    sym.size, target.size,
                    "{clif}: an alias has its target's size"
                );
                if !elf {
                    let SymbolFlags::MachO { n_desc } = sym.flags else {
                        panic!("{clif}: Mach-O flags expected")
                    };
                    assert_ne!(
                        n_desc & object::macho::N_ALT_ENTRY,
                        0,
                        "{clif}: a Mach-O alias is N_ALT_ENTRY"
                    );
                }
            }
            Some((Action::Thunk, kept)) => {
                check_thunk(
                    &file,
                    &syms,
                    arch,
                    &symbol,
                    // The kept function may itself have been folded away (machine code equal
                    // to another's); the thunk then jumps to that one.
                    report.symbols.get(kept).map(|_| location_of(kept)),
                    function_sections,
                );
            }
        }
    }
    assert_eq!(report.removed, without_symbol, "report: removed");

    // Names the merge made (private copies of preemptible classes) are local.
    let inputs: BTreeSet<String> = input_names(original)
        .iter()
        .map(|(n, _, _)| n.to_string())
        .collect();
    for (clif, symbol) in &report.symbols {
        if !inputs.contains(clif) {
            check_binding(symbol, &syms[symbol], SymbolLinkage::Local);
        }
    }

    // Aliases: every symbol beyond the first at a location. Outside aliases mode only the
    // input's own aliases may share an address.
    let locations: BTreeSet<Location> = syms.values().map(|s| s.location).collect();
    assert_eq!(
        report.aliases,
        syms.len() - locations.len(),
        "report: aliases against symbols sharing an address"
    );
    if mode != Mode::Aliases {
        assert_eq!(
            report.aliases,
            original.aliases().len(),
            "{mode:?}: only the input's aliases share an address"
        );
    }

    // Thunks: distinct locations whose code is one jump; each is minimal.
    let mut thunk_locations = BTreeSet::new();
    for (name, sym) in &syms {
        if is_thunk(&file, arch, sym, elf) {
            check_thunk(&file, &syms, arch, name, None, function_sections);
            thunk_locations.insert(sym.location);
        }
    }
    assert_eq!(report.thunks, thunk_locations.len(), "report: thunks");
    let compiled: BTreeSet<Location> = locations.difference(&thunk_locations).copied().collect();
    assert_eq!(
        report.functions_compiled,
        compiled.len(),
        "report: functions compiled"
    );

    // Outside aliases mode every symbol keeps its own address, so the code that runs for a
    // function using `func_addr` of g must take the address of g's own symbol (folding must not
    // hand it the address of a function with the same code).
    if mode != Mode::Aliases {
        let mut wrong = Vec::new();
        for f in built.merged.functions() {
            let Some(symbol) = report.symbols.get(&f.name.to_string()) else {
                continue;
            };
            let used = addresses_used_by_code(&file, arch, &syms, syms[symbol].location);
            for target in FunctionRefs::of(&built.merged, &f.func).addresses.iter() {
                let Some(target_symbol) = report.symbols.get(&target.to_string()) else {
                    continue;
                };
                if !used.contains(&syms[target_symbol].location) {
                    wrong.push(format!(
                        "{} uses the address of {target}, but the code its symbol {symbol} runs \
                         refers to no symbol at {target_symbol}'s address",
                        f.name
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "{mode:?}: {}", wrong.join("; "));
    }

    // .llvm_addrsig: on ELF with function sections, linked to the symbol table, listing every
    // function whose address the merged module takes.
    if elf {
        check_addrsig(
            &built.object.bytes,
            &built.merged,
            report,
            function_sections,
        );
    }
}

fn check_addrsig(
    bytes: &[u8],
    merged: &ClifModule,
    report: &clif_merge::emit::object::ObjectReport,
    function_sections: bool,
) {
    let file = object::File::parse(bytes).unwrap();
    let Some(section) = file.section_by_name(".llvm_addrsig") else {
        assert!(
            !function_sections,
            "no .llvm_addrsig with --function-sections"
        );
        return;
    };
    assert!(
        function_sections,
        ".llvm_addrsig without --function-sections"
    );
    let elf = ElfFile64::<Endianness>::parse(bytes).unwrap();
    let symtab = elf.section_by_name(".symtab").unwrap().index();
    let addrsig = elf.section_by_name(".llvm_addrsig").unwrap();
    let link = addrsig.elf_section_header().sh_link(elf.endian());
    assert_eq!(link as usize, symtab.0, ".llvm_addrsig links to .symtab");
    let mut listed = BTreeSet::new();
    let data = section.data().unwrap();
    let mut k = 0;
    while k < data.len() {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = data[k];
            k += 1;
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let sym = file.symbol_by_index(SymbolIndex(value as usize)).unwrap();
        listed.insert(sym.name().unwrap().to_string());
    }
    for f in merged.functions() {
        for name in FunctionRefs::of(merged, &f.func).addresses.iter() {
            if let Some(symbol) = report.symbols.get(&name.to_string()) {
                assert!(
                    listed.contains(symbol),
                    "{symbol}: its address is taken, yet .llvm_addrsig does not list it \
                     (lists {listed:?})"
                );
            }
        }
    }
}

/// Mach-O: the objects of every configuration parsed back and checked like ELF ones.
fn macho_case(module_name: &str, mode: Mode, arch: Arch) {
    let module = load(module_name);
    let triple = arch.macho_triple();
    for function_sections in [false, true] {
        let reference = build_reference(&module, triple, function_sections);
        assert_eq!(reference.report.format, "macho");
        check_reference(&module, &reference);
        let built = build_merged(&module, mode, triple, function_sections);
        check_symbols(&module, &built, mode, arch, function_sections);
        // Every symbol of a Mach-O object has the `_` prefix.
        for symbol in built.object.report.symbols.values() {
            assert!(symbol.starts_with('_'), "{symbol}: Mach-O prefix");
        }
    }
}

/// The folding module really folds machine code.
fn assert_folds(module_name: &str, mode: Mode, triple: &str) {
    let module = load(module_name);
    for function_sections in [false, true] {
        let built = build_merged(&module, mode, triple, function_sections);
        assert!(
            built.object.report.folded_machine_code > 0,
            "{module_name}, {mode:?}, {triple}: nothing folded"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// readelf and nm
// ---------------------------------------------------------------------------------------------

/// One line of `readelf -sW`.
#[derive(Clone, Debug)]
struct ReadelfSym {
    value: u64,
    size: u64,
    kind: String,
    bind: String,
    vis: String,
    ndx: String,
}

fn tool_output(cmd: &str, args: &[&str], path: &Path) -> String {
    let out = Command::new(cmd)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?} failed: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn readelf_symbols(path: &Path) -> BTreeMap<String, Vec<ReadelfSym>> {
    let text = tool_output("readelf", &["-sW"], path);
    let mut out: BTreeMap<String, Vec<ReadelfSym>> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if fields.len() != 8 || !fields[0].ends_with(':') || fields[0] == "Num:" {
            continue;
        }
        let size = fields[2]
            .strip_prefix("0x")
            .map_or_else(|| fields[2].parse(), |h| u64::from_str_radix(h, 16))
            .unwrap();
        out.entry(fields[7].to_string())
            .or_default()
            .push(ReadelfSym {
                value: u64::from_str_radix(fields[1], 16).unwrap(),
                size,
                kind: fields[3].to_string(),
                bind: fields[4].to_string(),
                vis: fields[5].to_string(),
                ndx: fields[6].to_string(),
            });
    }
    out
}

/// `readelf -SW`: section index -> (size, alignment).
fn readelf_sections(path: &Path) -> BTreeMap<String, (u64, u64)> {
    let text = tool_output("readelf", &["-SW"], path);
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('[') else {
            continue;
        };
        let Some((index, rest)) = rest.split_once(']') else {
            continue;
        };
        let index = index.trim();
        if index.parse::<u32>().is_err() {
            continue;
        }
        // Name Type Address Off Size ES [Flg] Lk Inf Al
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 9 {
            continue;
        }
        let size = u64::from_str_radix(fields[4], 16).unwrap();
        let align: u64 = fields[fields.len() - 1].parse().unwrap();
        out.insert(index.to_string(), (size, align));
    }
    out
}

/// `nm`: name -> (value, letter) for defined symbols.
fn nm_symbols(path: &Path) -> BTreeMap<String, Vec<(u64, char)>> {
    let text = tool_output("nm", &[], path);
    let mut out: BTreeMap<String, Vec<(u64, char)>> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 3 {
            continue;
        }
        let letter = fields[1].chars().next().unwrap();
        out.entry(fields[2].to_string())
            .or_default()
            .push((u64::from_str_radix(fields[0], 16).unwrap(), letter));
    }
    out
}

/// The facts of `check_symbols`, seen by binutils: derived from the merge report and the
/// linkages alone.
fn binutils_case(module_name: &str, mode: Mode, arch: Arch) {
    let module = load(module_name);
    let dir = tempfile::tempdir().unwrap();
    let built = build_merged(&module, mode, arch.elf_triple(), true);
    let path = dir.path().join(format!("{module_name}.o"));
    std::fs::write(&path, &built.object.bytes).unwrap();
    let readelf = readelf_symbols(&path);
    let sections = readelf_sections(&path);
    let nm = nm_symbols(&path);
    let actions = ir_actions(&built.report);
    let one = |name: &str| -> &ReadelfSym {
        let v = readelf
            .get(name)
            .unwrap_or_else(|| panic!("readelf: no symbol {name}"));
        assert_eq!(v.len(), 1, "readelf: {name} once");
        &v[0]
    };
    let context = format!("{module_name}.clif, {mode:?}, {}", arch.elf_triple());
    let mut checked = [0usize; 3];
    for (name, linkage, _) in input_names(&module) {
        let clif = name.to_string();
        let symbol = symbol_name(&name);
        if let Some((Action::Removed, _)) = actions.get(&clif) {
            assert!(
                !readelf.contains_key(&symbol),
                "{context}: removed {symbol} in readelf"
            );
            assert!(
                !nm.contains_key(&symbol),
                "{context}: removed {symbol} in nm"
            );
            checked[0] += 1;
            continue;
        }
        if !built.object.report.symbols.contains_key(&clif) {
            assert!(!readelf.contains_key(&symbol) && !nm.contains_key(&symbol));
            continue;
        }
        let s = one(&symbol);
        assert_eq!(s.kind, "FUNC", "{context}: {symbol} type");
        let (bind, vis, letter) = match linkage {
            SymbolLinkage::Export => ("GLOBAL", "DEFAULT", 'T'),
            SymbolLinkage::Hidden => ("GLOBAL", "HIDDEN", 'T'),
            SymbolLinkage::Local => ("LOCAL", "DEFAULT", 't'),
            SymbolLinkage::Preemptible => ("WEAK", "DEFAULT", 'W'),
            SymbolLinkage::LinkOnce => ("WEAK", "HIDDEN", 'W'),
        };
        assert_eq!(
            (s.bind.as_str(), s.vis.as_str()),
            (bind, vis),
            "{context}: {symbol} binding"
        );
        let nm_entry = &nm[&symbol];
        assert_eq!(nm_entry.len(), 1, "{context}: nm lists {symbol} once");
        assert_eq!(nm_entry[0], (s.value, letter), "{context}: nm {symbol}");
        match actions.get(&clif) {
            Some((Action::Thunk, _)) => {
                assert_eq!(
                    s.size,
                    arch.thunk_len(),
                    "{context}: readelf size of thunk {symbol}"
                );
                let (size, align) = sections[&s.ndx];
                assert_eq!(
                    (size, align),
                    (arch.thunk_len(), arch.thunk_align()),
                    "{context}: readelf section of thunk {symbol}"
                );
                checked[1] += 1;
            }
            Some((Action::Alias, kept)) => {
                let kept_symbol = &built.object.report.symbols[kept];
                let k = one(kept_symbol);
                assert_eq!(
                    (s.value, &s.ndx, s.size),
                    (k.value, &k.ndx, k.size),
                    "{context}: alias {symbol} of {kept_symbol}"
                );
                assert_eq!(
                    nm[&symbol][0].0, nm[kept_symbol][0].0,
                    "{context}: nm alias"
                );
                checked[2] += 1;
            }
            _ => {}
        }
    }
    match mode {
        Mode::Aliases => assert!(checked[2] > 0, "{context}: no alias checked"),
        _ => assert!(checked[1] > 0, "{context}: no thunk checked"),
    }
}

fn binutils_present() -> bool {
    require_tools(
        "reading objects with binutils",
        &[("readelf", "binutils"), ("nm", "binutils")],
    )
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

/// The driver of `similar_holes.clif`: it defines the imports the module calls (`ext_log`
/// keeps state and `ext_report` prints, so the order of calls shows) and calls every function
/// on edge values, in a fixed order.
const SIMILAR_HOLES_DRIVER: &str = r#"/* Generated by tests/objects.rs. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

uint64_t imp_0(uint64_t), imp_1(uint64_t), imp_2(uint64_t), mix_a(uint64_t), mix_b(uint64_t);
uint64_t slot_a(uint64_t), slot_b(uint64_t), gvn_zero(uint64_t), gvn_one(uint64_t);
uint64_t rec_self(uint64_t, uint64_t), rec_other(uint64_t, uint64_t);

uint64_t ext_0(uint64_t x) { return x * 3 + 1; }
uint64_t ext_1(uint64_t x) { return x ^ 0x5a5a; }
uint64_t ext_2(uint64_t x) { return (x << 7) - x; }
static uint64_t logged = 11;
uint64_t ext_log(uint64_t x) { logged = logged * 31 + x; return logged; }
uint64_t ext_report(uint32_t code, uint64_t x) {
    printf("report %u %016" PRIx64 "\n", code, x);
    return x + code;
}

static void show(const char *what, uint64_t a, uint64_t r) {
    printf("%s %016" PRIx64 " %016" PRIx64 "\n", what, a, r);
}

int main(void) {
    const uint64_t args[] = {0, 1, (uint64_t) -1, 7, 1000, (uint64_t) INT64_MIN, INT64_MAX,
                             0x123456789u};
    for (unsigned i = 0; i < sizeof args / sizeof args[0]; i++) {
        uint64_t a = args[i];
        show("imp_0", a, imp_0(a));
        show("imp_1", a, imp_1(a));
        show("imp_2", a, imp_2(a));
        show("mix_a", a, mix_a(a));
        show("mix_b", a, mix_b(a));
        show("slot_a", a, slot_a(a));
        show("slot_b", a, slot_b(a));
        show("gvn_zero", a, gvn_zero(a));
        show("gvn_one", a, gvn_one(a));
        for (uint64_t d = 0; d < 4; d++) {
            show("rec_self", a, rec_self(d, a));
            show("rec_other", a, rec_other(d, a));
        }
    }
    return 0;
}
"#;

/// `similar_holes.clif` (imports as callees, constants GVN shared, a self-call against another
/// callee) with similar merging forced, in every mode, linked into an executable and, as a
/// shared library, into an executable that defines its imports: each prints what the unmerged
/// module prints. A thunk that took an import's address PC-relative would not link into the
/// shared library.
fn similar_holes_link_and_run(arch: Arch) {
    let Some(tc) = toolchain(arch) else {
        return;
    };
    let module = load("similar_holes");
    let dir = tempfile::tempdir().unwrap();
    let driver = compile_driver(&tc, dir.path(), "driver", SIMILAR_HOLES_DRIVER);
    let triple = arch.elf_triple();
    let reference = build_reference(&module, triple, false);
    let expected = link_and_run(&tc, dir.path(), "ref", &driver, &reference.bytes);
    assert!(expected.lines().count() >= 100, "the driver ran");
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let built = build_merged_with(&module, mode, triple, false, Some(&forced_similar()));
        let groups = built.report.similar.as_ref().map_or(0, Vec::len);
        assert_eq!(groups, 5, "{}: every family merged", mode.keyword());
        let label = format!("merged_{}", mode.keyword());
        let out = link_and_run(&tc, dir.path(), &label, &driver, &built.object.bytes);
        assert_eq!(out, expected, "{label}: {triple}");
        let out = link_shared_and_run(&tc, dir.path(), &label, &driver, &built.object.bytes);
        assert_eq!(out, expected, "{label}: {triple}, as a shared library");
    }
}

/// The driver of `similar_stack.clif`: it defines the imports and the messages the module
/// refers to and calls every exported function on edge values, in a fixed order.
const SIMILAR_STACK_DRIVER: &str = r#"/* Generated by tests/objects.rs. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

uint64_t calls_a(uint64_t), calls_b(uint64_t), errors_x(uint64_t), errors_y(uint64_t);
uint64_t call_locals(uint64_t), via_tail_a(uint64_t), via_tail_b(uint64_t);
double float_a(double), float_b(double);

uint64_t ext_0(uint64_t x) { return x * 3 + 1; }
uint64_t ext_1(uint64_t x) { return x ^ 0x5a5a; }
uint64_t ext_2(uint64_t x) { return (x << 7) - x; }
const char msg_x0[] = "x0-abcdef", msg_x1[] = "x1-ghijkl", msg_x2[] = "x2-mnopqr";
const char msg_x3[] = "x3-stuvwx", msg_y0[] = "y0-ABCDEF", msg_y1[] = "y1-GHIJKL";
const char msg_y2[] = "y2-MNOPQR", msg_y3[] = "y3-STUVWX";
uint64_t ext_error(const char *msg, uint64_t len, uint64_t x) {
    printf("error %.*s %016" PRIx64 "\n", (int) len, msg, x);
    return x * 31 + len;
}

static void show(const char *what, uint64_t a, uint64_t r) {
    printf("%s %016" PRIx64 " %016" PRIx64 "\n", what, a, r);
}

int main(void) {
    const uint64_t args[] = {0, 1, (uint64_t) -1, 7, 1000, (uint64_t) INT64_MIN, INT64_MAX,
                             0x123456789u};
    const double floats[] = {0.0, -1.5, 3.25, 1e10, -7.0};
    for (unsigned i = 0; i < sizeof args / sizeof args[0]; i++) {
        uint64_t a = args[i];
        show("calls_a", a, calls_a(a));
        show("calls_b", a, calls_b(a));
        show("errors_x", a, errors_x(a));
        show("errors_y", a, errors_y(a));
        show("call_locals", a, call_locals(a));
        show("via_tail_a", a, via_tail_a(a));
        show("via_tail_b", a, via_tail_b(a));
    }
    for (unsigned i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        printf("float_a %a %a\n", floats[i], float_a(floats[i]));
        printf("float_b %a %a\n", floats[i], float_b(floats[i]));
    }
    return 0;
}
"#;

/// `similar_stack.clif` (groups that add 8 to 20 parameters: ten callees and ten constants of
/// mixed types, four messages and their lengths, removed local members and their caller, `tail`
/// thunks, ten `f64` constants) with similar merging forced, in every mode, linked into an
/// executable and, as a shared library, into an executable that defines its imports: each
/// prints what the unmerged module prints, and every group passes stack arguments.
fn similar_stack_link_and_run(arch: Arch) {
    let Some(tc) = toolchain(arch) else {
        return;
    };
    let module = load("similar_stack");
    let dir = tempfile::tempdir().unwrap();
    let driver = compile_driver(&tc, dir.path(), "driver", SIMILAR_STACK_DRIVER);
    let triple = arch.elf_triple();
    let reference = build_reference(&module, triple, false);
    let expected = link_and_run(&tc, dir.path(), "ref", &driver, &reference.bytes);
    assert!(expected.lines().count() >= 80, "the driver ran");
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let built = build_merged_with(&module, mode, triple, false, Some(&forced_similar()));
        let mut parameters: Vec<usize> = (built.report.similar.iter().flatten())
            .map(|g| g.parameters)
            .collect();
        parameters.sort();
        assert_eq!(
            parameters,
            [8, 9, 9, 10, 20],
            "{}: every group merged, whole",
            mode.keyword()
        );
        let label = format!("stack_{}", mode.keyword());
        let out = link_and_run(&tc, dir.path(), &label, &driver, &built.object.bytes);
        assert_eq!(out, expected, "{label}: {triple}");
        let out = link_shared_and_run(&tc, dir.path(), &label, &driver, &built.object.bytes);
        assert_eq!(out, expected, "{label}: {triple}, as a shared library");
    }
}

/// Links `bytes` into the shared library `lib{label}.so` and `driver` against it (exporting
/// the driver's functions to it), runs the program and returns its standard output.
fn link_shared_and_run(
    tc: &Toolchain,
    dir: &Path,
    label: &str,
    driver: &Path,
    bytes: &[u8],
) -> String {
    let obj = dir.join(format!("{label}_pic.o"));
    std::fs::write(&obj, bytes).unwrap();
    let lib = dir.join(format!("lib{label}.so"));
    run_tool(
        Command::new(tc.cc)
            .arg("-shared")
            .arg(&obj)
            .arg("-o")
            .arg(&lib),
        &format!(
            "linking {} (object kept at {})",
            lib.display(),
            obj.display()
        ),
    );
    let exe = dir.join(format!("{label}_shared"));
    run_tool(
        Command::new(tc.cc)
            .arg(driver)
            .arg(&lib)
            .arg("-rdynamic")
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-o")
            .arg(&exe),
        &format!("linking {} against {}", exe.display(), lib.display()),
    );
    let mut cmd = match tc.runner.split_first() {
        Some((runner, args)) => {
            let mut cmd = Command::new(runner);
            cmd.args(args).arg(&exe);
            cmd
        }
        None => Command::new(&exe),
    };
    let output = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "{label}: {cmd:?} failed ({})\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// What passing an import's address costs against a module function's, compiled (not reasoned
/// about): the similar cost model charges every callee parameter `per_argument` at each call,
/// whether it names a module function or an import.
/// - Under PIC (how objects are written unless `--set is_pic=false`) an import's address is a
///   GOT load, exactly as large as a module function's PC-relative address (x86_64: 7 bytes
///   each, aarch64: `adrp` + `ldr` against `adrp` + `add`).
/// - Without PIC it is an absolute relocation, which costs more (x86_64 `movabs`: 3 bytes,
///   aarch64 a literal: 8), but then each member's direct call of the import costs at least
///   that much more than a call of a module function, which the shared body's `call_indirect`
///   does not pay: a group that differs in imports saves at least what the same group differing
///   in module functions does, so the model's equal charge never over-estimates it.
#[test]
fn an_imports_address_costs_what_a_module_functions_does() {
    let text = "
        function %callee_mod(i64) -> i64 system_v {
        block0(v0: i64):
            return v0
        }
        function %addr_mod() -> i64 system_v {
            sig0 = (i64) -> i64 system_v
            fn0 = colocated %callee_mod sig0
        block0:
            v0 = func_addr.i64 fn0
            return v0
        }
        function %addr_imp() -> i64 system_v {
            sig0 = (i64) -> i64 system_v
            fn0 = %ext sig0
        block0:
            v0 = func_addr.i64 fn0
            return v0
        }
        function %call_mod(i64) -> i64 system_v {
            sig0 = (i64) -> i64 system_v
            fn0 = colocated %callee_mod sig0
        block0(v0: i64):
            v1 = call fn0(v0)
            v2 = iadd v1, v0
            return v2
        }
        function %call_imp(i64) -> i64 system_v {
            sig0 = (i64) -> i64 system_v
            fn0 = %ext sig0
        block0(v0: i64):
            v1 = call fn0(v0)
            v2 = iadd v1, v0
            return v2
        }";
    let module = clif_merge::read::read_module_text(
        Path::new("addresses.clif"),
        text,
        ReadOptions::default(),
    )
    .unwrap();
    for (arch, absolute_extra) in [(Arch::X86_64, 3), (Arch::Aarch64, 8)] {
        for pic in [true, false] {
            let mut options = options(arch.elf_triple(), Mode::Safe, false, false);
            if !pic {
                options.isa.flags.push("is_pic=false".into());
            }
            let object = write_object(&module, 0, &options).unwrap();
            let file = object::File::parse(&*object.bytes).unwrap();
            let symbols = text_symbols(&file);
            let size = |name: &str| symbols[name].size as i64;
            let context = format!("{}, is_pic={pic}", arch.elf_triple());
            let address_extra = size("addr_imp") - size("addr_mod");
            let call_extra = size("call_imp") - size("call_mod");
            if pic {
                assert_eq!(address_extra, 0, "{context}: a GOT load");
            } else {
                assert_eq!(
                    address_extra, absolute_extra,
                    "{context}: an absolute address"
                );
            }
            assert!(
                call_extra >= address_extra,
                "{context}: a direct call of an import costs {call_extra} bytes more"
            );
        }
    }
}

macro_rules! cases {
    ($($(#[$attr:meta])* $name:ident => $body:expr;)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                $body
            }
        )*
    };
}

cases! {
    similar_safe_x86_64 => link_and_run_similar_case("similar", Mode::Safe, Arch::X86_64);
    similar_safe_aarch64 => link_and_run_similar_case("similar", Mode::Safe, Arch::Aarch64);
    similar_aliases_x86_64 => link_and_run_similar_case("similar", Mode::Aliases, Arch::X86_64);
    similar_aliases_aarch64 => link_and_run_similar_case("similar", Mode::Aliases, Arch::Aarch64);
    similar_thunks_x86_64 => link_and_run_similar_case("similar", Mode::Thunks, Arch::X86_64);
    similar_thunks_aarch64 => link_and_run_similar_case("similar", Mode::Thunks, Arch::Aarch64);
    recursion_similar_safe_x86_64 => link_and_run_similar_case("recursion", Mode::Safe, Arch::X86_64);
    recursion_similar_aliases_aarch64 => link_and_run_similar_case("recursion", Mode::Aliases, Arch::Aarch64);
    duplicates_similar_safe_x86_64 => link_and_run_similar_case("duplicates", Mode::Safe, Arch::X86_64);
    tail_similar_safe_aarch64 => link_and_run_similar_case("tail", Mode::Safe, Arch::Aarch64);
    similar_rewrites_safe_x86_64 => link_and_run_similar_case("similar_rewrites", Mode::Safe, Arch::X86_64);
    similar_rewrites_safe_aarch64 => link_and_run_similar_case("similar_rewrites", Mode::Safe, Arch::Aarch64);
    similar_rewrites_thunks_x86_64 => link_and_run_similar_case("similar_rewrites", Mode::Thunks, Arch::X86_64);
    similar_holes_x86_64 => similar_holes_link_and_run(Arch::X86_64);
    similar_holes_aarch64 => similar_holes_link_and_run(Arch::Aarch64);
    similar_stack_x86_64 => similar_stack_link_and_run(Arch::X86_64);
    similar_stack_aarch64 => similar_stack_link_and_run(Arch::Aarch64);
    duplicates_safe_x86_64 => link_and_run_case("duplicates", Mode::Safe, Arch::X86_64);
    duplicates_safe_aarch64 => link_and_run_case("duplicates", Mode::Safe, Arch::Aarch64);
    duplicates_safe_macho_x86_64 => macho_case("duplicates", Mode::Safe, Arch::X86_64);
    duplicates_safe_macho_aarch64 => macho_case("duplicates", Mode::Safe, Arch::Aarch64);
    duplicates_aliases_x86_64 => link_and_run_case("duplicates", Mode::Aliases, Arch::X86_64);
    duplicates_aliases_aarch64 => link_and_run_case("duplicates", Mode::Aliases, Arch::Aarch64);
    duplicates_aliases_macho_x86_64 => macho_case("duplicates", Mode::Aliases, Arch::X86_64);
    duplicates_aliases_macho_aarch64 => macho_case("duplicates", Mode::Aliases, Arch::Aarch64);
    duplicates_thunks_x86_64 => link_and_run_case("duplicates", Mode::Thunks, Arch::X86_64);
    duplicates_thunks_aarch64 => link_and_run_case("duplicates", Mode::Thunks, Arch::Aarch64);
    duplicates_thunks_macho_x86_64 => macho_case("duplicates", Mode::Thunks, Arch::X86_64);
    duplicates_thunks_macho_aarch64 => macho_case("duplicates", Mode::Thunks, Arch::Aarch64);

    recursion_safe_x86_64 => link_and_run_case("recursion", Mode::Safe, Arch::X86_64);
    recursion_safe_aarch64 => link_and_run_case("recursion", Mode::Safe, Arch::Aarch64);
    recursion_safe_macho_x86_64 => macho_case("recursion", Mode::Safe, Arch::X86_64);
    recursion_safe_macho_aarch64 => macho_case("recursion", Mode::Safe, Arch::Aarch64);
    recursion_aliases_x86_64 => link_and_run_case("recursion", Mode::Aliases, Arch::X86_64);
    recursion_aliases_aarch64 => link_and_run_case("recursion", Mode::Aliases, Arch::Aarch64);
    recursion_aliases_macho_x86_64 => macho_case("recursion", Mode::Aliases, Arch::X86_64);
    recursion_aliases_macho_aarch64 => macho_case("recursion", Mode::Aliases, Arch::Aarch64);
    recursion_thunks_x86_64 => link_and_run_case("recursion", Mode::Thunks, Arch::X86_64);
    recursion_thunks_aarch64 => link_and_run_case("recursion", Mode::Thunks, Arch::Aarch64);
    recursion_thunks_macho_x86_64 => macho_case("recursion", Mode::Thunks, Arch::X86_64);
    recursion_thunks_macho_aarch64 => macho_case("recursion", Mode::Thunks, Arch::Aarch64);

    preemptible_safe_x86_64 => link_and_run_case("preemptible", Mode::Safe, Arch::X86_64);
    preemptible_safe_aarch64 => link_and_run_case("preemptible", Mode::Safe, Arch::Aarch64);
    preemptible_safe_macho_x86_64 => macho_case("preemptible", Mode::Safe, Arch::X86_64);
    preemptible_safe_macho_aarch64 => macho_case("preemptible", Mode::Safe, Arch::Aarch64);
    preemptible_aliases_x86_64 => link_and_run_case("preemptible", Mode::Aliases, Arch::X86_64);
    preemptible_aliases_aarch64 => link_and_run_case("preemptible", Mode::Aliases, Arch::Aarch64);
    preemptible_aliases_macho_x86_64 => macho_case("preemptible", Mode::Aliases, Arch::X86_64);
    preemptible_aliases_macho_aarch64 => macho_case("preemptible", Mode::Aliases, Arch::Aarch64);
    preemptible_thunks_x86_64 => link_and_run_case("preemptible", Mode::Thunks, Arch::X86_64);
    preemptible_thunks_aarch64 => link_and_run_case("preemptible", Mode::Thunks, Arch::Aarch64);
    preemptible_thunks_macho_x86_64 => macho_case("preemptible", Mode::Thunks, Arch::X86_64);
    preemptible_thunks_macho_aarch64 => macho_case("preemptible", Mode::Thunks, Arch::Aarch64);

    folding_safe_x86_64 => link_and_run_case("folding", Mode::Safe, Arch::X86_64);
    folding_safe_aarch64 => link_and_run_case("folding", Mode::Safe, Arch::Aarch64);
    folding_safe_macho_x86_64 => macho_case("folding", Mode::Safe, Arch::X86_64);
    folding_safe_macho_aarch64 => macho_case("folding", Mode::Safe, Arch::Aarch64);
    folding_aliases_x86_64 => link_and_run_case("folding", Mode::Aliases, Arch::X86_64);
    folding_aliases_aarch64 => link_and_run_case("folding", Mode::Aliases, Arch::Aarch64);
    folding_aliases_macho_x86_64 => macho_case("folding", Mode::Aliases, Arch::X86_64);
    folding_aliases_macho_aarch64 => macho_case("folding", Mode::Aliases, Arch::Aarch64);
    folding_thunks_x86_64 => link_and_run_case("folding", Mode::Thunks, Arch::X86_64);
    folding_thunks_aarch64 => link_and_run_case("folding", Mode::Thunks, Arch::Aarch64);
    folding_thunks_macho_x86_64 => macho_case("folding", Mode::Thunks, Arch::X86_64);
    folding_thunks_macho_aarch64 => macho_case("folding", Mode::Thunks, Arch::Aarch64);
    folding_folds_machine_code => {
        for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
            for arch in [Arch::X86_64, Arch::Aarch64] {
                assert_folds("folding", mode, arch.elf_triple());
                assert_folds("folding", mode, arch.macho_triple());
            }
        }
    };

    tail_safe_x86_64 => link_and_run_case("tail", Mode::Safe, Arch::X86_64);
    tail_safe_aarch64 => link_and_run_case("tail", Mode::Safe, Arch::Aarch64);
    tail_safe_macho_x86_64 => macho_case("tail", Mode::Safe, Arch::X86_64);
    tail_safe_macho_aarch64 => macho_case("tail", Mode::Safe, Arch::Aarch64);
    tail_aliases_x86_64 => link_and_run_case("tail", Mode::Aliases, Arch::X86_64);
    tail_aliases_aarch64 => link_and_run_case("tail", Mode::Aliases, Arch::Aarch64);
    tail_aliases_macho_x86_64 => macho_case("tail", Mode::Aliases, Arch::X86_64);
    tail_aliases_macho_aarch64 => macho_case("tail", Mode::Aliases, Arch::Aarch64);
    tail_thunks_x86_64 => link_and_run_case("tail", Mode::Thunks, Arch::X86_64);
    tail_thunks_aarch64 => link_and_run_case("tail", Mode::Thunks, Arch::Aarch64);
    tail_thunks_macho_x86_64 => macho_case("tail", Mode::Thunks, Arch::X86_64);
    tail_thunks_macho_aarch64 => macho_case("tail", Mode::Thunks, Arch::Aarch64);

    tail_recursion_safe_x86_64 => link_and_run_case("tail_recursion", Mode::Safe, Arch::X86_64);
    tail_recursion_safe_aarch64 => link_and_run_case("tail_recursion", Mode::Safe, Arch::Aarch64);
    tail_recursion_safe_macho_x86_64 => macho_case("tail_recursion", Mode::Safe, Arch::X86_64);
    tail_recursion_safe_macho_aarch64 => macho_case("tail_recursion", Mode::Safe, Arch::Aarch64);
    tail_recursion_aliases_x86_64 => link_and_run_case("tail_recursion", Mode::Aliases, Arch::X86_64);
    tail_recursion_aliases_aarch64 => link_and_run_case("tail_recursion", Mode::Aliases, Arch::Aarch64);
    tail_recursion_aliases_macho_x86_64 => macho_case("tail_recursion", Mode::Aliases, Arch::X86_64);
    tail_recursion_aliases_macho_aarch64 => macho_case("tail_recursion", Mode::Aliases, Arch::Aarch64);
    tail_recursion_thunks_x86_64 => link_and_run_case("tail_recursion", Mode::Thunks, Arch::X86_64);
    tail_recursion_thunks_aarch64 => link_and_run_case("tail_recursion", Mode::Thunks, Arch::Aarch64);
    tail_recursion_thunks_macho_x86_64 => macho_case("tail_recursion", Mode::Thunks, Arch::X86_64);
    tail_recursion_thunks_macho_aarch64 => macho_case("tail_recursion", Mode::Thunks, Arch::Aarch64);

    addresses_safe_x86_64 => link_and_run_case("addresses", Mode::Safe, Arch::X86_64);
    addresses_safe_aarch64 => link_and_run_case("addresses", Mode::Safe, Arch::Aarch64);
    addresses_safe_macho_x86_64 => macho_case("addresses", Mode::Safe, Arch::X86_64);
    addresses_safe_macho_aarch64 => macho_case("addresses", Mode::Safe, Arch::Aarch64);
    addresses_aliases_x86_64 => link_and_run_case("addresses", Mode::Aliases, Arch::X86_64);
    addresses_aliases_aarch64 => link_and_run_case("addresses", Mode::Aliases, Arch::Aarch64);
    addresses_aliases_macho_x86_64 => macho_case("addresses", Mode::Aliases, Arch::X86_64);
    addresses_aliases_macho_aarch64 => macho_case("addresses", Mode::Aliases, Arch::Aarch64);
    addresses_thunks_x86_64 => link_and_run_case("addresses", Mode::Thunks, Arch::X86_64);
    addresses_thunks_aarch64 => link_and_run_case("addresses", Mode::Thunks, Arch::Aarch64);
    addresses_thunks_macho_x86_64 => macho_case("addresses", Mode::Thunks, Arch::X86_64);
    addresses_thunks_macho_aarch64 => macho_case("addresses", Mode::Thunks, Arch::Aarch64);

    fold_removed_target_safe_x86_64 => link_and_run_case("fold_removed_target", Mode::Safe, Arch::X86_64);
    fold_removed_target_safe_aarch64 => link_and_run_case("fold_removed_target", Mode::Safe, Arch::Aarch64);
    fold_removed_target_safe_macho_x86_64 => macho_case("fold_removed_target", Mode::Safe, Arch::X86_64);
    fold_removed_target_safe_macho_aarch64 => macho_case("fold_removed_target", Mode::Safe, Arch::Aarch64);
    fold_removed_target_aliases_x86_64 => link_and_run_case("fold_removed_target", Mode::Aliases, Arch::X86_64);
    fold_removed_target_aliases_aarch64 => link_and_run_case("fold_removed_target", Mode::Aliases, Arch::Aarch64);
    fold_removed_target_aliases_macho_x86_64 => macho_case("fold_removed_target", Mode::Aliases, Arch::X86_64);
    fold_removed_target_aliases_macho_aarch64 => macho_case("fold_removed_target", Mode::Aliases, Arch::Aarch64);
    fold_removed_target_thunks_x86_64 => link_and_run_case("fold_removed_target", Mode::Thunks, Arch::X86_64);
    fold_removed_target_thunks_aarch64 => link_and_run_case("fold_removed_target", Mode::Thunks, Arch::Aarch64);
    fold_removed_target_thunks_macho_x86_64 => macho_case("fold_removed_target", Mode::Thunks, Arch::X86_64);
    fold_removed_target_thunks_macho_aarch64 => macho_case("fold_removed_target", Mode::Thunks, Arch::Aarch64);

    readelf_and_nm_agree => {
        if binutils_present() {
            for module in ["duplicates", "preemptible", "recursion"] {
                for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
                    for arch in [Arch::X86_64, Arch::Aarch64] {
                        binutils_case(module, mode, arch);
                    }
                }
            }
        }
    };
}

/// A forwarder becomes one jump only when its prologue does nothing observable: a stack limit
/// check (call or tail-call form) or a frame for a slot keeps the compiled body.
#[test]
fn forwarders_with_observable_prologues_are_compiled() {
    let module = load("observable_prologues");
    for arch in [Arch::X86_64, Arch::Aarch64] {
        for triple in [arch.elf_triple(), arch.macho_triple()] {
            let out = write_object(&module, 0, &options(triple, Mode::Safe, false, false))
                .unwrap_or_else(|e| panic!("{triple}: {e:#}"));
            let file = object::File::parse(&out.bytes[..]).unwrap();
            let elf = triple.contains("linux");
            let syms = text_symbols(&file);
            let prefix = symbol_prefix(&file);
            let sym = |name: &str| &syms[&format!("{prefix}{name}")];
            assert!(
                is_thunk(&file, arch, sym("plain"), elf),
                "{triple}: %plain should be one jump"
            );
            for name in ["limited", "limited_tail", "framed"] {
                assert!(
                    !arch.is_jump(code_at(&file, sym(name))),
                    "{triple}: %{name} became a jump, losing what its prologue does"
                );
            }
            assert_eq!(out.report.thunks, 1, "{triple}");
        }
    }
}

/// `%fwd` only forwards its argument to `%reader`, which returns its own return address: the
/// object must not compile `%fwd` as one jump (a tail call), or `%reader` would see `%fwd`'s
/// caller instead of `%fwd`. Checked on the object written without merging and merged in every
/// mode, linked and run.
const FORWARDS_TO_A_FRAME_READER: &str = "
function %reader(i64) -> i64 system_v {
block0(v0: i64):
    v1 = get_return_address.i64
    v2 = iadd v1, v0
    return v2
}

function %fwd(i64) -> i64 system_v {
    sig0 = (i64) -> i64 system_v
    fn0 = colocated %reader sig0
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}
";

const FORWARDS_DRIVER: &str = r#"
#include <stdint.h>
#include <stdio.h>
extern int64_t fwd(int64_t);
__attribute__((noinline)) static int64_t via(void) { return fwd(0); }
int main(void) {
    int64_t ra = via(), f = (int64_t) (intptr_t) fwd;
    printf("inside fwd %d\n", ra > f && ra < f + 64);
    return 0;
}
"#;

fn forwarding_to_a_frame_reader_is_a_call(arch: Arch) {
    let Some(tc) = toolchain(arch) else {
        return;
    };
    let triple = arch.elf_triple();
    let module = clif_merge::read_module_text(
        Path::new("forwards.clif"),
        FORWARDS_TO_A_FRAME_READER,
        ReadOptions::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let driver = compile_driver(&tc, dir.path(), "forwards_driver", FORWARDS_DRIVER);
    let reference = build_reference(&module, triple, false);
    let out = link_and_run(&tc, dir.path(), "unmerged", &driver, &reference.bytes);
    assert_eq!(out, "inside fwd 1\n", "{triple}, unmerged");
    for mode in [Mode::Safe, Mode::Aliases, Mode::Thunks] {
        let built = build_merged(&module, mode, triple, false);
        let out = link_and_run(
            &tc,
            dir.path(),
            &format!("{mode:?}"),
            &driver,
            &built.object.bytes,
        );
        assert_eq!(out, "inside fwd 1\n", "{triple}, {mode:?}");
    }
}

#[test]
fn forwarding_to_a_frame_reader_is_a_call_x86_64() {
    forwarding_to_a_frame_reader_is_a_call(Arch::X86_64);
}

#[test]
fn forwarding_to_a_frame_reader_is_a_call_aarch64() {
    forwarding_to_a_frame_reader_is_a_call(Arch::Aarch64);
}
