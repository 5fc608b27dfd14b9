//! ocrank-metrics: the measurements of SPEC.md sections 3 and 4 as pure
//! functions over plain types.
//!
//! Conventions shared by every module:
//!
//! - A query's scores are a [`Scores`] map, candidate id -> score. Maps make
//!   every metric independent of the order in which candidates were listed.
//! - Judgments are a [`Judgments`] map, candidate id -> grade (a TREC qrels
//!   line); unjudged candidates have grade 0, negative grades count as 0.
//! - Rankings sort by score descending, ties by candidate id in descending
//!   string order, as trec_eval does ([`ranking::rank`]).
//! - A metric that cannot be computed (one permutation, no relevant document
//!   for a tuning step, a single BSC group) is `None`, never a silent 0.
//!
//! Modules are named after the concepts of SPEC.md: [`ranking`], [`ndcg`],
//! [`stability`] (tau-PSI, order spread), [`threshold`] (frozen F1 threshold,
//! retained-set overlap), [`bsc`], [`qa`] (answer flip, EM, F1),
//! [`preference`] (pair flip, gold crossing, label accuracy), [`stats`]
//! (paired bootstrap, Holm) and [`report`] (everything for one scores file).
//! [`calibration`] (isotonic regression) maps a teacher's score to an
//! expected grade for training labels.

use std::collections::BTreeMap;

pub mod bsc;
pub mod calibration;
pub mod ndcg;
pub mod preference;
pub mod qa;
pub mod ranking;
pub mod report;
pub mod stability;
pub mod stats;
pub mod threshold;

/// One query's scores: candidate id -> score.
pub type Scores = BTreeMap<String, f64>;

/// One query's judgments: candidate id -> grade.
pub type Judgments = BTreeMap<String, i32>;

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}
