//! Turning scores into a ranking, trec_eval's way.

use std::cmp::Ordering;

use crate::Scores;

/// Descending score order; ties (and only ties) by candidate id in descending
/// string (byte) order, as trec_eval breaks them. NaN scores rank last.
pub fn compare(a: (&str, f64), b: (&str, f64)) -> Ordering {
    let key = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
    key(b.1)
        .partial_cmp(&key(a.1))
        .unwrap_or(Ordering::Equal)
        .then_with(|| b.0.cmp(a.0))
}

/// Candidate ids ranked by [`compare`].
pub fn rank(scores: &Scores) -> Vec<&str> {
    let mut v: Vec<(&str, f64)> = scores.iter().map(|(id, &s)| (id.as_str(), s)).collect();
    v.sort_by(|a, b| compare(*a, *b));
    v.into_iter().map(|(id, _)| id).collect()
}

/// Like [`rank`] for a list of `(id, score)` that may repeat an id (a run
/// file); the order of the input does not matter.
pub fn rank_entries<'a>(entries: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<&'a str> {
    let mut v: Vec<(&str, f64)> = entries.into_iter().collect();
    v.sort_by(|a, b| compare(*a, *b));
    v.into_iter().map(|(id, _)| id).collect()
}

/// A run-file score as trec_eval sees it: trec_eval parses scores as 32-bit
/// floats, so scores that differ only beyond f32 precision tie (and then
/// break by docid). Use this before ranking run files to match trec_eval to
/// the last digit.
pub fn trec_eval_score(score: f64) -> f64 {
    score as f32 as f64
}

/// The top-scored and bottom-scored candidate of a query.
pub fn top_and_bottom(scores: &Scores) -> Option<(&str, &str)> {
    let r = rank(scores);
    Some((*r.first()?, *r.last()?))
}
