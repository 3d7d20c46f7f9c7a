//! Writing output files: all of them or none, never replacing what is not a regular file.
//!
//! - Every output is checked before any work ([`check_outputs`]): its folder exists, it is not
//!   a folder, no two outputs are the same file, and no output is an input.
//! - A symlink is followed to its target (a chain of them, up to a limit); what the target is
//!   decides how it is written. A regular file, or nothing, is written to a temporary file in
//!   the same folder and renamed over it, so that a failure leaves no partial file. Anything
//!   else — a character device such as `/dev/null`, a FIFO, a socket — is written into, as a
//!   shell redirection would: renaming over it would replace the device itself.
//! - [`write_outputs`] writes every temporary file first, then what is written into, then
//!   renames the temporary files: if any write fails, no output file has been touched.

use std::fs::{self, Permissions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What went wrong with an output.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output's folder does not exist.
    #[error("cannot write {path}: the folder {folder} does not exist")]
    NoFolder {
        /// The output.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// The output is a folder.
    #[error("cannot write {path}: it is a folder")]
    IsFolder {
        /// The output.
        path: PathBuf,
    },
    /// The output's symlinks do not end.
    #[error("cannot write {path}: too many levels of symbolic links")]
    SymlinkLoop {
        /// The output.
        path: PathBuf,
    },
    /// Two outputs are one file.
    #[error("{first} and {second} are the same file: each output needs its own")]
    SameOutput {
        /// One output.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// An output is an input.
    #[error("the output {output} is the input {input}: refusing to overwrite an input")]
    OutputIsInput {
        /// The output.
        output: PathBuf,
        /// The input it is.
        input: PathBuf,
    },
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The output.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The symlinks followed from one output path at most (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// An output path resolved through its symlinks.
struct Resolved {
    /// The path given.
    given: PathBuf,
    /// Where the symlinks lead: the file that is written.
    target: PathBuf,
    /// The target exists and is neither a regular file nor a folder: written into.
    special: bool,
    /// Identifies the file: (device, inode) when it exists, else its folder's canonical path
    /// joined with its name.
    identity: Identity,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The identity of the existing file at `path` (symlinks followed).
#[cfg(unix)]
fn existing_identity(_path: &Path, meta: &fs::Metadata) -> std::io::Result<Identity> {
    use std::os::unix::fs::MetadataExt;
    Ok(Identity::Inode(meta.dev(), meta.ino()))
}

/// Without inodes, an existing file is known by its canonical path.
#[cfg(not(unix))]
fn existing_identity(path: &Path, _: &fs::Metadata) -> std::io::Result<Identity> {
    fs::canonicalize(path).map(Identity::Path)
}

fn resolve(given: &Path) -> Result<Resolved, OutputError> {
    let mut target = given.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        let meta = match fs::symlink_metadata(&target) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let folder = folder_of(&target);
                let canonical = fs::canonicalize(folder).map_err(|_| OutputError::NoFolder {
                    path: given.to_path_buf(),
                    folder: folder.to_path_buf(),
                })?;
                let name = target.file_name().ok_or_else(|| OutputError::IsFolder {
                    path: given.to_path_buf(),
                })?;
                let identity = Identity::Path(canonical.join(name));
                return Ok(Resolved {
                    given: given.to_path_buf(),
                    target,
                    special: false,
                    identity,
                });
            }
            Err(e) => return Err(io_error(given)(e)),
        };
        if meta.file_type().is_symlink() {
            let link = fs::read_link(&target).map_err(io_error(given))?;
            target = folder_of(&target).join(link);
            continue;
        }
        if meta.is_dir() {
            return Err(OutputError::IsFolder {
                path: given.to_path_buf(),
            });
        }
        return Ok(Resolved {
            given: given.to_path_buf(),
            special: !meta.is_file(),
            identity: existing_identity(&target, &meta).map_err(io_error(given))?,
            target,
        });
    }
    Err(OutputError::SymlinkLoop {
        path: given.to_path_buf(),
    })
}

/// Checks, before any work, that every output can be written and is none of the inputs and
/// none of the other outputs. `-` (standard input or output) is not a file and is left out.
pub fn check_outputs(outputs: &[&Path], inputs: &[PathBuf]) -> Result<(), OutputError> {
    let is_stdio = |p: &Path| p == Path::new("-");
    let mut seen: Vec<Resolved> = Vec::new();
    for &path in outputs.iter().filter(|p| !is_stdio(p)) {
        let resolved = resolve(path)?;
        if let Some(earlier) = seen.iter().find(|r| r.identity == resolved.identity) {
            return Err(OutputError::SameOutput {
                first: earlier.given.clone(),
                second: path.to_path_buf(),
            });
        }
        seen.push(resolved);
    }
    for input in inputs.iter().filter(|p| !is_stdio(p)) {
        // A missing or unreadable input is reported by reading.
        let Ok(identity) = fs::metadata(input).and_then(|m| existing_identity(input, &m)) else {
            continue;
        };
        if let Some(output) = seen.iter().find(|r| r.identity == identity) {
            return Err(OutputError::OutputIsInput {
                output: output.given.clone(),
                input: input.clone(),
            });
        }
    }
    Ok(())
}

/// Writes every `(path, bytes)`: all or none (see the module docs).
pub fn write_outputs(outputs: &[(&Path, &[u8])]) -> Result<(), OutputError> {
    let mut renames = Vec::new();
    let mut into = Vec::new();
    for &(path, bytes) in outputs {
        let resolved = resolve(path)?;
        if resolved.special {
            into.push((resolved, bytes));
        } else {
            let temp = write_temporary(&resolved.target, bytes).map_err(io_error(path))?;
            renames.push((resolved, temp));
        }
    }
    for (resolved, bytes) in &into {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(&resolved.target)
            .map_err(io_error(&resolved.given))?;
        file.write_all(bytes).map_err(io_error(&resolved.given))?;
    }
    for (resolved, temp) in renames {
        temp.persist(&resolved.target)
            .map_err(|e| io_error(&resolved.given)(e.error))?;
    }
    Ok(())
}

/// `bytes` in a new temporary file beside `target`, with the permissions a new file gets (or
/// the ones `target` has).
fn write_temporary(target: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".clif-merge-").suffix(".tmp");
    if let Ok(meta) = fs::metadata(target) {
        builder.permissions(meta.permissions());
    } else {
        #[cfg(unix)]
        builder.permissions(new_file_permissions());
    }
    let mut temp = builder.tempfile_in(folder_of(target))?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    Ok(temp)
}

/// Read and write for everyone, less the umask (which the system applies when the temporary
/// file is created), as for any new file; `tempfile` alone would make it private.
#[cfg(unix)]
fn new_file_permissions() -> Permissions {
    use std::os::unix::fs::PermissionsExt;
    Permissions::from_mode(0o666)
}
