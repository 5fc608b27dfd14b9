//! `ocrank eval` end to end: the real binary on the real TREC DL data (must
//! match trec_eval to the last printed digit) and on a small synthetic scores
//! file whose order-dependence metrics are known by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn ocrank(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .args(args)
        .output()
        .expect("the ocrank binary runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "ocrank failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn bm25(collection: &str) -> (String, String) {
    let dir = data().join("msmarco").join(collection);
    (
        dir.join("bm25-top100.trec").display().to_string(),
        dir.join("qrels.txt").display().to_string(),
    )
}

#[test]
fn dl19_bm25_matches_trec_eval() {
    let (run, qrels) = bm25("dl19");
    let out = ocrank(&["eval", "--run", &run, "--qrels", &qrels]);
    assert_eq!(stdout(&out), "ndcg_cut_10           \tall\t0.5058\n");
    // All 43 queries are judged: nothing skipped, nothing to note.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dl21_bm25_matches_trec_eval() {
    let (run, qrels) = bm25("dl21");
    let out = ocrank(&["eval", "--run", &run, "--qrels", &qrels]);
    assert_eq!(stdout(&out), "ndcg_cut_10           \tall\t0.4458\n");
}

#[test]
fn per_query_lines_and_several_cutoffs() {
    let (run, qrels) = bm25("dl19");
    let text = stdout(&ocrank(&[
        "eval", "--run", &run, "--qrels", &qrels, "-q", "--k", "5,10,20",
    ]));
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 43 * 3 + 3);
    assert!(lines
        .iter()
        .all(|f| f.len() == 3 && f[2].parse::<f64>().is_ok()));
    let all: Vec<&str> = lines
        .iter()
        .filter(|f| f[1] == "all")
        .map(|f| f[0].trim_end())
        .collect();
    assert_eq!(all, ["ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_20"]);
    assert!(text.contains("ndcg_cut_10           \tall\t0.5058\n"));
}

#[test]
fn queries_without_judgments_are_reported_not_silent() {
    // DL21's run against DL19's qrels: no query in common.
    let (run, _) = bm25("dl21");
    let (_, qrels) = bm25("dl19");
    let out = ocrank(&["eval", "--run", &run, "--qrels", &qrels]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("skipped 53 run queries without judgments"),
        "{err}"
    );
    assert!(
        err.contains("ignored 43 judged queries absent from the run"),
        "{err}"
    );
}

/// One JSONL line of the scores file of SPEC.md section 7.
fn record(qid: &str, permutation: usize, candidate: &str, score: f64) -> String {
    format!(
        r#"{{"qid":"{qid}","permutation":{permutation},"candidate":"{candidate}","window":0,"slot":1,"probs":[0.25,0.25,0.25,0.25],"mass":0.9,"score":{score}}}"#
    )
}

#[test]
fn scores_file_order_dependence() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("eval-scores");
    std::fs::create_dir_all(&dir).unwrap();
    let qrels = dir.join("qrels.txt");
    std::fs::write(
        &qrels,
        "q1 0 a 3\nq1 0 b 2\nq1 0 c 0\nq1 0 d 1\nq2 0 a 2\nq2 0 b 0\n",
    )
    .unwrap();
    let forward = [("a", 0.9), ("b", 0.7), ("c", 0.1), ("d", 0.5)];
    let mut lines = Vec::new();
    // q1: permutations 0 and 2 give the ideal order, permutation 1 reverses it.
    // Kendall tau over the pairs (0,1), (0,2), (1,2): -1, 1, -1 -> tau-PSI 2/3.
    for p in [2, 0, 1] {
        for (c, s) in forward {
            lines.push(record("q1", p, c, if p == 1 { 1.0 - s } else { s }));
        }
    }
    // q2: a constant scorer: tau-PSI exactly 0.5 with every pair tied.
    for p in 0..3 {
        for c in ["b", "a", "c"] {
            lines.push(record("q2", p, c, 0.5));
        }
    }
    // A query without judgments: skipped with a note.
    lines.push(record("unjudged", 0, "a", 0.3));
    let scores = dir.join("scores.jsonl");
    std::fs::write(&scores, lines.join("\n") + "\n").unwrap();
    let json = dir.join("results.json");

    let out = ocrank(&[
        "eval",
        "--scores",
        scores.to_str().unwrap(),
        "--qrels",
        qrels.to_str().unwrap(),
        "--out",
        json.to_str().unwrap(),
        "--bootstrap",
        "1000",
        "-q",
    ]);
    let text = stdout(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("skipped 1 scores query without judgments"),
        "{err}"
    );
    assert!(
        text.contains("tau_psi               \tq1\t0.6667\n"),
        "{text}"
    );
    assert!(
        text.contains("tau_psi               \tq2\t0.5000\n"),
        "{text}"
    );
    assert!(
        text.contains("tied_pair_share       \tq2\t1.0000\n"),
        "{text}"
    );
    assert!(
        text.contains("tau_psi               \tall\t0.5833\n"),
        "{text}"
    );
    assert!(
        text.contains("ndcg_cut_10           \tq1\t1.0000\n"),
        "{text}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let c = &v["collection"];
    let close = |x: &serde_json::Value, e: f64| (x.as_f64().unwrap() - e).abs() < 1e-12;
    assert!(close(&c["tau_psi"], (2.0 / 3.0 + 0.5) / 2.0), "{c}");
    assert!(close(&c["tied_pair_share"], 0.5));
    assert!(close(&v["per_query"]["q1"]["tau_psi"], 2.0 / 3.0));
    // q1: canonical nDCG 1, the reversed permutation is the worst;
    // order spread = mean - worst = (1 + 1 + worst) / 3 - worst.
    assert!(close(&v["per_query"]["q1"]["ndcg_at_10"], 1.0));
    let worst = v["per_query"]["q1"]["ndcg_at_10_worst"].as_f64().unwrap();
    assert!(worst < 1.0);
    assert!(close(
        &v["per_query"]["q1"]["order_spread"],
        2.0 * (1.0 - worst) / 3.0
    ));
    for key in [
        "ndcg_at_10",
        "tau_psi",
        "retained_set_overlap",
        "order_spread",
    ] {
        assert!(c[key].is_number(), "collection lacks {key}: {c}");
        let ci = v["ci"][key].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= c[key].as_f64().unwrap() + 1e-12);
        assert!(c[key].as_f64().unwrap() <= ci[1].as_f64().unwrap() + 1e-12);
    }
    assert_eq!(v["num_queries"], 2);
    assert_eq!(v["permutations"], 3);
    assert_eq!(v["skipped_without_qrels"][0], "unjudged");
    assert!(v["threshold"]["t"].is_number());
}

#[test]
fn bad_invocations_fail_with_a_message() {
    let (run, qrels) = bm25("dl19");
    let both = ocrank(&["eval", "--run", &run, "--scores", &run, "--qrels", &qrels]);
    assert!(!both.status.success());
    let missing = ocrank(&["eval", "--run", "/nonexistent/run.trec", "--qrels", &qrels]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/run.trec"));
    let zero = ocrank(&["eval", "--run", &run, "--qrels", &qrels, "--k", "0"]);
    assert!(!zero.status.success());
}
