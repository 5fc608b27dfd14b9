//! `ocrank train-bench`: the cost of a training step per objective, measured
//! side by side in one run (steps interleaved, so load on the machine hits
//! every objective alike), reported as medians and ratios to single-order.

use std::path::PathBuf;

use anyhow::Context;
use ocrank_engine::{Kernels, LoraConfig};
use ocrank_score::Scorer;
use ocrank_train::{AdamWConfig, Objective, TrainConfig, Trainer};
use serde_json::json;

use super::common::{load_pool_files, ModelArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (the protocol's shape: width 10, candidates cut to 600 characters):
  ocrank train-bench --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --labels runs/labels-gold.jsonl --width 10 --max-chars 600 --template compact \\
      --steps 3 --out bench/train.json")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    #[command(flatten)]
    pub data: super::train::TrainData,
    /// Timed steps per objective (after one untimed warm-up step each).
    #[arg(long, default_value_t = 3)]
    pub steps: usize,
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "single-order,perm-aug,oc-sft"
    )]
    pub objectives: Vec<Objective>,
    /// Write the measurements (JSON) here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let labels = ocrank_data::read_labels(&args.data.labels)?;
    let pools = load_pool_files(&args.data.pools, args.data.depth)?;
    let cfg = args.scorer.config();
    let examples = ocrank_train::examples(&pools, &labels, args.data.depth, cfg.width)?;
    let lora = LoraConfig::default();
    let mut engine = args.model.load()?;
    engine.decoder.kernels = Kernels::Composite;
    engine.decoder.attach_lora(&lora, 0)?;
    let scorer = Scorer::new(&engine, cfg.clone())?;
    let mut trainers = args
        .objectives
        .iter()
        .map(|&objective| {
            let tcfg = TrainConfig {
                objective,
                steps: args.steps + 1,
                lambda: 5.0,
                lambda_warmup: 0,
                lora: lora.clone(),
                optim: AdamWConfig::default(),
                lr_warmup: 0,
                seed: 0,
                checkpoint_every: usize::MAX,
                ema: None,
                kl_base: None,
                windows_per_step: 1,
                supervised_loss: Default::default(),
            };
            Trainer::new(&scorer, examples.clone(), tcfg)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut times = vec![Vec::new(); trainers.len()];
    let mut tokens = 0;
    for round in 0..=args.steps {
        for (i, t) in trainers.iter_mut().enumerate() {
            let log = t.train_step().context("training step")?;
            if round > 0 {
                times[i].push(log.seconds);
            }
            if round == 0 && i == 0 {
                let ex = &t.examples[log.example];
                let q = scorer.query_text(&ex.query)?;
                let texts: Vec<&str> = ex.texts.iter().map(|s| s.as_str()).collect();
                tokens = q.prefix_tokens.len() + scorer.batched_sequence(&q, &texts)?.tokens.len();
            }
            eprintln!(
                "{} step {round}: {:.2} s{}",
                args.objectives[i],
                log.seconds,
                if round == 0 {
                    " (warm-up, not timed)"
                } else {
                    ""
                }
            );
        }
    }
    let base = median(times[0].clone());
    let rows: Vec<_> = args
        .objectives
        .iter()
        .zip(&times)
        .map(|(o, t)| {
            let m = median(t.clone());
            json!({"objective": o.to_string(), "views": if *o == Objective::OcSft {2} else {1},
                   "median_step_seconds": m, "steps": t, "ratio_to_first": m / base})
        })
        .collect();
    println!(
        "| objective | views | median s/step | ratio to {} |\n|---|---|---|---|",
        args.objectives[0]
    );
    for r in &rows {
        println!(
            "| {} | {} | {:.2} | {:.2}x |",
            r["objective"].as_str().unwrap_or(""),
            r["views"],
            r["median_step_seconds"].as_f64().unwrap_or(f64::NAN),
            r["ratio_to_first"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!(
        "\nabout {tokens} tokens per view (first window), LoRA rank 16 on all projections, f32 CPU"
    );
    if let Some(out) = &args.out {
        let doc = json!({"command": command, "tokens_per_view": tokens, "threads": rayon_threads(), "results": rows});
        std::fs::write(out, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
