//! Whole-file evaluation: invariance to the order candidates are listed in,
//! and the anchor values on small synthetic scores.

use std::collections::BTreeMap;

use ocrank_metrics::report::{evaluate_run, evaluate_scores, EvalConfig, ScoresQuery};
use ocrank_metrics::stats::Bootstrap;
use ocrank_metrics::Judgments;
use proptest::prelude::*;

fn qrels() -> BTreeMap<String, Judgments> {
    let mut q = BTreeMap::new();
    q.insert(
        "q1".to_string(),
        [("a", 3), ("b", 2), ("c", 0), ("d", 1), ("e", 0)]
            .into_iter()
            .map(|(d, g)| (d.to_string(), g))
            .collect(),
    );
    q.insert(
        "q2".to_string(),
        [("a", 0), ("b", 2)]
            .into_iter()
            .map(|(d, g)| (d.to_string(), g))
            .collect(),
    );
    q.insert("judged-only".to_string(), [("z".to_string(), 1)].into());
    q
}

/// Records (qid, permutation, candidate, score) as a scores JSONL would list them.
fn records(seed: u64) -> Vec<(String, usize, String, f64)> {
    let mut out = Vec::new();
    for (qi, qid) in ["q1", "q2", "unjudged"].iter().enumerate() {
        for p in 0..4usize {
            for (ci, c) in ["a", "b", "c", "d", "e"].iter().enumerate() {
                // Coarse scores so that ties occur.
                let s = ((seed as usize + qi * 7 + p * 3 + ci * 5) % 6) as f64 / 5.0;
                out.push((qid.to_string(), p, c.to_string(), s));
            }
        }
    }
    out
}

fn to_queries(records: &[(String, usize, String, f64)]) -> Vec<ScoresQuery> {
    let mut by: BTreeMap<String, ScoresQuery> = BTreeMap::new();
    for (q, p, c, s) in records {
        by.entry(q.clone())
            .or_insert_with(|| ScoresQuery {
                qid: q.clone(),
                ..Default::default()
            })
            .permutations
            .entry(*p)
            .or_default()
            .insert(c.clone(), *s);
    }
    by.into_values().collect()
}

fn cfg() -> EvalConfig {
    EvalConfig {
        cutoffs: vec![10, 3],
        bootstrap: Some(Bootstrap {
            resamples: 500,
            seed: 3,
            level: 0.95,
        }),
    }
}

proptest! {
    #[test]
    fn metrics_do_not_depend_on_listing_order(seed in 0u64..50, shuffle_seed: u64) {
        let recs = records(seed);
        let mut shuffled = recs.clone();
        // Deterministic shuffle of the listing (not of the permutations).
        shuffled.sort_by_key(|r| {
            let mut h = shuffle_seed ^ 0x9e37_79b9_7f4a_7c15;
            for b in r.0.bytes().chain(r.2.bytes()).chain([r.1 as u8]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            h
        });
        let mut queries = to_queries(&shuffled);
        queries.reverse();
        let a = evaluate_scores(&to_queries(&recs), &qrels(), &cfg()).unwrap();
        let b = evaluate_scores(&queries, &qrels(), &cfg()).unwrap();
        prop_assert_eq!(&a, &b);

        // Run files too: entries listed in any order give the same result.
        let run: BTreeMap<String, Vec<(String, f64)>> = to_queries(&recs)
            .into_iter()
            .map(|q| (q.qid, q.permutations[&0].clone().into_iter().collect()))
            .collect();
        let mut rev = run.clone();
        rev.values_mut().for_each(|v| v.reverse());
        prop_assert_eq!(evaluate_run(&run, &qrels(), &cfg()), evaluate_run(&rev, &qrels(), &cfg()));
    }
}

#[test]
fn skipped_and_missing_queries_are_reported() {
    let r = evaluate_scores(&to_queries(&records(1)), &qrels(), &cfg()).unwrap();
    assert_eq!(r.num_queries, 2);
    assert_eq!(r.skipped_without_qrels, vec!["unjudged".to_string()]);
    assert_eq!(r.judged_without_scores, vec!["judged-only".to_string()]);
    assert_eq!(r.permutations, Some(4));
    assert_eq!(r.relevance_min_grade, Some(2));
    for name in [
        "ndcg_at_10",
        "ndcg_at_10_mean",
        "ndcg_at_10_worst",
        "order_spread",
        "order_spread_at_3",
        "tau_psi",
        "tied_pair_share",
        "retained_set_overlap",
    ] {
        assert!(r.collection.contains_key(name), "{name}");
        let [lo, hi] = r.ci[name];
        assert!(
            lo <= r.collection[name] + 1e-12 && r.collection[name] <= hi + 1e-12,
            "{name}"
        );
    }
}

#[test]
fn identical_and_constant_scorers() {
    // Every permutation identical: no order dependence at all.
    let mut same = Vec::new();
    for p in 0..3 {
        for (c, s) in [("a", 0.9), ("b", 0.7), ("c", 0.1), ("d", 0.5), ("e", 0.2)] {
            same.push(("q1".to_string(), p, c.to_string(), s));
        }
    }
    let r = evaluate_scores(&to_queries(&same), &qrels(), &cfg()).unwrap();
    assert_eq!(r.collection["tau_psi"], 0.0);
    assert_eq!(r.collection["order_spread"], 0.0);
    assert_eq!(r.collection["retained_set_overlap"], 1.0);
    // a (3), b (2), d (1), e, c: the ideal order.
    assert!((r.collection["ndcg_at_10"] - 1.0).abs() < 1e-12);
    // Threshold: relevant {a, b} (grade >= 2); the best F1 keeps exactly them.
    let th = r.threshold.unwrap();
    assert_eq!(th.mean_f1, 1.0);
    assert!(th.t > 0.5 && th.t <= 0.7);

    // A constant scorer: tau-PSI exactly 0.5, all pairs tied.
    let constant: Vec<_> = same
        .iter()
        .map(|(q, p, c, _)| (q.clone(), *p, c.clone(), 0.5))
        .collect();
    let r = evaluate_scores(&to_queries(&constant), &qrels(), &cfg()).unwrap();
    assert_eq!(r.collection["tau_psi"], 0.5);
    assert_eq!(r.collection["tied_pair_share"], 1.0);

    // A single permutation: order-dependence metrics are absent, not 0.
    let one: Vec<_> = same.iter().filter(|r| r.1 == 0).cloned().collect();
    let r = evaluate_scores(&to_queries(&one), &qrels(), &cfg()).unwrap();
    assert!(r.collection.contains_key("ndcg_at_10"));
    assert!(!r.collection.contains_key("tau_psi"));
    assert!(!r.collection.contains_key("order_spread"));
    assert!(!r.collection.contains_key("retained_set_overlap"));
}

#[test]
fn missing_canonical_permutation_is_an_error() {
    let recs: Vec<_> = records(0).into_iter().filter(|r| r.1 != 0).collect();
    let err = evaluate_scores(&to_queries(&recs), &qrels(), &cfg()).unwrap_err();
    assert!(err.contains("permutation 0"), "{err}");
}

/// Pairs with a gold response get the response-ranking decisions of SPEC.md
/// section 3; pools that are not such pairs do not.
#[test]
fn pairs_with_a_gold_response_get_pair_flip_gold_crossing_and_label_accuracy() {
    let perm = |pairs: &[(&str, f64)]| -> BTreeMap<String, f64> {
        pairs.iter().map(|(c, s)| (c.to_string(), *s)).collect()
    };
    let query = |qid: &str, perms: Vec<BTreeMap<String, f64>>| ScoresQuery {
        qid: qid.to_string(),
        permutations: perms.into_iter().enumerate().collect(),
    };
    let queries = vec![
        // Gold "1": chosen 1, 2, 1 over three orders; the average picks 1.
        query(
            "flips",
            vec![
                perm(&[("1", 0.9), ("2", 0.1)]),
                perm(&[("1", 0.2), ("2", 0.8)]),
                perm(&[("1", 0.7), ("2", 0.3)]),
            ],
        ),
        // Gold "2": every order picks "1".
        query(
            "wrong",
            vec![
                perm(&[("1", 0.6), ("2", 0.4)]),
                perm(&[("1", 0.7), ("2", 0.2)]),
                perm(&[("1", 0.9), ("2", 0.1)]),
            ],
        ),
        // Equal grades: no gold.
        query(
            "tie",
            vec![
                perm(&[("1", 0.6), ("2", 0.4)]),
                perm(&[("1", 0.4), ("2", 0.6)]),
            ],
        ),
        // Three candidates: not a pair.
        query(
            "three",
            vec![
                perm(&[("a", 0.6), ("b", 0.4), ("c", 0.1)]),
                perm(&[("a", 0.1), ("b", 0.4), ("c", 0.6)]),
            ],
        ),
    ];
    let mut qrels: BTreeMap<String, Judgments> = BTreeMap::new();
    let judge = |pairs: &[(&str, i32)]| -> Judgments {
        pairs.iter().map(|(c, g)| (c.to_string(), *g)).collect()
    };
    qrels.insert("flips".into(), judge(&[("1", 1), ("2", 0)]));
    qrels.insert("wrong".into(), judge(&[("1", 0), ("2", 1)]));
    qrels.insert("tie".into(), judge(&[("1", 1), ("2", 1)]));
    qrels.insert("three".into(), judge(&[("a", 1)]));
    let r = evaluate_scores(&queries, &qrels, &EvalConfig::default()).unwrap();
    let q = |qid: &str, m: &str| r.per_query[qid].get(m).copied();
    assert_eq!(q("flips", "pair_flip"), Some(2.0 / 3.0));
    assert_eq!(q("flips", "gold_crossing"), Some(1.0));
    assert_eq!(q("flips", "label_accuracy"), Some(1.0));
    assert_eq!(q("flips", "label_accuracy_averaged"), Some(1.0));
    assert_eq!(q("wrong", "pair_flip"), Some(0.0));
    assert_eq!(q("wrong", "gold_crossing"), Some(0.0));
    assert_eq!(q("wrong", "label_accuracy"), Some(0.0));
    assert_eq!(q("wrong", "label_accuracy_averaged"), Some(0.0));
    for qid in ["tie", "three"] {
        for m in ["pair_flip", "gold_crossing", "label_accuracy"] {
            assert_eq!(q(qid, m), None, "{qid} {m}");
        }
    }
    assert_eq!(r.collection["pair_flip"], 1.0 / 3.0);
    assert_eq!(r.collection["label_accuracy"], 0.5);
    assert_eq!(r.collection["gold_crossing"], 0.5);

    // One permutation: label accuracy only.
    let single: Vec<ScoresQuery> = queries[..1]
        .iter()
        .map(|q| ScoresQuery {
            qid: q.qid.clone(),
            permutations: q
                .permutations
                .range(..1)
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
        })
        .collect();
    let r = evaluate_scores(&single, &qrels, &EvalConfig::default()).unwrap();
    assert_eq!(r.per_query["flips"].get("label_accuracy"), Some(&1.0));
    assert_eq!(r.per_query["flips"].get("pair_flip"), None);
}
