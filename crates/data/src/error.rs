use std::path::PathBuf;

/// Errors of the data crate. Each names the file and, where it applies, the
/// 1-based line and the offending field, so that a one-line message tells the
/// user what to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
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
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
