//! `ocrank eval`: evaluate a TREC run or a scores file against qrels.
//!
//! A run file is evaluated as trec_eval does it (`trec_eval -m ndcg_cut.10`):
//! the rank column is ignored, scores are compared as 32-bit floats, ties
//! break by docid descending, run queries without judgments are skipped and
//! judged queries missing from the run are ignored (both counted on stderr).
//!
//! A scores file (SPEC.md section 7, one line per query, permutation and
//! candidate) additionally gets the order-dependence metrics of SPEC.md
//! section 3 across its permutations, with bootstrap 95% intervals of the
//! collection means. Metric names are those of `ocrank_metrics::report`;
//! on the text output `ndcg_at_K` is printed under trec_eval's name
//! `ndcg_cut_K`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ocrank_metrics::report::{evaluate_run, evaluate_scores, EvalConfig, Report, ScoresQuery};
use ocrank_metrics::stats::Bootstrap;

use super::common::{command_line, write_output};

/// Default bootstrap resamples for scores files (runs default to none, to
/// print exactly what trec_eval prints).
const SCORES_DEFAULT_RESAMPLES: usize = ocrank_metrics::stats::DEFAULT_RESAMPLES;

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Examples:
  ocrank eval --run bm25.trec --qrels qrels.txt            # = trec_eval -m ndcg_cut.10
  ocrank eval --run bm25.trec --qrels qrels.txt -q --k 5,10,20
  ocrank eval --scores scores.jsonl --qrels qrels.txt --out results.json

Output lines follow trec_eval: `measure<TAB>qid|all<TAB>value`. With a bootstrap,
every collection value is followed by `<measure>_ci_low` and `<measure>_ci_high`.")]
pub struct Args {
    /// TREC run file to evaluate (`qid Q0 docid rank score tag`).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "scores",
        required_unless_present = "scores"
    )]
    pub run: Option<PathBuf>,

    /// Scores JSONL (SPEC.md section 7), one or more permutations per query;
    /// permutation 0 is the canonical order.
    #[arg(long, value_name = "FILE")]
    pub scores: Option<PathBuf>,

    /// TREC qrels (`qid iter docid grade`).
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,

    /// Also print one line per query and measure (trec_eval -q).
    #[arg(short = 'q', long)]
    pub per_query: bool,

    /// Write per-query and collection metrics as JSON (snake_case keys).
    #[arg(long, value_name = "FILE.json")]
    pub out: Option<PathBuf>,

    /// nDCG cutoffs, comma separated; the first one is primary (order_spread).
    #[arg(
        long = "k",
        value_name = "K,..",
        value_delimiter = ',',
        default_value = "10"
    )]
    pub k: Vec<usize>,

    /// Bootstrap resamples for 95% intervals of collection means (0: none).
    /// Default: 10000 for --scores, 0 for --run.
    #[arg(long, value_name = "N")]
    pub bootstrap: Option<usize>,

    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Evaluate batched self-consistency BSC@K (SPEC.md section 4): average
    /// each candidate over K permutations. Permutations g*K .. (g+1)*K form
    /// group g; the G = M / K groups' averages take the place of the
    /// permutations, so tau-PSI and overlap measure BSC@K's own stability
    /// (absent with a single group, never reported as 0).
    #[arg(long, value_name = "K", requires = "scores")]
    pub bsc: Option<usize>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.k.is_empty() || args.k.contains(&0) {
        bail!("--k needs cutoffs of at least 1, e.g. --k 10 or --k 5,10,20");
    }
    let qrels = ocrank_data::read_qrels(&args.qrels)
        .with_context(|| format!("reading qrels {}", args.qrels.display()))?;
    let default_resamples = if args.scores.is_some() {
        SCORES_DEFAULT_RESAMPLES
    } else {
        0
    };
    let resamples = args.bootstrap.unwrap_or(default_resamples);
    let cfg = EvalConfig {
        cutoffs: args.k.clone(),
        bootstrap: (resamples > 0).then_some(Bootstrap {
            resamples,
            seed: args.seed,
            level: 0.95,
        }),
    };

    let (report, input_kind, input) = match (&args.run, &args.scores) {
        (Some(path), None) => (eval_run(path, &qrels.by_query, &cfg)?, "run", path),
        (None, Some(path)) => (
            eval_scores(path, &qrels.by_query, &cfg, args.bsc)?,
            "scores",
            path,
        ),
        _ => bail!("give exactly one of --run FILE or --scores FILE"),
    };

    notes(&report, input_kind);
    let mut stdout = std::io::stdout().lock();
    print_report(&mut stdout, &report, args.per_query)?;
    stdout.flush()?;

    if let Some(out) = &args.out {
        write_json(out, &report, input_kind, input, &args)?;
    }
    Ok(())
}

fn eval_run(
    path: &Path,
    qrels: &BTreeMap<String, ocrank_metrics::Judgments>,
    cfg: &EvalConfig,
) -> anyhow::Result<Report> {
    let run =
        ocrank_data::read_run(path).with_context(|| format!("reading run {}", path.display()))?;
    let run: BTreeMap<String, Vec<(String, f64)>> = run
        .by_query
        .into_iter()
        .map(|(q, entries)| (q, entries.into_iter().map(|e| (e.docid, e.score)).collect()))
        .collect();
    Ok(evaluate_run(&run, qrels, cfg))
}

fn eval_scores(
    path: &Path,
    qrels: &BTreeMap<String, ocrank_metrics::Judgments>,
    cfg: &EvalConfig,
    bsc: Option<usize>,
) -> anyhow::Result<Report> {
    let records = ocrank_data::read_scores(path)
        .with_context(|| format!("reading scores {}", path.display()))?;
    let mut by_qid: BTreeMap<String, ScoresQuery> = BTreeMap::new();
    for r in records {
        let q = by_qid.entry(r.qid.clone()).or_insert_with(|| ScoresQuery {
            qid: r.qid.clone(),
            ..Default::default()
        });
        let perm = q.permutations.entry(r.permutation).or_default();
        if perm.insert(r.candidate.clone(), r.score).is_some() {
            bail!(
                "{}: candidate {:?} of query {:?} is scored twice in permutation {}",
                path.display(),
                r.candidate,
                r.qid,
                r.permutation
            );
        }
    }
    let mut queries: Vec<ScoresQuery> = by_qid.into_values().collect();
    if let Some(k) = bsc {
        queries =
            bsc_groups(queries, k).with_context(|| format!("{}: --bsc {k}", path.display()))?;
    }
    evaluate_scores(&queries, qrels, cfg).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Replaces each query's permutations by the averages of its BSC groups of
/// K permutations (permutations g*K .. (g+1)*K become group g).
fn bsc_groups(queries: Vec<ScoresQuery>, k: usize) -> anyhow::Result<Vec<ScoresQuery>> {
    anyhow::ensure!(k >= 1, "K must be at least 1");
    let mut out = Vec::with_capacity(queries.len());
    let mut dropped = 0;
    let mut groups_seen = None;
    for q in queries {
        let m = q.permutations.keys().max().map_or(0, |&i| i + 1);
        let g = m / k;
        anyhow::ensure!(
            g >= 1,
            "query {:?} has {m} permutations, fewer than K",
            q.qid
        );
        dropped += m - g * k;
        let averaged = ocrank_metrics::bsc::group_averages(
            &q.permutations,
            (0..g).map(|i| i * k..(i + 1) * k),
        )
        .map_err(|e| anyhow::anyhow!("query {:?}: {e}", q.qid))?;
        groups_seen = Some(groups_seen.map_or(g, |x: usize| x.min(g)));
        out.push(ScoresQuery {
            qid: q.qid,
            permutations: averaged.into_iter().enumerate().collect(),
        });
    }
    eprintln!(
        "note: BSC@{k}: {} group(s) of {k} permutations per query{}",
        groups_seen.unwrap_or(0),
        if dropped > 0 {
            format!("; {dropped} permutation(s) beyond the last full group left out")
        } else {
            String::new()
        }
    );
    Ok(out)
}

/// Skipped and ignored queries are never silent.
fn notes(report: &Report, input_kind: &str) {
    let list = |qids: &[String]| {
        let shown: Vec<&str> = qids.iter().take(10).map(String::as_str).collect();
        let more = if qids.len() > 10 {
            format!(", ... ({} more)", qids.len() - 10)
        } else {
            String::new()
        };
        format!("{}{more}", shown.join(", "))
    };
    let s = &report.skipped_without_qrels;
    if !s.is_empty() {
        eprintln!(
            "note: skipped {} {input_kind} quer{} without judgments in the qrels (as trec_eval does): {}",
            s.len(),
            if s.len() == 1 { "y" } else { "ies" },
            list(s)
        );
    }
    let j = &report.judged_without_scores;
    if !j.is_empty() {
        eprintln!(
            "note: ignored {} judged quer{} absent from the {input_kind} (trec_eval's default, without -c): {}",
            j.len(),
            if j.len() == 1 { "y" } else { "ies" },
            list(j)
        );
    }
    if let (Some(th), Some(g)) = (&report.threshold, report.relevance_min_grade) {
        eprintln!(
            "note: frozen F1 threshold t = {:.4} (relevant: grade >= {g}; mean F1 {:.4} on the canonical order of {} quer{})",
            th.t,
            th.mean_f1,
            th.tuning_queries,
            if th.tuning_queries == 1 { "y" } else { "ies" }
        );
    } else if report.relevance_min_grade.is_some() {
        eprintln!("note: no threshold could be tuned (no query has a relevant candidate): no retained_set_overlap");
    }
    if report.permutations == Some(1) {
        eprintln!("note: one permutation per query: order-dependence metrics need two or more and are not reported");
    }
    if report.num_queries == 0 {
        eprintln!(
            "note: no query is both in the {input_kind} and in the qrels: nothing to evaluate"
        );
    }
}

/// trec_eval's name for a metric on the text output.
fn display_name(name: &str) -> String {
    match name.strip_prefix("ndcg_at_") {
        Some(rest) => format!("ndcg_cut_{rest}"),
        None => name.to_string(),
    }
}

fn line(w: &mut impl Write, name: &str, qid: &str, value: f64) -> std::io::Result<()> {
    writeln!(w, "{:<22}\t{qid}\t{value:6.4}", display_name(name))
}

/// trec_eval layout: per-query blocks (with -q), then the `all` lines.
pub fn print_report(w: &mut impl Write, report: &Report, per_query: bool) -> std::io::Result<()> {
    if per_query {
        for (qid, metrics) in &report.per_query {
            for name in &report.metrics {
                if let Some(&v) = metrics.get(name) {
                    line(w, name, qid, v)?;
                }
            }
        }
    }
    for name in &report.metrics {
        if let Some(&v) = report.collection.get(name) {
            line(w, name, "all", v)?;
            if let Some([lo, hi]) = report.ci.get(name) {
                line(w, &format!("{name}_ci_low"), "all", *lo)?;
                line(w, &format!("{name}_ci_high"), "all", *hi)?;
            }
        }
    }
    Ok(())
}

fn write_json(
    out: &Path,
    report: &Report,
    input_kind: &str,
    input: &Path,
    args: &Args,
) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(report)?;
    let obj = value
        .as_object_mut()
        .expect("a report serialises to an object");
    obj.insert(
        "input".into(),
        serde_json::json!({ input_kind: input, "qrels": &args.qrels }),
    );
    obj.insert("cutoffs".into(), serde_json::json!(&args.k));
    obj.insert("command".into(), serde_json::json!(command_line()));
    let text = serde_json::to_string_pretty(&value)?;
    write_output(out, text + "\n")?;
    Ok(())
}
