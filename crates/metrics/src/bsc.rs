//! Batched self-consistency, BSC@K (SPEC.md section 4): average each
//! candidate's score over K permutations, then rank. Its stability is
//! measured across G >= 2 disjoint groups of K permutations; with a single
//! group it is unmeasurable (`None`), never 0.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::stability::{tau_psi, TauPsi};
use crate::threshold::retained_set_overlap;
use crate::Scores;

/// Mean score of every candidate over the given permutations (each candidate
/// averaged over the permutations that scored it).
pub fn average<S: std::borrow::Borrow<Scores>>(permutations: &[S]) -> Scores {
    let mut acc: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for p in permutations {
        for (id, &s) in p.borrow() {
            let e = acc.entry(id.clone()).or_insert((0.0, 0));
            e.0 += s;
            e.1 += 1;
        }
    }
    acc.into_iter()
        .map(|(id, (sum, n))| (id, sum / n as f64))
        .collect()
}

/// The averaged scores of each group. `by_permutation` maps a permutation
/// index to its scores; group g averages the indices of `groups[g]` (see
/// `ocrank_plan::BscPlan::group_indices`: g*K .. (g+1)*K). A group with no
/// scored permutation is an error naming it.
pub fn group_averages(
    by_permutation: &BTreeMap<usize, Scores>,
    groups: impl IntoIterator<Item = Range<usize>>,
) -> Result<Vec<Scores>, String> {
    groups
        .into_iter()
        .map(|range| {
            let members: Vec<&Scores> = range
                .clone()
                .filter_map(|i| by_permutation.get(&i))
                .collect();
            if members.is_empty() {
                Err(format!("BSC group of permutations {range:?} has no scores"))
            } else {
                Ok(average(&members))
            }
        })
        .collect()
}

/// BSC@K stability across the groups' averaged score vectors. `None` with a
/// single group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BscStability {
    pub tau_psi: TauPsi,
    /// With a frozen threshold, if one was given.
    pub retained_set_overlap: Option<f64>,
}

pub fn stability(group_scores: &[Scores], threshold: Option<f64>) -> Option<BscStability> {
    if group_scores.len() < 2 {
        return None;
    }
    Some(BscStability {
        tau_psi: tau_psi(group_scores)?,
        retained_set_overlap: threshold.and_then(|t| retained_set_overlap(group_scores, t)),
    })
}
