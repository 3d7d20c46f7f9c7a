//! Text that cranelift-reader or the CLIF verifier would spend unbounded memory or time on,
//! refused before it is parsed, with its line. One pass over the tokens of the text.
//!
//! - Entity numbers: the reader sizes a function's tables by the largest number it meets, so
//!   `v2000000000` alone would ask for gigabytes.
//! - Chains: the reader resolves every value alias by walking its chain (`v3 -> v2`, `v2 -> v1`,
//!   …), and the verifier walks every global value's chain of bases (`gv2 = load … gv1`), each
//!   from the start: a chain of n costs about n²/2 steps, 100,000 aliases or global values take
//!   most of a minute. What reading a function would walk — the depth of every alias and global
//!   value, at every place it is named (the pass walks them again at each use) — is counted, and
//!   a function above [`CHAIN_STEP_BUDGET`] is refused. Real code has chains of a few links.

use std::ops::ControlFlow;

/// The largest entity number (`v…`, `block…`, `ss…`, …) accepted.
pub const MAX_ENTITY_NUMBER: u64 = 10_000_000;

/// The most that the largest entity numbers of all functions of a file may add up to: the
/// tables of every function are alive at once, so many functions with large numbers would
/// add up to gigabytes too.
pub const ENTITY_NUMBER_BUDGET: u64 = 100_000_000;

/// The most steps along value alias and global value chains that reading one function may take.
pub const CHAIN_STEP_BUDGET: u64 = 20_000_000;

/// Whether `prefix` starts an entity reference (`v`, `block`, `ss`, …). Byte patterns, not
/// string comparisons: this runs on every word of a file, and each string comparison is a call
/// of `memcmp`.
fn is_entity_prefix(prefix: &[u8]) -> bool {
    matches!(
        prefix,
        [b'v']
            | [b'b', b'l', b'o', b'c', b'k']
            | [b's', b's']
            | [b'd', b's', b's']
            | [b's', b'i', b'g']
            | [b'f', b'n']
            | [b'g', b'v']
            | [b'j', b't']
            | [b'd', b't']
            | [b'm', b't']
            | [b'r', b'e', b'g', b'i', b'o', b'n']
            | [b'c', b'o', b'n', b's', b't']
            | [b't', b'a', b'g']
            | [b'i', b'n', b's', b't']
            | [b'e', b't']
    )
}

/// `word` is `function`: a function starts.
fn is_function_keyword(word: &str) -> bool {
    matches!(
        word.as_bytes(),
        [b'f', b'u', b'n', b'c', b't', b'i', b'o', b'n']
    )
}

/// The first problem of `text`, with its line.
pub fn problem(text: &str) -> Option<(usize, String)> {
    let mut numbers = EntityNumbers::default();
    let mut chains = Chains::default();
    let mut previous: [Token; 2] = [Token::Other; 2];
    let found = for_each_token(text, |line, token| {
        match token {
            Token::Entity { word, kind, n } => {
                if let Some(problem) = numbers.see(line, word, n) {
                    return ControlFlow::Break(problem);
                }
                chains.see(kind, n as u32, previous);
            }
            Token::Word(word) if is_function_keyword(word) => {
                numbers.end_function();
                if let Some(problem) = chains.end_function() {
                    return ControlFlow::Break(problem);
                }
                chains.start_line = line;
            }
            Token::Word(word) => chains.see_word(word, previous),
            Token::Arrow | Token::Equals | Token::Other => {}
        }
        previous = [previous[1], token];
        ControlFlow::Continue(())
    });
    found.or_else(|| chains.end_function())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    /// Letters, digits and `_`, not after a `%` (function names are not entities), and not an
    /// entity reference.
    Word(&'a str),
    /// Such a word that is an entity reference ([`entity_reference`]), read as it was scanned.
    Entity {
        /// The word.
        word: &'a str,
        /// What its prefix names, as far as chains care.
        kind: EntityKind,
        /// Its number.
        n: u64,
    },
    /// `->`
    Arrow,
    /// `=`
    Equals,
    /// Anything else that separates words.
    Other,
}

/// The entities whose chains are counted, and the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntityKind {
    /// `v…`
    Value,
    /// `gv…`
    GlobalValue,
    /// Any other entity.
    Other,
}

/// What a byte is to [`tokens`]: part of a word, a blank, or anything else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteClass {
    Word,
    Blank,
    Other,
}

/// [`ByteClass`] by byte: a table, because every byte of the file is classed.
static BYTE_CLASS: [ByteClass; 256] = {
    let mut table = [ByteClass::Other; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if byte.is_ascii_alphanumeric() || byte == b'_' {
            table[b] = ByteClass::Word;
        } else if matches!(byte, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c') {
            // Cranelift's lexer skips all of ASCII's whitespace; a byte it skips must not
            // separate tokens here either, or `v2\x0c-> v1` is no alias to the chain count.
            table[b] = ByteClass::Blank;
        }
        b += 1;
    }
    table
};

/// Calls `visit` with each token of `text` that matters here, with its line, until it breaks;
/// comments and strings are skipped. A loop that calls, not an iterator: the scan runs on every
/// byte of a file, and an iterator's `Option` of each token went through memory (7 % of the
/// scan's instructions, callgrind, 2026-11-26).
fn for_each_token<'a, B>(
    text: &'a str,
    mut visit: impl FnMut(usize, Token<'a>) -> ControlFlow<B>,
) -> Option<B> {
    let bytes = text.as_bytes();
    let class = |b: u8| BYTE_CLASS[usize::from(b)];
    let (mut line, mut i) = (1, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let at = i;
        i += 1;
        let token = match class(b) {
            ByteClass::Blank => continue,
            ByteClass::Word => {
                while i < bytes.len() && class(bytes[i]) == ByteClass::Word {
                    i += 1;
                }
                if at > 0 && bytes[at - 1] == b'%' {
                    Token::Other
                } else {
                    word_token(&text[at..i])
                }
            }
            ByteClass::Other => match b {
                b'\n' => {
                    line += 1;
                    continue;
                }
                b';' => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'"' => {
                    while i < bytes.len() && bytes[i] != b'"' {
                        line += usize::from(bytes[i] == b'\n');
                        i += 1;
                    }
                    i += 1;
                    Token::Other
                }
                // A source location (`@0001`) or a hex sequence (`#00ff`) ends at its last hex
                // digit, as the lexer reads it: `@0001v10000001` is a location, then an entity.
                b'@' | b'#' => {
                    while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                        i += 1;
                    }
                    Token::Other
                }
                b'-' if bytes.get(i) == Some(&b'>') => {
                    i += 1;
                    Token::Arrow
                }
                b'=' => Token::Equals,
                _ => Token::Other,
            },
        };
        if let ControlFlow::Break(found) = visit(line, token) {
            return Some(found);
        }
    }
    None
}

/// The token a word is: an entity reference, read once here, or another word.
#[inline]
fn word_token(word: &str) -> Token<'_> {
    let Some((split, n)) = entity_number(word.as_bytes()) else {
        return Token::Word(word);
    };
    let kind = match &word.as_bytes()[..split] {
        [b'v'] => EntityKind::Value,
        [b'g', b'v'] => EntityKind::GlobalValue,
        _ => EntityKind::Other,
    };
    Token::Entity { word, kind, n }
}

/// The prefix and number of an entity reference such as `ss12` (`None` for any other word).
/// A number too large for a `u64` is `u64::MAX`.
#[cfg(test)]
fn entity_reference(word: &str) -> Option<(&str, u64)> {
    entity_number(word.as_bytes()).map(|(split, n)| (&word[..split], n))
}

/// The length of the prefix and the number of an entity reference ([`entity_reference`]).
/// Runs on every word of a file: bytes, no string searches.
#[inline]
fn entity_number(word: &[u8]) -> Option<(usize, u64)> {
    let split = word.iter().position(|b| !b.is_ascii_alphabetic())?;
    let (prefix, digits) = word.split_at(split);
    if !is_entity_prefix(prefix) {
        return None;
    }
    let mut n: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    Some((split, n))
}

/// The largest entity number of each function, and their sum over the file.
#[derive(Default)]
struct EntityNumbers {
    function_max: u64,
    total: u64,
}

impl EntityNumbers {
    fn see(&mut self, line: usize, word: &str, n: u64) -> Option<(usize, String)> {
        if n > MAX_ENTITY_NUMBER {
            let msg = format!(
                "`{word}`: entity numbers above {MAX_ENTITY_NUMBER} are not supported \
                 (cranelift-reader would allocate a table that large)"
            );
            return Some((line, msg));
        }
        self.function_max = self.function_max.max(n);
        if self.total + self.function_max > ENTITY_NUMBER_BUDGET {
            let msg = format!(
                "the largest entity numbers of the functions so far add up to more than \
                 {ENTITY_NUMBER_BUDGET} (cranelift-reader would allocate tables that large)"
            );
            return Some((line, msg));
        }
        None
    }

    fn end_function(&mut self) {
        self.total += self.function_max;
        self.function_max = 0;
    }
}

/// One function's value aliases and global value bases, and where values and global values
/// are named.
#[derive(Default)]
struct Chains {
    /// `v3 -> v2`: 3 → 2.
    alias_of: rustc_hash::FxHashMap<u32, u32>,
    /// `gv2 = load … gv1`: 2 → 1.
    base_of: rustc_hash::FxHashMap<u32, u32>,
    /// Every place a value is named.
    value_names: Vec<u32>,
    /// Every place a global value is named.
    gv_names: Vec<u32>,
    /// A global value defined as `load` or `iadd_imm` whose base is the next one named.
    awaiting_base: Option<u32>,
    /// The line the function starts on.
    start_line: usize,
}

impl Chains {
    /// An entity reference; `previous` are the two tokens before it.
    fn see(&mut self, kind: EntityKind, n: u32, previous: [Token; 2]) {
        match kind {
            EntityKind::Value => {
                if let [
                    Token::Entity {
                        kind: EntityKind::Value,
                        n: dest,
                        ..
                    },
                    Token::Arrow,
                ] = previous
                {
                    self.alias_of.insert(dest as u32, n);
                }
                self.value_names.push(n);
            }
            EntityKind::GlobalValue => {
                if let Some(gv) = self.awaiting_base.take() {
                    self.base_of.insert(gv, n);
                }
                self.gv_names.push(n);
            }
            EntityKind::Other => {}
        }
    }

    /// Any other word: `gvN = load` or `gvN = iadd_imm` gives `gvN` a base, the next global
    /// value named.
    fn see_word(&mut self, word: &str, previous: [Token; 2]) {
        if let [
            Token::Entity {
                kind: EntityKind::GlobalValue,
                n: gv,
                ..
            },
            Token::Equals,
        ] = previous
            && matches!(word, "load" | "iadd_imm")
        {
            self.awaiting_base = Some(gv as u32);
        }
    }

    /// Checks the function that ends here and forgets it.
    fn end_function(&mut self) -> Option<(usize, String)> {
        let steps = steps(&self.alias_of, &self.value_names)
            .saturating_add(steps(&self.base_of, &self.gv_names));
        let line = self.start_line.max(1);
        // Cleared, not replaced: the vectors keep their memory for the next function.
        self.alias_of.clear();
        self.base_of.clear();
        self.value_names.clear();
        self.gv_names.clear();
        self.awaiting_base = None;
        (steps > CHAIN_STEP_BUDGET).then(|| {
            let msg = format!(
                "chains of value aliases or global values too long: reading this function \
                 would walk {steps} links (at most {CHAIN_STEP_BUDGET})"
            );
            (line, msg)
        })
    }
}

/// The links walked when each name in `names` is resolved along `next`, counted in linear
/// time: every entity's depth is found once. A cycle (an error the reader or verifier reports)
/// counts as ending where it closes.
fn steps(next: &rustc_hash::FxHashMap<u32, u32>, names: &[u32]) -> u64 {
    const ON_PATH: u64 = u64::MAX;
    if next.is_empty() {
        // No links: every depth is 0 (most functions).
        return 0;
    }
    let mut depth: rustc_hash::FxHashMap<u32, u64> = Default::default();
    let mut path = Vec::new();
    for &start in next.keys() {
        let mut at = start;
        let mut base = loop {
            match depth.get(&at) {
                Some(&ON_PATH) => break 0,
                Some(&d) => break d,
                None => {}
            }
            let Some(&n) = next.get(&at) else {
                break 0;
            };
            depth.insert(at, ON_PATH);
            path.push(at);
            at = n;
        };
        for &e in path.iter().rev() {
            base += 1;
            depth.insert(e, base);
        }
        path.clear();
    }
    names
        .iter()
        .map(|n| depth.get(n).copied().unwrap_or(0))
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(text: &str) -> Option<usize> {
        problem(text).map(|(line, _)| line)
    }

    #[test]
    fn huge_entity_numbers_are_refused() {
        assert_eq!(line_of("block0:\n  v1 = iadd v2000000000, v0\n"), Some(2));
        assert_eq!(line_of("  ss4000000000 = explicit_slot 4"), Some(1));
        assert_eq!(
            line_of("region0 = 1 \"x;\" ss4000000000 = explicit_slot 8"),
            Some(1)
        );
        let fine = "fn0 = colocated u805306368:1 sig0\n v1 = iconst.i64 123456789012\n\
                    function %fn123456789012() {\n ; v99999999999 in a comment\n";
        assert_eq!(line_of(fine), None);
        let many = "function %f() {\n sig9999999 = ()\n}\n".repeat(11);
        assert_eq!(line_of(&many), Some(32));
        let fewer = "function %f() {\n sig9999999 = ()\n}\n".repeat(10);
        assert_eq!(line_of(&fewer), None);
    }

    #[test]
    fn entity_references_are_a_prefix_and_digits() {
        assert_eq!(entity_reference("v12"), Some(("v", 12)));
        assert_eq!(entity_reference("block0"), Some(("block", 0)));
        assert_eq!(entity_reference("region7"), Some(("region", 7)));
        let huge = "ss99999999999999999999999";
        assert_eq!(entity_reference(huge), Some(("ss", u64::MAX)));
        for word in [
            "v", "iadd", "i64", "v12x", "v1_2", "x12", "12", "blockv1", "vv1",
        ] {
            assert_eq!(entity_reference(word), None, "{word}");
        }
    }

    fn alias_chain(n: usize) -> String {
        let mut text = String::from("function %f(i64) -> i64 {\nblock0(v0: i64):\n");
        for i in 1..=n {
            text.push_str(&format!("    v{i} -> v{}\n", i - 1));
        }
        text.push_str(&format!("    return v{n}\n}}\n"));
        text
    }

    fn gv_chain(n: usize) -> String {
        let mut text = String::from("function %f(i64 vmctx) -> i64 {\n    gv0 = vmctx\n");
        for i in 1..=n {
            text.push_str(&format!(
                "    gv{i} = load.i64 notrap aligned gv{}+8\n",
                i - 1
            ));
        }
        text.push_str(&format!(
            "    stack_limit = gv{n}\nblock0(v0: i64):\n    return v0\n}}\n"
        ));
        text
    }

    #[test]
    fn chains_are_counted_link_by_link() {
        let depth = |text: &str, gv: bool| {
            let mut chains = Chains::default();
            let mut previous = [Token::Other; 2];
            for_each_token(text, |_, token| {
                match token {
                    Token::Entity { kind, n, .. } => chains.see(kind, n as u32, previous),
                    Token::Word(w) => chains.see_word(w, previous),
                    _ => {}
                }
                previous = [previous[1], token];
                ControlFlow::<()>::Continue(())
            });
            if gv {
                steps(&chains.base_of, &chains.gv_names)
            } else {
                steps(&chains.alias_of, &chains.value_names)
            }
        };
        // v1..v4 are named twice each (alias and target), at depths 1..4; `return v4` once more.
        assert_eq!(
            depth(&alias_chain(4), false),
            1 + 2 + 3 + (1 + 2 + 3 + 4) + 4
        );
        // gv1..gv3 at depths 1..3, named at their definition, as a base, and gv3 as the limit.
        assert_eq!(depth(&gv_chain(3), true), (1 + 2 + 3) + (1 + 2) + 3);
        assert_eq!(depth("gv1 = load.i64 notrap aligned gv1", true), 2);
    }

    #[test]
    fn long_chains_are_refused_at_their_function() {
        assert_eq!(line_of(&alias_chain(1000)), None);
        assert_eq!(line_of(&gv_chain(1000)), None);
        let long = format!("{}\n{}", gv_chain(2), alias_chain(10_000));
        assert_eq!(line_of(&long), Some(10));
        assert_eq!(line_of(&gv_chain(10_000)), Some(1));
    }

    /// The scan splits tokens where Cranelift's lexer does: every ASCII blank it skips, and a
    /// source location or hex sequence ended by its last hex digit.
    #[test]
    fn tokens_end_where_the_lexer_ends_them() {
        for blank in ["\x0b", "\x0c", "\t", "\r"] {
            let spaced = alias_chain(10_000).replace(" -> ", &format!("{blank}->{blank}"));
            assert_eq!(line_of(&spaced), Some(1), "{blank:?}");
        }
        assert_eq!(line_of("block0:\n@0001v10000001 = iconst.i64 1\n"), Some(2));
        assert_eq!(
            line_of("block0:\n  v1 = vconst.i8x16 #00v10000001\n"),
            Some(2)
        );
        assert_eq!(line_of("block0:\n@00a1 v1 = iconst.i64 1\n"), None);
    }
}
