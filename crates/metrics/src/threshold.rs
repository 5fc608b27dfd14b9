//! The frozen F1 threshold and retained-set overlap (SPEC.md section 3).
//!
//! A threshold t keeps {d : score(d) >= t}. It is tuned once per collection on
//! the canonical order: over 41 evenly spaced values between the smallest and
//! the largest pooled score, the one maximising the mean per-query set F1
//! against the relevant set, ties to the higher t. Queries with no relevant
//! candidate in the pool are left out of the tuning (but not out of the
//! overlap). Then t is frozen and every permutation's kept set is compared.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::{Judgments, Scores};

/// Number of grid points of the threshold search.
pub const GRID_POINTS: usize = 41;

/// The minimum grade that makes a candidate relevant for set decisions: 2 on
/// graded collections (some grade above 1), 1 on binary ones.
pub fn relevance_min_grade<'a>(all_judgments: impl IntoIterator<Item = &'a Judgments>) -> i32 {
    let max = all_judgments
        .into_iter()
        .flat_map(|j| j.values().copied())
        .max()
        .unwrap_or(1);
    if max >= 2 {
        2
    } else {
        1
    }
}

/// The pool's relevant candidates: those of `scores` judged `>= min_grade`.
pub fn relevant_set(scores: &Scores, judgments: &Judgments, min_grade: i32) -> BTreeSet<String> {
    scores
        .keys()
        .filter(|id| judgments.get(*id).is_some_and(|&g| g >= min_grade))
        .cloned()
        .collect()
}

/// The candidates kept by threshold `t`.
pub fn kept(scores: &Scores, t: f64) -> BTreeSet<&str> {
    scores
        .iter()
        .filter(|(_, &s)| s >= t)
        .map(|(id, _)| id.as_str())
        .collect()
}

/// Set F1 of a kept set against a relevant set; 0 when either is empty.
pub fn set_f1(kept: &BTreeSet<&str>, relevant: &BTreeSet<String>) -> f64 {
    if kept.is_empty() || relevant.is_empty() {
        return 0.0;
    }
    let hits = kept.iter().filter(|id| relevant.contains(**id)).count();
    2.0 * hits as f64 / (kept.len() + relevant.len()) as f64
}

/// The 41 candidate thresholds: evenly spaced from `min` to `max`, the last
/// one exactly `max`.
pub fn grid(min: f64, max: f64) -> Vec<f64> {
    let last = GRID_POINTS - 1;
    (0..GRID_POINTS)
        .map(|i| {
            if i == last {
                max
            } else {
                min + (max - min) * i as f64 / last as f64
            }
        })
        .collect()
}

/// A tuned threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub t: f64,
    /// Mean per-query set F1 at `t` over the tuning queries.
    pub mean_f1: f64,
    /// Queries that entered the tuning (with a relevant candidate).
    pub tuning_queries: usize,
    /// Smallest and largest pooled score (the grid's ends).
    pub min_score: f64,
    pub max_score: f64,
}

/// Tune the threshold on canonical-order scores. `queries` yields each query's
/// canonical scores and its relevant set; all queries' scores are pooled for
/// the grid, only those with a non-empty relevant set are tuned on. `None`
/// when no query has a relevant candidate or there is no finite score.
pub fn tune<'a>(
    queries: impl IntoIterator<Item = (&'a Scores, &'a BTreeSet<String>)>,
) -> Option<Threshold> {
    let queries: Vec<(&Scores, &BTreeSet<String>)> = queries.into_iter().collect();
    let pooled = queries
        .iter()
        .flat_map(|(s, _)| s.values().copied())
        .filter(|s| s.is_finite());
    let (min, max) = pooled.fold(None, |acc: Option<(f64, f64)>, s| match acc {
        None => Some((s, s)),
        Some((lo, hi)) => Some((lo.min(s), hi.max(s))),
    })?;
    let tuning: Vec<_> = queries.iter().filter(|(_, r)| !r.is_empty()).collect();
    if tuning.is_empty() {
        return None;
    }
    let mut best: Option<(f64, f64)> = None;
    for t in grid(min, max) {
        let f1 = tuning
            .iter()
            .map(|(s, r)| set_f1(&kept(s, t), r))
            .sum::<f64>()
            / tuning.len() as f64;
        // Ascending grid and `>=`: ties go to the higher t.
        if best.is_none_or(|(_, b)| f1 >= b) {
            best = Some((t, f1));
        }
    }
    let (t, mean_f1) = best?;
    Some(Threshold {
        t,
        mean_f1,
        tuning_queries: tuning.len(),
        min_score: min,
        max_score: max,
    })
}

/// Jaccard similarity of two sets; two empty sets count 1.
pub fn jaccard<T: Ord>(a: &BTreeSet<T>, b: &BTreeSet<T>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Whether `t` keeps every candidate of a query under every permutation. Such
/// a query's retained-set overlap is 1 whatever the scores do, so a threshold
/// that keeps most pools whole says little about order dependence.
pub fn keeps_whole_pool<S: std::borrow::Borrow<Scores>>(permutations: &[S], t: f64) -> bool {
    permutations.iter().all(|p| {
        let p = p.borrow();
        kept(p, t).len() == p.len()
    })
}

/// Retained-set overlap of one query: mean pairwise Jaccard of the sets kept
/// by the frozen threshold `t` across permutations, each pair compared over
/// the candidates both permutations scored. `None` with fewer than two
/// permutations. Higher is better.
pub fn retained_set_overlap<S: std::borrow::Borrow<Scores>>(
    permutations: &[S],
    t: f64,
) -> Option<f64> {
    let mut sum = 0.0;
    let mut count = 0usize;
    for i in 0..permutations.len() {
        for j in i + 1..permutations.len() {
            let (a, b) = (permutations[i].borrow(), permutations[j].borrow());
            let ka: BTreeSet<&str> = kept(a, t)
                .into_iter()
                .filter(|id| b.contains_key(*id))
                .collect();
            let kb: BTreeSet<&str> = kept(b, t)
                .into_iter()
                .filter(|id| a.contains_key(*id))
                .collect();
            sum += jaccard(&ka, &kb);
            count += 1;
        }
    }
    (count > 0).then(|| sum / count as f64)
}
