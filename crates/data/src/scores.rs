//! The scores JSONL of SPEC.md section 7: one line per (query, permutation,
//! candidate).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::io::Writer;
use crate::json::{self, Obj};
use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRecord {
    pub qid: String,
    /// Permutation index; 0 is the canonical order.
    pub permutation: usize,
    pub candidate: String,
    /// Window index within the permutation (0-based).
    pub window: usize,
    /// Slot within the window (1-based, as numbered in the prompt).
    pub slot: usize,
    /// Renormalised probabilities of grades 0..=3.
    pub probs: [f64; 4],
    /// Total probability of the four grade tokens before renormalising.
    pub mass: f64,
    /// The readout (expected grade / 3 by default).
    pub score: f64,
}

impl ScoreRecord {
    /// Reads one record from a JSON object, naming the field that is wrong.
    fn from_json(o: &Obj) -> Result<Self> {
        Ok(ScoreRecord {
            qid: o.id("qid")?,
            permutation: o.get("permutation")?,
            candidate: o.id("candidate")?,
            window: o.get("window")?,
            slot: o.get("slot")?,
            probs: o.get("probs")?,
            mass: o.get("mass")?,
            score: o.get("score")?,
        })
    }

    /// The first number that is not finite (JSON cannot hold it), by field name.
    fn non_finite(&self) -> Option<(&'static str, f64)> {
        let probs = self.probs.iter().map(|&p| ("probs", p));
        (probs.chain([("mass", self.mass), ("score", self.score)])).find(|(_, x)| !x.is_finite())
    }
}

/// Reads a scores JSONL file (gzipped when named `.gz`); blank lines are skipped,
/// unknown fields ignored; `qid` and `candidate` may be strings or numbers.
pub fn read_scores(path: &Path) -> Result<Vec<ScoreRecord>> {
    let records = json::read_records(path)?;
    (records.iter())
        .map(|r| ScoreRecord::from_json(&Obj::new(path, r)?))
        .collect()
}

/// Writer of the scores JSONL, one record per line: a new file that replaces
/// its destination only when finished, or an existing one appended to.
pub struct ScoresWriter {
    out: Writer,
}

impl ScoresWriter {
    /// Starts a new `path` (a `.gz` name is gzipped); it replaces what `path`
    /// held at [`ScoresWriter::finish`], and dropping the writer before that
    /// leaves `path` untouched.
    pub fn create(path: &Path) -> Result<Self> {
        Ok(ScoresWriter {
            out: Writer::create(path)?,
        })
    }

    /// Opens `path` for appending, creating it when missing. A file whose last
    /// line is incomplete (an interrupted run) is refused rather than extended
    /// into a corrupt line.
    pub fn append(path: &Path) -> Result<Self> {
        match std::fs::read(path) {
            Ok(bytes) if bytes.last().is_some_and(|&b| b != b'\n') => Err(Error::invalid(
                path,
                "the last line is incomplete (interrupted write?): remove it before appending",
            )),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
            _ => Ok(ScoresWriter {
                out: Writer::append(path)?,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        self.out.path()
    }

    /// Writes one record. Non-finite numbers are refused (JSON has no NaN).
    pub fn write(&mut self, record: &ScoreRecord) -> Result<()> {
        if let Some((field, x)) = record.non_finite() {
            let msg = format!(
                "{field} {x} of query {:?}, candidate {:?} is not finite",
                record.qid, record.candidate
            );
            return Err(Error::invalid(self.path(), msg));
        }
        let line = serde_json::to_string(record).map_err(|e| Error::invalid(self.path(), e))?;
        self.out.line(&line)
    }

    pub fn flush(&mut self) -> Result<()> {
        self.out.flush()
    }

    /// Flushes and closes the file (ends the gzip stream of a `.gz` file).
    pub fn finish(mut self) -> Result<()> {
        self.out.finish()
    }
}
