//! The pool: one query's candidates in first-stage (canonical) order.

use serde::{Deserialize, Serialize};

/// One candidate of a pool. Ids are strings everywhere (query ids too): numeric
/// ids in some sources are compared as strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub text: String,
    /// Graded relevance judgment when known (qrels grade, gold label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grade: Option<i32>,
}

/// A query and its candidates in canonical (first-stage) order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub qid: String,
    pub query: String,
    pub candidates: Vec<Candidate>,
}

impl Pool {
    /// The first `depth` candidates (the whole pool when it is shorter).
    pub fn truncated(&self, depth: usize) -> Pool {
        Pool {
            qid: self.qid.clone(),
            query: self.query.clone(),
            candidates: self.candidates.iter().take(depth).cloned().collect(),
        }
    }
}
