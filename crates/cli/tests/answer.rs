//! `ocrank answer` end to end on the real model and real HotpotQA questions:
//! each permutation's reader input is the top 5 of that permutation's
//! ranking in the audit, answers are memoised and resumable, and the flip,
//! EM and F1 follow from the answers. Needs `scripts/setup.sh`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{ocrank, ocrank_ok, read_json};
use ocrank_metrics::qa::normalize_answer;
use serde_json::Value;

const DEV: &str = "../shared/data/hotpotqa/dev-distractor-100.jsonl";

/// `ocrank answer` over an audit with short answers (6 tokens), `extra`
/// flags and `--out out`.
fn answer_args<'a>(audit: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "answer",
        "--scores",
        audit,
        "--pools",
        DEV,
        "--max-new-tokens",
        "6",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", out]);
    args
}

/// Top `k` of each (query, permutation) from the audit's windows.jsonl,
/// ranked here: score descending, ties by candidate id descending.
fn tops(audit: &Path, k: usize) -> BTreeMap<(String, u64), Vec<String>> {
    let mut scores: BTreeMap<(String, u64), Vec<(f64, String)>> = BTreeMap::new();
    for line in std::fs::read_to_string(audit.join("windows.jsonl"))
        .unwrap()
        .lines()
    {
        let w: Value = serde_json::from_str(line).unwrap();
        for r in w["records"].as_array().unwrap() {
            scores
                .entry((
                    r["qid"].as_str().unwrap().into(),
                    r["permutation"].as_u64().unwrap(),
                ))
                .or_default()
                .push((
                    r["score"].as_f64().unwrap(),
                    r["candidate"].as_str().unwrap().into(),
                ));
        }
    }
    scores
        .into_iter()
        .map(|(key, mut v)| {
            v.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then_with(|| b.1.cmp(&a.1)));
            (key, v.into_iter().take(k).map(|(_, id)| id).collect())
        })
        .collect()
}

#[test]
fn answers_follow_each_permutations_top_5_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let ans = dir.path().join("answers");
    let (audit_s, ans_s) = (audit.to_str().unwrap(), ans.to_str().unwrap());
    ocrank_ok(&[
        "audit",
        "--pools",
        DEV,
        "--queries",
        "2",
        "--depth",
        "10",
        "--width",
        "10",
        "--template",
        "compact",
        "--max-chars",
        "200",
        "--permutations",
        "3",
        "--out",
        audit_s,
    ]);
    let args = answer_args(audit_s, ans_s, &[]);
    ocrank_ok(&args);
    let first = read_json(&ans.join("results.json"));
    let expected_tops = tops(&audit, 5);
    let gold: BTreeMap<String, String> = std::fs::read_to_string(common::root().join(DEV))
        .unwrap()
        .lines()
        .take(2)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["_id"].as_str().unwrap().into(),
                v["answer"].as_str().unwrap().into(),
            )
        })
        .collect();
    let stored: Vec<Value> = std::fs::read_to_string(ans.join("answers.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let per_q = first["per_question"].as_array().unwrap();
    assert_eq!(per_q.len(), 2);
    let mut flips = Vec::new();
    for q in per_q {
        let qid = q["qid"].as_str().unwrap();
        assert_eq!(q["gold"].as_str().unwrap(), gold[qid]);
        let perms = q["permutations"].as_array().unwrap();
        assert_eq!(perms.len(), 3);
        let mut answers = Vec::new();
        for p in perms {
            let passages: Vec<String> = serde_json::from_value(p["passages"].clone()).unwrap();
            assert_eq!(
                passages,
                expected_tops[&(qid.to_string(), p["permutation"].as_u64().unwrap())]
            );
            // The answer is the stored one for exactly this question and passage order.
            let line = stored
                .iter()
                .find(|l| l["qid"] == qid && l["passages"] == p["passages"])
                .expect("a stored answer");
            assert_eq!(p["answer"], line["text"]);
            answers.push(normalize_answer(p["answer"].as_str().unwrap()));
        }
        let differ = [(0, 1), (0, 2), (1, 2)]
            .iter()
            .filter(|(a, b)| answers[*a] != answers[*b])
            .count();
        let flip = differ as f64 / 3.0;
        assert!((q["answer_flip"].as_f64().unwrap() - flip).abs() < 1e-12);
        let em = f64::from(u8::from(answers[0] == normalize_answer(&gold[qid])));
        assert_eq!(q["em_canonical"].as_f64().unwrap(), em);
        flips.push(flip);
    }
    let summary = first["summary"]["answer_flip"]["estimate"]
        .as_f64()
        .unwrap();
    assert!((summary - (flips[0] + flips[1]) / 2.0).abs() < 1e-12);

    // Nothing to do on a rerun; a torn last line is decoded again, the rest reused.
    assert!(ocrank_ok(&args).contains(", 0 to decode"));
    let path = ans.join("answers.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().count();
    std::fs::write(&path, &text[..text.len() - 20]).unwrap();
    let stderr = ocrank_ok(&args);
    assert!(
        stderr.contains("dropping an incomplete last line"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{} answers stored, 1 to decode", lines - 1)),
        "{stderr}"
    );
    assert_eq!(
        read_json(&ans.join("results.json"))["per_question"],
        first["per_question"]
    );

    // A second run (top 3) against the first: paired differences per question.
    let ans3 = dir.path().join("answers-top3");
    let ans3_s = ans3.to_str().unwrap();
    ocrank_ok(&answer_args(
        audit_s,
        ans3_s,
        &["--top", "3", "--versus", ans_s],
    ));
    let third = read_json(&ans3.join("results.json"));
    for key in ["answer_flip", "f1_mean", "support_recall"] {
        let value = |r: &Value, i: usize| r["per_question"][i][key].as_f64().unwrap();
        let want = (0..2)
            .map(|i| value(&third, i) - value(&first, i))
            .sum::<f64>()
            / 2.0;
        let got = third["versus"]["differences"][key]["estimate"]
            .as_f64()
            .unwrap();
        assert!((got - want).abs() < 1e-12, "{key}: {got} vs {want}");
    }
    // ... and only over the same questions, refused before anything is decoded.
    let one = dir.path().join("answers-one");
    let one_s = one.to_str().unwrap();
    let out = ocrank(&answer_args(
        audit_s,
        one_s,
        &["--queries", "1", "--versus", ans_s],
    ));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("compare runs over the same questions"));
    assert!(!one.exists());

    // Other reader settings are refused in the same directory.
    let out = ocrank(&answer_args(audit_s, ans_s, &["--top", "3"]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("other settings"));
}

#[test]
fn answer_names_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let scores = dir.path().join("scores.jsonl");
    let rec = |qid: &str, cand: &str, perm: u32| {
        format!(
            r#"{{"qid":"{qid}","permutation":{perm},"candidate":"{cand}","window":0,"slot":1,"probs":[0.25,0.25,0.25,0.25],"mass":1.0,"score":0.5}}"#
        )
    };
    let out_dir = dir.path().join("out");
    let fail = |lines: &[String], extra: &[&str]| -> String {
        std::fs::write(&scores, lines.join("\n") + "\n").unwrap();
        let mut args = vec![
            "answer",
            "--scores",
            scores.to_str().unwrap(),
            "--pools",
            DEV,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out_dir.to_str().unwrap()]);
        let out = ocrank(&args);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let qid = "5a85355a5542997b5ce3ffc8";
    let e = fail(&[rec("no-such-question", "x", 0)], &[]);
    assert!(
        e.contains("query no-such-question") && e.contains("is not in"),
        "{e}"
    );
    let e = fail(&[rec(qid, "Not a title", 0)], &[]);
    assert!(
        e.contains("candidate \"Not a title\"") && e.contains(qid),
        "{e}"
    );
    let e = fail(&[rec(qid, "Lucy Saunders", 1)], &[]);
    assert!(e.contains("no permutation 0"), "{e}");
    // A partly scored audit: a permutation short of a candidate, a query short of a permutation.
    let e = fail(
        &[
            rec(qid, "Lucy Saunders", 0),
            rec(qid, "Fray Mocho", 0),
            rec(qid, "Lucy Saunders", 1),
        ],
        &[],
    );
    assert!(e.contains("permutation 1 scores other candidates"), "{e}");
    let other = "5a8c62945542996e8ac88a98";
    let e = fail(
        &[
            rec(qid, "Lucy Saunders", 0),
            rec(qid, "Lucy Saunders", 1),
            rec(other, "x", 0),
        ],
        &[],
    );
    assert!(
        e.contains("has 1 permutations") && e.contains("other queries 2"),
        "{e}"
    );
    // Gold answers must come from a HotpotQA file.
    let e = fail(
        &[rec(qid, "Lucy Saunders", 0)],
        &["--answers", "../shared/data/msmarco/dl19/qrels.txt"],
    );
    assert!(e.contains("reading gold answers from"), "{e}");
    assert!(
        !out_dir.join("answers.jsonl").exists(),
        "nothing decoded on bad input"
    );
}

#[test]
fn a_trec_run_is_read_as_one_ranking_with_trec_eval_ties() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.trec");
    let qid = "5a85355a5542997b5ce3ffc8";
    // Scores equal as 32-bit floats tie, and ties go by docid descending.
    std::fs::write(
        &run,
        format!(
            "{qid} Q0 Lucy_Saunders 1 2.0 x\n{qid} Q0 Fray_Mocho 2 1.00000001 x\n{qid} Q0 Michael_Jackson_(writer) 3 1.0 x\n"
        ),
    )
    .unwrap();
    // Pools with TREC-safe ids (a run's docids hold no spaces), made by the script.
    let pools = dir.path().join("pools.jsonl");
    let made = std::process::Command::new("scripts/hotpotqa_bm25.py")
        .current_dir(common::root())
        .args([DEV, "--pools", pools.to_str().unwrap()])
        .args(["--qrels", dir.path().join("qrels").to_str().unwrap()])
        .args(["--run", dir.path().join("bm25.trec").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let out = dir.path().join("out");
    ocrank_ok(&[
        "answer",
        "--run",
        run.to_str().unwrap(),
        "--pools",
        pools.to_str().unwrap(),
        "--answers",
        DEV,
        "--top",
        "2",
        "--max-new-tokens",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = read_json(&out.join("results.json"));
    let q = &r["per_question"][0];
    assert_eq!(r["questions"], 1);
    assert_eq!(q["permutations"].as_array().unwrap().len(), 1);
    assert_eq!(
        q["permutations"][0]["passages"],
        serde_json::json!(["Lucy_Saunders", "Michael_Jackson_(writer)"])
    );
    assert!(q["answer_flip"].is_null(), "one ranking has no flip");
    assert_eq!(r["scores"]["kind"], "run");
}
