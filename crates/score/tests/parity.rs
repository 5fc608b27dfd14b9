//! Parity of our engine with llama.cpp, against a golden fixture
//! (`tests/fixtures/llamacpp_dl19_b20.json`) that `scripts/llamacpp_parity.py`
//! regenerates; this test needs neither llama.cpp nor Python.
//!
//! One batched window: the first DL19 query, its first 20 BM25 candidates,
//! width 20 (~2,370 tokens). llama.cpp evaluated exactly our token ids twice:
//! on an F32 GGUF made from the Q4_1 file (f32 KV cache, flash attention off),
//! which computes what our F32 engine computes, so the grade distributions
//! must agree to 1e-4; and on the Q4_1 file itself, whose quantized matmuls
//! round activations to 8 bits, so only to 5e-2.
//!
//! Needs `scripts/setup.sh` to have fetched the model, and ../shared/data.
//! `cargo test -p ocrank-score --test parity -- --nocapture` prints the
//! measured differences.

use std::path::{Path, PathBuf};

use ocrank_engine::{DType, Device, Engine};
use ocrank_score::{ScoreConfig, Scorer};
use serde_json::Value;

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf"
);
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/llamacpp_dl19_b20.json"
);

/// Against llama.cpp on the F32 GGUF: probabilities (absolute) and mass (relative).
const TOL_F32: f64 = 1e-4;
/// Against llama.cpp on the Q4_1 file (8-bit activations there).
const TOL_Q4_1: f64 = 5e-2;

fn pools_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/msmarco/dl19/bm25-top100.json")
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("an array of ids")
        .iter()
        .map(|x| x.as_u64().expect("an id") as u32)
        .collect()
}

fn probs(v: &Value) -> [f64; 4] {
    let a = v.as_array().expect("four probabilities");
    assert_eq!(a.len(), 4);
    std::array::from_fn(|g| a[g].as_f64().unwrap())
}

#[derive(Default)]
struct MaxDiff {
    probs: f64,
    mass_rel: f64,
    at: usize,
}

impl MaxDiff {
    fn update(
        &mut self,
        slot: usize,
        ours: &[f64; 4],
        ours_mass: f64,
        theirs: &[f64; 4],
        mass: f64,
    ) {
        let d = ours
            .iter()
            .zip(theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if d > self.probs {
            self.probs = d;
            self.at = slot;
        }
        self.mass_rel = self.mass_rel.max((ours_mass - mass).abs() / mass);
    }
}

#[test]
fn engine_matches_llamacpp_on_a_dl19_window() {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("reading {FIXTURE}: {e}")),
    )
    .unwrap();
    let model = Path::new(MODEL);
    assert!(
        model.exists(),
        "{} is missing: run scripts/setup.sh to fetch the default model",
        model.display()
    );
    let engine = Engine::load(model, DType::F32, &Device::Cpu).unwrap();

    let depth = fixture["depth"].as_u64().unwrap() as usize;
    let width = fixture["width"].as_u64().unwrap() as usize;
    let pools = ocrank_data::read_pools(&pools_path()).unwrap();
    let pool = pools[0].truncated(depth);
    assert_eq!(pool.qid, fixture["qid"].as_str().unwrap());

    let scorer = Scorer::new(
        &engine,
        ScoreConfig {
            width,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(scorer.grade_ids().to_vec(), u32s(&fixture["grade_ids"]));
    let ctx = scorer.prepare(&pool.query).unwrap();
    let window: Vec<usize> = (0..width).collect();
    let texts: Vec<&str> = window
        .iter()
        .map(|&c| pool.candidates[c].text.as_str())
        .collect();

    // The token ids llama.cpp evaluated are exactly ours. (llama.cpp's own
    // tokenization of the whole text differs at the prefix/body boundary: our
    // prefix, tokenized on its own for its KV cache, ends in one "\n\n" token
    // where the whole text gives two "\n"; see the fixture's "tokenization".)
    let seq = scorer.batched_sequence(&ctx.query, &texts).unwrap();
    let n_prefix = ctx.query.prefix_tokens.len();
    let ids: Vec<u32> = ctx
        .query
        .prefix_tokens
        .iter()
        .chain(&seq.tokens)
        .copied()
        .collect();
    assert_eq!(
        n_prefix as u64,
        fixture["n_prefix_tokens"].as_u64().unwrap()
    );
    let expected = u32s(&fixture["tokens"]);
    if let Some(i) = (0..ids.len().max(expected.len())).find(|&i| ids.get(i) != expected.get(i)) {
        panic!(
            "our token ids differ from the fixture's at index {i} (prefix has {n_prefix}): \
             ours {:?}, fixture {:?} (lengths {} vs {})",
            &ids[i..(i + 6).min(ids.len())],
            &expected[i..(i + 6).min(expected.len())],
            ids.len(),
            expected.len()
        );
    }
    let readout: Vec<u32> = seq.readout.iter().map(|&r| (n_prefix + r) as u32).collect();
    assert_eq!(readout, u32s(&fixture["readout"]));

    let (records, _) = scorer.score_window(&ctx, &pool, 0, 0, &window).unwrap();
    let slots = fixture["slots"].as_array().unwrap();
    assert_eq!(records.len(), slots.len());

    let (mut f32_diff, mut q4_diff) = (MaxDiff::default(), MaxDiff::default());
    for (r, s) in records.iter().zip(slots) {
        assert_eq!(r.slot as u64, s["slot"].as_u64().unwrap());
        assert_eq!(r.candidate, s["candidate"].as_str().unwrap());
        let (pf, mf) = (probs(&s["probs_f32"]), s["mass_f32"].as_f64().unwrap());
        let (pq, mq) = (probs(&s["probs_q4_1"]), s["mass_q4_1"].as_f64().unwrap());
        f32_diff.update(r.slot, &r.probs, r.mass, &pf, mf);
        q4_diff.update(r.slot, &r.probs, r.mass, &pq, mq);
        println!(
            "slot {:2} {:>8}: ours {:?} mass {:.6} | llama.cpp f32 {:?} mass {:.6}",
            r.slot,
            r.candidate,
            r.probs.map(|p| (p * 1e6).round() / 1e6),
            r.mass,
            pf.map(|p| (p * 1e6).round() / 1e6),
            mf
        );
    }
    println!(
        "vs llama.cpp F32 GGUF: max |dp| = {:.3e} (slot {}), max relative |d mass| = {:.3e}",
        f32_diff.probs, f32_diff.at, f32_diff.mass_rel
    );
    println!(
        "vs llama.cpp Q4_1:     max |dp| = {:.3e} (slot {}), max relative |d mass| = {:.3e}",
        q4_diff.probs, q4_diff.at, q4_diff.mass_rel
    );
    assert!(
        f32_diff.probs <= TOL_F32 && f32_diff.mass_rel <= TOL_F32,
        "grade probabilities differ from llama.cpp (F32 GGUF) by {:.3e} (slot {}), mass by {:.3e} relative; tolerance {TOL_F32}",
        f32_diff.probs,
        f32_diff.at,
        f32_diff.mass_rel
    );
    assert!(
        q4_diff.probs <= TOL_Q4_1,
        "grade probabilities differ from llama.cpp (Q4_1) by {:.3e} (slot {}); tolerance {TOL_Q4_1}",
        q4_diff.probs,
        q4_diff.at
    );
}
