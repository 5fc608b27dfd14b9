//! The scores JSONL of SPEC.md section 7: one line per (query, permutation,
//! candidate).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRecord {
    pub qid: String,
    /// Permutation index; 0 is the canonical order.
    pub permutation: usize,
    pub candidate: String,
    /// Window index within the permutation (0-based).
    pub window: usize,
    /// Slot within the window (1-based, as numbered in the prompt).
    pub slot: usize,
    /// Renormalised probabilities of grades 0..=3.
    pub probs: [f64; 4],
    /// Total probability of the four grade tokens before renormalising.
    pub mass: f64,
    /// The readout (expected grade / 3 by default).
    pub score: f64,
}
