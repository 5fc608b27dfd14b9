//! TREC qrels (`qid iter docid grade`) and run files (`qid Q0 docid rank score tag`),
//! whitespace separated. Ids are strings and compare as strings.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::str::FromStr;

use crate::io::{self, Writer};
use crate::{Error, Result};

/// Relevance judgments: qid -> docid -> grade.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Qrels {
    pub by_query: BTreeMap<String, BTreeMap<String, i32>>,
}

impl Qrels {
    pub fn get(&self, qid: &str) -> Option<&BTreeMap<String, i32>> {
        self.by_query.get(qid)
    }

    /// The judgments of `qid`; a query the qrels do not hold is an error.
    pub fn require(&self, qid: &str) -> Result<&BTreeMap<String, i32>> {
        self.get(qid).ok_or_else(|| Error::UnknownId {
            kind: "query",
            id: qid.to_owned(),
            within: "the qrels".into(),
        })
    }

    /// The grade of `docid` for `qid`; `None` when unjudged.
    pub fn grade(&self, qid: &str, docid: &str) -> Option<i32> {
        self.get(qid)?.get(docid).copied()
    }

    /// Adds a judgment; a second judgment of the same (qid, docid) is refused
    /// (the error message is returned).
    pub fn insert(&mut self, qid: &str, docid: &str, grade: i32) -> Result<(), String> {
        let docs = self.by_query.entry(qid.to_owned()).or_default();
        match docs.insert(docid.to_owned(), grade) {
            Some(_) => Err(format!(
                "duplicate judgment of document {docid:?} for query {qid:?}"
            )),
            None => Ok(()),
        }
    }
}

/// One line of a run: the rank column is kept as read (trec_eval ignores it).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEntry {
    pub docid: String,
    pub rank: i64,
    pub score: f64,
}

/// A ranking per query, entries in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub by_query: BTreeMap<String, Vec<RunEntry>>,
}

impl Run {
    pub fn get(&self, qid: &str) -> Option<&[RunEntry]> {
        self.by_query.get(qid).map(Vec::as_slice)
    }

    /// The entries of `qid`; a query the run does not hold is an error.
    pub fn require(&self, qid: &str) -> Result<&[RunEntry]> {
        self.get(qid).ok_or_else(|| Error::UnknownId {
            kind: "query",
            id: qid.to_owned(),
            within: "the run".into(),
        })
    }
}

/// Reads TREC qrels: `qid iter docid grade`, exactly 4 fields; blank lines are
/// skipped; a repeated (qid, docid) is an error.
pub fn read_qrels(path: &Path) -> Result<Qrels> {
    let mut qrels = Qrels::default();
    for (line, text) in lines(path)? {
        let [qid, _, docid, grade] =
            fields(path, line, text.split_whitespace(), "qid iter docid grade")?;
        let grade = number(path, line, "grade", grade, "an integer")?;
        qrels
            .insert(qid, docid, grade)
            .map_err(|m| Error::parse(path, line, "docid", m))?;
    }
    Ok(qrels)
}

/// Reads a TREC run: `qid Q0 docid rank score tag`, exactly 6 fields; blank
/// lines are skipped; a repeated (qid, docid) or a non-finite score is an error.
pub fn read_run(path: &Path) -> Result<Run> {
    let mut run = Run::default();
    let mut seen = HashSet::new();
    for (line, text) in lines(path)? {
        let [qid, _, docid, rank, score, _] = fields(
            path,
            line,
            text.split_whitespace(),
            "qid Q0 docid rank score tag",
        )?;
        let rank = number(path, line, "rank", rank, "an integer")?;
        let score: f64 = number(path, line, "score", score, "a number")?;
        if !score.is_finite() {
            return Err(Error::parse(
                path,
                line,
                "score",
                format!("{score} is not finite"),
            ));
        }
        if !seen.insert((qid.to_owned(), docid.to_owned())) {
            let msg = format!("document {docid:?} listed twice for query {qid:?}");
            return Err(Error::parse(path, line, "docid", msg));
        }
        let entry = RunEntry {
            docid: docid.to_owned(),
            rank,
            score,
        };
        run.by_query.entry(qid.to_owned()).or_default().push(entry);
    }
    Ok(run)
}

/// Writes `run` as `qid Q0 docid rank score tag`, queries in id order, entries
/// in their order. Scores are written in Rust's shortest round-trip form.
pub fn write_run(path: &Path, run: &Run, tag: &str) -> Result<()> {
    let token = |what: &str, s: &str| {
        if s.is_empty() || s.chars().any(char::is_whitespace) {
            let msg = format!("{what} {s:?} is empty or contains whitespace");
            return Err(Error::invalid(path, msg));
        }
        Ok(())
    };
    token("tag", tag)?;
    let mut out = Writer::create(path)?;
    for (qid, entries) in &run.by_query {
        token("query id", qid)?;
        for e in entries {
            token("document id", &e.docid)?;
            if !e.score.is_finite() {
                let msg = format!(
                    "score {} of document {:?} for query {qid:?} is not finite",
                    e.score, e.docid
                );
                return Err(Error::invalid(path, msg));
            }
            out.line(&format!(
                "{qid} Q0 {} {} {} {tag}",
                e.docid, e.rank, e.score
            ))?;
        }
    }
    out.finish()
}

/// The non-blank lines of a text file with their 1-based numbers.
pub(crate) fn lines(path: &Path) -> Result<Vec<(usize, String)>> {
    Ok((io::read_text(path)?.lines().enumerate())
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.to_owned()))
        .collect())
}

/// Exactly `N` fields, or an error that shows the expected `layout`.
pub(crate) fn fields<'t, const N: usize>(
    path: &Path,
    line: usize,
    parts: impl Iterator<Item = &'t str>,
    layout: &str,
) -> Result<[&'t str; N]> {
    let parts: Vec<&str> = parts.collect();
    let n = parts.len();
    parts.try_into().map_err(|_| {
        let msg = format!("expected {N} fields ({layout}), found {n}");
        Error::parse(path, line, "fields", msg)
    })
}

/// Parses `text` as a number; `what` says which kind for the message.
pub(crate) fn number<T: FromStr>(
    path: &Path,
    line: usize,
    field: &str,
    text: &str,
    what: &str,
) -> Result<T> {
    text.parse()
        .map_err(|_| Error::parse(path, line, field, format!("{text:?} is not {what}")))
}
