//! TREC RAG 2024 retrieval pools as shipped in the PyPI wheel
//! `ir-axioms==1.2.5` (`data/crowd/study1_retrieval.jsonl.gz`, 301 topics x
//! 20 passages): JSON lines of `{"topic", "query", "references_ids": [...],
//! "references_texts": [...]}`. No judgments: audits on it report the
//! label-free measures.

use crate::json::{Obj, Record};
use crate::pool::checked;
use crate::{Candidate, Pool, Result};
use std::path::Path;

pub(crate) fn from_records(path: &Path, records: &[Record]) -> Result<Vec<Pool>> {
    let pools = records.iter().map(|r| {
        let o = Obj::new(path, r)?;
        let ids: Vec<String> = o.get("references_ids")?;
        let texts: Vec<String> = o.get("references_texts")?;
        if ids.len() != texts.len() {
            return Err(o.error(
                "references_texts",
                format!("{} texts for {} ids", texts.len(), ids.len()),
            ));
        }
        let candidates = ids
            .into_iter()
            .zip(texts)
            .map(|(id, text)| Candidate {
                id,
                text,
                grade: None,
            })
            .collect();
        Ok((
            r.line,
            Pool {
                qid: o.id("topic")?,
                query: o.get("query")?,
                candidates,
            },
        ))
    });
    checked(
        path,
        ["topic", "references_ids"],
        pools.collect::<Result<_>>()?,
    )
}
