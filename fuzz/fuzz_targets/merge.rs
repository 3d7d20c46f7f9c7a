//! Both targets in one: an even first byte makes the rest CLIF text (`merge_text`), an odd one
//! a choice sequence for the generator (`merge_generated`).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    if first % 2 == 0 {
        clif_merge_fuzz::check_text(rest);
    } else {
        let mut u = Unstructured::new(rest);
        if let Ok(choices) = Vec::<u32>::arbitrary(&mut u) {
            clif_merge_fuzz::check_generated(&choices[..choices.len().min(4096)]);
        }
    }
});
