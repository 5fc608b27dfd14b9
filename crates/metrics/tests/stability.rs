//! tau-PSI and order spread: the anchor values of SPEC.md section 3.

use ocrank_metrics::stability::{kendall_tau_a, summarize, tau_psi};
use ocrank_metrics::Scores;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn scores(values: &[f64]) -> Scores {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| (format!("d{i}"), v))
        .collect()
}

fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// n distinct scores in a random order.
fn distinct_scores() -> impl Strategy<Value = Vec<f64>> {
    (2usize..60).prop_flat_map(|n| {
        Just((0..n).map(|i| i as f64 / n as f64).collect::<Vec<_>>()).prop_shuffle()
    })
}

proptest! {
    #[test]
    fn identical_rankings_give_zero(values in distinct_scores(), m in 2usize..6) {
        let perms: Vec<Scores> = (0..m).map(|_| scores(&values)).collect();
        let t = tau_psi(&perms).unwrap();
        prop_assert_eq!(t.tau_psi, 0.0);
        prop_assert_eq!(t.tied_share, 0.0);
        prop_assert_eq!(t.permutation_pairs, m * (m - 1) / 2);
    }

    #[test]
    fn reversed_pair_gives_one(values in distinct_scores()) {
        let reversed: Vec<f64> = values.iter().map(|v| 1.0 - v).collect();
        let t = tau_psi(&[scores(&values), scores(&reversed)]).unwrap();
        prop_assert_eq!(t.tau_psi, 1.0);
        prop_assert_eq!(t.mean_tau, -1.0);
    }

    #[test]
    fn constant_scorer_gives_exactly_half_with_all_pairs_tied(n in 2usize..80, c in 0.0f64..1.0, m in 2usize..6) {
        let perms: Vec<Scores> = (0..m).map(|_| scores(&vec![c; n])).collect();
        let t = tau_psi(&perms).unwrap();
        prop_assert_eq!(t.tau_psi, 0.5);
        prop_assert_eq!(t.tied_share, 1.0);
    }

    #[test]
    fn independent_random_scores_give_about_half(seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let perms: Vec<Scores> = (0..10)
            .map(|_| scores(&(0..100).map(|_| uniform(&mut rng)).collect::<Vec<_>>()))
            .collect();
        let t = tau_psi(&perms).unwrap();
        prop_assert!((t.tau_psi - 0.5).abs() < 0.03, "{}", t.tau_psi);
    }

    #[test]
    fn tau_is_symmetric_and_bounded(a in prop::collection::vec(0u8..5, 2..40), seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let a: Vec<f64> = a.into_iter().map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|_| (rng.next_u32() % 5) as f64).collect();
        let ab = kendall_tau_a(&a, &b).unwrap();
        let ba = kendall_tau_a(&b, &a).unwrap();
        prop_assert_eq!(ab, ba);
        prop_assert!(ab.tau.abs() <= 1.0 - ab.tied_share + 1e-12);
    }
}

#[test]
fn only_shared_candidates_count() {
    let a: Scores = [("x", 1.0), ("y", 2.0), ("z", 3.0)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    // w is not in a; over the shared x, y, z the order is reversed.
    let b: Scores = [("x", 3.0), ("y", 2.0), ("z", 1.0), ("w", 9.0)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(tau_psi(&[a, b]).unwrap().tau_psi, 1.0);
}

#[test]
fn one_permutation_is_unmeasurable_not_zero() {
    assert!(tau_psi(&[scores(&[0.1, 0.2])]).is_none());
    assert!(tau_psi::<Scores>(&[]).is_none());
}

#[test]
fn half_tied_pair() {
    // a: 1 < 2 < 3; b: 1 = 1 < 3. Pairs: (0,1) tied, (0,2) concordant, (1,2) concordant.
    let t = kendall_tau_a(&[1.0, 2.0, 3.0], &[1.0, 1.0, 3.0]).unwrap();
    assert!((t.tau - 2.0 / 3.0).abs() < 1e-12);
    assert!((t.tied_share - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn order_spread_is_mean_minus_worst() {
    let s = summarize(&[0.6, 0.5, 0.7, 0.2]).unwrap();
    assert_eq!(s.canonical, 0.6);
    assert!((s.mean - 0.5).abs() < 1e-12);
    assert_eq!(s.worst, 0.2);
    assert_eq!(s.best, 0.7);
    assert!((s.order_spread - 0.3).abs() < 1e-12);
    assert!(summarize(&[]).is_none());
}
