//! Runs that come back to where they were. The interpreter is deterministic: a run whose machine
//! is, at some instruction, in exactly the state it was in at an earlier one repeats what it
//! did in between forever, and ends with no fuel, however much it is given. Such a run is
//! stopped there, as out of fuel: the verdict is the one the fuel would have given, sooner.
//!
//! The state is everything the rest of a run depends on: the instruction, the calls in
//! progress and every frame's registers, the stack's bytes and the escaped slots, the memory's
//! stores and seed, the pinned register, and the number of calls not run (a call's clobber is
//! derived from it). What a run only records (its stores' sequence, the guide's trace, the names
//! it resolved) is not part of it. Stale registers (of values set in an earlier pass of a loop)
//! are compared too: a state with other ones may still repeat, but it is then not found here,
//! which only leaves the run to its fuel.
//!
//! The search is Brent's: the state at instruction 2^k (from [`FIRST_SNAPSHOT`]) is kept, and
//! each later state at the same instruction and depth is compared with it. A run that enters a
//! cycle of `p` instructions after `t` is stopped before instruction `2 × max(t + p,
//! FIRST_SNAPSHOT)`.

use super::super::memory::MemoryImage;
use super::Machine;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{Function, Inst};

/// The first instruction count at which the state is kept: runs that end take fewer (on real
/// code, 99 % of them take under 500), so they never pay for a copy.
const FIRST_SNAPSHOT: u64 = 1 << 10;

/// A state larger than this (registers, stack and stored words) is not kept: a deep recursion
/// would copy megabytes at each snapshot, and it does not repeat anyway (its stack grows).
const MAX_SNAPSHOT_BYTES: usize = 1 << 20;

/// Watches one run for a state it was in before.
pub(crate) struct CycleWatch {
    /// The instruction count of the next snapshot.
    next: u64,
    snapshot: Option<Snapshot>,
}

/// The state of a run at one instruction.
struct Snapshot {
    pc: Inst,
    /// The stores the run had recorded (not part of the state: see [`CycleWatch::stored`]).
    stores: usize,
    returns_to: Vec<Inst>,
    calls_not_run: usize,
    frames: Vec<(*const Function, Vec<Option<DataValue>>)>,
    frame_base: Vec<u64>,
    stack: Vec<u8>,
    escaped: Vec<(usize, u64)>,
    pinned_reg: DataValue,
    memory: MemoryImage,
}

impl Default for CycleWatch {
    fn default() -> Self {
        CycleWatch {
            next: FIRST_SNAPSHOT,
            snapshot: None,
        }
    }
}

impl CycleWatch {
    /// Whether the run, about to run `pc` as its instruction number `step` (from 0) with
    /// `returns_to` the calls in progress and `calls_not_run` calls not run so far, is in a
    /// state it was in before. Cheap unless `pc` is the kept state's instruction.
    #[inline]
    pub(crate) fn repeats(
        &mut self,
        step: u64,
        pc: Inst,
        returns_to: &[Inst],
        calls_not_run: usize,
        machine: &mut Machine,
    ) -> bool {
        if step == self.next {
            self.next = self.next.saturating_mul(2);
            self.snapshot = machine.snapshot(pc, returns_to, calls_not_run);
            return false;
        }
        match &self.snapshot {
            Some(s) if s.pc == pc && s.returns_to.len() == returns_to.len() => {
                machine.is_at(s, returns_to, calls_not_run)
            }
            _ => false,
        }
    }

    /// Whether the cycle [`CycleWatch::repeats`] just found recorded a store between the kept
    /// state and the same state again. One that did not would never store again, nor call a
    /// function not run (their count is part of the state). A cycle that stores may be found
    /// after more or fewer passes on either side of a right merge (the snapshots are at
    /// instruction counts a forwarder moves).
    pub(crate) fn stored(&self, machine: &Machine) -> bool {
        self.snapshot
            .as_ref()
            .is_none_or(|s| s.stores != machine.stores.len())
    }
}

impl Machine<'_> {
    /// The state at `pc`, None when it is too large to keep.
    fn snapshot(
        &mut self,
        pc: Inst,
        returns_to: &[Inst],
        calls_not_run: usize,
    ) -> Option<Snapshot> {
        let registers: usize = (self.frames.iter())
            .map(|f| super::frame_bytes(f.function()) as usize)
            .sum();
        if registers + self.stack.len() + self.memory.stored_bytes() > MAX_SNAPSHOT_BYTES {
            return None;
        }
        let frames = (self.frames.iter_mut())
            .map(|f| (f.function() as *const Function, f.entries_mut().to_vec()))
            .collect();
        Some(Snapshot {
            pc,
            stores: self.stores.len(),
            returns_to: returns_to.to_vec(),
            calls_not_run,
            frames,
            frame_base: self.frame_base.clone(),
            stack: self.stack.clone(),
            escaped: self.escaped.clone(),
            pinned_reg: self.pinned_reg.clone(),
            memory: self.memory.image(),
        })
    }

    /// Whether the machine is in the state `s` (at its instruction): the cheap parts first,
    /// then the innermost frame's registers (where a loop's counter is), then the rest.
    fn is_at(&mut self, s: &Snapshot, returns_to: &[Inst], calls_not_run: usize) -> bool {
        let cheap = s.calls_not_run == calls_not_run
            && s.returns_to == returns_to
            && s.frame_base == self.frame_base
            && s.escaped == self.escaped
            && same_value(&s.pinned_reg, &self.pinned_reg)
            && s.frames.len() == self.frames.len();
        cheap
            && (s.frames.iter().zip(&mut self.frames).rev()).all(|((func, regs), frame)| {
                std::ptr::eq(*func, frame.function()) && same_registers(regs, frame.entries_mut())
            })
            && s.stack == self.stack
            && self.memory.is(&s.memory)
    }
}

fn same_registers(a: &[Option<DataValue>], b: &[Option<DataValue>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => same_value(x, y),
            (None, None) => true,
            _ => false,
        })
}

/// The same type and bits (a NaN is the NaN it was).
fn same_value(a: &DataValue, b: &DataValue) -> bool {
    a.ty() == b.ty() && a.bitwise_eq(b)
}
