//! Modules of valid functions made by the property tests' generator (`../tests/common/gen.rs`)
//! from a choice sequence that `arbitrary` draws from the input: merged in every mode, with
//! the emitted CLIF read back and compared function by function.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|choices: Vec<u32>| {
    // Longer sequences only make larger functions, more slowly.
    let choices = &choices[..choices.len().min(4096)];
    clif_merge_fuzz::check_generated(choices);
});
