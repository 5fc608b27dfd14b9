//! Multi-document QA decisions: SQuAD answer normalisation, exact match,
//! token F1, and the answer flip rate across permutations (SPEC.md section 3).

use std::collections::BTreeMap;

/// SQuAD normalisation: lowercase, remove punctuation, remove the articles
/// "a", "an", "the" (as whole words), collapse whitespace.
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    // SQuAD removes Python's string.punctuation: the ASCII punctuation set.
    let no_punct: String = lower
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    no_punct
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exact match after normalisation.
pub fn exact_match(prediction: &str, gold: &str) -> bool {
    normalize_answer(prediction) == normalize_answer(gold)
}

/// Token-level F1 after normalisation (SQuAD). When either side normalises to
/// no token, F1 is 1 if both do and 0 otherwise (the SQuAD 2.0 rule).
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let p = normalize_answer(prediction);
    let g = normalize_answer(gold);
    let pt: Vec<&str> = p.split_whitespace().collect();
    let gt: Vec<&str> = g.split_whitespace().collect();
    if pt.is_empty() || gt.is_empty() {
        return f64::from(u8::from(pt.is_empty() && gt.is_empty()));
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &gt {
        *counts.entry(t).or_default() += 1;
    }
    let mut same = 0usize;
    for t in &pt {
        if let Some(c) = counts.get_mut(t) {
            if *c > 0 {
                *c -= 1;
                same += 1;
            }
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / pt.len() as f64;
    let recall = same as f64 / gt.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Best EM / F1 over several gold answers.
pub fn best_over_golds(prediction: &str, golds: &[&str]) -> (bool, f64) {
    golds.iter().fold((false, 0.0), |(em, f1), g| {
        (
            em || exact_match(prediction, g),
            f1.max(token_f1(prediction, g)),
        )
    })
}

/// Share of pairs of items that differ; `None` with fewer than two items.
pub fn pairwise_disagreement<T: PartialEq>(items: &[T]) -> Option<f64> {
    let n = items.len();
    if n < 2 {
        return None;
    }
    let mut differ = 0usize;
    for i in 0..n {
        for j in i + 1..n {
            differ += usize::from(items[i] != items[j]);
        }
    }
    Some(differ as f64 / (n * (n - 1) / 2) as f64)
}

/// Answer flip of one question: the share of permutation pairs whose
/// normalised answers differ. `None` with fewer than two permutations.
pub fn answer_flip<S: AsRef<str>>(answers: &[S]) -> Option<f64> {
    let normalised: Vec<String> = answers
        .iter()
        .map(|a| normalize_answer(a.as_ref()))
        .collect();
    pairwise_disagreement(&normalised)
}

/// What a frozen reader's answers under a question's permutations come to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuestionOutcome {
    /// Answer flip over the permutations; `None` with one permutation.
    pub answer_flip: Option<f64>,
    /// EM and F1 of the canonical order's answer (the first one given).
    pub em_canonical: f64,
    pub f1_canonical: f64,
    /// EM and F1 averaged over the permutations.
    pub em_mean: f64,
    pub f1_mean: f64,
    /// Distinct normalised answers among the permutations.
    pub distinct_answers: usize,
}

/// Scores one question's answers, given in permutation order with the
/// canonical order first, against its gold answers (best over golds).
/// `None` when there is no answer or no gold.
pub fn question_outcome<S: AsRef<str>>(answers: &[S], golds: &[&str]) -> Option<QuestionOutcome> {
    if answers.is_empty() || golds.is_empty() {
        return None;
    }
    let scored: Vec<(bool, f64)> = answers
        .iter()
        .map(|a| best_over_golds(a.as_ref(), golds))
        .collect();
    let n = scored.len() as f64;
    let mut distinct: Vec<String> = answers
        .iter()
        .map(|a| normalize_answer(a.as_ref()))
        .collect();
    distinct.sort();
    distinct.dedup();
    Some(QuestionOutcome {
        answer_flip: answer_flip(answers),
        em_canonical: f64::from(u8::from(scored[0].0)),
        f1_canonical: scored[0].1,
        em_mean: scored.iter().filter(|s| s.0).count() as f64 / n,
        f1_mean: scored.iter().map(|s| s.1).sum::<f64>() / n,
        distinct_answers: distinct.len(),
    })
}
