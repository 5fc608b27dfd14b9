//! The pool: one query's candidates in first-stage (canonical) order.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

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

    /// The candidate with id `id`.
    pub fn candidate(&self, id: &str) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.id == id)
    }

    /// What makes this pool unusable, if anything: every loader rejects pools
    /// with no candidates or with a candidate id used twice.
    pub fn defect(&self) -> Option<PoolDefect> {
        if self.candidates.is_empty() {
            return Some(PoolDefect::Empty);
        }
        let mut seen = std::collections::HashMap::new();
        for (i, c) in self.candidates.iter().enumerate() {
            if let Some(&first) = seen.get(c.id.as_str()) {
                return Some(PoolDefect::DuplicateId {
                    id: c.id.clone(),
                    first,
                    second: i,
                });
            }
            seen.insert(c.id.as_str(), i);
        }
        None
    }
}

/// Why a pool cannot be used (see [`Pool::defect`]); indices are 0-based
/// positions in `candidates`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolDefect {
    Empty,
    DuplicateId {
        id: String,
        first: usize,
        second: usize,
    },
}

/// Checks each pool (read from `path`, starting at the given line) and that no
/// query id repeats. `qid` and `list` name the fields holding the query id and
/// the candidates in the source format (`qid`/`candidates`, `_id`/`context`, ...).
pub(crate) fn check_pools<'p>(
    path: &Path,
    [qid, list]: [&str; 2],
    pools: impl IntoIterator<Item = (usize, &'p Pool)>,
) -> Result<()> {
    let mut lines = std::collections::HashMap::new();
    for (line, pool) in pools {
        match pool.defect() {
            Some(PoolDefect::Empty) => {
                let msg = format!("query {:?} has no candidates", pool.qid);
                return Err(Error::parse(path, line, list, msg));
            }
            Some(PoolDefect::DuplicateId { id, first, second }) => {
                let msg = format!(
                    "duplicate candidate id {id:?} in query {:?} (also at {list}[{first}])",
                    pool.qid
                );
                return Err(Error::parse(path, line, format!("{list}[{second}]"), msg));
            }
            None => {}
        }
        if let Some(first) = lines.insert(pool.qid.as_str(), line) {
            let msg = format!("duplicate query id {:?} (first at line {first})", pool.qid);
            return Err(Error::parse(path, line, qid, msg));
        }
    }
    if lines.is_empty() {
        return Err(Error::invalid(path, "no pools in the file"));
    }
    Ok(())
}

/// [`check_pools`] on pools paired with their lines, returning the pools.
pub(crate) fn checked(
    path: &Path,
    fields: [&str; 2],
    pools: Vec<(usize, Pool)>,
) -> Result<Vec<Pool>> {
    check_pools(path, fields, pools.iter().map(|(line, p)| (*line, p)))?;
    Ok(pools.into_iter().map(|(_, p)| p).collect())
}
