//! Uncertainty: seeded percentile bootstrap over queries, paired differences,
//! and Holm's step-down adjustment (SPEC.md section 3).
//!
//! Resampling draws query indices uniformly with replacement from
//! `ChaCha20Rng::seed_from_u64(seed)` through the unbiased
//! [`ocrank_plan::bounded`] draw, so intervals are reproducible for a seed on
//! any platform. Intervals are percentile intervals: the (1-level)/2 and
//! (1+level)/2 quantiles of the resampled means, with linear interpolation
//! between order statistics (type 7 of Hyndman and Fan, numpy's default).

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

/// Default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// Bootstrap settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    pub resamples: usize,
    pub seed: u64,
    /// Coverage of the interval, 0.95 by default.
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            resamples: DEFAULT_RESAMPLES,
            seed: 0,
            level: 0.95,
        }
    }
}

/// A mean with its bootstrap percentile interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// Number of queries.
    pub n: usize,
}

/// A paired difference mean(a - b) with interval and two-sided p-value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// Two-sided bootstrap p-value for "no difference":
    /// min(1, 2 min((#{d* <= 0} + 1) / (R + 1), (#{d* >= 0} + 1) / (R + 1)))
    /// over the R resampled mean differences d*.
    pub p_value: f64,
    pub n: usize,
}

/// Quantile `q` in [0, 1] of sorted values, linear interpolation (type 7).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of no values");
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The sorted means of `resamples` bootstrap resamples of `values`.
pub fn resampled_means(values: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
    let n = values.len();
    assert!(n > 0, "bootstrap of no values");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let mut sum = 0.0;
            for _ in 0..n {
                sum += values[ocrank_plan::bounded(&mut rng, n as u64) as usize];
            }
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    means
}

/// Bootstrap percentile interval of the mean of per-query values. `None` for
/// no values.
pub fn bootstrap_mean(values: &[f64], cfg: Bootstrap) -> Option<Interval> {
    let estimate = crate::mean(values)?;
    if cfg.resamples == 0 {
        return Some(Interval {
            estimate,
            low: estimate,
            high: estimate,
            n: values.len(),
        });
    }
    let means = resampled_means(values, cfg.resamples, cfg.seed);
    let alpha = 1.0 - cfg.level;
    Some(Interval {
        estimate,
        low: quantile_sorted(&means, alpha / 2.0),
        high: quantile_sorted(&means, 1.0 - alpha / 2.0),
        n: values.len(),
    })
}

/// Paired bootstrap of mean(a - b) over queries (`a[i]`, `b[i]` belong to the
/// same query). `None` for no values.
///
/// # Panics
/// If the lengths differ.
pub fn paired_bootstrap(a: &[f64], b: &[f64], cfg: Bootstrap) -> Option<PairedDifference> {
    assert_eq!(
        a.len(),
        b.len(),
        "paired bootstrap needs equally many values"
    );
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let estimate = crate::mean(&diffs)?;
    let r = cfg.resamples;
    if r == 0 {
        return Some(PairedDifference {
            estimate,
            low: estimate,
            high: estimate,
            p_value: 1.0,
            n: diffs.len(),
        });
    }
    let means = resampled_means(&diffs, r, cfg.seed);
    let alpha = 1.0 - cfg.level;
    let at_most_zero = means.iter().filter(|&&d| d <= 0.0).count();
    let at_least_zero = means.iter().filter(|&&d| d >= 0.0).count();
    let tail = |c: usize| (c + 1) as f64 / (r + 1) as f64;
    Some(PairedDifference {
        estimate,
        low: quantile_sorted(&means, alpha / 2.0),
        high: quantile_sorted(&means, 1.0 - alpha / 2.0),
        p_value: (2.0 * tail(at_most_zero).min(tail(at_least_zero))).min(1.0),
        n: diffs.len(),
    })
}

/// Holm's step-down adjusted p-values, in the input order: with the p-values
/// sorted ascending p(1) <= .. <= p(m), adj(i) = max over j <= i of
/// min(1, (m - j + 1) p(j)). Reject H(i) at level alpha iff adj(i) <= alpha.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]).then(i.cmp(&j)));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let adj = ((m - rank) as f64 * p_values[i]).min(1.0);
        running = running.max(adj);
        adjusted[i] = running;
    }
    adjusted
}
