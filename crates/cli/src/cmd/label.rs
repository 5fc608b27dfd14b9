//! `ocrank label`: grade targets on the 0-3 scale for training (SPEC.md
//! section 5), from gold qrels, from an LLM teacher's scores (one order or
//! averaged over T orders), or from a sentence-embedding teacher mapped to
//! grades by isotonic regression on judged data.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use ocrank_data::{LabelHeader, Labels, Pool};
use serde_json::json;

use super::common::{command_line, load_pool_files, sha256_file, sha256_files};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Teacher {
    /// Qrels grades (unjudged = 0, clipped to 0-3).
    Gold,
    /// An LLM scorer's expected grades from a scores JSONL (`ocrank score`);
    /// --orders T averages permutations 0..T-1 (1 = single-order).
    Llm,
    /// Cosine similarity of a sentence-embedding model (all-MiniLM-L6-v2),
    /// mapped to grades by isotonic regression fitted on judged pools.
    Embedding,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  ocrank label --teacher gold --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --qrels ../shared/data/msmarco/dl21/qrels.txt --depth 20 --out runs/labels-gold.jsonl
  ocrank score --pools P --permutations 10 --out runs/teacher.jsonl
  ocrank label --teacher llm --scores runs/teacher.jsonl --orders 10 --pools P --out L
  ocrank audit --pools P --adapter A --permutations 10 --out runs/teacher-audit
  ocrank label --teacher llm --scores runs/teacher-audit --orders 10 --pools P --out L
  ocrank label --teacher embedding --pools P --calibration-pools ../shared/data/msmarco/dl22/bm25-top100.json \\
      --calibration-qrels ../shared/data/msmarco/dl22/qrels.txt --out L")]
pub struct Args {
    #[arg(long, value_enum)]
    pub teacher: Teacher,
    /// Pools to label (several files may be given).
    #[arg(long = "pools", value_name = "FILE", required = true, num_args = 1..)]
    pub pools: Vec<PathBuf>,
    /// Label the first N candidates of each pool.
    #[arg(long, default_value_t = 100)]
    pub depth: usize,
    /// Gold teacher: qrels files (several may be given).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub qrels: Vec<PathBuf>,
    /// LLM teacher: its scores, each a scores JSONL (`ocrank score`) or an
    /// audit directory (`ocrank audit --out DIR`, read with its checksums);
    /// several may be given (e.g. one audit per pool file).
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub scores: Vec<PathBuf>,
    /// LLM teacher: average permutations 0..T-1 of each candidate.
    #[arg(long, default_value_t = 1)]
    pub orders: usize,
    /// Embedding teacher: the model directory (safetensors + tokenizer.json).
    #[arg(long, value_name = "DIR", default_value = "models/all-MiniLM-L6-v2")]
    pub encoder: PathBuf,
    /// Embedding teacher: judged pools to fit the cosine-to-grade mapping on.
    #[arg(long, value_name = "FILE")]
    pub calibration_pools: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub calibration_qrels: Option<PathBuf>,
    /// Output labels JSONL.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    let pools = load_pool_files(&args.pools, args.depth)?;
    let pool_hashes = sha256_files(&args.pools)?;
    let (by_query, orders, provenance) = match args.teacher {
        Teacher::Gold => gold(&args, &pools)?,
        Teacher::Llm => llm(&args, &pools)?,
        Teacher::Embedding => embedding(&args, &pools)?,
    };
    let mut provenance = provenance;
    provenance["pools"] = json!(pool_hashes);
    provenance["depth"] = json!(args.depth);
    provenance["command"] = json!(command);
    let labels = Labels {
        header: LabelHeader {
            ocrank_labels: 1,
            teacher: format!("{:?}", args.teacher).to_lowercase(),
            orders,
            provenance,
        },
        by_query,
    };
    ocrank_data::write_labels(&args.out, &labels)?;
    let n = labels.len();
    let mean = labels
        .by_query
        .values()
        .flat_map(|m| m.values())
        .sum::<f64>()
        / n.max(1) as f64;
    eprintln!(
        "{n} labels for {} queries (mean grade {mean:.3}) -> {}",
        labels.by_query.len(),
        args.out.display()
    );
    Ok(())
}

type LabelMap = BTreeMap<String, BTreeMap<String, f64>>;

fn gold(args: &Args, pools: &[Pool]) -> anyhow::Result<(LabelMap, usize, serde_json::Value)> {
    anyhow::ensure!(!args.qrels.is_empty(), "--teacher gold needs --qrels");
    let mut judged: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
    let mut hashes = BTreeMap::new();
    for q in &args.qrels {
        for (qid, m) in ocrank_data::read_qrels(q)?.by_query {
            judged.entry(qid).or_default().extend(m);
        }
        hashes.insert(q.display().to_string(), sha256_file(q)?);
    }
    let mut out = LabelMap::new();
    for p in pools {
        let j = judged.get(&p.qid).with_context(|| {
            format!(
                "query {:?} has no judgments in {}",
                p.qid,
                args.qrels
                    .iter()
                    .map(|q| q.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        let m = out.entry(p.qid.clone()).or_default();
        for c in &p.candidates {
            let g = j.get(&c.id).copied().unwrap_or(0).clamp(0, 3);
            m.insert(c.id.clone(), g as f64);
        }
    }
    Ok((
        out,
        1,
        json!({"qrels": hashes, "unjudged": "grade 0", "clip": "grades clipped to 0..3"}),
    ))
}

fn llm(args: &Args, pools: &[Pool]) -> anyhow::Result<(LabelMap, usize, serde_json::Value)> {
    anyhow::ensure!(
        !args.scores.is_empty(),
        "--teacher llm needs --scores (a scores JSONL from `ocrank score` or an audit directory)"
    );
    anyhow::ensure!(args.orders >= 1, "--orders must be at least 1");
    // (qid, candidate) -> permutation -> (expected grade, source index)
    let mut seen: BTreeMap<(String, String), BTreeMap<usize, (f64, usize)>> = BTreeMap::new();
    let mut sources = Vec::new();
    for (si, path) in args.scores.iter().enumerate() {
        let source = super::common::read_score_source(path)?;
        for r in source.windows.values().flat_map(|w| &w.records) {
            if r.permutation >= args.orders {
                continue;
            }
            let e: f64 = r.probs.iter().enumerate().map(|(g, p)| g as f64 * p).sum();
            let perms = seen
                .entry((r.qid.clone(), r.candidate.clone()))
                .or_default();
            if let Some((_, first)) = perms.insert(r.permutation, (e, si)) {
                anyhow::bail!(
                    "{}: query {:?}, candidate {:?} is scored twice under permutation {} (also in {})",
                    path.display(),
                    r.qid,
                    r.candidate,
                    r.permutation,
                    args.scores[first].display()
                );
            }
        }
        sources.push(source.provenance);
    }
    let names = || {
        (args.scores.iter())
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = LabelMap::new();
    for p in pools {
        let m = out.entry(p.qid.clone()).or_default();
        for c in &p.candidates {
            let perms = seen.get(&(p.qid.clone(), c.id.clone()));
            let got = perms.map_or(0, |m| m.len());
            anyhow::ensure!(
                got == args.orders,
                "{}: query {:?}, candidate {:?} is scored under {got} of permutations 0..{} (score with --permutations {} --depth {})",
                names(),
                p.qid,
                c.id,
                args.orders - 1,
                args.orders,
                args.depth
            );
            let perms = perms.expect("checked");
            let mean = perms.values().map(|(e, _)| e).sum::<f64>() / args.orders as f64;
            m.insert(c.id.clone(), mean.clamp(0.0, 3.0));
        }
    }
    Ok((
        out,
        args.orders,
        json!({"scores": sources, "orders": args.orders,
               "label": "expected grade sum g p_g, mean over permutations 0..orders-1"}),
    ))
}

/// Cosine similarity of query and candidate under the sentence encoder, for
/// every candidate of `pools` (query -> candidate -> cosine).
fn cosines(
    encoder: &ocrank_engine::encoder::SentenceEncoder,
    pools: &[Pool],
    what: &str,
) -> anyhow::Result<BTreeMap<String, BTreeMap<String, f64>>> {
    let total: usize = pools.iter().map(|p| p.candidates.len()).sum();
    let bar = super::common::progress_bar(total as u64, what);
    let mut out = BTreeMap::new();
    for p in pools {
        let q = encoder.embed(&[p.query.as_str()])?;
        let texts: Vec<&str> = p.candidates.iter().map(|c| c.text.as_str()).collect();
        let mut m = BTreeMap::new();
        for (chunk, cands) in texts.chunks(32).zip(p.candidates.chunks(32)) {
            for (e, c) in encoder.embed(chunk)?.iter().zip(cands) {
                m.insert(
                    c.id.clone(),
                    ocrank_engine::encoder::cosine(&q[0], e) as f64,
                );
            }
            bar.inc(chunk.len() as u64);
        }
        out.insert(p.qid.clone(), m);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// The embedding teacher: cosine similarity mapped to an expected grade by
/// isotonic regression (monotone non-decreasing, fitted by pool-adjacent
/// violators) on the judged candidates of the calibration pools. The mapping
/// is stored in the provenance.
fn embedding(args: &Args, pools: &[Pool]) -> anyhow::Result<(LabelMap, usize, serde_json::Value)> {
    let (Some(cal_pools), Some(cal_qrels)) = (&args.calibration_pools, &args.calibration_qrels)
    else {
        anyhow::bail!(
            "--teacher embedding needs --calibration-pools and --calibration-qrels (judged data to map cosines to grades)"
        );
    };
    let encoder =
        ocrank_engine::encoder::SentenceEncoder::load(&args.encoder, &ocrank_engine::Device::Cpu)
            .with_context(|| format!("loading the embedding teacher {}", args.encoder.display()))?;
    let qrels = ocrank_data::read_qrels(cal_qrels)?.by_query;
    let cal: Vec<Pool> = super::common::load_pools(cal_pools, args.depth, None)?
        .into_iter()
        .filter(|p| qrels.contains_key(&p.qid))
        .collect();
    anyhow::ensure!(
        !cal.is_empty(),
        "no query of {} is judged in {}",
        cal_pools.display(),
        cal_qrels.display()
    );
    let cal_cos = cosines(&encoder, &cal, "calibration passages")?;
    // Judged candidates only: an unjudged passage is not known to be 0.
    let mut points = Vec::new();
    for p in &cal {
        for c in &p.candidates {
            if let Some(&g) = qrels[&p.qid].get(&c.id) {
                points.push((cal_cos[&p.qid][&c.id], g.clamp(0, 3) as f64));
            }
        }
    }
    let iso = ocrank_metrics::calibration::fit(&points).context("no judged calibration pairs")?;
    let mut by_grade = [(0.0, 0usize); 4];
    for &(x, g) in &points {
        by_grade[g as usize].0 += x;
        by_grade[g as usize].1 += 1;
    }
    let cos = cosines(&encoder, pools, "passages")?;
    let mut out = LabelMap::new();
    for p in pools {
        let m = out.entry(p.qid.clone()).or_default();
        for c in &p.candidates {
            m.insert(
                c.id.clone(),
                iso.predict(cos[&p.qid][&c.id]).clamp(0.0, 3.0),
            );
        }
    }
    Ok((
        out,
        1,
        json!({
            "encoder": args.encoder,
            "encoder_sha256": sha256_file(&args.encoder.join("model.safetensors"))?,
            "similarity": "cosine of mean-pooled, L2-normalised embeddings (query vs passage)",
            "mapping": "isotonic regression of judged grade on cosine (pool-adjacent violators), linear between knots, constant beyond",
            "calibration_pools": cal_pools,
            "calibration_qrels": cal_qrels,
            "calibration_pairs": points.len(),
            "calibration_mean_cosine_by_grade": by_grade.iter().map(|(s, n)| if *n > 0 { s / *n as f64 } else { f64::NAN }).collect::<Vec<_>>(),
            "isotonic": iso,
        }),
    ))
}
