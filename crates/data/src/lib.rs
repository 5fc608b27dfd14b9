//! Data formats of ocrank (SPEC.md section 7): pools, qrels, TREC runs and the
//! scores JSONL, and loaders for the public collections (rank_llm retrieve
//! results, HotpotQA, LLMBar, BEIR). Free of any ML library so that it builds in
//! seconds. Formats are documented in `docs/formats.md`.
//!
//! Every loader reports bad input as an [`Error`] naming the file, the line and
//! the field; none panics on user input, none drops a record silently. Files
//! whose name ends in `.gz` are read (and written) gzipped.

pub mod beir;
pub mod error;
pub mod hotpotqa;
mod io;
mod json;
pub mod jsonl;
pub mod labels;
pub mod llmbar;
pub mod pool;
pub mod rankllm;
pub mod scores;
pub mod trec;
mod trecrag;

use std::path::Path;

pub use beir::{read_beir, Beir, BeirDoc};
pub use error::{Error, Result};
pub use hotpotqa::{read_hotpotqa, HotpotExample};
pub use io::write_whole;
pub use jsonl::{read_jsonl_pools, write_jsonl_pools};
pub use labels::{
    merge_labels, read_labels, write_labels, LabelHeader, Labels, MergeSource, MergeTally,
};
pub use llmbar::{read_llmbar, PreferencePair};
pub use pool::{Candidate, Pool, PoolDefect};
pub use rankllm::read_rankllm_pools;
pub use scores::{read_scores, ScoreRecord, ScoresWriter};
pub use trec::{read_qrels, read_run, write_run, Qrels, Run, RunEntry};

/// The pool formats [`read_pools`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolFormat {
    /// Ours: `{"qid", "query", "candidates"}`.
    Ocrank,
    /// rank_llm retrieve results: `{"query", "hits"}`.
    RankLlm,
    /// HotpotQA: `{"_id", "question", "context", "supporting_facts", ...}`.
    HotpotQa,
    /// LLMBar: `{"input", "output_1", "output_2", "label"}`.
    LlmBar,
    /// TREC RAG 2024 pools of the `ir-axioms` wheel:
    /// `{"topic", "query", "references_ids", "references_texts"}`.
    TrecRag,
}

impl PoolFormat {
    /// The format whose distinctive keys the record has.
    fn of(o: &json::Obj) -> Option<Self> {
        [
            (PoolFormat::Ocrank, &["candidates"][..]),
            (PoolFormat::RankLlm, &["hits"]),
            (PoolFormat::HotpotQa, &["context", "supporting_facts"]),
            (PoolFormat::LlmBar, &["output_1", "output_2"]),
            (PoolFormat::TrecRag, &["references_ids", "references_texts"]),
        ]
        .into_iter()
        .find(|(_, keys)| keys.iter().all(|k| o.has(k)))
        .map(|(f, _)| f)
    }
}

/// Reads pools from any format of [`PoolFormat`], told apart by the keys of the
/// first record; the file may be one JSON array or JSON lines, and gzipped
/// (`.gz`). HotpotQA and LLMBar are turned into pools as
/// [`HotpotExample::pool`] and [`PreferencePair::to_pool`] describe.
pub fn read_pools(path: &Path) -> Result<Vec<Pool>> {
    read_pools_as(path).map(|(pools, _)| pools)
}

/// [`read_pools`], also telling which format it found.
pub fn read_pools_as(path: &Path) -> Result<(Vec<Pool>, PoolFormat)> {
    let records = json::read_records(path)?;
    let first = records
        .first()
        .ok_or_else(|| Error::invalid(path, "no pools in the file"))?;
    let first = json::Obj::new(path, first)?;
    let format = PoolFormat::of(&first).ok_or_else(|| {
        let msg = "unknown pool format: expected the keys of ours (candidates), rank_llm (hits), \
                   HotpotQA (context, supporting_facts), LLMBar (output_1, output_2) or TREC RAG \
                   (references_ids, references_texts)";
        Error::parse(path, first.line(), "record", msg)
    })?;
    let pools = match format {
        PoolFormat::Ocrank => jsonl::from_records(path, &records)?,
        PoolFormat::RankLlm => rankllm::from_records(path, &records)?,
        PoolFormat::HotpotQa => (hotpotqa::from_records(path, &records)?.into_iter())
            .map(|e| e.pool)
            .collect(),
        PoolFormat::LlmBar => (llmbar::from_records(path, &records)?.iter())
            .map(PreferencePair::to_pool)
            .collect(),
        PoolFormat::TrecRag => trecrag::from_records(path, &records)?,
    };
    Ok((pools, format))
}

/// Sets every candidate's grade from `qrels`: the judged grade, or `None` when
/// the (query, candidate) pair is unjudged, replacing any grade it had.
pub fn attach_grades(pools: &mut [Pool], qrels: &Qrels) {
    for pool in pools {
        let judged = qrels.get(&pool.qid);
        for c in &mut pool.candidates {
            c.grade = judged.and_then(|j| j.get(&c.id)).copied();
        }
    }
}

/// The judgments the pools themselves carry (the inverse of
/// [`attach_grades`]): every graded candidate, by query. Ungraded candidates
/// stay unjudged; a pool without a graded candidate has no entry.
pub fn grades_as_qrels(pools: &[Pool]) -> Qrels {
    let mut qrels = Qrels::default();
    for pool in pools {
        let graded: std::collections::BTreeMap<String, i32> = pool
            .candidates
            .iter()
            .filter_map(|c| c.grade.map(|g| (c.id.clone(), g)))
            .collect();
        if !graded.is_empty() {
            qrels.by_query.insert(pool.qid.clone(), graded);
        }
    }
    qrels
}
