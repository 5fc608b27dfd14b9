//! Training labels (SPEC.md section 5): one grade target on the 0-3 scale
//! per (query, candidate), with the provenance that made them.
//!
//! JSONL: the first line is the header `{"ocrank_labels": 1, "teacher": ...,
//! "provenance": {...}}`, every further line one label
//! `{"qid", "candidate", "label"}`. The header travels with the labels so a
//! trained adapter can say which teacher (and which orders or seeds) taught it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::io::Writer;
use crate::json::{self, Obj};
use crate::{Error, Result};

/// Where the labels come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelHeader {
    /// Format version (1).
    pub ocrank_labels: u32,
    /// `gold`, `llm` or `embedding`.
    pub teacher: String,
    /// Orders averaged per candidate (1 = single-order; gold and embedding
    /// teachers are order-free and say 1).
    pub orders: usize,
    /// Everything else that determines the labels: files, hashes, seeds,
    /// model, calibration, the command.
    pub provenance: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Labels {
    pub header: LabelHeader,
    /// qid -> candidate id -> grade target in [0, 3].
    pub by_query: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Labels {
    pub fn get(&self, qid: &str, candidate: &str) -> Option<f64> {
        self.by_query.get(qid)?.get(candidate).copied()
    }

    pub fn len(&self) -> usize {
        self.by_query.values().map(|m| m.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes labels (gzipped when the name ends in `.gz`). Non-finite labels and
/// labels outside [0, 3] are refused.
pub fn write_labels(path: &Path, labels: &Labels) -> Result<()> {
    let mut out = Writer::create(path)?;
    let header = serde_json::to_string(&labels.header).map_err(|e| Error::invalid(path, e))?;
    out.line(&header)?;
    for (qid, cands) in &labels.by_query {
        for (cand, &label) in cands {
            if !(0.0..=3.0).contains(&label) {
                return Err(Error::invalid(
                    path,
                    format!("label {label} of query {qid:?}, candidate {cand:?} is not in [0, 3]"),
                ));
            }
            let line = serde_json::json!({"qid": qid, "candidate": cand, "label": label});
            out.line(&line.to_string())?;
        }
    }
    out.finish()
}

/// Reads a labels file written by [`write_labels`]; errors name the line and
/// field. A repeated (query, candidate) is an error, not a silent overwrite.
pub fn read_labels(path: &Path) -> Result<Labels> {
    let records = json::read_records(path)?;
    let Some((first, rest)) = records.split_first() else {
        return Err(Error::invalid(path, "empty labels file (no header line)"));
    };
    let head = Obj::new(path, first)?;
    if !head.has("ocrank_labels") {
        return Err(head.error(
            "ocrank_labels",
            "missing: the first line of a labels file is its header (written by `ocrank label`)",
        ));
    }
    let version: u32 = head.get("ocrank_labels")?;
    if version != 1 {
        return Err(head.error("ocrank_labels", format!("unsupported version {version}")));
    }
    let header = LabelHeader {
        ocrank_labels: version,
        teacher: head.get("teacher")?,
        orders: head.get("orders")?,
        provenance: head.opt("provenance")?.unwrap_or(serde_json::Value::Null),
    };
    let mut by_query: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for r in rest {
        let o = Obj::new(path, r)?;
        let qid = o.id("qid")?;
        let cand = o.id("candidate")?;
        let label: f64 = o.get("label")?;
        if !(0.0..=3.0).contains(&label) {
            return Err(o.error("label", format!("{label} is not a grade in [0, 3]")));
        }
        if by_query
            .entry(qid.clone())
            .or_default()
            .insert(cand.clone(), label)
            .is_some()
        {
            return Err(o.error(
                "candidate",
                format!("query {qid:?}, candidate {cand:?} is labelled twice"),
            ));
        }
    }
    Ok(Labels { header, by_query })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Labels {
        let mut by_query = BTreeMap::new();
        by_query.insert(
            "q1".to_string(),
            [("d1".to_string(), 3.0), ("d2".to_string(), 0.25)]
                .into_iter()
                .collect(),
        );
        Labels {
            header: LabelHeader {
                ocrank_labels: 1,
                teacher: "gold".into(),
                orders: 1,
                provenance: serde_json::json!({"qrels": "x"}),
            },
            by_query,
        }
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        write_labels(&path, &sample()).unwrap();
        assert_eq!(read_labels(&path).unwrap(), sample());
    }

    #[test]
    fn errors_name_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        let head = r#"{"ocrank_labels":1,"teacher":"gold","orders":1}"#;
        std::fs::write(
            &path,
            format!("{head}\n{{\"qid\":\"q\",\"candidate\":\"d\",\"label\":4}}\n"),
        )
        .unwrap();
        let e = read_labels(&path).unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("label"), "{e}");

        std::fs::write(
            &path,
            format!(
                "{head}\n{{\"qid\":\"q\",\"candidate\":\"d\",\"label\":1}}\n{{\"qid\":\"q\",\"candidate\":\"d\",\"label\":2}}\n"
            ),
        )
        .unwrap();
        let e = read_labels(&path).unwrap_err().to_string();
        assert!(e.contains(":3:") && e.contains("twice"), "{e}");

        std::fs::write(&path, "{\"qid\":\"q\",\"candidate\":\"d\",\"label\":1}\n").unwrap();
        let e = read_labels(&path).unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("header"), "{e}");
    }

    #[test]
    fn refuses_out_of_range_on_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = sample();
        l.by_query.get_mut("q1").unwrap().insert("d3".into(), 3.5);
        assert!(write_labels(&dir.path().join("l.jsonl"), &l).is_err());
    }
}
