//! The differentiable slot readout and the training objectives of SPEC.md
//! section 5.
//!
//! A window is run as one full causal forward (prefix included, no cache:
//! the prefix's activations need gradients too) with the composite kernels;
//! the logits at the slot positions, restricted to the four grade tokens and
//! renormalised, give the student's expected grade `s = sum g p_g` on the
//! 0-3 scale.

use candle_core::{DType, Tensor, D};
use ocrank_engine::{ForwardInput, Kernels, MaskLayout};
use ocrank_score::{Mode, QueryText, Scorer};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The training objectives (SPEC.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// One view per step in the canonical order; loss on the labels.
    SingleOrder,
    /// As single-order, on labels averaged over T teacher orders (the
    /// labels file must say `orders` > 1).
    OrderAveraged,
    /// One view per step in a fresh seeded permutation.
    PermAug,
    /// Two views (canonical, seeded permutation) with the consistency term
    /// lambda * sum_c (s_A(c) - s_B(c))^2 pairing each candidate with itself.
    OcSft,
}

kebab_names!(
    Objective,
    "objective",
    SingleOrder => "single-order",
    OrderAveraged => "order-averaged",
    PermAug => "perm-aug",
    OcSft => "oc-sft",
);

/// How the supervised term compares a slot's grade distribution with its
/// label `y` on the 0-3 scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SupervisedLoss {
    /// SPEC.md section 5: `(s - y)^2` on the expected grade `s`.
    #[default]
    Squared,
    /// Cross-entropy of the grade distribution against the two-point
    /// distribution on `floor(y)` and `floor(y) + 1` whose mean is `y`
    /// ([`two_point`]). Its minimum has the same expected grade `y`, but its
    /// gradient with respect to the grade logits is `p - q`, which does not
    /// vanish when the softmax saturates on one grade; the squared error's,
    /// `2 (s - y) p_g (g - s)`, does (`reports/training/saturation/`).
    CrossEntropy,
}

impl SupervisedLoss {
    pub fn is_squared(&self) -> bool {
        *self == SupervisedLoss::Squared
    }
}

kebab_names!(
    SupervisedLoss,
    "supervised loss",
    Squared => "squared",
    CrossEntropy => "cross-entropy",
);

/// The distribution over grades 0-3 with mass only on `floor(y)` and the
/// grade above, whose mean is `y` (an integer label is one-hot). A label
/// outside [0, 3] (or not finite) is an error.
pub fn two_point(y: f64) -> Result<[f64; 4]> {
    if !(0.0..=3.0).contains(&y) {
        return Err(Error::Labels(format!(
            "grade target {y} is outside the 0-3 scale"
        )));
    }
    let lo = (y.floor() as usize).min(2);
    let up = y - lo as f64;
    let mut q = [0.0; 4];
    q[lo] = 1.0 - up;
    q[lo + 1] = up;
    Ok(q)
}

/// The full token sequence of a batched window (prefix included) with its
/// layout and slot readout rows.
pub struct WindowInput {
    pub tokens: Vec<u32>,
    pub positions: Vec<u32>,
    pub mask: MaskLayout,
    pub readout: Vec<usize>,
}

impl WindowInput {
    pub fn forward_input(&self, dropout: Option<u64>) -> ForwardInput<'_> {
        ForwardInput {
            dropout,
            ..ForwardInput::whole(&self.tokens, &self.positions, &self.mask, &self.readout)
        }
    }
}

pub fn window_input(scorer: &Scorer, q: &QueryText, texts: &[&str]) -> Result<WindowInput> {
    let decoder = &scorer.engine.decoder;
    if decoder.kernels != Kernels::Composite {
        return Err(Error::Train(
            "training needs the composite kernels (candle's fused kernels have no backward)".into(),
        ));
    }
    let seq = match scorer.cfg.mode {
        Mode::Batched => scorer.batched_sequence(q, texts)?,
        Mode::Invariant => scorer.invariant_sequence(q, texts)?,
        Mode::Pointwise => {
            return Err(Error::Train(
                "training takes batched or invariant windows; the invariant mode computes the pointwise scores in one pass per window (train with --mode invariant, score with either)".into(),
            ))
        }
    };
    let ctx = decoder.cfg.context_length;
    // Positions restart at the prefix in every invariant block, so there the
    // context bounds the longest block; a batched window's positions run on.
    let span = seq
        .positions
        .iter()
        .map(|&p| p as usize + 1)
        .max()
        .unwrap_or(0);
    if span > ctx {
        return Err(Error::Train(format!(
            "a training window reaching position {span} exceeds the model's context of {ctx}; lower --width or --max-chars"
        )));
    }
    let seq = seq.with_prefix(&q.prefix_tokens);
    Ok(WindowInput {
        tokens: seq.tokens,
        positions: seq.positions,
        mask: seq.mask,
        readout: seq.readout,
    })
}

/// Log grade distributions `[S, 4]` from slot logits `[S, vocab]`: the
/// four grade tokens, renormalised by a log-softmax built from
/// differentiable primitives (candle's fused softmax has no backward; the max
/// shift is a constant). Finite even where a probability underflows to 0.
pub fn log_probs_from_logits(logits: &Tensor, grade_ids: [u32; 4]) -> Result<Tensor> {
    let ids = Tensor::new(&grade_ids, logits.device())?;
    let g = logits.index_select(&ids, 1)?;
    let max = g.max_keepdim(D::Minus1)?.detach();
    let shifted = g.broadcast_sub(&max)?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    Ok(shifted.broadcast_sub(&lse)?)
}

/// Grade distributions `[S, 4]` from slot logits `[S, vocab]`: the
/// exponential of [`log_probs_from_logits`].
pub fn probs_from_logits(logits: &Tensor, grade_ids: [u32; 4]) -> Result<Tensor> {
    Ok(log_probs_from_logits(logits, grade_ids)?.exp()?)
}

/// `-sum_i sum_g q_g(y_i) log p_i(g)` over the slots (not divided by their
/// number), with `q` the [`two_point`] targets.
pub fn cross_entropy(log_probs: &Tensor, y: &[f64]) -> Result<Tensor> {
    let q = y
        .iter()
        .map(|&y| two_point(y))
        .collect::<Result<Vec<_>>>()?
        .concat();
    let q = Tensor::from_vec(q, (y.len(), 4), log_probs.device())?.to_dtype(log_probs.dtype())?;
    Ok((q * log_probs)?.sum_all()?.neg()?)
}

/// The student's grade distributions `[S, 4]` (f32, or f64 for an f64
/// model) for the window `texts` in this slot order, differentiable with
/// respect to the LoRA weights through one whole-graph forward (the
/// trainer uses the checkpointed form in [`crate::checkpoint`], which gives
/// the same gradients in a fraction of the memory). `dropout` seeds the
/// adapters' dropout.
pub fn grade_probs(
    scorer: &Scorer,
    q: &QueryText,
    texts: &[&str],
    dropout: Option<u64>,
) -> Result<Tensor> {
    let input = window_input(scorer, q, texts)?;
    let out = scorer
        .engine
        .decoder
        .forward(&input.forward_input(dropout))?;
    probs_from_logits(&out.logits, scorer.grade_ids())
}

/// Expected grades `[S]` on the 0-3 scale from grade distributions `[S, 4]`.
pub fn expected(probs: &Tensor) -> Result<Tensor> {
    let g = Tensor::new(&[0.0f64, 1.0, 2.0, 3.0], probs.device())?
        .to_dtype(probs.dtype())?
        .reshape((4, 1))?;
    Ok(probs.matmul(&g)?.squeeze(1)?)
}

/// The loss of one step and its parts (per slot, as in SPEC.md).
pub struct Loss {
    pub total: Tensor,
    /// The squared error of the expected grade, whatever the loss trains on
    /// (so that it compares with the constant score's).
    pub supervised: f64,
    /// The cross-entropy term, when it replaces the squared error in `total`.
    pub cross_entropy: Option<f64>,
    pub consistency: f64,
}

/// `[sum_i (s_A,i - y_i)^2 + lambda * sum_i (s_A,i - s_B,i)^2] / S`, where
/// `s_b_aligned[i]` is view B's score of view A's i-th candidate (the same
/// candidate, not the same slot). Without view B it is the single-view loss.
/// With `ce_log_probs` (view A's log grade distributions, in the order of
/// `y`) the supervised sum is [`cross_entropy`] instead of the squared
/// error; the consistency term stays on the expected grades.
pub fn objective_loss(
    s_a: &Tensor,
    y: &[f64],
    s_b_aligned: Option<&Tensor>,
    lambda: f64,
    ce_log_probs: Option<&Tensor>,
) -> Result<Loss> {
    let n = y.len();
    let ce = ce_log_probs.map(|lp| cross_entropy(lp, y)).transpose()?;
    let y = Tensor::new(y, s_a.device())?.to_dtype(s_a.dtype())?;
    let squared = (s_a - &y)?.sqr()?.sum_all()?;
    let supervised = squared.to_dtype(DType::F64)?.to_scalar::<f64>()? / n as f64;
    let cross_entropy = match &ce {
        Some(c) => Some(c.to_dtype(DType::F64)?.to_scalar::<f64>()? / n as f64),
        None => None,
    };
    let sup = ce.unwrap_or(squared);
    let (total, consistency) = match s_b_aligned {
        Some(s_b) => {
            let cons = (s_a - s_b)?.sqr()?.sum_all()?;
            let c = cons.to_dtype(DType::F64)?.to_scalar::<f64>()? / n as f64;
            ((sup + (cons * lambda)?)?, c)
        }
        None => (sup, 0.0),
    };
    Ok(Loss {
        total: (total / n as f64)?,
        supervised,
        cross_entropy,
        consistency,
    })
}

/// OC-SFT's loss when view B holds only some of view A's candidates (a
/// pool view B, see `ViewB::Pool`): the supervised term over view A's `n`
/// slots as in [`objective_loss`], plus lambda times the mean over the
/// `k` shared candidates of (s_A(c) - s_B(c))^2, where `a` and `b` hold
/// those candidates' expected grades in the two views. With all `n`
/// candidates shared this is [`objective_loss`]'s value: the per-candidate
/// weight of the consistency term does not depend on how many are shared.
pub fn objective_loss_pairs(
    s_a: &Tensor,
    y: &[f64],
    a: &Tensor,
    b: &Tensor,
    lambda: f64,
    ce_log_probs: Option<&Tensor>,
) -> Result<Loss> {
    let k = a.dim(0)?;
    if k == 0 || b.dim(0)? != k {
        return Err(Error::Train(format!(
            "the consistency term needs the same candidates in both views ({k} and {})",
            b.dim(0)?
        )));
    }
    let sup = objective_loss(s_a, y, None, 0.0, ce_log_probs)?;
    with_consistency(sup, ((a - b)?.sqr()?.sum_all()? / k as f64)?, lambda)
}

/// A single-view loss plus lambda times a consistency term, which
/// `consistency` reports.
fn with_consistency(sup: Loss, cons: Tensor, lambda: f64) -> Result<Loss> {
    let c = cons.to_dtype(DType::F64)?.to_scalar::<f64>()?;
    Ok(Loss {
        total: (sup.total + (cons * lambda)?)?,
        consistency: c,
        ..sup
    })
}

/// How OC-SFT's consistency term weighs the views' differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsistencyScale {
    /// SPEC.md section 5: `sum_i (s_A,i - s_B,i)^2 / S`, on the 0-3 scale.
    #[default]
    Absolute,
    /// Beyond SPEC.md: the same mean squared difference divided by the
    /// window's score spread, [`spread_consistency`]. Scaling every score's
    /// deviation from its window's mean by c leaves it unchanged, so,
    /// unlike the absolute term, it is not lowered by pulling a window's
    /// scores towards one shared window grade (the way the width-2 and
    /// width-4 students met the absolute term: `reports/training/width4/`).
    Spread,
}

impl ConsistencyScale {
    pub fn is_absolute(&self) -> bool {
        *self == ConsistencyScale::Absolute
    }

    /// The spread floor a run with this term gets unless it sets one:
    /// [`SPREAD_FLOOR`] for the spread term; for the absolute term, which has
    /// no floor, [`LEGACY_SPREAD_FLOOR`], the value train.json leaves out,
    /// so that its settings read as they did before the floor was recorded.
    pub fn default_floor(self) -> f64 {
        match self {
            ConsistencyScale::Spread => SPREAD_FLOOR,
            ConsistencyScale::Absolute => LEGACY_SPREAD_FLOOR,
        }
    }
}

kebab_names!(
    ConsistencyScale,
    "consistency scale",
    Absolute => "absolute",
    Spread => "spread",
);

/// The default floor of [`spread_consistency`]'s denominator, on the
/// variance scale of the 0-3 grades: small enough that the term stays
/// scale-free for the width-4 students (their scores vary within a window by
/// a standard deviation of about 0.02, variance 0.0005), large enough that a
/// window whose scores all agree gives a finite term and gradient.
/// `reports/training/width4/` measured the old default, [`LEGACY_SPREAD_FLOOR`],
/// to make the term nearly SPEC.md's absolute one times 1 / 0.01, and this
/// floor to give the first consistency term that beats perm-aug there.
pub const SPREAD_FLOOR: f64 = 1e-5;

/// The floor of runs from before [`SPREAD_FLOOR`] became the default (0.01):
/// a `train.json` without `spread_floor` ran at this floor.
pub const LEGACY_SPREAD_FLOOR: f64 = 0.01;

/// `mean_i (a_i - b_i)^2 / ((var(a) + var(b)) / 2 + floor)`: the
/// views' mean squared difference per candidate (`b` aligned to `a`'s
/// candidates) relative to the window's spread, with `var` the population
/// variance of a view's scores over the window. Dimensionless; both views
/// carry gradients, through the denominator too. Composite ops only.
pub fn spread_consistency(a: &Tensor, b: &Tensor, floor: f64) -> Result<Tensor> {
    if !(floor > 0.0 && floor.is_finite()) {
        return Err(Error::Train(format!(
            "the spread floor must be a positive number, not {floor}"
        )));
    }
    let n = a.dim(0)?;
    if n < 2 || b.dim(0)? != n {
        return Err(Error::Train(format!(
            "the spread-scaled consistency term needs two views of the same window of at least 2 candidates ({n} and {})",
            b.dim(0)?
        )));
    }
    let var = |t: &Tensor| -> candle_core::Result<Tensor> {
        let m = t.mean_all()?;
        t.broadcast_sub(&m)?.sqr()?.mean_all()
    };
    let diff = (a - b)?.sqr()?.mean_all()?;
    let spread = (((var(a)? + var(b)?)? * 0.5)? + floor)?;
    Ok((diff / spread)?)
}

/// OC-SFT's loss with the spread-scaled consistency term: the supervised
/// term over view A's slots as in [`objective_loss`], plus lambda times
/// [`spread_consistency`] of the two views (`s_b_aligned[i]` is view B's
/// score of view A's i-th candidate). `consistency` reports the
/// dimensionless ratio.
pub fn objective_loss_spread(
    s_a: &Tensor,
    y: &[f64],
    s_b_aligned: &Tensor,
    lambda: f64,
    floor: f64,
    ce_log_probs: Option<&Tensor>,
) -> Result<Loss> {
    let sup = objective_loss(s_a, y, None, 0.0, ce_log_probs)?;
    with_consistency(sup, spread_consistency(s_a, s_b_aligned, floor)?, lambda)
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::*;

    /// With every candidate shared the pair loss is SPEC.md's OC-SFT loss;
    /// with one shared candidate its consistency is that candidate's
    /// squared difference, at the same per-candidate weight.
    #[test]
    fn pair_loss_is_oc_sft_loss_on_the_shared_candidates() {
        let dev = Device::Cpu;
        let s_a = Tensor::new(&[1.0f64, 2.0, 0.5], &dev).unwrap();
        let s_b = Tensor::new(&[1.5f64, 1.0, 0.5], &dev).unwrap();
        let y = [1.0, 2.5, 0.0];
        let scalar = |t: &Tensor| t.to_scalar::<f64>().unwrap();
        let full = objective_loss(&s_a, &y, Some(&s_b), 2.0, None).unwrap();
        let pairs = objective_loss_pairs(&s_a, &y, &s_a, &s_b, 2.0, None).unwrap();
        assert!((scalar(&full.total) - scalar(&pairs.total)).abs() < 1e-12);
        assert!((full.consistency - pairs.consistency).abs() < 1e-12);
        assert_eq!(full.supervised, pairs.supervised);
        let one = objective_loss_pairs(
            &s_a,
            &y,
            &s_a.narrow(0, 0, 1).unwrap(),
            &s_b.narrow(0, 0, 1).unwrap(),
            2.0,
            None,
        )
        .unwrap();
        let sup = (0.0 + 0.25 + 0.25) / 3.0;
        assert!((scalar(&one.total) - (sup + 2.0 * 0.25)).abs() < 1e-12);
        assert!((one.consistency - 0.25).abs() < 1e-12);
        let empty = Tensor::zeros(0, DType::F64, &dev).unwrap();
        assert!(objective_loss_pairs(&s_a, &y, &empty, &empty, 2.0, None).is_err());
    }

    /// The spread-scaled term: its value by hand, its invariance to scaling
    /// the deviations from the window mean (where the absolute term falls
    /// by c^2), and its gradient for both views against finite differences.
    #[test]
    fn spread_consistency_is_scale_free_and_its_gradient_is_right() {
        let dev = Device::Cpu;
        let a = [1.0f64, 2.0, 0.5, 1.5];
        let b = [1.2f64, 1.6, 0.5, 1.9];
        let t = |v: &[f64]| Tensor::new(v, &dev).unwrap();
        let scalar = |t: &Tensor| t.to_scalar::<f64>().unwrap();
        let var = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64
        };
        let msd = |a: &[f64], b: &[f64]| {
            a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64
        };
        let diff = msd(&a, &b);
        let want = diff / ((var(&a) + var(&b)) / 2.0 + SPREAD_FLOOR);
        let got = scalar(&spread_consistency(&t(&a), &t(&b), SPREAD_FLOOR).unwrap());
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        // Pull both views towards one window grade g (deviations times c):
        // the absolute term falls by c^2, the spread-scaled one only by the
        // floor's share.
        let g = 1.0;
        let c = 0.2;
        let shrink = |v: &[f64]| v.iter().map(|x| g + c * (x - g)).collect::<Vec<_>>();
        let (sa, sb) = (shrink(&a), shrink(&b));
        assert!((msd(&sa, &sb) - c * c * diff).abs() < 1e-12);
        let shrunk = scalar(&spread_consistency(&t(&sa), &t(&sb), SPREAD_FLOOR).unwrap());
        let unfloored = diff / ((var(&a) + var(&b)) / 2.0);
        let want = c * c * diff / (c * c * (var(&a) + var(&b)) / 2.0 + SPREAD_FLOOR);
        assert!((shrunk - want).abs() < 1e-12);
        assert!(shrunk > 0.3 * unfloored, "{shrunk} vs {unfloored}");
        // Gradient for both views against central finite differences.
        let va = Var::new(&a, &dev).unwrap();
        let vb = Var::new(&b, &dev).unwrap();
        let grads = spread_consistency(va.as_tensor(), vb.as_tensor(), SPREAD_FLOOR)
            .unwrap()
            .backward()
            .unwrap();
        let f =
            |a: &[f64], b: &[f64]| scalar(&spread_consistency(&t(a), &t(b), SPREAD_FLOOR).unwrap());
        let h = 1e-6;
        for (view, var) in [(0, &va), (1, &vb)] {
            let g = grads
                .get(var.as_tensor())
                .unwrap()
                .to_vec1::<f64>()
                .unwrap();
            for i in 0..4 {
                let (mut ap, mut am, mut bp, mut bm) =
                    (a.to_vec(), a.to_vec(), b.to_vec(), b.to_vec());
                if view == 0 {
                    ap[i] += h;
                    am[i] -= h;
                } else {
                    bp[i] += h;
                    bm[i] -= h;
                }
                let fd = (f(&ap, &bp) - f(&am, &bm)) / (2.0 * h);
                assert!(g[i].abs() > 1e-6, "view {view} slot {i}: zero gradient");
                assert!(
                    (g[i] - fd).abs() < 1e-6,
                    "view {view} slot {i}: {} vs {fd}",
                    g[i]
                );
            }
        }
        // The loss adds lambda times the ratio to the supervised term.
        let y = [1.0, 2.5, 0.0, 1.0];
        let l = objective_loss_spread(&t(&a), &y, &t(&b), 2.0, SPREAD_FLOOR, None).unwrap();
        let sup = objective_loss(&t(&a), &y, None, 0.0, None).unwrap();
        let ratio = scalar(&spread_consistency(&t(&a), &t(&b), SPREAD_FLOOR).unwrap());
        assert!((scalar(&l.total) - (scalar(&sup.total) + 2.0 * ratio)).abs() < 1e-12);
        assert_eq!(l.consistency, ratio);
        assert!(spread_consistency(&t(&a[..1]), &t(&b[..1]), SPREAD_FLOOR).is_err());
        assert!(spread_consistency(&t(&a), &t(&b[..3]), SPREAD_FLOOR).is_err());
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(spread_consistency(&t(&a), &t(&b), bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn two_point_targets_have_the_label_as_mean() {
        assert_eq!(two_point(0.0).unwrap(), [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(two_point(3.0).unwrap(), [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(two_point(1.25).unwrap(), [0.0, 0.75, 0.25, 0.0]);
        for y in [0.0, 0.4, 1.0, 1.9, 2.5, 2.999, 3.0] {
            let q = two_point(y).unwrap();
            let mean: f64 = q.iter().enumerate().map(|(g, p)| g as f64 * p).sum();
            assert!((mean - y).abs() < 1e-12, "{y}: {q:?}");
            assert!((q.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        for bad in [-0.1, 3.1, f64::NAN] {
            assert!(two_point(bad).is_err(), "{bad}");
        }
    }

    /// The cross-entropy's gradient with respect to the grade logits is
    /// p - q, also where the softmax is saturated, while the squared error's
    /// nearly vanishes there: the reason for the option.
    #[test]
    fn cross_entropy_gradient_is_p_minus_q_and_survives_saturation() {
        let dev = Device::Cpu;
        // Two slots over a 6-token vocabulary; grade tokens 2..=5. Slot 2 is
        // saturated on grade 1 (logit gap 30).
        let logits = Var::from_vec(
            vec![
                0.0f64, 0.0, 0.5, -1.0, 2.0, 0.3, 0.0, 0.0, 0.0, 30.0, 0.0, 0.0,
            ],
            (2, 6),
            &dev,
        )
        .unwrap();
        let ids = [2u32, 3, 4, 5];
        let y = [2.4, 2.0];
        let lp = log_probs_from_logits(logits.as_tensor(), ids).unwrap();
        let g = cross_entropy(&lp, &y).unwrap().backward().unwrap();
        let grad = g.get(logits.as_tensor()).unwrap().to_vec2::<f64>().unwrap();
        let p = lp.exp().unwrap().to_vec2::<f64>().unwrap();
        for (i, &yi) in y.iter().enumerate() {
            let q = two_point(yi).unwrap();
            assert_eq!(grad[i][..2], [0.0, 0.0], "non-grade tokens");
            for k in 0..4 {
                assert!((grad[i][2 + k] - (p[i][k] - q[k])).abs() < 1e-12);
            }
        }
        // Saturated slot: cross-entropy still pulls with about 1 towards
        // grade 2; the squared error of the expected grade with about 1e-13.
        assert!(grad[1][4] < -0.99);
        let probs = probs_from_logits(logits.as_tensor(), ids).unwrap();
        let s = expected(&probs).unwrap();
        let target = Tensor::new(&y, &dev).unwrap();
        let sq = (s - target).unwrap().sqr().unwrap().sum_all().unwrap();
        let g = sq.backward().unwrap();
        let grad = g.get(logits.as_tensor()).unwrap().to_vec2::<f64>().unwrap();
        assert!(grad[1].iter().all(|v| v.abs() < 1e-10), "{:?}", grad[1]);
        // log_probs_from_logits stays finite where probs underflow.
        let far = Tensor::new(&[[0.0f32, 0.0, 0.0, 200.0, 0.0, 0.0]], &dev).unwrap();
        let lp = log_probs_from_logits(&far, ids)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        assert!(lp[0].iter().all(|v| v.is_finite()), "{lp:?}");
        assert_eq!(
            probs_from_logits(&far, ids)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap()[0][0],
            0.0
        );
    }
}
