//! Order dependence of scores: tau-PSI (with the tied-pair share) and the
//! spread of a quality metric across permutations (SPEC.md section 3).

use serde::{Deserialize, Serialize};

use crate::Scores;

/// Kendall tau-a between two score vectors over the same candidates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TauA {
    /// (concordant - discordant) / all pairs; a pair tied in either vector counts 0.
    pub tau: f64,
    /// Share of candidate pairs tied in either vector.
    pub tied_share: f64,
    /// Number of candidate pairs, n (n - 1) / 2.
    pub pairs: usize,
}

/// Kendall tau-a of two equally long score vectors (`a[i]` and `b[i]` belong
/// to the same candidate). `None` with fewer than two candidates.
///
/// # Panics
/// If the lengths differ.
pub fn kendall_tau_a(a: &[f64], b: &[f64]) -> Option<TauA> {
    assert_eq!(a.len(), b.len(), "score vectors of different lengths");
    let n = a.len();
    if n < 2 {
        return None;
    }
    let (mut concordant, mut discordant, mut tied) = (0i64, 0i64, 0usize);
    for i in 0..n {
        for j in i + 1..n {
            let da = a[i].partial_cmp(&a[j]);
            let db = b[i].partial_cmp(&b[j]);
            use std::cmp::Ordering::*;
            match (da, db) {
                (Some(Less), Some(Less)) | (Some(Greater), Some(Greater)) => concordant += 1,
                (Some(Less), Some(Greater)) | (Some(Greater), Some(Less)) => discordant += 1,
                // Equal or NaN in either vector: a tie.
                _ => tied += 1,
            }
        }
    }
    let pairs = n * (n - 1) / 2;
    Some(TauA {
        tau: (concordant - discordant) as f64 / pairs as f64,
        tied_share: tied as f64 / pairs as f64,
        pairs,
    })
}

/// Kendall tau-a between two permutations' scores over the candidates they
/// share. `None` when they share fewer than two candidates.
pub fn kendall_tau_a_shared(a: &Scores, b: &Scores) -> Option<TauA> {
    let (va, vb): (Vec<f64>, Vec<f64>) = a
        .iter()
        .filter_map(|(id, &sa)| b.get(id).map(|&sb| (sa, sb)))
        .unzip();
    kendall_tau_a(&va, &vb)
}

/// tau-PSI of one query.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TauPsi {
    /// clip((1 - mean tau) / 2, 0, 1): 0 identical, 0.5 unrelated, 1 reversed.
    pub tau_psi: f64,
    /// Mean Kendall tau-a over permutation pairs.
    pub mean_tau: f64,
    /// Mean share of tied candidate pairs over permutation pairs (1 for a
    /// constant scorer, whose tau-PSI is 0.5).
    pub tied_share: f64,
    /// Number of permutation pairs that entered the mean.
    pub permutation_pairs: usize,
}

/// tau-PSI over every pair of permutations of one query (each a [`Scores`]
/// map). Permutation pairs sharing fewer than two candidates are skipped;
/// `None` when no pair is left (e.g. a single permutation): instability that
/// cannot be measured is not reported as 0.
pub fn tau_psi<S: std::borrow::Borrow<Scores>>(permutations: &[S]) -> Option<TauPsi> {
    let mut sum_tau = 0.0;
    let mut sum_tied = 0.0;
    let mut count = 0usize;
    for i in 0..permutations.len() {
        for j in i + 1..permutations.len() {
            if let Some(t) =
                kendall_tau_a_shared(permutations[i].borrow(), permutations[j].borrow())
            {
                sum_tau += t.tau;
                sum_tied += t.tied_share;
                count += 1;
            }
        }
    }
    (count > 0).then(|| {
        let mean_tau = sum_tau / count as f64;
        TauPsi {
            tau_psi: ((1.0 - mean_tau) / 2.0).clamp(0.0, 1.0),
            mean_tau,
            tied_share: sum_tied / count as f64,
            permutation_pairs: count,
        }
    })
}

/// A quality metric (e.g. nDCG@10) of one query across its permutations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermutationSummary {
    /// The value under the canonical order (permutation 0, the first value).
    pub canonical: f64,
    pub mean: f64,
    pub worst: f64,
    pub best: f64,
    /// mean - worst.
    pub order_spread: f64,
}

/// Summarise per-permutation values; `values[0]` must be the canonical order.
/// `None` for no values.
pub fn summarize(values: &[f64]) -> Option<PermutationSummary> {
    let canonical = *values.first()?;
    let mean = crate::mean(values)?;
    let worst = values.iter().copied().fold(f64::INFINITY, f64::min);
    let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(PermutationSummary {
        canonical,
        mean,
        worst,
        best,
        order_spread: mean - worst,
    })
}
