//! The canonical copy of a shared body: the same function, with its values, blocks and
//! declarations numbered in the order a walk from the entry block meets them, so that its text
//! depends on its content, not on how the member it came from was numbered. Unreachable blocks,
//! unused declarations, source locations and value labels are left behind (none of them is
//! compared, none changes what the function does).

use cranelift_codegen::ir::instructions::InstructionMapper;
use cranelift_codegen::ir::{
    self, Block, BlockArg, BlockCall, Constant, ExceptionTable, ExceptionTableData,
    ExceptionTableItem, ExternalName, FuncRef, Function, GlobalValue, GlobalValueData, Immediate,
    JumpTable, JumpTableData, MemFlags, SigRef, Value, ValueList,
};
use rustc_hash::FxHashMap;

/// `src` renumbered (see the module docs); `src` itself when it has dynamic stack slots or
/// types, which this copy does not handle.
pub(crate) fn canonical_copy(src: &Function) -> Function {
    if !src.dynamic_stack_slots.is_empty() || !src.dfg.dynamic_types.is_empty() {
        return src.clone();
    }
    let mut dst = Function::with_name_signature(src.name.clone(), src.signature.clone());
    // The frame is compared slot by slot in declaration order: kept as it is.
    for data in src.sized_stack_slots.values() {
        dst.create_sized_stack_slot(data.clone());
    }
    let mut copy = Copy {
        src,
        dst: &mut dst,
        values: FxHashMap::default(),
        blocks: FxHashMap::default(),
        globals: FxHashMap::default(),
        func_refs: FxHashMap::default(),
        sig_refs: FxHashMap::default(),
        constants: FxHashMap::default(),
        immediates: FxHashMap::default(),
        to_visit: Vec::new(),
    };
    if let Some(gv) = src.stack_limit {
        let gv = copy.map_global_value(gv);
        copy.dst.stack_limit = Some(gv);
    }
    let Some(entry) = src.layout.entry_block() else {
        return dst;
    };
    copy.map_block(entry);
    while let Some(block) = copy.to_visit.pop() {
        copy.copy_block(block);
    }
    dst
}

/// The state of one copy: each entity of `src` to its counterpart in `dst`, made on first use.
struct Copy<'a> {
    src: &'a Function,
    dst: &'a mut Function,
    values: FxHashMap<Value, Value>,
    blocks: FxHashMap<Block, Block>,
    globals: FxHashMap<GlobalValue, GlobalValue>,
    func_refs: FxHashMap<FuncRef, FuncRef>,
    sig_refs: FxHashMap<SigRef, SigRef>,
    constants: FxHashMap<Constant, Constant>,
    immediates: FxHashMap<Immediate, Immediate>,
    /// Blocks made, not yet copied (taken last made first, as the comparator's walk does).
    to_visit: Vec<Block>,
}

impl Copy<'_> {
    /// Copies the instructions of `block` (already made) into its counterpart. Every value it
    /// uses is defined before: a block is copied after the block it was first met from, hence
    /// after every block that dominates it (each path from the entry passes through them).
    fn copy_block(&mut self, block: Block) {
        let new_block = self.blocks[&block];
        self.dst.layout.append_block(new_block);
        if self.src.layout.is_cold(block) {
            self.dst.layout.set_cold(new_block);
        }
        for inst in self.src.layout.block_insts(block) {
            let data = self.src.dfg.insts[inst].map(&mut *self);
            let new_inst = self.dst.dfg.make_inst(data);
            let ctrl = self.src.dfg.ctrl_typevar(inst);
            self.dst.dfg.make_inst_results(new_inst, ctrl);
            let old = self.src.dfg.inst_results(inst);
            let new = self.dst.dfg.inst_results(new_inst).to_vec();
            for (&o, n) in old.iter().zip(new) {
                self.values.insert(o, n);
            }
            for entry in self
                .src
                .dfg
                .user_stack_map_entries(inst)
                .unwrap_or_default()
            {
                self.dst
                    .dfg
                    .append_user_stack_map_entry(new_inst, entry.clone());
            }
            self.dst.layout.append_inst(new_inst, new_block);
        }
    }

    fn map_external_name(&mut self, name: &ExternalName) -> ExternalName {
        match name {
            ExternalName::User(r) => {
                let user = self.src.params.user_named_funcs()[*r].clone();
                ExternalName::User(self.dst.declare_imported_user_function(user))
            }
            other => other.clone(),
        }
    }
}

impl InstructionMapper for Copy<'_> {
    fn map_value(&mut self, value: Value) -> Value {
        let value = self.src.dfg.resolve_aliases(value);
        *self
            .values
            .get(&value)
            .expect("a value is defined in a block copied before its uses")
    }

    fn map_value_list(&mut self, list: ValueList) -> ValueList {
        let mut new = ValueList::new();
        for &v in list.as_slice(&self.src.dfg.value_lists) {
            let v = self.map_value(v);
            new.push(v, &mut self.dst.dfg.value_lists);
        }
        new
    }

    fn map_global_value(&mut self, gv: GlobalValue) -> GlobalValue {
        if let Some(&new) = self.globals.get(&gv) {
            return new;
        }
        // The chain of bases, made base first (in a loop: a chain may be long).
        let mut chain = vec![gv];
        while let Some(base) = match self.src.global_values[*chain.last().unwrap()] {
            GlobalValueData::Load { base, .. } | GlobalValueData::IAddImm { base, .. } => {
                Some(base).filter(|b| !self.globals.contains_key(b))
            }
            _ => None,
        } {
            chain.push(base);
        }
        for &old in chain.iter().rev() {
            let data = match self.src.global_values[old].clone() {
                GlobalValueData::Load {
                    base,
                    offset,
                    global_type,
                    flags,
                } => GlobalValueData::Load {
                    base: self.globals[&base],
                    offset,
                    global_type,
                    flags: self.map_mem_flags(flags),
                },
                GlobalValueData::IAddImm {
                    base,
                    offset,
                    global_type,
                } => GlobalValueData::IAddImm {
                    base: self.globals[&base],
                    offset,
                    global_type,
                },
                GlobalValueData::Symbol {
                    name,
                    offset,
                    colocated,
                    tls,
                } => GlobalValueData::Symbol {
                    name: self.map_external_name(&name),
                    offset,
                    colocated,
                    tls,
                },
                other => other,
            };
            let new = self.dst.create_global_value(data);
            self.globals.insert(old, new);
        }
        self.globals[&gv]
    }

    fn map_jump_table(&mut self, table: JumpTable) -> JumpTable {
        let data = &self.src.dfg.jump_tables[table];
        let default = self.map_block_call(data.default_block());
        let entries: Vec<BlockCall> = data
            .as_slice()
            .to_vec()
            .into_iter()
            .map(|call| self.map_block_call(call))
            .collect();
        self.dst
            .create_jump_table(JumpTableData::new(default, &entries))
    }

    fn map_exception_table(&mut self, table: ExceptionTable) -> ExceptionTable {
        let data = &self.src.dfg.exception_tables[table];
        let sig = data.signature();
        let normal = *data.normal_return();
        let items: Vec<ExceptionTableItem> = data.items().collect();
        let sig = self.map_sig_ref(sig);
        let normal = self.map_block_call(normal);
        let items: Vec<ExceptionTableItem> = items
            .into_iter()
            .map(|item| match item {
                ExceptionTableItem::Tag(tag, call) => {
                    ExceptionTableItem::Tag(tag, self.map_block_call(call))
                }
                ExceptionTableItem::Default(call) => {
                    ExceptionTableItem::Default(self.map_block_call(call))
                }
                ExceptionTableItem::Context(v) => ExceptionTableItem::Context(self.map_value(v)),
            })
            .collect();
        self.dst
            .dfg
            .exception_tables
            .push(ExceptionTableData::new(sig, normal, items))
    }

    fn map_block_call(&mut self, call: BlockCall) -> BlockCall {
        let block = call.block(&self.src.dfg.value_lists);
        let new_block = self.map_block(block);
        let args: Vec<BlockArg> = call.args(&self.src.dfg.value_lists).collect();
        let args: Vec<BlockArg> = args
            .into_iter()
            .map(|arg| match arg {
                BlockArg::Value(v) => BlockArg::Value(self.map_value(v)),
                other => other,
            })
            .collect();
        BlockCall::new(new_block, args, &mut self.dst.dfg.value_lists)
    }

    /// A block is made, with its parameters, when first met; it is copied later.
    fn map_block(&mut self, block: Block) -> Block {
        if let Some(&new) = self.blocks.get(&block) {
            return new;
        }
        let new = self.dst.dfg.make_block();
        for &param in self.src.dfg.block_params(block) {
            let ty = self.src.dfg.value_type(param);
            let new_param = self.dst.dfg.append_block_param(new, ty);
            self.values.insert(param, new_param);
        }
        self.blocks.insert(block, new);
        self.to_visit.push(block);
        new
    }

    fn map_func_ref(&mut self, func_ref: FuncRef) -> FuncRef {
        if let Some(&new) = self.func_refs.get(&func_ref) {
            return new;
        }
        let data = self.src.dfg.ext_funcs[func_ref].clone();
        let new = ir::ExtFuncData {
            name: self.map_external_name(&data.name),
            signature: self.map_sig_ref(data.signature),
            colocated: data.colocated,
            patchable: data.patchable,
        };
        let new = self.dst.import_function(new);
        self.func_refs.insert(func_ref, new);
        new
    }

    fn map_sig_ref(&mut self, sig_ref: SigRef) -> SigRef {
        if let Some(&new) = self.sig_refs.get(&sig_ref) {
            return new;
        }
        let new = self
            .dst
            .import_signature(self.src.dfg.signatures[sig_ref].clone());
        self.sig_refs.insert(sig_ref, new);
        new
    }

    fn map_stack_slot(&mut self, slot: ir::StackSlot) -> ir::StackSlot {
        slot
    }

    fn map_dynamic_stack_slot(&mut self, slot: ir::DynamicStackSlot) -> ir::DynamicStackSlot {
        slot
    }

    fn map_constant(&mut self, constant: Constant) -> Constant {
        if let Some(&new) = self.constants.get(&constant) {
            return new;
        }
        let data = self.src.dfg.constants.get(constant).clone();
        let new = self.dst.dfg.constants.insert(data);
        self.constants.insert(constant, new);
        new
    }

    fn map_immediate(&mut self, immediate: Immediate) -> Immediate {
        if let Some(&new) = self.immediates.get(&immediate) {
            return new;
        }
        let data = self.src.dfg.immediates[immediate].clone();
        let new = self.dst.dfg.immediates.push(data);
        self.immediates.insert(immediate, new);
        new
    }

    fn map_mem_flags(&mut self, flags: MemFlags) -> MemFlags {
        let mut data = self.src.dfg.mem_flags[flags];
        if let Some(region) = data.alias_region() {
            let region_data = self.src.dfg.alias_regions[region].clone();
            data.set_alias_region(Some(self.dst.dfg.alias_regions.insert(region_data)));
        }
        self.dst
            .dfg
            .mem_flags
            .insert(data)
            .expect("no more flags than the function copied had")
    }
}
