//! `ocrank train`: LoRA fine-tuning of the batched scorer (SPEC.md section
//! 5), resumable: rerunning the same command continues from the last
//! checkpoint.

use std::path::PathBuf;

use anyhow::Context;
use ocrank_engine::{Kernels, LoraConfig};
use ocrank_score::Scorer;
use ocrank_train::{AdamWConfig, EmaConfig, Objective, TrainConfig, Trainer, ViewA, ViewB};
use serde_json::json;

use super::common::{
    command_line, load_pool_files, progress_bar, sha256_file, sha256_files, ModelArgs, ScorerArgs,
};

#[derive(clap::Args, Debug, Clone)]
pub struct SplitArgs {
    /// Share of queries held out for selection (by a hash of seed and query
    /// id); training uses the rest.
    #[arg(long, default_value_t = 0.2)]
    pub heldout_fraction: f64,
    /// Seed of the held-out split.
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
}

/// Training pools and their labels (shared by `train` and `train-bench`).
#[derive(clap::Args, Debug, Clone)]
pub struct TrainData {
    /// Training pools (several files may be given).
    #[arg(long = "pools", value_name = "FILE", required = true, num_args = 1..)]
    pub pools: Vec<PathBuf>,
    /// Train on the first N candidates of each pool, in windows of --width.
    #[arg(long, default_value_t = 20)]
    pub depth: usize,
    /// Labels from `ocrank label`.
    #[arg(long, value_name = "FILE")]
    pub labels: PathBuf,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (the protocol of reports/training; see scripts/train_report.sh):
  ocrank train --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --pools ../shared/data/msmarco/dl22/bm25-top100.json \\
      --heldout-pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --labels runs/train/labels-minilm.jsonl \\
      --depth 20 --width 10 --max-chars 600 --template compact \\
      --objective oc-sft --lambda 5 --lambda-warmup 60 --steps 300 --out runs/train-oc-sft

Rerunning the same command after an interruption (even kill -9) resumes from
the last checkpoint and ends with the same adapter as an uninterrupted run.")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    #[command(flatten)]
    pub split: SplitArgs,
    /// Hold queries out only from these pool files (some of --pools), e.g.
    /// the one with qrels to select on; the other files train whole.
    /// Default: every pool file.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub heldout_pools: Vec<PathBuf>,
    #[command(flatten)]
    pub data: TrainData,
    #[arg(long, default_value = "oc-sft")]
    pub objective: Objective,
    /// Optimizer updates.
    #[arg(long, default_value_t = 300)]
    pub steps: usize,
    /// Windows per update (gradient accumulation): each update averages the
    /// loss and gradient of this many windows, so a run sees steps x this
    /// many windows. Memory stays that of one window.
    #[arg(long, default_value_t = 1)]
    pub windows_per_step: usize,
    /// The supervised term: `squared` is SPEC.md's (s - y)^2 on the
    /// expected grade; `cross-entropy` compares the grade distribution with
    /// the two-point distribution on floor(y), floor(y) + 1 whose mean is y
    /// (same optimum, but its gradient does not vanish when the grade softmax
    /// saturates; see reports/training/saturation).
    #[arg(long, default_value = "squared")]
    pub supervised_loss: ocrank_train::SupervisedLoss,
    /// OC-SFT consistency weight lambda.
    #[arg(long, default_value_t = 5.0)]
    pub lambda: f64,
    /// Steps over which lambda rises linearly from 0.
    #[arg(long, default_value_t = 500)]
    pub lambda_warmup: usize,
    #[arg(long, default_value_t = 2e-4)]
    pub lr: f64,
    #[arg(long, default_value_t = 0.95)]
    pub beta2: f64,
    #[arg(long, default_value_t = 0.0)]
    pub weight_decay: f64,
    /// Learning-rate warm-up steps before the cosine decay.
    #[arg(long, default_value_t = 0)]
    pub lr_warmup: usize,
    #[arg(long, default_value_t = 16)]
    pub rank: usize,
    #[arg(long, default_value_t = 32.0)]
    pub alpha: f64,
    #[arg(long, default_value_t = 0.05)]
    pub lora_dropout: f64,
    /// Seed of data order, views, dropout and adapter initialisation.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Start from this adapter's weights (PEFT layout, e.g. an `ocrank
    /// train --mode invariant` student) instead of fresh ones: a warm start
    /// whose content signal the new objective keeps training. Its rank,
    /// alpha, dropout and target modules must be the ones of this run.
    /// `--kl-base` still pulls towards the model without any adapter.
    #[arg(long, value_name = "DIR")]
    pub init_adapter: Option<PathBuf>,
    #[arg(long, default_value_t = 50)]
    pub checkpoint_every: usize,
    /// EMA mean-teacher decay (enables the EMA regulariser).
    #[arg(long)]
    pub ema_decay: Option<f64>,
    #[arg(long, default_value_t = 1.0)]
    pub ema_weight: f64,
    /// Weight of KL(base || student) over view A's grade distributions.
    #[arg(long)]
    pub kl_base: Option<f64>,
    /// OC-SFT's view B: `window` is SPEC.md's seeded permutation of the same
    /// window (each candidate changes slot, keeps its window-mates); `pool`
    /// keeps half of the window's candidates (at least one) in a window
    /// filled up with other candidates of the same pool, so that the kept
    /// ones also change their window-mates, as under a reshuffled pool
    #[arg(long, default_value = "window", value_name = "window|pool")]
    pub view_b: ViewB,
    /// OC-SFT's view A: `canonical` is issue 5's protocol (the window in its
    /// first-stage order, as single-order reads it); `permuted` draws a fresh
    /// seeded order every step, perm-aug's own view A under the same seed, so
    /// that the run differs from perm-aug by the consistency term alone
    #[arg(long, default_value = "canonical", value_name = "canonical|permuted")]
    pub view_a: ViewA,
    /// OC-SFT's consistency term: `absolute` is SPEC.md's
    /// lambda * sum (s_A - s_B)^2 / S; `spread` (beyond SPEC.md) divides the
    /// mean squared difference by the window's score spread (the views'
    /// mean within-window variance plus `--spread-floor`), so that pulling a window's
    /// scores towards one shared grade does not lower it
    #[arg(long, default_value = "absolute", value_name = "absolute|spread")]
    pub consistency_scale: ocrank_train::ConsistencyScale,
    /// The floor added to the spread in `--consistency-scale spread`, on the
    /// variance scale of the 0-3 grades. Keep it well below the students'
    /// within-window variance (about 0.0005 for the width-4 students), or
    /// the term is SPEC.md's absolute one times 1 / floor. Runs from before
    /// this default (0.01) resume with `--spread-floor 0.01` [default: 1e-5]
    #[arg(long)]
    pub spread_floor: Option<f64>,
    /// Run directory (train.json, log.jsonl, checkpoints/, adapter/).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    anyhow::ensure!(
        args.model.adapter.is_none(),
        "--adapter: training starts from fresh adapters on the base model"
    );
    anyhow::ensure!(
        (0.0..1.0).contains(&args.split.heldout_fraction),
        "--heldout-fraction must be in [0, 1)"
    );
    for f in &args.heldout_pools {
        anyhow::ensure!(
            args.data.pools.contains(f),
            "--heldout-pools {}: not one of the --pools files",
            f.display()
        );
    }
    anyhow::ensure!(
        args.spread_floor.is_none()
            || args.consistency_scale == ocrank_train::ConsistencyScale::Spread,
        "--spread-floor is a setting of --consistency-scale spread, which this run does not use"
    );
    let labels = ocrank_data::read_labels(&args.data.labels)?;
    if args.objective == Objective::OrderAveraged {
        anyhow::ensure!(
            labels.header.orders > 1,
            "--objective order-averaged needs labels averaged over several teacher orders; {} holds {} teacher labels from {} order(s)",
            args.data.labels.display(),
            labels.header.teacher,
            labels.header.orders
        );
    }
    let all = load_pool_files(&args.data.pools, args.data.depth)?;
    let n_queries = all.len();
    let eligible: Option<std::collections::HashSet<String>> = if args.heldout_pools.is_empty() {
        None
    } else {
        Some(
            load_pool_files(&args.heldout_pools, args.data.depth)?
                .into_iter()
                .map(|p| p.qid)
                .collect(),
        )
    };
    let pools: Vec<_> = all
        .into_iter()
        .filter(|p| {
            let splittable = eligible.as_ref().is_none_or(|e| e.contains(&p.qid));
            !(splittable
                && ocrank_train::is_heldout(
                    &p.qid,
                    args.split.heldout_fraction,
                    args.split.split_seed,
                ))
        })
        .collect();
    anyhow::ensure!(
        args.windows_per_step >= 1,
        "--windows-per-step must be at least 1"
    );
    let cfg = args.scorer.config();
    anyhow::ensure!(
        cfg.mode != ocrank_score::Mode::Pointwise,
        "--mode pointwise: train with --mode invariant, which computes the same per-candidate scores in one pass per window (the adapter then scores in either mode)"
    );
    let examples = ocrank_train::examples(&pools, &labels, args.data.depth, cfg.width)?;
    let lora = LoraConfig {
        rank: args.rank,
        alpha: args.alpha,
        dropout: args.lora_dropout,
        ..Default::default()
    };
    let tcfg = TrainConfig {
        objective: args.objective,
        steps: args.steps,
        lambda: args.lambda,
        lambda_warmup: args.lambda_warmup,
        lora: lora.clone(),
        optim: AdamWConfig {
            lr: args.lr,
            beta2: args.beta2,
            weight_decay: args.weight_decay,
            ..Default::default()
        },
        lr_warmup: args.lr_warmup,
        seed: args.seed,
        checkpoint_every: args.checkpoint_every,
        ema: args.ema_decay.map(|decay| EmaConfig {
            decay,
            weight: args.ema_weight,
        }),
        kl_base: args.kl_base,
        windows_per_step: args.windows_per_step,
        supervised_loss: args.supervised_loss,
        view_b: args.view_b,
        view_a: args.view_a,
        consistency_scale: args.consistency_scale,
        spread_floor: args
            .spread_floor
            .unwrap_or(args.consistency_scale.default_floor()),
    };
    let pools_sha = sha256_files(&args.data.pools)?;
    let mut settings = json!({
        "pools_sha256": pools_sha,
        "labels_sha256": sha256_file(&args.data.labels)?,
        "labels_teacher": labels.header,
        "depth": args.data.depth,
        "heldout_fraction": args.split.heldout_fraction,
        "split_seed": args.split.split_seed,
        "scorer": cfg,
        "train": tcfg,
        "ocrank_version": env!("CARGO_PKG_VERSION"),
    });
    if !args.heldout_pools.is_empty() {
        // Only when given, so that runs from before this flag still resume.
        settings["heldout_pools"] = json!(args
            .heldout_pools
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>());
    }
    if let Some(dir) = &args.init_adapter {
        let theirs = ocrank_engine::lora::read_adapter_config(dir)?;
        let sorted = |t: &[String]| {
            let mut t = t.to_vec();
            t.sort();
            t
        };
        anyhow::ensure!(
            (theirs.rank, theirs.alpha, theirs.dropout) == (lora.rank, lora.alpha, lora.dropout)
                && sorted(&theirs.targets) == sorted(&lora.targets),
            "--init-adapter {}: its adapter (rank {}, alpha {}, dropout {}, targets {}) differs from this run's (rank {}, alpha {}, dropout {}, targets {}); pass the matching --rank/--alpha/--lora-dropout",
            dir.display(),
            theirs.rank,
            theirs.alpha,
            theirs.dropout,
            theirs.targets.join(","),
            lora.rank,
            lora.alpha,
            lora.dropout,
            lora.targets.join(",")
        );
        // Only when given, so that runs from before this flag still resume.
        settings["init_adapter"] = json!({
            "dir": dir.display().to_string(),
            "sha256": sha256_file(&dir.join("adapter_model.safetensors"))?,
        });
    }
    args.model.fingerprint(&mut settings)?;

    let mut engine = args.model.load()?;
    engine.decoder.kernels = Kernels::Composite;
    match &args.init_adapter {
        Some(dir) => {
            engine
                .decoder
                .load_lora(dir)
                .with_context(|| format!("--init-adapter {}", dir.display()))?;
        }
        None => engine.decoder.attach_lora(&lora, args.seed)?,
    }
    let scorer = Scorer::new(&engine, cfg)?;
    let mut trainer = Trainer::new(&scorer, examples, tcfg)?;
    eprintln!(
        "{} training windows from {} queries ({} held out); {} steps of {} ({} window(s) of {} view(s) per step; {} supervised loss)",
        trainer.examples.len(),
        pools.len(),
        n_queries - pools.len(),
        args.steps,
        args.objective,
        args.windows_per_step,
        trainer.cfg.views(),
        args.supervised_loss
    );
    let bar = progress_bar(args.steps as u64, "steps");
    let done = ocrank_train::trainer::checkpoints(&args.out.join("checkpoints"))?
        .last()
        .map_or(0, |c| c.0);
    bar.set_position(done as u64);
    bar.reset_eta();
    let base = args.model.model.display().to_string();
    let logs = ocrank_train::run(&mut trainer, &args.out, &settings, &base, |l| {
        bar.set_position(l.step as u64);
        let ce = match (l.cross_entropy, l.constant_cross_entropy) {
            (Some(c), Some(k)) => format!("ce {c:.4} vs constant {k:.4}, "),
            _ => String::new(),
        };
        bar.set_message(format!(
            "loss {:.4} ({ce}sq {:.4} vs constant {:.4}, cons {:.4}) lambda {:.2} {:.1} s/step",
            l.loss, l.supervised, l.constant, l.consistency, l.lambda, l.seconds
        ));
    })?;
    bar.finish();
    // The command that produced (or last resumed) the run.
    let path = args.out.join("train.json");
    let mut doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    let all_logs = ocrank_train::trainer::read_log(&args.out.join("log.jsonl"))?;
    let seconds: f64 = all_logs.iter().map(|l| l.seconds).sum();
    doc["command"] = json!(command);
    doc["steps_done"] = json!(all_logs.len());
    doc["train_seconds"] = json!(seconds);
    doc["mean_step_seconds"] = json!(seconds / all_logs.len().max(1) as f64);
    doc["final_loss_mean_last_10"] = json!(
        all_logs.iter().rev().take(10).map(|l| l.loss).sum::<f64>()
            / all_logs.len().clamp(1, 10) as f64
    );
    // Learning beyond the label mean: the supervised loss against that of
    // the best constant score on the same windows, over the last 50 steps.
    let tail: Vec<_> = all_logs.iter().rev().take(50).collect();
    let (sup, constant) = tail
        .iter()
        .fold((0.0, 0.0), |(a, b), l| (a + l.supervised, b + l.constant));
    if constant > 0.0 {
        doc["supervised_over_constant_last_50"] = json!(sup / constant);
    }
    let (ce, constant_ce) = tail.iter().fold((0.0, 0.0), |(a, b), l| {
        (
            a + l.cross_entropy.unwrap_or(0.0),
            b + l.constant_cross_entropy.unwrap_or(0.0),
        )
    });
    if constant_ce > 0.0 {
        doc["cross_entropy_over_constant_last_50"] = json!(ce / constant_ce);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "{} steps ({} this run) in {:.0} s; adapter: {}",
        all_logs.len(),
        logs.len(),
        seconds,
        ocrank_train::trainer::final_adapter_dir(&args.out).display()
    );
    Ok(())
}
