use std::path::PathBuf;

/// Errors of the engine. Each names the file, tensor or token it is about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A model file that cannot be read or does not hold a usable model.
    #[error("{}: {message}", path.display())]
    Model { path: PathBuf, message: String },
    #[error("{}: tensor {tensor}: unsupported type {dtype} (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K)", path.display())]
    UnsupportedTensorType {
        path: PathBuf,
        tensor: String,
        dtype: String,
    },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("chat template: {0}")]
    Template(String),
    /// The input does not fit the model (longer than its context, bad positions).
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// Writing an output file (an adapter, a soup record) failed.
    #[error(transparent)]
    Data(#[from] ocrank_data::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn model(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Model {
            path: path.into(),
            message: message.into(),
        }
    }
}
