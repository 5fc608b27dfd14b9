//! Our pool format (docs/formats.md): one JSON object per line,
//! `{"qid", "query", "candidates": [{"id", "text", "grade"?}, ...]}`.

use std::path::Path;

use crate::io::Writer;
use crate::json::{self, Obj, Record};
use crate::pool::{checked, PoolDefect};
use crate::{Candidate, Error, Pool, Result};

/// Reads pools in our JSONL format (gzipped when named `.gz`; a JSON array of
/// the same objects is accepted too). Ids may be strings or numbers.
pub fn read_jsonl_pools(path: &Path) -> Result<Vec<Pool>> {
    from_records(path, &json::read_records(path)?)
}

pub(crate) fn from_records(path: &Path, records: &[Record]) -> Result<Vec<Pool>> {
    let pools = records.iter().map(|r| {
        let o = Obj::new(path, r)?;
        let candidates = (o.objects("candidates")?.iter())
            .map(|c| {
                Ok(Candidate {
                    id: c.id("id")?,
                    text: c.get("text")?,
                    grade: c.opt("grade")?,
                })
            })
            .collect::<Result<_>>()?;
        let pool = Pool {
            qid: o.id("qid")?,
            query: o.get("query")?,
            candidates,
        };
        Ok((r.line, pool))
    });
    checked(path, ["qid", "candidates"], pools.collect::<Result<_>>()?)
}

/// Writes pools in our JSONL format (gzipped when named `.gz`). Pools that could
/// not be read back (no candidates, a repeated candidate or query id) are refused.
pub fn write_jsonl_pools(path: &Path, pools: &[Pool]) -> Result<()> {
    let mut qids = std::collections::HashSet::new();
    if let Some(p) = pools.iter().find(|p| !qids.insert(p.qid.as_str())) {
        return Err(Error::invalid(
            path,
            format!("query id {:?} is used by two pools", p.qid),
        ));
    }
    if let Some((pool, defect)) = pools.iter().find_map(|p| Some((p, p.defect()?))) {
        let msg = match defect {
            PoolDefect::Empty => format!("query {:?} has no candidates", pool.qid),
            PoolDefect::DuplicateId { id, .. } => {
                format!("query {:?} has candidate id {id:?} twice", pool.qid)
            }
        };
        return Err(Error::invalid(path, msg));
    }
    let mut out = Writer::create(path)?;
    for pool in pools {
        out.line(&serde_json::to_string(pool).map_err(|e| Error::invalid(path, e))?)?;
    }
    out.finish()
}
