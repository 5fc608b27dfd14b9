//! `ocrank score` and `ocrank prompts` end to end on the real binary, model
//! and DL19 pools (small: one query, six candidates).

mod common;
use common::ocrank;

const POOLS: &str = "../shared/data/msmarco/dl19/bm25-top100.json";
const QRELS: &str = "../shared/data/msmarco/dl19/qrels.txt";

#[test]
fn score_then_eval_with_bsc() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("scores.jsonl");
    let o = ocrank(&[
        "score",
        "--pools",
        POOLS,
        "--queries",
        "1",
        "--depth",
        "6",
        "--width",
        "3",
        "--mode",
        "batched",
        "--partition",
        "round-robin",
        "--permutations",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records = ocrank_data::read_scores(&out).unwrap();
    assert_eq!(records.len(), 6 * 4);
    for r in &records {
        assert!((r.probs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(r.mass > 0.0 && r.mass <= 1.0 && (0.0..=1.0).contains(&r.score));
        assert!((1..=3).contains(&r.slot) && r.window < 2);
    }
    // Permutation 0 is the canonical (BM25) order, contiguous slots per window.
    let canon: Vec<_> = records.iter().filter(|r| r.permutation == 0).collect();
    assert_eq!(canon[0].slot, 1);
    let o = ocrank(&[
        "eval",
        "--scores",
        out.to_str().unwrap(),
        "--qrels",
        QRELS,
        "--bootstrap",
        "100",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("tau_psi"), "{text}");
    let o = ocrank(&[
        "eval",
        "--scores",
        out.to_str().unwrap(),
        "--qrels",
        QRELS,
        "--bsc",
        "2",
        "--bootstrap",
        "100",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("tau_psi"), "{text}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("BSC@2: 2 group(s)"));
}

#[test]
fn prompts_export_tokens_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prompts.jsonl");
    let o = ocrank(&[
        "prompts",
        "--pools",
        POOLS,
        "--queries",
        "1",
        "--depth",
        "4",
        "--width",
        "2",
        "--mode",
        "invariant",
        "--tokens",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["blocks"].as_array().unwrap().len(), 2);
    assert_eq!(lines[0]["readout"].as_array().unwrap().len(), 2);
    assert_eq!(lines[0]["grade_ids"], serde_json::json!([32, 33, 34, 35]));
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let o = ocrank(&[
        "score",
        "--pools",
        "no/such/pools.json",
        "--out",
        "/dev/null",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no/such/pools.json"),
        "{err}"
    );
    let o = ocrank(&[
        "score",
        "--pools",
        POOLS,
        "--model",
        "no/model.gguf",
        "--out",
        "/dev/null",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("no/model.gguf")
            && err.contains("set-up")
            && err.lines().count() == 1,
        "{err}"
    );
    // Zero permutations is an error, not an empty output file (one value
    // parser for every command that takes --permutations).
    for cmd in ["score", "prompts", "audit"] {
        let o = ocrank(&[
            cmd,
            "--pools",
            POOLS,
            "--permutations",
            "0",
            "--out",
            "/dev/null",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success()
                && err.contains("'--permutations <PERMUTATIONS>'")
                && err.contains("must be at least 1"),
            "{cmd}: {err}"
        );
    }
}
