//! Splits one CLIF module into N units, as separate compilation would: function `i` (in file
//! order) goes to unit `i mod N`, and a call to a function of another unit becomes a call to an
//! import of the same name (the callee is simply not defined in the caller's unit).
//!
//!     cargo run --example split_units -- MODULE.clif N OUT_DIR
//!
//! writes `OUT_DIR/unit0.clif` … `OUT_DIR/unit<N-1>.clif`. The text of each function is copied
//! unchanged, with the comment lines before it; a `; linkage:` directive goes to the unit that
//! defines the function it names. The global-merging example (`examples/global/`) and the
//! figures in the README use it.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

type Error = Box<dyn std::error::Error>;

/// The functions of a module and its `; linkage:` directives (name, line).
type Split = (Vec<Chunk>, Vec<(String, String)>);

/// One function's text (leading comments included) and its name.
struct Chunk {
    name: String,
    text: String,
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, units, out_dir] = args.as_slice() else {
        return Err("usage: split_units MODULE.clif[.xz] N OUT_DIR".into());
    };
    let units: usize = units
        .parse()
        .map_err(|_| format!("N must be a number: {units}"))?;
    if units == 0 {
        return Err("N must be at least 1".into());
    }
    let (chunks, directives) = split_functions(&read_text(Path::new(input))?)?;
    let unit_of: HashMap<&str, usize> = chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| (chunk.name.as_str(), i % units))
        .collect();
    let mut texts = vec![String::new(); units];
    for (name, line) in &directives {
        let unit = unit_of
            .get(name.as_str())
            .ok_or_else(|| format!("directive names no defined function: {line}"))?;
        texts[*unit].push_str(line);
        texts[*unit].push('\n');
    }
    for (i, chunk) in chunks.iter().enumerate() {
        texts[i % units].push_str(&chunk.text);
    }
    std::fs::create_dir_all(out_dir)?;
    for (unit, text) in texts.iter().enumerate() {
        let path: PathBuf = [out_dir.as_str(), &format!("unit{unit}.clif")]
            .iter()
            .collect();
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// The file's text; `.xz` files through the `xz` command.
fn read_text(path: &Path) -> Result<String, Error> {
    if path.extension().is_some_and(|e| e == "xz") {
        let output = std::process::Command::new("xz")
            .arg("-dc")
            .arg(path)
            .output()?;
        if !output.status.success() {
            return Err(format!("xz -dc {} failed", path.display()).into());
        }
        return Ok(String::from_utf8(output.stdout)?);
    }
    let mut text = String::new();
    std::fs::File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// The functions of a module in file order, and its `; linkage:` directives (name, line).
fn split_functions(text: &str) -> Result<Split, Error> {
    let mut chunks = Vec::new();
    let mut directives = Vec::new();
    let mut pending = String::new();
    let mut current: Option<Chunk> = None;
    for line in text.lines() {
        if let Some(chunk) = current.as_mut() {
            chunk.text.push_str(line);
            chunk.text.push('\n');
            if line.starts_with('}') {
                chunks.extend(current.take());
            }
        } else if let Some(rest) = line.strip_prefix("; linkage:") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            directives.push((name.to_string(), line.to_string()));
        } else if let Some(rest) = line.strip_prefix("function ") {
            let name = rest
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let text = std::mem::take(&mut pending) + line + "\n";
            current = Some(Chunk { name, text });
        } else {
            pending.push_str(line);
            pending.push('\n');
        }
    }
    if current.is_some() {
        return Err("the last function has no closing `}`".into());
    }
    Ok((chunks, directives))
}
