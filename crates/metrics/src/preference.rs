//! Response-ranking decisions (SPEC.md section 3): chosen = top-scored
//! response, rejected = bottom-scored (ties broken as in
//! [`crate::ranking::rank`]); pair flip, gold crossing and label accuracy.

use serde::{Deserialize, Serialize};

use crate::bsc::average;
use crate::qa::pairwise_disagreement;
use crate::ranking::{rank, top_and_bottom};
use crate::Scores;

/// The (chosen, rejected) pair of one permutation's scores.
pub fn chosen_rejected(scores: &Scores) -> Option<(String, String)> {
    top_and_bottom(scores).map(|(c, r)| (c.to_string(), r.to_string()))
}

/// Pair flip of one prompt: share of permutation pairs whose (chosen,
/// rejected) pair differs. `None` with fewer than two permutations.
pub fn pair_flip<S: std::borrow::Borrow<Scores>>(permutations: &[S]) -> Option<f64> {
    let pairs: Vec<Option<(String, String)>> = permutations
        .iter()
        .map(|p| chosen_rejected(p.borrow()))
        .collect();
    pairwise_disagreement(&pairs)
}

/// Whether the top-scored response is the gold one.
pub fn top_is_gold(scores: &Scores, gold: &str) -> bool {
    rank(scores).first() == Some(&gold)
}

/// Gold crossing of one prompt: the top-scored response agrees with the gold
/// under some permutations and not under others.
pub fn gold_crossing<S: std::borrow::Borrow<Scores>>(permutations: &[S], gold: &str) -> bool {
    let agree = permutations
        .iter()
        .filter(|p| top_is_gold(p.borrow(), gold))
        .count();
    agree > 0 && agree < permutations.len()
}

/// Preference metrics of one prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreferenceOutcome {
    pub pair_flip: Option<f64>,
    pub gold_crossing: bool,
    /// Label correct from the canonical permutation alone.
    pub correct_single: bool,
    /// Label correct from the average of the first `k` permutations.
    pub correct_averaged: bool,
}

/// All preference metrics of one prompt; `permutations[0]` is canonical.
/// `None` for no permutation.
pub fn evaluate<S: std::borrow::Borrow<Scores>>(
    permutations: &[S],
    gold: &str,
    k: usize,
) -> Option<PreferenceOutcome> {
    let first = permutations.first()?.borrow();
    let k = k.clamp(1, permutations.len());
    Some(PreferenceOutcome {
        pair_flip: pair_flip(permutations),
        gold_crossing: gold_crossing(permutations, gold),
        correct_single: top_is_gold(first, gold),
        correct_averaged: top_is_gold(&average(&permutations[..k]), gold),
    })
}
