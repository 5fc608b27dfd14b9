//! `ocrank bench`: engine throughput by mode on real pools, side by side in
//! one run (this machine is noisy: compare ratios, not absolute times).
//!
//! Per mode it reports forwards, tokens per forward, seconds per window and
//! per query, tokens/s, and the FLOP-bound time from a gemm peak measured in
//! the same run. `scripts/bench_engine.sh` adds llama.cpp on the same token
//! ids.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use ocrank_engine::{Device, Tensor};
use ocrank_score::{Mode, Scorer, Template};
use serde_json::json;

use super::common::{command_line, write_output, ModelArgs, PoolArgs};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub pools: PoolArgs,
    /// Window width for the batched and invariant modes.
    #[arg(long, default_value_t = 20)]
    pub width: usize,
    /// Configurations to run, as mode:template (template standard|compact).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "batched:standard,pointwise:standard,batched:compact,invariant:compact"
    )]
    pub configs: Vec<String>,
    /// JSON file for the results.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Measured f32 gemm throughput (GFLOP/s) on a square product.
fn gemm_peak() -> anyhow::Result<f64> {
    let n = 1536;
    let a = Tensor::randn(0f32, 1.0, (n, n), &Device::Cpu)?;
    let b = Tensor::randn(0f32, 1.0, (n, n), &Device::Cpu)?;
    a.matmul(&b)?;
    let reps = 5;
    let t = Instant::now();
    for _ in 0..reps {
        a.matmul(&b)?;
    }
    Ok(2.0 * (n * n * n * reps) as f64 / t.elapsed().as_secs_f64() / 1e9)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let pools = args.pools.load()?;
    let engine = args.model.load()?;
    let peak = gemm_peak()?;
    let cfg = &engine.decoder.cfg;
    // FLOPs per token of the projections (2 per multiply-add), and per
    // (query, visible key) pair of attention (q.k and p.v).
    let proj_params = cfg.num_layers
        * (cfg.hidden_size * cfg.head_dim * (2 * cfg.num_heads + 2 * cfg.num_kv_heads)
            + 3 * cfg.hidden_size * cfg.intermediate_size);
    let flops_token = 2.0 * proj_params as f64;
    let flops_pair = (4 * cfg.num_layers * cfg.num_heads * cfg.head_dim) as f64;
    let flops_head = 2.0 * (cfg.vocab_size * cfg.hidden_size) as f64;
    eprintln!(
        "gemm peak {peak:.0} GFLOP/s (f32, {} threads)",
        rayon_threads()
    );

    let mut rows = Vec::new();
    for spec in &args.configs {
        let (mode, template) = spec
            .split_once(':')
            .with_context(|| format!("config {spec:?} is not mode:template"))?;
        let mode: Mode = mode.parse().map_err(anyhow::Error::msg)?;
        let template: Template = template.parse().map_err(anyhow::Error::msg)?;
        let mut sc = ocrank_score::ScoreConfig {
            mode,
            width: if mode == Mode::Pointwise {
                1
            } else {
                args.width
            },
            ..Default::default()
        };
        sc.prompt.template = template;
        let scorer = Scorer::new(&engine, sc)?;
        let (mut windows, mut forwards, mut tokens, mut flops, mut slots) = (0, 0, 0, 0.0, 0);
        let start = Instant::now();
        let mut prefix_secs = 0.0;
        for pool in &pools {
            let t = Instant::now();
            let ctx = scorer.prepare(&pool.query)?;
            prefix_secs += t.elapsed().as_secs_f64();
            let p = ctx.cache.len as f64;
            let order: Vec<usize> = (0..pool.candidates.len()).collect();
            for (w, window) in scorer.windows(&order).iter().enumerate() {
                let texts: Vec<&str> = window
                    .iter()
                    .map(|&c| pool.candidates[c].text.as_str())
                    .collect();
                let seq = match mode {
                    Mode::Batched => scorer.batched_sequence(&ctx.query, &texts)?,
                    _ => scorer.invariant_sequence(&ctx.query, &texts)?,
                };
                // Visible keys per query row: the prefix plus its block so far.
                let pairs: f64 = seq
                    .positions
                    .iter()
                    .map(|&pos| p + (pos as f64 - p) + 1.0)
                    .sum();
                flops += seq.tokens.len() as f64 * flops_token
                    + pairs * flops_pair
                    + seq.readout.len() as f64 * flops_head;
                let (_, cost) = scorer.score_window(&ctx, pool, 0, w, window)?;
                windows += 1;
                forwards += cost.forwards;
                tokens += cost.tokens;
                slots += window.len();
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let row = json!({
            "mode": mode.to_string(), "template": format!("{template:?}").to_lowercase(),
            "width": scorer.cfg.width, "queries": pools.len(), "candidates": slots,
            "windows": windows, "forwards": forwards, "tokens": tokens,
            "tokens_per_forward": tokens as f64 / forwards as f64,
            "seconds": secs, "prefix_seconds": prefix_secs,
            "seconds_per_query": secs / pools.len() as f64,
            "seconds_per_forward": secs / forwards as f64,
            "tokens_per_second": tokens as f64 / secs,
            "gflop": flops / 1e9,
            "flop_bound_seconds": flops / (peak * 1e9),
            "efficiency": flops / (peak * 1e9) / secs,
        });
        eprintln!("{row}");
        rows.push(row);
    }
    let report = json!({
        "command": command_line(),
        "model": engine.path, "gemm_peak_gflops": peak, "threads": rayon_threads(),
        "pools": args.pools.pools, "depth": args.pools.depth, "configs": rows,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(out) = &args.out {
        write_output(out, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
