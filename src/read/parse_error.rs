//! Where a parse error really is. cranelift-reader reports an error at the token it was looking
//! at when it gave up. When a statement ends too early (`v0 = iconst.i32` with no operand), that
//! token is the first of the next line, and the error names a line that is fine; at the end of
//! the file or before the next `function`, a missing `}` is reported as whatever the reader
//! expected next.
//!
//! Both are found by parsing again, only on the error path: the statement on the line before
//! the error is unfinished when the text cut after it ends with an "expected ..." error on that
//! line, and the text cut before it with another message (else the message only says that a
//! statement was expected next); that error says what it lacks. The file ended inside a
//! function when the text with a `}` added parses.

use cranelift_reader::{ParseError, ParseOptions};

/// The line and message to report for the reader's `error` on `text`.
pub fn locate(text: &str, error: &ParseError) -> (usize, String) {
    let line = error.location.line_number;
    // `function` is no opcode: the reader met the next function inside the one before.
    if error.message == "Unknown opcode: 'function'" {
        let message = "a `function` line inside a function: the function before it has no \
                       closing `}`";
        return (line, message.to_string());
    }
    if let Some(message) = missing_closing_brace(text, error) {
        return (line, message);
    }
    if let Some(unfinished) = unfinished_previous_line(text, error) {
        return unfinished;
    }
    (line, error.message.clone())
}

/// The reader's error on `text`, if any (a panic counts as no answer).
fn parse_error(text: &str) -> Option<Option<ParseError>> {
    crate::guard::catch_panic(|| cranelift_reader::parse_test(text, ParseOptions::default()))
        .ok()
        .map(|parsed| parsed.err())
}

/// Whether a line holds nothing but blanks and a comment.
fn is_blank(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty() || line.starts_with(';')
}

/// When the error is on the last line that holds anything and the text parses with a `}` at
/// the end, the message that says so.
fn missing_closing_brace(text: &str, error: &ParseError) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.iter().rposition(|l| !is_blank(l))? + 1;
    if error.location.line_number < last {
        return None;
    }
    let closed = format!("{text}\n}}\n");
    match parse_error(&closed)? {
        Some(_) => None,
        None => Some(format!(
            "the file ends inside a function: its closing `}}` is missing (the reader \
             says: {})",
            error.message
        )),
    }
}

/// When the error is reported at a line whose previous statement is unfinished, that
/// statement's line and what it lacks (see the module docs).
fn unfinished_previous_line(text: &str, error: &ParseError) -> Option<(usize, String)> {
    let line = error.location.line_number;
    if line < 2 {
        return None;
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let previous = (0..(line - 1).min(lines.len()))
        .rev()
        .find(|&i| !is_blank(lines[i]))?;
    let cut_after = |i: usize| -> Option<Option<ParseError>> {
        let end: usize = lines[..=i].iter().map(|l| l.len()).sum();
        parse_error(&text[..end])
    };
    let own = cut_after(previous)??;
    if !own.message.starts_with("expected") || own.location.line_number != previous + 1 {
        return None;
    }
    // The text may end there with a message that only says a statement was expected next; the
    // statement is unfinished when the text cut before it ends with another message.
    let before = (0..previous).rev().find(|&i| !is_blank(lines[i]))?;
    match cut_after(before)? {
        Some(other) if other.message == own.message => None,
        _ => Some((previous + 1, own.message)),
    }
}
