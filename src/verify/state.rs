//! The machine a run executes on, as the interpreter's `State`: frames with stack slots laid
//! out here, the lazily filled [`Memory`] everywhere else, function addresses by slot (see
//! [`Names`](super::names::Names)) and symbol addresses by name. Every store is recorded, with
//! stack addresses written as (frame, slot, offset) so that the two sides of a run compare.

pub(super) mod cycle;

use super::memory::{Fill, Memory};
use super::names::Names;
use super::outcome::{Observed, StackAddress, Store};
use super::symbol_pages::{SYMBOLS, SYMBOLS_SPAN, SymbolPages, symbol_text};
use crate::module::FuncName;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{
    ArgumentPurpose, Endianness, ExternalName, FuncRef, Function, GlobalValue, GlobalValueData,
    MemFlagsData, StackSlot, Type, types,
};
use cranelift_interpreter::address::{Address, AddressFunctionEntry, AddressRegion, AddressSize};
use cranelift_interpreter::frame::Frame;
use cranelift_interpreter::interpreter::LibCallHandler;
use cranelift_interpreter::state::{InterpreterFunctionRef, MemoryError, State};
use cranelift_interpreter::step::CraneliftTrap;
use cranelift_interpreter::value::DataValueExt;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};

/// Where the stack's bytes end, for 64-bit addresses and for 32-bit ones: it grows down from
/// there, as natively, each frame below its caller's (a frame's own bytes in order). Grown up,
/// a caller's slot compared with its callee's was ordered the other way round (hostile14).
/// Numbers just below are no edge value (just below 2^31 is `i32::MAX` and its neighbours,
/// which arguments are).
const STACK_TOP_64: u64 = 0x0000_7ff0_0000_0000;
const STACK_TOP_32: u64 = 0x7f00_0000;
/// Memory is mapped below this, and this far on either side of [`WRAPPED`]; elsewhere (but for
/// the stack and symbols) an access that may trap does trap, with its trap code, as a wild
/// pointer would. Without it, a loop over a length of -1 or a random pointer would run out of
/// fuel instead of ending.
const MAPPED: u64 = 1 << 24;
/// Where 32-bit addresses wrap. Wasm code computes its addresses in 32 bits, then adds a heap's
/// base (a small number, read from lazily filled memory): an address computed from small
/// numbers is near 0, or, when it went below 0, just below 2^32. Its shadow stack pointer is
/// such a number, and its prologue subtracts the frame's size from it: with only the low
/// 16 MiB mapped, the first store to the frame trapped, and on real code half of the runs
/// ended there after a dozen instructions, having checked a prologue only. Wild 32-bit
/// indices (an argument of -2^31) still trap, as beyond a small wasm heap.
const WRAPPED: u64 = 1 << 32;
/// Frames of one function kept for reuse whatever their size.
const SPARE_FRAMES: usize = 4;
/// Bytes of frames kept for reuse beyond [`SPARE_FRAMES`] per function, at most: a recursion
/// hundreds of calls deep (a run that ends too deep, on real code) allocated and faulted in
/// every frame anew on every run, a seventh of the time of `--verify` on dprint.
const SPARE_BYTES: u64 = 16 << 20;
/// A function's address is its slot's number shifted by this many bits (16 MiB apart for 64-bit
/// addresses, 4 KiB for 32-bit ones, which have 29 bits for it), so that an address into a
/// function's code, as `symbol %a+1` makes it, is no other function's address: with slots one
/// apart it was the next name's (hostile13).
fn function_stride_bits(size: AddressSize) -> u32 {
    match size {
        AddressSize::_64 => 24,
        AddressSize::_32 => 12,
    }
}

/// Where each stack slot of a function is in its frame, and the frame's size.
struct SlotLayout {
    offsets: Vec<u64>,
    size: u64,
    /// What the frame's base is a multiple of: twice its widest slot alignment, at least 16.
    base_alignment: u64,
}

/// The widest stack slot alignment laid out as declared, as a shift (16 bytes; wider ones are
/// laid out as this). Natively a frame is only as aligned as the stack pointer, 16 bytes on
/// x86_64 and aarch64, whatever a slot's `align=` says: a slot declared 4,096-aligned had the
/// low 12 bits 3,632, 3,584, … compiled by Cranelift and called from C (hostile16). Laid out to
/// its declared alignment, its address's bits 4 to 11 were 0 on every run, so a wrong merge
/// returning 0 for them passed.
const MAX_SLOT_ALIGN: u8 = 4;

/// At least the stack bytes a frame of `func` takes with its padding (each slot's size and
/// twice its alignment, and the base's alignment), summed without overflow: the limit is
/// checked before the frame is allocated.
pub(super) fn frame_bound(func: &Function) -> u64 {
    let align = |s: &cranelift_codegen::ir::StackSlotData| {
        (1u64 << s.align_shift.min(MAX_SLOT_ALIGN)).max(16)
    };
    let slots = func.sized_stack_slots.values();
    let widest = slots.clone().map(align).max().unwrap_or(16);
    slots.map(|s| u64::from(s.size) + 2 * align(s)).sum::<u64>() + 2 * widest
}

impl SlotLayout {
    /// A slot aligned to 16 bytes or more is placed at an odd multiple of 16 (bit 4 set), so
    /// that code relying on more alignment than a frame has natively (a slot's declared
    /// `align=` past 16, which Cranelift does not give: [`MAX_SLOT_ALIGN`]) sees other low bits
    /// than it assumes. Narrower slots are aligned as declared.
    fn of(func: &Function) -> SlotLayout {
        let mut offsets = Vec::with_capacity(func.sized_stack_slots.len());
        let mut end = 0u64;
        let mut widest = 16u64;
        for slot in func.sized_stack_slots.values() {
            let align = 1u64 << slot.align_shift.min(MAX_SLOT_ALIGN);
            end = if align >= 16 {
                (end + align).next_multiple_of(2 * align) - align
            } else {
                end.next_multiple_of(align)
            };
            widest = widest.max(align);
            offsets.push(end);
            end += u64::from(slot.size);
        }
        SlotLayout {
            offsets,
            size: end.next_multiple_of(16),
            base_alignment: 2 * widest,
        }
    }
}

/// The interpreter's state for one module (see the module docs).
pub(super) struct Machine<'a> {
    /// The function each name (by its index in [`Names`](super::names::Names)) runs: defined
    /// here, or a stand-in.
    by_name: Vec<&'a Function>,
    /// The name index of each function reference of a function run, found once (the
    /// interpreter's own store formats and hashes the name at every call).
    ref_names: RefCell<FxHashMap<(*const Function, FuncRef), Option<u32>>>,
    /// The names and the address slots this run resolved to a function (bit sets), so that a
    /// run may be known to do on the other side exactly what it did here.
    resolved_names: Vec<Cell<u64>>,
    resolved_slots: Vec<Cell<u64>>,
    frames: Vec<Frame<'a>>,
    /// Frames of returned calls, by function, to be used again: a frame holds a register for
    /// every value of its function, and allocating (and faulting in) that anew for every call
    /// was a sixth of the time of `--verify` on real code.
    spare_frames: FxHashMap<*const Function, Vec<Frame<'a>>>,
    /// The bytes of the frames in `spare_frames`.
    spare_bytes: u64,
    /// Where each frame's slots start in `stack`.
    frame_base: Vec<u64>,
    /// Where each frame's bytes end in `stack` (its size rounded up to its base's alignment).
    frame_top: Vec<u64>,
    /// Of each live frame, how many frames up to it (itself too) have stack slots.
    slotted_frames: Vec<u32>,
    stack: Vec<u8>,
    layouts: FxHashMap<*const Function, SlotLayout>,
    pub(super) memory: Memory,
    /// Every store of the run, in order.
    pub(super) stores: Vec<Store>,
    /// The stack slots whose address left the frame (passed to a function not run, or
    /// stored): (frame index, slot). A function not run may write them.
    escaped: Vec<(usize, u64)>,
    pinned_reg: DataValue,
    /// Each name's address slot on this side, by name index.
    slot_of: Vec<u32>,
    names_index: &'a FxHashMap<FuncName, u32>,
    /// Where each data symbol is.
    symbol_pages: &'a SymbolPages,
    /// The function run by a call through each slot's address.
    slot_fn: Vec<Option<&'a Function>>,
}

impl<'a> Machine<'a> {
    pub(super) fn new(
        by_name: Vec<&'a Function>,
        names: &'a Names,
        slot_of: Vec<u32>,
        slot_fn: Vec<Option<&'a Function>>,
    ) -> Machine<'a> {
        let words = by_name.len().div_ceil(64);
        Machine {
            by_name,
            ref_names: RefCell::default(),
            resolved_names: vec![Cell::new(0); words],
            resolved_slots: vec![Cell::new(0); slot_fn.len().div_ceil(64)],
            frames: Vec::new(),
            spare_frames: FxHashMap::default(),
            spare_bytes: 0,
            frame_base: Vec::new(),
            frame_top: Vec::new(),
            slotted_frames: Vec::new(),
            stack: Vec::new(),
            layouts: FxHashMap::default(),
            memory: Memory::default(),
            stores: Vec::new(),
            escaped: Vec::new(),
            pinned_reg: DataValue::I64(0),
            slot_of,
            names_index: &names.index_of,
            symbol_pages: &names.symbol_pages,
            slot_fn,
        }
    }

    /// Empties the stack, memory and records for a run whose unwritten memory reads as `fill`
    /// makes it.
    pub(super) fn reset(&mut self, fill: Fill) {
        self.release();
        self.memory.reset(fill);
        for word in self.resolved_names.iter().chain(&self.resolved_slots) {
            word.set(0);
        }
    }

    /// Empties the stack, memory and stores of the run that ended (what it resolved is kept,
    /// see [`Machine::resolved_only`]).
    pub(super) fn release(&mut self) {
        while !self.frames.is_empty() {
            self.pop_frame();
        }
        self.frame_base.clear();
        self.frame_top.clear();
        self.slotted_frames.clear();
        self.stack.clear();
        self.memory.reset(Fill::default());
        self.stores.clear();
        self.escaped.clear();
        self.pinned_reg = DataValue::I64(0);
    }

    /// Whether every name and address slot the run since the last reset resolved is marked
    /// in `names` and `slots` (by index).
    pub(super) fn resolved_only(&self, names: &[bool], slots: &[bool]) -> bool {
        let within = |bits: &[Cell<u64>], allowed: &[bool]| {
            bits.iter().enumerate().all(|(w, word)| {
                let mut word = word.get();
                while word != 0 {
                    let i = w * 64 + word.trailing_zeros() as usize;
                    if !allowed[i] {
                        return false;
                    }
                    word &= word - 1;
                }
                true
            })
        };
        within(&self.resolved_names, names) && within(&self.resolved_slots, slots)
    }

    /// The index of `name` (one both sides know).
    pub(super) fn name_index(&self, name: &FuncName) -> usize {
        self.names_index[name] as usize
    }

    /// The name index of `func_ref` in `func`.
    fn name_of_ref(&self, func: &Function, func_ref: FuncRef) -> Option<u32> {
        let key = (func as *const Function, func_ref);
        if let Some(&index) = self.ref_names.borrow().get(&key) {
            return index;
        }
        let index = FuncName::of_external(&func.dfg.ext_funcs[func_ref].name, func)
            .and_then(|name| self.names_index.get(&name).copied());
        self.ref_names.borrow_mut().insert(key, index);
        index
    }

    /// Bytes of stack in use.
    pub(super) fn stack_bytes(&self) -> u64 {
        self.stack.len() as u64
    }

    fn layout(&mut self, func: &Function) -> &SlotLayout {
        self.layouts
            .entry(func as *const Function)
            .or_insert_with(|| SlotLayout::of(func))
    }

    /// `v` as the other side must see it: a stack address of a live frame becomes its slot's
    /// place (the frame's place among the live frames that have stack slots: a merged
    /// side's forwarders have none, and a merged body has its original's; without it a store
    /// into the caller's slot 0 and one into the callee's slot 0 were one store), which no
    /// number equals; anything else is itself.
    pub(super) fn observed(&self, v: &DataValue) -> Observed {
        let raw = match v {
            DataValue::I64(x) => *x as u64,
            DataValue::I32(x) => u64::from(*x as u32),
            _ => return Observed::Value(v.clone()),
        };
        match self
            .stack_position(raw)
            .and_then(|(_, pos)| self.slot_at(pos))
        {
            Some((frame, slot, offset)) => Observed::Stack(StackAddress {
                ty: v.ty(),
                frame: self.slotted_frames[frame],
                slot: slot as u32,
                offset: offset as u32,
            }),
            None => Observed::Value(v.clone()),
        }
    }

    /// The live frame (its index) whose bytes the raw address `raw` is in, and its position in
    /// `stack`. Frame `i` is at `top - frame_top[i]` to `top - frame_base[i]`, below its caller.
    fn stack_position(&self, raw: u64) -> Option<(usize, u64)> {
        let len = self.stack.len() as u64;
        let below_top = [STACK_TOP_64, STACK_TOP_32]
            .into_iter()
            .find_map(|top| top.checked_sub(raw).filter(|&q| q > 0 && q <= len))?;
        let frame = (self.frame_base)
            .partition_point(|&b| b < below_top)
            .checked_sub(1)?;
        let (base, top) = (self.frame_base[frame], self.frame_top[frame]);
        (below_top <= top).then(|| (frame, base + top - below_top))
    }

    /// The raw address of position `pos` of frame `frame`'s bytes in `stack`.
    fn stack_raw(&self, frame: usize, pos: u64, size: AddressSize) -> u64 {
        let top = match size {
            AddressSize::_32 => STACK_TOP_32,
            AddressSize::_64 => STACK_TOP_64,
        };
        top - self.frame_top[frame] + (pos - self.frame_base[frame])
    }

    /// The live frame at stack position `pos` (its index), and its slot there (number, offset
    /// in it).
    fn slot_at(&self, pos: u64) -> Option<(usize, u64, u64)> {
        let frame = self
            .frame_base
            .partition_point(|&b| b <= pos)
            .checked_sub(1)?;
        let func = self.frames[frame].function();
        let layout = self.layouts.get(&(func as *const Function))?;
        let within = pos - self.frame_base[frame];
        let slot = layout
            .offsets
            .partition_point(|&o| o <= within)
            .checked_sub(1)?;
        Some((frame, slot as u64, within - layout.offsets[slot]))
    }

    /// Whether an access of `len` bytes at `raw` outside the stack faults: only one that may
    /// trap (no `notrap` flag) at an address that is not mapped.
    fn faults(raw: u64, len: usize, flags: MemFlagsData) -> bool {
        // An access that runs past 2^64 (at -8 and up) is at the top of the address space,
        // never below 16 MiB.
        let mapped = match raw.checked_add(len as u64) {
            None => false,
            Some(end) => {
                end <= MAPPED
                    || (raw >= WRAPPED - MAPPED && end <= WRAPPED + MAPPED)
                    || raw.wrapping_sub(SYMBOLS) < SYMBOLS_SPAN
            }
        };
        !mapped && flags.trap_code().is_some()
    }

    /// The stack bytes `raw..raw + len`, when they are all in the stack.
    fn stack_range(&self, raw: u64, len: usize) -> Option<std::ops::Range<usize>> {
        let (frame, pos) = self.stack_position(raw)?;
        let end = pos + len as u64;
        (end <= self.frame_top[frame]).then_some(pos as usize..end as usize)
    }

    /// The address of the symbol `name` plus `offset`: a function's is its slot's address; any
    /// other name's is its page ([`SymbolPages`]), the same on both sides. A thread-local symbol
    /// (`tls`) has an address of its own, another than the plain symbol's.
    fn symbol_address(
        &self,
        name: &ExternalName,
        offset: i64,
        tls: bool,
    ) -> Result<u64, MemoryError> {
        let func = self.get_current_function();
        let base = match name {
            ExternalName::User(_) | ExternalName::TestCase(_)
                if !tls
                    && FuncName::of_external(name, func)
                        .is_some_and(|n| self.names_index.contains_key(&n)) =>
            {
                raw_of(&self.function_address(AddressSize::_64, name)?)
            }
            _ => self.symbol_pages.address(&symbol_text(name, func, tls)),
        };
        Ok(base.wrapping_add(offset as u64))
    }

    /// Marks the stack slot `v` points into, when it does, as escaped.
    pub(super) fn escape(&mut self, v: &DataValue) {
        match v {
            DataValue::I64(x) => self.escape_address(*x as u64),
            DataValue::I32(x) => self.escape_address(u64::from(*x as u32)),
            // A pointer may travel in a lane of a vector (a pointer and a length copied in one
            // store) or in half of an `i128`: each 64- and 32-bit lane is one.
            DataValue::I128(_) | DataValue::V128(_) | DataValue::V64(_) => {
                let mut bytes = [0u8; 16];
                let n = v.ty().bytes() as usize;
                v.write_to_slice_le(&mut bytes[..n]);
                for lane in bytes[..n].chunks_exact(8) {
                    self.escape_address(u64::from_le_bytes(lane.try_into().unwrap()));
                }
                for lane in bytes[..n].chunks_exact(4) {
                    self.escape_address(u64::from(u32::from_le_bytes(lane.try_into().unwrap())));
                }
            }
            _ => {}
        }
    }

    /// Marks the stack slot `raw` points into as escaped, and the one it points just past: a
    /// pointer one past a slot's end (a `begin, end` pair's end) reaches the slot below it.
    fn escape_address(&mut self, raw: u64) {
        for at in [Some(raw), raw.checked_sub(1)] {
            let pos = at.and_then(|raw| self.stack_position(raw));
            if let Some((frame, slot, _)) = pos.and_then(|(_, p)| self.slot_at(p))
                && !self.escaped.contains(&(frame, slot))
            {
                self.escaped.push((frame, slot));
            }
        }
    }

    /// What a call of a function not run leaves in the escaped stack slots of live frames:
    /// their bytes read anew, derived from the memory's seed, `call` and the slot (the same on
    /// both sides for the same function's slot, wherever its frame is).
    pub(super) fn clobber_escaped(&mut self, call: u64) {
        for &(frame, slot) in &self.escaped {
            let func = self.frames[frame].function();
            let Some(layout) = self.layouts.get(&(func as *const Function)) else {
                continue;
            };
            let size = func
                .sized_stack_slots
                .values()
                .nth(slot as usize)
                .map(|s| s.size);
            let start = self.frame_base[frame] + layout.offsets[slot as usize];
            let end = start + u64::from(size.unwrap_or(0));
            let tag = call.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ slot << 32;
            self.memory
                .fill(tag, &mut self.stack[start as usize..end as usize]);
        }
    }

    /// Defines the read-only data object `name` (as CLIF writes the symbol) with `bytes`.
    pub(super) fn define_data(&mut self, name: &str, bytes: &[u8]) {
        self.memory.define(self.symbol_pages.address(name), bytes);
    }
}

/// The bytes of a frame of `func`: a register for each of its values.
fn frame_bytes(func: &Function) -> u64 {
    (func.dfg.num_values() * std::mem::size_of::<Option<DataValue>>()) as u64
}

fn set_bit(bits: &[Cell<u64>], i: usize) {
    let word = &bits[i / 64];
    word.set(word.get() | 1 << (i % 64));
}

/// The raw value of an address, as the program saw it.
pub(super) fn raw_of(address: &Address) -> u64 {
    match DataValue::try_from(address.clone()) {
        Ok(DataValue::I32(v)) => u64::from(v as u32),
        Ok(DataValue::I64(v)) => v as u64,
        _ => unreachable!("an address is an i32 or i64"),
    }
}

/// The address of the raw value `raw`, of `size`.
fn address_of(raw: u64, size: AddressSize) -> Result<Address, MemoryError> {
    Address::try_from(match size {
        AddressSize::_32 => DataValue::I32(raw as u32 as i32),
        AddressSize::_64 => DataValue::I64(raw as i64),
    })
}

fn value_of(raw: u64, ty: Type) -> Result<DataValue, MemoryError> {
    DataValue::int(i128::from(raw as i64), ty).map_err(|_| MemoryError::InvalidAddressType(ty))
}

impl<'a> State<'a> for Machine<'a> {
    fn get_function(&self, func_ref: FuncRef) -> Option<&'a Function> {
        let index = self.name_of_ref(self.get_current_function(), func_ref)? as usize;
        set_bit(&self.resolved_names, index);
        Some(self.by_name[index])
    }
    fn get_current_function(&self) -> &'a Function {
        self.current_frame().function()
    }
    fn get_libcall_handler(&self) -> LibCallHandler {
        // Calls to libcalls are made before the interpreter would (see `run`).
        |_, _| Err(CraneliftTrap::UnreachableCodeReached)
    }
    fn push_frame(&mut self, function: &'a Function) {
        let layout = self.layout(function);
        let (size, alignment) = (layout.size, layout.base_alignment);
        let base = (self.stack.len() as u64).next_multiple_of(alignment);
        let top = base + size.next_multiple_of(alignment);
        self.stack.resize(top as usize, 0);
        self.frame_base.push(base);
        self.frame_top.push(top);
        let below = self.slotted_frames.last().copied().unwrap_or(0);
        let slotted = !function.sized_stack_slots.is_empty();
        self.slotted_frames.push(below + u32::from(slotted));
        let spare = self
            .spare_frames
            .get_mut(&(function as *const Function))
            .and_then(Vec::pop);
        let frame = match spare {
            Some(mut frame) => {
                self.spare_bytes -= frame_bytes(function);
                // Empty, as a new frame is: a value read before it is set stays an error.
                frame.entries_mut().fill(None);
                frame
            }
            None => Frame::new(function),
        };
        self.frames.push(frame);
    }
    fn pop_frame(&mut self) {
        let live = self.frames.len().saturating_sub(1);
        self.escaped.retain(|&(frame, _)| frame < live);
        self.slotted_frames.pop();
        self.frame_top.pop();
        if let (Some(frame), Some(base)) = (self.frames.pop(), self.frame_base.pop()) {
            self.stack.truncate(base as usize);
            let function = frame.function() as *const Function;
            let bytes = frame_bytes(frame.function());
            let spare = self.spare_frames.entry(function).or_default();
            // A few per function, more while they fit in the budget: deep recursion would
            // keep all its frames the piece long.
            if spare.len() < SPARE_FRAMES || self.spare_bytes + bytes <= SPARE_BYTES {
                spare.push(frame);
                self.spare_bytes += bytes;
            }
        }
    }
    fn current_frame_mut(&mut self) -> &mut Frame<'a> {
        self.frames.last_mut().expect("a frame")
    }
    fn current_frame(&self) -> &Frame<'a> {
        self.frames.last().expect("a frame")
    }
    fn stack_address(
        &self,
        size: AddressSize,
        slot: StackSlot,
        offset: u64,
    ) -> Result<Address, MemoryError> {
        let func = self.get_current_function();
        let max = u64::from(func.sized_stack_slots[slot].size);
        if offset >= max {
            return Err(MemoryError::InvalidOffset { offset, max });
        }
        let layout = &self.layouts[&(func as *const Function)];
        let frame = self.frame_base.len() - 1;
        let pos = self.frame_base[frame] + layout.offsets[slot.as_u32() as usize];
        address_of(self.stack_raw(frame, pos + offset, size), size)
    }
    fn checked_load(
        &self,
        address: Address,
        ty: Type,
        mem_flags: MemFlagsData,
    ) -> Result<DataValue, MemoryError> {
        let raw = raw_of(&address);
        let mut bytes = [0u8; 16];
        let n = ty.bytes() as usize;
        let dst = bytes
            .get_mut(..n)
            .ok_or(MemoryError::InvalidAddressType(ty))?;
        match self.stack_range(raw, n) {
            Some(range) => dst.copy_from_slice(&self.stack[range]),
            None if Self::faults(raw, n, mem_flags) => {
                return Err(MemoryError::OutOfBoundsLoad {
                    addr: address,
                    load_size: n,
                    mem_flags,
                });
            }
            None => self.memory.read(raw, dst),
        }
        Ok(match mem_flags.endianness(Endianness::Little) {
            Endianness::Big => DataValue::read_from_slice_be(dst, ty),
            Endianness::Little => DataValue::read_from_slice_le(dst, ty),
        })
    }
    fn checked_store(
        &mut self,
        address: Address,
        v: DataValue,
        mem_flags: MemFlagsData,
    ) -> Result<(), MemoryError> {
        let raw = raw_of(&address);
        let mut bytes = [0u8; 16];
        let n = v.ty().bytes() as usize;
        let src = bytes
            .get_mut(..n)
            .ok_or(MemoryError::InvalidAddressType(v.ty()))?;
        match mem_flags.endianness(Endianness::Little) {
            Endianness::Big => v.write_to_slice_be(src),
            Endianness::Little => v.write_to_slice_le(src),
        }
        let in_stack = self.stack_range(raw, n);
        if in_stack.is_none() && Self::faults(raw, n, mem_flags) {
            return Err(MemoryError::OutOfBoundsStore {
                addr: address,
                store_size: n,
                mem_flags,
            });
        }
        self.escape(&v);
        let observed_at = self.observed(&DataValue::I64(raw as i64));
        self.stores.push(Store {
            address: observed_at,
            value: self.observed(&v),
        });
        match in_stack {
            Some(range) => self.stack[range].copy_from_slice(src),
            None => self.memory.write(raw, src),
        }
        Ok(())
    }
    fn function_address(
        &self,
        size: AddressSize,
        name: &ExternalName,
    ) -> Result<Address, MemoryError> {
        let func = self.get_current_function();
        let (entry, index) = match name {
            ExternalName::LibCall(libcall) => (
                AddressFunctionEntry::LibCall,
                cranelift_codegen::ir::LibCall::all_libcalls()
                    .iter()
                    .position(|l| l == libcall)
                    .unwrap_or(0) as u64,
            ),
            _ => {
                let index = FuncName::of_external(name, func)
                    .and_then(|n| self.names_index.get(&n))
                    .ok_or(MemoryError::InvalidAddress(DataValue::I64(0)))?;
                // The run saw this name's address, which a merge may have made another's.
                set_bit(&self.resolved_names, *index as usize);
                let slot = self.slot_of[*index as usize];
                let bits = function_stride_bits(size);
                (AddressFunctionEntry::UserFunction, u64::from(slot) << bits)
            }
        };
        Address::from_parts(size, AddressRegion::Function, entry as u64, index)
    }
    fn get_function_from_address(&self, address: Address) -> Option<InterpreterFunctionRef<'a>> {
        if address.region == AddressRegion::Function
            && address.entry == AddressFunctionEntry::UserFunction as u64
        {
            // An address into a function's code (`symbol %a+1`) is no function's.
            let bits = function_stride_bits(address.size);
            if address.offset & ((1 << bits) - 1) != 0 {
                return None;
            }
            let slot = usize::try_from(address.offset >> bits).ok()?;
            if slot < self.slot_fn.len() {
                set_bit(&self.resolved_slots, slot);
            }
            return self
                .slot_fn
                .get(slot)
                .copied()
                .flatten()
                .map(InterpreterFunctionRef::Function);
        }
        None
    }
    fn resolve_global_value(&self, gv: GlobalValue) -> Result<DataValue, MemoryError> {
        let func = self.get_current_function();
        // The chain from `gv` down to its root; a chain is finite (the verifier refuses
        // cycles), the bound only keeps a bad module from looping here.
        let mut chain = vec![gv];
        for _ in 0..func.global_values.len() {
            match &func.global_values[*chain.last().unwrap()] {
                GlobalValueData::Load { base, .. } | GlobalValueData::IAddImm { base, .. } => {
                    chain.push(*base)
                }
                _ => break,
            }
        }
        let mut value = DataValue::I64(0);
        for &gv in chain.iter().rev() {
            value = match &func.global_values[gv] {
                GlobalValueData::VMContext => {
                    let index = func
                        .signature
                        .params
                        .iter()
                        .position(|p| p.purpose == ArgumentPurpose::VMContext)
                        .expect("the verifier checks that a vmctx global value has a parameter");
                    let entry = func.layout.entry_block().expect("an entry block");
                    self.current_frame()
                        .get(func.dfg.block_params(entry)[index])
                        .clone()
                }
                GlobalValueData::Load {
                    offset,
                    global_type,
                    flags,
                    ..
                } => {
                    let base = raw_of(&Address::try_from(value.clone())?);
                    let at = base.wrapping_add(i64::from(*offset) as u64);
                    let flags = func.dfg.mem_flags[*flags];
                    self.checked_load(address_of(at, AddressSize::_64)?, *global_type, flags)?
                }
                GlobalValueData::IAddImm {
                    offset,
                    global_type,
                    ..
                } => {
                    let base = raw_of(&Address::try_from(value.clone())?);
                    value_of(base.wrapping_add(offset.bits() as u64), *global_type)?
                }
                GlobalValueData::Symbol {
                    name, offset, tls, ..
                } => value_of(self.symbol_address(name, offset.bits(), *tls)?, types::I64)?,
                // Caught as an unsupported run.
                GlobalValueData::DynScaleTargetConst { .. } => panic!("dyn_scale_target_const"),
            };
        }
        Ok(value)
    }
    fn get_pinned_reg(&self) -> DataValue {
        self.pinned_reg.clone()
    }
    fn set_pinned_reg(&mut self, v: DataValue) {
        self.pinned_reg = v;
    }
}
