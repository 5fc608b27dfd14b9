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
use ocrank_score::{QueryText, Scorer};
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

impl std::str::FromStr for Objective {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "single-order" => Ok(Objective::SingleOrder),
            "order-averaged" => Ok(Objective::OrderAveraged),
            "perm-aug" => Ok(Objective::PermAug),
            "oc-sft" => Ok(Objective::OcSft),
            _ => Err(format!(
                "unknown objective {s:?} (single-order, order-averaged, perm-aug, oc-sft)"
            )),
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Objective::SingleOrder => "single-order",
            Objective::OrderAveraged => "order-averaged",
            Objective::PermAug => "perm-aug",
            Objective::OcSft => "oc-sft",
        })
    }
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
    let seq = scorer
        .batched_sequence(q, texts)?
        .with_prefix(&q.prefix_tokens);
    let n = seq.tokens.len();
    let ctx = decoder.cfg.context_length;
    if n > ctx {
        return Err(Error::Train(format!(
            "a training window of {n} tokens exceeds the model's context of {ctx}; lower --width or --max-chars"
        )));
    }
    Ok(WindowInput {
        tokens: seq.tokens,
        positions: seq.positions,
        mask: seq.mask,
        readout: seq.readout,
    })
}

/// Grade distributions `[S, 4]` from slot logits `[S, vocab]`: the four
/// grade tokens, renormalised by a softmax built from differentiable
/// primitives (candle's fused one has no backward; the max shift is a
/// constant).
pub fn probs_from_logits(logits: &Tensor, grade_ids: [u32; 4]) -> Result<Tensor> {
    let ids = Tensor::new(&grade_ids, logits.device())?;
    let g = logits.index_select(&ids, 1)?;
    let max = g.max_keepdim(D::Minus1)?.detach();
    let e = g.broadcast_sub(&max)?.exp()?;
    Ok(e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?)
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
    pub supervised: f64,
    pub consistency: f64,
}

/// `[sum_i (s_A,i - y_i)^2 + lambda * sum_i (s_A,i - s_B,i)^2] / S`, where
/// `s_b_aligned[i]` is view B's score of view A's i-th candidate (the same
/// candidate, not the same slot). Without view B it is the single-view loss.
pub fn objective_loss(
    s_a: &Tensor,
    y: &[f64],
    s_b_aligned: Option<&Tensor>,
    lambda: f64,
) -> Result<Loss> {
    let n = y.len();
    let y = Tensor::new(y, s_a.device())?.to_dtype(s_a.dtype())?;
    let sup = (s_a - &y)?.sqr()?.sum_all()?;
    let supervised = sup.to_dtype(DType::F64)?.to_scalar::<f64>()? / n as f64;
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
        consistency,
    })
}
