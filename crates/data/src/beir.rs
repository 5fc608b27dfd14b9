//! BEIR collections: a directory with `corpus.jsonl` (`{"_id", "title", "text"}`),
//! `queries.jsonl` (`{"_id", "text"}`) and `qrels/<split>.tsv`
//! (`query-id\tcorpus-id\tscore` after a header line). Any of them may be gzipped
//! (`corpus.jsonl.gz`). BEIR has no first-stage ranking: pools are built from a
//! run ([`Beir::pools`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::json::{self, Obj};
use crate::trec::{fields, lines, number, Qrels, Run};
use crate::{Candidate, Error, Pool, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeirDoc {
    pub title: String,
    pub text: String,
}

impl BeirDoc {
    /// The candidate text: title and text joined by one space (pyserini's
    /// convention); just the text when the title is empty.
    pub fn contents(&self) -> String {
        match self.title.trim() {
            "" => self.text.clone(),
            title => format!("{title} {}", self.text),
        }
    }
}

/// One BEIR collection with the judgments of one split.
#[derive(Debug, Clone, PartialEq)]
pub struct Beir {
    pub dir: PathBuf,
    pub corpus: BTreeMap<String, BeirDoc>,
    /// All queries of `queries.jsonl` (not only those of the split).
    pub queries: BTreeMap<String, String>,
    pub qrels: Qrels,
}

/// Reads the BEIR collection in `dir` with the qrels of `split` (`test`, `dev`, ...).
/// A repeated id in the corpus or the queries, or a repeated judgment, is an error.
pub fn read_beir(dir: &Path, split: &str) -> Result<Beir> {
    let corpus = read_map(&find(dir, "corpus.jsonl"), |o| {
        Ok(BeirDoc {
            title: o.opt("title")?.unwrap_or_default(),
            text: o.get("text")?,
        })
    })?;
    let queries = read_map(&find(dir, "queries.jsonl"), |o| o.get("text"))?;
    let qrels = read_qrels_tsv(&find(&dir.join("qrels"), &format!("{split}.tsv")))?;
    Ok(Beir {
        dir: dir.to_owned(),
        corpus,
        queries,
        qrels,
    })
}

impl Beir {
    /// One pool per query of `run` (queries in id order), candidates in run order
    /// cut to `depth`, graded from the qrels (unjudged: `None`). A query or
    /// document id the collection does not hold is an error.
    pub fn pools(&self, run: &Run, depth: usize) -> Result<Vec<Pool>> {
        let unknown = |kind, id: &str, file| Error::UnknownId {
            kind,
            id: id.to_owned(),
            within: self.dir.join(file).display().to_string(),
        };
        (run.by_query.iter())
            .map(|(qid, entries)| {
                let query = self
                    .queries
                    .get(qid)
                    .ok_or_else(|| unknown("query", qid, "queries.jsonl"))?;
                let candidates = (entries.iter().take(depth))
                    .map(|e| {
                        let doc = self
                            .corpus
                            .get(&e.docid)
                            .ok_or_else(|| unknown("document", &e.docid, "corpus.jsonl"))?;
                        Ok(Candidate {
                            id: e.docid.clone(),
                            text: doc.contents(),
                            grade: self.qrels.grade(qid, &e.docid),
                        })
                    })
                    .collect::<Result<_>>()?;
                Ok(Pool {
                    qid: qid.clone(),
                    query: query.clone(),
                    candidates,
                })
            })
            .collect()
    }
}

/// Reads BEIR qrels: a TSV of `query-id corpus-id score`, after an optional
/// header line starting with `query-id`.
pub fn read_qrels_tsv(path: &Path) -> Result<Qrels> {
    let mut qrels = Qrels::default();
    for (k, (line, text)) in lines(path)?.into_iter().enumerate() {
        if k == 0 && text.starts_with("query-id") {
            continue;
        }
        let [qid, docid, grade] = fields(path, line, text.split('\t'), "query-id corpus-id score")?;
        let grade = number(path, line, "score", grade.trim(), "an integer")?;
        qrels
            .insert(qid.trim(), docid.trim(), grade)
            .map_err(|m| Error::parse(path, line, "corpus-id", m))?;
    }
    Ok(qrels)
}

/// `dir/name`, or `dir/name.gz` when only that exists.
fn find(dir: &Path, name: &str) -> PathBuf {
    let plain = dir.join(name);
    let gz = dir.join(format!("{name}.gz"));
    if !plain.exists() && gz.exists() {
        gz
    } else {
        plain
    }
}

/// A JSONL file of objects keyed by a unique `_id`.
fn read_map<T>(path: &Path, value: impl Fn(&Obj) -> Result<T>) -> Result<BTreeMap<String, T>> {
    let mut map = BTreeMap::new();
    for r in json::read_records(path)? {
        let o = Obj::new(path, &r)?;
        let id = o.id("_id")?;
        if map.insert(id.clone(), value(&o)?).is_some() {
            return Err(o.error("_id", format!("{id:?} appears twice")));
        }
    }
    Ok(map)
}
