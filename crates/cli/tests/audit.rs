//! `ocrank audit` end to end on the real model and DL19: an audit killed
//! with SIGKILL mid-run and resumed ends with exactly the results of an
//! uninterrupted one; a directory with other settings is refused; an audit
//! extended to more orders scores only the new ones and ends where an audit
//! at that many orders from scratch does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn audit(out: &Path, extra: &[&str]) -> Command {
    audit_with(out, "3", extra)
}

/// The test audit with `permutations` orders.
fn audit_with(out: &Path, permutations: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ocrank"));
    c.current_dir(root()).args([
        "audit",
        "--pools",
        "../shared/data/msmarco/dl19/bm25-top100.json",
        "--qrels",
        "../shared/data/msmarco/dl19/qrels.txt",
        "--queries",
        "2",
        "--depth",
        "6",
        "--width",
        "3",
        "--permutations",
        permutations,
        "--bsc",
        "2",
        "--bootstrap",
        "200",
        "--out",
        out.to_str().unwrap(),
    ]);
    c.args(extra);
    c
}

fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn results(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    // Wall times and the command line differ between runs by nature.
    v.as_object_mut().unwrap().remove("cost");
    v.as_object_mut().unwrap().remove("command");
    v
}

fn scores(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string(dir.join("windows.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("seconds");
            v.to_string()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn killed_and_resumed_audit_equals_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let st = audit(&b, &[]).stderr(Stdio::null()).status().unwrap();
    assert!(st.success());

    let mut child = audit(&a, &[])
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let log = a.join("windows.jsonl");
    let start = Instant::now();
    while lines(&log) < 3 && start.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done = lines(&log);
    assert!((3..16).contains(&done), "killed after {done} windows");
    let out = audit(&a, &[]).output().unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already scored"), "{err}");
    assert_eq!(lines(&log), 16);
    assert_eq!(scores(&a), scores(&b));
    assert_eq!(results(&a), results(&b));
    assert!(a.join("report.md").exists());

    // Other settings never reuse these scores.
    let out = audit(&a, &["--mode", "invariant"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("other settings") && err.contains("scorer"),
        "{err}"
    );
}

/// Permutation i of a query does not depend on M, so an audit's window log
/// at fewer orders (here copied into a new directory, as
/// `scripts/report-lib.sh`'s `seed_audit` does) is the start of the same
/// scorer's audit at more: only the new orders are scored and the results
/// equal a from-scratch audit's. Rerun at the smaller M, the directory gives
/// the smaller audit's results again (orders beyond M are ignored).
#[test]
fn an_audit_extended_to_more_orders_equals_one_from_scratch() {
    let tmp = tempfile::tempdir().unwrap();
    let (small, big, ext) = (
        tmp.path().join("small"),
        tmp.path().join("big"),
        tmp.path().join("ext"),
    );
    // --bsc 2 scores at least 2 x 2 orders, so M = 4 and 6.
    for (dir, m) in [(&small, "4"), (&big, "6")] {
        let out = audit_with(dir, m, &[]).output().unwrap();
        succeeded(&out);
    }
    std::fs::create_dir(&ext).unwrap();
    for f in ["settings.json", "windows.jsonl"] {
        std::fs::copy(small.join(f), ext.join(f)).unwrap();
    }
    let out = audit_with(&ext, "6", &[]).output().unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // Two queries, depth 6, width 3: two windows per query and order.
    assert!(
        err.contains("24 windows in the plan, 16 already scored, 8 to score"),
        "{err}"
    );
    assert_eq!(scores(&ext), scores(&big));
    assert_eq!(results(&ext), results(&big));

    let out = audit_with(&ext, "4", &[]).output().unwrap();
    succeeded(&out);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("16 windows in the plan, 16 already scored, 0 to score"));
    assert_eq!(results(&ext), results(&small));
}

#[test]
fn external_scores_give_the_same_audit_and_compare_reads_audits() {
    let tmp = tempfile::tempdir().unwrap();
    let (own, ext) = (tmp.path().join("own"), tmp.path().join("ext"));
    assert!(audit(&own, &[])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success());
    // The same plan scored by `ocrank score` stands in for an external scorer.
    let scores = tmp.path().join("scores.jsonl");
    let st = Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .current_dir(root())
        .args([
            "score",
            "--pools",
            "../shared/data/msmarco/dl19/bm25-top100.json",
            "--queries",
            "2",
            "--depth",
            "6",
            "--width",
            "3",
            "--permutations",
            "4",
            "--out",
            scores.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let out = audit(&ext, &["--scores", scores.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(&out);
    let (a, b) = (results(&own), results(&ext));
    assert_eq!(a["collection"], b["collection"]);
    assert_eq!(a["bsc"], b["bsc"]);

    let out = Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .current_dir(root())
        .args([
            "compare",
            own.to_str().unwrap(),
            ext.to_str().unwrap(),
            "--bootstrap",
            "500",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    succeeded(&out);
    assert!(
        table.contains("| tau_psi |") && table.contains("+0.0000 [+0.0000, +0.0000]"),
        "{table}"
    );

    // An audit directory is a score source too, read through the audit's
    // checksummed log: re-auditing it gives the same results.
    let again = tmp.path().join("again");
    let out = audit(&again, &["--scores", own.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(&out);
    assert_eq!(results(&again)["collection"], a["collection"]);
    assert_eq!(crate::scores(&again), crate::scores(&own));

    // LLM-teacher labels from the audit directory equal those from the
    // scores JSONL of the same plan.
    let pools: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(root().join("../shared/data/msmarco/dl19/bm25-top100.json"))
            .unwrap(),
    )
    .unwrap();
    let two = tmp.path().join("two.json");
    std::fs::write(&two, serde_json::to_string(&pools[..2]).unwrap()).unwrap();
    let label = |scores: &[&Path], orders: &str, out: &Path| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ocrank"));
        c.current_dir(root())
            .args(["label", "--teacher", "llm", "--scores"])
            .args(scores)
            .args(["--orders", orders, "--depth", "6", "--pools"])
            .arg(&two)
            .arg("--out")
            .arg(out);
        c.output().unwrap()
    };
    let (from_dir, from_jsonl) = (tmp.path().join("ld.jsonl"), tmp.path().join("lj.jsonl"));
    for (src, out) in [(&own, &from_dir), (&scores, &from_jsonl)] {
        let o = label(&[src.as_path()], "4", out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (ld, lj) = (
        ocrank_data::read_labels(&from_dir).unwrap(),
        ocrank_data::read_labels(&from_jsonl).unwrap(),
    );
    assert_eq!(ld.by_query.len(), 2);
    assert_eq!(ld.by_query, lj.by_query);
    assert_eq!(ld.header.provenance["scores"][0]["kind"], "audit");
    assert!(ld.header.provenance["scores"][0]["settings"]["scorer"].is_object());
    // The audit scored permutations 0..3 only; and a source given twice
    // would count each score twice.
    let o = label(&[own.as_path()], "5", &tmp.path().join("l5.jsonl"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("under 4 of permutations 0..4"),
        "{err}"
    );
    let o = label(
        &[own.as_path(), scores.as_path()],
        "4",
        &tmp.path().join("l2.jsonl"),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("scored twice"), "{err}");
}

/// Without --qrels, the grades a pool carries are the judgments: HotpotQA's
/// supporting paragraphs give the same per-query nDCG@10 as the qrels that
/// `scripts/hotpotqa_bm25.py` wrote for the committed HotpotQA report
/// (whose pools are the same paragraphs in BM25 order, scored invariantly,
/// so the order does not change a score).
#[test]
fn pool_grades_are_the_judgments_without_qrels() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("hotpot");
    let run = common::ocrank(&[
        "audit",
        "--pools",
        "../shared/data/hotpotqa/dev-distractor-100.jsonl",
        "--queries",
        "2",
        "--depth",
        "10",
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
        "--bootstrap",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    succeeded(&run);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("judgments: the grades the pools carry (2 queries, 20 graded candidates)"),
        "{stderr}"
    );
    let ours = results(&out);
    assert_eq!(ours["qrels"], "pool grades");
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            root().join("reports/training/hotpotqa-transfer/off-the-shelf-invariant/results.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let per_query = ours["per_query"].as_object().unwrap();
    assert_eq!(per_query.len(), 2);
    for (qid, m) in per_query {
        let got = m["ndcg_at_10"].as_f64().unwrap();
        let want = committed["per_query"][qid]["ndcg_at_10"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{qid}: {got} against {want}");
    }
}

/// LLMBar pairs audited without --qrels: the gold response the pools carry
/// gives the response-ranking decisions (pair flip, gold crossing, label
/// accuracy from one order and from the average) next to tau-PSI.
#[test]
fn llmbar_pairs_get_pair_flip_from_their_gold_response() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("llmbar");
    let run = common::ocrank(&[
        "audit",
        "--pools",
        "../shared/data/llmbar/natural.json",
        "--queries",
        "2",
        "--depth",
        "2",
        "--width",
        "2",
        "--task",
        "response",
        "--permutations",
        "2",
        "--bootstrap",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    succeeded(&run);
    let r = results(&out);
    assert_eq!(r["qrels"], "pool grades");
    let per_query = r["per_query"].as_object().unwrap();
    assert_eq!(per_query.len(), 2);
    for (qid, m) in per_query {
        for name in [
            "pair_flip",
            "gold_crossing",
            "label_accuracy",
            "label_accuracy_averaged",
        ] {
            let v = m[name]
                .as_f64()
                .unwrap_or_else(|| panic!("{qid}: no {name}"));
            assert!((0.0..=1.0).contains(&v), "{qid} {name} {v}");
        }
        // Two orders of a pair: the flip is 0 or 1, and it is a gold crossing
        // exactly when the chosen response changes.
        assert_eq!(m["pair_flip"], m["gold_crossing"], "{qid}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("pair_flip"), "{report}");
}
