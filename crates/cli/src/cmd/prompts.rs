//! `ocrank prompts`: export the permutation plan and the rendered windows, so
//! that an external scorer (an API model, another engine) can score exactly
//! what ocrank would, and `ocrank eval --scores` can evaluate its answers.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use ocrank_plan::PermutationPlan;
use ocrank_score::{Mode, Scorer};
use serde_json::json;

use super::common::{ModelArgs, PoolArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
One JSON line per (query, permutation, window): qid, permutation, window,
candidates (ids in slot order), mode, and the prompt: `text` (the whole
batched prompt) or `prefix` + `blocks` (pointwise / invariant). With --tokens
also the token ids, position ids, block ids, hidden flags, readout indices and
grade token ids the engine uses.")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub pools: PoolArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    /// Permutations per pool (M); permutation 0 is the canonical order.
    #[arg(long, default_value_t = 1, value_parser = super::common::permutation_count)]
    pub permutations: usize,
    /// Seed of the permutation plan.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Include token-level layout (needs the model's tokenizer).
    #[arg(long)]
    pub tokens: bool,
    /// JSONL to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let pools = args.pools.load()?;
    let engine = args.model.load()?;
    let cfg = args.scorer.config();
    let scorer = Scorer::new(&engine, cfg.clone())?;
    let plan = PermutationPlan::new(args.seed, args.permutations);
    super::common::create_parent(&args.out)?;
    let file = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut lines = 0;
    for pool in &pools {
        let q = scorer.query_text(&pool.query)?;
        let text = &q.text;
        for (m, order) in plan
            .orders(&pool.qid, pool.candidates.len())
            .iter()
            .enumerate()
        {
            for (w, window) in scorer.windows(order).iter().enumerate() {
                let texts: Vec<&str> = window
                    .iter()
                    .map(|&c| pool.candidates[c].text.as_str())
                    .collect();
                let ids: Vec<&str> = window
                    .iter()
                    .map(|&c| pool.candidates[c].id.as_str())
                    .collect();
                let mut line = json!({
                    "qid": pool.qid, "permutation": m, "window": w,
                    "candidates": ids, "mode": cfg.mode.to_string(),
                });
                match cfg.mode {
                    Mode::Batched => line["text"] = json!(cfg.prompt.window_text(text, &texts)),
                    Mode::Pointwise | Mode::Invariant => {
                        line["prefix"] = json!(text.prefix);
                        line["blocks"] = json!(texts
                            .iter()
                            .map(|t| cfg.prompt.block_text(text, t))
                            .collect::<Vec<_>>());
                    }
                }
                if args.tokens {
                    let seq = match cfg.mode {
                        Mode::Batched => scorer.batched_sequence(&q, &texts)?,
                        _ => scorer.invariant_sequence(&q, &texts)?,
                    };
                    line["prefix_tokens"] = json!(q.prefix_tokens);
                    line["tokens"] = json!(seq.tokens);
                    line["positions"] = json!(seq.positions);
                    line["block"] = json!(seq.mask.block);
                    line["hidden"] = json!(seq.mask.hidden);
                    line["readout"] = json!(seq.readout);
                    line["grade_ids"] = json!(scorer.grade_ids());
                }
                serde_json::to_writer(&mut out, &line)?;
                out.write_all(b"\n")?;
                lines += 1;
            }
        }
    }
    out.flush()?;
    eprintln!("wrote {lines} windows -> {}", args.out.display());
    Ok(())
}
