//! What a build can fail with: a kind to match on and a message that names the file, command or
//! symbol at fault and what to do about it.

use std::fmt;
use std::path::Path;

/// The result of dpakit-build's operations.
pub type Result<T = (), E = Error> = std::result::Result<T, E>;

/// Which step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A tool is missing and could not be installed (rustup target, clang, rust-lld).
    Toolchain,
    /// `cargo metadata` failed, or the package is not in the workspace.
    Metadata,
    /// A nested cargo build failed.
    Cargo,
    /// The device archive cannot be read, or its kernel records are malformed.
    Archive,
    /// The kernels import a symbol that is not a DOCA device function.
    Imports,
    /// The package declares no kernel.
    NoKernels,
    /// Linking or checking the DPA image failed.
    Image,
    /// Building or checking the soft app library failed.
    SoftApp,
    /// The ISA profile command failed or printed no figures.
    Profile,
    /// Finding or running dpacc failed.
    Dpacc,
    /// Reading or writing a file failed.
    Io,
}

/// A failed build step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Makes errors of `kind` from messages (for `map_err`).
    pub fn of(kind: ErrorKind) -> impl Fn(String) -> Error {
        move |message| Error::new(kind, message)
    }

    /// A file operation on `path` failed.
    pub(crate) fn io(path: &Path, e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))
    }

    /// The step that failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// For xtasks whose errors are messages.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}
