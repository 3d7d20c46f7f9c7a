//! The interpreter's state, with function addresses by slot: a delegate to `InterpreterState`
//! that only changes what `func_addr` gives and what a call through an address runs.

use crate::module::FuncName;
use cranelift_codegen::data_value::DataValue;
use cranelift_codegen::ir::{
    ExternalName, FuncRef, Function, GlobalValue, MemFlagsData, StackSlot, Type,
};
use cranelift_interpreter::address::{Address, AddressFunctionEntry, AddressRegion, AddressSize};
use cranelift_interpreter::frame::Frame;
use cranelift_interpreter::interpreter::{InterpreterState, LibCallHandler};
use cranelift_interpreter::state::{InterpreterFunctionRef, MemoryError, State};
use rustc_hash::FxHashMap;

/// The interpreter's state with addresses of functions by slot (see
/// [`Names`](super::names::Names)); everything else is `InterpreterState`'s.
pub(super) struct SlotState<'a> {
    pub(super) inner: InterpreterState<'a>,
    pub(super) slot_of: &'a FxHashMap<FuncName, u32>,
    /// The function run by a call through each slot's address.
    pub(super) slot_fn: Vec<Option<&'a Function>>,
}

impl<'a> State<'a> for SlotState<'a> {
    fn get_function(&self, func_ref: FuncRef) -> Option<&'a Function> {
        self.inner.get_function(func_ref)
    }
    fn get_current_function(&self) -> &'a Function {
        self.inner.get_current_function()
    }
    fn get_libcall_handler(&self) -> LibCallHandler {
        self.inner.get_libcall_handler()
    }
    fn push_frame(&mut self, function: &'a Function) {
        self.inner.push_frame(function)
    }
    fn pop_frame(&mut self) {
        self.inner.pop_frame()
    }
    fn current_frame_mut(&mut self) -> &mut Frame<'a> {
        self.inner.current_frame_mut()
    }
    fn current_frame(&self) -> &Frame<'a> {
        self.inner.current_frame()
    }
    fn stack_address(
        &self,
        size: AddressSize,
        slot: StackSlot,
        offset: u64,
    ) -> Result<Address, MemoryError> {
        self.inner.stack_address(size, slot, offset)
    }
    fn checked_load(
        &self,
        address: Address,
        ty: Type,
        mem_flags: MemFlagsData,
    ) -> Result<DataValue, MemoryError> {
        self.inner.checked_load(address, ty, mem_flags)
    }
    fn checked_store(
        &mut self,
        address: Address,
        v: DataValue,
        mem_flags: MemFlagsData,
    ) -> Result<(), MemoryError> {
        self.inner.checked_store(address, v, mem_flags)
    }
    fn function_address(
        &self,
        size: AddressSize,
        name: &ExternalName,
    ) -> Result<Address, MemoryError> {
        let func = self.get_current_function();
        match FuncName::of_external(name, func).and_then(|n| self.slot_of.get(&n)) {
            Some(&slot) => Address::from_parts(
                size,
                AddressRegion::Function,
                AddressFunctionEntry::UserFunction as u64,
                u64::from(slot),
            ),
            None => self.inner.function_address(size, name),
        }
    }
    fn get_function_from_address(&self, address: Address) -> Option<InterpreterFunctionRef<'a>> {
        if address.region == AddressRegion::Function
            && address.entry == AddressFunctionEntry::UserFunction as u64
        {
            let slot = usize::try_from(address.offset).ok()?;
            return self
                .slot_fn
                .get(slot)
                .copied()
                .flatten()
                .map(InterpreterFunctionRef::Function);
        }
        self.inner.get_function_from_address(address)
    }
    fn resolve_global_value(&self, gv: GlobalValue) -> Result<DataValue, MemoryError> {
        self.inner.resolve_global_value(gv)
    }
    fn get_pinned_reg(&self) -> DataValue {
        self.inner.get_pinned_reg()
    }
    fn set_pinned_reg(&mut self, v: DataValue) {
        self.inner.set_pinned_reg(v)
    }
}
