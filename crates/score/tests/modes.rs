//! Scoring modes on the real default model (SmolLM2-135M-Instruct) and real
//! DL19 pools: invariant equals pointwise and ignores the window's order;
//! batched does not. Needs `scripts/setup.sh` to have fetched the model.

use std::path::PathBuf;
use std::sync::OnceLock;

use ocrank_data::Pool;
use ocrank_engine::{DType, Device, Engine};
use ocrank_score::{Mode, ScoreConfig, Scorer, Template};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let path = root().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            path.exists(),
            "{} is missing: run scripts/setup.sh",
            path.display()
        );
        Engine::load(&path, DType::F32, &Device::Cpu).unwrap()
    })
}

fn dl19() -> Vec<Pool> {
    ocrank_data::read_pools(&root().join("../shared/data/msmarco/dl19/bm25-top100.json")).unwrap()
}

fn scores(
    mode: Mode,
    template: Template,
    pool: &Pool,
    window: &[usize],
) -> Vec<(String, [f64; 4])> {
    let mut cfg = ScoreConfig {
        mode,
        width: window.len(),
        ..Default::default()
    };
    cfg.prompt.template = template;
    let scorer = Scorer::new(engine(), cfg).unwrap();
    let ctx = scorer.prepare(&pool.query).unwrap();
    let (records, _) = scorer.score_window(&ctx, pool, 0, 0, window).unwrap();
    let mut out: Vec<_> = records
        .into_iter()
        .map(|r| (r.candidate, r.probs))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn max_diff(a: &[(String, [f64; 4])], b: &[(String, [f64; 4])]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            assert_eq!(x.0, y.0);
            (0..4).map(|g| (x.1[g] - y.1[g]).abs()).fold(0.0, f64::max)
        })
        .fold(0.0, f64::max)
}

#[test]
fn grade_tokens_are_single_digits() {
    let scorer = Scorer::new(engine(), ScoreConfig::default()).unwrap();
    assert_eq!(scorer.grade_ids(), [32, 33, 34, 35]);
}

#[test]
fn invariant_equals_pointwise_and_ignores_order_while_batched_does_not() {
    let pools = dl19();
    let pool = &pools[0];
    let window: Vec<usize> = (0..6).collect();
    let reversed: Vec<usize> = window.iter().rev().copied().collect();
    let rotated: Vec<usize> = vec![2, 3, 4, 5, 0, 1];
    for template in [Template::Standard, Template::Compact] {
        let inv = scores(Mode::Invariant, template, pool, &window);
        let point = scores(Mode::Pointwise, template, pool, &window);
        let d = max_diff(&inv, &point);
        println!("{template:?}: invariant vs pointwise max |dp| = {d:.2e}");
        assert!(d < 1e-4, "invariant differs from pointwise by {d}");
        for order in [&reversed, &rotated] {
            let d = max_diff(&inv, &scores(Mode::Invariant, template, pool, order));
            println!("{template:?}: invariant under reordering max |dp| = {d:.2e}");
            assert!(d < 1e-5, "invariant changed under reordering by {d}");
        }
        let batched = scores(Mode::Batched, template, pool, &window);
        let d = max_diff(&batched, &scores(Mode::Batched, template, pool, &reversed));
        println!("{template:?}: batched under reversal max |dp| = {d:.2e}");
        assert!(d > 1e-2, "batched scores should depend on the order ({d})");
    }
}

#[test]
fn segment_tokens_equal_whole_text_tokens() {
    let engine = engine();
    for pool in dl19().iter().take(10) {
        for mode in [Mode::Batched, Mode::Invariant] {
            let cfg = ScoreConfig {
                mode,
                width: 20,
                ..Default::default()
            };
            let scorer = Scorer::new(engine, cfg.clone()).unwrap();
            let q = scorer.query_text(&pool.query).unwrap();
            let texts: Vec<&str> = pool.candidates[..20]
                .iter()
                .map(|c| c.text.as_str())
                .collect();
            let (whole, seq) = match mode {
                Mode::Batched => (
                    cfg.prompt.window_text(&q.text, &texts),
                    scorer.batched_sequence(&q, &texts).unwrap().tokens,
                ),
                _ => (
                    format!(
                        "{}{}",
                        q.text.prefix,
                        cfg.prompt.block_text(&q.text, texts[0])
                    ),
                    scorer.invariant_sequence(&q, &texts[..1]).unwrap().tokens,
                ),
            };
            let mut ours = q.prefix_tokens.clone();
            ours.extend(seq);
            assert_eq!(
                engine.tokenizer.encode_ids(&whole).unwrap(),
                ours,
                "query {}",
                pool.qid
            );
        }
    }
}

#[test]
fn a_placeholder_of_two_tokens_is_an_error() {
    let mut cfg = ScoreConfig::default();
    cfg.prompt.placeholder = "10".into();
    let err = Scorer::new(engine(), cfg)
        .err()
        .expect("two-token placeholder accepted");
    assert!(err.to_string().contains("not a single token"), "{err}");
}

#[test]
fn a_window_over_the_context_is_an_error() {
    let pools = dl19();
    let pool = &pools[0];
    let mut cfg = ScoreConfig {
        width: 100,
        ..Default::default()
    };
    cfg.prompt.max_chars = 100_000;
    // Repeat the texts so that 100 candidates exceed 8,192 tokens.
    let mut big = pool.clone();
    for c in &mut big.candidates {
        c.text = c.text.repeat(3);
    }
    let scorer = Scorer::new(engine(), cfg).unwrap();
    let ctx = scorer.prepare(&big.query).unwrap();
    let window: Vec<usize> = (0..100).collect();
    let Err(err) = scorer.score_window(&ctx, &big, 0, 0, &window) else {
        panic!("a window over the context must be an error");
    };
    assert!(err.to_string().contains("context"), "{err}");
}
