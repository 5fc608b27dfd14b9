//! Isotonic calibration of a teacher score to an expected grade.
//!
//! A teacher (for example the cosine of the sentence encoder in
//! `ocrank-engine`) orders candidates well but its scale means nothing: a
//! cosine of 0.6 is not a grade. Training labels need the expected 0-3
//! grade, so we fit the best non-decreasing map from score to grade on
//! judged pairs (isotonic regression, by pool-adjacent-violators). It
//! assumes only that a higher score never means a lower expected grade, so it
//! keeps the teacher's order and imposes no curve shape such as a sigmoid.
//!
//! The fit is a step function over blocks of adjacent points. Each block
//! becomes one knot: x is the mean of its inputs (each point counts once), y
//! the mean of its targets. [`Isotonic::predict`] interpolates linearly
//! between knots, which keeps the map monotone and continuous, and is
//! constant beyond the first and last knot (no extrapolation past the data).

use serde::{Deserialize, Serialize};

/// A fitted non-decreasing map: knots with strictly increasing `x` and
/// non-decreasing `y`, as [`fit`] returns them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isotonic {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// A block of pooled points: its size and the means of its inputs and targets.
#[derive(Clone, Copy)]
struct Block {
    n: f64,
    x: f64,
    y: f64,
}

impl Block {
    /// Means combined as weighted averages of the two means, never as sums,
    /// so that no intermediate overflows for finite inputs.
    fn merge(self, o: Block) -> Block {
        let n = self.n + o.n;
        let (a, b) = (self.n / n, o.n / n);
        Block {
            n,
            x: self.x * a + o.x * b,
            y: self.y * a + o.y * b,
        }
    }
}

/// Fits the isotonic (non-decreasing) regression of `y` on `x` for
/// `(x, y)` points, by pool-adjacent-violators in O(n log n).
///
/// Points with equal `x` are pooled first (one block, their mean target), so
/// a tie is never split into a decreasing step. Points with a non-finite
/// coordinate (NaN or infinite) are left out: a NaN teacher score (the
/// encoder's cosine of an undefined pair) has no place on the axis, and one
/// such point must not poison every knot. `None` when no finite point is left.
pub fn fit(points: &[(f64, f64)]) -> Option<Isotonic> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if pts.is_empty() {
        return None;
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));

    let mut stack: Vec<Block> = Vec::new();
    let mut i = 0;
    while i < pts.len() {
        // One block per distinct x: the ties pooled.
        let x = pts[i].0;
        let mut block = Block {
            n: 1.0,
            x,
            y: pts[i].1,
        };
        i += 1;
        while i < pts.len() && pts[i].0 == x {
            block = block.merge(Block {
                n: 1.0,
                x,
                y: pts[i].1,
            });
            block.x = x; // exact, not a rounded mean of equal values
            i += 1;
        }
        // Pool backwards while the previous block's mean is above this one's.
        while let Some(&prev) = stack.last() {
            if prev.y > block.y {
                block = prev.merge(block);
                stack.pop();
            } else {
                break;
            }
        }
        stack.push(block);
    }
    Some(Isotonic {
        x: stack.iter().map(|b| b.x).collect(),
        y: stack.iter().map(|b| b.y).collect(),
    })
}

impl Isotonic {
    /// The expected target at `x`: linear between the two knots around it,
    /// the first (last) knot's `y` at or before the first (after the last)
    /// knot. NaN for a NaN `x`, or when there is no knot (only a deserialized
    /// value can be empty; extra entries of the longer of `x` and `y` are
    /// ignored there). Never panics.
    pub fn predict(&self, x: f64) -> f64 {
        let n = self.x.len().min(self.y.len());
        if n == 0 || x.is_nan() {
            return f64::NAN;
        }
        let (kx, ky) = (&self.x[..n], &self.y[..n]);
        if x <= kx[0] {
            return ky[0];
        }
        if x >= kx[n - 1] {
            return ky[n - 1];
        }
        // First knot strictly right of x: 1..n-1 here, as kx[0] < x < kx[n-1].
        let i = kx.partition_point(|&k| k <= x).clamp(1, n - 1);
        let (x0, x1, y0, y1) = (kx[i - 1], kx[i], ky[i - 1], ky[i]);
        if x1 <= x0 {
            return y1;
        }
        let t = (x - x0) / (x1 - x0);
        // Kept within [y0, y1] so rounding cannot make the map dip between
        // segments (max/min instead of clamp, which would panic if y0 > y1).
        (y0 + (y1 - y0) * t).max(y0).min(y1)
    }
}
