//! Reading `.clif` (and `.clif.xz`) files into a [`ClifModule`]: cranelift-reader parses, the CLIF
//! verifier checks, and this module adds what the reader does not know: file names in messages,
//! and the directives.
//!
//! # Directives
//!
//! A directive is a comment line whose first word is a known keyword:
//!
//! ```text
//! ; linkage: %helper local        (export, hidden, local or preemptible)
//! ; alias: %g = %f                (%g is a second name for the defined function %f)
//! ```
//!
//! Directives may name functions of any input file; a malformed directive, or one naming no
//! function, is an error. Other comments are just comments.
//!
//! # Verifying
//!
//! Every function passes Cranelift's verifier; one that uses an instruction the verifier checks
//! only against an ISA (`get_pinned_reg`, `get_frame_pointer`, ...) is verified with the
//! target's ISA and the file's `set` lines (see [`verify_clif`]).

mod isa;
mod limits;
mod parse_error;

pub use isa::{function_needs_isa, host_isa, verify_clif};

use crate::module::{Alias, ClifModule, FuncName, ModuleError, Origin, SymbolLinkage};
use cranelift_codegen::ir::entities::AnyEntity;
use cranelift_codegen::ir::{Function, UserFuncName};
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_reader::{Details, IsaSpec, ParseOptions, SourceMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// An error in the input, with the file and line it comes from (line 0: the file as a whole).
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", self.render())]
pub struct InputError {
    /// The file (`-` for standard input).
    pub file: PathBuf,
    /// The line, from 1; 0 when the error is about the file as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error at `file`:`line`.
    pub fn new(file: &Path, line: usize, message: impl Into<String>) -> InputError {
        InputError {
            file: file.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    fn render(&self) -> String {
        if self.line == 0 {
            format!("{}: {}", self.file.display(), self.message)
        } else {
            format!("{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

/// How files are read.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// The linkage of functions no directive names.
    pub default_linkage: SymbolLinkage,
    /// Run the CLIF verifier on every function (on by default in the CLI).
    pub verify: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            default_linkage: SymbolLinkage::Export,
            verify: true,
        }
    }
}

/// One directive, where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Directive {
    /// `; linkage: NAME KIND`: the linkage of a function or alias.
    Linkage {
        /// The function or alias.
        name: FuncName,
        /// Its linkage.
        linkage: SymbolLinkage,
    },
    /// `; alias: NAME = TARGET`: a second name for a defined function.
    Alias {
        /// The alias's name.
        name: FuncName,
        /// The function it names.
        target: FuncName,
    },
}

#[derive(Clone, Debug)]
struct PlacedDirective {
    directive: Directive,
    file: PathBuf,
    line: usize,
}

/// What one file holds, read and checked, before any of it goes into the module.
struct FileRead {
    directives: Vec<PlacedDirective>,
    checked: Vec<Vec<Checked>>,
}

/// Builds a module from any number of files; directives are applied once all are read.
#[derive(Default)]
pub struct ModuleReader {
    options: ReadOptions,
    module: ClifModule,
    directives: Vec<PlacedDirective>,
    /// The target's ISA, for the functions the verifier checks only against one; None: the
    /// host's ([`host_isa`]).
    isa: Option<OwnedTargetIsa>,
}

impl ModuleReader {
    /// A reader of an empty module.
    pub fn new(options: ReadOptions) -> Self {
        ModuleReader {
            options,
            module: ClifModule::new(),
            directives: Vec::new(),
            isa: None,
        }
    }

    /// Verifies the functions that need an ISA (`get_pinned_reg`, `get_frame_pointer`, ...)
    /// with `isa`, the target's, instead of the host's; a file's `set` lines apply on top.
    pub fn with_isa(mut self, isa: OwnedTargetIsa) -> Self {
        self.isa = Some(isa);
        self
    }

    /// Reads a file from disk (`-`: standard input, named `<stdin>` in messages); `.xz` files
    /// are decompressed.
    pub fn read_file(&mut self, path: &Path) -> Result<(), InputError> {
        let file = display_name(path);
        let text = read_text(path)?;
        let read = self.parse_text(file, &text)?;
        // The functions own everything they need: the text goes before they move into the
        // module, so that its pages and the module's table are never all alive at once (the
        // text is as large as the table; this was the peak of a whole run).
        drop(text);
        self.define_all(file, read)
    }

    /// Reads CLIF text that came from `file`. A byte-order mark at the start is skipped.
    ///
    /// A file refused (by either method) leaves the reader as it was: none of its functions
    /// or directives are kept, so the corrected file can be read next.
    pub fn read_text(&mut self, file: &Path, text: &str) -> Result<(), InputError> {
        let read = self.parse_text(file, text)?;
        self.define_all(file, read)
    }

    /// The directives of `text`, then its functions, parsed and checked, in file order.
    fn parse_text(&self, file: &Path, text: &str) -> Result<FileRead, InputError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // Three scans of the whole text before parsing; on a large file, the limits scan runs
        // beside the other two. Errors keep their order: directives first, then limits.
        let ((directives, pieces), problem) = crate::parallel::join_if(
            text.len() >= MIN_BYTES,
            || directives_and_pieces(text),
            || limits::problem(text),
        );
        let directives = (directives.into_iter())
            .map(|(line, parsed)| {
                let directive = parsed.map_err(|msg| InputError::new(file, line, msg))?;
                Ok(PlacedDirective {
                    directive,
                    file: file.to_path_buf(),
                    line,
                })
            })
            .collect::<Result<Vec<_>, InputError>>()?;
        if let Some((line, msg)) = problem {
            return Err(InputError::new(file, line, msg));
        }
        // A large file is parsed in pieces and every function checked on its own, in parallel;
        // the first error in file order is the one reported, as when checking one by one.
        let verify = self.options.verify;
        let checked = match pieces.and_then(|pieces| {
            // Built once, by the first function that needs it.
            let file_isa = std::sync::OnceLock::new();
            let isa = || {
                file_isa
                    .get_or_init(|| self.file_isa(file, text, None))
                    .clone()
            };
            read_pieces(file, text, &pieces, &Checks { verify, isa: &isa })
        }) {
            Some(checked) => checked,
            None => {
                let (piece, isa_spec) = parse_whole(file, text)?;
                let file_isa = std::sync::OnceLock::new();
                let isa = || {
                    file_isa
                        .get_or_init(|| self.file_isa(file, text, Some(&isa_spec)))
                        .clone()
                };
                check_piece(file, text, piece, &Checks { verify, isa: &isa })
            }
        };
        Ok(FileRead {
            directives,
            checked,
        })
    }

    /// Defines the functions read from `file` and keeps its directives, or, when one of them
    /// is refused, nothing: the first error in file order is the one reported.
    fn define_all(&mut self, file: &Path, read: FileRead) -> Result<(), InputError> {
        // Every check, and every name defined twice, before any function goes in: the module
        // is left as it was. Names are compared as the functions hold them (a name of their
        // own for each function was built here once more, and freed).
        let mut lines: rustc_hash::FxHashMap<&UserFuncName, usize> = Default::default();
        for (func, line, check) in read.checked.iter().flatten() {
            if let Err(error) = check {
                return Err(InputError::clone(error));
            }
            if let Some(&first) = lines.get(&func.name) {
                let msg = format!(
                    "function {} is defined twice: also at {}:{first}",
                    FuncName::of_function(func),
                    file.display()
                );
                return Err(InputError::new(file, *line, msg));
            }
            if self.module.lookup_defined(func).is_some() {
                let e = ModuleError::DuplicateName(FuncName::of_function(func));
                return Err(duplicate_error(&self.module, e, file, *line));
            }
            lines.insert(&func.name, *line);
        }
        drop(lines);
        // One name for every function of the file.
        let shared_file: std::sync::Arc<Path> = file.into();
        for (func, line, _) in read.checked.into_iter().flatten() {
            let origin = Origin {
                file: shared_file.clone(),
                line,
            };
            self.module
                .define_checked(func, self.options.default_linkage, Some(origin))
                .expect("a name checked free");
        }
        self.directives.extend(read.directives);
        Ok(())
    }

    /// The ISA that verifies `file`'s functions that need one: the target's, with the file's
    /// `set` lines applied; None when there is none (the host is not a supported target).
    fn file_isa(
        &self,
        file: &Path,
        text: &str,
        spec: Option<&IsaSpec>,
    ) -> Result<Option<OwnedTargetIsa>, InputError> {
        let Some(target) = self.isa.clone().or_else(host_isa) else {
            return Ok(None);
        };
        let settings = spec.map_or_else(Vec::new, |spec| isa::file_settings(spec, text, &*target));
        if settings.is_empty() {
            return Ok(Some(target));
        }
        let isa = isa::with_settings(&*target, &settings).map_err(|e| {
            let msg = format!(
                "cannot verify with {} and this file's settings: {e}",
                target.triple()
            );
            InputError::new(file, 0, msg)
        })?;
        Ok(Some(isa))
    }

    /// Applies the directives and returns the module.
    pub fn finish(mut self) -> Result<ClifModule, InputError> {
        let directives = std::mem::take(&mut self.directives);
        for d in &directives {
            if let Directive::Alias { name, target } = &d.directive {
                let alias = Alias {
                    name: name.clone(),
                    target: target.clone(),
                    linkage: self.options.default_linkage,
                };
                self.module.add_alias(alias).map_err(|e| {
                    let msg = match e {
                        ModuleError::DuplicateName(n) => {
                            format!("alias {n} names a symbol that is already defined")
                        }
                        other => other.to_string(),
                    };
                    InputError::new(&d.file, d.line, msg)
                })?;
            }
        }
        let mut set: rustc_hash::FxHashMap<FuncName, (SymbolLinkage, &PlacedDirective)> =
            Default::default();
        for d in &directives {
            if let Directive::Linkage { name, linkage } = &d.directive {
                if let Some((earlier, at)) = set.get(name)
                    && earlier != linkage
                {
                    let msg = format!(
                        "{name} is given linkage {} here and {} at {}:{}",
                        linkage.keyword(),
                        earlier.keyword(),
                        at.file.display(),
                        at.line
                    );
                    return Err(InputError::new(&d.file, d.line, msg));
                }
                set.insert(name.clone(), (*linkage, d));
                if !self.module.set_linkage(name, *linkage) {
                    let msg = format!("linkage directive names {name}, which is not defined");
                    return Err(InputError::new(&d.file, d.line, msg));
                }
            }
        }
        for d in &directives {
            if let Directive::Alias { name, target } = &d.directive
                && let Some(message) = alias_of_linkonce(&self.module, name, target)
            {
                return Err(InputError::new(&d.file, d.line, message));
            }
        }
        Ok(self.module)
    }
}

/// Why alias `name` of `target` cannot be: `target` is `linkonce`. The linker keeps one unit's
/// copy of such a function and drops the others' sections, so a second name defined in a
/// dropped copy would vanish while code of its unit refers to it.
fn alias_of_linkonce(module: &ClifModule, name: &FuncName, target: &FuncName) -> Option<String> {
    let id = module.resolve(target)?;
    (module.function(id).linkage == SymbolLinkage::LinkOnce).then(|| {
        format!(
            "alias {name} names {target}, whose linkage is linkonce: the linker may keep \
             another unit's copy of {target} and drop this one, and the alias with it; make \
             {name} a function that calls {target}, or give {target} another linkage"
        )
    })
}

/// Reads every file into one module.
pub fn read_files(paths: &[PathBuf], options: ReadOptions) -> Result<ClifModule, InputError> {
    let mut reader = ModuleReader::new(options);
    for path in paths {
        reader.read_file(path)?;
    }
    reader.finish()
}

/// The files `paths` name: a file as it is, a folder as every `*.clif` and `*.clif.xz` file
/// directly in it, in sorted order (as wasmtime's `compile --emit-clif DIR` writes one file per
/// function). A folder with no such file is an error.
pub fn input_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let error = |e: std::io::Error| InputError::new(path, 0, e.to_string());
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(path).map_err(error)? {
            let file = entry.map_err(error)?.path();
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if (name.ends_with(".clif") || name.ends_with(".clif.xz")) && !file.is_dir() {
                found.push(file);
            }
        }
        if found.is_empty() {
            return Err(InputError::new(
                path,
                0,
                "the folder holds no .clif or .clif.xz file",
            ));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// Reads one module from `text`, named `file` in error messages (for text that is not in a
/// file: generated, mutated or embedded).
///
/// ```
/// use clif_merge::{ReadOptions, SymbolLinkage, read_module_text};
/// use std::path::Path;
///
/// let text = "
///     ; linkage: %helper local
///     function %helper(i32) -> i32 {
///     block0(v0: i32):
///         return v0
///     }
/// ";
/// let module = read_module_text(Path::new("demo.clif"), text, ReadOptions::default()).unwrap();
/// assert_eq!(module.len(), 1);
/// let helper = module.functions().next().unwrap();
/// assert_eq!(helper.linkage, SymbolLinkage::Local);
///
/// // Bad input is an error naming the file and line, never a panic.
/// let bad = "function %f() {\nblock0:\n    v0 = iconst.i32\n}\n";
/// let error = read_module_text(Path::new("bad.clif"), bad, ReadOptions::default()).unwrap_err();
/// assert!(error.to_string().starts_with("bad.clif:3:"), "{error}");
/// ```
pub fn read_module_text(
    file: &Path,
    text: &str,
    options: ReadOptions,
) -> Result<ClifModule, InputError> {
    let mut reader = ModuleReader::new(options);
    reader.read_text(file, text)?;
    reader.finish()
}

/// The path that stands for standard input.
pub const STDIN: &str = "-";

/// How `path` is named in messages: as it is, and standard input (`-`) as `<stdin>`.
pub fn display_name(path: &Path) -> &Path {
    if path == Path::new(STDIN) {
        Path::new("<stdin>")
    } else {
        path
    }
}

/// `.xz` data, decompressed (every stream of it).
#[cfg(feature = "xz")]
fn decompress_xz(path: &Path, bytes: &[u8]) -> Result<Vec<u8>, InputError> {
    let mut out = Vec::new();
    liblzma::read::XzDecoder::new_multi_decoder(bytes)
        .read_to_end(&mut out)
        .map_err(|e| InputError::new(path, 0, format!("cannot decompress: {e}")))?;
    Ok(out)
}

/// Without the `xz` feature, `.xz` input is an error that says so.
#[cfg(not(feature = "xz"))]
fn decompress_xz(path: &Path, _: &[u8]) -> Result<Vec<u8>, InputError> {
    Err(InputError::new(
        path,
        0,
        "cannot decompress: this build of clif-merge reads .xz files only with the `xz` feature",
    ))
}

/// The file's text (`-`: standard input): decompressed when it ends in `.xz`, and checked to be
/// UTF-8.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let name = display_name(path);
    let bytes = if path == Path::new(STDIN) {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map(|_| bytes)
    } else {
        std::fs::read(path)
    };
    let bytes = bytes.map_err(|e| InputError::new(name, 0, e.to_string()))?;
    let path = name;
    let bytes = if path.extension().is_some_and(|e| e == "xz") {
        decompress_xz(path, &bytes)?
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        InputError::new(path, line, "the text is not valid UTF-8")
    })
}

/// Functions as cranelift-reader parsed them from a piece of a file that starts `offset` lines
/// into the file.
struct Piece<'a> {
    functions: Vec<(Function, Details<'a>)>,
    offset: usize,
}

/// Lines of a function's entities in the file: the parser's source map, and the offset of the
/// piece it parsed.
struct Lines<'a> {
    map: &'a SourceMap,
    offset: usize,
}

/// A function as read: the function (boxed, as the module keeps it), its line in the file, and
/// what its checks found (an error boxed: almost every function has none, and all of them are
/// held at the peak of reading, 24 bytes each instead of 72).
type Checked = (Box<Function>, usize, Result<(), Box<InputError>>);

/// Every function of a large file that is a plain list of functions (no `set` or `target`
/// lines), cut at its `function` lines into `pieces` ([`function_pieces`]): each piece is parsed
/// and its functions checked on one thread of the pool, and the parser's source maps, which
/// only the checks read, are dropped there and then instead of living until every function of
/// the file is checked.
/// None when a piece does not parse: the file is then parsed whole, so that the error is
/// exactly the one the reader gives for the file.
fn read_pieces(
    file: &Path,
    text: &str,
    pieces: &[(usize, &str)],
    checks: &Checks,
) -> Option<Vec<Vec<Checked>>> {
    let parsed = crate::parallel::map_large(pieces, |&(offset, piece)| {
        let test = crate::guard::catch_panic(|| {
            cranelift_reader::parse_test(piece, ParseOptions::default())
        });
        let Ok(Ok(test)) = test else {
            return None;
        };
        // A vector of its own, not the parser's reused in place: that one is sized for the
        // parsed functions and their source maps, over a kilobyte each, where a `Checked` takes
        // 24 bytes.
        let mut checked: Vec<Checked> = Vec::with_capacity(test.functions.len());
        checked.extend(test.functions.into_iter().map(|parsed| {
            let check = check_function(&parsed, offset, file, text, checks).map_err(Box::new);
            let line = parsed.1.location.line_number + offset;
            (compact(parsed.0), line, check)
        }));
        Some(checked)
    });
    parsed.into_iter().collect()
}

/// `func` in memory of exactly its size, boxed as the module keeps it. The parser grows every
/// table of a function by doubling, so about a third of a parsed function is capacity it never
/// uses; a copy allocates each table at its length. Done on the thread that parsed the
/// function, while it is in the cache, and before the original's memory is reused for the next
/// one.
fn compact(func: Function) -> Box<Function> {
    Box::new(func.clone())
}

/// The functions of a file parsed whole, each checked on its own, in parallel (one piece).
fn check_piece(file: &Path, text: &str, piece: Piece, checks: &Checks) -> Vec<Vec<Checked>> {
    let checks_found = crate::parallel::map_weighted(
        &piece.functions,
        |(func, _)| func.dfg.num_insts(),
        || (),
        |_, _, parsed| check_function(parsed, piece.offset, file, text, checks).map_err(Box::new),
    );
    let checked = piece
        .functions
        .into_iter()
        .zip(checks_found)
        .map(|((func, details), check)| {
            let line = details.location.line_number + piece.offset;
            (Box::new(func), line, check)
        })
        .collect();
    vec![checked]
}

/// The file parsed in one piece, with its `set` and `target` lines; errors with the line where
/// they are.
fn parse_whole<'a>(file: &Path, text: &'a str) -> Result<(Piece<'a>, IsaSpec), InputError> {
    let options = ParseOptions::default();
    let parsed = crate::guard::catch_panic(|| cranelift_reader::parse_test(text, options))
        .map_err(|panic| {
            InputError::new(
                file,
                0,
                format!("the CLIF reader failed on this file: {panic}"),
            )
        })?;
    let test = parsed.map_err(|e| {
        // The reader goes on lexing past a bad character and reports it where parsing
        // stopped; find the character's own line.
        let (line, message) = match e.message.as_str() {
            "invalid character" => (
                invalid_char_line(text).unwrap_or(e.location.line_number),
                e.message.clone(),
            ),
            _ => parse_error::locate(text, &e),
        };
        InputError::new(file, line, message)
    })?;
    let piece = Piece {
        functions: test.functions,
        offset: 0,
    };
    Ok((piece, test.isa_spec))
}

/// A piece of a large file ends after this many functions or this many bytes, whichever
/// comes first: enough that parsing a piece costs far more than starting the parser, small
/// enough that a file of a few large functions still makes pieces for every thread.
const PIECE_FUNCTIONS: usize = 64;
const PIECE_BYTES: usize = 256 << 10;

/// A file is cut only with this many functions or bytes: below, one thread reads it faster
/// than two start and finish.
const MIN_FUNCTIONS: usize = 4096;
const MIN_BYTES: usize = 1 << 20;

/// The directives of `text` ([`scan_directives`]) and its pieces ([`function_pieces`]), found
/// in one walk over its lines instead of two (on a large file each walk took as long as the
/// other).
fn directives_and_pieces(text: &str) -> (Vec<(usize, ParsedDirective)>, Option<TextPieces<'_>>) {
    let mut directives = Vec::new();
    // Where each `function` line starts, while the file is a plain list of functions.
    let mut starts: Option<Vec<(usize, usize)>> = Some(Vec::new());
    let (mut line, mut at) = (0, 0);
    let mut in_string = false;
    // The lines of `text.split_inclusive('\n')`, with the line ends found on the bytes (the
    // `char` searcher cost twice as much).
    while at < text.len() {
        let rest = &text.as_bytes()[at..];
        let len = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        let content = &text[at..at + len];
        let starts_in_string = in_string;
        in_string = string_open_after(content, in_string);
        if starts_in_string {
            // Text of a string: no directive, and no function starts here.
            at += len;
            line += 1;
            continue;
        }
        if let Some(parsed) = line_directive(content) {
            directives.push((line + 1, parsed));
        }
        if let Some(found) = &mut starts {
            if content.starts_with("function ") || content.starts_with("function\t") {
                found.push((line, at));
            } else if found.is_empty() {
                // Blank by the lexer's rule, not Unicode's: a line above the first function
                // that holds U+00A0 is no blank line to the lexer but an invalid character,
                // which the file read whole reports (hostile19).
                let trimmed =
                    content.trim_matches(|c| u8::try_from(c).is_ok_and(is_ascii_white_space));
                if !trimmed.is_empty() && !trimmed.starts_with(';') {
                    starts = None;
                }
            }
        }
        at += len;
        line += 1;
    }
    let pieces = starts.and_then(|starts| cut_at_functions(text, &starts));
    (directives, pieces)
}

/// What a directive line holds: the directive, or what is wrong with it.
type ParsedDirective = Result<Directive, String>;

/// Pieces of a file's text, each with the number of lines before it.
type TextPieces<'a> = Vec<(usize, &'a str)>;

/// The pieces of a file that is a plain list of functions (only comments and blank lines
/// before the first `function` line), each from a `function` line to the start of the function
/// that ends it ([`PIECE_FUNCTIONS`], [`PIECE_BYTES`]), with the number of lines before it;
/// None for any other file, or one too small to be worth cutting.
#[cfg(test)]
fn function_pieces(text: &str) -> Option<TextPieces<'_>> {
    directives_and_pieces(text).1
}

/// [`function_pieces`] of `text` whose `function` lines are at `starts` (line, byte offset).
fn cut_at_functions<'a>(text: &'a str, starts: &[(usize, usize)]) -> Option<TextPieces<'a>> {
    if starts.len() < 2 || (starts.len() < MIN_FUNCTIONS && text.len() < MIN_BYTES) {
        return None;
    }
    let mut pieces = Vec::new();
    let mut piece_start = starts[0];
    let mut in_piece = 0;
    for &(line, start) in &starts[1..] {
        in_piece += 1;
        if in_piece >= PIECE_FUNCTIONS || start - piece_start.1 >= PIECE_BYTES {
            pieces.push((piece_start.0, &text[piece_start.1..start]));
            piece_start = (line, start);
            in_piece = 0;
        }
    }
    pieces.push((piece_start.0, &text[piece_start.1..]));
    Some(pieces)
}

/// The line of the first character the CLIF lexer rejects, outside comments and strings.
fn invalid_char_line(text: &str) -> Option<usize> {
    let mut line = 1;
    let mut chars = text.chars().peekable();
    let mut in_word = false;
    while let Some(c) = chars.next() {
        let word_char = c.is_ascii_alphanumeric() || (in_word && c == '_');
        match c {
            '\n' => line += 1,
            ';' => while chars.next_if(|&c| c != '\n').is_some() {},
            '"' => {
                let start = line;
                loop {
                    match chars.next() {
                        None => return Some(start),
                        Some('"') => break,
                        Some('\n') => line += 1,
                        Some(_) => {}
                    }
                }
            }
            '%' | '#' | '@' => {
                in_word = true;
                continue;
            }
            _ if word_char => {}
            '(' | ')' | '{' | '}' | '[' | ']' | '<' | '>' | ',' | '.' | ':' | '=' | '!' | '+'
            | '*' | '-' | ' ' | '\t' | '\r' | '\x0b' | '\x0c' => {}
            _ => return Some(line),
        }
        in_word = word_char;
    }
    None
}

/// The verifier's part of the checks: whether it runs, and the ISA for the functions that need
/// one (built on first use).
struct Checks<'a> {
    verify: bool,
    isa: &'a (dyn Fn() -> Result<Option<OwnedTargetIsa>, InputError> + Sync),
}

/// The checks a function passes before it joins the module: a body, no reference to an
/// undeclared entity, and (with `verify`) the CLIF verifier, with the ISA when the function
/// needs one ([`verify_clif`]).
fn check_function(
    (func, details): &(Function, Details),
    offset: usize,
    file: &Path,
    text: &str,
    checks: &Checks,
) -> Result<(), InputError> {
    let line = details.location.line_number + offset;
    let lines = Lines {
        map: &details.map,
        offset,
    };
    if func.layout.entry_block().is_none() {
        let msg = format!(
            "function {} has no blocks: a defined function needs a body",
            FuncName::of_function(func)
        );
        return Err(InputError::new(file, line, msg));
    }
    if let Some((entity, msg)) = crate::references::undeclared_reference(func) {
        let msg = format!("in function {}: {msg}", FuncName::of_function(func));
        let at = entity_line(text, &lines, entity).unwrap_or(line);
        return Err(InputError::new(file, at, msg));
    }
    if checks.verify {
        let isa = match isa::function_needs_isa(func) {
            true => (checks.isa)()?,
            false => None,
        };
        let source = Source { file, text, line };
        verify(func, isa.as_deref(), &lines, &source)?;
    }
    Ok(())
}

/// Where a function was read from: the file, its text and the function's line.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    line: usize,
}

fn verify(
    func: &Function,
    isa: Option<&dyn TargetIsa>,
    lines: &Lines,
    source: &Source,
) -> Result<(), InputError> {
    let Source {
        file,
        text,
        line: func_line,
    } = *source;
    let verified = crate::guard::catch_panic(|| verify_clif(func, isa)).map_err(|panic| {
        let msg = format!(
            "in function {}: the CLIF verifier failed on this function: {panic}",
            FuncName::of_function(func)
        );
        InputError::new(file, func_line, msg)
    })?;
    let Err(errors) = verified else {
        return Ok(());
    };
    let first = &errors.0[0];
    let line = entity_line(text, lines, first.location).unwrap_or(func_line);
    let context = first
        .context
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    let more = match errors.0.len() {
        1 => String::new(),
        n => format!(" (and {} more verifier errors)", n - 1),
    };
    let msg = format!(
        "in function {}: verifier: {}{context}: {}{more}",
        FuncName::of_function(func),
        first.location,
        first.message
    );
    Err(InputError::new(file, line, msg))
}

/// The line of `entity` in `text`. cranelift-reader records a declaration (`gv0 = ...`) at the
/// token after it, often the next line, so a declaration's own line is looked up backwards from
/// there.
fn entity_line(text: &str, lines: &Lines, entity: AnyEntity) -> Option<usize> {
    let recorded = lines.map.location(entity)?.line_number + lines.offset;
    if matches!(
        entity,
        AnyEntity::Function | AnyEntity::Inst(_) | AnyEntity::Block(_) | AnyEntity::Value(_)
    ) {
        return Some(recorded);
    }
    let name = entity.to_string();
    let declares = |line: &str| {
        line.trim_start()
            .strip_prefix(name.as_str())
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let declared = text
        .lines()
        .take(recorded)
        .enumerate()
        .filter(|(_, line)| declares(line))
        .last();
    Some(declared.map_or(recorded, |(i, _)| i + 1))
}

fn duplicate_error(module: &ClifModule, e: ModuleError, file: &Path, line: usize) -> InputError {
    let msg = match &e {
        ModuleError::DuplicateName(name) => match module
            .resolve(name)
            .and_then(|id| module.function(id).origin.clone())
        {
            Some(o) => format!(
                "function {name} is defined twice: also at {}:{}",
                o.file.display(),
                o.line
            ),
            None => format!("{name} is defined twice"),
        },
        other => other.to_string(),
    };
    InputError::new(file, line, msg)
}

/// The directives in `text`, each with its line number (from 1), or what is wrong with it.
pub fn scan_directives(text: &str) -> Vec<(usize, Result<Directive, String>)> {
    directives_and_pieces(text).0
}

/// Whether a string is open at the end of `line`, which starts inside one when `in_string`.
/// Cranelift's lexer ends a string at the next quote, so a string (a region's description) may
/// hold line breaks, and a line of it that reads like a directive or a `function` line is text.
/// A `;` outside a string starts a comment, whose quotes do not count.
fn string_open_after(line: &str, mut in_string: bool) -> bool {
    if !in_string && !line.as_bytes().contains(&b'"') {
        return false;
    }
    for b in line.bytes() {
        match b {
            b'"' => in_string = !in_string,
            b';' if !in_string => return false,
            _ => {}
        }
    }
    in_string
}

/// The directive `line` holds, if it is a directive line (the line's end may be included).
fn line_directive(line: &str) -> Option<ParsedDirective> {
    // Most lines are code: after ASCII blanks comes an ASCII character that is not `;`. Found
    // on the bytes; `trim_start` decodes every character as it goes (it ran on every line of
    // every file).
    let first = line.bytes().find(|&b| !is_ascii_white_space(b));
    if first.is_none_or(|b| b.is_ascii() && b != b';') {
        return None;
    }
    let comment = line.trim_start().strip_prefix(';')?;
    let comment = comment.trim_start_matches(';').trim();
    let mut words = comment.split_whitespace();
    match words.next() {
        Some("linkage:") => Some(parse_linkage(words.collect())),
        Some("alias:") => Some(parse_alias(words.collect())),
        _ => None,
    }
}

/// The ASCII characters that are white space to [`char::is_whitespace`] (and so to
/// `str::trim_start`): not quite [`u8::is_ascii_whitespace`], which leaves out U+000B. They are
/// all the white space Cranelift's lexer skips: any other character, U+00A0 included, is an
/// invalid one to it.
fn is_ascii_white_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn parse_name(word: &str) -> Result<FuncName, String> {
    FuncName::parse(word)
        .ok_or_else(|| format!("`{word}` is not a function name (expected %name or uN:M)"))
}

fn parse_linkage(words: Vec<&str>) -> Result<Directive, String> {
    let [name, kind] = words[..] else {
        return Err("malformed directive: expected `; linkage: NAME KIND`".into());
    };
    let linkage = SymbolLinkage::from_keyword(kind).ok_or_else(|| {
        format!(
            "unknown linkage `{kind}` (expected export, hidden, local, preemptible or linkonce)"
        )
    })?;
    Ok(Directive::Linkage {
        name: parse_name(name)?,
        linkage,
    })
}

fn parse_alias(words: Vec<&str>) -> Result<Directive, String> {
    let [name, "=", target] = words[..] else {
        return Err("malformed directive: expected `; alias: NAME = TARGET`".into());
    };
    Ok(Directive::Alias {
        name: parse_name(name)?,
        target: parse_name(target)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_characters_are_found_on_their_line() {
        assert_eq!(invalid_char_line("a b\n  v1 = iadd v0 $\n"), Some(2));
        assert_eq!(
            invalid_char_line("; $ in a comment\n\"$ in a string\"\nu0:1_x\n"),
            None
        );
        assert_eq!(invalid_char_line("x\n_start\n"), Some(2));
        assert_eq!(invalid_char_line("x\n\u{feff}y"), Some(2));
    }

    /// A file of many functions, or of few large ones, is cut at `function` lines into pieces
    /// that hold every function once, each with the lines before it; a small file is not cut.
    #[test]
    fn large_files_are_cut_at_functions_by_count_and_size() {
        let function = |i: usize, lines: usize| {
            let body: String = (0..lines)
                .map(|k| format!("    v{} = iadd v0, v0\n", k + 1))
                .collect();
            format!("function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n{body}    return v0\n}}\n\n")
        };
        let check = |text: &str, expected_pieces: usize| {
            let pieces = function_pieces(text).expect("cut");
            assert_eq!(pieces.len(), expected_pieces);
            let first = text.find("function").unwrap();
            let joined: String = pieces.iter().map(|(_, p)| *p).collect();
            assert_eq!(joined, text[first..]);
            for (line, piece) in &pieces {
                assert!(piece.starts_with("function"));
                let at = piece.as_ptr() as usize - text.as_ptr() as usize;
                assert_eq!(text[..at].lines().count(), *line);
            }
        };
        // Large functions: pieces of about PIECE_BYTES.
        let big: String = std::iter::once("; before\n".to_string())
            .chain((0..40).map(|i| function(i, 2_000)))
            .collect();
        assert!(big.len() > MIN_BYTES);
        let per_function = function(0, 2_000).len();
        let per_piece = PIECE_BYTES.div_ceil(per_function);
        check(&big, 40usize.div_ceil(per_piece));
        // Many small functions: pieces of PIECE_FUNCTIONS.
        let many: String = (0..MIN_FUNCTIONS).map(|i| function(i, 1)).collect();
        check(&many, MIN_FUNCTIONS / PIECE_FUNCTIONS);
        // Small files, and files with anything but comments before a function, are read whole.
        let small: String = (0..100).map(|i| function(i, 100)).collect();
        assert!(function_pieces(&small).is_none());
        assert!(function_pieces(&format!("target x86_64\n{big}")).is_none());
    }

    /// A large file's scans run side by side, but report in the order a small file's do: a
    /// malformed directive before a refused entity number, wherever each is.
    #[test]
    fn a_large_file_reports_directives_before_limits() {
        let function = |i: usize| {
            let body: String = (1..200)
                .map(|k| format!("    v{k} = iadd v0, v0\n"))
                .collect();
            format!("function %f{i}(i64) -> i64 {{\nblock0(v0: i64):\n{body}    return v0\n}}\n")
        };
        let mut text: String = (0..400).map(function).collect();
        assert!(text.len() >= MIN_BYTES);
        text = text.replacen("v5 = iadd v0, v0", "v5 = iadd v0, v2000000000", 1);
        let limits_line = text
            .lines()
            .position(|l| l.contains("v2000000000"))
            .unwrap()
            + 1;
        let read =
            |text: &str| read_module_text(Path::new("big.clif"), text, ReadOptions::default());
        let error = read(&text).unwrap_err();
        assert_eq!(
            (error.line, error.message.contains("entity numbers")),
            (limits_line, true)
        );
        text.push_str("; linkage: %f3 sideways\n");
        let directive_line = text.lines().count();
        let error = read(&text).unwrap_err();
        assert_eq!(error.line, directive_line, "{}", error.message);
        assert!(
            error.message.contains("unknown linkage"),
            "{}",
            error.message
        );
    }

    /// A function that needs an ISA is verified with the one the embedder gives, else the
    /// host's, and the file's `set` lines apply on top of either.
    #[test]
    fn functions_that_need_an_isa_are_verified_with_the_target_and_set_lines() {
        use cranelift_codegen::settings::{self, Configurable};
        let pinned = "function %p() -> i64 {\nblock0:\n    v0 = get_pinned_reg.i64\n    \
                      return v0\n}\n";
        let read = |reader: ModuleReader, text: &str| {
            let mut reader = reader;
            reader.read_text(Path::new("p.clif"), text)?;
            reader.finish().map(|m| m.len())
        };
        let plain = || ModuleReader::new(ReadOptions::default());
        let refused = read(plain(), pinned).unwrap_err();
        assert_eq!(refused.line, 3);
        assert!(
            refused.message.contains("without enable_pinned_reg"),
            "{refused}"
        );
        assert_eq!(
            read(plain(), &format!("set enable_pinned_reg\n{pinned}")),
            Ok(1)
        );
        let mut flags = settings::builder();
        flags.enable("enable_pinned_reg").unwrap();
        let triple = "aarch64-unknown-linux-gnu".parse().unwrap();
        let aarch64 = cranelift_codegen::isa::lookup(triple)
            .unwrap()
            .finish(settings::Flags::new(flags))
            .unwrap();
        assert_eq!(read(plain().with_isa(aarch64), pinned), Ok(1));
        // The target's pointer width counts for such a function, not for others.
        let narrow = "function %n(i32) -> i64 {\nblock0(v0: i32):\n    v1 = load.i64 v0\n    \
                      v2 = get_frame_pointer.i64\n    return v2\n}\n";
        let refused = read(plain(), narrow).unwrap_err();
        assert!(refused.message.contains("pointer width"), "{refused}");
        let without = narrow.replace(
            "    v2 = get_frame_pointer.i64\n    return v2",
            "    return v1",
        );
        assert_eq!(read(plain(), &without), Ok(1));
    }

    /// A line inside a string (a region's description may span lines) is text of the string:
    /// neither a directive nor a `function` line where a large file is cut; a `;` comment's
    /// quote opens no string.
    #[test]
    fn lines_inside_a_string_are_no_directives_and_no_function_starts() {
        let function = |i: usize| {
            format!(
                "function %f{i}(i64) -> i64 {{\n    region0 = 1 \"a\n; linkage: %f{i} local\n\
                 function %x{i}() {{\n\"\n; linkage: %f{i} hidden\n; a quote \" in a comment\nblock0(v0: i64):\n    \
                 return v0\n}}\n"
            )
        };
        let text: String = (0..MIN_FUNCTIONS).map(function).collect();
        let (directives, pieces) = directives_and_pieces(&text);
        assert_eq!(directives.len(), MIN_FUNCTIONS, "one directive a function");
        assert!(
            (directives.iter()).all(|(line, d)| line % 10 == 6 && d.is_ok()),
            "{:?}",
            &directives[..2]
        );
        let pieces = pieces.expect("a plain list of functions");
        assert!(
            pieces
                .iter()
                .all(|(_, piece)| piece.starts_with("function %f"))
        );
    }

    /// The walk that finds directives and `function` lines together finds the directives of
    /// every line read alone, with CRLF line ends and in files that are not a plain list of
    /// functions too.
    #[test]
    fn directives_are_found_in_the_same_walk_as_pieces() {
        let function = |i: usize| {
            format!(
                "; alias: %a{i} = %f{i}\r\nfunction %f{i}() {{\r\nblock0:\r\n  ; linkage: %f{i} local\r\n    return\r\n}}\r\n"
            )
        };
        let plain: String = (0..MIN_FUNCTIONS).map(function).collect();
        for text in [
            plain.clone(),
            format!("target x86_64\n; linkage: %f1 sideways\n{plain}"),
            "  ;; alias: %g %f\n\tfunction %f() {\n".to_string(),
        ] {
            let (directives, pieces) = directives_and_pieces(&text);
            let each_line: Vec<(usize, ParsedDirective)> = (text.lines().enumerate())
                .filter_map(|(i, line)| Some((i + 1, line_directive(line)?)))
                .collect();
            assert_eq!(directives, each_line);
            assert_eq!(pieces.is_some(), text == plain);
        }
        assert_eq!(directives_and_pieces(&plain).0.len(), 2 * MIN_FUNCTIONS);
    }

    /// The quick test for code lines rejects exactly the lines that are no comment once
    /// `trim_start` has stripped every white space character, ASCII or not.
    #[test]
    fn only_comment_lines_are_read_as_directives() {
        let directive = "; linkage: %f local";
        for start in [
            "",
            " ",
            "\t",
            "\x0b",
            "\x0c",
            "\r",
            "\u{a0}",
            "\u{2003} ",
            " \u{3000}",
            "\x1c",
            "x",
            "\u{e9}",
            "\u{feff}",
        ] {
            let line = format!("{start}{directive}\n");
            let is_comment = line.trim_start().starts_with(';');
            assert_eq!(line_directive(&line).is_some(), is_comment, "{line:?}");
        }
        for line in ["", "\n", "   \r\n", "    v1 = iadd v0, v0\n", "}\n"] {
            assert_eq!(line_directive(line), None, "{line:?}");
        }
    }

    #[test]
    fn directives_are_found_and_checked() {
        let text = "; Word: not a directive\n; linkage: %f local\n;; alias: %g = %f\n\
                    ; linkage: %f sideways\n; alias: %g %f\n; check: ; linkage: %x bad\n";
        let found = scan_directives(text);
        assert_eq!(found.len(), 4);
        assert_eq!(
            found[0],
            (
                2,
                Ok(Directive::Linkage {
                    name: FuncName::parse("%f").unwrap(),
                    linkage: SymbolLinkage::Local
                })
            )
        );
        assert!(matches!(found[1], (3, Ok(Directive::Alias { .. }))));
        assert!(matches!(&found[2], (4, Err(m)) if m.contains("unknown linkage")));
        assert!(matches!(&found[3], (5, Err(m)) if m.contains("malformed")));
    }
}
