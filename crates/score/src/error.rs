#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Engine(#[from] ocrank_engine::Error),
    #[error("prompt: {0}")]
    Prompt(String),
    /// A grade digit that is not exactly one token where the slot reads it.
    #[error("grade {grade:?} is not a single token in the slot line {line:?} (tokens: {tokens})")]
    GradeToken {
        grade: String,
        line: String,
        tokens: String,
    },
    #[error("query {qid}: {message}")]
    Pool { qid: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
