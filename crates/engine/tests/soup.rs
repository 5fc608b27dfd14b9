//! Weight soups of LoRA adapters on tiny random models: the soup's update is
//! the members' mean (checked here independently of the module's own check),
//! it loads like any adapter, a soup of an adapter with itself scores like
//! it, and members that cannot be souped give errors naming the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ocrank_engine::lora::LoraConfig;
use ocrank_engine::soup::{soup_adapters, SOUP_RECORD};
use ocrank_engine::{Arch, DType, Decoder, Device, ForwardInput, MaskLayout, ModelConfig, Tensor};

fn model() -> Decoder {
    Decoder::random(ModelConfig::tiny(Arch::Llama), 11, DType::F32, &Device::Cpu).unwrap()
}

fn logits(m: &Decoder) -> Vec<f32> {
    let toks: Vec<u32> = (0..30u32).map(|i| (i * 7 + 3) % 64).collect();
    let pos: Vec<u32> = (0..30).collect();
    m.forward(&ForwardInput {
        tokens: &toks,
        positions: &pos,
        mask: &MaskLayout::causal(30),
        prefix: None,
        readout: &[9, 29],
        keep_cache: false,
        dropout: None,
    })
    .unwrap()
    .logits
    .flatten_all()
    .unwrap()
    .to_vec1::<f32>()
    .unwrap()
}

/// Saves an adapter of `cfg` drawn with `seed`, its lora_B made non-zero.
fn adapter(dir: &Path, cfg: &LoraConfig, seed: u64) {
    let mut m = model();
    m.attach_lora(cfg, seed).unwrap();
    let mut values = HashMap::new();
    for (i, (name, var)) in m.lora_vars().into_iter().enumerate() {
        let t = var.as_tensor();
        let v = if name.contains("lora_B") {
            let data: Vec<f32> = (0..t.elem_count())
                .map(|j| {
                    // The multiplier depends on the seed: members' B differ in pattern.
                    let h = (j as u64 * (7919 + 262 * seed) + i as u64 * 104_729) % 1000;
                    (h as f32 / 1000.0 - 0.5) * 0.2
                })
                .collect();
            Tensor::from_vec(data, t.dims(), t.device()).unwrap()
        } else {
            t.clone()
        };
        values.insert(name, v);
    }
    m.set_lora(&values).unwrap();
    m.save_lora(cfg, dir, "tiny").unwrap();
}

fn weights(dir: &Path) -> HashMap<String, Tensor> {
    candle_core::safetensors::load(dir.join("adapter_model.safetensors"), &Device::Cpu).unwrap()
}

fn update(t: &HashMap<String, Tensor>, a: &str) -> Tensor {
    let b = a.replace("lora_A", "lora_B");
    t[&b]
        .to_dtype(DType::F64)
        .unwrap()
        .matmul(&t[a].to_dtype(DType::F64).unwrap())
        .unwrap()
}

fn max_abs(t: &Tensor) -> f64 {
    t.abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f64>()
        .unwrap()
}

#[test]
fn soup_update_is_the_members_mean_and_it_loads() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoraConfig {
        rank: 4,
        alpha: 8.0,
        ..LoraConfig::default()
    };
    let members: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("m{i}"))).collect();
    for (i, m) in members.iter().enumerate() {
        adapter(m, &cfg, 100 + i as u64);
    }
    let out = dir.path().join("soup");
    let soup = soup_adapters(&members, &out, "test command").unwrap();
    assert_eq!(
        (soup.members, soup.member_rank, soup.rank, soup.alpha),
        (3, 4, 12, 24.0)
    );
    assert!(soup.max_relative_error <= 1e-5);

    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("adapter_config.json")).unwrap())
            .unwrap();
    assert_eq!(config["r"], 12);
    assert_eq!(config["lora_alpha"], 24.0);
    assert_eq!(config["base_model_name_or_path"], "tiny");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(SOUP_RECORD)).unwrap()).unwrap();
    assert_eq!(record["members"].as_array().unwrap().len(), 3);
    assert_eq!(record["command"], "test command");

    // Independently: per module, B_soup A_soup = mean_i B_i A_i (the same
    // scale alpha / r on both sides), and the factor-wise mean is not.
    let member_w: Vec<_> = members.iter().map(|m| weights(m)).collect();
    let soup_w = weights(&out);
    let a_names: Vec<&String> = soup_w.keys().filter(|n| n.contains("lora_A")).collect();
    assert_eq!(a_names.len(), soup.modules);
    assert_eq!(soup.modules, 2 * 7, "tiny model: 2 layers x 7 modules");
    for a in a_names {
        let mut mean = update(&member_w[0], a);
        for w in &member_w[1..] {
            mean = (mean + update(w, a)).unwrap();
        }
        let mean = (mean / 3.0).unwrap();
        let size = max_abs(&mean);
        assert!(size > 1e-3, "{a}: members' updates are not trivial");
        let err = max_abs(&(update(&soup_w, a) - &mean).unwrap());
        assert!(
            err <= 1e-6 * size,
            "{a}: soup differs from the mean update by {err:e}"
        );
        let b = a.replace("lora_A", "lora_B");
        let avg = |n: &str| {
            let s = member_w
                .iter()
                .skip(1)
                .fold(member_w[0][n].clone(), |s, w| (s + &w[n]).unwrap());
            (s / 3.0).unwrap().to_dtype(DType::F64).unwrap()
        };
        let naive = avg(&b).matmul(&avg(a)).unwrap();
        assert!(
            max_abs(&(naive - &mean).unwrap()) > 0.1 * size,
            "{a}: factor-wise mean should differ"
        );
    }

    // The soup loads like any adapter (rank 12).
    let mut m = model();
    let loaded = m.load_lora(&out).unwrap();
    assert_eq!((loaded.rank, loaded.alpha), (12, 24.0));
}

#[test]
fn soup_of_an_adapter_with_itself_scores_like_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoraConfig::default();
    let one = dir.path().join("one");
    adapter(&one, &cfg, 7);
    let out = dir.path().join("soup");
    soup_adapters(&[one.clone(), one.clone()], &out, "").unwrap();
    let mut a = model();
    a.load_lora(&one).unwrap();
    let mut b = model();
    b.load_lora(&out).unwrap();
    let base = logits(&model());
    let (la, lb) = (logits(&a), logits(&b));
    let moved = la
        .iter()
        .zip(&base)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(
        moved > 1e-3,
        "the adapter should change the logits ({moved:e})"
    );
    let diff = la
        .iter()
        .zip(&lb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(
        diff < 1e-5,
        "soup of an adapter with itself differs by {diff:e}"
    );
}

#[test]
fn members_that_cannot_be_souped_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s);
    let cfg = LoraConfig::default();
    adapter(&p("a"), &cfg, 1);
    adapter(&p("b"), &cfg, 2);
    let err = |members: &[PathBuf]| {
        soup_adapters(members, &p("out"), "")
            .unwrap_err()
            .to_string()
    };

    assert!(err(&[p("a")]).contains("at least two adapters"));

    adapter(
        &p("rank8"),
        &LoraConfig {
            rank: 8,
            alpha: 16.0,
            ..cfg.clone()
        },
        3,
    );
    let e = err(&[p("a"), p("rank8")]);
    assert!(e.contains("rank8") && e.contains("r = 8"), "{e}");

    let targets = LoraConfig {
        targets: vec!["q_proj".into(), "v_proj".into()],
        ..cfg.clone()
    };
    adapter(&p("qv"), &targets, 4);
    let e = err(&[p("a"), p("qv")]);
    assert!(e.contains("qv") && e.contains("target_modules"), "{e}");

    let e = err(&[p("a"), p("missing")]);
    assert!(
        e.contains("missing") && e.contains("adapter_config.json"),
        "{e}"
    );

    // Same config, other base model.
    adapter(&p("other"), &cfg, 5);
    let path = p("other").join("adapter_config.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"tiny\"", "\"other-base\"");
    std::fs::write(&path, text).unwrap();
    let e = err(&[p("a"), p("other")]);
    assert!(
        e.contains("base_model_name_or_path") && e.contains("other-base"),
        "{e}"
    );

    // A tensor that is not LoRA.
    std::fs::create_dir_all(p("extra")).unwrap();
    std::fs::copy(
        p("a").join("adapter_config.json"),
        p("extra").join("adapter_config.json"),
    )
    .unwrap();
    let mut w = weights(&p("a"));
    w.insert(
        "base_model.model.lm_head.weight".into(),
        Tensor::zeros((2, 2), DType::F32, &Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&w, p("extra").join("adapter_model.safetensors")).unwrap();
    let e = err(&[p("extra"), p("a")]);
    assert!(
        e.contains("lm_head") && e.contains("neither lora_A nor lora_B"),
        "{e}"
    );
    let e = err(&[p("a"), p("extra")]);
    assert!(e.contains("extra") && e.contains("other tensors"), "{e}");

    // Same rank, other scale.
    adapter(
        &p("scale"),
        &LoraConfig {
            alpha: 16.0,
            ..cfg.clone()
        },
        6,
    );
    let e = err(&[p("a"), p("scale")]);
    assert!(e.contains("scale") && e.contains("lora_alpha = 16"), "{e}");

    // A weights file cut short, a config that is not JSON.
    adapter(&p("cut"), &cfg, 7);
    let st = p("cut").join("adapter_model.safetensors");
    let raw = std::fs::read(&st).unwrap();
    std::fs::write(&st, &raw[..raw.len() - 8]).unwrap();
    let e = err(&[p("a"), p("cut")]);
    assert!(e.contains(&st.display().to_string()), "{e}");
    std::fs::write(p("cut").join("adapter_config.json"), "{\n not json").unwrap();
    let e = err(&[p("a"), p("cut")]);
    assert!(
        e.contains("cut/adapter_config.json") && e.contains("line 2"),
        "{e}"
    );

    // The output may not be a member.
    let before = std::fs::read(p("b").join("adapter_model.safetensors")).unwrap();
    let e = soup_adapters(&[p("a"), p("b")], &p("b"), "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is one of the members"), "{e}");
    assert_eq!(
        std::fs::read(p("b").join("adapter_model.safetensors")).unwrap(),
        before
    );

    assert!(!p("out").exists(), "a refused soup writes nothing");
}
