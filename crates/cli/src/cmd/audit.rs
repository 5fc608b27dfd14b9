//! `ocrank audit`: score every query's pool under M seeded permutations,
//! durably (an interrupted audit resumes where it stopped), then report
//! ranking quality and decision stability (SPEC.md sections 3-4) as
//! `results.json` and `report.md` in `--out`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use ocrank_audit::{analysis, Store, StoredWindow, WindowKey};
use ocrank_plan::PermutationPlan;
use ocrank_score::Scorer;
use serde_json::json;

use super::common::{command_line, progress_bar, sha256_file, ModelArgs, PoolArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (a few minutes on 2 CPU cores):
  ocrank audit --pools ../shared/data/msmarco/dl19/bm25-top100.json \\
      --qrels ../shared/data/msmarco/dl19/qrels.txt --queries 5 --depth 20 \\
      --width 10 --permutations 4 --bsc 2 --out runs/audit-dl19

Scored windows are appended to OUT/windows.jsonl as they finish; rerunning the
same command after an interruption (even kill -9) scores only what is missing.
A directory holding an audit with other settings is refused.")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub pools: PoolArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    /// TREC qrels: enables nDCG, the F1-tuned threshold and retained-set
    /// overlap. Without it, grades the pools carry (HotpotQA's supporting
    /// paragraphs, LLMBar's gold response, `grade` in a JSONL pool) are the
    /// judgments.
    #[arg(long, value_name = "FILE")]
    pub qrels: Option<PathBuf>,
    /// Permutations per pool (M); permutation 0 is the canonical order.
    #[arg(long, default_value_t = 10, value_parser = super::common::permutation_count)]
    pub permutations: usize,
    /// Largest K of the BSC@K curve; K needs 2 disjoint groups of K
    /// permutations, so max(M, 2K) permutations are scored.
    #[arg(long, value_name = "K")]
    pub bsc: Option<usize>,
    /// Seed of the permutation plan and the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Bootstrap resamples for the 95% intervals.
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Audit scores produced elsewhere instead of scoring with --model: the
    /// scores JSONL of SPEC.md section 7 (e.g. an external scorer's answers to
    /// `ocrank prompts`) or another audit's directory (e.g. to analyse it
    /// against other qrels).
    #[arg(long, value_name = "PATH")]
    pub scores: Option<PathBuf>,
    /// Output directory (windows.jsonl, settings.json, results.json, report.md).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Loads external scores (a scores JSONL or another audit's directory) into
/// the store, one entry per window.
fn import_scores(store: &mut Store, source: super::common::ScoreSource) -> anyhow::Result<()> {
    for (key, window) in source.windows {
        if store.get(&key).is_none() {
            store.put(key, window)?;
        }
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    let (whole, pools) = args.pools.load_with_whole()?;
    let (qrels, judged_by) = match &args.qrels {
        Some(p) => (ocrank_data::read_qrels(p)?.by_query, json!(p)),
        None => {
            // The grades the audited queries' pools carry, from the whole
            // pools (before --depth), so that nDCG's ideal ranking sees every
            // judged candidate, as with a qrels file.
            let audited: std::collections::HashSet<&str> =
                pools.iter().map(|p| p.qid.as_str()).collect();
            let mut j = ocrank_data::grades_as_qrels(&whole).by_query;
            j.retain(|q, _| audited.contains(q.as_str()));
            if j.is_empty() {
                (j, serde_json::Value::Null)
            } else {
                eprintln!(
                    "judgments: the grades the pools carry ({} queries, {} graded candidates); --qrels would replace them",
                    j.len(),
                    j.values().map(|g| g.len()).sum::<usize>()
                );
                (j, json!("pool grades"))
            }
        }
    };
    let total_perms = args.permutations.max(args.bsc.map_or(0, |k| 2 * k));
    let cfg = args.scorer.config();
    // Everything that determines a score; the permutation count and the
    // query selection only choose which windows are scored.
    let source = match &args.scores {
        Some(path) => Some(super::common::read_score_source(path)?),
        None => None,
    };
    let settings = match &source {
        Some(source) => json!({
            "scores_sha256": source.sha256,
            "pools_sha256": sha256_file(&args.pools.pools)?,
            "depth": args.pools.depth,
        }),
        None => {
            let mut s = json!({
                "pools_sha256": sha256_file(&args.pools.pools)?,
                "depth": args.pools.depth,
                "seed": args.seed,
                "scorer": cfg,
                "ocrank_version": env!("CARGO_PKG_VERSION"),
            });
            args.model.fingerprint(&mut s)?;
            s
        }
    };
    let mut store = Store::open(&args.out, &settings)?;
    if store.dropped_partial > 0 {
        eprintln!(
            "note: dropped an incomplete last line ({} bytes) of an interrupted run",
            store.dropped_partial
        );
    }
    if let Some(source) = source {
        import_scores(&mut store, source)?;
    }
    let plan = PermutationPlan::new(args.seed, total_perms);
    let mut todo = Vec::new();
    let mut all = 0;
    for (pi, pool) in pools.iter().enumerate() {
        for (m, order) in plan
            .orders(&pool.qid, pool.candidates.len())
            .into_iter()
            .enumerate()
        {
            for (w, window) in ocrank_plan::windows(&order, cfg.width, cfg.partition)
                .into_iter()
                .enumerate()
            {
                all += 1;
                let key = WindowKey {
                    qid: pool.qid.clone(),
                    permutation: m,
                    window: w,
                };
                if store.get(&key).is_none() {
                    todo.push((pi, key, window));
                }
            }
        }
    }
    eprintln!(
        "{} windows in the plan, {} already scored, {} to score",
        all,
        all - todo.len(),
        todo.len()
    );
    if !todo.is_empty() {
        let engine = args.model.load()?;
        let scorer = Scorer::new(&engine, cfg.clone())?;
        let bar = progress_bar(todo.len() as u64, "windows");
        let mut ctx: Option<(usize, ocrank_score::QueryContext)> = None;
        for (pi, key, window) in todo {
            let pool = &pools[pi];
            if ctx.as_ref().is_none_or(|(i, _)| *i != pi) {
                let c = scorer
                    .prepare(&pool.query)
                    .with_context(|| format!("query {}", pool.qid))?;
                ctx = Some((pi, c));
            }
            let (_, c) = ctx.as_ref().expect("prepared");
            let t = Instant::now();
            let (records, cost) = scorer
                .score_window(c, pool, key.permutation, key.window, &window)
                .with_context(|| {
                    format!(
                        "query {} permutation {} window {}",
                        key.qid, key.permutation, key.window
                    )
                })?;
            let seconds = t.elapsed().as_secs_f64();
            store.put(
                key,
                StoredWindow {
                    records,
                    tokens: cost.tokens,
                    forwards: cost.forwards,
                    seconds,
                },
            )?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let spec = analysis::AuditSpec {
        permutations: args.permutations,
        bsc_max_k: args.bsc,
        scored_permutations: total_perms,
        bootstrap_resamples: args.bootstrap,
        seed: args.seed,
    };
    let pool_ids: BTreeMap<String, Vec<String>> = pools
        .iter()
        .map(|p| {
            (
                p.qid.clone(),
                p.candidates.iter().map(|c| c.id.clone()).collect(),
            )
        })
        .collect();
    let a = analysis::analyse(&store, &spec, &pool_ids, &qrels).map_err(anyhow::Error::msg)?;
    let results = json!({
        "command": command,
        "ocrank_version": env!("CARGO_PKG_VERSION"),
        "model": args.model.model,
        "adapter": args.model.adapter,
        "pools": args.pools.pools,
        "qrels": judged_by,
        "queries": pools.len(),
        "settings": settings,
        "spec": spec,
        "collection": a.main.collection,
        "ci": a.main.ci,
        "threshold": a.main.threshold,
        "per_query": a.main.per_query,
        "bsc": a.bsc.iter().map(|p| json!({"k": p.k, "groups": p.groups, "collection": p.report.collection, "ci": p.report.ci, "per_query": p.report.per_query})).collect::<Vec<_>>(),
        "slot_profile": a.slot_profile,
        "slot_r2": a.slot_r2,
        "random_ndcg_at_10": a.random_ndcg_at_10,
        "cost": a.cost,
        "threshold_whole_pools": a.whole_pools,
        "warnings": a.warnings,
    });
    let title = format!(
        "{} on {} ({} queries)",
        cfg.mode,
        args.pools.pools.display(),
        pools.len()
    );
    std::fs::write(
        args.out.join("results.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    let plots = analysis::write_plots(&a, &args.out)?;
    std::fs::write(
        args.out.join("report.md"),
        analysis::render_markdown(&a, &title, &command, &settings, &plots),
    )?;
    for w in &a.warnings {
        eprintln!("warning: {w}");
    }
    for m in &a.main.metrics {
        if let Some(v) = a.main.collection.get(m) {
            println!("{m:<32} {v:.4}");
        }
    }
    eprintln!("-> {}/results.json, report.md", args.out.display());
    Ok(())
}
