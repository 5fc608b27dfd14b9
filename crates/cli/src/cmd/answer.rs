//! `ocrank answer`: the multi-document QA decision of SPEC.md section 3. A
//! frozen reader answers each question from the top passages of every
//! permutation's ranking in an audit (or a scores file); the report gives
//! the answer flip, EM and F1 with bootstrap intervals.
//!
//! scores -> ranking per permutation -> top k passages (ranking order) ->
//! reader prompt -> greedy answer -> EM / F1 / flip -> report
//!
//! Answers are memoised by (question, passage ids in order) and appended to
//! `OUT/answers.jsonl` as they finish: permutations whose rankings share a
//! top k cost one answer, and a rerun after an interruption (even kill -9)
//! decodes only what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ocrank_audit::LineLog;
use ocrank_metrics::qa::{pairwise_disagreement, question_outcome, QuestionOutcome};
use ocrank_metrics::ranking::{rank, trec_eval_score};
use ocrank_metrics::stats::{bootstrap_mean, paired_bootstrap, Bootstrap, Interval};
use ocrank_metrics::Scores;
use ocrank_score::reader::{DEFAULT_MAX_NEW_TOKENS, DEFAULT_READER_SYSTEM, DEFAULT_TOP};
use ocrank_score::{Answer, ReaderConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{self, ModelArgs};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example (the off-the-shelf batched HotpotQA audit of the README):
  ocrank answer --scores runs/hotpot/off-the-shelf-batched-m5 \\
      --pools runs/hotpot/bm25-pools.jsonl \\
      --answers ../shared/data/hotpotqa/dev-distractor-100.jsonl --out runs/hotpot/answers-batched-m5

Answers are appended to OUT/answers.jsonl as they finish; rerunning the same
command after an interruption decodes only what is missing. A directory
holding answers made with other settings is refused."
)]
pub struct Args {
    /// The scores to decide from: an audit directory or a scores JSONL (SPEC.md section 7).
    #[arg(
        long,
        value_name = "PATH",
        required_unless_present = "run",
        conflicts_with = "run"
    )]
    pub scores: Option<PathBuf>,
    /// Or a TREC run (e.g. the first stage's): one ranking per query, read as
    /// permutation 0, scores compared as trec_eval does (32-bit floats).
    #[arg(long, value_name = "FILE")]
    pub run: Option<PathBuf>,
    /// The pools that were scored (their passage texts): rank_llm JSON, our JSONL or HotpotQA.
    #[arg(long, value_name = "FILE")]
    pub pools: PathBuf,
    /// Gold answers: a HotpotQA file (JSON array or JSON lines; `_id` is the
    /// query id). Default: the --pools file.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Use only the first N questions (in the order of the pools file) that have scores.
    #[arg(long, value_name = "N")]
    pub queries: Option<usize>,
    /// The reader reads the top K passages of each permutation's ranking, in ranking order.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_TOP)]
    pub top: usize,
    #[command(flatten)]
    pub model: ModelArgs,
    /// The reader's system message.
    #[arg(long, default_value = DEFAULT_READER_SYSTEM)]
    pub system: String,
    /// Each passage is cut to this many characters after collapsing whitespace.
    #[arg(long, default_value_t = ocrank_score::prompt::DEFAULT_MAX_CHARS)]
    pub max_chars: usize,
    /// Most tokens decoded for one answer (it ends earlier at a line break).
    #[arg(long, default_value_t = DEFAULT_MAX_NEW_TOKENS)]
    pub max_new_tokens: usize,
    /// Another `ocrank answer` output directory over the same questions: the
    /// report adds this run minus that one, paired over questions.
    #[arg(long, value_name = "DIR")]
    pub versus: Option<PathBuf>,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Bootstrap resamples for the 95% intervals.
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Output directory (settings.json, answers.jsonl, results.json, report.md).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// One memoised answer: a question and the passages it was read from, in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    qid: String,
    passages: Vec<String>,
    #[serde(flatten)]
    answer: Answer,
}

/// The reader's view of one permutation.
#[derive(Debug, Clone, Serialize)]
struct PermutationAnswer {
    permutation: usize,
    passages: Vec<String>,
    /// Supporting (graded) passages among them.
    supporting: usize,
    answer: String,
}

#[derive(Debug, Clone, Serialize)]
struct QuestionResult {
    qid: String,
    gold: String,
    #[serde(flatten)]
    outcome: QuestionOutcome,
    /// Share of permutation pairs whose top k differ as ordered lists, and as sets.
    passages_flip: Option<f64>,
    passage_set_flip: Option<f64>,
    /// Supporting passages in the top k over the pool's supporting ones, mean over permutations.
    support_recall: Option<f64>,
    permutations: Vec<PermutationAnswer>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.top >= 1, "--top must be at least 1");
    let (by_q, provenance, scores_path) = read_rankings(&args)?;
    let pools = ocrank_data::read_pools(&args.pools)?;
    let answers_path = args.answers.clone().unwrap_or_else(|| args.pools.clone());
    let gold: BTreeMap<String, String> = ocrank_data::read_hotpotqa(&answers_path)
        .with_context(|| format!("reading gold answers from {}", answers_path.display()))?
        .into_iter()
        .map(|e| (e.id, e.answer))
        .collect();
    let order: BTreeMap<&str, usize> = pools
        .iter()
        .enumerate()
        .map(|(i, p)| (p.qid.as_str(), i))
        .collect();
    let pools: BTreeMap<&str, &ocrank_data::Pool> =
        pools.iter().map(|p| (p.qid.as_str(), p)).collect();

    anyhow::ensure!(!by_q.is_empty(), "{}: no scores", scores_path.display());

    // Questions in the pool file's order; `--queries` keeps the first N.
    let mut qids: Vec<&String> = by_q.keys().collect();
    if let Some(q) = qids.iter().find(|q| !order.contains_key(q.as_str())) {
        bail!(
            "query {q} of {} is not in {}",
            scores_path.display(),
            args.pools.display()
        );
    }
    qids.sort_by_key(|q| order[q.as_str()]);
    qids.truncate(args.queries.unwrap_or(usize::MAX));

    // What each permutation's reader reads.
    struct Question<'a> {
        qid: &'a str,
        pool: &'a ocrank_data::Pool,
        gold: &'a str,
        tops: Vec<(usize, Vec<String>)>,
    }
    let most = by_q.values().map(BTreeMap::len).max().unwrap_or(0);
    let mut questions = Vec::new();
    for qid in qids {
        let perms = &by_q[qid];
        let pool = pools[qid.as_str()];
        let gold = gold.get(qid).with_context(|| {
            format!(
                "query {qid} has no gold answer in {}",
                answers_path.display()
            )
        })?;
        if !perms.contains_key(&0) {
            bail!(
                "query {qid} has no permutation 0 (the canonical order) in {}",
                scores_path.display()
            );
        }
        // A partly scored query (an audit stopped between windows) is refused,
        // not answered from fewer candidates or fewer orders.
        if perms.len() != most {
            bail!(
                "query {qid} has {} permutations in {}, other queries {most}: finish the audit (rerun it) first",
                perms.len(),
                scores_path.display()
            );
        }
        let canonical: BTreeSet<&String> = perms[&0].keys().collect();
        if let Some((p, _)) = perms
            .iter()
            .find(|(_, s)| s.keys().collect::<BTreeSet<_>>() != canonical)
        {
            bail!(
                "query {qid}: permutation {p} scores other candidates than permutation 0 in {}: finish the audit (rerun it) first",
                scores_path.display()
            );
        }
        let mut tops = Vec::new();
        for (&p, scores) in perms {
            if let Some(c) = scores
                .keys()
                .find(|c| pool.candidates.iter().all(|d| &d.id != *c))
            {
                bail!(
                    "query {qid}: candidate {c:?} of {} is not in its pool in {}",
                    scores_path.display(),
                    args.pools.display()
                );
            }
            let top: Vec<String> = rank(scores)
                .into_iter()
                .take(args.top)
                .map(str::to_owned)
                .collect();
            tops.push((p, top));
        }
        questions.push(Question {
            qid,
            pool,
            gold,
            tops,
        });
    }

    let ours: BTreeSet<&str> = questions.iter().map(|q| q.qid).collect();
    let other = (args.versus.as_deref())
        .map(|d| read_other(d, &ours))
        .transpose()?;

    // Settings: everything that determines an answer, and the inputs of the results.
    let reader = ReaderConfig {
        system: args.system.clone(),
        max_chars: args.max_chars,
        max_new_tokens: args.max_new_tokens,
    };
    let mut settings = serde_json::json!({
        "ocrank_version": env!("CARGO_PKG_VERSION"),
        "reader": reader,
        "top": args.top,
        "pools_sha256": common::sha256_file(&args.pools)?,
        "answers_sha256": common::sha256_file(&answers_path)?,
    });
    args.model.fingerprint(&mut settings)?;
    let mut store = AnswerStore::open(&args.out, &settings)?;

    let mut needed: BTreeSet<(String, Vec<String>)> = BTreeSet::new();
    for q in &questions {
        for (_, top) in &q.tops {
            let key = (q.qid.to_owned(), top.clone());
            if !store.answers.contains_key(&key) {
                needed.insert(key);
            }
        }
    }
    let total: usize = questions.iter().map(|q| q.tops.len()).sum();
    eprintln!(
        "{} questions, {total} permutations, {} answers stored, {} to decode",
        questions.len(),
        store.answers.len(),
        needed.len()
    );
    if !needed.is_empty() {
        let engine = args.model.load()?;
        let bar = common::progress_bar(needed.len() as u64, "answers");
        let by_qid: BTreeMap<&str, &Question> = questions.iter().map(|q| (q.qid, q)).collect();
        for (qid, top) in needed {
            let q = by_qid[qid.as_str()];
            let texts: Vec<&str> = top
                .iter()
                .map(|id| {
                    q.pool
                        .candidates
                        .iter()
                        .find(|c| &c.id == id)
                        .map(|c| c.text.as_str())
                })
                .collect::<Option<_>>()
                .expect("candidates were checked against the pool");
            let answer = reader
                .answer(&engine, &q.pool.query, &texts)
                .with_context(|| format!("query {qid}: reading passages {top:?}"))?;
            bar.set_message(format!(
                "{:.1} s, {} tokens",
                answer.seconds, answer.prompt_tokens
            ));
            store.put(Line {
                qid,
                passages: top,
                answer,
            })?;
            bar.inc(1);
        }
        bar.finish();
    }

    // Per question, then the collection.
    let mut results = Vec::new();
    for q in &questions {
        let supporting: BTreeSet<&str> = (q.pool.candidates.iter())
            .filter(|c| c.grade.unwrap_or(0) > 0)
            .map(|c| c.id.as_str())
            .collect();
        let perms: Vec<PermutationAnswer> = q
            .tops
            .iter()
            .map(|(p, top)| PermutationAnswer {
                permutation: *p,
                supporting: top
                    .iter()
                    .filter(|id| supporting.contains(id.as_str()))
                    .count(),
                answer: store.answers[&(q.qid.to_owned(), top.clone())].text.clone(),
                passages: top.clone(),
            })
            .collect();
        let answers: Vec<&str> = perms.iter().map(|p| p.answer.as_str()).collect();
        let outcome = question_outcome(&answers, &[q.gold]).expect("answers and a gold");
        let lists: Vec<&Vec<String>> = perms.iter().map(|p| &p.passages).collect();
        let sets: Vec<BTreeSet<&String>> =
            perms.iter().map(|p| p.passages.iter().collect()).collect();
        let support_recall = (!supporting.is_empty()).then(|| {
            perms.iter().map(|p| p.supporting as f64).sum::<f64>()
                / (perms.len() * supporting.len()) as f64
        });
        results.push(QuestionResult {
            qid: q.qid.to_owned(),
            gold: q.gold.to_owned(),
            outcome,
            passages_flip: pairwise_disagreement(&lists),
            passage_set_flip: pairwise_disagreement(&sets),
            support_recall,
            permutations: perms,
        });
    }
    let cfg = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
        ..Bootstrap::default()
    };
    let rows: Vec<Value> = (results.iter().map(serde_json::to_value)).collect::<Result<_, _>>()?;
    let mut summary = BTreeMap::new();
    for (key, _) in MEASURES {
        let v: Vec<f64> = rows.iter().filter_map(|q| q[key].as_f64()).collect();
        summary.insert(key, bootstrap_mean(&v, cfg));
    }
    let versus = match &other {
        Some(o) => Some(versus(o, &rows, cfg)?),
        None => None,
    };
    let stored = store.answers.values();
    let cost = serde_json::json!({
        "answers": stored.len(),
        "reader_seconds": stored.clone().map(|a| a.seconds).sum::<f64>(),
        "prompt_tokens": stored.clone().map(|a| a.prompt_tokens).sum::<usize>(),
        "new_tokens": stored.clone().map(|a| a.new_tokens).sum::<usize>(),
        "unfinished": stored.filter(|a| !a.finished).count(),
    });
    let command = common::command_line();
    let out = serde_json::json!({
        "command": command,
        "settings": settings,
        "scores": provenance,
        "questions": results.len(),
        "permutations": total,
        "summary": summary,
        "versus": versus,
        "cost": cost,
        "per_question": results,
    });
    common::write_output(
        &args.out.join("results.json"),
        serde_json::to_string_pretty(&out)? + "\n",
    )?;
    let report = report_md(
        &command,
        &summary,
        versus.as_ref(),
        &results,
        &cost,
        args.top,
    );
    common::write_output(&args.out.join("report.md"), &report)?;
    print!("{report}");
    Ok(())
}

fn report_md(
    command: &str,
    summary: &BTreeMap<&str, Option<Interval>>,
    versus: Option<&Value>,
    results: &[QuestionResult],
    cost: &serde_json::Value,
    top: usize,
) -> String {
    let mut s =
        String::from("# Answer flip: a frozen reader over each permutation's top passages\n\n");
    s.push_str(&format!("Command: `{command}`\n\n"));
    let perms = results
        .iter()
        .map(|r| r.permutations.len())
        .max()
        .unwrap_or(0);
    s.push_str(&format!(
        "{} questions, up to {perms} permutations each; the reader reads the top {top} passages of each ranking, in ranking order, and answers greedily. 95% bootstrap intervals over questions.\n\n",
        results.len()
    ));
    s.push_str("| measure | value | 95% interval | questions |\n|---|---|---|---|\n");
    for (key, label) in MEASURES {
        match summary.get(key).copied().flatten() {
            Some(i) => s.push_str(&format!(
                "| {label} | {:.4} | [{:.4}, {:.4}] | {} |\n",
                i.estimate, i.low, i.high, i.n
            )),
            None => s.push_str(&format!("| {label} | n/a | | 0 |\n")),
        }
    }
    if let Some(v) = versus {
        s.push_str(&format!(
            "\nAgainst {} (this minus that, paired bootstrap over the same questions):\n\n| measure | difference | 95% interval | p | questions |\n|---|---|---|---|---|\n",
            v["path"].as_str().unwrap_or("?")
        ));
        for (key, label) in MEASURES {
            let d = &v["differences"][key];
            match (
                d["estimate"].as_f64(),
                d["low"].as_f64(),
                d["high"].as_f64(),
            ) {
                (Some(e), Some(lo), Some(hi)) => s.push_str(&format!(
                    "| {label} | {e:+.4} | [{lo:+.4}, {hi:+.4}] | {:.4} | {} |\n",
                    d["p_value"].as_f64().unwrap_or(f64::NAN),
                    d["n"]
                )),
                _ => s.push_str(&format!("| {label} | n/a | | | 0 |\n")),
            }
        }
    }
    s.push_str(&format!(
        "\nReader cost (every answer in the store): {} answers, {:.0} s, {} prompt tokens, {} new tokens; {} answers ran into the token limit.\n",
        cost["answers"], cost["reader_seconds"].as_f64().unwrap_or(0.0), cost["prompt_tokens"],
        cost["new_tokens"], cost["unfinished"]
    ));
    s
}

type Rankings = BTreeMap<String, BTreeMap<usize, Scores>>;

/// Scores by query, then permutation, from `--scores` or `--run`, with their
/// provenance and path.
fn read_rankings(args: &Args) -> anyhow::Result<(Rankings, Value, PathBuf)> {
    let mut by_q = Rankings::new();
    if let Some(path) = &args.run {
        let run = ocrank_data::read_run(path)?;
        for (qid, entries) in &run.by_query {
            let scores = by_q.entry(qid.clone()).or_default().entry(0).or_default();
            for e in entries {
                scores.insert(e.docid.clone(), trec_eval_score(e.score));
            }
        }
        let provenance = serde_json::json!({
            "path": path, "kind": "run", "sha256": common::sha256_file(path)?,
        });
        return Ok((by_q, provenance, path.clone()));
    }
    let path = args
        .scores
        .clone()
        .expect("clap requires --scores or --run");
    let source = common::read_score_source(&path)?;
    for w in source.windows.values() {
        for r in &w.records {
            (by_q.entry(r.qid.clone()).or_default())
                .entry(r.permutation)
                .or_default()
                .insert(r.candidate.clone(), r.score);
        }
    }
    Ok((by_q, source.provenance, path))
}

/// The per-question measures of the report: key in `per_question`, label.
const MEASURES: [(&str, &str); 8] = [
    (
        "answer_flip",
        "answer flip (pairs of permutations, normalised answers differ)",
    ),
    ("em_canonical", "EM, canonical order"),
    ("em_mean", "EM, mean over permutations"),
    ("f1_canonical", "F1, canonical order"),
    ("f1_mean", "F1, mean over permutations"),
    ("passages_flip", "top-k list differs (ordered)"),
    ("passage_set_flip", "top-k set differs"),
    (
        "support_recall",
        "supporting passages in the top k (recall)",
    ),
];

/// Another run's per-question results (`--versus`), keyed by query id; its
/// questions must be this run's.
struct Other {
    dir: PathBuf,
    per_question: BTreeMap<String, Value>,
}

fn read_other(dir: &Path, ours: &BTreeSet<&str>) -> anyhow::Result<Other> {
    let path = dir.join("results.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let other: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let per_question: BTreeMap<String, Value> = (other["per_question"].as_array())
        .with_context(|| {
            format!(
                "{}: no per_question array (not an `ocrank answer` result)",
                path.display()
            )
        })?
        .iter()
        .map(|q| (q["qid"].as_str().unwrap_or("").to_owned(), q.clone()))
        .collect();
    let theirs: BTreeSet<&str> = per_question.keys().map(String::as_str).collect();
    if &theirs != ours {
        bail!(
            "{}: it answers {} questions, this run {}, {} in common: compare runs over the same questions",
            path.display(),
            theirs.len(),
            ours.len(),
            ours.intersection(&theirs).count()
        );
    }
    Ok(Other {
        dir: dir.to_path_buf(),
        per_question,
    })
}

/// Paired differences (this run minus the other) of every measure over the questions.
fn versus(other: &Other, rows: &[Value], cfg: Bootstrap) -> anyhow::Result<Value> {
    let mut differences = serde_json::Map::new();
    for (key, _) in MEASURES {
        let (a, b): (Vec<f64>, Vec<f64>) = rows
            .iter()
            .filter_map(|q| {
                Some((
                    q[key].as_f64()?,
                    other.per_question[q["qid"].as_str()?][key].as_f64()?,
                ))
            })
            .unzip();
        differences.insert(
            key.into(),
            serde_json::to_value(paired_bootstrap(&a, &b, cfg))?,
        );
    }
    Ok(serde_json::json!({"path": other.dir, "differences": differences}))
}

/// `OUT/answers.jsonl`, an [`ocrank_audit::LineLog`] beside
/// `OUT/settings.json`: one line per answer, keyed by question and passage
/// order. A partial last line (a killed run) is dropped and decoded again; a
/// directory made with other settings is refused.
struct AnswerStore {
    log: LineLog,
    answers: BTreeMap<(String, Vec<String>), Answer>,
}

impl AnswerStore {
    fn open(dir: &Path, settings: &Value) -> anyhow::Result<AnswerStore> {
        let opened = LineLog::open(dir, "answers.jsonl", settings, "answers")?;
        if opened.dropped_partial > 0 {
            eprintln!(
                "{}: dropping an incomplete last line (an interrupted run)",
                opened.log.path().display()
            );
        }
        let mut answers = BTreeMap::new();
        for (i, line) in opened.complete.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let l: Line = serde_json::from_slice(line).with_context(|| {
                format!(
                    "{}:{}: not an answer line",
                    opened.log.path().display(),
                    i + 1
                )
            })?;
            answers.insert((l.qid, l.passages), l.answer);
        }
        Ok(AnswerStore {
            log: opened.log,
            answers,
        })
    }

    fn put(&mut self, line: Line) -> anyhow::Result<()> {
        self.log.append(&line)?;
        self.answers.insert((line.qid, line.passages), line.answer);
        Ok(())
    }
}
