//! Frozen F1 threshold, retained-set overlap and BSC.

use std::collections::{BTreeMap, BTreeSet};

use ocrank_metrics::bsc::{average, group_averages, stability};
use ocrank_metrics::threshold::{
    grid, jaccard, keeps_whole_pool, relevance_min_grade, relevant_set, retained_set_overlap,
    set_f1, tune, GRID_POINTS,
};
use ocrank_metrics::{Judgments, Scores};
use proptest::prelude::*;

fn scores(pairs: &[(&str, f64)]) -> Scores {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

proptest! {
    #[test]
    fn jaccard_of_equal_sets_is_one(s in prop::collection::btree_set(0u32..100, 0..30)) {
        prop_assert_eq!(jaccard(&s, &s.clone()), 1.0);
    }

    #[test]
    fn jaccard_is_symmetric_and_bounded(
        a in prop::collection::btree_set(0u32..50, 0..30),
        b in prop::collection::btree_set(0u32..50, 0..30),
    ) {
        let j = jaccard(&a, &b);
        prop_assert_eq!(j, jaccard(&b, &a));
        prop_assert!((0.0..=1.0).contains(&j));
    }

    #[test]
    fn grid_has_41_points_from_min_to_max(lo in -10.0f64..10.0, width in 0.0f64..10.0) {
        let g = grid(lo, lo + width);
        prop_assert_eq!(g.len(), GRID_POINTS);
        prop_assert_eq!(g[0], lo);
        prop_assert_eq!(g[40], lo + width);
        prop_assert!(g.windows(2).all(|w| w[0] <= w[1]));
    }
}

#[test]
fn two_empty_sets_count_one() {
    assert_eq!(jaccard::<u32>(&BTreeSet::new(), &BTreeSet::new()), 1.0);
    assert_eq!(jaccard(&BTreeSet::from([1]), &BTreeSet::new()), 0.0);
}

#[test]
fn tuning_picks_the_highest_best_threshold_and_skips_queries_without_relevant() {
    // Grid over [0, 1] in steps of 0.025; F1 = 1 for every t in (0, 0.75];
    // the tie goes to the higher t, 0.75.
    let q1 = scores(&[("a", 1.0), ("b", 0.75), ("c", 0.0)]);
    let r1 = set(&["a", "b"]);
    // No relevant candidate: left out of the tuning, but its scores are pooled.
    let q2 = scores(&[("x", 0.5)]);
    let r2 = set(&[]);
    let th = tune([(&q1, &r1), (&q2, &r2)]).unwrap();
    assert_eq!(th.t, 0.75);
    assert_eq!(th.mean_f1, 1.0);
    assert_eq!(th.tuning_queries, 1);
    assert_eq!((th.min_score, th.max_score), (0.0, 1.0));
    assert!(tune([(&q2, &r2)]).is_none());
}

#[test]
fn tuning_maximises_mean_f1_over_queries() {
    // q1 wants t <= 0.4 (keeps a and b), q2 wants t in (0.4, 0.9] (keeps y only).
    let q1 = scores(&[("a", 0.4), ("b", 0.5), ("c", 0.0)]);
    let q2 = scores(&[("x", 0.4), ("y", 1.0)]);
    let (r1, r2) = (set(&["a", "b"]), set(&["y"]));
    let th = tune([(&q1, &r1), (&q2, &r2)]).unwrap();
    // t = 0.4: q1 F1 1, q2 keeps {x, y}: 2/3 -> mean 5/6.
    // t in (0.4, 0.5]: q1 keeps {b}: 2/3, q2 1 -> mean 5/6, and higher: wins the tie.
    assert_eq!(th.t, 0.5);
    assert!((th.mean_f1 - 5.0 / 6.0).abs() < 1e-12);
    let kept: BTreeSet<&str> = ["b"].into();
    assert!((set_f1(&kept, &r1) - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn relevance_grade_graded_vs_binary() {
    let graded: Judgments = [("a".to_string(), 3), ("b".to_string(), 1)].into();
    let binary: Judgments = [("a".to_string(), 1), ("b".to_string(), 0)].into();
    assert_eq!(relevance_min_grade([&graded]), 2);
    assert_eq!(relevance_min_grade([&binary]), 1);
    let s = scores(&[("a", 0.1), ("b", 0.2), ("z", 0.3)]);
    assert_eq!(relevant_set(&s, &graded, 2), set(&["a"]));
}

#[test]
fn overlap_of_kept_sets() {
    let p0 = scores(&[("a", 0.9), ("b", 0.6), ("c", 0.1)]);
    let p1 = scores(&[("a", 0.9), ("b", 0.4), ("c", 0.1)]);
    // t = 0.5 keeps {a, b} and {a}: Jaccard 1/2.
    assert_eq!(retained_set_overlap(&[&p0, &p1], 0.5), Some(0.5));
    // Nothing kept anywhere: two empty sets count 1.
    assert_eq!(retained_set_overlap(&[&p0, &p1], 0.95), Some(1.0));
    assert_eq!(retained_set_overlap(&[&p0, &p0, &p0], 0.5), Some(1.0));
    assert_eq!(retained_set_overlap(&[&p0], 0.5), None);
}

#[test]
fn a_threshold_below_every_score_keeps_the_whole_pool_and_overlap_one() {
    // The orders disagree about b and c, yet t = 0.05 keeps all three
    // under both: overlap 1 although the scores moved.
    let p0 = scores(&[("a", 0.9), ("b", 0.6), ("c", 0.1)]);
    let p1 = scores(&[("a", 0.9), ("b", 0.1), ("c", 0.6)]);
    assert!(keeps_whole_pool(&[&p0, &p1], 0.05));
    assert_eq!(retained_set_overlap(&[&p0, &p1], 0.05), Some(1.0));
    // At t = 0.1 (kept means score >= t) still whole; above it, not.
    assert!(keeps_whole_pool(&[&p0, &p1], 0.1));
    assert!(!keeps_whole_pool(&[&p0, &p1], 0.2));
    assert!(!keeps_whole_pool(&[&p0], 0.95));
}

#[test]
fn bsc_averages_groups_and_needs_two_groups() {
    let mut by_perm: BTreeMap<usize, Scores> = BTreeMap::new();
    by_perm.insert(0, scores(&[("a", 1.0), ("b", 0.0)]));
    by_perm.insert(1, scores(&[("a", 0.0), ("b", 1.0)]));
    by_perm.insert(2, scores(&[("a", 0.5), ("b", 0.0)]));
    by_perm.insert(3, scores(&[("a", 0.5), ("b", 0.2)]));
    let avg = average(&[&by_perm[&0], &by_perm[&1]]);
    assert_eq!(avg, scores(&[("a", 0.5), ("b", 0.5)]));
    let groups = group_averages(&by_perm, [0..2, 2..4]).unwrap();
    assert_eq!(groups[1], scores(&[("a", 0.5), ("b", 0.1)]));
    // Group 0 ties a and b: the pair is tied, tau 0, tau-PSI 0.5.
    let st = stability(&groups, Some(0.3)).unwrap();
    assert_eq!(st.tau_psi.tau_psi, 0.5);
    assert_eq!(st.retained_set_overlap, Some(0.5));
    // A single group: unmeasurable, not 0.
    assert!(stability(&groups[..1], None).is_none());
    assert!(group_averages(&by_perm, std::iter::once(4..6)).is_err());
}
