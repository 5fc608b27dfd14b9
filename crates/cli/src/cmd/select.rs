//! `ocrank select`: choose the checkpoint (and, across runs, lambda or the
//! recipe's other settings) on the held-out split by ranking quality alone,
//! as the paper does: mean nDCG@10 over M permutations of each held-out pool,
//! scored by the batched scorer at the training width.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use ocrank_metrics::ndcg::ndcg_of_scores;
use ocrank_plan::PermutationPlan;
use ocrank_score::{ScoreConfig, Scorer};
use serde_json::json;

use super::common::{command_line, load_pool_files, progress_bar, write_output, ModelArgs};
use super::train::SplitArgs;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example:
  ocrank select --runs runs/train-oc-sft-l1 runs/train-oc-sft-l5 \\
      --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --qrels ../shared/data/msmarco/dl21/qrels.txt --permutations 2 --out runs/selection.json")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub split: SplitArgs,
    /// Training run directories (from `ocrank train`): each checkpoint is a
    /// candidate; a run without checkpoints (train.json and the final
    /// `adapter/` only) contributes its final adapter.
    #[arg(long, value_name = "DIR", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Pools holding the held-out queries (usually the training pools).
    #[arg(long = "pools", value_name = "FILE", required = true, num_args = 1..)]
    pub pools: Vec<PathBuf>,
    #[arg(long, value_name = "FILE", required = true, num_args = 1..)]
    pub qrels: Vec<PathBuf>,
    #[arg(long, default_value_t = 20)]
    pub depth: usize,
    /// Permutations per held-out pool (0 is the canonical order).
    #[arg(long, default_value_t = 2, value_parser = super::common::permutation_count)]
    pub permutations: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Evaluate only every N-th checkpoint step (and the last).
    #[arg(long, default_value_t = 1)]
    pub every: usize,
    /// Also include the base model without adapter as a candidate.
    #[arg(long)]
    pub include_base: bool,
    /// Selection report (JSON); a Markdown table is written next to it.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    let mut qrels: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
    for q in &args.qrels {
        for (qid, m) in ocrank_data::read_qrels(q)?.by_query {
            qrels.entry(qid).or_default().extend(m);
        }
    }
    let pools: Vec<_> = load_pool_files(&args.pools, args.depth)?
        .into_iter()
        .filter(|p| {
            ocrank_train::is_heldout(&p.qid, args.split.heldout_fraction, args.split.split_seed)
                && qrels.contains_key(&p.qid)
        })
        .collect();
    anyhow::ensure!(
        !pools.is_empty(),
        "no judged held-out query in the pools (--heldout-fraction {})",
        args.split.heldout_fraction
    );
    // Candidates: (label, adapter dir or None, scorer config).
    let mut candidates: Vec<(String, Option<PathBuf>, ScoreConfig)> = Vec::new();
    for run in &args.runs {
        let path = run.join("train.json");
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("parsing {}", path.display()))?;
        let s = &doc["settings"];
        anyhow::ensure!(
            s["heldout_fraction"].as_f64() == Some(args.split.heldout_fraction)
                && s["split_seed"].as_u64() == Some(args.split.split_seed),
            "{}: trained with another held-out split than --heldout-fraction {} --split-seed {}",
            path.display(),
            args.split.heldout_fraction,
            args.split.split_seed
        );
        if let Some(split) = s["heldout_pools"].as_array() {
            // Training split only these files: queries of the others were
            // all trained on, held out by hash or not.
            let same = |a: &std::path::Path, b: &str| {
                let b = std::path::Path::new(b);
                a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
            };
            for p in &args.pools {
                anyhow::ensure!(
                    split.iter().filter_map(|v| v.as_str()).any(|f| same(p, f)),
                    "{}: trained with --heldout-pools {}, so the queries of {} were all trained on",
                    path.display(),
                    split
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    p.display()
                );
            }
        }
        let cfg: ScoreConfig = serde_json::from_value(s["scorer"].clone())
            .with_context(|| format!("{}: settings.scorer", path.display()))?;
        if args.include_base && candidates.iter().all(|c| c.1.is_some() || c.2 != cfg) {
            candidates.push(("base".into(), None, cfg.clone()));
        }
        let cks = ocrank_train::trainer::checkpoints(&run.join("checkpoints"))?;
        if cks.is_empty() {
            // A finished run kept without its checkpoints (train.json and the
            // final adapter, e.g. to compare lambdas of runs from earlier
            // sessions): its final adapter is the one candidate.
            let adapter = ocrank_train::trainer::final_adapter_dir(run);
            anyhow::ensure!(
                adapter.join("adapter_model.safetensors").exists(),
                "{}: no checkpoint yet, and no final adapter in {}",
                run.display(),
                adapter.display()
            );
            candidates.push((
                format!("{}@final", run.display()),
                Some(adapter),
                cfg.clone(),
            ));
            continue;
        }
        let last = cks.last().map(|c| c.0);
        for (step, dir) in cks {
            if step % args.every.max(1) == 0 || Some(step) == last {
                candidates.push((format!("{}@{step}", run.display()), Some(dir), cfg.clone()));
            }
        }
    }
    let mut engine = args.model.load()?;
    let plan = PermutationPlan::new(args.seed, args.permutations);
    let total: usize = candidates.len() * pools.len() * args.permutations;
    let bar = progress_bar(total as u64, "held-out orders");
    let mut rows = Vec::new();
    for (label, adapter, cfg) in &candidates {
        // Adapters stay unmerged: one base model serves every checkpoint.
        match adapter {
            Some(dir) => {
                engine
                    .decoder
                    .load_lora(dir)
                    .with_context(|| format!("loading {}", dir.display()))?;
            }
            None => engine.decoder.clear_lora(),
        }
        let engine = &engine;
        let scorer = Scorer::new(engine, cfg.clone())?;
        let mut per_query = BTreeMap::new();
        for pool in &pools {
            let ctx = scorer.prepare(&pool.query)?;
            let mut sum = 0.0;
            for (m, order) in plan
                .orders(&pool.qid, pool.candidates.len())
                .into_iter()
                .enumerate()
            {
                let mut scores = BTreeMap::new();
                for (w, window) in scorer.windows(&order).into_iter().enumerate() {
                    let (records, _) = scorer.score_window(&ctx, pool, m, w, &window)?;
                    for r in records {
                        scores.insert(r.candidate, r.score);
                    }
                }
                sum += ndcg_of_scores(&scores, &qrels[&pool.qid], 10);
                bar.inc(1);
            }
            per_query.insert(pool.qid.clone(), sum / args.permutations as f64);
        }
        let mean = per_query.values().sum::<f64>() / per_query.len() as f64;
        // Also when the bar is hidden (no terminal), where println is silent.
        bar.suspend(|| eprintln!("{label}: held-out nDCG@10 {mean:.4}"));
        rows.push(json!({"candidate": label, "adapter": adapter, "ndcg_at_10_mean": mean, "per_query": per_query}));
    }
    bar.finish_and_clear();
    let best = rows
        .iter()
        .max_by(|a, b| {
            a["ndcg_at_10_mean"]
                .as_f64()
                .partial_cmp(&b["ndcg_at_10_mean"].as_f64())
                .expect("finite nDCG")
        })
        .cloned()
        .expect("at least one candidate");
    let doc = json!({
        "command": command,
        "heldout_queries": pools.iter().map(|p| &p.qid).collect::<Vec<_>>(),
        "permutations": args.permutations,
        "criterion": "mean nDCG@10 over permutations 0..M-1 of the held-out pools (ranking quality only)",
        "candidates": rows,
        "selected": best,
    });
    write_output(&args.out, serde_json::to_string_pretty(&doc)?)?;
    let mut md = format!(
        "# Selection on {} held-out queries (M = {})\n\nCommand: `{command}`\n\n| candidate | held-out nDCG@10 (mean over orders) |\n|---|---|\n",
        pools.len(),
        args.permutations
    );
    for r in doc["candidates"].as_array().expect("array") {
        md.push_str(&format!(
            "| {} | {:.4} |\n",
            r["candidate"].as_str().unwrap_or(""),
            r["ndcg_at_10_mean"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    md.push_str(&format!(
        "\nSelected: **{}**\n",
        best["candidate"].as_str().unwrap_or("")
    ));
    let md_path = args.out.with_extension("md");
    write_output(&md_path, &md)?;
    print!("{md}");
    Ok(())
}
