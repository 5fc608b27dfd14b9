//! Gradient correctness of the training loss (SPEC.md section 5) on a tiny
//! random decoder of the Llama family with the real SmolLM2 tokenizer and
//! chat template (so prompts, slots and grade tokens are the real ones):
//! - autograd against central finite differences of the whole OC-SFT loss in
//!   f64, along a random direction of all LoRA weights;
//! - view B carries gradients: detaching it makes autograd disagree with the
//!   finite differences (so the check above can fail);
//! - every LoRA tensor receives a non-zero gradient.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::Var;
use ocrank_data::{LabelHeader, Labels};
use ocrank_engine::{
    Arch, DType, Decoder, Device, Engine, Kernels, LoraConfig, ModelConfig, Tensor,
};
use ocrank_score::{Mode, PromptConfig, ScoreConfig, Scorer, Template};
use ocrank_train::{
    expected, grade_probs, objective_loss, AdamWConfig, Example, Objective, SupervisedLoss,
    TrainConfig, Trainer,
};

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf"
);

fn engine(dtype: DType, lora: &LoraConfig) -> Engine {
    let mut e = Engine::load(Path::new(MODEL), DType::F32, &Device::Cpu)
        .expect("the SmolLM2 GGUF (scripts/setup.sh --no-build fetches it)");
    let mut cfg = ModelConfig::tiny(Arch::Llama);
    cfg.vocab_size = e.decoder.cfg.vocab_size;
    e.decoder = Decoder::random(cfg, 21, dtype, &Device::Cpu).unwrap();
    e.decoder.kernels = Kernels::Composite;
    e.decoder.attach_lora(lora, 3).unwrap();
    e
}

fn score_config() -> ScoreConfig {
    ScoreConfig {
        prompt: PromptConfig {
            template: Template::Compact,
            max_chars: 200,
            ..PromptConfig::default()
        },
        mode: Mode::Batched,
        width: 4,
        ..ScoreConfig::default()
    }
}

fn example() -> Example {
    Example {
        qid: "q1".into(),
        query: "what is the boiling point of water at sea level".into(),
        ids: ["d1", "d2", "d3", "d4"].map(String::from).to_vec(),
        texts: vec![
            "Water boils at 100 degrees Celsius at sea level.".into(),
            "The Eiffel Tower is in Paris.".into(),
            "At higher altitudes water boils at lower temperatures.".into(),
            "Bananas are rich in potassium.".into(),
        ],
        labels: vec![3.0, 0.0, 2.0, 0.5],
    }
}

fn train_config(objective: Objective, lora: LoraConfig) -> TrainConfig {
    TrainConfig {
        lora,
        optim: AdamWConfig {
            lr: 1e-2,
            ..Default::default()
        },
        seed: 5,
        checkpoint_every: 2,
        ..TrainConfig::new(objective, 4, 3.0)
    }
}

/// A small adapter without dropout on three projections, for the f64
/// finite-difference checks.
fn small_lora() -> LoraConfig {
    LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.0,
        targets: vec!["q_proj".into(), "v_proj".into(), "up_proj".into()],
    }
}

/// Sets every lora_B to seeded non-zero values (fresh adapters have B = 0,
/// which zeroes the gradient of A).
fn perturb_b(d: &Decoder) {
    let mut values = HashMap::new();
    for (i, (name, var)) in d.lora_vars().into_iter().enumerate() {
        let t = var.as_tensor();
        let v = if name.contains("lora_B") {
            let data: Vec<f64> = (0..t.elem_count())
                .map(|j| (((j * 7919 + i * 104_729) % 1000) as f64 / 1000.0 - 0.5) * 0.4)
                .collect();
            Tensor::from_vec(data, t.dims(), t.device())
                .unwrap()
                .to_dtype(t.dtype())
                .unwrap()
        } else {
            t.clone()
        };
        values.insert(name, v);
    }
    d.set_lora(&values).unwrap();
}

fn direction(vars: &[(String, Var)]) -> Vec<Tensor> {
    vars.iter()
        .enumerate()
        .map(|(i, (_, v))| {
            let n = v.elem_count();
            let data: Vec<f64> = (0..n)
                .map(|j| (((j * 31 + i * 17) % 97) as f64 / 97.0) - 0.5)
                .collect();
            Tensor::from_vec(data, v.dims(), v.device()).unwrap()
        })
        .collect()
}

fn shift(vars: &[(String, Var)], base: &[Tensor], dir: &[Tensor], eps: f64) {
    for ((_, v), (b, d)) in vars.iter().zip(base.iter().zip(dir)) {
        v.set(&(b + (d * eps).unwrap()).unwrap()).unwrap();
    }
}

/// The OC-SFT loss of the window in two orders, optionally with view B
/// detached (the bug this test must catch).
fn oc_loss(scorer: &Scorer, detach_b: bool) -> Tensor {
    let ex = example();
    let q = scorer.query_text(&ex.query).unwrap();
    let texts: Vec<&str> = ex.texts.iter().map(|s| s.as_str()).collect();
    let s_a = expected(&grade_probs(scorer, &q, &texts, None).unwrap()).unwrap();
    // View B: order [2, 0, 3, 1]; align back to candidate order.
    let order = [2usize, 0, 3, 1];
    let tb: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
    let s_b = expected(&grade_probs(scorer, &q, &tb, None).unwrap()).unwrap();
    let inv = Tensor::new(&[1u32, 3, 0, 2], &Device::Cpu).unwrap();
    let mut s_b = s_b.index_select(&inv, 0).unwrap();
    if detach_b {
        s_b = s_b.detach();
    }
    objective_loss(&s_a, &ex.labels, Some(&s_b), 3.0, None)
        .unwrap()
        .total
}

#[test]
fn autograd_matches_finite_differences_and_view_b_is_not_detached() {
    let lora = LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.0,
        ..Default::default()
    };
    let e = engine(DType::F64, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let vars = e.decoder.lora_vars();
    let base: Vec<Tensor> = vars
        .iter()
        .map(|(_, v)| v.as_tensor().copy().unwrap())
        .collect();
    let dir = direction(&vars);
    let directional = |detach: bool| -> f64 {
        let grads = oc_loss(&scorer, detach).backward().unwrap();
        vars.iter()
            .zip(&dir)
            .map(|((_, v), d)| match grads.get(v.as_tensor()) {
                Some(g) => (g * d)
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap(),
                None => 0.0,
            })
            .sum()
    };
    let auto = directional(false);
    let auto_detached = directional(true);
    let eps = 1e-5;
    shift(&vars, &base, &dir, eps);
    let plus = oc_loss(&scorer, false).to_scalar::<f64>().unwrap();
    shift(&vars, &base, &dir, -eps);
    let minus = oc_loss(&scorer, false).to_scalar::<f64>().unwrap();
    shift(&vars, &base, &dir, 0.0);
    let fd = (plus - minus) / (2.0 * eps);
    let rel = (auto - fd).abs() / fd.abs().max(1e-12);
    assert!(
        fd.abs() > 1e-6,
        "degenerate check: directional derivative {fd}"
    );
    assert!(
        rel < 1e-6,
        "autograd {auto} vs finite differences {fd} (relative {rel})"
    );
    let rel_detached = (auto_detached - fd).abs() / fd.abs();
    assert!(
        rel_detached > 1e-3,
        "detaching view B should change the gradient (autograd {auto_detached} vs {fd})"
    );
}

#[test]
fn trainer_loss_matches_finite_differences() {
    trainer_loss_matches_finite_differences_with(SupervisedLoss::Squared);
}

#[test]
fn trainer_cross_entropy_loss_matches_finite_differences() {
    trainer_loss_matches_finite_differences_with(SupervisedLoss::CrossEntropy);
}

fn trainer_loss_matches_finite_differences_with(supervised_loss: SupervisedLoss) {
    let lora = small_lora();
    let e = engine(DType::F64, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    // OC-SFT with both regularisers: every term of the loss is checked.
    let mut cfg = train_config(Objective::OcSft, lora);
    cfg.kl_base = Some(0.3);
    cfg.ema = Some(ocrank_train::EmaConfig {
        decay: 0.9,
        weight: 0.5,
    });
    cfg.supervised_loss = supervised_loss;
    let mut trainer = Trainer::new(&scorer, vec![example()], cfg).unwrap();
    let out = trainer.loss_and_grads(0).unwrap().1;
    assert_eq!(
        out.loss.cross_entropy.is_some(),
        supervised_loss == SupervisedLoss::CrossEntropy
    );
    if supervised_loss == SupervisedLoss::CrossEntropy {
        // Labels 3, 0, 2, 0.5: the mean two-point target is
        // (1.5, 0.5, 1, 1) / 4, and the constant's cross-entropy the mean
        // over the four slots of -sum_g q_g ln m_g.
        let m = [1.5f64 / 4.0, 0.5 / 4.0, 0.25, 0.25];
        let want = -(m[3].ln() + m[0].ln() + m[2].ln() + 0.5 * m[0].ln() + 0.5 * m[1].ln()) / 4.0;
        let got = out.constant_cross_entropy.unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    } else {
        assert!(out.constant_cross_entropy.is_none());
    }
    assert_gradient_matches_finite_differences(&mut trainer, &e.decoder.lora_vars());
}

/// `--consistency-scale spread`: the whole OC-SFT loss with the
/// spread-scaled term (through both views and the spread's denominator)
/// matches finite differences, and the term is live.
#[test]
fn spread_consistency_loss_matches_finite_differences() {
    let lora = small_lora();
    let e = engine(DType::F64, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let mut cfg = train_config(Objective::OcSft, lora);
    cfg.consistency_scale = ocrank_train::ConsistencyScale::Spread;
    cfg.spread_floor = cfg.consistency_scale.default_floor();
    let mut trainer = Trainer::new(&scorer, vec![example()], cfg.clone()).unwrap();
    let out = trainer.loss_and_grads(0).unwrap().1;
    assert!(out.loss.consistency > 1e-8, "{}", out.loss.consistency);
    let total = out.total.to_scalar::<f64>().unwrap();
    let sup = out.loss.supervised;
    assert!(
        (total - sup - cfg.lambda * out.loss.consistency).abs() < 1e-9,
        "{total} vs {sup} + {} * {}",
        cfg.lambda,
        out.loss.consistency
    );
    assert_gradient_matches_finite_differences(&mut trainer, &e.decoder.lora_vars());
    // Refused where it has no meaning.
    for floor in [0.0, f64::NAN] {
        let mut bad = cfg.clone();
        bad.spread_floor = floor;
        assert!(Trainer::new(&scorer, vec![example()], bad).is_err());
    }
    let mut bad = cfg.clone();
    bad.objective = Objective::PermAug;
    assert!(Trainer::new(&scorer, vec![example()], bad).is_err());
    let mut bad = cfg;
    bad.view_b = ocrank_train::ViewB::Pool;
    assert!(Trainer::new(&scorer, vec![example(), second_window()], bad).is_err());
}

/// A second window of query q1 (the pool of `example`), for a pool view B.
fn second_window() -> Example {
    Example {
        qid: "q1".into(),
        query: "what is the boiling point of water at sea level".into(),
        ids: ["d5", "d6", "d7", "d8"].map(String::from).to_vec(),
        texts: vec![
            "Salt water boils at a slightly higher temperature.".into(),
            "Mount Everest is the highest mountain.".into(),
            "Pressure cookers raise the boiling point of water.".into(),
            "A kettle switches off when the water boils.".into(),
        ],
        labels: vec![1.5, 0.0, 1.0, 0.5],
    }
}

/// `--view-b pool`: view B is another window of the same pool holding two of
/// view A's four candidates. The whole loss (consistency over the shared
/// candidates, both views with gradients) matches finite differences, and
/// the consistency term is live (lambda changes the gradient).
#[test]
fn pool_view_b_loss_matches_finite_differences() {
    let lora = small_lora();
    let e = engine(DType::F64, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let mut cfg = train_config(Objective::OcSft, lora);
    cfg.view_b = ocrank_train::ViewB::Pool;
    cfg.kl_base = Some(0.3);
    let examples = vec![example(), second_window()];
    let mut trainer = Trainer::new(&scorer, examples.clone(), cfg.clone()).unwrap();
    let (plans, out, grads) = trainer.loss_and_grads(0).unwrap();
    let b = plans[0].pool_view_b.clone().expect("a pool view B");
    let shared = b.iter().filter(|(j, _)| *j == plans[0].example).count();
    assert_eq!(shared, 2, "{b:?}");
    assert!(out.loss.consistency > 1e-8, "{}", out.loss.consistency);
    assert_gradient_matches_finite_differences(&mut trainer, &e.decoder.lora_vars());
    // The same step without the consistency term has another gradient.
    cfg.lambda = 0.0;
    let mut plain = Trainer::new(&scorer, examples, cfg).unwrap();
    let g0 = plain.loss_and_grads(0).unwrap().2;
    let differs = e.decoder.lora_vars().iter().any(|(_, v)| {
        let d = (grads.get(&v.id()).unwrap() - g0.get(&v.id()).unwrap()).unwrap();
        d.abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
            > 1e-9
    });
    assert!(differs, "lambda does not change the gradient");
}

/// A pool view B needs other candidates of the same pool; a one-window pool
/// and other objectives are refused with a message naming the problem.
#[test]
fn pool_view_b_is_refused_where_it_cannot_be_built() {
    let lora = LoraConfig::default();
    let e = engine(DType::F32, &lora);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let mut cfg = train_config(Objective::OcSft, lora.clone());
    cfg.view_b = ocrank_train::ViewB::Pool;
    let err = Trainer::new(&scorer, vec![example(), other_example()], cfg.clone())
        .err()
        .expect("q1 and q2 have one window each");
    assert!(err.to_string().contains("other candidate"), "{err}");
    let mut single = train_config(Objective::SingleOrder, lora);
    single.view_b = ocrank_train::ViewB::Pool;
    let err = Trainer::new(&scorer, vec![example(), second_window()], single)
        .err()
        .expect("single-order has no view B");
    assert!(err.to_string().contains("--view-b pool"), "{err}");
}

/// Autograd's directional derivative of the trainer's step-0 loss along a
/// random direction of all LoRA weights against central finite differences
/// (relative error below 1e-6; an f64 model).
fn assert_gradient_matches_finite_differences(trainer: &mut Trainer, vars: &[(String, Var)]) {
    let base: Vec<Tensor> = vars
        .iter()
        .map(|(_, v)| v.as_tensor().copy().unwrap())
        .collect();
    let dir = direction(vars);
    let grads = trainer.loss_and_grads(0).unwrap().2;
    let auto: f64 = vars
        .iter()
        .zip(&dir)
        .map(|((_, v), d)| {
            (grads.get(&v.id()).unwrap() * d)
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f64>()
                .unwrap()
        })
        .sum();
    let eps = 1e-5;
    let mut loss_at = |x: f64| {
        shift(vars, &base, &dir, x);
        trainer
            .loss_and_grads(0)
            .unwrap()
            .1
            .total
            .to_scalar::<f64>()
            .unwrap()
    };
    let fd = (loss_at(eps) - loss_at(-eps)) / (2.0 * eps);
    let rel = (auto - fd).abs() / fd.abs().max(1e-12);
    assert!(
        rel < 1e-6,
        "autograd {auto} vs finite differences {fd} (relative {rel})"
    );
}

/// The squared L2 norm of `v`'s gradient; a missing gradient fails the test.
fn squared_norm(grads: &ocrank_train::Grads, name: &str, v: &Var) -> f32 {
    let g = grads
        .get(&v.id())
        .unwrap_or_else(|| panic!("{name}: no gradient"));
    g.sqr()
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

#[test]
fn every_lora_tensor_gets_a_nonzero_gradient() {
    let lora = LoraConfig::default();
    let e = engine(DType::F32, &lora);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let mut trainer = Trainer::new(
        &scorer,
        vec![example()],
        train_config(Objective::OcSft, lora),
    )
    .unwrap();
    // Fresh adapters: B = 0, so only the B matrices get gradients at first.
    let grads = trainer.loss_and_grads(0).unwrap().2;
    for (name, v) in e.decoder.lora_vars() {
        if name.contains("lora_B") {
            let norm = squared_norm(&grads, &name, &v);
            assert!(norm > 0.0, "{name}: zero gradient at step 0");
        }
    }
    // After one update every tensor, A and B, must get a gradient.
    trainer.train_step().unwrap();
    let grads = trainer.loss_and_grads(1).unwrap().2;
    let vars = e.decoder.lora_vars();
    assert_eq!(vars.len(), 2 * 7 * e.decoder.cfg.num_layers);
    for (name, v) in vars {
        let norm = squared_norm(&grads, &name, &v);
        assert!(
            norm > 0.0 && norm.is_finite(),
            "{name}: gradient norm {norm}"
        );
    }
}

/// The largest absolute value of an f32 tensor.
fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

/// A second window (another query) for gradient accumulation.
fn other_example() -> Example {
    Example {
        qid: "q2".into(),
        query: "who painted the mona lisa".into(),
        ids: ["e1", "e2", "e3", "e4"].map(String::from).to_vec(),
        texts: vec![
            "The Louvre holds many paintings.".into(),
            "Leonardo da Vinci painted the Mona Lisa in the 16th century.".into(),
            "Rice is a staple food in Asia.".into(),
            "The Mona Lisa is a portrait of Lisa Gherardini.".into(),
        ],
        labels: vec![1.0, 3.0, 0.0, 2.0],
    }
}

/// `--windows-per-step 2`: the step's gradient is the mean of the gradients
/// of windows 0 and 1 trained one per step (same windows, views and dropout
/// masks), and its loss the mean of their losses.
#[test]
fn accumulated_gradient_is_the_mean_over_windows() {
    let lora = LoraConfig::default();
    let e = engine(DType::F32, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let examples = vec![example(), other_example()];
    let single = train_config(Objective::OcSft, lora.clone());
    let mut t1 = Trainer::new(&scorer, examples.clone(), single.clone()).unwrap();
    let (p0, o0, g0) = t1.loss_and_grads(0).unwrap();
    let (p1, o1, g1) = t1.loss_and_grads(1).unwrap();
    assert_ne!(p0[0].example, p1[0].example, "two different windows");
    let mut acc = single;
    acc.windows_per_step = 2;
    let mut t2 = Trainer::new(&scorer, examples, acc).unwrap();
    let (plans, out, g) = t2.loss_and_grads(0).unwrap();
    assert_eq!(plans, vec![p0[0].clone(), p1[0].clone()]);
    let scalar = |t: &Tensor| t.to_scalar::<f32>().unwrap() as f64;
    let mean_loss = (scalar(&o0.total) + scalar(&o1.total)) / 2.0;
    assert!((scalar(&out.total) - mean_loss).abs() < 1e-6);
    assert!((out.loss.supervised - (o0.loss.supervised + o1.loss.supervised) / 2.0).abs() < 1e-9);
    // The best constant score is the mean of all eight labels.
    let all = [example(), other_example()];
    let mean = all.iter().flat_map(|x| x.labels.iter()).sum::<f64>() / 8.0;
    let constant = |x: &Example| x.labels.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / 4.0;
    assert!((o0.constant - constant(&all[p0[0].example])).abs() < 1e-12);
    assert!((out.constant - (o0.constant + o1.constant) / 2.0).abs() < 1e-12);
    let vars = e.decoder.lora_vars();
    assert!(!vars.is_empty());
    for (name, v) in vars {
        let want = ((g0.get(&v.id()).unwrap() + g1.get(&v.id()).unwrap()).unwrap() * 0.5).unwrap();
        let got = g
            .get(&v.id())
            .unwrap_or_else(|| panic!("{name}: no gradient"));
        let diff = max_abs(&(got - &want).unwrap());
        let scale = max_abs(&want);
        assert!(scale > 0.0, "{name}: zero gradient");
        assert!(
            diff <= 1e-5 * scale.max(1e-3),
            "{name}: accumulated {diff} off (scale {scale})"
        );
    }
}

/// Width 1 (pointwise windows): single-order trains on a window of one
/// candidate; the objectives that permute a window refuse it.
#[test]
fn pointwise_windows_train_single_order_only() {
    let lora = LoraConfig::default();
    let e = engine(DType::F32, &lora);
    perturb_b(&e.decoder);
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let ex = example();
    let one = Example {
        ids: ex.ids[..1].to_vec(),
        texts: ex.texts[..1].to_vec(),
        labels: ex.labels[..1].to_vec(),
        ..ex
    };
    let mut t = Trainer::new(
        &scorer,
        vec![one.clone()],
        train_config(Objective::SingleOrder, lora.clone()),
    )
    .unwrap();
    let (_, out, g) = t.loss_and_grads(0).unwrap();
    assert!(out.loss.supervised > 0.0);
    for (name, v) in e.decoder.lora_vars() {
        assert!(squared_norm(&g, &name, &v) > 0.0, "{name}: zero gradient");
    }
    for objective in [Objective::PermAug, Objective::OcSft] {
        let err = Trainer::new(
            &scorer,
            vec![one.clone()],
            train_config(objective, lora.clone()),
        )
        .err()
        .unwrap_or_else(|| panic!("{objective} accepted a window of one"))
        .to_string();
        assert!(err.contains("at least 2 candidates"), "{err}");
    }
    let mut ema = train_config(Objective::SingleOrder, lora);
    ema.ema = Some(ocrank_train::EmaConfig {
        decay: 0.9,
        weight: 1.0,
    });
    let err = Trainer::new(&scorer, vec![one], ema)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("EMA"), "{err}");
}

/// An invariant window (`--mode invariant`) trains the pointwise scorer: one
/// forward with the query prefix shared by every candidate's block gives each
/// candidate's pointwise grade distribution (not the batched window's), its
/// loss gradient matches finite differences (the prefix collects the
/// gradient of every block), every LoRA tensor gets a gradient, and the
/// objectives that permute a window refuse it.
#[test]
fn invariant_windows_train_the_pointwise_scores() {
    let lora = LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.0,
        ..Default::default()
    };
    let e = engine(DType::F64, &lora);
    perturb_b(&e.decoder);
    let cfg = |mode| ScoreConfig {
        mode,
        ..score_config()
    };
    let invariant = Scorer::new(&e, cfg(Mode::Invariant)).unwrap();
    let pointwise = Scorer::new(&e, cfg(Mode::Pointwise)).unwrap();
    let batched = Scorer::new(&e, score_config()).unwrap();
    let ex = example();
    let texts: Vec<&str> = ex.texts.iter().map(String::as_str).collect();
    let q = invariant.query_text(&ex.query).unwrap();
    let probs = |s: &Scorer| {
        grade_probs(s, &q, &texts, None)
            .unwrap()
            .to_vec2::<f64>()
            .unwrap()
    };
    let trained = probs(&invariant);
    let ctx = pointwise.prepare(&ex.query).unwrap();
    let read = pointwise.read_window(&ctx, &texts).unwrap().dists;
    let diff = |a: &[Vec<f64>], b: &[[f64; 4]]| {
        a.iter()
            .zip(b)
            .flat_map(|(x, y)| x.iter().zip(y).map(|(u, v)| (u - v).abs()))
            .fold(0.0f64, f64::max)
    };
    let want: Vec<[f64; 4]> = read.iter().map(|d| d.probs).collect();
    // The scorer reads f32 logits: agreement to f32 rounding.
    let d = diff(&trained, &want);
    assert!(
        d < 1e-5,
        "invariant training window vs pointwise scores: {d}"
    );
    let batched_probs: Vec<[f64; 4]> = probs(&batched)
        .iter()
        .map(|r| [r[0], r[1], r[2], r[3]])
        .collect();
    assert!(
        diff(&trained, &batched_probs) > 1e-3,
        "the batched window reads the same"
    );

    let mut tcfg = train_config(Objective::SingleOrder, lora.clone());
    tcfg.kl_base = Some(0.3);
    tcfg.supervised_loss = SupervisedLoss::CrossEntropy;
    let mut trainer = Trainer::new(&invariant, vec![ex.clone()], tcfg).unwrap();
    let vars = e.decoder.lora_vars();
    let grads = trainer.loss_and_grads(0).unwrap().2;
    for (name, v) in &vars {
        let g = grads
            .get(&v.id())
            .unwrap_or_else(|| panic!("{name}: no gradient"));
        let norm = g
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(norm > 0.0, "{name}: zero gradient");
    }
    assert_gradient_matches_finite_differences(&mut trainer, &vars);

    for objective in [Objective::PermAug, Objective::OcSft] {
        let err = Trainer::new(
            &invariant,
            vec![ex.clone()],
            train_config(objective, lora.clone()),
        )
        .err()
        .unwrap_or_else(|| panic!("{objective} accepted an invariant window"))
        .to_string();
        assert!(err.contains("do not depend on the order"), "{err}");
    }
}

#[test]
fn fused_kernels_are_refused_for_training() {
    let lora = LoraConfig::default();
    let mut e = engine(DType::F32, &lora);
    e.decoder.kernels = Kernels::Fused;
    let scorer = Scorer::new(&e, score_config()).unwrap();
    let ex = example();
    let q = scorer.query_text(&ex.query).unwrap();
    let err = grade_probs(&scorer, &q, &["a", "b"], None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("composite"), "{err}");
}

fn labels_for(ex: &Example) -> Labels {
    let mut by_query = BTreeMap::new();
    by_query.insert(
        ex.qid.clone(),
        ex.ids
            .iter()
            .cloned()
            .zip(ex.labels.iter().copied())
            .collect(),
    );
    Labels {
        header: LabelHeader {
            ocrank_labels: 1,
            teacher: "gold".into(),
            orders: 1,
            provenance: serde_json::Value::Null,
        },
        by_query,
    }
}

/// A run resumed from its step-2 checkpoint ends with exactly the weights
/// and log of an uninterrupted run (dropout on, OC-SFT with an EMA teacher).
#[test]
fn resumed_training_equals_uninterrupted() {
    let lora = LoraConfig {
        rank: 4,
        ..Default::default()
    };
    let mut cfg = train_config(Objective::OcSft, lora.clone());
    cfg.ema = Some(ocrank_train::EmaConfig {
        decay: 0.9,
        weight: 0.5,
    });
    cfg.kl_base = Some(0.1);
    cfg.lambda_warmup = 2;
    let settings = serde_json::json!({"test": 1});
    let pool = ocrank_data::Pool {
        qid: "q1".into(),
        query: example().query,
        candidates: example()
            .ids
            .iter()
            .zip(&example().texts)
            .map(|(id, t)| ocrank_data::Candidate {
                id: id.clone(),
                text: t.clone(),
                grade: None,
            })
            .collect(),
    };
    let examples = ocrank_train::examples(&[pool], &labels_for(&example()), 4, 4).unwrap();

    let full_dir = tempfile::tempdir().unwrap();
    let e1 = engine(DType::F32, &lora);
    let s1 = Scorer::new(&e1, score_config()).unwrap();
    let mut t1 = Trainer::new(&s1, examples.clone(), cfg.clone()).unwrap();
    let log1 = ocrank_train::run(&mut t1, full_dir.path(), &settings, "tiny", |_| {}).unwrap();
    assert_eq!(log1.len(), 4);

    // Interrupted: two steps and the checkpoint a killed run leaves behind,
    // plus a log line of a step after it that must be redone.
    let dir = tempfile::tempdir().unwrap();
    {
        let e2 = engine(DType::F32, &lora);
        let s2 = Scorer::new(&e2, score_config()).unwrap();
        let mut t2 = Trainer::new(&s2, examples.clone(), cfg.clone()).unwrap();
        let mut short = cfg.clone();
        short.steps = 4;
        std::fs::create_dir_all(dir.path().join("checkpoints")).unwrap();
        std::fs::write(
            dir.path().join("train.json"),
            serde_json::to_string(&serde_json::json!({"settings": settings})).unwrap(),
        )
        .unwrap();
        let mut lines = String::new();
        for _ in 0..3 {
            let l = t2.train_step().unwrap();
            lines.push_str(&serde_json::to_string(&l).unwrap());
            lines.push('\n');
            if t2.step() == 2 {
                t2.save_checkpoint(&dir.path().join("checkpoints"), "tiny")
                    .unwrap();
            }
        }
        std::fs::write(dir.path().join("log.jsonl"), lines).unwrap();
    }
    let e3 = engine(DType::F32, &lora);
    let s3 = Scorer::new(&e3, score_config()).unwrap();
    let mut t3 = Trainer::new(&s3, examples, cfg).unwrap();
    ocrank_train::run(&mut t3, dir.path(), &settings, "tiny", |_| {}).unwrap();
    for ((n1, v1), (_, v3)) in e1
        .decoder
        .lora_vars()
        .iter()
        .zip(e3.decoder.lora_vars().iter())
    {
        let d = max_abs(&(v1.as_tensor() - v3.as_tensor()).unwrap());
        assert_eq!(d, 0.0, "{n1} differs after resuming");
    }
    let log3 = ocrank_train::trainer::read_log(&dir.path().join("log.jsonl")).unwrap();
    let strip = |l: &[ocrank_train::StepLog]| {
        l.iter()
            .map(|x| (x.step, x.loss, x.grad_norm, x.example))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&log1), strip(&log3));

    // Other settings are refused.
    let e4 = engine(DType::F32, &lora);
    let s4 = Scorer::new(&e4, score_config()).unwrap();
    let mut t4 = Trainer::new(&s4, vec![example()], train_config(Objective::OcSft, lora)).unwrap();
    let err = ocrank_train::run(
        &mut t4,
        dir.path(),
        &serde_json::json!({"test": 2}),
        "tiny",
        |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("other settings"), "{err}");
}
