//! The native crate's error: core errors plus I/O and fetching.

use std::fmt;
use std::path::PathBuf;

/// What went wrong: core's errors, and the native crate's own.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An error from tern-llm-core (a bad file, an argument out of range, ...).
    Core(tern_core::Error),
    /// A file could not be read or mapped.
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A model could not be fetched.
    Fetch {
        /// What happened.
        detail: String,
    },
    /// The server could not start or run.
    Serve {
        /// What happened.
        detail: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Core(e) => e.fmt(f),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Fetch { detail } => write!(f, "fetching the model: {detail}"),
            Error::Serve { detail } => write!(f, "serve: {detail}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Core(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::Fetch { .. } | Error::Serve { .. } => None,
        }
    }
}

impl From<tern_core::Error> for Error {
    fn from(e: tern_core::Error) -> Self {
        Error::Core(e)
    }
}

/// The native crate's result.
pub type Result<T> = std::result::Result<T, Error>;
