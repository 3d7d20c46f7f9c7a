//! Where the memory of a read module's functions is: the heap each part of every `Function`
//! takes (as a copy of it allocates it: the reader keeps exact-size copies), malloc's chunks
//! for it (8 bytes of header, rounded up to 16, at least 32), the number of allocations, and
//! how much of the value-list pool its lists use against what their lengths need.
//!
//!     cargo run --release --example function_memory -- M.clif
//!
//! Figures of issue 23's fifth round (`benches/README.md`).

use clif_merge::ReadOptions;
use cranelift_codegen::ir::{Function, InstructionData};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting what is live: bytes asked for, malloc chunks, allocations.
struct Counting;

static BYTES: AtomicUsize = AtomicUsize::new(0);
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// The size of glibc's chunk for `size` bytes on a 64-bit target.
fn chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

// SAFETY: every call goes to the system allocator with the same arguments; the counters are
// only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size(), Relaxed);
        CHUNKS.fetch_add(chunk(layout.size()), Relaxed);
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        BYTES.fetch_sub(layout.size(), Relaxed);
        CHUNKS.fetch_sub(chunk(layout.size()), Relaxed);
        ALLOCATIONS.fetch_sub(1, Relaxed);
        // SAFETY: as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live bytes, chunk bytes and allocations.
fn live() -> [usize; 3] {
    [&BYTES, &CHUNKS, &ALLOCATIONS].map(|counter| counter.load(Relaxed))
}

/// The pool slots a list of `len` values takes (a length slot and the values, in blocks of a
/// power of two, at least 4: cranelift-entity's size classes), and the slots it needs.
fn list_slots(len: usize) -> (usize, usize) {
    match len {
        0 => (0, 0),
        _ => ((len + 1).next_power_of_two().max(4), len + 1),
    }
}

/// The pool slots of every list `func` holds: results, block parameters, block calls and
/// argument lists, (taken, needed).
fn pool_slots(func: &Function) -> (usize, usize) {
    let dfg = &func.dfg;
    let mut lens = Vec::new();
    for block in func.layout.blocks() {
        lens.push(dfg.block_params(block).len());
        for inst in func.layout.block_insts(block) {
            lens.push(dfg.inst_results(inst).len());
            let data = &dfg.insts[inst];
            for call in data.branch_destination(&dfg.jump_tables, &dfg.exception_tables) {
                lens.push(1 + call.len(&dfg.value_lists));
            }
            if matches!(
                data,
                InstructionData::Call { .. }
                    | InstructionData::CallIndirect { .. }
                    | InstructionData::MultiAry { .. }
                    | InstructionData::TryCall { .. }
                    | InstructionData::TryCallIndirect { .. }
            ) {
                lens.push(dfg.inst_args(inst).len());
            }
        }
    }
    lens.into_iter()
        .map(list_slots)
        .fold((0, 0), |(t, n), (a, b)| (t + a, n + b))
}

/// The heap a copy of `value` allocates: [bytes, malloc chunk bytes, allocations].
fn heap_of<T: Clone>(value: &T) -> [usize; 3] {
    let before = live();
    let copy = value.clone();
    let after = live();
    drop(copy);
    [0, 1, 2].map(|i| after[i] - before[i])
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: function_memory M.clif");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).expect("a readable file");
    let module = clif_merge::read_module_text(Path::new(&path), &text, ReadOptions::default())
        .expect("a module that reads");
    drop(text);
    let count = module.len();
    let mut parts: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    let (mut taken, mut needed, mut pool_len) = (0, 0, 0);
    for function in module.functions() {
        let func = &*function.func;
        let (t, n) = pool_slots(func);
        (taken, needed, pool_len) = (
            taken + t,
            needed + n,
            pool_len + func.dfg.value_lists.capacity(),
        );
        let mut measure = |name, heap: [usize; 3]| {
            let part: &mut [usize; 3] = parts.entry(name).or_default();
            for (sum, n) in part.iter_mut().zip(heap) {
                *sum += n;
            }
        };
        measure("whole function (its tables)", heap_of(func));
        measure("dfg", heap_of(&func.dfg));
        measure("dfg.insts", heap_of(&func.dfg.insts));
        measure("dfg.blocks", heap_of(&func.dfg.blocks));
        measure("dfg.value_lists", heap_of(&func.dfg.value_lists));
        measure("dfg.signatures", heap_of(&func.dfg.signatures));
        measure("dfg.ext_funcs", heap_of(&func.dfg.ext_funcs));
        measure("dfg.mem_flags", heap_of(&func.dfg.mem_flags));
        measure("layout", heap_of(&func.layout));
        measure("signature", heap_of(&func.stencil.signature));
        measure("params", heap_of(&func.params));
        measure("name", heap_of(&func.name));
    }
    let inline = std::mem::size_of::<Function>();
    println!(
        "{count} functions; a Function is {inline} bytes inline, boxed in a chunk of {}",
        chunk(inline)
    );
    println!(
        "value-list pool: {pool_len} slots, {taken} in lists, {needed} needed by their lengths"
    );
    println!("| part | bytes MB | malloc chunks MB | allocations | chunk bytes a function |");
    println!("|---|---:|---:|---:|---:|");
    for (name, [bytes, chunks, allocations]) in parts {
        println!(
            "| {name} | {:.1} | {:.1} | {allocations} | {:.0} |",
            bytes as f64 / 1e6,
            chunks as f64 / 1e6,
            chunks as f64 / count as f64
        );
    }
}
