//! `ocrank train-bench`: the cost of a training step per objective and window
//! shape, measured side by side in one run (steps interleaved, so load on the
//! machine hits every variant alike), reported as medians and ratios to the
//! first variant, per step and per candidate.

use std::path::PathBuf;

use anyhow::Context;
use ocrank_engine::{Kernels, LoraConfig};
use ocrank_score::{Mode, Scorer};
use ocrank_train::{Objective, TrainConfig, Trainer};
use serde_json::json;

use super::common::{command_line, load_pool_files, write_output, ModelArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (the protocol's shape: width 10, candidates cut to 600 characters):
  ocrank train-bench --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --labels runs/labels-gold.jsonl --width 10 --max-chars 600 --template compact \\
      --steps 3 --out bench/train.json
Pointwise windows against invariant windows of 10 (single-order, per candidate):
  ocrank train-bench ... --objectives single-order --shapes batched:1,invariant:10")]
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
    /// Window shapes `MODE:WIDTH` to time, each with every objective it
    /// accepts (default: --mode and --width).
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    pub shapes: Vec<(Mode, usize)>,
    /// Write the measurements (JSON) here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn parse_shape(s: &str) -> Result<(Mode, usize), String> {
    let (mode, width) = s
        .split_once(':')
        .ok_or_else(|| format!("window shape {s:?} is not MODE:WIDTH (e.g. invariant:10)"))?;
    let width: usize = width
        .parse()
        .map_err(|_| format!("window shape {s:?}: width {width:?} is not a number"))?;
    if width == 0 {
        return Err(format!("window shape {s:?}: the width must be at least 1"));
    }
    Ok((mode.parse()?, width))
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
    let command = command_line();
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let labels = ocrank_data::read_labels(&args.data.labels)?;
    let pools = load_pool_files(&args.data.pools, args.data.depth)?;
    let base_cfg = args.scorer.config();
    let shapes = if args.shapes.is_empty() {
        vec![(base_cfg.mode, base_cfg.width)]
    } else {
        args.shapes.clone()
    };
    let lora = LoraConfig::default();
    let mut engine = args.model.load()?;
    engine.decoder.kernels = Kernels::Composite;
    engine.decoder.attach_lora(&lora, 0)?;
    let scorers = shapes
        .iter()
        .map(|&(mode, width)| {
            let mut cfg = base_cfg.clone();
            cfg.mode = mode;
            cfg.width = width;
            Scorer::new(&engine, cfg)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // One trainer per (shape, objective); every trainer is built before
    // any step runs, so a refused combination fails fast.
    let mut variants = Vec::new();
    for (scorer, &(mode, width)) in scorers.iter().zip(&shapes) {
        let examples = ocrank_train::examples(&pools, &labels, args.data.depth, width)?;
        for &objective in &args.objectives {
            let tcfg = TrainConfig {
                lora: lora.clone(),
                ..TrainConfig::new(objective, args.steps + 1, 5.0)
            };
            let trainer = Trainer::new(scorer, examples.clone(), tcfg)
                .with_context(|| format!("{objective} on {mode}:{width} windows"))?;
            variants.push((objective, mode, width, scorer, trainer));
        }
    }
    let n = variants.len();
    let mut times = vec![Vec::new(); n];
    let mut candidates = vec![0usize; n];
    let mut tokens = vec![0usize; n];
    for round in 0..=args.steps {
        for (i, (objective, mode, width, scorer, t)) in variants.iter_mut().enumerate() {
            let log = t.train_step().context("training step")?;
            let ex = &t.examples[log.example];
            if round > 0 {
                times[i].push(log.seconds);
                candidates[i] += ex.ids.len();
            } else {
                let q = scorer.query_text(&ex.query)?;
                let texts: Vec<&str> = ex.texts.iter().map(|s| s.as_str()).collect();
                tokens[i] = ocrank_train::loss::window_input(scorer, &q, &texts)?
                    .tokens
                    .len();
            }
            eprintln!(
                "{objective} on {mode}:{width} step {round}: {:.2} s{}",
                log.seconds,
                if round == 0 {
                    " (warm-up, not timed)"
                } else {
                    ""
                }
            );
        }
    }
    let rows: Vec<_> = variants
        .iter()
        .enumerate()
        .map(|(i, (o, mode, width, _, _))| {
            let m = median(times[i].clone());
            let per_candidate = times[i].iter().sum::<f64>() / candidates[i].max(1) as f64;
            json!({"objective": o.to_string(), "mode": mode.to_string(), "width": width,
                   "views": if *o == Objective::OcSft {2} else {1},
                   "tokens_per_view": tokens[i],
                   "median_step_seconds": m, "steps": times[i],
                   "seconds_per_candidate": per_candidate})
        })
        .collect();
    let first = |key: &str| rows[0][key].as_f64().unwrap_or(f64::NAN);
    let (base_step, base_candidate) =
        (first("median_step_seconds"), first("seconds_per_candidate"));
    let rows: Vec<_> = rows
        .into_iter()
        .map(|mut r| {
            let step = r["median_step_seconds"].as_f64().unwrap_or(f64::NAN);
            let cand = r["seconds_per_candidate"].as_f64().unwrap_or(f64::NAN);
            r["ratio_to_first"] = json!(step / base_step);
            r["candidate_ratio_to_first"] = json!(cand / base_candidate);
            r
        })
        .collect();
    println!(
        "| objective | windows | views | tokens per view | median s/step | ratio | s/candidate | ratio |\n|---|---|---|---|---|---|---|---|"
    );
    for r in &rows {
        println!(
            "| {} | {}:{} | {} | {} | {:.2} | {:.2}x | {:.3} | {:.2}x |",
            r["objective"].as_str().unwrap_or(""),
            r["mode"].as_str().unwrap_or(""),
            r["width"],
            r["views"],
            r["tokens_per_view"],
            r["median_step_seconds"].as_f64().unwrap_or(f64::NAN),
            r["ratio_to_first"].as_f64().unwrap_or(f64::NAN),
            r["seconds_per_candidate"].as_f64().unwrap_or(f64::NAN),
            r["candidate_ratio_to_first"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!("\nratios are to the first row; tokens of the first window, prefix included; LoRA rank 16 on all projections, f32 CPU");
    if let Some(out) = &args.out {
        let doc = json!({"command": command, "threads": rayon_threads(), "results": rows});
        write_output(out, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
