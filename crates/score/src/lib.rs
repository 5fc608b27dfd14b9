//! ocrank-score: batched pointwise scoring with a local LLM.
//!
//! Data flow: pool -> permutation (ocrank-plan) -> windows -> prompt
//! ([`prompt`]) -> engine forward (ocrank-engine) -> slot readout
//! ([`readout`]) -> scores ([`ocrank_data::ScoreRecord`]).

pub mod error;
pub mod prompt;
pub mod reader;
pub mod readout;
pub mod scorer;

pub use error::{Error, Result};
pub use prompt::{clean_text, PromptConfig, Task, Template};
pub use reader::{Answer, ReaderConfig};
pub use readout::{GradeDist, Readout};
pub use scorer::{Cost, Mode, QueryContext, QueryText, ScoreConfig, Scorer, Sequence};
