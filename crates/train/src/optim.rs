//! AdamW with a cosine learning-rate schedule, over candle `Var`s.
//!
//! Written here rather than taken from candle-nn because a resumable trainer
//! must save and restore the moment estimates, which candle-nn keeps private.
//! The update is decoupled AdamW (Loshchilov & Hutter) with bias correction,
//! as in PyTorch's `torch.optim.AdamW`.

use std::collections::HashMap;

use candle_core::{backprop::GradStore, DType, Tensor, Var};

use crate::checkpoint::Grads;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdamWConfig {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// Clip the global gradient norm to this value (None: no clipping).
    pub max_grad_norm: Option<f64>,
}

impl Default for AdamWConfig {
    /// SPEC.md section 5: lr 2e-4, beta2 0.95; no weight decay and clipping
    /// at 1.0 as in the Hugging Face trainer that PEFT recipes use.
    fn default() -> Self {
        AdamWConfig {
            lr: 2e-4,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            weight_decay: 0.0,
            max_grad_norm: Some(1.0),
        }
    }
}

/// Cosine decay from the peak rate to zero over `total` steps, after a
/// linear warm-up over `warmup` steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cosine {
    pub peak: f64,
    pub warmup: usize,
    pub total: usize,
}

impl Cosine {
    /// The rate of 0-based step `step`.
    pub fn lr(&self, step: usize) -> f64 {
        if step < self.warmup {
            return self.peak * (step + 1) as f64 / self.warmup as f64;
        }
        let span = self.total.saturating_sub(self.warmup).max(1) as f64;
        let t = ((step - self.warmup) as f64 / span).min(1.0);
        self.peak * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
    }
}

pub struct AdamW {
    pub cfg: AdamWConfig,
    vars: Vec<(String, Var)>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    /// Updates applied so far.
    pub t: usize,
}

/// What one update did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepInfo {
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    pub lr: f64,
}

impl AdamW {
    pub fn new(vars: Vec<(String, Var)>, cfg: AdamWConfig) -> Result<Self> {
        let m = vars
            .iter()
            .map(|(_, v)| v.zeros_like())
            .collect::<candle_core::Result<Vec<_>>>()?;
        let v = m.clone();
        Ok(AdamW {
            cfg,
            vars,
            m,
            v,
            t: 0,
        })
    }

    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    /// The global L2 norm of the gradients of the optimised variables (a
    /// variable without a gradient counts 0).
    pub fn grad_norm(&self, grads: &Grads) -> Result<f64> {
        let mut sq = 0.0;
        for (_, var) in &self.vars {
            if let Some(g) = grads.get(&var.id()) {
                sq += g
                    .to_dtype(DType::F64)?
                    .sqr()?
                    .sum_all()?
                    .to_scalar::<f64>()?;
            }
        }
        Ok(sq.sqrt())
    }

    /// One AdamW update at learning rate `lr`.
    pub fn step(&mut self, grads: &Grads, lr: f64) -> Result<StepInfo> {
        let norm = self.grad_norm(grads)?;
        if !norm.is_finite() {
            return Err(Error::Train(format!(
                "the gradient norm is {norm} at update {}: the loss diverged",
                self.t + 1
            )));
        }
        let clip = match self.cfg.max_grad_norm {
            Some(max) if norm > max => max / norm,
            _ => 1.0,
        };
        self.t += 1;
        let c = &self.cfg;
        let bc1 = 1.0 - c.beta1.powi(self.t as i32);
        let bc2 = 1.0 - c.beta2.powi(self.t as i32);
        for (i, (_, var)) in self.vars.iter().enumerate() {
            let Some(g) = grads.get(&var.id()) else {
                continue;
            };
            let g = (g * clip)?;
            let m = ((&self.m[i] * c.beta1)? + (&g * (1.0 - c.beta1))?)?;
            let v = ((&self.v[i] * c.beta2)? + (g.sqr()? * (1.0 - c.beta2))?)?;
            let mhat = (&m / bc1)?;
            let vhat = (&v / bc2)?;
            let update = (mhat / (vhat.sqrt()? + c.eps)?)?;
            let decayed = (var.as_tensor() * (1.0 - lr * c.weight_decay))?;
            var.set(&(decayed - (update * lr)?)?)?;
            self.m[i] = m;
            self.v[i] = v;
        }
        Ok(StepInfo {
            grad_norm: norm,
            lr,
        })
    }

    /// The gradients of the optimised variables in a candle `GradStore`.
    pub fn grads_of(&self, store: &GradStore) -> Grads {
        self.vars
            .iter()
            .filter_map(|(_, v)| Some((v.id(), store.get(v.as_tensor())?.clone())))
            .collect()
    }

    /// The moment estimates under `m.NAME` / `v.NAME`, to checkpoint.
    pub fn state(&self) -> HashMap<String, Tensor> {
        let mut out = HashMap::new();
        for (i, (name, _)) in self.vars.iter().enumerate() {
            out.insert(format!("m.{name}"), self.m[i].clone());
            out.insert(format!("v.{name}"), self.v[i].clone());
        }
        out
    }

    /// Restores [`AdamW::state`] and the update count.
    pub fn restore(&mut self, state: &HashMap<String, Tensor>, t: usize) -> Result<()> {
        for (i, (name, var)) in self.vars.iter().enumerate() {
            for (key, slot) in [("m", &mut self.m[i]), ("v", &mut self.v[i])] {
                let k = format!("{key}.{name}");
                let x = state
                    .get(&k)
                    .ok_or_else(|| Error::Train(format!("optimizer state lacks {k}")))?;
                *slot = x.to_dtype(var.dtype())?.to_device(var.device())?;
            }
        }
        self.t = t;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn cosine_schedule() {
        let s = Cosine {
            peak: 1.0,
            warmup: 2,
            total: 10,
        };
        assert_eq!(s.lr(0), 0.5);
        assert_eq!(s.lr(1), 1.0);
        assert_eq!(s.lr(2), 1.0);
        assert!((s.lr(6) - 0.5).abs() < 1e-12);
        assert!(s.lr(10).abs() < 1e-12);
        let s = Cosine {
            peak: 2e-4,
            warmup: 0,
            total: 4,
        };
        assert_eq!(s.lr(0), 2e-4);
    }

    /// Matches a hand-computed PyTorch AdamW step: on the first update the
    /// bias-corrected step is lr * sign(g) (up to eps), plus decoupled decay.
    #[test]
    fn first_update_is_lr_times_sign() {
        let x = Var::from_slice(&[1.0f32, -2.0, 3.0], 3, &Device::Cpu).unwrap();
        let loss = (x.as_tensor() * Tensor::new(&[2.0f32, -0.5, 0.0], &Device::Cpu).unwrap())
            .unwrap()
            .sum_all()
            .unwrap();
        let grads = loss.backward().unwrap();
        let mut opt = AdamW::new(
            vec![("x".into(), x.clone())],
            AdamWConfig {
                weight_decay: 0.1,
                max_grad_norm: None,
                ..Default::default()
            },
        )
        .unwrap();
        let grads = opt.grads_of(&grads);
        opt.step(&grads, 0.01).unwrap();
        let got = x.as_tensor().to_vec1::<f32>().unwrap();
        let want = [
            1.0 * (1.0 - 0.001) - 0.01,
            -2.0 * (1.0 - 0.001) + 0.01,
            3.0 * (1.0 - 0.001),
        ];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn state_round_trip_continues_identically() {
        let run = |split: bool| -> Vec<f32> {
            let x = Var::from_slice(&[0.5f32, -1.5], 2, &Device::Cpu).unwrap();
            let mut opt =
                AdamW::new(vec![("x".into(), x.clone())], AdamWConfig::default()).unwrap();
            for step in 0..4 {
                if split && step == 2 {
                    let state = opt.state();
                    let t = opt.t;
                    opt =
                        AdamW::new(vec![("x".into(), x.clone())], AdamWConfig::default()).unwrap();
                    opt.restore(&state, t).unwrap();
                }
                let loss = x.as_tensor().sqr().unwrap().sum_all().unwrap();
                let grads = opt.grads_of(&loss.backward().unwrap());
                opt.step(&grads, 0.1).unwrap();
            }
            x.as_tensor().to_vec1::<f32>().unwrap()
        };
        assert_eq!(run(false), run(true));
    }
}
