//! `ocrank serve` end to end: the real binary with the shipped trained
//! scorer, spoken to over plain HTTP/1.1. A DL19 pool POSTed to it gets the
//! grade distributions the committed audit of that scorer recorded, the
//! ranking and retained set follow from the scores, bad requests get a 400
//! naming the field, and a pool that cannot be scored a 422.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::root;

const ADAPTER: &str = "adapters/invariant-d40-2cycles-seed0";
const REPORT: &str = "reports/training/invariant-d40-seed0-cycle2/student-invariant";

/// The server process, killed when the test ends (also on a failed assert).
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(max_chars: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .current_dir(root())
        .args([
            "serve",
            "--adapter",
            ADAPTER,
            "--mode",
            "invariant",
            "--template",
            "compact",
            "--max-chars",
            max_chars,
            "--width",
            "10",
            "--max-candidates",
            "20",
            "--addr",
            "127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("listening on http://") {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(180))
        .expect("the server did not print its address");
    Server { child, addr }
}

/// One request on a fresh connection: (status, JSON body).
fn request(
    server: &Server,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    let body = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.addr,
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, payload) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let json =
        serde_json::from_str(payload).unwrap_or_else(|e| panic!("not JSON ({e}): {payload}"));
    (status, json)
}

#[test]
fn serve_scores_like_the_audit_and_names_bad_requests() {
    let server = start("300");
    assert_eq!(request(&server, "GET", "/health", None).0, 200);

    let (status, info) = request(&server, "GET", "/v1/info", None);
    assert_eq!(status, 200);
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(REPORT).join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["adapter_sha256"], settings["adapter_sha256"]);
    assert_eq!(info["model_sha256"], settings["model_sha256"]);
    assert_eq!(info["scorer"], settings["scorer"]);

    // The first DL19 query's BM25 top 20, as the audit scored it.
    let pools =
        ocrank_data::read_pools(&root().join("../shared/data/msmarco/dl19/bm25-top100.json"))
            .unwrap();
    let pool = &pools[0];
    let candidates: Vec<_> = pool.candidates[..20]
        .iter()
        .map(|c| serde_json::json!({"id": c.id, "text": c.text}))
        .collect();
    let body = serde_json::json!({"query": pool.query, "candidates": candidates, "threshold": 0.4});
    let (status, got) = request(&server, "POST", "/v1/score", Some(&body.to_string()));
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["cost"]["windows"], 2);
    assert_eq!(got["cost"]["forwards"], 2);
    assert!(got["cost"]["seconds"].as_f64().unwrap() > 0.0);
    assert!(got["cost"]["queued_seconds"].as_f64().unwrap() >= 0.0);

    // Each candidate's distribution equals the committed audit's.
    let mut committed = std::collections::HashMap::new();
    for line in std::fs::read_to_string(root().join(REPORT).join("windows.jsonl"))
        .unwrap()
        .lines()
    {
        let w: serde_json::Value = serde_json::from_str(line).unwrap();
        if w["qid"] == pool.qid.as_str() {
            for r in w["records"].as_array().unwrap() {
                committed.insert(r["candidate"].as_str().unwrap().to_string(), r.clone());
            }
        }
    }
    assert_eq!(committed.len(), 20);
    let scores = got["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 20);
    let mut worst = 0f64;
    for (i, s) in scores.iter().enumerate() {
        assert_eq!(s["id"], pool.candidates[i].id.as_str(), "request order");
        let r = &committed[s["id"].as_str().unwrap()];
        assert_eq!(s["slot"], r["slot"]);
        assert_eq!(s["window"], r["window"]);
        for g in 0..4 {
            let d = s["probs"][g].as_f64().unwrap() - r["probs"][g].as_f64().unwrap();
            worst = worst.max(d.abs());
        }
    }
    assert!(
        worst <= common::COMMITTED_PROB_TOL,
        "grade probabilities differ by {worst:e}"
    );

    // The ranking sorts by score; the retained set is score >= threshold.
    let score_of = |id: &serde_json::Value| {
        scores.iter().find(|s| s["id"] == *id).unwrap()["score"]
            .as_f64()
            .unwrap()
    };
    let ranking = got["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), 20);
    for pair in ranking.windows(2) {
        assert!(score_of(&pair[0]) >= score_of(&pair[1]));
    }
    let retained = got["retained"].as_array().unwrap();
    let want: Vec<_> = ranking
        .iter()
        .filter(|id| score_of(id) >= 0.4)
        .cloned()
        .collect();
    assert_eq!(retained, &want);
    assert!(!retained.is_empty() && retained.len() < 20, "{retained:?}");

    // Bad requests: 400 with the field named, and the server keeps serving.
    let too_many: Vec<_> = (0..21)
        .map(|i| serde_json::json!({"id": i.to_string(), "text": "t"}))
        .collect();
    let too_many = serde_json::json!({"query": "q", "candidates": too_many}).to_string();
    for (body, message) in [
        (
            r#"{"query": "q", "candidates": []}"#,
            "candidates: must hold",
        ),
        (
            r#"{"query": " ", "candidates": [{"id": "a", "text": "t"}]}"#,
            "query: must not be empty",
        ),
        (
            r#"{"query": "q", "candidates": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}]}"#,
            "candidates[1].id: \"a\" appears twice",
        ),
        (
            r#"{"query": "q", "candidates": [{"id": "a"}]}"#,
            "missing field `text`",
        ),
        (
            r#"{"query": "q", "candidates": [{"id": "a", "text": "t"}], "treshold": 1}"#,
            "unknown field `treshold`",
        ),
        (
            r#"{"query": "q", "candidates": [{"id": "", "text": "t"}]}"#,
            "candidates[0].id",
        ),
        (too_many.as_str(), "--max-candidates 20"),
        ("not json", "request body"),
    ] {
        let (status, got) = request(&server, "POST", "/v1/score", Some(body));
        assert_eq!(status, 400, "{body}: {got}");
        let error = got["error"].as_str().unwrap();
        assert!(error.contains(message), "{body}: {error}");
    }
    assert_eq!(request(&server, "GET", "/health", None).0, 200);

    // SIGTERM stops it cleanly (exit status 0).
    #[cfg(unix)]
    {
        let mut server = server;
        let pid = server.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let status = server.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[test]
fn serve_answers_422_for_a_pool_over_the_context() {
    // Without a cut, a 9,000-word query makes a prompt prefix longer than
    // SmolLM2's 8,192-token context: valid JSON that cannot be scored.
    let server = start("100000");
    let body = serde_json::json!({
        "query": "lobster ".repeat(9000),
        "candidates": [{"id": "a", "text": "t"}],
    });
    let (status, got) = request(&server, "POST", "/v1/score", Some(&body.to_string()));
    assert_eq!(status, 422, "{got}");
    let error = got["error"].as_str().unwrap();
    assert!(
        error.contains("over the model's context of 8192"),
        "{error}"
    );
    assert_eq!(request(&server, "GET", "/health", None).0, 200);
}
