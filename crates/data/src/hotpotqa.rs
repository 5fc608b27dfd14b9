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
    let mut examples = Vec::with_capacity(records.len());
    for r in records {
        let o = Obj::new(path, r)?;
        let mut supporting_titles = Vec::<String>::new();
        for (i, fact) in o.array("supporting_facts")?.iter().enumerate() {
            let key = format!("supporting_facts[{i}]");
            let title = match fact {
                Value::Array(parts) => match parts.first() {
                    Some(Value::String(t)) => t,
                    _ => return Err(o.error(&key, "expected a title first")),
                },
                other => {
                    return Err(o.error(
                        &key,
                        format!("expected an array, found {}", describe(other)),
                    ))
                }
            };
            if !supporting_titles.contains(title) {
                supporting_titles.push(title.clone());
            }
        }
        let candidates: Vec<Candidate> = (o.array("context")?.iter().enumerate())
            .map(|(i, p)| {
                let (title, sentences): (String, Vec<String>) =
                    o.parse(&format!("context[{i}]"), p)?;
                let text = sentences.iter().map(|s| s.trim()).filter(|s| !s.is_empty());
                let text = text.collect::<Vec<_>>().join(" ");
                let grade = Some(supporting_titles.contains(&title) as i32);
                Ok(Candidate {
                    id: title,
                    text,
                    grade,
                })
            })
            .collect::<Result<_>>()?;
        if let Some(t) = supporting_titles
            .iter()
            .find(|t| !candidates.iter().any(|c| &c.id == *t))
        {
            return Err(o.error(
                "supporting_facts",
                format!("title {t:?} is not among the context titles"),
            ));
        }
        examples.push(HotpotExample {
            id: o.id("_id")?,
            question: o.get("question")?,
            answer: o.get("answer")?,
            pool: Pool {
                qid: o.id("_id")?,
                query: o.get("question")?,
                candidates,
            },
            supporting_titles,
        });
    }
    // The pool checks (no empty context, unique titles and ids) apply as well.
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
