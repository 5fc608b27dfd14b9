//! rank_llm retrieve results (`bm25-top100.json`): a JSON array of
//! `{"query", "hits": [{"qid", "docid", "content", "rank", "score"}, ...]}`.
//! The hit order is the pool's canonical order; `rank` and `score` are not used.

use std::path::Path;

use crate::json::{self, Obj, Record};
use crate::pool::checked;
use crate::{Candidate, Pool, Result};

/// Reads rank_llm pools. The query id comes from the hits (a JSON number is
/// taken by its text); all hits of a query must carry the same one. Grades are
/// `None` (see [`crate::attach_grades`]).
pub fn read_rankllm_pools(path: &Path) -> Result<Vec<Pool>> {
    from_records(path, &json::read_records(path)?)
}

pub(crate) fn from_records(path: &Path, records: &[Record]) -> Result<Vec<Pool>> {
    let pools = records.iter().map(|r| {
        let o = Obj::new(path, r)?;
        let hits = o.objects("hits")?;
        let query: String = o.get("query")?;
        let Some(first) = hits.first() else {
            return Err(o.error("hits", format!("query {query:?} has no hits")));
        };
        let qid = first.id("qid")?;
        let candidates = (hits.iter())
            .map(|h| match h.id("qid")? {
                q if q == qid => Ok(Candidate {
                    id: h.id("docid")?,
                    text: h.get("content")?,
                    grade: None,
                }),
                q => Err(h.error("qid", format!("{q:?} differs from the first hit's {qid:?}"))),
            })
            .collect::<Result<_>>()?;
        Ok((
            r.line,
            Pool {
                qid,
                query,
                candidates,
            },
        ))
    });
    checked(path, ["hits[0].qid", "hits"], pools.collect::<Result<_>>()?)
}
