//! From stored scores to the audit's measures and its Markdown report.

use std::collections::BTreeMap;

use ocrank_metrics::report::{evaluate_scores, EvalConfig, Report, ScoresQuery};
use ocrank_metrics::stats::Bootstrap;
use ocrank_metrics::{Judgments, Scores};
use serde::Serialize;

use crate::store::Store;

/// What the audit measured and how.
#[derive(Debug, Clone, Serialize)]
pub struct AuditSpec {
    /// Permutations M for the instability measures (0 .. M).
    pub permutations: usize,
    /// Largest K of the BSC@K curve (each K needs at least 2 groups).
    pub bsc_max_k: Option<usize>,
    /// Permutations scored in all (max of M and the BSC plan).
    pub scored_permutations: usize,
    pub bootstrap_resamples: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlotProfile {
    pub slot: usize,
    pub count: usize,
    pub mean_score: f64,
    pub mean_mass: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BscPoint {
    pub k: usize,
    pub groups: usize,
    pub report: Report,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub windows: usize,
    pub forwards: usize,
    pub tokens: usize,
    pub tokens_per_forward: f64,
    /// Sum of the windows' scoring times (across resumed runs).
    pub scoring_seconds: f64,
    pub seconds_per_window: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Ranking quality and stability over permutations 0 .. M.
    pub main: Report,
    pub bsc: Vec<BscPoint>,
    pub slot_profile: Vec<SlotProfile>,
    /// Share of the score variance explained by the slot.
    pub slot_r2: f64,
    /// Mean nDCG@10 of random orders of the same pools (judged collections).
    pub random_ndcg_at_10: Option<f64>,
    pub cost: Cost,
    /// Pools the main report's threshold keeps whole (see [`WholePools`]).
    pub whole_pools: Option<WholePools>,
    pub warnings: Vec<String>,
}

/// Pools whose every candidate the retained-set threshold keeps under every
/// permutation: their overlap is 1 whatever the order, so when they are
/// most of the collection the overlap says little about order dependence.
#[derive(Debug, Clone, Serialize)]
pub struct WholePools {
    /// The threshold: the frozen F1 one, or the label-free median.
    pub t: f64,
    /// Pools kept whole under every permutation.
    pub pools: usize,
    /// Queries with a retained-set overlap.
    pub queries: usize,
}

/// Scores by query then permutation, from the store.
pub fn scores_by_query(store: &Store) -> BTreeMap<String, BTreeMap<usize, Scores>> {
    let mut out: BTreeMap<String, BTreeMap<usize, Scores>> = BTreeMap::new();
    for (_, w) in store.windows() {
        for r in &w.records {
            out.entry(r.qid.clone())
                .or_default()
                .entry(r.permutation)
                .or_default()
                .insert(r.candidate.clone(), r.score);
        }
    }
    out
}

fn queries(
    by_q: &BTreeMap<String, BTreeMap<usize, Scores>>,
    pick: impl Fn(&BTreeMap<usize, Scores>) -> BTreeMap<usize, Scores>,
) -> Vec<ScoresQuery> {
    by_q.iter()
        .map(|(q, perms)| ScoresQuery {
            qid: q.clone(),
            permutations: pick(perms),
        })
        .collect()
}

/// Without judgments: tau-PSI (with its tie share) and the retained-set
/// overlap at a threshold frozen at the median canonical score of the
/// collection (documented in report.md).
fn label_free(qs: &[ScoresQuery], cfg: &EvalConfig) -> Report {
    let mut canonical: Vec<f64> = qs
        .iter()
        .filter_map(|q| q.permutations.get(&0))
        .flat_map(|s| s.values().copied())
        .collect();
    canonical.sort_by(f64::total_cmp);
    let t = canonical.get(canonical.len() / 2).copied().unwrap_or(0.5);
    let mut r = Report {
        num_queries: qs.len(),
        permutations: qs.iter().map(|q| q.permutations.len()).max(),
        ..Default::default()
    };
    let mut cols: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for q in qs {
        let perms: Vec<&Scores> = q.permutations.values().collect();
        let mut row = BTreeMap::new();
        if let Some(tp) = ocrank_metrics::stability::tau_psi(&perms) {
            row.insert("tau_psi", tp.tau_psi);
            row.insert("tied_pair_share", tp.tied_share);
        }
        if let Some(o) = ocrank_metrics::threshold::retained_set_overlap(&perms, t) {
            row.insert("retained_set_overlap_at_median", o);
        }
        for (k, v) in row {
            cols.entry(k).or_default().push(v);
            r.per_query
                .entry(q.qid.clone())
                .or_default()
                .insert(k.to_string(), v);
        }
    }
    for (k, vals) in cols {
        r.metrics.push(k.to_string());
        r.collection
            .insert(k.to_string(), vals.iter().sum::<f64>() / vals.len() as f64);
        if let Some(b) = cfg.bootstrap {
            if let Some(i) = ocrank_metrics::stats::bootstrap_mean(&vals, b) {
                r.ci.insert(k.to_string(), [i.low, i.high]);
            }
        }
    }
    r.collection.insert("label_free_threshold".into(), t);
    r
}

/// Mean nDCG@10 over `draws` seeded random orders per query.
fn random_ndcg(
    pools: &BTreeMap<String, Vec<String>>,
    qrels: &BTreeMap<String, Judgments>,
    seed: u64,
) -> f64 {
    let draws = 50;
    let mut sum = 0.0;
    let mut n = 0;
    for (qid, ids) in pools {
        let Some(j) = qrels.get(qid) else { continue };
        for d in 0..draws {
            let order = ocrank_plan::permutation(seed ^ 0x5eed, qid, ids.len(), d + 1);
            let ranking: Vec<&str> = order.iter().map(|&i| ids[i].as_str()).collect();
            sum += ocrank_metrics::ndcg::ndcg_at_k(&ranking, j, 10);
            n += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Analyses a finished (or partial) audit. `pools` maps query id to the
/// candidate ids scored: it selects the queries analysed (all of the store
/// when empty) and gives the random baseline.
pub fn analyse(
    store: &Store,
    spec: &AuditSpec,
    pools: &BTreeMap<String, Vec<String>>,
    qrels: &BTreeMap<String, Judgments>,
) -> Result<Analysis, String> {
    // Only the queries of this run: the store may hold more from an earlier,
    // larger run with the same settings.
    let mut by_q = scores_by_query(store);
    if !pools.is_empty() {
        by_q.retain(|q, _| pools.contains_key(q));
    }
    let cfg = EvalConfig {
        cutoffs: vec![10],
        bootstrap: (spec.bootstrap_resamples > 0).then_some(Bootstrap {
            resamples: spec.bootstrap_resamples,
            seed: spec.seed,
            level: 0.95,
        }),
    };
    let m = spec.permutations;
    let main_queries = queries(&by_q, |p| {
        p.range(..m).map(|(i, s)| (*i, s.clone())).collect()
    });
    let main = if qrels.is_empty() {
        label_free(&main_queries, &cfg)
    } else {
        evaluate_scores(&main_queries, qrels, &cfg)?
    };
    let whole_pools = whole_pools(&main, &main_queries);
    let mut bsc = Vec::new();
    if let Some(kmax) = spec.bsc_max_k {
        for k in 1..=kmax {
            let groups = spec.scored_permutations / k;
            if groups < 2 {
                break;
            }
            let qs = queries(&by_q, |p| {
                ocrank_metrics::bsc::group_averages(p, (0..groups).map(|g| g * k..(g + 1) * k))
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                    .collect()
            });
            let report = if qrels.is_empty() {
                label_free(&qs, &cfg)
            } else {
                evaluate_scores(&qs, qrels, &cfg)?
            };
            bsc.push(BscPoint { k, groups, report });
        }
    }
    // Slot profile and the share of variance the slot explains.
    let mut by_slot: BTreeMap<usize, (usize, f64, f64)> = BTreeMap::new();
    let (mut all, mut cost) = (Vec::new(), (0, 0, 0, 0.0));
    for (key, w) in store.windows() {
        if key.permutation >= m || !by_q.contains_key(&key.qid) {
            continue;
        }
        cost.0 += 1;
        cost.1 += w.forwards;
        cost.2 += w.tokens;
        cost.3 += w.seconds;
        for r in &w.records {
            let e = by_slot.entry(r.slot).or_default();
            e.0 += 1;
            e.1 += r.score;
            e.2 += r.mass;
            all.push((r.slot, r.score));
        }
    }
    let slot_profile: Vec<SlotProfile> = by_slot
        .iter()
        .map(|(&slot, &(count, s, mass))| SlotProfile {
            slot,
            count,
            mean_score: s / count as f64,
            mean_mass: mass / count as f64,
        })
        .collect();
    let mean = all.iter().map(|x| x.1).sum::<f64>() / all.len().max(1) as f64;
    let total: f64 = all.iter().map(|x| (x.1 - mean).powi(2)).sum();
    let between: f64 = slot_profile
        .iter()
        .map(|p| p.count as f64 * (p.mean_score - mean).powi(2))
        .sum();
    let slot_r2 = if total > 0.0 { between / total } else { 0.0 };
    let mut warnings = Vec::new();
    if slot_r2 > 0.5 {
        warnings.push(format!(
            "No content signal: the slot explains {:.0}% of the score variance; the scorer grades by position, not by content.",
            100.0 * slot_r2
        ));
    }
    if let Some(w) = whole_pools.as_ref().filter(|w| 2 * w.pools > w.queries) {
        warnings.push(format!(
            "The retained-set threshold keeps whole pools: t = {:.4} keeps every candidate of {} of {} pools under every permutation, whose overlap is 1 whatever the order; the overlap then mostly counts those pools and says little about order dependence (read tau-PSI, or a decision of fixed size such as the top 5).",
            w.t, w.pools, w.queries
        ));
    }
    let random_ndcg_at_10 = (!qrels.is_empty()).then(|| random_ndcg(pools, qrels, spec.seed));
    if let (Some(r), Some(&mean_ndcg)) = (random_ndcg_at_10, main.collection.get("ndcg_at_10_mean"))
    {
        if mean_ndcg < r + 0.02 {
            warnings.push(format!(
                "No content signal: under permutation nDCG@10 ({mean_ndcg:.4}) is no better than a random order of the same pools ({r:.4}); its canonical-order value only reflects the first-stage order."
            ));
        }
    }
    Ok(Analysis {
        main,
        bsc,
        slot_profile,
        slot_r2,
        random_ndcg_at_10,
        cost: Cost {
            windows: cost.0,
            forwards: cost.1,
            tokens: cost.2,
            tokens_per_forward: cost.2 as f64 / cost.1.max(1) as f64,
            scoring_seconds: cost.3,
            seconds_per_window: cost.3 / cost.0.max(1) as f64,
        },
        whole_pools,
        warnings,
    })
}

/// How many of the queries with a retained-set overlap in `r` have their
/// whole pool kept by its threshold (the frozen F1 one, or the label-free
/// median) under every permutation.
fn whole_pools(r: &Report, qs: &[ScoresQuery]) -> Option<WholePools> {
    let t = match &r.threshold {
        Some(th) => th.t,
        None => *r.collection.get("label_free_threshold")?,
    };
    let (mut pools, mut queries) = (0, 0);
    for q in qs {
        let has_overlap = r.per_query.get(&q.qid).is_some_and(|m| {
            m.contains_key("retained_set_overlap")
                || m.contains_key("retained_set_overlap_at_median")
        });
        if has_overlap {
            queries += 1;
            let perms: Vec<&Scores> = q.permutations.values().collect();
            pools += usize::from(ocrank_metrics::threshold::keeps_whole_pool(&perms, t));
        }
    }
    (queries > 0).then_some(WholePools { t, pools, queries })
}

/// Writes the report's charts into `dir`; returns their file names.
pub fn write_plots(a: &Analysis, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    use crate::plot;
    let mut files = Vec::new();
    let per_q = &a.main.per_query;
    let mut tau: Vec<(String, f64)> = per_q
        .iter()
        .filter_map(|(q, m)| m.get("tau_psi").map(|v| (q.clone(), *v)))
        .collect();
    tau.sort_by(|x, y| x.1.total_cmp(&y.1));
    if !tau.is_empty() {
        let svg = plot::bars(
            "Per-query instability",
            "tau-PSI",
            &tau,
            Some((0.5, "unrelated orders (0.5)")),
        );
        std::fs::write(dir.join("instability.svg"), svg)?;
        files.push("instability.svg".to_string());
    }
    let mut nd: Vec<(String, f64, f64, f64)> = per_q
        .iter()
        .filter_map(|(q, m)| {
            Some((
                q.clone(),
                *m.get("ndcg_at_10_worst")?,
                *m.get("ndcg_at_10_mean")?,
                *m.get("ndcg_at_10")?,
            ))
        })
        .collect();
    nd.sort_by(|x, y| x.2.total_cmp(&y.2));
    if !nd.is_empty() {
        let svg = plot::ranges("nDCG@10 across permutations", "nDCG@10", &nd);
        std::fs::write(dir.join("ndcg.svg"), svg)?;
        files.push("ndcg.svg".to_string());
    }
    if !a.bsc.is_empty() {
        let ks: Vec<usize> = a.bsc.iter().map(|p| p.k).collect();
        let series: Vec<(&str, Vec<f64>)> = ["tau_psi", "retained_set_overlap", "ndcg_at_10_mean"]
            .into_iter()
            .filter_map(|m| {
                let ys: Option<Vec<f64>> = a
                    .bsc
                    .iter()
                    .map(|p| p.report.collection.get(m).copied())
                    .collect();
                ys.map(|ys| (m, ys))
            })
            .collect();
        if !series.is_empty() {
            std::fs::write(
                dir.join("bsc.svg"),
                plot::lines("BSC@K across disjoint groups", "value", &ks, &series),
            )?;
            files.push("bsc.svg".to_string());
        }
    }
    Ok(files)
}

fn fmt_metric(r: &Report, name: &str) -> String {
    match (r.collection.get(name), r.ci.get(name)) {
        (Some(v), Some([lo, hi])) => format!("{v:.4} [{lo:.4}, {hi:.4}]"),
        (Some(v), None) => format!("{v:.4}"),
        _ => "n/a".into(),
    }
}

/// The Markdown report: tables a reader can paste into a paper.
pub fn render_markdown(
    a: &Analysis,
    title: &str,
    command: &str,
    settings: &serde_json::Value,
    plots: &[String],
) -> String {
    let mut s = format!("# Audit: {title}\n\nCommand: `{command}`\n\n");
    s.push_str(&format!(
        "Settings: `{}`\n\n",
        serde_json::to_string(settings).unwrap_or_default()
    ));
    for w in &a.warnings {
        s.push_str(&format!("> **Warning.** {w}\n\n"));
    }
    let r = &a.main;
    s.push_str(&format!(
        "## Ranking quality and decision stability ({} queries, M = {} permutations; 95% bootstrap intervals)\n\n",
        r.num_queries,
        r.permutations.unwrap_or(0)
    ));
    s.push_str("| measure | value |\n|---|---|\n");
    for m in &r.metrics {
        s.push_str(&format!("| {m} | {} |\n", fmt_metric(r, m)));
    }
    if let Some(t) = &r.threshold {
        s.push_str(&format!(
            "\nFrozen F1 threshold t = {:.4} (tuned on the canonical order; mean F1 {:.4} over {} queries).\n",
            t.t, t.mean_f1, t.tuning_queries
        ));
        if t.t <= t.min_score {
            s.push_str(
                "\n> **Note.** The F1-best threshold is the smallest score: it keeps every candidate of the canonical order (the scores do not separate relevant from non-relevant), so a high retained-set overlap here says little.\n",
            );
        }
    }
    if let Some(w) = &a.whole_pools {
        s.push_str(&format!(
            "\nThe retained-set threshold t = {:.4} keeps every candidate of {} of {} pools under every permutation (their overlap is 1 whatever the order).\n",
            w.t, w.pools, w.queries
        ));
    }
    if let Some(rn) = a.random_ndcg_at_10 {
        s.push_str(&format!(
            "\nRandom order of the same pools: nDCG@10 = {rn:.4}.\n"
        ));
    }
    if !a.bsc.is_empty() {
        s.push_str("\n## BSC@K (stability across G disjoint groups of K permutations)\n\n| K | G | nDCG@10 (mean over groups) | tau-PSI | retained-set overlap |\n|---|---|---|---|---|\n");
        for p in &a.bsc {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                p.k,
                p.groups,
                fmt_metric(&p.report, "ndcg_at_10_mean"),
                fmt_metric(&p.report, "tau_psi"),
                fmt_metric(&p.report, "retained_set_overlap")
            ));
        }
    }
    s.push_str(&format!(
        "\n## Slot profile (slot explains {:.1}% of the score variance)\n\n| slot | n | mean score | mean grade mass |\n|---|---|---|---|\n",
        100.0 * a.slot_r2
    ));
    for p in &a.slot_profile {
        s.push_str(&format!(
            "| {} | {} | {:.4} | {:.4} |\n",
            p.slot, p.count, p.mean_score, p.mean_mass
        ));
    }
    let c = &a.cost;
    s.push_str(&format!(
        "\n## Cost\n\n{} windows, {} forward passes, {:.0} tokens per forward, {:.1} s per window ({:.0} s of scoring in all).\n",
        c.windows, c.forwards, c.tokens_per_forward, c.seconds_per_window, c.scoring_seconds
    ));
    if !plots.is_empty() {
        s.push_str("\n## Plots\n\n");
        for p in plots {
            s.push_str(&format!("![{p}]({p})\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocrank_data::ScoreRecord;

    fn record(qid: &str, perm: usize, cand: &str, slot: usize, score: f64) -> ScoreRecord {
        ScoreRecord {
            qid: qid.into(),
            permutation: perm,
            candidate: cand.into(),
            window: 0,
            slot,
            probs: [0.25; 4],
            mass: 1.0,
            score,
        }
    }

    /// Stores one scored window (window 0) of `qid` under `perm`.
    fn put_window(store: &mut Store, qid: &str, perm: usize, records: Vec<ScoreRecord>) {
        let key = crate::WindowKey {
            qid: qid.into(),
            permutation: perm,
            window: 0,
        };
        let window = crate::StoredWindow {
            records,
            tokens: 1,
            forwards: 1,
            seconds: 0.0,
        };
        store.put(key, window).unwrap();
    }

    #[test]
    fn without_qrels_the_main_report_is_label_free() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), &serde_json::json!({})).unwrap();
        for q in ["q1", "q2"] {
            for perm in 0..3 {
                // Scores follow the slot: the order decides everything.
                let order: Vec<&str> = if perm % 2 == 0 {
                    vec!["a", "b", "c"]
                } else {
                    vec!["c", "a", "b"]
                };
                let records = order
                    .iter()
                    .enumerate()
                    .map(|(s, c)| record(q, perm, c, s + 1, 1.0 - s as f64 / 3.0))
                    .collect();
                put_window(&mut store, q, perm, records);
            }
        }
        let spec = AuditSpec {
            permutations: 3,
            bsc_max_k: None,
            scored_permutations: 3,
            bootstrap_resamples: 100,
            seed: 0,
        };
        let a = analyse(&store, &spec, &BTreeMap::new(), &BTreeMap::new()).unwrap();
        assert_eq!(a.main.num_queries, 2);
        assert!(
            a.main.collection["tau_psi"] > 0.2,
            "{:?}",
            a.main.collection
        );
        assert!(a
            .main
            .collection
            .contains_key("retained_set_overlap_at_median"));
        assert!(a.slot_r2 > 0.99);
        assert!(a.warnings.iter().any(|w| w.contains("slot explains")));
    }

    #[test]
    fn a_threshold_that_keeps_whole_pools_is_counted_and_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), &serde_json::json!({})).unwrap();
        // Two pools score high, one low; within each pool the orders swap
        // the scores around, so the ranking moves under every reshuffle.
        for (q, base) in [("q1", 0.7), ("q2", 0.7), ("q3", 0.1)] {
            for perm in 0..3 {
                let ids = ["a", "b", "c"];
                let records = (0..3)
                    .map(|i| {
                        let c = ids[(i + perm) % 3];
                        record(q, perm, c, i + 1, base + 0.1 * (2 - i) as f64)
                    })
                    .collect();
                put_window(&mut store, q, perm, records);
            }
        }
        let spec = AuditSpec {
            permutations: 3,
            bsc_max_k: None,
            scored_permutations: 3,
            bootstrap_resamples: 0,
            seed: 0,
        };
        let a = analyse(&store, &spec, &BTreeMap::new(), &BTreeMap::new()).unwrap();
        // The label-free threshold is the median canonical score, 0.7: it
        // keeps q1 and q2 whole (overlap 1 although their rankings move).
        let w = a.whole_pools.as_ref().expect("whole pools are counted");
        assert_eq!((w.t, w.pools, w.queries), (0.7, 2, 3));
        assert_eq!(
            a.main.per_query["q1"]["retained_set_overlap_at_median"],
            1.0
        );
        assert!(a.main.per_query["q1"]["tau_psi"] > 0.3);
        assert!(a.warnings.iter().any(|w| w.contains("keeps whole pools")));
        let md = render_markdown(&a, "t", "cmd", &serde_json::json!({}), &[]);
        assert!(md.contains("keeps every candidate of 2 of 3 pools"), "{md}");
    }
}
