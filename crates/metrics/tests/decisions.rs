//! QA and preference decisions.

use ocrank_metrics::preference::{evaluate, gold_crossing, pair_flip};
use ocrank_metrics::qa::{answer_flip, best_over_golds, exact_match, normalize_answer, token_f1};
use ocrank_metrics::Scores;

fn scores(pairs: &[(&str, f64)]) -> Scores {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn squad_normalisation() {
    assert_eq!(
        normalize_answer("The  Quick, brown fox!"),
        "quick brown fox"
    );
    assert_eq!(normalize_answer("an apple a day"), "apple day");
    assert_eq!(normalize_answer("Theatre"), "theatre");
    assert!(exact_match("Paris.", "paris"));
    assert!(!exact_match("Paris, France", "paris"));
}

#[test]
fn token_f1_cases() {
    // [cat, sat] vs [cat, sat, on, mat]: precision 1, recall 1/2.
    assert!((token_f1("the cat sat", "cat sat on mat") - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(token_f1("dog", "cat"), 0.0);
    assert_eq!(token_f1("The", "a"), 1.0);
    assert_eq!(token_f1("The", "cat"), 0.0);
    // Repeated tokens count with multiplicity.
    assert!((token_f1("cat cat", "cat") - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(best_over_golds("cat", &["dog", "the cat"]), (true, 1.0));
}

#[test]
fn answer_flip_share_of_pairs() {
    assert!((answer_flip(&["Paris", "paris.", "London"]).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(answer_flip(&["x", "X"]), Some(0.0));
    assert_eq!(answer_flip(&["x"]), None);
}

#[test]
fn preference_pair_flip_crossing_and_accuracy() {
    let perms = [
        scores(&[("1", 0.9), ("2", 0.1)]),
        scores(&[("1", 0.2), ("2", 0.8)]),
        scores(&[("1", 0.7), ("2", 0.3)]),
    ];
    assert!((pair_flip(&perms).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!(gold_crossing(&perms, "1"));
    assert!(!gold_crossing(&perms[..1], "1"));
    let out = evaluate(&perms, "1", 3).unwrap();
    assert!(out.correct_single);
    // Average over 3: "1" 0.6, "2" 0.4.
    assert!(out.correct_averaged);
    let out2 = evaluate(&perms[1..], "1", 1).unwrap();
    assert!(!out2.correct_single && !out2.correct_averaged);
    // Two candidates scored alike: the same pair every time, no flip.
    let same = [
        scores(&[("1", 0.5), ("2", 0.5)]),
        scores(&[("2", 0.5), ("1", 0.5)]),
    ];
    assert_eq!(pair_flip(&same), Some(0.0));
}

#[test]
fn question_outcome_scores_canonical_and_mean_and_flip() {
    use ocrank_metrics::qa::question_outcome;
    let o = question_outcome(
        &["The Eiffel Tower", "eiffel tower", "Paris", "tower"],
        &["Eiffel Tower"],
    )
    .unwrap();
    assert_eq!(o.em_canonical, 1.0);
    assert_eq!(o.f1_canonical, 1.0);
    assert!((o.em_mean - 0.5).abs() < 1e-12);
    // F1: 1, 1, 0, and "tower" against "eiffel tower" = 2 * 1 * 0.5 / 1.5.
    assert!((o.f1_mean - (2.0 + 2.0 / 3.0) / 4.0).abs() < 1e-12);
    // Pairs: 6; equal after normalisation only (0, 1): 5 differ.
    assert!((o.answer_flip.unwrap() - 5.0 / 6.0).abs() < 1e-12);
    assert_eq!(o.distinct_answers, 3);
    let one = question_outcome(&["no"], &["yes", "no"]).unwrap();
    assert_eq!((one.em_canonical, one.answer_flip), (1.0, None));
    assert!(question_outcome::<&str>(&[], &["x"]).is_none());
    assert!(question_outcome(&["x"], &[]).is_none());
}
