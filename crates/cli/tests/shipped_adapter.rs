//! The trained scorer shipped in `adapters/invariant-d40-2cycles-seed0` is
//! the one the committed report audited: its files carry the fingerprint
//! recorded in the report's settings, and scoring a DL19 query with it on
//! the real model reproduces the report's grade distributions and nDCG@10
//! for that query.

mod common;

use std::path::Path;

use common::{adapter_fingerprint, ocrank, read_json, root};

const ADAPTER: &str = "adapters/invariant-d40-2cycles-seed0";
const REPORT: &str = "reports/training/invariant-d40-seed0-cycle2/student-invariant";

/// Each window's records, keyed by (qid, window).
fn windows(path: &Path) -> std::collections::BTreeMap<(String, u64), serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let key = (
                v["qid"].as_str().unwrap().to_string(),
                v["window"].as_u64().unwrap(),
            );
            (key, v["records"].clone())
        })
        .collect()
}

#[test]
fn shipped_adapter_is_the_audited_one() {
    let fingerprint = adapter_fingerprint(&root().join(ADAPTER));
    let settings = read_json(&root().join(REPORT).join("settings.json"));
    assert_eq!(settings["adapter_sha256"], serde_json::json!(fingerprint));
}

#[test]
fn shipped_adapter_reproduces_the_report_on_a_dl19_query() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("audit");
    // The report's settings, restricted to the first query of the pools.
    let run = ocrank(&[
        "audit",
        "--pools",
        "../shared/data/msmarco/dl19/bm25-top100.json",
        "--qrels",
        "../shared/data/msmarco/dl19/qrels.txt",
        "--queries",
        "1",
        "--depth",
        "20",
        "--width",
        "10",
        "--template",
        "compact",
        "--max-chars",
        "300",
        "--mode",
        "invariant",
        "--permutations",
        "1",
        "--adapter",
        ADAPTER,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let report = root().join(REPORT);
    let ours = windows(&out.join("windows.jsonl"));
    let theirs = windows(&report.join("windows.jsonl"));
    assert_eq!(ours.len(), 2, "20 candidates at width 10 are two windows");
    let mut worst = 0f64;
    for (key, records) in &ours {
        let committed = theirs
            .get(key)
            .unwrap_or_else(|| panic!("window {key:?} is not in the report"));
        let (a, b) = (records.as_array().unwrap(), committed.as_array().unwrap());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x["candidate"], y["candidate"]);
            assert_eq!(x["slot"], y["slot"]);
            for (p, q) in x["probs"]
                .as_array()
                .unwrap()
                .iter()
                .zip(y["probs"].as_array().unwrap())
            {
                worst = worst.max((p.as_f64().unwrap() - q.as_f64().unwrap()).abs());
            }
        }
    }
    assert!(
        worst <= common::COMMITTED_PROB_TOL,
        "grade probabilities differ by {worst:e}"
    );

    let (ours, theirs) = (
        read_json(&out.join("results.json")),
        read_json(&report.join("results.json")),
    );
    let per_query = ours["per_query"].as_object().unwrap();
    assert_eq!(per_query.len(), 1);
    let (qid, got) = per_query.iter().next().unwrap();
    let want = &theirs["per_query"][qid]["ndcg_at_10"];
    assert!(
        (got["ndcg_at_10"].as_f64().unwrap() - want.as_f64().unwrap()).abs() <= 1e-9,
        "query {qid}: nDCG@10 {} against the report's {want}",
        got["ndcg_at_10"]
    );
}
