/// Errors of training. Each names the file, query or step it is about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Engine(#[from] ocrank_engine::Error),
    #[error(transparent)]
    Score(#[from] ocrank_score::Error),
    #[error(transparent)]
    Data(#[from] ocrank_data::Error),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Labels and pools do not fit together.
    #[error("{0}")]
    Labels(String),
    #[error("{0}")]
    Train(String),
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Engine(e.into())
    }
}

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
