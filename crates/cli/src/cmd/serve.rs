//! `ocrank serve`: the scorer behind HTTP. One model (with its adapter and
//! scorer settings) is loaded at start; each request is one pool, scored in
//! the order it was sent, window by window, exactly as `ocrank score` scores
//! permutation 0 of the same pool.
//!
//! - `POST /v1/score`: `{"query", "candidates": [{"id", "text"}], "threshold"?}`
//!   -> each candidate's `probs`, `mass`, `score`, `window` and `slot` (in
//!   request order), the `ranking` (score descending, ties by candidate id
//!   as trec_eval breaks them), the `retained` set when a threshold is given
//!   (`score >= threshold`, SPEC.md section 3), and the cost (windows,
//!   forwards, tokens, seconds of scoring and seconds queued behind other
//!   requests).
//! - `GET /v1/info`: the model, adapter and scorer settings with their
//!   fingerprints (as audits record them).
//! - `GET /health`.
//!
//! Bad requests get a 400 (422 when the pool is valid JSON but cannot be
//! scored, e.g. a window longer than the model's context) with
//! `{"error": "..."}` naming the field. Forwards run one at a time on a
//! blocking thread (the engine already uses every core); requests queue.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ocrank_data::{Candidate, Pool};
use ocrank_engine::Engine;
use ocrank_score::Scorer;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::common::{ModelArgs, ScorerArgs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (the trained scorer shipped in adapters/):
  ocrank serve --adapter adapters/invariant-d40-2cycles-seed0 --mode invariant \\
      --template compact --max-chars 300 --width 10 --addr 127.0.0.1:8080
  curl -s localhost:8080/v1/score -H 'content-type: application/json' \\
      -d '{\"query\": \"what is a lobster roll\", \"threshold\": 0.4,
           \"candidates\": [{\"id\": \"a\", \"text\": \"A lobster roll is a sandwich ...\"},
                          {\"id\": \"b\", \"text\": \"The stock market fell ...\"}]}'")]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub scorer: ScorerArgs,
    /// Address to listen on (port 0: any free port; the chosen address is
    /// printed as `listening on http://ADDR`).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Most candidates one request may hold.
    #[arg(long, default_value_t = 1000)]
    pub max_candidates: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreRequest {
    pub query: String,
    pub candidates: Vec<RequestCandidate>,
    /// Keep the candidates scoring at least this (the retained set); scores
    /// are in [0, 1] (the readout's scale, e.g. E[grade] / 3), so a frozen
    /// threshold from an audit's results.json applies as it is.
    #[serde(default)]
    pub threshold: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCandidate {
    pub id: String,
    pub text: String,
}

#[derive(Debug, Serialize)]
struct CandidateScore {
    id: String,
    probs: [f64; 4],
    mass: f64,
    score: f64,
    window: usize,
    slot: usize,
}

struct Service {
    scorer: Scorer<'static>,
    info: serde_json::Value,
    max_candidates: usize,
    /// One forward at a time: the engine already uses every core.
    gate: Mutex<()>,
}

/// An error answered as `{"error": message}` with its status.
struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> Failure {
    Failure(StatusCode::BAD_REQUEST, msg.into())
}

impl Service {
    /// Checks a request before any forward; errors name the field.
    fn validate(&self, req: &ScoreRequest) -> Result<(), Failure> {
        if req.query.trim().is_empty() {
            return Err(bad("query: must not be empty"));
        }
        if req.candidates.is_empty() {
            return Err(bad("candidates: must hold at least one candidate"));
        }
        if req.candidates.len() > self.max_candidates {
            return Err(bad(format!(
                "candidates: {} candidates, more than this server's --max-candidates {}",
                req.candidates.len(),
                self.max_candidates
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, c) in req.candidates.iter().enumerate() {
            if c.id.is_empty() {
                return Err(bad(format!("candidates[{i}].id: must not be empty")));
            }
            if !seen.insert(c.id.as_str()) {
                return Err(bad(format!(
                    "candidates[{i}].id: {:?} appears twice (ids name candidates in the ranking)",
                    c.id
                )));
            }
        }
        if let Some(t) = req.threshold {
            if !t.is_finite() {
                return Err(bad("threshold: must be a finite number"));
            }
        }
        Ok(())
    }

    fn score(&self, req: ScoreRequest) -> Result<serde_json::Value, Failure> {
        self.validate(&req)?;
        let started = Instant::now();
        let pool = Pool {
            qid: "request".into(),
            query: req.query,
            candidates: req
                .candidates
                .into_iter()
                .map(|c| Candidate {
                    id: c.id,
                    text: c.text,
                    grade: None,
                })
                .collect(),
        };
        let unscorable =
            |e: ocrank_score::Error| Failure(StatusCode::UNPROCESSABLE_ENTITY, format!("{e}"));
        let _gate = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        let queued = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let ctx = self.scorer.prepare(&pool.query).map_err(unscorable)?;
        let order: Vec<usize> = (0..pool.candidates.len()).collect();
        let windows = self.scorer.windows(&order);
        let mut by_candidate: Vec<Option<CandidateScore>> =
            (0..pool.candidates.len()).map(|_| None).collect();
        let (mut forwards, mut tokens) = (0, 0);
        for (w, window) in windows.iter().enumerate() {
            let (records, cost) = self
                .scorer
                .score_window(&ctx, &pool, 0, w, window)
                .map_err(unscorable)?;
            forwards += cost.forwards;
            tokens += cost.tokens;
            for (&c, r) in window.iter().zip(records) {
                by_candidate[c] = Some(CandidateScore {
                    id: r.candidate,
                    probs: r.probs,
                    mass: r.mass,
                    score: r.score,
                    window: r.window,
                    slot: r.slot,
                });
            }
        }
        let scores: Vec<CandidateScore> = by_candidate
            .into_iter()
            .map(|s| s.expect("every candidate is in exactly one window"))
            .collect();
        let ranking: Vec<&str> =
            ocrank_metrics::ranking::rank_entries(scores.iter().map(|s| (s.id.as_str(), s.score)));
        let mut out = json!({
            "scores": scores,
            "ranking": ranking,
            "cost": { "windows": windows.len(), "forwards": forwards,
                      "tokens": tokens, "seconds": started.elapsed().as_secs_f64(),
                      "queued_seconds": queued },
        });
        if let Some(t) = req.threshold {
            // The ranking sorts by score, so the retained set is its prefix
            // down to the last score >= t (a NaN score ranks last, never kept).
            let kept = scores.iter().filter(|s| s.score >= t).count();
            let retained = &ranking[..kept];
            out["threshold"] = json!(t);
            out["retained"] = json!(retained);
        }
        Ok(out)
    }
}

async fn score(
    State(svc): State<Arc<Service>>,
    body: Result<Json<ScoreRequest>, JsonRejection>,
) -> Response {
    let req = match body {
        Ok(Json(req)) => req,
        Err(e) => return bad(format!("request body: {}", e.body_text())).into_response(),
    };
    match tokio::task::spawn_blocking(move || svc.score(req)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(f)) => f.into_response(),
        Err(e) => Failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("scoring failed: {e}"),
        )
        .into_response(),
    }
}

async fn info_handler(State(svc): State<Arc<Service>>) -> Json<serde_json::Value> {
    Json(svc.info.clone())
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Ctrl-C or SIGTERM (what a service manager or container runtime sends):
/// stop accepting, finish the requests in flight, exit.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    eprintln!("shutting down");
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.max_candidates >= 1,
        "--max-candidates must be at least 1"
    );
    let cfg = args.scorer.config();
    let mut info = json!({
        "model": args.model.model.display().to_string(),
        "adapter": args.model.adapter.as_ref().map(|p| p.display().to_string()),
        "scorer": cfg,
        "ocrank_version": env!("CARGO_PKG_VERSION"),
    });
    args.model.fingerprint(&mut info)?;
    // The engine lives as long as the process: the scorer borrows it.
    let engine: &'static Engine = Box::leak(Box::new(args.model.load()?));
    let scorer = Scorer::new(engine, cfg).context("setting up the scorer")?;
    let service = Arc::new(Service {
        scorer,
        info,
        max_candidates: args.max_candidates,
        gate: Mutex::new(()),
    });
    let app = Router::new()
        .route("/v1/score", post(score))
        .route("/v1/info", get(info_handler))
        .route("/health", get(health))
        .with_state(service);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let addr = listener.local_addr()?;
        eprintln!("listening on http://{addr}");
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown_signal())
            .await
            .context("serving")
    })
}
