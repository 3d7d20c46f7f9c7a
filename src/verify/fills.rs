//! Which fill of memory nothing stored to each run of a function reads ([`Fill`]), and on which
//! arguments a run on a byte fill is made.
//!
//! Most runs read hashed memory; one in [`BYTE_FILL_EVERY`] starts on every byte `0x00` or
//! `0xFF` instead ([`first_fill`]), and a run that does not end is run again on the others
//! ([`other_fills`]). A byte fill only shows something where the run reads memory: on its own
//! random arguments a pointer parameter is mostly outside mapped memory, and both sides trap
//! at once. So a byte-fill run takes the arguments of an earlier run of the function that
//! returned on hashed memory ([`Reached`]): there the memory the function reads is reachable.

use super::inputs::mix;
use super::memory::Fill;
use cranelift_codegen::data_value::DataValue;

/// The memory run `run` of a function starts on: hashed from `seed`, but for one run in
/// [`BYTE_FILL_EVERY`], which starts on every byte `0x00` or `0xFF` in turn. A run that ends on
/// hashed memory is never run on another fill, and what only a cleared or an erased memory
/// reads (a null pointer where one is tested, an all-ones halfword compared) would otherwise
/// tell apart no run.
pub(super) fn first_fill(run: usize, seed: u64) -> Fill {
    match (run + 1) % BYTE_FILL_EVERY {
        0 if (run + 1) / BYTE_FILL_EVERY % 2 == 1 => Fill::Byte(0x00),
        0 => Fill::Byte(0xff),
        _ => Fill::Hashed(seed),
    }
}

/// One run in this many starts on a byte fill ([`first_fill`]): runs 15, 47, … on `0x00`,
/// runs 31, 63, … on `0xFF` (four of the default 64; none of fewer than 16).
const BYTE_FILL_EVERY: usize = 16;

/// The fills a run that does not end on hashed memory from `seed` is run on again, in order.
/// Where a run does not end, what it read is mostly what keeps it going: a hash table probed
/// forever because none of its control bytes is empty (`0xFF`) and its mask keeps the probe on
/// a few of them; a tree or a list walked forever because no pointer read is null; a length
/// read that does not end a loop. First another draw of hashed memory, which ends a run where
/// the draw was unlucky and checks the run as deep as any other; then the sentinels: memory
/// cleared (`0x00`: null pointers, zero lengths) and erased (`0xFF`: empty slots, all-ones
/// masks).
pub(super) fn other_fills(seed: u64) -> [Fill; 3] {
    [
        Fill::Hashed(mix(seed ^ ANOTHER_DRAW)),
        Fill::Byte(0x00),
        Fill::Byte(0xff),
    ]
}

/// What another draw of hashed memory for a run derives its seed with.
const ANOTHER_DRAW: u64 = 0xf111_da7a_5eed_0002;

/// The argument tuples of a function's runs that returned on hashed memory, in run order, and
/// which of them a byte-fill run took already (per byte).
#[derive(Default)]
pub(super) struct Reached {
    tuples: Vec<Vec<DataValue>>,
    taken: Vec<(u8, usize)>,
}

impl Reached {
    /// Notes that a run on `args` ended as `returned` says on `fill`: a tuple that returned on
    /// hashed memory reached what the function reads.
    pub(super) fn record(&mut self, args: &[DataValue], fill: Fill, returned: bool) {
        if returned && matches!(fill, Fill::Hashed(_)) {
            self.tuples.push(args.to_vec());
        }
    }

    /// The arguments a run starting on `fill` takes instead of its own, when it is a byte fill:
    /// the latest tuple that returned on hashed memory and no earlier run on that byte took (so
    /// that no run repeats another: the same arguments on the same fill), None when there is
    /// none (the run keeps its own arguments).
    pub(super) fn take_for(&mut self, fill: Fill) -> Option<Vec<DataValue>> {
        let Fill::Byte(byte) = fill else {
            return None;
        };
        let index = (0..self.tuples.len())
            .rev()
            .find(|&i| !self.taken.contains(&(byte, i)))?;
        self.taken.push((byte, index));
        Some(self.tuples[index].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_fill_runs_take_the_latest_tuple_that_returned_on_hashed_memory_once_per_byte() {
        let mut reached = Reached::default();
        let tuple = |x: i64| vec![DataValue::I64(x)];
        assert_eq!(
            reached.take_for(Fill::Byte(0x00)),
            None,
            "nothing returned yet"
        );
        reached.record(&tuple(1), Fill::Hashed(5), true);
        reached.record(&tuple(2), Fill::Hashed(6), false);
        reached.record(&tuple(3), Fill::Byte(0x00), true);
        reached.record(&tuple(4), Fill::Hashed(7), true);
        assert_eq!(
            reached.take_for(Fill::Hashed(8)),
            None,
            "hashed runs keep theirs"
        );
        assert_eq!(reached.take_for(Fill::Byte(0x00)), Some(tuple(4)));
        assert_eq!(reached.take_for(Fill::Byte(0xff)), Some(tuple(4)));
        assert_eq!(reached.take_for(Fill::Byte(0x00)), Some(tuple(1)));
        assert_eq!(
            reached.take_for(Fill::Byte(0x00)),
            None,
            "each tuple once per byte"
        );
        assert_eq!(reached.take_for(Fill::Byte(0xff)), Some(tuple(1)));
    }

    #[test]
    fn one_run_in_sixteen_starts_on_a_byte_fill_cleared_then_erased() {
        let fills: Vec<Fill> = (0..64).map(|run| first_fill(run, 9)).collect();
        let bytes: Vec<(usize, Fill)> = (fills.iter().copied().enumerate())
            .filter(|(_, f)| matches!(f, Fill::Byte(_)))
            .collect();
        assert_eq!(
            bytes,
            [
                (15, Fill::Byte(0x00)),
                (31, Fill::Byte(0xff)),
                (47, Fill::Byte(0x00)),
                (63, Fill::Byte(0xff))
            ]
        );
    }
}
