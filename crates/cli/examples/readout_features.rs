//! Hidden states of the frozen decoder at each candidate's slot readout, for
//! a linear probe (`scripts/readout_probe.py`): does the model's state where
//! it reads a grade encode relevance at all, before any training?
//!
//! Each candidate is read as in `--mode invariant` (it sees the query prefix
//! and itself only), so a feature depends on the candidate, not on its
//! neighbours or slot. Writes `DIR/features.f32` (little-endian f32, one row
//! of `layers x hidden` per candidate, layers in the order given) and
//! `DIR/index.jsonl` (qid, candidate id, file; one line per row, same order).
//!
//! cargo run --release -p ocrank --example readout_features -- \
//!     --pools ../shared/data/msmarco/dl19/bm25-top100.json --depth 20 \
//!     --layers 15,22,30 --out runs/probe/features-dl19

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use ocrank_engine::{DType, Device, Engine, ForwardInput, Kernels};
use ocrank_score::{Mode, PromptConfig, ScoreConfig, Scorer, Template};

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value = "models/SmolLM2-135M-Instruct.Q4_1.gguf")]
    model: PathBuf,
    /// Pool files (rank_llm JSON or our JSONL).
    #[arg(long, required = true, num_args = 1..)]
    pools: Vec<PathBuf>,
    #[arg(long, default_value_t = 20)]
    depth: usize,
    /// Candidates per forward (invariant blocks sharing one prefix).
    #[arg(long, default_value_t = 10)]
    width: usize,
    #[arg(long, default_value_t = 300)]
    max_chars: usize,
    /// Outputs of these layers (1-based: layer L is the last one's output,
    /// before the final norm).
    #[arg(long, value_delimiter = ',', default_value = "30")]
    layers: Vec<usize>,
    #[arg(long)]
    out: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut engine = Engine::load(&args.model, DType::F32, &Device::Cpu)
        .with_context(|| format!("loading {}", args.model.display()))?;
    // The staged forward (one layer at a time) runs on the composite kernels.
    engine.decoder.kernels = Kernels::Composite;
    let n_layers = engine.decoder.layers.len();
    for &l in &args.layers {
        anyhow::ensure!(
            (1..=n_layers).contains(&l),
            "--layers {l}: the model has layers 1..={n_layers}"
        );
    }
    let scorer = Scorer::new(
        &engine,
        ScoreConfig {
            prompt: PromptConfig {
                template: Template::Compact,
                max_chars: args.max_chars,
                ..PromptConfig::default()
            },
            mode: Mode::Invariant,
            width: args.width,
            ..ScoreConfig::default()
        },
    )?;
    std::fs::create_dir_all(&args.out)?;
    let mut feats = std::io::BufWriter::new(std::fs::File::create(args.out.join("features.f32"))?);
    let mut index = std::io::BufWriter::new(std::fs::File::create(args.out.join("index.jsonl"))?);
    let mut rows = 0usize;
    for path in &args.pools {
        let pools = ocrank_data::read_pools(path)?;
        for (n, pool) in pools.iter().enumerate() {
            let pool = pool.truncated(args.depth);
            let q = scorer.query_text(&pool.query)?;
            for chunk in pool.candidates.chunks(args.width.max(1)) {
                let texts: Vec<&str> = chunk.iter().map(|c| c.text.as_str()).collect();
                let seq = scorer
                    .invariant_sequence(&q, &texts)?
                    .with_prefix(&q.prefix_tokens);
                let input =
                    ForwardInput::whole(&seq.tokens, &seq.positions, &seq.mask, &seq.readout);
                let (mut x, staged) = engine.decoder.stage(&input)?;
                let idx = index_tensor(&seq.readout)?;
                let mut per_layer = Vec::new();
                for i in 0..n_layers {
                    x = engine.decoder.stage_layer(i, &x, &staged)?;
                    if args.layers.contains(&(i + 1)) {
                        per_layer.push((i + 1, x.index_select(&idx, 0)?.to_vec2::<f32>()?));
                    }
                }
                for (slot, c) in chunk.iter().enumerate() {
                    for &l in &args.layers {
                        let (_, h) = per_layer.iter().find(|(k, _)| *k == l).expect("layer");
                        for v in &h[slot] {
                            feats.write_all(&v.to_le_bytes())?;
                        }
                    }
                    let line = serde_json::json!({"qid": pool.qid, "candidate": c.id,
                                                  "file": path.display().to_string()});
                    writeln!(index, "{line}")?;
                    rows += 1;
                }
            }
            eprintln!(
                "{}: {}/{} queries, {rows} rows",
                path.display(),
                n + 1,
                pools.len()
            );
        }
    }
    let meta = serde_json::json!({"rows": rows, "hidden": engine.decoder.cfg.hidden_size,
        "layers": args.layers, "model": args.model.display().to_string(),
        "depth": args.depth, "max_chars": args.max_chars, "template": "compact",
        "mode": "invariant",
        "command": std::env::args().collect::<Vec<_>>().join(" ")});
    std::fs::write(
        args.out.join("meta.json"),
        serde_json::to_string_pretty(&meta)?,
    )?;
    feats.flush()?;
    index.flush()?;
    Ok(())
}

fn index_tensor(rows: &[usize]) -> anyhow::Result<ocrank_engine::Tensor> {
    let idx: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    Ok(ocrank_engine::Tensor::from_vec(
        idx,
        rows.len(),
        &Device::Cpu,
    )?)
}
