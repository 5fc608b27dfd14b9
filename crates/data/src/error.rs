use std::path::{Path, PathBuf};

/// Errors of the data crate. Each names the file and, where it applies, the
/// 1-based line and the offending field, so that a one-line message tells the
/// user what to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record that cannot be read. `line` is 1-based; 0 when the format has
    /// no lines (a whole-file JSON document whose position is unknown).
    #[error("{}:{line}: {field}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        field: String,
        message: String,
    },
    /// Input that parses but cannot be used (an empty pool, an unknown query id).
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    /// A lookup of an id that the data does not hold (`within` says which data).
    #[error("unknown {kind} id {id:?} in {within}")]
    UnknownId {
        kind: &'static str,
        id: String,
        within: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn parse(
        path: &Path,
        line: usize,
        field: impl Into<String>,
        message: impl std::fmt::Display,
    ) -> Self {
        Error::Parse {
            path: path.to_owned(),
            line,
            field: field.into(),
            message: message.to_string(),
        }
    }

    pub(crate) fn invalid(path: &Path, message: impl std::fmt::Display) -> Self {
        Error::Invalid {
            path: path.to_owned(),
            message: message.to_string(),
        }
    }
}
