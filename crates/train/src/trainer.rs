//! The training loop: seeded, checkpointed, resumable.
//!
//! Everything a step does is a function of (seed, step): which window it
//! trains on (a seeded shuffle per epoch), the permutation of each view and
//! the dropout masks. A checkpoint therefore only needs the adapter, the
//! optimizer's moments (and the EMA teacher), and a run killed at any point
//! resumes from its last checkpoint to the same weights as a run that was
//! never interrupted.
//!
//! Directory layout of a run (`out`):
//! - `train.json`: the settings; a rerun with other settings is refused,
//! - `log.jsonl`: one line per step (loss, its parts, lambda, lr, gradient
//!   norm, seconds, the window),
//! - `checkpoints/step-NNNNNN/`: PEFT adapter + `optimizer.safetensors` +
//!   `state.json`, written to a temporary directory and renamed (atomic),
//! - `adapter/`: the final adapter (PEFT layout).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Tensor};
use ocrank_engine::LoraConfig;
use ocrank_score::{Mode, QueryText, Scorer};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{self, Grads};
use crate::data::Example;
use crate::error::{Error, Result};
use crate::loss::{
    expected, log_probs_from_logits, objective_loss, objective_loss_pairs, objective_loss_spread,
    two_point, window_input, ConsistencyScale, Objective, SupervisedLoss, LEGACY_SPREAD_FLOOR,
};
use crate::optim::{AdamW, AdamWConfig, Cosine};

/// EMA mean-teacher: an exponential moving average of the adapter scores a
/// fresh permutation of the window (no gradient); the student's view A is
/// pulled towards it with `weight`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EmaConfig {
    pub decay: f64,
    pub weight: f64,
}

/// Where OC-SFT's view A comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViewA {
    /// Issue 5's protocol: the window in its canonical (first-stage) order,
    /// the order single-order training reads.
    #[default]
    Canonical,
    /// The window in a fresh seeded order at every step: the very view A of
    /// perm-aug under the same seed (same windows, same orders, same
    /// dropout), so that OC-SFT with it differs from perm-aug by the
    /// consistency term alone. SPEC.md section 5 allows it ("two
    /// permutations of the same window").
    Permuted,
}

impl ViewA {
    fn is_canonical(&self) -> bool {
        *self == ViewA::Canonical
    }
}

kebab_names!(
    ViewA,
    "view A",
    Canonical => "canonical",
    Permuted => "permuted",
);

/// Where OC-SFT's view B comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViewB {
    /// SPEC.md section 5: a seeded permutation of the same window. Every
    /// candidate keeps its window-mates and changes only its slot.
    #[default]
    Window,
    /// A window of the same pool that keeps half of view A's candidates (at
    /// least one) and fills its other slots with other candidates of the
    /// pool, in a seeded order. The kept candidates change their
    /// window-mates as well as their slots, as they do when a reshuffled
    /// pool is cut into windows; the consistency term pairs each kept
    /// candidate with itself. At a width equal to the depth (one window per
    /// pool) no other candidates exist and SPEC.md's view B is the only one.
    Pool,
}

impl ViewB {
    fn is_window(&self) -> bool {
        *self == ViewB::Window
    }
}

kebab_names!(
    ViewB,
    "view B",
    Window => "window",
    Pool => "pool",
);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub objective: Objective,
    pub steps: usize,
    /// OC-SFT consistency weight.
    pub lambda: f64,
    /// Steps over which lambda rises linearly from 0.
    pub lambda_warmup: usize,
    pub lora: LoraConfig,
    pub optim: AdamWConfig,
    /// Learning-rate warm-up steps before the cosine decay.
    pub lr_warmup: usize,
    pub seed: u64,
    /// Save a checkpoint every N steps (and always after the last step).
    pub checkpoint_every: usize,
    pub ema: Option<EmaConfig>,
    /// Weight of KL(base || student) over the grade distributions of view A.
    pub kl_base: Option<f64>,
    /// Windows per optimizer update (gradient accumulation): the step's loss
    /// and gradient are the mean over this many windows, each with its own
    /// views and dropout. Left out of the settings when 1, so that runs from
    /// before this field still resume.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub windows_per_step: usize,
    /// The supervised term: SPEC.md's squared error (left out of the
    /// settings, so older runs still resume) or the two-point cross-entropy.
    #[serde(default, skip_serializing_if = "SupervisedLoss::is_squared")]
    pub supervised_loss: SupervisedLoss,
    /// OC-SFT's view B (left out of the settings when it is SPEC.md's
    /// window permutation, so older runs still resume).
    #[serde(default, skip_serializing_if = "ViewB::is_window")]
    pub view_b: ViewB,
    /// OC-SFT's view A (left out of the settings when canonical, so older
    /// runs still resume).
    #[serde(default, skip_serializing_if = "ViewA::is_canonical")]
    pub view_a: ViewA,
    /// OC-SFT's consistency term: SPEC.md's absolute squared difference
    /// (left out of the settings, so older runs still resume) or the
    /// spread-scaled one (beyond SPEC.md).
    #[serde(default, skip_serializing_if = "ConsistencyScale::is_absolute")]
    pub consistency_scale: ConsistencyScale,
    /// The floor of the spread-scaled term's denominator (default
    /// [`SPREAD_FLOOR`](crate::SPREAD_FLOOR)). Left out of the settings at
    /// [`LEGACY_SPREAD_FLOOR`], the floor of the runs that recorded none, so
    /// that they still resume (with `--spread-floor 0.01`); runs with the
    /// absolute term carry that value too, unused.
    #[serde(
        default = "legacy_spread_floor",
        skip_serializing_if = "is_legacy_spread_floor"
    )]
    pub spread_floor: f64,
}

fn legacy_spread_floor() -> f64 {
    LEGACY_SPREAD_FLOOR
}

fn is_legacy_spread_floor(f: &f64) -> bool {
    *f == LEGACY_SPREAD_FLOOR
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

impl TrainConfig {
    /// `objective` for `steps` steps at consistency weight `lambda`, every
    /// other setting plain: no warm-up of lambda or the learning rate, the
    /// default LoRA and AdamW, seed 0, a checkpoint only after the last step,
    /// no EMA teacher or KL to the base, one window a step, and SPEC.md's
    /// squared supervised loss, views and absolute consistency term. Set the
    /// rest with struct update syntax: `TrainConfig { seed: 3, ..TrainConfig::new(..) }`.
    pub fn new(objective: Objective, steps: usize, lambda: f64) -> Self {
        let consistency_scale = ConsistencyScale::default();
        TrainConfig {
            objective,
            steps,
            lambda,
            lambda_warmup: 0,
            lora: LoraConfig::default(),
            optim: AdamWConfig::default(),
            lr_warmup: 0,
            seed: 0,
            checkpoint_every: usize::MAX,
            ema: None,
            kl_base: None,
            windows_per_step: 1,
            supervised_loss: SupervisedLoss::default(),
            view_b: ViewB::default(),
            view_a: ViewA::default(),
            spread_floor: consistency_scale.default_floor(),
            consistency_scale,
        }
    }

    pub fn lambda_at(&self, step: usize) -> f64 {
        if self.lambda_warmup == 0 {
            self.lambda
        } else {
            self.lambda * (step as f64 / self.lambda_warmup as f64).min(1.0)
        }
    }

    pub fn views(&self) -> usize {
        if self.objective == Objective::OcSft {
            2
        } else {
            1
        }
    }
}

/// One line of `log.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLog {
    /// 1-based: the number of updates done after this step.
    pub step: usize,
    pub loss: f64,
    pub supervised: f64,
    /// The cross-entropy term that the loss trains on instead of
    /// `supervised` (`--supervised-loss cross-entropy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_entropy: Option<f64>,
    /// The supervised loss the best constant score (the mean training label)
    /// would have on the same windows: `supervised` below it means the
    /// scorer ranks by content, not only by the label mean.
    #[serde(default)]
    pub constant: f64,
    /// With the cross-entropy loss: the cross-entropy the best constant grade
    /// distribution (the training labels' mean two-point target) has on the
    /// same windows, the yardstick for `cross_entropy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_cross_entropy: Option<f64>,
    pub consistency: f64,
    pub regulariser: f64,
    pub lambda: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub seconds: f64,
    pub qid: String,
    /// Index of the training window (the first one with several windows per step).
    pub example: usize,
    /// Every window of the step, when it has more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckpointState {
    step: usize,
    optimizer_updates: usize,
}

/// The window and views of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    pub example: usize,
    /// View A's slot order (indices into the example's candidates).
    pub view_a: Vec<usize>,
    /// View B's (OC-SFT) or the EMA teacher's slot order.
    pub view_b: Option<Vec<usize>>,
    /// With `ViewB::Pool`: view B's window, slot by slot, as (example,
    /// candidate) of the same pool; the candidates of `example` in it are
    /// the kept ones.
    pub pool_view_b: Option<Vec<(usize, usize)>>,
}

/// The training window of 0-based window index `step` (optimizer step times
/// windows per step, plus the window's place in its step): epochs visit
/// every example once, each in its own seeded order.
pub fn example_at(seed: u64, n_examples: usize, step: usize) -> usize {
    let epoch = step / n_examples;
    let order = ocrank_plan::permutation(seed, "ocrank-train/epoch", n_examples, epoch + 1);
    order[step % n_examples]
}

fn seeded_order(seed: u64, what: &str, step: usize, n: usize) -> Vec<usize> {
    ocrank_plan::permutation(seed, &format!("ocrank-train/{what}/{step}"), n, 1)
}

/// A seeded order of `n` candidates that differs from `other` whenever
/// `n >= 2`: the first draw, redrawn (draw 2, 3, ...) only while it equals
/// `other`. Two equal views make the consistency term zero, which a uniform
/// draw does on half the steps at width 2; at width 10 the first draw almost
/// never needs a redraw, so runs keep the views they had.
fn seeded_order_unlike(
    seed: u64,
    what: &str,
    step: usize,
    n: usize,
    other: &[usize],
) -> Vec<usize> {
    let key = format!("ocrank-train/{what}/{step}");
    let mut draw = 1;
    loop {
        let order = ocrank_plan::permutation(seed, &key, n, draw);
        if n < 2 || order != other {
            return order;
        }
        draw += 1;
    }
}

/// How many of a view-A window's `n` candidates a pool view B keeps.
fn kept_in_pool_view(n: usize) -> usize {
    (n / 2).max(1)
}

/// The candidates of the other windows of `example`'s pool, as (example,
/// candidate), in example order.
fn pool_mates(examples: &[Example], example: usize) -> Vec<(usize, usize)> {
    let qid = &examples[example].qid;
    (examples.iter().enumerate())
        .filter(|(j, x)| *j != example && &x.qid == qid)
        .flat_map(|(j, x)| (0..x.ids.len()).map(move |i| (j, i)))
        .collect()
}

/// A pool view B of `example` (see [`ViewB::Pool`]): a seeded half of its
/// candidates, seeded other candidates of the pool, in a seeded slot order;
/// `None` when the pool has too few other candidates (`Trainer::new`
/// refuses such pools).
fn pool_view_b(
    seed: u64,
    examples: &[Example],
    example: usize,
    step: usize,
) -> Option<Vec<(usize, usize)>> {
    let n = examples[example].ids.len();
    let k = kept_in_pool_view(n);
    let mates = pool_mates(examples, example);
    if mates.len() < n - k {
        return None;
    }
    let kept = seeded_order(seed, "view-b-kept", step, n);
    let pick = seeded_order(seed, "view-b-mates", step, mates.len());
    let members: Vec<(usize, usize)> = (kept[..k].iter().map(|&i| (example, i)))
        .chain(pick[..n - k].iter().map(|&p| mates[p]))
        .collect();
    Some(
        (seeded_order(seed, "view-b-slots", step, n).iter())
            .map(|&s| members[s])
            .collect(),
    )
}

/// The window and views of 0-based window index `step` (see [`example_at`]).
pub fn plan_step(cfg: &TrainConfig, examples: &[Example], step: usize) -> StepPlan {
    let example = example_at(cfg.seed, examples.len(), step);
    let n = examples[example].ids.len();
    let identity: Vec<usize> = (0..n).collect();
    // OC-SFT with a permuted view A draws perm-aug's orders (same key).
    let view_a = match (cfg.objective, cfg.view_a) {
        (Objective::PermAug, _) | (Objective::OcSft, ViewA::Permuted) => {
            seeded_order(cfg.seed, "perm-aug", step, n)
        }
        _ => identity,
    };
    let oc_sft = cfg.objective == Objective::OcSft;
    let view_b = if (oc_sft && cfg.view_b == ViewB::Window) || cfg.ema.is_some() {
        Some(seeded_order_unlike(cfg.seed, "view-b", step, n, &view_a))
    } else {
        None
    };
    let pool_view_b = if oc_sft && cfg.view_b == ViewB::Pool {
        pool_view_b(cfg.seed, examples, example, step)
    } else {
        None
    };
    StepPlan {
        example,
        view_a,
        view_b,
        pool_view_b,
    }
}

/// Orders `probs` (slot order of `order`) back to the example's candidate
/// order: candidate i sits at slot inv[i].
fn align(probs: &Tensor, order: &[usize]) -> Result<Tensor> {
    let mut inv = vec![0u32; order.len()];
    for (s, &i) in order.iter().enumerate() {
        inv[i] = s as u32;
    }
    let inv = Tensor::new(inv.as_slice(), probs.device())?;
    Ok(probs.index_select(&inv, 0)?)
}

fn texts<'e>(ex: &'e Example, order: &[usize]) -> Vec<&'e str> {
    order.iter().map(|&i| ex.texts[i].as_str()).collect()
}

pub struct Trainer<'a> {
    pub scorer: &'a Scorer<'a>,
    pub examples: Vec<Example>,
    pub cfg: TrainConfig,
    opt: AdamW,
    ema: Option<HashMap<String, Tensor>>,
    queries: HashMap<String, QueryText>,
    schedule: Cosine,
    step: usize,
    /// Mean label over every training window (the best constant score).
    label_mean: f64,
    /// Mean two-point target over every training window (the best constant
    /// grade distribution under the cross-entropy).
    label_marginal: [f64; 4],
}

/// The mathematical result of one step, without the update (for tests).
pub struct StepOutput {
    pub loss: crate::loss::Loss,
    /// See [`StepLog::constant`].
    pub constant: f64,
    /// See [`StepLog::constant_cross_entropy`].
    pub constant_cross_entropy: Option<f64>,
    pub regulariser: f64,
    pub total: Tensor,
}

impl<'a> Trainer<'a> {
    /// The scorer's decoder must carry adapters (`attach_lora`) and use the
    /// composite kernels.
    pub fn new(scorer: &'a Scorer<'a>, examples: Vec<Example>, cfg: TrainConfig) -> Result<Self> {
        let vars = scorer.engine.decoder.lora_vars();
        if vars.is_empty() {
            return Err(Error::Train(
                "the decoder has no LoRA adapters to train".into(),
            ));
        }
        if examples.is_empty() {
            return Err(Error::Train("no training examples".into()));
        }
        if cfg.steps == 0 {
            return Err(Error::Train("--steps must be at least 1".into()));
        }
        let permutes =
            matches!(cfg.objective, Objective::PermAug | Objective::OcSft) || cfg.ema.is_some();
        if permutes && scorer.cfg.mode == Mode::Invariant {
            return Err(Error::Train(format!(
                "{} {}permutes windows, but an invariant window's scores do not depend on the order (every view would be the same): train the invariant mode with single-order or order-averaged",
                cfg.objective,
                if cfg.ema.is_some() { "with the EMA mean-teacher " } else { "" },
            )));
        }
        if permutes {
            if let Some(e) = examples.iter().find(|e| e.ids.len() < 2) {
                return Err(Error::Train(format!(
                    "{} {}needs windows of at least 2 candidates (it permutes them), but query {:?} has a window of {}: use a width of 2 or more",
                    cfg.objective,
                    if cfg.ema.is_some() { "with the EMA mean-teacher " } else { "" },
                    e.qid,
                    e.ids.len()
                )));
            }
        }
        if cfg.view_a == ViewA::Permuted && cfg.objective != Objective::OcSft {
            return Err(Error::Train(format!(
                "--view-a permuted is a view A of OC-SFT, but the objective is {}{}",
                cfg.objective,
                match cfg.objective {
                    Objective::SingleOrder => ": a permuted single-order view is perm-aug",
                    Objective::PermAug => ": perm-aug's view is already permuted",
                    _ => "",
                }
            )));
        }
        if cfg.consistency_scale == ConsistencyScale::Spread {
            if !(cfg.spread_floor > 0.0 && cfg.spread_floor.is_finite()) {
                return Err(Error::Train(format!(
                    "--spread-floor must be a positive number, not {}",
                    cfg.spread_floor
                )));
            }
            if cfg.objective != Objective::OcSft {
                return Err(Error::Train(format!(
                    "--consistency-scale spread scales OC-SFT's consistency term, but the objective is {}",
                    cfg.objective
                )));
            }
            if cfg.view_b == ViewB::Pool {
                return Err(Error::Train(
                    "--consistency-scale spread with --view-b pool: the spread is a whole window's, and a pool view B shares only part of it; use --view-b window".into(),
                ));
            }
        }
        if cfg.view_b == ViewB::Pool {
            if cfg.objective != Objective::OcSft {
                return Err(Error::Train(format!(
                    "--view-b pool is a view B of OC-SFT, but the objective is {}",
                    cfg.objective
                )));
            }
            if cfg.ema.is_some() {
                return Err(Error::Train(
                    "--view-b pool with the EMA mean-teacher: the teacher scores a permutation of view A's window, which a pool view B does not give; train one of them".into(),
                ));
            }
            for (j, e) in examples.iter().enumerate() {
                let need = e.ids.len() - kept_in_pool_view(e.ids.len());
                let have = pool_mates(&examples, j).len();
                if have < need {
                    return Err(Error::Train(format!(
                        "--view-b pool needs {need} other candidate(s) of query {:?} beside a window of {}, but its pool has {have} more: use a depth above the width",
                        e.qid,
                        e.ids.len()
                    )));
                }
            }
        }
        let ema = match cfg.ema {
            Some(_) => Some(current_values(scorer)?),
            None => None,
        };
        let schedule = Cosine {
            peak: cfg.optim.lr,
            warmup: cfg.lr_warmup,
            total: cfg.steps,
        };
        let labels = examples.iter().flat_map(|e| e.labels.iter());
        let n_labels = labels.clone().count().max(1) as f64;
        let label_mean = labels.clone().sum::<f64>() / n_labels;
        let mut label_marginal = [0.0; 4];
        if cfg.supervised_loss == SupervisedLoss::CrossEntropy {
            let n = n_labels;
            for &y in labels {
                for (m, q) in label_marginal.iter_mut().zip(two_point(y)?) {
                    *m += q / n;
                }
            }
        }
        Ok(Trainer {
            label_mean,
            label_marginal,
            scorer,
            examples,
            opt: AdamW::new(vars, cfg.optim.clone())?,
            ema,
            queries: HashMap::new(),
            schedule,
            cfg,
            step: 0,
        })
    }

    /// Steps done so far.
    pub fn step(&self) -> usize {
        self.step
    }

    fn query(&mut self, ex: usize) -> Result<QueryText> {
        let e = &self.examples[ex];
        if let Some(q) = self.queries.get(&e.qid) {
            return Ok(q.clone());
        }
        let q = self.scorer.query_text(&e.query)?;
        self.queries.insert(e.qid.clone(), q.clone());
        Ok(q)
    }

    /// Log grade distributions of a view without any graph (teachers).
    fn log_probs_nograd(&self, q: &QueryText, ex: &Example, order: &[usize]) -> Result<Tensor> {
        let d = &self.scorer.engine.decoder;
        let input = window_input(self.scorer, q, &texts(ex, order))?;
        let logits = checkpoint::forward(d, &input, None)?.logits(d)?;
        align(
            &log_probs_from_logits(&logits, self.scorer.grade_ids())?,
            order,
        )
    }

    fn dropout_key(&self, step: usize, view: u64) -> Option<u64> {
        let mut h = self.cfg.seed ^ 0x6F63_7261_6E6B_0000;
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ step as u64;
        Some(h.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ view)
    }

    /// The loss of 0-based optimizer step `step` and the gradients of every
    /// LoRA variable (layer-checkpointed backward), without updating
    /// anything: the mean over the step's `windows_per_step` windows.
    pub fn loss_and_grads(&mut self, step: usize) -> Result<(Vec<StepPlan>, StepOutput, Grads)> {
        let k = self.cfg.windows_per_step.max(1);
        let mut grads = Grads::new();
        let mut plans = Vec::with_capacity(k);
        let (mut supervised, mut consistency, mut regulariser) = (0.0, 0.0, 0.0);
        let (mut constant, mut cross_entropy, mut constant_ce) = (0.0, None, None);
        // Means over the windows of the loss without (objective) and with
        // (total) the regularisers.
        let (mut objective, mut total): (Option<Tensor>, Option<Tensor>) = (None, None);
        let mean_in = |acc: Option<Tensor>, t: &Tensor| -> Result<Option<Tensor>> {
            let t = (t.detach() / k as f64)?;
            Ok(Some(match acc {
                None => t,
                Some(sum) => (sum + t)?,
            }))
        };
        for j in 0..k {
            let (plan, out) = self.window_loss_and_grads(step, step * k + j, k, &mut grads)?;
            supervised += out.loss.supervised / k as f64;
            constant += out.constant / k as f64;
            if let Some(c) = out.loss.cross_entropy {
                cross_entropy = Some(cross_entropy.unwrap_or(0.0) + c / k as f64);
            }
            if let Some(c) = out.constant_cross_entropy {
                constant_ce = Some(constant_ce.unwrap_or(0.0) + c / k as f64);
            }
            consistency += out.loss.consistency / k as f64;
            regulariser += out.regulariser / k as f64;
            objective = mean_in(objective, &out.loss.total)?;
            total = mean_in(total, &out.total)?;
            plans.push(plan);
        }
        let (Some(objective), Some(total)) = (objective, total) else {
            unreachable!("at least one window per step")
        };
        Ok((
            plans,
            StepOutput {
                loss: crate::loss::Loss {
                    total: objective,
                    supervised,
                    cross_entropy,
                    consistency,
                },
                constant,
                constant_cross_entropy: constant_ce,
                regulariser,
                total,
            },
            grads,
        ))
    }

    /// One window of optimizer step `step` (window index `window`): its
    /// loss, and its gradients divided by `k` added into `grads`.
    fn window_loss_and_grads(
        &mut self,
        step: usize,
        window: usize,
        k: usize,
        grads: &mut Grads,
    ) -> Result<(StepPlan, StepOutput)> {
        let plan = plan_step(&self.cfg, &self.examples, window);
        let q = self.query(plan.example)?;
        let ex = &self.examples[plan.example];
        let d = &self.scorer.engine.decoder;
        let n = ex.labels.len() as f64;
        let constant = ex
            .labels
            .iter()
            .map(|y| (y - self.label_mean).powi(2))
            .sum::<f64>()
            / n;
        let constant_cross_entropy = match self.cfg.supervised_loss {
            SupervisedLoss::Squared => None,
            SupervisedLoss::CrossEntropy => {
                let mut sum = 0.0;
                for &y in &ex.labels {
                    for (q, m) in two_point(y)?.iter().zip(self.label_marginal) {
                        // m > 0 wherever q > 0: m is the mean of these q.
                        if *q > 0.0 {
                            sum -= q * m.ln();
                        }
                    }
                }
                Some(sum / n)
            }
        };

        // Views that carry gradients: A always, B for OC-SFT (a pool view B
        // is its own window, below).
        let mut views: Vec<(&[usize], Option<u64>)> =
            vec![(&plan.view_a, self.dropout_key(window, 1))];
        if self.cfg.objective == Objective::OcSft && self.cfg.view_b == ViewB::Window {
            let b = plan.view_b.as_deref().expect("OC-SFT plans a view B");
            views.push((b, self.dropout_key(window, 2)));
        }
        let mut runs = Vec::new();
        let mut tops = Vec::new();
        // Log grade distributions of each view, in view A's candidate order.
        let mut log_probs = Vec::new();
        for (order, key) in &views {
            let input = window_input(self.scorer, &q, &texts(ex, order))?;
            let run = checkpoint::forward(d, &input, *key)?;
            let (top, logits) = run.head(d)?;
            log_probs.push(align(
                &log_probs_from_logits(&logits, self.scorer.grade_ids())?,
                order,
            )?);
            runs.push(run);
            tops.push(top);
        }
        let s_a = expected(&log_probs[0].exp()?)?;
        let s_b = match log_probs.get(1) {
            Some(lp) => Some(expected(&lp.exp()?)?),
            None => None,
        };
        // A pool view B: its own window; the kept candidates' expected
        // grades there, beside theirs in view A.
        let mut pairs = None;
        if self.cfg.objective == Objective::OcSft && self.cfg.view_b == ViewB::Pool {
            let Some(slots) = &plan.pool_view_b else {
                return Err(Error::Train(format!(
                    "query {:?}: its pool has too few other candidates for a pool view B",
                    ex.qid
                )));
            };
            let texts_b: Vec<&str> = (slots.iter())
                .map(|&(j, i)| self.examples[j].texts[i].as_str())
                .collect();
            let input = window_input(self.scorer, &q, &texts_b)?;
            let run = checkpoint::forward(d, &input, self.dropout_key(window, 2))?;
            let (top, logits) = run.head(d)?;
            let s_slots =
                expected(&log_probs_from_logits(&logits, self.scorer.grade_ids())?.exp()?)?;
            let (slot, cand): (Vec<u32>, Vec<u32>) = (slots.iter().enumerate())
                .filter(|(_, (j, _))| *j == plan.example)
                .map(|(s, &(_, i))| (s as u32, i as u32))
                .unzip();
            let dev = s_a.device();
            pairs = Some((
                s_a.index_select(&Tensor::new(cand.as_slice(), dev)?, 0)?,
                s_slots.index_select(&Tensor::new(slot.as_slice(), dev)?, 0)?,
            ));
            runs.push(run);
            tops.push(top);
        }
        let lambda = self.cfg.lambda_at(step);
        let ce_log_probs = match self.cfg.supervised_loss {
            SupervisedLoss::CrossEntropy => Some(&log_probs[0]),
            SupervisedLoss::Squared => None,
        };
        let loss = match (&pairs, self.cfg.consistency_scale, &s_b) {
            (Some((a, b)), _, _) => {
                objective_loss_pairs(&s_a, &ex.labels, a, b, lambda, ce_log_probs)?
            }
            (None, ConsistencyScale::Spread, Some(s_b)) => objective_loss_spread(
                &s_a,
                &ex.labels,
                s_b,
                lambda,
                self.cfg.spread_floor,
                ce_log_probs,
            )?,
            (None, _, s_b) => objective_loss(&s_a, &ex.labels, s_b.as_ref(), lambda, ce_log_probs)?,
        };
        let mut total = loss.total.clone();
        let mut regulariser = 0.0;
        if let (Some(ema_cfg), Some(ema), Some(b)) = (self.cfg.ema, &self.ema, &plan.view_b) {
            let current = current_values(self.scorer)?;
            d.set_lora(ema)?;
            let teacher = self.log_probs_nograd(&q, ex, b);
            d.set_lora(&current)?;
            let t = expected(&teacher?.exp()?)?;
            let term = ((&s_a - &t)?.sqr()?.sum_all()? / n)?;
            regulariser += term.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            total = (total + (term * ema_cfg.weight)?)?;
        }
        if let Some(w) = self.cfg.kl_base {
            let current = current_values(self.scorer)?;
            let base: HashMap<String, Tensor> = current
                .iter()
                .map(|(k, v)| {
                    let v = if k.contains("lora_B") {
                        v.zeros_like()?
                    } else {
                        v.clone()
                    };
                    Ok((k.clone(), v))
                })
                .collect::<candle_core::Result<_>>()?;
            d.set_lora(&base)?;
            let base_log_probs = self.log_probs_nograd(&q, ex, &plan.view_a);
            d.set_lora(&current)?;
            let lpb = base_log_probs?;
            // KL(base || student) = sum p_b (log p_b - log p_s), per slot,
            // from log-softmaxes: finite where a probability underflows to 0.
            let kl = ((lpb.exp()? * (&lpb - &log_probs[0])?)?.sum_all()? / n)?;
            regulariser += kl.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            total = (total + (kl * w)?)?;
        }
        let top_grads = if k == 1 {
            total.backward()?
        } else {
            (&total / k as f64)?.backward()?
        };
        let vars = d.lora_vars();
        for (run, top) in runs.iter().zip(&tops) {
            // No gradient: the view does not enter the loss at this step
            // (view B while lambda is still 0 in its warm-up).
            if let Some(g) = top_grads.get(top.as_tensor()) {
                run.backward(d, &vars, g, grads)?;
            }
        }
        Ok((
            plan,
            StepOutput {
                loss,
                constant,
                constant_cross_entropy,
                regulariser,
                total: total.detach(),
            },
        ))
    }

    /// One training step: forward, backward, AdamW update, EMA update.
    pub fn train_step(&mut self) -> Result<StepLog> {
        let start = Instant::now();
        let step = self.step;
        let (plans, out, grads) = self.loss_and_grads(step)?;
        let lr = self.schedule.lr(step);
        let info = self.opt.step(&grads, lr)?;
        if let (Some(cfg), Some(ema)) = (self.cfg.ema, self.ema.as_mut()) {
            let current = current_values(self.scorer)?;
            for (k, v) in ema.iter_mut() {
                *v = ((&*v * cfg.decay)? + (&current[k] * (1.0 - cfg.decay))?)?;
            }
        }
        self.step += 1;
        let loss = out.total.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        Ok(StepLog {
            step: self.step,
            loss,
            supervised: out.loss.supervised,
            cross_entropy: out.loss.cross_entropy,
            constant: out.constant,
            constant_cross_entropy: out.constant_cross_entropy,
            consistency: out.loss.consistency,
            regulariser: out.regulariser,
            // The weight in use: objectives without a view B have none.
            lambda: if self.cfg.views() == 2 {
                self.cfg.lambda_at(step)
            } else {
                0.0
            },
            lr: info.lr,
            grad_norm: info.grad_norm,
            seconds: start.elapsed().as_secs_f64(),
            qid: self.examples[plans[0].example].qid.clone(),
            example: plans[0].example,
            examples: if plans.len() > 1 {
                plans.iter().map(|p| p.example).collect()
            } else {
                Vec::new()
            },
        })
    }

    /// Writes a checkpoint of the current step into `dir/step-NNNNNN`
    /// atomically (temporary directory, then rename).
    pub fn save_checkpoint(&self, dir: &Path, base_model: &str) -> Result<PathBuf> {
        let final_dir = checkpoint_dir(dir, self.step);
        let tmp = dir.join(format!(".step-{:06}.tmp", self.step));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        self.scorer
            .engine
            .decoder
            .save_lora(&self.cfg.lora, &tmp, base_model)?;
        let mut state = self.opt.state();
        if let Some(ema) = &self.ema {
            for (k, v) in ema {
                state.insert(format!("ema.{k}"), v.clone());
            }
        }
        let path = tmp.join("optimizer.safetensors");
        candle_core::safetensors::save(&state, &path)
            .map_err(|e| Error::Train(format!("{}: {e}", path.display())))?;
        let st = CheckpointState {
            step: self.step,
            optimizer_updates: self.opt.t,
        };
        let path = tmp.join("state.json");
        std::fs::write(&path, serde_json::to_string_pretty(&st).expect("state"))
            .map_err(|e| Error::io(&path, e))?;
        if final_dir.exists() {
            std::fs::remove_dir_all(&final_dir).map_err(|e| Error::io(&final_dir, e))?;
        }
        std::fs::rename(&tmp, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
        Ok(final_dir)
    }

    /// Restores a checkpoint written by [`Trainer::save_checkpoint`].
    pub fn load_checkpoint(&mut self, ckpt: &Path) -> Result<()> {
        let st_path = ckpt.join("state.json");
        let text = std::fs::read_to_string(&st_path).map_err(|e| Error::io(&st_path, e))?;
        let st: CheckpointState = serde_json::from_str(&text)
            .map_err(|e| Error::Train(format!("{}: {e}", st_path.display())))?;
        let ad = ckpt.join("adapter_model.safetensors");
        let values = candle_core::safetensors::load(&ad, &candle_core::Device::Cpu)
            .map_err(|e| Error::Train(format!("{}: {e}", ad.display())))?;
        self.scorer.engine.decoder.set_lora(&values)?;
        let op = ckpt.join("optimizer.safetensors");
        let state = candle_core::safetensors::load(&op, &candle_core::Device::Cpu)
            .map_err(|e| Error::Train(format!("{}: {e}", op.display())))?;
        self.opt.restore(&state, st.optimizer_updates)?;
        if let Some(ema) = self.ema.as_mut() {
            for (k, v) in ema.iter_mut() {
                let key = format!("ema.{k}");
                let x = state
                    .get(&key)
                    .ok_or_else(|| Error::Train(format!("{}: lacks {key}", op.display())))?;
                *v = x.to_dtype(v.dtype())?.to_device(v.device())?;
            }
        }
        self.step = st.step;
        Ok(())
    }
}

fn current_values(scorer: &Scorer) -> Result<HashMap<String, Tensor>> {
    scorer
        .engine
        .decoder
        .lora_vars()
        .into_iter()
        .map(|(k, v)| Ok((k, v.as_tensor().copy()?)))
        .collect()
}

pub fn checkpoint_dir(dir: &Path, step: usize) -> PathBuf {
    dir.join(format!("step-{step:06}"))
}

/// Where a finished run in `out` keeps its final adapter (PEFT layout).
pub fn final_adapter_dir(out: &Path) -> PathBuf {
    out.join("adapter")
}

/// Completed checkpoints in `dir`, by step.
pub fn checkpoints(dir: &Path) -> Result<Vec<(usize, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix("step-")
            .and_then(|s| s.parse::<usize>().ok())
        {
            if e.path().join("state.json").exists() {
                out.push((n, e.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Keeps the complete lines of `log` whose step is at most `step` (the
/// lines of steps after the checkpoint a run resumes from are redone).
pub fn truncate_log(log: &Path, step: usize) -> Result<()> {
    let file = match std::fs::File::open(log) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(log, e)),
    };
    let mut keep = String::new();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(log, e))?;
        match serde_json::from_str::<StepLog>(&line) {
            Ok(l) if l.step <= step => keep.extend([line.as_str(), "\n"]),
            _ => {}
        }
    }
    Ok(ocrank_data::write_whole(log, keep.as_bytes())?)
}

// `is_multiple_of` is newer than the workspace's minimum Rust (1.85).
#[allow(clippy::manual_is_multiple_of)]
/// Runs (or resumes) training into `out`: see the module documentation.
/// `settings` fingerprints everything that determines the run; a directory
/// holding a run with other settings is refused. `on_step` sees every step.
pub fn run(
    trainer: &mut Trainer,
    out: &Path,
    settings: &serde_json::Value,
    base_model: &str,
    mut on_step: impl FnMut(&StepLog),
) -> Result<Vec<StepLog>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let settings_path = out.join("train.json");
    match std::fs::read_to_string(&settings_path) {
        Ok(text) => {
            let old: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::Train(format!("{}: {e}", settings_path.display())))?;
            if old["settings"] != *settings {
                return Err(Error::Train(format!(
                    "{} holds a training run with other settings; use another --out or remove it",
                    out.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let doc = serde_json::json!({ "settings": settings });
            std::fs::write(
                &settings_path,
                serde_json::to_string_pretty(&doc).expect("json"),
            )
            .map_err(|e| Error::io(&settings_path, e))?;
        }
        Err(e) => return Err(Error::io(&settings_path, e)),
    }
    let ck_dir = out.join("checkpoints");
    std::fs::create_dir_all(&ck_dir).map_err(|e| Error::io(&ck_dir, e))?;
    let log_path = out.join("log.jsonl");
    if let Some((step, path)) = checkpoints(&ck_dir)?.pop() {
        trainer.load_checkpoint(&path)?;
        debug_assert_eq!(trainer.step(), step);
    }
    truncate_log(&log_path, trainer.step())?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| Error::io(&log_path, e))?;
    let mut logs = Vec::new();
    let every = trainer.cfg.checkpoint_every.max(1);
    while trainer.step() < trainer.cfg.steps {
        let l = trainer.train_step()?;
        writeln!(log, "{}", serde_json::to_string(&l).expect("log line"))
            .map_err(|e| Error::io(&log_path, e))?;
        on_step(&l);
        logs.push(l);
        let s = trainer.step();
        if s % every == 0 || s == trainer.cfg.steps {
            log.flush().map_err(|e| Error::io(&log_path, e))?;
            log.sync_data().map_err(|e| Error::io(&log_path, e))?;
            trainer.save_checkpoint(&ck_dir, base_model)?;
        }
    }
    let final_dir = final_adapter_dir(out);
    let last = checkpoint_dir(&ck_dir, trainer.step());
    if last.exists() {
        trainer
            .scorer
            .engine
            .decoder
            .save_lora(&trainer.cfg.lora, &final_dir, base_model)?;
    }
    Ok(logs)
}

/// Reads a run's `log.jsonl`.
pub fn read_log(path: &Path) -> Result<Vec<StepLog>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Train(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(objective: Objective) -> TrainConfig {
        TrainConfig {
            checkpoint_every: 100,
            ..TrainConfig::new(objective, 100, 1.0)
        }
    }

    /// train.json records the spread floor wherever it is not the legacy
    /// 0.01: a run that recorded none (from before the default became
    /// 1e-5, or with the absolute term) reads back at 0.01 and writes the
    /// same settings again, so it still resumes; the new default is written.
    #[test]
    fn spread_floor_is_recorded_unless_legacy() {
        let old = config(Objective::OcSft);
        let json = serde_json::to_value(&old).unwrap();
        assert!(json.get("spread_floor").is_none(), "{json}");
        let back: TrainConfig = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.spread_floor, LEGACY_SPREAD_FLOOR);
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        let mut new = old;
        new.consistency_scale = ConsistencyScale::Spread;
        new.spread_floor = new.consistency_scale.default_floor();
        let json = serde_json::to_value(&new).unwrap();
        assert_eq!(json["spread_floor"].as_f64(), Some(1e-5));
        assert_eq!(json["consistency_scale"].as_str(), Some("spread"));
        let back: TrainConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back.spread_floor, 1e-5);
    }

    fn example(n: usize) -> Example {
        Example {
            qid: "q".into(),
            query: "query".into(),
            ids: (0..n).map(|i| i.to_string()).collect(),
            texts: (0..n).map(|i| format!("text {i}")).collect(),
            labels: vec![0.0; n],
        }
    }

    /// Windows of two pools: q (three windows of `n`) and r (one).
    fn pool_examples(n: usize) -> Vec<Example> {
        let window = |qid: &str, w: usize| Example {
            qid: qid.into(),
            query: "query".into(),
            ids: (0..n).map(|i| format!("{qid}-{}", w * n + i)).collect(),
            texts: (0..n)
                .map(|i| format!("text {qid} {}", w * n + i))
                .collect(),
            labels: vec![0.0; n],
        };
        vec![
            window("q", 0),
            window("r", 0),
            window("q", 1),
            window("q", 2),
        ]
    }

    #[test]
    fn pool_view_b_keeps_half_the_window_and_takes_mates_from_its_pool() {
        let mut cfg = config(Objective::OcSft);
        cfg.view_b = ViewB::Pool;
        for n in [2, 3, 4] {
            let examples = pool_examples(n);
            let mut seen = std::collections::HashSet::new();
            for step in 0..120 {
                let plan = plan_step(&cfg, &examples, step);
                assert_eq!(plan.view_b, None);
                if examples[plan.example].qid == "r" {
                    // No other window: `Trainer::new` refuses such a pool.
                    assert_eq!(plan.pool_view_b, None);
                    continue;
                }
                let b = plan.pool_view_b.clone().expect("a pool view B");
                assert_eq!(plan, plan_step(&cfg, &examples, step), "seeded");
                assert_eq!(b.len(), n);
                let kept = b.iter().filter(|(j, _)| *j == plan.example).count();
                assert_eq!(kept, (n / 2).max(1), "width {n}, step {step}: {b:?}");
                let mut ids: Vec<&str> = b
                    .iter()
                    .map(|&(j, i)| examples[j].ids[i].as_str())
                    .collect();
                assert!(ids.iter().all(|id| id.starts_with("q-")), "{ids:?}");
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), n, "no candidate twice");
                seen.insert(b);
            }
            assert!(
                seen.len() > 20,
                "width {n}: only {} distinct views B",
                seen.len()
            );
        }
    }

    #[test]
    fn permuted_view_a_is_perm_augs_view_and_view_b_still_differs() {
        let mut oc = config(Objective::OcSft);
        oc.view_a = ViewA::Permuted;
        let aug = config(Objective::PermAug);
        let canonical = config(Objective::OcSft);
        for n in [2, 4, 10] {
            let examples = vec![example(n), example(n), example(n)];
            let mut moved = 0;
            for step in 0..100 {
                let plan = plan_step(&oc, &examples, step);
                let twin = plan_step(&aug, &examples, step);
                assert_eq!(plan.example, twin.example, "same window as perm-aug");
                assert_eq!(plan.view_a, twin.view_a, "same view A as perm-aug");
                let b = plan.view_b.expect("OC-SFT has a view B");
                assert_ne!(b, plan.view_a, "width {n}, step {step}");
                let mut sorted = b.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
                let canon = plan_step(&canonical, &examples, step);
                assert_eq!(canon.view_a, (0..n).collect::<Vec<_>>());
                if plan.view_a != canon.view_a {
                    moved += 1;
                }
            }
            // Width 2 keeps the identity about half the time; wider almost never.
            assert!(
                moved > 30,
                "width {n}: view A moved on {moved} of 100 steps"
            );
        }
    }

    #[test]
    fn oc_sft_view_b_always_differs_from_view_a() {
        let cfg = config(Objective::OcSft);
        for n in [2, 3, 10] {
            let examples = vec![example(n)];
            let mut redrawn = 0;
            for step in 0..200 {
                let plan = plan_step(&cfg, &examples, step);
                let b = plan.view_b.expect("OC-SFT has a view B");
                assert_ne!(b, plan.view_a, "width {n}, step {step}");
                let mut sorted = b.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
                // The first draw is kept whenever it already differs.
                let first = seeded_order(cfg.seed, "view-b", step, n);
                if first == plan.view_a {
                    redrawn += 1;
                } else {
                    assert_eq!(b, first);
                }
            }
            // A uniform draw at width 2 repeats the identity about half the time.
            if n == 2 {
                assert!(redrawn > 50, "width 2: {redrawn} redraws in 200 steps");
            }
        }
    }
}
