//! The comparator: a total order over CLIF functions (LLVM's `FunctionComparator`, for CLIF).
//!
//! # How the order is built
//!
//! LLVM compares two functions side by side, stage by stage (attributes, type, then a CFG-ordered
//! walk of both bodies), associating values by *serial numbers*: the first value met on each side
//! gets 0, the next 1, and so on, and two values are equal when they got the same number. The
//! serial number of a value depends only on its own function's walk, so the side-by-side
//! comparison is exactly a lexicographic comparison of two sequences that each function produces
//! alone: every field in walk order, every value and block replaced by its serial number. This
//! module writes that sequence once per function (a [`Fingerprint`]: a `Vec<u32>` of *tokens*)
//! and compares fingerprints. Consequences:
//!
//! - It is a total order by construction: the order of a function is the lexicographic order of
//!   its fingerprint, so reflexivity, antisymmetry and transitivity are those of slice order.
//! - The hash ([`hash()`]) is a hash of the same tokens, so equal functions have equal hashes.
//! - A comparison is a `memcmp`-like slice compare; the per-function walk runs once, not once
//!   per comparison.
//!
//! # What a fingerprint holds, most significant first
//!
//! 1. The signature: calling convention; params and returns in order, each with its type,
//!    purpose (`vmctx`, `sret`, `sarg(N)`) and extension (`uext`/`sext`).
//! 2. The stack limit (`stack_limit = gvN`), as the global value's definition.
//! 3. The stack frame: every stack slot in declaration order, used or not, with its kind, size,
//!    alignment and key; then every dynamic stack slot in declaration order with its kind and
//!    dynamic type (see "Function-level entities" below for why).
//! 4. The body: a walk from the entry block; a block is numbered when it is first met (the entry,
//!    then branch targets in terminator order: `brif` then/else, `br_table` default then entries,
//!    `try_call` normal return then handlers) and pushed on a stack; blocks are taken from the
//!    stack (LLVM's walk). Unreachable blocks are never met, so they do not count; the layout order
//!    of blocks and the numbers of values and blocks in the text do not count either.
//!    Per block: its number, its parameters (serial number and type), the cold flag, the
//!    instruction count. Per instruction: opcode, controlling type (written only for instructions
//!    without results: otherwise it is the type of a result or an operand, and every value's type
//!    is written where the value is defined), every operand and immediate in
//!    `InstructionData` (values by serial number, integer immediates, float immediates by their
//!    bits, condition codes, memory flags with their alias region, trap codes, offsets, atomic
//!    ops, branch targets with their arguments), for a call its user stack map (the slots a
//!    garbage collector reads at that safepoint: type, slot and offset of each entry), then its
//!    results (serial number and type).
//!
//! Function-level entities: the frame is written up front and a use names a slot by its
//! declaration number; every other entity is written where it is used, in use order: global
//! values by their definition (recursively through their bases); constants and shuffle masks by
//! their bytes; signatures of `call_indirect` in full; jump tables and exception tables entry by
//! entry; external functions by their signature, `colocated` and `patchable` flags, and their
//! name.
//!
//! # Declaration order and unused declarations, entity by entity
//!
//! Which entities count by declaration and which only by use was decided by compiling variants
//! that differ only in the order of two declarations, or in one unused declaration, and comparing
//! the machine code (x86_64 and aarch64; `tests/entity_layout.rs` keeps the cases):
//!
//! | entity | declaration order | an unused declaration | so compared |
//! |---|---|---|---|
//! | stack slots (`ssN`) | changes the code: slots are laid out in declaration order (offsets, and the frame size through alignment padding) | changes the code: it takes frame space, which moves the stack limit check and the slots after it | all, in declaration order |
//! | dynamic stack slots (`dssN`, aarch64) | changes the code, as above | changes the code, as above | all, in declaration order |
//! | dynamic types (`dtN`) | same code | same code | with the slots that use them |
//! | global values (`gvN`) | same code | same code (see below) | where used, by definition |
//! | external functions (`fnN`), signatures (`sigN`), user names | same code | same code (see below) | where used |
//! | constants (`constN`) | same code | same code | where used, by bytes |
//! | alias regions (`regionN`) | same code | same code | where used, by user id |
//! | jump tables, exception tables | inline in their instruction; the order of a `try_call`'s entries changes the code | cannot be unused | where used, entry by entry |
//! | block layout order | the same instructions (blocks are lowered in control-flow order), but the registers can differ (`layout_loads`) | — | not compared: it has no meaning in CLIF (the entry block, which is first, is compared), so equal fingerprints run alike though their code may allocate registers otherwise |
//! | value numbers | same code | — | not compared |
//!
//! An unused `symbol` global value or external function leaves the code alone but adds an
//! undefined symbol to the object, which can make a static link pull in an archive member; that
//! is a property of the module's imports, not of a function's behaviour, and is not compared.
//!
//! A name is compared as the [`Resolver`] says: by *identity* (its text), or as a reference to a
//! module function whose *class* is compared (the merge driver's classes; see `merge`). Class
//! references leave a placeholder token in the fingerprint and the function's id in
//! [`Fingerprint::class_refs`]; the order compares the tokens first and then the classes of the
//! class references in order, which is again a lexicographic (total) order.
//!
//! # What does not take part
//!
//! Source locations, debug tags, value labels, comments, the function's own name, alias region
//! *descriptions* (only their ids count) and proof-carrying-code facts and memory types, which
//! describe the code for a checker and do not change what it does.
//!
//! # Holes
//!
//! For similar merging, a fingerprint can leave chosen operands as *holes*
//! ([`FingerprintWriter::write_with_holes`]): integer and float constants, `symbol` names, and
//! callees the resolver marks. A hole writes a tag and its kind instead of the value; the value
//! goes to [`Fingerprint::holes`]. Two functions whose fingerprints with holes are equal differ
//! at most in their hole values. With [`HoleKinds::CONSTANT_USES`], constants are holes where
//! they are used: the constant instructions are left out and each use of their value writes a
//! tag (where a value's serial number would be), its kind and type, so that constants Cranelift's
//! GVN made one value compare as constants kept apart. The exact order writes no holes.
//!
//! # Stable encoding
//!
//! Tokens use numbers fixed by names, not Cranelift's generated numbering, so that fingerprints
//! and hashes mean the same in every build (`encoding.rs`, [`ENCODING_VERSION`]).
//!
//! # Unambiguous encoding
//!
//! The order is only as exact as the encoding is unambiguous: two different functions must never
//! write the same tokens. Every token's meaning is fixed by the tokens before it: the opcode
//! fixes the instruction format and so the fields that follow, each variable-length list is
//! preceded by its length, and each choice (an optional field, a kind of name) by a tag.

pub(crate) mod encoding;
pub(crate) mod hash;
pub(crate) mod stable_hash;
mod walk;

use crate::module::{FuncName, FunctionId};
use cranelift_codegen::ir::{ExternalName, FuncRef, Function};
use std::cmp::Ordering;

pub use encoding::ENCODING_VERSION;
pub use hash::hash;
pub use walk::FingerprintWriter;

/// How a use of an external function is seen by the comparator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefKind {
    /// The function is called (`call`, `return_call`, `try_call`).
    Call,
    /// The function's address is taken (`func_addr`).
    Address,
}

/// How a name is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKey {
    /// By its text: equal only to the same name.
    Identity,
    /// As a module function: equal to any function of the same class.
    Class(FunctionId),
    /// As a parameter: a hole in the fingerprint, its name kept aside (similar merging).
    Hole,
}

/// Decides how names are compared; the merge driver's resolver knows the module and the mode.
pub trait Resolver {
    /// How `name`, used inside `func` as `kind`, is compared.
    fn resolve(&self, func: &Function, name: &ExternalName, kind: RefKind) -> NameKey;

    /// How the function declared as `func_ref` is compared. A resolver that has already looked
    /// up `func`'s declarations answers from its table instead of looking the name up again.
    fn resolve_func_ref(&self, func: &Function, func_ref: FuncRef, kind: RefKind) -> NameKey {
        self.resolve(func, &func.dfg.ext_funcs[func_ref].name, kind)
    }
}

/// Compares every name by identity: the order of two functions on their own.
pub struct IdentityResolver;

impl Resolver for IdentityResolver {
    fn resolve(&self, _: &Function, _: &ExternalName, _: RefKind) -> NameKey {
        NameKey::Identity
    }
}

/// Which operands a fingerprint leaves as holes (see [`FingerprintWriter::write_with_holes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HoleKinds(u32);

impl HoleKinds {
    /// No holes: the exact order.
    pub const NONE: HoleKinds = HoleKinds(0);
    /// `iconst` immediates.
    pub const INT_CONSTANTS: HoleKinds = HoleKinds(1);
    /// `f32const` and `f64const` immediates, by their bits.
    pub const FLOAT_CONSTANTS: HoleKinds = HoleKinds(2);
    /// The names of `symbol` global values (their offsets and flags stay exact).
    pub const SYMBOLS: HoleKinds = HoleKinds(4);
    /// Direct callees, where the resolver answers [`NameKey::Hole`].
    pub const CALLEES: HoleKinds = HoleKinds(8);
    /// With [`HoleKinds::INT_CONSTANTS`] or [`HoleKinds::FLOAT_CONSTANTS`]: the constants are
    /// holes where they are *used*, not where they are made. The `iconst` (`f32const`,
    /// `f64const`) instructions are left out of the walk, and each use of their value is a hole
    /// of its own (its type, then the value aside), whichever value it is: a function whose two
    /// equal constants are one value (as GVN leaves them) writes what a function with two
    /// constants does.
    pub const CONSTANT_USES: HoleKinds = HoleKinds(16);

    /// Both sets.
    pub const fn union(self, other: HoleKinds) -> HoleKinds {
        HoleKinds(self.0 | other.0)
    }

    /// Whether every kind of `other` is in `self`.
    pub const fn contains(self, other: HoleKinds) -> bool {
        self.0 & other.0 == other.0
    }

    /// The kinds as the token the walk writes after a `HOLE` tag.
    pub const fn bits(self) -> u32 {
        self.0
    }
}

/// The value a hole stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hole {
    /// An `iconst` immediate, as its 64 bits.
    Int(u64),
    /// An `f32const`'s bits.
    F32(u32),
    /// An `f64const`'s bits.
    F64(u64),
    /// The name of a `symbol` global value (an address of data or of a function).
    Name(FuncName),
    /// A direct callee.
    Callee(FuncName),
    /// A call of the function itself, where a similar function may call another function of
    /// the same signature (the walk writes it as a callee; similar merging names it so, so that
    /// it equals every member's call of itself).
    SelfCall,
}

/// A function written as its comparison tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Every field in walk order (see the module docs).
    pub tokens: Vec<u32>,
    /// Module functions referred to by class, in walk order; each left a `CLASS_REF` token.
    pub class_refs: Vec<FunctionId>,
    /// The values of the holes, in walk order; each left a `HOLE` token and its kind. Empty
    /// unless the fingerprint was written with holes.
    pub holes: Vec<Hole>,
    /// The instruction each hole is an operand of, in the order of `holes`: one hole per
    /// instruction, its own immediate or name, except that with [`HoleKinds::CONSTANT_USES`]
    /// each use of a constant is a hole too (an `Int`/`F32`/`F64` hole whose site is not a
    /// constant instruction), in the order of the site's value operands.
    pub hole_sites: Vec<cranelift_codegen::ir::Inst>,
}

impl Fingerprint {
    /// A fingerprint no function writes, for an element that is alone in its class: no tokens
    /// (a function's fingerprint always has some: it starts with its calling convention).
    /// Refinement never compares it with another ([`Fingerprint::is_unique`]), so it allocates
    /// nothing: most functions of a module are alone, and a token vector each was a tenth of
    /// the pass's allocations.
    pub fn unique() -> Fingerprint {
        Fingerprint::default()
    }

    /// Whether this is a fingerprint made by [`Fingerprint::unique`].
    pub fn is_unique(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Writes `func`'s fingerprint.
    pub fn of(func: &Function, resolver: &dyn Resolver) -> Fingerprint {
        FingerprintWriter::new().write(func, resolver)
    }

    /// The order of two fingerprints when every class reference `r` stands for `class_of(r)`.
    pub fn compare_with(
        &self,
        other: &Fingerprint,
        class_of: impl Fn(FunctionId) -> u32,
    ) -> Ordering {
        self.tokens.cmp(&other.tokens).then_with(|| {
            let left = self.class_refs.iter().map(|&f| class_of(f));
            let right = other.class_refs.iter().map(|&f| class_of(f));
            left.cmp(right)
        })
    }
}

/// The order of two functions on their own: every external name compared by identity.
///
/// This is the order the merge driver uses, before it knows which module functions are equal.
pub fn compare(a: &Function, b: &Function) -> Ordering {
    let mut writer = FingerprintWriter::new();
    let fa = writer.write(a, &IdentityResolver);
    let fb = writer.write(b, &IdentityResolver);
    fa.compare_with(&fb, |f| f.as_u32())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Function {
        cranelift_reader::parse_functions(text)
            .expect("valid CLIF")
            .remove(0)
    }

    /// Calls are holes; everything else identity.
    struct CalleesAreHoles;

    impl Resolver for CalleesAreHoles {
        fn resolve(&self, _: &Function, _: &ExternalName, kind: RefKind) -> NameKey {
            match kind {
                RefKind::Call => NameKey::Hole,
                RefKind::Address => NameKey::Identity,
            }
        }
    }

    fn with_holes(func: &Function, kinds: HoleKinds) -> Fingerprint {
        FingerprintWriter::new().write_with_holes(func, &CalleesAreHoles, kinds)
    }

    const TEMPLATE: &str = "function %f(i64) -> i64 system_v {
        gv0 = symbol colocated %DATA+8
        sig0 = (i64) -> i64 system_v
        fn0 = colocated %CALLEE sig0
    block0(v0: i64):
        v1 = iconst.i64 INT
        v2 = f64const FLOAT
        v3 = symbol_value.i64 gv0
        v4 = call fn0(v1)
        v5 = iadd v4, v3
        return v5
    }";

    fn variant(int: &str, float: &str, data: &str, callee: &str) -> Function {
        parse(
            &TEMPLATE
                .replace("INT", int)
                .replace("FLOAT", float)
                .replace("DATA", data)
                .replace("CALLEE", callee),
        )
    }

    #[test]
    fn holes_make_chosen_operands_parameters_and_keep_their_values() {
        let a = variant("1", "0x1.0p0", "d1", "g1");
        let b = variant("2", "0x1.8p0", "d2", "g2");
        assert_ne!(
            compare(&a, &b),
            Ordering::Equal,
            "the exact order sees them"
        );
        let all = HoleKinds::INT_CONSTANTS
            .union(HoleKinds::FLOAT_CONSTANTS)
            .union(HoleKinds::SYMBOLS)
            .union(HoleKinds::CALLEES);
        let (fa, fb) = (with_holes(&a, all), with_holes(&b, all));
        assert_eq!(fa.tokens, fb.tokens);
        let name = |s: &str| Hole::Name(FuncName::parse(s).unwrap());
        let callee = |s: &str| Hole::Callee(FuncName::parse(s).unwrap());
        assert_eq!(
            fa.holes,
            [
                Hole::Int(1),
                Hole::F64(1.0f64.to_bits()),
                name("%d1"),
                callee("%g1")
            ]
        );
        assert_eq!(
            fb.holes,
            [
                Hole::Int(2),
                Hole::F64(1.5f64.to_bits()),
                name("%d2"),
                callee("%g2")
            ]
        );
        // Each hole is an operand of its own instruction, in walk order.
        assert_eq!(fa.hole_sites.len(), 4);
        let opcodes: Vec<_> = fa
            .hole_sites
            .iter()
            .map(|&i| a.dfg.insts[i].opcode())
            .collect();
        use cranelift_codegen::ir::Opcode;
        assert_eq!(
            opcodes,
            [
                Opcode::Iconst,
                Opcode::F64const,
                Opcode::SymbolValue,
                Opcode::Call
            ]
        );
    }

    #[test]
    fn only_the_chosen_kinds_are_holes() {
        let a = variant("1", "0x1.0p0", "d", "g");
        let b = variant("2", "0x1.0p0", "d", "g");
        let c = variant("1", "0x1.8p0", "d", "g");
        let ints = HoleKinds::INT_CONSTANTS;
        assert_eq!(with_holes(&a, ints).tokens, with_holes(&b, ints).tokens);
        assert_ne!(with_holes(&a, ints).tokens, with_holes(&c, ints).tokens);
        // Callees are holes only where the writer is asked for them and the resolver says so.
        let d = variant("1", "0x1.0p0", "d", "h");
        assert_ne!(with_holes(&a, ints).tokens, with_holes(&d, ints).tokens);
        let callees = HoleKinds::CALLEES;
        assert_eq!(
            with_holes(&a, callees).tokens,
            with_holes(&d, callees).tokens
        );
        let exact = FingerprintWriter::new().write(&a, &IdentityResolver);
        assert!(exact.holes.is_empty());
        assert_ne!(exact.tokens, with_holes(&a, ints).tokens);
    }

    #[test]
    fn holes_never_hide_an_opcode_or_an_offset() {
        let a = variant("1", "0x1.0p0", "d", "g");
        let concrete = |text: &str| {
            let text = text.replace("INT", "1").replace("FLOAT", "0x1.0p0");
            parse(&text.replace("DATA", "d").replace("CALLEE", "g"))
        };
        let isub = concrete(&TEMPLATE.replace("iadd", "isub"));
        let offset = concrete(&TEMPLATE.replace("+8", "+16"));
        let all = HoleKinds(0xf);
        assert_ne!(with_holes(&a, all).tokens, with_holes(&isub, all).tokens);
        assert_ne!(with_holes(&a, all).tokens, with_holes(&offset, all).tokens);
    }

    /// Most functions are alone in their class; what stands for them must cost no allocation.
    #[test]
    fn a_unique_fingerprint_allocates_nothing_and_is_never_a_function() {
        let unique = Fingerprint::unique();
        assert!(unique.is_unique());
        assert_eq!(unique.tokens.capacity(), 0);
        let empty = parse("function %f() system_v {\nblock0:\n    return\n}");
        assert!(!Fingerprint::of(&empty, &IdentityResolver).is_unique());
    }

    #[test]
    fn a_use_through_an_alias_is_a_use_of_its_value() {
        let plain = parse(
            "function %f(i64, i64) -> i64 {
            block0(v0: i64, v1: i64):
                v2 = iadd v0, v1
                v3 = imul v2, v0
                return v3
            }",
        );
        // Uses through aliases, one of them through another alias.
        let aliased = parse(
            "function %f(i64, i64) -> i64 {
            block0(v0: i64, v1: i64):
                v10 -> v1
                v12 -> v0
                v11 -> v12
                v2 = iadd v11, v10
                v3 = imul v2, v11
                return v3
            }",
        );
        assert_eq!(compare(&plain, &aliased), Ordering::Equal);
        let other = parse(
            "function %f(i64, i64) -> i64 {
            block0(v0: i64, v1: i64):
                v10 -> v1
                v2 = iadd v0, v10
                v3 = imul v2, v10
                return v3
            }",
        );
        assert_ne!(compare(&plain, &other), Ordering::Equal);
    }
}
