//! Data formats of ocrank (SPEC.md section 7): pools, qrels, TREC runs and the
//! scores JSONL. Free of any ML library so that it builds in seconds.
//!
//! Every loader reports bad input as an [`Error`] naming the file, the line and
//! the field; none panics on user input, none drops a record silently.

pub mod error;
pub mod pool;
pub mod scores;

pub use error::{Error, Result};
pub use pool::{Candidate, Pool};
pub use scores::ScoreRecord;
