//! An oracle for "the same function", independent of the comparator under test.
//!
//! [`canonical`] prints a function as CLIF text with every entity renamed canonically: blocks
//! are numbered in *breadth-first* order from the entry (the comparator walks depth-first, with
//! a stack), values in order of first appearance in that text, stack slots by their declaration
//! number after the whole frame (every slot, in declaration order), and function references and
//! signatures are replaced by their full declarations. Two functions have the same canonical
//! text exactly when one is the other with its values, blocks, signatures and function
//! references renamed and its blocks laid out in another order
//! (unreachable blocks do not appear). The text comes from Cranelift's own printer, so it shows
//! every field of every instruction.
//!
//! It handles what the generator produces; functions with global values, constants, dynamic
//! stack slots or exception tables are rejected with a panic.

use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{self, Block, Function, SigRef};
use std::collections::HashMap;
use std::fmt::Write;

/// The successors of `block`, in terminator order (`brif` then/else, `br_table` default first).
pub fn successors(func: &Function, block: Block) -> Vec<Block> {
    let Some(last) = func.layout.last_inst(block) else {
        return Vec::new();
    };
    func.dfg.insts[last]
        .branch_destination(&func.dfg.jump_tables, &func.dfg.exception_tables)
        .iter()
        .map(|call| call.block(&func.dfg.value_lists))
        .collect()
}

/// The blocks reachable from the entry, in breadth-first order.
pub fn reachable_blocks(func: &Function) -> Vec<Block> {
    let Some(entry) = func.layout.entry_block() else {
        return Vec::new();
    };
    let mut order = vec![entry];
    let mut seen = std::collections::HashSet::from([entry]);
    let mut at = 0;
    while at < order.len() {
        for s in successors(func, order[at]) {
            if seen.insert(s) {
                order.push(s);
            }
        }
        at += 1;
    }
    order
}

struct Renamer<'a> {
    func: &'a Function,
    /// How names written `%name` appear in the text.
    names: &'a dyn Fn(&str) -> String,
    blocks: HashMap<Block, usize>,
    values: HashMap<String, usize>,
}

impl Renamer<'_> {
    /// Rewrites every entity name in `text`.
    fn rename(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !(c.is_ascii_alphanumeric() || c == '_') {
                out.push(c);
                i += 1;
                continue;
            }
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after_percent = start > 0 && chars[start - 1] == '%';
            if after_percent {
                out.push_str(&(self.names)(&word));
            } else {
                let renamed = self.word(&word);
                out.push_str(&renamed);
            }
        }
        out
    }

    fn word(&mut self, word: &str) -> String {
        let split = word
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(word.len());
        let (prefix, digits) = word.split_at(split);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return word.to_string();
        }
        let n: usize = digits.parse().unwrap();
        match prefix {
            "v" => {
                let next = self.values.len();
                let k = *self.values.entry(word.to_string()).or_insert(next);
                format!("V{k}")
            }
            "block" => {
                let b = Block::new(n);
                let k = self.blocks.get(&b).unwrap_or_else(|| {
                    panic!("{b} is a target of a reachable block but was not reached")
                });
                format!("B{k}")
            }
            // Slots keep their declaration numbers: the frame (printed in full up front) is laid
            // out in declaration order.
            "ss" => format!("S{n}"),
            "sig" => format!("[{}]", self.func.dfg.signatures[SigRef::new(n)]),
            "fn" => {
                let f = cranelift_codegen::ir::FuncRef::new(n);
                let text = self.func.dfg.ext_funcs[f]
                    .display(Some(&self.func.params))
                    .to_string();
                format!("F[{}]", self.rename(&text))
            }
            // An alias region by its user id (its description is only for printing).
            "region" => format!(
                "R[{}]",
                self.func.dfg.alias_regions[ir::AliasRegion::new(n)].user_id
            ),
            "gv" | "jt" | "const" | "dss" | "dt" | "mt" | "extable" => {
                panic!("canonical: `{word}` is not supported")
            }
            _ => word.to_string(),
        }
    }
}

/// The canonical text of `func` (see the module docs).
pub fn canonical(func: &Function) -> String {
    canonical_with_names(func, &|name| name.to_string())
}

/// The canonical text of `func`, with every `%name` (function names, as in `fn0 = %ext0 sig0`)
/// written as `names` says; used to compare calls to module functions by their class.
pub fn canonical_with_names(func: &Function, names: &dyn Fn(&str) -> String) -> String {
    assert!(func.global_values.is_empty(), "canonical: global values");
    assert!(func.stack_limit.is_none(), "canonical: stack limit");
    assert!(
        func.dynamic_stack_slots.is_empty(),
        "canonical: dynamic stack slots"
    );
    let mut out = String::new();
    writeln!(out, "signature {}", func.signature).unwrap();
    for (slot, data) in func.sized_stack_slots.iter() {
        writeln!(out, "S{} = {data}", slot.index()).unwrap();
    }
    let order = reachable_blocks(func);
    let mut renamer = Renamer {
        func,
        names,
        blocks: order.iter().enumerate().map(|(i, &b)| (b, i)).collect(),
        values: HashMap::new(),
    };
    for &block in &order {
        let mut header = format!("block{}(", block.index());
        for (i, &p) in func.dfg.block_params(block).iter().enumerate() {
            if i > 0 {
                header.push_str(", ");
            }
            write!(header, "{p}: {}", func.dfg.value_type(p)).unwrap();
        }
        header.push(')');
        if func.layout.is_cold(block) {
            header.push_str(" cold");
        }
        writeln!(out, "{}:", renamer.rename(&header)).unwrap();
        for inst in func.layout.block_insts(block) {
            let mut text = func.dfg.display_inst(inst).to_string();
            // Drop the trailing comment that shows the constants used (`; v1 = 5`).
            if let Some(pos) = text.find("  ; ") {
                text.truncate(pos);
            }
            writeln!(out, "    {}", renamer.rename(&text)).unwrap();
        }
    }
    out
}
