//! ocrank-train: LoRA supervised fine-tuning of a batched scorer
//! (SPEC.md section 5).
//!
//! Data flow: pools + labels -> [`data::examples`] (windows in canonical
//! order with grade targets) -> [`trainer::plan_step`] (which window, which
//! views) -> [`loss::grade_probs`] (differentiable slot readout through the
//! decoder's composite kernels and LoRA adapters) -> [`loss::objective_loss`]
//! -> backward -> [`optim::AdamW`] -> checkpoints (PEFT adapters).

pub mod checkpoint;
pub mod data;
pub mod error;
pub mod loss;
pub mod optim;
pub mod trainer;

pub use checkpoint::Grads;
pub use data::{examples, is_heldout, Example};
pub use error::{Error, Result};
pub use loss::{
    cross_entropy, expected, grade_probs, objective_loss, objective_loss_pairs,
    objective_loss_spread, spread_consistency, two_point, ConsistencyScale, Loss, Objective,
    SupervisedLoss, LEGACY_SPREAD_FLOOR, SPREAD_FLOOR,
};
pub use optim::{AdamW, AdamWConfig, Cosine};
pub use trainer::{run, EmaConfig, StepLog, TrainConfig, Trainer, ViewA, ViewB};
