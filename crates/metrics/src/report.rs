//! Everything `ocrank eval` reports, as plain data: per-query and
//! collection-level metrics under the snake_case names of SPEC.md section 7.
//!
//! Metric names (per query; the collection value is the mean over the
//! queries that have the metric, with a bootstrap interval when asked):
//!
//! - `ndcg_at_{k}`: nDCG@k of the canonical order (permutation 0), trec_eval
//!   `ndcg_cut.k` semantics; for a run file, of the run.
//! - `ndcg_at_{k}_mean`, `ndcg_at_{k}_worst`: over the permutations.
//! - `order_spread` = mean - worst of nDCG at the first cutoff (10 by
//!   default); `order_spread_at_{k}` the same at each further cutoff.
//! - `tau_psi`, `tied_pair_share`: tau-PSI over all permutation pairs and the
//!   share of tied candidate pairs next to it.
//! - `retained_set_overlap`: mean pairwise Jaccard of the sets kept by the
//!   collection's frozen F1 threshold.
//!
//! Order-dependence metrics need two or more permutations of a query; a
//! query with one permutation has none of them (absent, never 0).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::ndcg::ndcg_at_k;
use crate::preference;
use crate::ranking::{rank, rank_entries, trec_eval_score};
use crate::stability::{summarize, tau_psi};
use crate::stats::{bootstrap_mean, Bootstrap};
use crate::threshold::{relevance_min_grade, relevant_set, retained_set_overlap, tune, Threshold};
use crate::{Judgments, Scores};

/// Settings of an evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalConfig {
    /// nDCG cutoffs, the first one primary (`order_spread`).
    pub cutoffs: Vec<usize>,
    /// Bootstrap for collection intervals; `None` for none.
    pub bootstrap: Option<Bootstrap>,
}

impl Default for EvalConfig {
    fn default() -> Self {
        Self {
            cutoffs: vec![10],
            bootstrap: Some(Bootstrap::default()),
        }
    }
}

/// The scores of one query under each of its permutations (index -> scores).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScoresQuery {
    pub qid: String,
    pub permutations: BTreeMap<usize, Scores>,
}

/// The result of an evaluation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Queries evaluated (scored/run and judged).
    pub num_queries: usize,
    /// Metric names in display order.
    pub metrics: Vec<String>,
    /// Collection means, by metric name.
    pub collection: BTreeMap<String, f64>,
    /// Bootstrap percentile intervals [low, high] of the collection means.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub ci: BTreeMap<String, [f64; 2]>,
    /// Per-query values, by query id then metric name.
    pub per_query: BTreeMap<String, BTreeMap<String, f64>>,
    /// Queries of the run/scores with no judgment in the qrels: skipped, as
    /// trec_eval does.
    pub skipped_without_qrels: Vec<String>,
    /// Judged queries absent from the run/scores: ignored, as trec_eval's
    /// default (no `-c`) does.
    pub judged_without_scores: Vec<String>,
    /// Largest number of permutations of a query (scores files only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub permutations: Option<usize>,
    /// Grade from which a candidate counts as relevant for the threshold.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub relevance_min_grade: Option<i32>,
    /// The frozen F1 threshold (scores files only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub threshold: Option<Threshold>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bootstrap: Option<Bootstrap>,
}

impl Report {
    fn split_by_qrels<'a>(
        &mut self,
        qids: impl IntoIterator<Item = &'a String>,
        qrels: &BTreeMap<String, Judgments>,
    ) -> Vec<String> {
        let qids: BTreeSet<&String> = qids.into_iter().collect();
        let mut kept = Vec::new();
        for q in &qids {
            if qrels.contains_key(*q) {
                kept.push((*q).clone());
            } else {
                self.skipped_without_qrels.push((*q).clone());
            }
        }
        self.judged_without_scores = qrels
            .keys()
            .filter(|q| !qids.contains(q))
            .cloned()
            .collect();
        self.num_queries = kept.len();
        kept
    }

    fn push(&mut self, qid: &str, name: &str, value: f64) {
        if !self.metrics.iter().any(|m| m == name) {
            self.metrics.push(name.to_string());
        }
        self.per_query
            .entry(qid.to_string())
            .or_default()
            .insert(name.to_string(), value);
    }

    /// Collection means (and intervals) of every metric over the queries
    /// that have it.
    fn aggregate(&mut self, bootstrap: Option<Bootstrap>) {
        self.bootstrap = bootstrap;
        for name in &self.metrics {
            let values: Vec<f64> = self
                .per_query
                .values()
                .filter_map(|m| m.get(name).copied())
                .collect();
            let Some(mean) = crate::mean(&values) else {
                continue;
            };
            self.collection.insert(name.clone(), mean);
            if let Some(cfg) = bootstrap {
                if let Some(iv) = bootstrap_mean(&values, cfg) {
                    self.ci.insert(name.clone(), [iv.low, iv.high]);
                }
            }
        }
    }
}

/// Name of nDCG@k.
pub fn ndcg_name(k: usize) -> String {
    format!("ndcg_at_{k}")
}

/// Evaluate a TREC run, trec_eval style: the rank column is ignored, scores
/// are compared as 32-bit floats, ties broken by docid descending. `run`
/// maps a query to its `(docid, score)` entries in any order.
pub fn evaluate_run(
    run: &BTreeMap<String, Vec<(String, f64)>>,
    qrels: &BTreeMap<String, Judgments>,
    cfg: &EvalConfig,
) -> Report {
    let mut report = Report::default();
    for qid in report.split_by_qrels(run.keys(), qrels) {
        let judgments = &qrels[&qid];
        let ranking = rank_entries(
            run[&qid]
                .iter()
                .map(|(d, s)| (d.as_str(), trec_eval_score(*s))),
        );
        for &k in &cfg.cutoffs {
            report.push(&qid, &ndcg_name(k), ndcg_at_k(&ranking, judgments, k));
        }
    }
    report.aggregate(cfg.bootstrap);
    report
}

/// The gold response of a pair: when the canonical scores hold exactly two
/// candidates and the judgments grade one of them strictly higher than the
/// other (an unjudged candidate counts as grade 0).
fn pair_gold<'a>(canonical: &'a Scores, judgments: &Judgments) -> Option<&'a str> {
    let ids: Vec<&String> = canonical.keys().collect();
    let [a, b] = ids[..] else { return None };
    let grade = |id: &String| judgments.get(id).copied().unwrap_or(0);
    match grade(a).cmp(&grade(b)) {
        std::cmp::Ordering::Greater => Some(a.as_str()),
        std::cmp::Ordering::Less => Some(b.as_str()),
        std::cmp::Ordering::Equal => None,
    }
}

/// Evaluate a scores file (one or more permutations per query). Each query
/// must have permutation 0, the canonical order. Pairs with a gold response
/// (two candidates, one graded higher) also get the response-ranking
/// decisions: `label_accuracy`, `label_accuracy_averaged`, `pair_flip`,
/// `gold_crossing`.
pub fn evaluate_scores(
    queries: &[ScoresQuery],
    qrels: &BTreeMap<String, Judgments>,
    cfg: &EvalConfig,
) -> Result<Report, String> {
    let mut report = Report::default();
    let by_qid: BTreeMap<&String, &ScoresQuery> = queries.iter().map(|q| (&q.qid, q)).collect();
    if by_qid.len() != queries.len() {
        return Err("a query id appears in more than one ScoresQuery".into());
    }
    let kept = report.split_by_qrels(by_qid.keys().copied(), qrels);
    for qid in &kept {
        if !by_qid[qid].permutations.contains_key(&0) {
            return Err(format!(
                "query {qid} has no permutation 0 (the canonical order)"
            ));
        }
    }

    // The frozen threshold, tuned once on the canonical order.
    let min_grade = relevance_min_grade(qrels.values());
    let relevant: BTreeMap<&String, BTreeSet<String>> = kept
        .iter()
        .map(|q| {
            (
                q,
                relevant_set(&by_qid[q].permutations[&0], &qrels[q], min_grade),
            )
        })
        .collect();
    let threshold = tune(
        kept.iter()
            .map(|q| (&by_qid[q].permutations[&0], &relevant[q])),
    );

    let mut max_perms = 0;
    for qid in &kept {
        let judgments = &qrels[qid];
        let perms: Vec<&Scores> = by_qid[qid].permutations.values().collect();
        max_perms = max_perms.max(perms.len());
        let rankings: Vec<Vec<&str>> = perms.iter().map(|p| rank(p)).collect();
        for (i, &k) in cfg.cutoffs.iter().enumerate() {
            let values: Vec<f64> = rankings
                .iter()
                .map(|r| ndcg_at_k(r, judgments, k))
                .collect();
            let s = summarize(&values).expect("permutation 0 exists");
            report.push(qid, &ndcg_name(k), s.canonical);
            if perms.len() >= 2 {
                report.push(qid, &format!("ndcg_at_{k}_mean"), s.mean);
                report.push(qid, &format!("ndcg_at_{k}_worst"), s.worst);
                let name = if i == 0 {
                    "order_spread".to_string()
                } else {
                    format!("order_spread_at_{k}")
                };
                report.push(qid, &name, s.order_spread);
            }
        }
        if let Some(t) = tau_psi(&perms) {
            report.push(qid, "tau_psi", t.tau_psi);
            report.push(qid, "tied_pair_share", t.tied_share);
        }
        if let Some(th) = &threshold {
            if let Some(o) = retained_set_overlap(&perms, th.t) {
                report.push(qid, "retained_set_overlap", o);
            }
        }
        if let Some(gold) = pair_gold(perms[0], judgments) {
            // A pair with one better-graded response (response ranking,
            // SPEC.md section 3): label accuracy from the canonical order and
            // from the average of all permutations; with two or more
            // permutations, pair flip and gold crossing.
            let p = preference::evaluate(&perms, gold, perms.len()).expect("permutation 0 exists");
            report.push(qid, "label_accuracy", f64::from(u8::from(p.correct_single)));
            if let Some(flip) = p.pair_flip {
                let averaged = f64::from(u8::from(p.correct_averaged));
                report.push(qid, "label_accuracy_averaged", averaged);
                report.push(qid, "pair_flip", flip);
                report.push(qid, "gold_crossing", f64::from(u8::from(p.gold_crossing)));
            }
        }
    }
    report.permutations = Some(max_perms);
    report.relevance_min_grade = Some(min_grade);
    report.threshold = threshold;
    report.aggregate(cfg.bootstrap);
    Ok(report)
}
