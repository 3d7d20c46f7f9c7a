//! Bytes as a `.clif` file: truncated, binary, non-UTF-8, or almost-CLIF text must be a clean
//! error naming the file; whatever reads must merge in every mode and emit CLIF that reads back
//! as the same module. Seed it with `../filetests/**/*.clif` (see README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    clif_merge_fuzz::check_text(data);
});
