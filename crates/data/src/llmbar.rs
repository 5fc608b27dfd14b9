//! LLMBar preference pairs: a JSON array of
//! `{"input", "output_1", "output_2", "label": 1 | 2}`, `label` naming the better output.

use std::path::Path;

use crate::json::{self, Obj, Record};
use crate::{Candidate, Error, Pool, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct PreferencePair {
    /// `<file stem>-<0-based index in the file>`, e.g. `natural-0`.
    pub id: String,
    pub prompt: String,
    pub outputs: [String; 2],
    /// 1 or 2: the better output (gold).
    pub label: u8,
}

impl PreferencePair {
    /// A pool of 2 (qid = id, query = prompt): candidates "1" and "2", graded
    /// `Some(1)` for the gold output and `Some(0)` for the other.
    pub fn to_pool(&self) -> Pool {
        let candidates = (self.outputs.iter().zip(1u8..))
            .map(|(text, n)| Candidate {
                id: n.to_string(),
                text: text.clone(),
                grade: Some((n == self.label) as i32),
            })
            .collect();
        Pool {
            qid: self.id.clone(),
            query: self.prompt.clone(),
            candidates,
        }
    }
}

pub fn read_llmbar(path: &Path) -> Result<Vec<PreferencePair>> {
    from_records(path, &json::read_records(path)?)
}

pub(crate) fn from_records(path: &Path, records: &[Record]) -> Result<Vec<PreferencePair>> {
    if records.is_empty() {
        return Err(Error::invalid(path, "no preference pairs in the file"));
    }
    let stem = stem(path);
    (records.iter().enumerate())
        .map(|(i, r)| {
            let o = Obj::new(path, r)?;
            let label: u8 = o.get("label")?;
            if !matches!(label, 1 | 2) {
                return Err(o.error("label", format!("{label} is neither 1 nor 2")));
            }
            Ok(PreferencePair {
                id: format!("{stem}-{i}"),
                prompt: o.get("input")?,
                outputs: [o.get("output_1")?, o.get("output_2")?],
                label,
            })
        })
        .collect()
}

/// The file name without `.gz` and its format extension (`natural.json.gz` -> `natural`).
fn stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let name = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    name.to_owned()
}
