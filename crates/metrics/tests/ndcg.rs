//! nDCG@k: hand-computed cases and the trec_eval reference values of the
//! data README (BM25 top-100, ndcg_cut.10: DL19 0.5058, DL21 0.4458).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ocrank_metrics::ndcg::{ndcg_at_k, ndcg_of_scores};
use ocrank_metrics::report::{evaluate_run, EvalConfig};
use ocrank_metrics::{Judgments, Scores};

fn judgments(pairs: &[(&str, i32)]) -> Judgments {
    pairs.iter().map(|(d, g)| (d.to_string(), *g)).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn hand_computed_graded() {
    let j = judgments(&[("a", 3), ("b", 2), ("c", 0), ("d", 1)]);
    // c (0), a (3), x (unjudged), b (2): DCG@3 = 3 / log2(3).
    // Ideal@3 from all judgments: 3, 2, 1 -> 3 + 2 / log2(3) + 1 / 2.
    let l3 = 3f64.log2();
    let expected = (3.0 / l3) / (3.0 + 2.0 / l3 + 0.5);
    let got = ndcg_at_k(&["c", "a", "x", "b"], &j, 3);
    assert!(close(got, expected), "{got} vs {expected}");
    assert!((got - 0.397_489_522).abs() < 1e-9);
    // @4 brings b in at rank 4 (discount log2 5) and d into the ideal.
    let expected4 = (3.0 / l3 + 2.0 / 5f64.log2()) / (3.0 + 2.0 / l3 + 0.5 + 0.0);
    assert!(close(ndcg_at_k(&["c", "a", "x", "b"], &j, 4), expected4));
    // The perfect order scores 1.
    assert!(close(ndcg_at_k(&["a", "b", "d", "c"], &j, 10), 1.0));
}

#[test]
fn ideal_uses_all_judged_documents() {
    // z is judged 3 but not retrieved: it still enters the ideal.
    let j = judgments(&[("a", 1), ("z", 3)]);
    let expected = 1.0 / (3.0 + 1.0 / 3f64.log2());
    assert!(close(ndcg_at_k(&["a"], &j, 10), expected));
}

#[test]
fn negative_grades_gain_nothing_and_no_relevant_gives_zero() {
    let j = judgments(&[("a", -1), ("b", 1)]);
    assert!(close(ndcg_at_k(&["a", "b"], &j, 10), 1.0 / 3f64.log2()));
    let none = judgments(&[("a", 0), ("b", -2)]);
    assert_eq!(ndcg_at_k(&["a", "b"], &none, 10), 0.0);
    assert_eq!(ndcg_at_k::<&str>(&[], &j, 10), 0.0);
}

#[test]
fn ties_break_by_docid_descending() {
    let j = judgments(&[("a", 1)]);
    let s: Scores = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
    // Tied: b ranks before a, so a is at rank 2.
    assert!(close(ndcg_of_scores(&s, &j, 1), 0.0));
    assert!(close(ndcg_of_scores(&s, &j, 2), 1.0 / 3f64.log2()));
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn trec_eval_ndcg10(collection: &str) -> f64 {
    let dir = data_dir().join("msmarco").join(collection);
    let run = ocrank_data::read_run(&dir.join("bm25-top100.trec")).unwrap();
    let qrels = ocrank_data::read_qrels(&dir.join("qrels.txt")).unwrap();
    let run: BTreeMap<String, Vec<(String, f64)>> = run
        .by_query
        .into_iter()
        .map(|(q, es)| (q, es.into_iter().map(|e| (e.docid, e.score)).collect()))
        .collect();
    let cfg = EvalConfig {
        cutoffs: vec![10],
        bootstrap: None,
    };
    evaluate_run(&run, &qrels.by_query, &cfg).collection["ndcg_at_10"]
}

#[test]
fn reproduces_trec_eval_dl19() {
    let v = trec_eval_ndcg10("dl19");
    assert_eq!(format!("{v:.4}"), "0.5058", "{v}");
}

#[test]
fn reproduces_trec_eval_dl21() {
    let v = trec_eval_ndcg10("dl21");
    assert_eq!(format!("{v:.4}"), "0.4458", "{v}");
}
