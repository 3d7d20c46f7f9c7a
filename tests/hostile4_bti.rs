//! aarch64 branch protection (`--set use_bti`) over every kind of one-jump code the object
//! writer makes: a merged thunk, an alias, a forwarder through an alias, a forwarder to a
//! forwarder, functions of other IR folded by their equal machine code and forwarders to
//! those. Each is called through a pointer by a freestanding program linked with
//! `-z force-bti` and run under `qemu-aarch64 -cpu max`, in every mode, with and without
//! `--similar` and `--function-sections`; without `use_bti` the same program faults, so the
//! run sees what it checks. Skipped (with a note) without the aarch64 toolchain.

#[path = "common/link.rs"]
mod link;

use std::path::Path;
use std::process::Command;

/// Calls every function through a pointer and exits with 0, or with 10 + the index of the
/// first that returned something else.
const DRIVER: &str = r#"
#include <stdint.h>
typedef int64_t (*fn)(int64_t);
int64_t a(int64_t), b(int64_t), c(int64_t), d(int64_t), fw(int64_t), fw2(int64_t);
int64_t f(int64_t), g(int64_t), k(int64_t), l(int64_t);
static void sys_exit(long code) {
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93;
    __asm__ volatile("svc 0" :: "r"(x0), "r"(x8));
    for (;;) {}
}
void _start(void) {
    fn volatile t[] = {a, b, c, d, fw, fw2, f, g, k, l};
    long expect[] = {9, 9, 9, 9, 9, 9, 3, 3, 3, 3};
    for (int i = 0; i < 10; i++)
        if (t[i](3) != expect[i]) sys_exit(10 + i);
    sys_exit(0);
}
"#;

/// The exit status of the driver linked with the object `clif-merge` writes with `args`.
fn run_with(tc: &link::Toolchain, dir: &Path, args: &[&str]) -> Option<i32> {
    let input =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile4/bti_forwarders.clif");
    let obj = dir.join("m.o");
    let status = Command::new(env!("CARGO_BIN_EXE_clif-merge"))
        .arg(&input)
        .args(["--target", "aarch64", "--report", "json", "-o"])
        .arg(&obj)
        .args(args)
        .output()
        .unwrap();
    assert!(status.status.success(), "clif-merge {args:?}: {status:?}");
    link::run_freestanding_with_bti(tc, dir, DRIVER, &obj)
}

#[test]
fn every_jump_the_object_writer_makes_has_a_landing_pad_under_bti() {
    let Some(tc) = link::toolchain(true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    assert_ne!(
        run_with(&tc, dir.path(), &["--mode", "safe"]),
        Some(0),
        "without use_bti the program must fault, or the run checks nothing"
    );
    for mode in ["safe", "aliases", "thunks"] {
        for similar in [&[][..], &["--similar"]] {
            for sections in [&[][..], &["--function-sections"]] {
                let mut args = vec!["--set", "use_bti", "--mode", mode];
                args.extend_from_slice(similar);
                args.extend_from_slice(sections);
                assert_eq!(run_with(&tc, dir.path(), &args), Some(0), "{args:?}");
            }
        }
    }
}
