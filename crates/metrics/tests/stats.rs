//! Bootstrap and Holm.

use ocrank_metrics::stats::{bootstrap_mean, holm, paired_bootstrap, quantile_sorted, Bootstrap};
use proptest::prelude::*;

#[test]
fn holm_wikipedia_example() {
    // Wikipedia, "Holm-Bonferroni method": p = 0.01, 0.04, 0.03, 0.005 at
    // alpha 0.05 rejects H1 and H4 only. Adjusted: 0.03, 0.06, 0.06, 0.02.
    let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
    let expected = [0.03, 0.06, 0.06, 0.02];
    for (a, e) in adj.iter().zip(expected) {
        assert!((a - e).abs() < 1e-12, "{adj:?}");
    }
    let rejected: Vec<bool> = adj.iter().map(|&p| p <= 0.05).collect();
    assert_eq!(rejected, [true, false, false, true]);
    // Monotone and capped at 1.
    assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
    assert!(holm(&[]).is_empty());
}

#[test]
fn quantile_interpolates() {
    let v = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(quantile_sorted(&v, 0.0), 1.0);
    assert_eq!(quantile_sorted(&v, 0.5), 3.0);
    assert_eq!(quantile_sorted(&v, 0.125), 1.5);
    assert_eq!(quantile_sorted(&v, 1.0), 5.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn interval_contains_the_mean_and_is_reproducible(
        values in prop::collection::vec(0.0f64..1.0, 5..60),
        seed: u64,
    ) {
        let cfg = Bootstrap { resamples: 2_000, seed, level: 0.95 };
        let iv = bootstrap_mean(&values, cfg).unwrap();
        prop_assert!(iv.low <= iv.estimate && iv.estimate <= iv.high, "{iv:?}");
        prop_assert_eq!(iv, bootstrap_mean(&values, cfg).unwrap());
    }
}

#[test]
fn default_bootstrap_is_10000_resamples_and_seeded() {
    let values: Vec<f64> = (0..43).map(|i| ((i * 37) % 11) as f64 / 10.0).collect();
    let cfg = Bootstrap::default();
    assert_eq!(cfg.resamples, 10_000);
    let a = bootstrap_mean(&values, cfg).unwrap();
    assert_eq!(a, bootstrap_mean(&values, cfg).unwrap());
    let b = bootstrap_mean(&values, Bootstrap { seed: 1, ..cfg }).unwrap();
    assert_ne!((a.low, a.high), (b.low, b.high));
    assert!(a.low < a.estimate && a.estimate < a.high);
}

#[test]
fn paired_difference() {
    let a: Vec<f64> = (0..30).map(|i| (i % 7) as f64 / 7.0).collect();
    let b: Vec<f64> = a.iter().map(|x| x - 0.1).collect();
    let d = paired_bootstrap(&a, &b, Bootstrap::default()).unwrap();
    // A constant shift: every resample gives the same difference.
    assert!((d.estimate - 0.1).abs() < 1e-12);
    assert!((d.low - 0.1).abs() < 1e-9 && (d.high - 0.1).abs() < 1e-9);
    assert!(d.p_value < 0.001, "{d:?}");
    let same = paired_bootstrap(&a, &a, Bootstrap::default()).unwrap();
    assert_eq!(same.estimate, 0.0);
    assert_eq!(same.p_value, 1.0);
    // A noisy difference around 0 is not significant.
    let c: Vec<f64> = a
        .iter()
        .enumerate()
        .map(|(i, x)| if i % 2 == 0 { x + 0.05 } else { x - 0.05 })
        .collect();
    let n = paired_bootstrap(&c, &a, Bootstrap::default()).unwrap();
    assert!(n.low <= 0.0 && 0.0 <= n.high && n.p_value > 0.3, "{n:?}");
}
