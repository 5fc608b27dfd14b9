//! `ocrank score`: score pools under M seeded permutations and write the
//! scores JSONL of SPEC.md section 7.

use std::path::PathBuf;

use anyhow::Context;
use ocrank_data::scores::ScoresWriter;
use ocrank_plan::PermutationPlan;
use ocrank_score::Scorer;

use super::common::{progress_bar, ModelArgs, PoolArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example:
  ocrank score --pools ../shared/data/msmarco/dl19/bm25-top100.json --depth 20 \\
      --width 20 --mode invariant --permutations 3 --out scores.jsonl")]
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
    /// Scores JSONL to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let pools = args.pools.load()?;
    let engine = args.model.load()?;
    let scorer = Scorer::new(&engine, args.scorer.config())?;
    let plan = PermutationPlan::new(args.seed, args.permutations);
    let total: usize = pools
        .iter()
        .map(|p| {
            scorer
                .windows(&plan.order(&p.qid, p.candidates.len(), 0))
                .len()
        })
        .sum::<usize>()
        * args.permutations;
    let bar = progress_bar(total as u64, "windows");
    let mut out = ScoresWriter::create(&args.out)?;
    let mut tokens = 0usize;
    let started = std::time::Instant::now();
    for pool in &pools {
        let ctx = scorer
            .prepare(&pool.query)
            .with_context(|| format!("query {}", pool.qid))?;
        for (m, order) in plan
            .orders(&pool.qid, pool.candidates.len())
            .iter()
            .enumerate()
        {
            for (w, window) in scorer.windows(order).iter().enumerate() {
                let (records, cost) = scorer
                    .score_window(&ctx, pool, m, w, window)
                    .with_context(|| format!("query {} permutation {m} window {w}", pool.qid))?;
                tokens += cost.tokens;
                for r in &records {
                    out.write(r)?;
                }
                out.flush()?;
                bar.inc(1);
            }
        }
    }
    out.finish()?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "scored {} queries x {} permutations: {total} windows, {tokens} tokens in {secs:.1} s ({:.0} tokens/s) -> {}",
        pools.len(),
        args.permutations,
        tokens as f64 / secs,
        args.out.display()
    );
    Ok(())
}
