//! `ocrank device-check`: the engine on a device (a GPU), checked and timed
//! without the model's weights.
//!
//! The GPU machine cannot receive the model (the SmolLM2 GGUF is 94 MB, a
//! device call carries 64 MiB), so this runs the real prompt pipeline
//! (SmolLM2's tokenizer and chat template, DL19 pools, B = 20 windows, the
//! real slot positions and grade tokens) on decoders with seeded random
//! weights in real shapes:
//! 1. parity: slot grade distributions on the device, in f32 and in bf16,
//!    against the CPU in f32 with the same weights;
//! 2. scoring: one window, N windows one after another, and the same N
//!    windows packed into one forward;
//! 3. training: a LoRA step with one view (single-order) and with two views
//!    (OC-SFT), rank 16 on all projections.
//!
//! The JSON report is rewritten after every measurement, so a run cut short
//! keeps what it measured.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use ocrank_engine::{
    pack, DType, Decoder, Device, DeviceSpec, Engine, Kernels, LoraConfig, ModelConfig,
};
use ocrank_score::{Scorer, Sequence};
use ocrank_train::{Example, Objective, TrainConfig, Trainer};
use serde_json::{json, Value};

use super::common::{command_line, PoolArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (what scripts/device-check.sh runs on the GPU machine):
  ocrank device-check --device cuda --tokenizer bundle/tokenizer \\
      --pools bundle/dl19-bm25-top100.json --out $OUT/device-check.json

Dry run on the CPU (small: one parity window, two scoring windows):
  ocrank device-check --device cpu --tokenizer runs/tokenizer \\
      --pools ../shared/data/msmarco/dl19/bm25-top100.json \\
      --parity smollm2-135m --bench smollm2-135m --windows 2 --repeats 1 \\
      --train-steps 1 --out runs/device-check-cpu.json")]
pub struct Args {
    /// The device under test; the reference is always the CPU in f32.
    #[arg(long, default_value = "cuda")]
    pub device: DeviceSpec,
    /// A directory with tokenizer.json and tokenizer_config.json (chat
    /// template), e.g. from `ocrank export-tokenizer`.
    #[arg(long, value_name = "DIR")]
    pub tokenizer: PathBuf,
    #[command(flatten)]
    pub pools: PoolArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    /// Model shapes checked for parity (smollm2-135m, qwen3-0.6b, qwen3-4b).
    #[arg(long, value_delimiter = ',', default_value = "smollm2-135m,qwen3-0.6b")]
    pub parity: Vec<String>,
    /// Windows compared per parity shape.
    #[arg(long, default_value_t = 2)]
    pub parity_windows: usize,
    /// Dtypes compared with the CPU's f32 (each with its tolerance on grade
    /// probabilities: f32 1e-3, bf16 and f16 2e-2).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    pub parity_dtypes: Vec<String>,
    /// Model shapes timed for scoring.
    #[arg(long, value_delimiter = ',', default_value = "smollm2-135m,qwen3-4b")]
    pub bench: Vec<String>,
    /// Precision of the timed runs.
    #[arg(long, default_value = "bf16")]
    pub bench_dtype: String,
    /// Windows scored in the batch measurements.
    #[arg(long, default_value_t = 50)]
    pub windows: usize,
    /// Timed repeats of each measurement (after one untimed warm-up); the
    /// median is reported.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Timed LoRA steps per objective (after one warm-up step); 0 skips
    /// training.
    #[arg(long, default_value_t = 5)]
    pub train_steps: usize,
    /// Model shape of the training steps.
    #[arg(long, default_value = "smollm2-135m")]
    pub train_shape: String,
    /// Seed of the random weights.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the report (JSON) here.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

fn shape(name: &str) -> anyhow::Result<ModelConfig> {
    ModelConfig::preset(name).with_context(|| {
        format!("unknown model shape '{name}' (smollm2-135m, qwen3-0.6b, qwen3-4b)")
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The report, written out after every addition.
struct Report {
    doc: Value,
    out: PathBuf,
}

impl Report {
    fn push(&mut self, section: &str, entry: Value) -> anyhow::Result<()> {
        eprintln!("{section}: {entry}");
        self.doc[section]
            .as_array_mut()
            .context("report section")?
            .push(entry);
        self.save()
    }

    fn save(&self) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&self.doc)?;
        Ok(ocrank_data::write_whole(&self.out, text.as_bytes())?)
    }
}

/// Grade distributions `[slots][4]` (f64 on the host) from slot logits.
fn grade_dists(
    logits: &ocrank_engine::Tensor,
    grade_ids: [u32; 4],
) -> anyhow::Result<Vec<[f64; 4]>> {
    let ids = ocrank_engine::Tensor::new(&grade_ids, logits.device())?;
    let g: Vec<Vec<f32>> = logits
        .index_select(&ids, 1)?
        .to_dtype(DType::F32)?
        .to_vec2()?;
    Ok(g.iter()
        .map(|row| {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let e: Vec<f64> = row.iter().map(|&x| (x as f64 - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            [e[0] / sum, e[1] / sum, e[2] / sum, e[3] / sum]
        })
        .collect())
}

/// Runs `f` once untimed, then `repeats` times; each timing ends after the
/// device has finished its queued work.
fn time<T>(
    device: &Device,
    repeats: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Vec<f64>> {
    f()?;
    device.synchronize()?;
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let t0 = Instant::now();
        f()?;
        device.synchronize()?;
        times.push(t0.elapsed().as_secs_f64());
    }
    Ok(times)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    anyhow::ensure!(args.repeats >= 1, "--repeats must be at least 1");
    anyhow::ensure!(args.windows >= 1, "--windows must be at least 1");
    let device = args.device.open()?;
    let bench_dtype = ocrank_engine::parse_dtype(&args.bench_dtype)?;
    let pools = args.pools.load()?;
    let cfg = args.scorer.config();
    let mut report = Report {
        doc: json!({
            "command": command,
            "device": args.device.to_string(),
            "cuda_build": ocrank_engine::device::cuda_built(),
            "host_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
            "weights": format!("seeded random (seed {}) in the named shapes; the tokenizer, template, \
                                prompts and slots are SmolLM2's, the texts DL19's", args.seed),
            "prompt": {"width": cfg.width, "template": format!("{:?}", cfg.prompt.template).to_lowercase(),
                       "max_chars": cfg.prompt.max_chars, "pools": args.pools.pools.display().to_string()},
            "parity": [], "scoring": [], "training": [],
        }),
        out: args.out.clone(),
    };
    report.save()?;

    // The windows: DL19 pools in BM25 order, cut into windows of B, each one
    // sequence with its query's prefix.
    // Only the tokenizer and template are used here: a tiny decoder with the
    // tokenizer's vocabulary is enough.
    let mut tiny = ModelConfig::tiny(ocrank_engine::Arch::Llama);
    tiny.vocab_size = shape("smollm2-135m")?.vocab_size;
    let small = Engine::random(&args.tokenizer, tiny, 0, DType::F32, &Device::Cpu)?;
    let scorer = Scorer::new(&small, cfg.clone())?;
    let mut windows: Vec<Sequence> = Vec::new();
    'pools: for pool in &pools {
        let q = scorer.query_text(&pool.query)?;
        let order: Vec<usize> = (0..pool.candidates.len()).collect();
        for w in scorer.windows(&order) {
            let texts: Vec<&str> = w
                .iter()
                .map(|&i| pool.candidates[i].text.as_str())
                .collect();
            windows.push(
                scorer
                    .batched_sequence(&q, &texts)?
                    .with_prefix(&q.prefix_tokens),
            );
            if windows.len() == args.windows.max(args.parity_windows) {
                break 'pools;
            }
        }
    }
    anyhow::ensure!(
        !windows.is_empty(),
        "no windows in {}",
        args.pools.pools.display()
    );
    let grade_ids = scorer.grade_ids();
    let lens: Vec<usize> = windows.iter().map(|w| w.tokens.len()).collect();
    report.doc["windows"] = json!({
        "count": windows.len(),
        "tokens_mean": lens.iter().sum::<usize>() as f64 / lens.len() as f64,
        "tokens_min": lens.iter().min(), "tokens_max": lens.iter().max(),
        "first_window_tokens": lens[0],
    });
    report.save()?;

    // A failed measurement is recorded and the others still run: the device
    // is lent for minutes, and one run should say as much as it can.
    let mut failures = 0;
    let mut record = |report: &mut Report, section: &str, what: &str, r: anyhow::Result<()>| {
        if let Err(e) = r {
            failures += 1;
            let entry = json!({"shape": what, "error": format!("{e:#}")});
            if let Err(e) = report.push(section, entry) {
                eprintln!("error: {e:#}");
            }
        }
    };
    for name in &args.parity {
        let r = parity(&args, &device, name, &windows, grade_ids, &mut report);
        record(&mut report, "parity", name, r);
    }
    for name in &args.bench {
        let r = scoring(
            &args,
            &device,
            bench_dtype,
            name,
            &windows,
            grade_ids,
            &mut report,
        );
        record(&mut report, "scoring", name, r);
    }
    if args.train_steps > 0 {
        let r = training(&args, &device, bench_dtype, &pools, &mut report);
        record(&mut report, "training", &args.train_shape, r);
    }
    let over = report.doc["parity"].as_array().map_or(0, |a| {
        a.iter().filter(|e| e["pass"] == json!(false)).count()
    });
    report.doc["failures"] = json!({"errors": failures, "parity_over_tolerance": over});
    report.save()?;
    eprintln!("wrote {}", args.out.display());
    anyhow::ensure!(
        failures == 0 && over == 0,
        "{failures} measurement(s) failed and {over} parity check(s) exceeded their tolerance (see {})",
        args.out.display()
    );
    Ok(())
}

fn parity(
    args: &Args,
    device: &Device,
    name: &str,
    windows: &[Sequence],
    grade_ids: [u32; 4],
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut cpu = Decoder::random(shape(name)?, args.seed, DType::F32, &Device::Cpu)?;
    // Random unit-variance embeddings (tied to the output head) give logits
    // of std ~sqrt(hidden): one-hot grade distributions, on which any two
    // forwards agree. A final-norm gain of 2.5/sqrt(hidden) brings the logits
    // to std ~2.5, so the comparison sees real probabilities.
    let gain = 2.5 / (cpu.cfg.hidden_size as f64).sqrt();
    cpu.norm = (cpu.norm * gain)?;
    let windows = &windows[..args.parity_windows.min(windows.len())];
    let reference: Vec<Vec<[f64; 4]>> = windows
        .iter()
        .map(|w| grade_dists(&cpu.forward(&w.forward_input())?.logits, grade_ids))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // How peaked the reference is: differences mean little on one-hot rows.
    let slots: Vec<&[f64; 4]> = reference.iter().flatten().collect();
    let top = slots
        .iter()
        .map(|p| p.iter().copied().fold(0.0, f64::max))
        .sum::<f64>()
        / slots.len() as f64;
    for dtype_name in &args.parity_dtypes {
        let dtype = ocrank_engine::parse_dtype(dtype_name)?;
        let tolerance = if dtype == DType::F32 { 1e-3 } else { 2e-2 };
        for kernels in [Kernels::Fused, Kernels::Composite] {
            let mut dev = cpu.to(dtype, device)?;
            dev.kernels = kernels;
            let (mut max, mut sum, mut n, mut argmax_same) = (0f64, 0f64, 0usize, 0usize);
            for (w, want) in windows.iter().zip(&reference) {
                let got = grade_dists(&dev.forward(&w.forward_input())?.logits, grade_ids)?;
                for (g, r) in got.iter().zip(want) {
                    for k in 0..4 {
                        let d = (g[k] - r[k]).abs();
                        max = max.max(d);
                        sum += d;
                    }
                    n += 4;
                    let am = |p: &[f64; 4]| (0..4).max_by(|&a, &b| p[a].total_cmp(&p[b]));
                    argmax_same += usize::from(am(g) == am(r));
                }
            }
            report.push(
                "parity",
                json!({
                    "shape": name, "dtype": dtype_name, "kernels": format!("{kernels:?}").to_lowercase(),
                    "windows": windows.len(), "slots": n / 4,
                    "max_abs_diff": max, "mean_abs_diff": sum / n as f64,
                    "argmax_agreement": argmax_same as f64 / (n / 4) as f64,
                    "reference_mean_top_probability": top,
                    "final_norm_gain": gain,
                    "tolerance": tolerance, "pass": max <= tolerance,
                }),
            )?;
        }
    }
    Ok(())
}

fn scoring(
    args: &Args,
    device: &Device,
    dtype: DType,
    name: &str,
    windows: &[Sequence],
    grade_ids: [u32; 4],
    report: &mut Report,
) -> anyhow::Result<()> {
    let cfg = shape(name)?;
    let t0 = Instant::now();
    let decoder = Decoder::random_on_device(cfg, args.seed, dtype, device)?;
    device.synchronize()?;
    let build_s = t0.elapsed().as_secs_f64();
    let windows = &windows[..args.windows.min(windows.len())];
    let read = |logits: &ocrank_engine::Tensor| grade_dists(logits, grade_ids);
    let one = time(device, args.repeats, || {
        read(&decoder.forward(&windows[0].forward_input())?.logits)
    })?;
    let sequential = time(device, args.repeats, || {
        for w in windows {
            read(&decoder.forward(&w.forward_input())?.logits)?;
        }
        Ok(())
    })?;
    let inputs: Vec<_> = windows.iter().map(|w| w.forward_input()).collect();
    let packed = pack(&inputs)?;
    let batched = time(device, args.repeats, || {
        let logits = decoder.forward(&packed.input())?.logits;
        read(&logits)
    })?;
    let (m1, ms, mb) = (
        median(one.clone()),
        median(sequential.clone()),
        median(batched.clone()),
    );
    report.push(
        "scoring",
        json!({
            "shape": name, "dtype": args.bench_dtype, "params": decoder.num_params(),
            "weights_build_seconds": build_s,
            "window_tokens": windows[0].tokens.len(),
            "one_window": {"median_seconds": m1, "seconds": one},
            "windows": windows.len(),
            "tokens": packed.tokens.len(),
            "sequential": {"median_seconds": ms, "windows_per_second": windows.len() as f64 / ms, "seconds": sequential},
            "packed": {"median_seconds": mb, "windows_per_second": windows.len() as f64 / mb, "seconds": batched},
        }),
    )?;
    Ok(())
}

fn training(
    args: &Args,
    device: &Device,
    dtype: DType,
    pools: &[ocrank_data::Pool],
    report: &mut Report,
) -> anyhow::Result<()> {
    let cfg = args.scorer.config();
    let mut engine = Engine::random(
        &args.tokenizer,
        shape(&args.train_shape)?,
        args.seed,
        DType::F32,
        &Device::Cpu,
    )?;
    engine.decoder = engine.decoder.to(dtype, device)?;
    engine.decoder.kernels = Kernels::Composite;
    let lora = LoraConfig::default();
    engine.decoder.attach_lora(&lora, args.seed)?;
    let scorer = Scorer::new(&engine, cfg.clone())?;
    // Timing only: targets fall linearly with the BM25 rank.
    let mut examples = Vec::new();
    for pool in pools.iter().take(4) {
        let w: Vec<_> = pool.candidates.iter().take(cfg.width).collect();
        let n = w.len().max(2) as f64;
        examples.push(Example {
            qid: pool.qid.clone(),
            query: pool.query.clone(),
            ids: w.iter().map(|c| c.id.clone()).collect(),
            texts: w.iter().map(|c| c.text.clone()).collect(),
            labels: (0..w.len())
                .map(|i| 3.0 * (1.0 - i as f64 / (n - 1.0)))
                .collect(),
        });
    }
    let objectives = [Objective::SingleOrder, Objective::OcSft];
    let mut trainers = objectives
        .iter()
        .map(|&objective| {
            Trainer::new(
                &scorer,
                examples.clone(),
                TrainConfig {
                    lora: lora.clone(),
                    seed: args.seed,
                    ..TrainConfig::new(objective, args.train_steps + 1, 5.0)
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut times = vec![Vec::new(); trainers.len()];
    let mut tokens = vec![Vec::new(); trainers.len()];
    for round in 0..=args.train_steps {
        for (i, t) in trainers.iter_mut().enumerate() {
            let log = t.train_step().context("training step")?;
            device.synchronize()?;
            anyhow::ensure!(
                log.loss.is_finite(),
                "training loss is {} on {}",
                log.loss,
                args.device
            );
            if round > 0 {
                times[i].push(log.seconds);
            }
            let ex = &t.examples[log.example];
            let q = scorer.query_text(&ex.query)?;
            let texts: Vec<&str> = ex.texts.iter().map(|s| s.as_str()).collect();
            tokens[i]
                .push(q.prefix_tokens.len() + scorer.batched_sequence(&q, &texts)?.tokens.len());
        }
    }
    for (i, o) in objectives.iter().enumerate() {
        report.push(
            "training",
            json!({
                "shape": args.train_shape, "dtype": args.bench_dtype, "objective": o.to_string(),
                "views": if *o == Objective::OcSft { 2 } else { 1 },
                "lora": {"rank": lora.rank, "alpha": lora.alpha, "dropout": lora.dropout, "modules": lora.targets},
                "tokens_per_view": tokens[i],
                "median_step_seconds": median(times[i].clone()), "seconds": times[i],
                "labels": "synthetic (linear in BM25 rank): a timing, not a training run",
            }),
        )?;
    }
    Ok(())
}
