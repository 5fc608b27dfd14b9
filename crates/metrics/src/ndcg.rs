//! nDCG@k with trec_eval `ndcg_cut` semantics.
//!
//! - gain = the judged grade; negative grades and unjudged documents gain 0;
//! - discount = log2(rank + 1), rank counted from 1;
//! - the ideal ranking is built from *all* judged documents of the query in
//!   the qrels (not only the retrieved ones), cut at k;
//! - a query without any document of positive grade gets 0.

use crate::ranking;
use crate::{Judgments, Scores};

fn gain(grade: i32) -> f64 {
    grade.max(0) as f64
}

/// DCG@k of gains listed in rank order.
pub fn dcg_at_k(gains: impl IntoIterator<Item = f64>, k: usize) -> f64 {
    gains
        .into_iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g / ((i + 2) as f64).log2())
        .sum()
}

/// The ideal DCG@k from all judgments of the query.
pub fn ideal_dcg_at_k(judgments: &Judgments, k: usize) -> f64 {
    let mut gains: Vec<f64> = judgments
        .values()
        .map(|&g| gain(g))
        .filter(|&g| g > 0.0)
        .collect();
    gains.sort_by(|a, b| b.total_cmp(a));
    dcg_at_k(gains, k)
}

/// nDCG@k of a ranking (ids, best first) against the query's judgments.
pub fn ndcg_at_k<S: AsRef<str>>(ranking: &[S], judgments: &Judgments, k: usize) -> f64 {
    let ideal = ideal_dcg_at_k(judgments, k);
    if ideal <= 0.0 {
        return 0.0;
    }
    let gains = ranking
        .iter()
        .map(|id| judgments.get(id.as_ref()).map_or(0.0, |&g| gain(g)));
    dcg_at_k(gains, k) / ideal
}

/// nDCG@k of scores (ranked with [`ranking::rank`]).
pub fn ndcg_of_scores(scores: &Scores, judgments: &Judgments, k: usize) -> f64 {
    ndcg_at_k(&ranking::rank(scores), judgments, k)
}
