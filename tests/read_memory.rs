//! Reading holds each function once: the most memory that reading a large file takes beside
//! its text is the module it builds, plus little (the pieces being parsed). A second copy of the
//! functions at the peak — the reader's per-piece vectors beside the module's table, or a
//! parser's vector kept at its size — shows here as a peak far above what the module keeps.
//!
//! Heap bytes are counted by this test's own allocator; the test runs alone in its binary.

use clif_merge::{ReadOptions, read_module_text};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and the most ever live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Function `i` of the file: a few blocks of arithmetic, loads and stores, and a call of the
/// function before it, so that every table a read function has is filled.
fn function(i: usize) -> String {
    let callee = match i {
        0 => String::new(),
        _ => format!(
            "    sig0 = (i64, i64) -> i64 system_v\n    fn0 = colocated %f{} sig0\n",
            i - 1
        ),
    };
    let call = match i {
        0 => "    v9 = iadd v1, v8\n".to_string(),
        _ => "    v9 = call fn0(v0, v8)\n".to_string(),
    };
    format!(
        "function %f{i}(i64, i64) -> i64 system_v {{\n{callee}\nblock0(v0: i64, v1: i64):\n    \
         v2 = iconst.i64 {i}\n    v3 = iadd v1, v2\n    v4 = load.i64 notrap aligned v0+8\n    \
         v5 = imul v3, v4\n    v6 = icmp ult v5, v2\n    brif v6, block1, block2(v5)\n\n\
         block1:\n    v7 = bxor v5, v1\n    store notrap aligned v7, v0+16\n    jump block2(v7)\n\n\
         block2(v8: i64):\n{call}    v10 = isub v9, v3\n    return v10\n}}\n\n"
    )
}

#[test]
fn reading_a_large_file_holds_each_function_once() {
    // Enough functions that the file is read in pieces on the pool (4,096 or more).
    let text: String = (0..8192).map(function).collect();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let module = read_module_text(Path::new("large.clif"), &text, ReadOptions::default())
        .expect("the generated file reads");
    let kept = LIVE.load(Ordering::Relaxed) - before;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!(module.len(), 8192);
    eprintln!("peak while reading {peak} bytes, kept {kept} bytes");
    // The module's own memory, plus a quarter for what is alive only while reading.
    assert!(
        peak * 4 <= kept * 5,
        "reading took {peak} bytes at its peak for a module that keeps {kept} \
         ({:.2}x): functions are held twice",
        peak as f64 / kept as f64
    );
}
