//! HotpotQA (distractor setting): each example's 10 context paragraphs form a
//! pool, graded by whether the paragraph's title is a supporting fact.
//!
//! Both published shapes are read, as a JSON array or as JSON lines:
//! `supporting_facts` entries are `[title, sentence_id]` (original) or
//! `[title, [ids], [sentences], {...}]` (AMOR's dev file); the title comes first
//! in both.

use std::path::Path;

use serde_json::Value;

use crate::json::{self, describe, Obj, Record};
use crate::pool::check_pools;
use crate::{Candidate, Pool, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct HotpotExample {
    pub id: String,
    pub question: String,
    pub answer: String,
    /// qid = `_id`, query = question; one candidate per context paragraph, in
    /// order: id = title, text = its non-blank sentences, each trimmed, joined
    /// by one space; grade `Some(1)` for supporting paragraphs and `Some(0)` otherwise.
    pub pool: Pool,
    /// Distinct supporting titles in order of first mention.
    pub supporting_titles: Vec<String>,
}

/// Reads HotpotQA examples. A supporting title that names no context paragraph
/// is an error (its grade would be lost), as is a repeated paragraph title.
pub fn read_hotpotqa(path: &Path) -> Result<Vec<HotpotExample>> {
    from_records(path, &json::read_records(path)?)
}

pub(crate) fn from_records(path: &Path, records: &[Record]) -> Result<Vec<HotpotExample>> {
    let examples = records.iter().map(|r| {
        let o = Obj::new(path, r)?;
        let mut supporting_titles = Vec::<String>::new();
        for (i, fact) in o.array("supporting_facts")?.iter().enumerate() {
            let title = fact.get(0).and_then(Value::as_str).ok_or_else(|| {
                let msg = format!("expected [title, ...], found {}", describe(fact));
                o.error(&format!("supporting_facts[{i}]"), msg)
            })?;
            if !supporting_titles.iter().any(|t| t == title) {
                supporting_titles.push(title.to_owned());
            }
        }
        let candidates: Vec<Candidate> = (o.array("context")?.iter().enumerate())
            .map(|(i, paragraph)| {
                let (title, sentences): (String, Vec<String>) =
                    o.parse(&format!("context[{i}]"), paragraph)?;
                let sentences: Vec<&str> = (sentences.iter().map(|s| s.trim()))
                    .filter(|s| !s.is_empty())
                    .collect();
                Ok(Candidate {
                    grade: Some(supporting_titles.contains(&title).into()),
                    id: title,
                    text: sentences.join(" "),
                })
            })
            .collect::<Result<_>>()?;
        if let Some(t) = (supporting_titles.iter()).find(|t| candidates.iter().all(|c| &c.id != *t))
        {
            let msg = format!("title {t:?} is not among the context titles");
            return Err(o.error("supporting_facts", msg));
        }
        let (id, question): (String, String) = (o.id("_id")?, o.get("question")?);
        Ok(HotpotExample {
            pool: Pool {
                qid: id.clone(),
                query: question.clone(),
                candidates,
            },
            id,
            question,
            answer: o.get("answer")?,
            supporting_titles,
        })
    });
    let examples: Vec<HotpotExample> = examples.collect::<Result<_>>()?;
    // The pool checks (no empty context, no repeated title or id) apply too.
    let pools = (records.iter().zip(&examples)).map(|(r, e)| (r.line, &e.pool));
    check_pools(path, ["_id", "context"], pools)?;
    Ok(examples)
}

impl HotpotExample {
    /// Whether `title` is a supporting paragraph.
    pub fn is_supporting(&self, title: &str) -> bool {
        self.supporting_titles.iter().any(|t| t == title)
    }
}
