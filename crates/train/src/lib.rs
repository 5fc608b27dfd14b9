//! ocrank-train: LoRA supervised fine-tuning of a batched scorer
//! (SPEC.md section 5).
//!
//! Data flow: pools + labels -> [`data::examples`] (windows in canonical
//! order with grade targets) -> [`trainer::plan_step`] (which window, which
//! views) -> [`loss::grade_probs`] (differentiable slot readout through the
//! decoder's composite kernels and LoRA adapters) -> [`loss::objective_loss`]
//! -> backward -> [`optim::AdamW`] -> checkpoints (PEFT adapters).

/// `FromStr` and `Display` for a setting's enum by its kebab-case names
/// (the names serde and the CLI flags use): `kebab_names!(Type, "what",
/// Variant => "name", ...)`. An unknown name is refused as
/// `unknown what "x" (name, name, ...)`.
macro_rules! kebab_names {
    ($ty:ident, $what:literal, $($variant:ident => $name:literal),+ $(,)?) => {
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " {:?} (", kebab_names!(@list $($name),+), ")"),
                        s
                    )),
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(match self {
                    $($ty::$variant => $name,)+
                })
            }
        }
    };
    (@list $first:literal $(, $rest:literal)*) => {
        concat!($first $(, ", ", $rest)*)
    };
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting's name parses back to it and is the name serde writes
    /// into train.json; an unknown name lists the known ones.
    #[test]
    fn setting_names_round_trip_and_match_serde() {
        fn check<T>(all: &[T])
        where
            T: std::str::FromStr<Err = String> + std::fmt::Display + serde::Serialize,
            T: PartialEq + std::fmt::Debug,
        {
            for v in all {
                let name = v.to_string();
                assert_eq!(name.parse::<T>().as_ref(), Ok(v));
                assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(name));
            }
        }
        check(&[
            Objective::SingleOrder,
            Objective::OrderAveraged,
            Objective::PermAug,
            Objective::OcSft,
        ]);
        check(&[SupervisedLoss::Squared, SupervisedLoss::CrossEntropy]);
        check(&[ConsistencyScale::Absolute, ConsistencyScale::Spread]);
        check(&[ViewA::Canonical, ViewA::Permuted]);
        check(&[ViewB::Window, ViewB::Pool]);
        assert_eq!(
            "oc_sft".parse::<Objective>(),
            Err(
                r#"unknown objective "oc_sft" (single-order, order-averaged, perm-aug, oc-sft)"#
                    .into()
            )
        );
        assert_eq!(
            "both".parse::<ViewB>(),
            Err(r#"unknown view B "both" (window, pool)"#.into())
        );
    }
}
