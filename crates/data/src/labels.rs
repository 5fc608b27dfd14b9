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

/// One labels file given to [`merge_labels`]: its name and checksum (for the
/// provenance) and its labels.
#[derive(Debug, Clone)]
pub struct MergeSource {
    pub file: String,
    pub sha256: String,
    pub labels: Labels,
}

/// What one source gave to a merge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeTally {
    pub file: String,
    /// Query ids whose labels came from this source.
    pub queries_taken: Vec<String>,
    /// Queries this source also had, taken from an earlier one.
    pub queries_shadowed: usize,
    pub labels_taken: usize,
}

/// Merges label sets query by query: each query takes its labels, whole, from
/// the first source that has it, so a query's candidates never mix teachers
/// (e.g. gold grades where a pool is judged, an embedding teacher elsewhere).
///
/// The header says teacher `merged:<first>+<second>...`, the fewest orders
/// of any source, and keeps every source's file, checksum, header and the
/// query ids it gave, so a trained adapter still says what taught it; a
/// source's shadowed queries are counted, not dropped silently (also
/// returned, one tally per source).
pub fn merge_labels(sources: &[MergeSource]) -> (Labels, Vec<MergeTally>) {
    let mut by_query: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let mut provenance = Vec::with_capacity(sources.len());
    let mut tallies = Vec::with_capacity(sources.len());
    for s in sources {
        let (taken, shadowed): (Vec<&String>, Vec<&String>) = s
            .labels
            .by_query
            .keys()
            .partition(|q| !by_query.contains_key(*q));
        let labels_taken: usize = taken.iter().map(|q| s.labels.by_query[*q].len()).sum();
        for q in &taken {
            by_query.insert((*q).clone(), s.labels.by_query[*q].clone());
        }
        let tally = MergeTally {
            file: s.file.clone(),
            queries_taken: taken.into_iter().cloned().collect(),
            queries_shadowed: shadowed.len(),
            labels_taken,
        };
        let mut entry = serde_json::to_value(&tally).expect("a tally serialises");
        entry["sha256"] = serde_json::json!(s.sha256);
        entry["header"] = serde_json::json!(s.labels.header);
        provenance.push(entry);
        tallies.push(tally);
    }
    let teacher = sources
        .iter()
        .map(|s| s.labels.header.teacher.as_str())
        .collect::<Vec<_>>()
        .join("+");
    let labels = Labels {
        header: LabelHeader {
            ocrank_labels: 1,
            teacher: format!("merged:{teacher}"),
            orders: sources
                .iter()
                .map(|s| s.labels.header.orders)
                .min()
                .unwrap_or(1),
            provenance: serde_json::json!({
                "rule": "each query takes its labels, whole, from the first file that has it",
                "sources": provenance,
            }),
        },
        by_query,
    };
    (labels, tallies)
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

    fn labels(teacher: &str, orders: usize, rows: &[(&str, &str, f64)]) -> Labels {
        let mut by_query: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for &(q, c, l) in rows {
            by_query.entry(q.into()).or_default().insert(c.into(), l);
        }
        Labels {
            header: LabelHeader {
                ocrank_labels: 1,
                teacher: teacher.into(),
                orders,
                provenance: serde_json::Value::Null,
            },
            by_query,
        }
    }

    #[test]
    fn merge_takes_whole_queries_from_the_first_file_that_has_them() {
        let gold = labels("gold", 1, &[("q1", "a", 3.0), ("q1", "b", 0.0)]);
        // q1 is also in the second file, with a candidate gold does not have:
        // it must not leak into q1 (a query never mixes teachers).
        let emb = labels(
            "embedding",
            1,
            &[("q1", "a", 1.5), ("q1", "c", 2.0), ("q2", "x", 0.5)],
        );
        let src = |file: &str, l: &Labels| MergeSource {
            file: file.into(),
            sha256: format!("sha-{file}"),
            labels: l.clone(),
        };
        let (m, tallies) = merge_labels(&[src("gold.jsonl", &gold), src("emb.jsonl", &emb)]);
        assert_eq!(tallies[1].queries_taken, ["q2"]);
        assert_eq!(
            (tallies[1].queries_shadowed, tallies[1].labels_taken),
            (1, 1)
        );
        assert_eq!(m.header.teacher, "merged:gold+embedding");
        assert_eq!(m.by_query["q1"], gold.by_query["q1"]);
        assert_eq!(m.by_query["q2"], emb.by_query["q2"]);
        assert_eq!(m.len(), 3);
        let s = &m.header.provenance["sources"];
        assert_eq!(s[0]["queries_taken"], serde_json::json!(["q1"]));
        assert_eq!(s[1]["queries_taken"], serde_json::json!(["q2"]));
        assert_eq!(s[1]["queries_shadowed"], 1);
        assert_eq!(s[1]["labels_taken"], 1);
        assert_eq!(s[1]["sha256"], "sha-emb.jsonl");
        assert_eq!(s[0]["header"]["teacher"], "gold");
        // The order of the files decides: reversed, the embedding teacher wins q1.
        let (r, _) = merge_labels(&[src("emb.jsonl", &emb), src("gold.jsonl", &gold)]);
        assert_eq!(r.by_query["q1"], emb.by_query["q1"]);
        // Orders: the fewest of any source (an average over 4 merged with a
        // single order is not an average over 4 everywhere).
        let llm = labels("llm", 4, &[("q3", "y", 1.0)]);
        assert_eq!(
            merge_labels(&[src("l", &llm), src("g", &gold)])
                .0
                .header
                .orders,
            1
        );
        // The merge writes and reads back like any labels file.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merged.jsonl");
        write_labels(&path, &m).unwrap();
        assert_eq!(read_labels(&path).unwrap(), m);
    }
}
