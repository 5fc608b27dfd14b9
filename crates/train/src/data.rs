//! Training examples: windows of a pool's canonical (first-stage) order, each
//! candidate with its grade target, and the held-out split used to select
//! checkpoints.

use ocrank_data::{Labels, Pool};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// One training window in canonical order.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub qid: String,
    pub query: String,
    pub ids: Vec<String>,
    pub texts: Vec<String>,
    /// Grade targets on the 0-3 scale, one per candidate.
    pub labels: Vec<f64>,
}

/// Cuts the top `depth` of every pool into contiguous windows of `width` in
/// the canonical order. With a width of 2 or more, a last window of one
/// candidate is merged into the one before (it could not carry an order, which
/// perm-aug and OC-SFT need); width 1 gives pointwise windows, which only the
/// objectives without a permutation accept (see `Trainer::new`). A candidate
/// without a label is an error naming it, never a silent drop.
pub fn examples(
    pools: &[Pool],
    labels: &Labels,
    depth: usize,
    width: usize,
) -> Result<Vec<Example>> {
    if width == 0 {
        return Err(Error::Train(
            "training windows need a width of at least 1".into(),
        ));
    }
    let mut out = Vec::new();
    for pool in pools {
        let cands: Vec<_> = pool.candidates.iter().take(depth).collect();
        let mut start = 0;
        while start < cands.len() {
            let mut end = (start + width).min(cands.len());
            if width >= 2 && cands.len() - end == 1 {
                end += 1;
            }
            let window = &cands[start..end];
            start = end;
            let mut ex = Example {
                qid: pool.qid.clone(),
                query: pool.query.clone(),
                ids: Vec::new(),
                texts: Vec::new(),
                labels: Vec::new(),
            };
            for c in window {
                let y = labels.get(&pool.qid, &c.id).ok_or_else(|| {
                    Error::Labels(format!(
                        "the labels ({} teacher) have no label for query {:?}, candidate {:?}",
                        labels.header.teacher, pool.qid, c.id
                    ))
                })?;
                ex.ids.push(c.id.clone());
                ex.texts.push(c.text.clone());
                ex.labels.push(y);
            }
            out.push(ex);
        }
    }
    if out.is_empty() {
        return Err(Error::Train("no training windows (empty pools?)".into()));
    }
    Ok(out)
}

/// Whether `qid` falls in the held-out split: a fixed fraction of queries
/// chosen by hashing (seed, qid), so the split does not depend on file order.
pub fn is_heldout(qid: &str, fraction: f64, seed: u64) -> bool {
    let mut h = Sha256::new();
    h.update(b"ocrank-heldout\0");
    h.update(seed.to_le_bytes());
    h.update(qid.as_bytes());
    let d = h.finalize();
    let x = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    (x as f64 / u64::MAX as f64) < fraction
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocrank_data::{Candidate, LabelHeader};
    use std::collections::BTreeMap;

    fn pool(n: usize) -> Pool {
        Pool {
            qid: "q".into(),
            query: "what".into(),
            candidates: (0..n)
                .map(|i| Candidate {
                    id: format!("d{i}"),
                    text: format!("text {i}"),
                    grade: None,
                })
                .collect(),
        }
    }

    fn labels(n: usize) -> Labels {
        let mut m = BTreeMap::new();
        m.insert(
            "q".to_string(),
            (0..n).map(|i| (format!("d{i}"), (i % 4) as f64)).collect(),
        );
        Labels {
            header: LabelHeader {
                ocrank_labels: 1,
                teacher: "gold".into(),
                orders: 1,
                provenance: serde_json::Value::Null,
            },
            by_query: m,
        }
    }

    #[test]
    fn windows_in_canonical_order() {
        let ex = examples(&[pool(25)], &labels(25), 20, 10).unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].ids[0], "d0");
        assert_eq!(ex[1].ids[9], "d19");
        assert_eq!(ex[1].labels[3], 1.0);
        // 21 candidates at width 10: the lone last one joins the window before.
        let ex = examples(&[pool(21)], &labels(21), 21, 10).unwrap();
        assert_eq!(ex.iter().map(|e| e.ids.len()).collect::<Vec<_>>(), [10, 11]);
    }

    #[test]
    fn width_one_gives_pointwise_windows() {
        let ex = examples(&[pool(5)], &labels(5), 5, 1).unwrap();
        assert_eq!(ex.len(), 5);
        assert!(ex.iter().all(|e| e.ids.len() == 1));
        assert_eq!(ex[4].ids, ["d4"]);
        assert!(examples(&[pool(5)], &labels(5), 5, 0).is_err());
    }

    #[test]
    fn missing_label_is_named() {
        let e = examples(&[pool(5)], &labels(3), 5, 5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"d3\""), "{e}");
    }

    #[test]
    fn heldout_split_is_stable_and_sized() {
        let n = (0..2000)
            .filter(|i| is_heldout(&i.to_string(), 0.2, 0))
            .count();
        assert!((330..470).contains(&n), "{n}");
        assert_eq!(is_heldout("1037798", 0.2, 0), is_heldout("1037798", 0.2, 0));
    }
}
