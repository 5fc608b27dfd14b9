//! LoRA adapters on tiny random models: a fresh adapter changes nothing,
//! merging gives the same function, PEFT save/load round-trips, bad adapter
//! directories give errors naming the file.

use std::collections::HashMap;

use ocrank_engine::lora::{read_adapter_config, LoraConfig};
use ocrank_engine::{Arch, DType, Decoder, Device, ForwardInput, MaskLayout, ModelConfig, Tensor};

fn model(arch: Arch) -> Decoder {
    Decoder::random(ModelConfig::tiny(arch), 11, DType::F32, &Device::Cpu).unwrap()
}

fn logits(m: &Decoder) -> Vec<Vec<f32>> {
    let toks: Vec<u32> = (0..40u32).map(|i| (i * 5 + 1) % 64).collect();
    let pos: Vec<u32> = (0..40).collect();
    m.forward(&ForwardInput {
        tokens: &toks,
        positions: &pos,
        mask: &MaskLayout::causal(40),
        prefix: None,
        readout: &[10, 25, 39],
        keep_cache: false,
        dropout: None,
    })
    .unwrap()
    .logits
    .to_vec2::<f32>()
    .unwrap()
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Gives every lora_B seeded non-zero values (a fresh adapter has B = 0).
fn perturb(m: &Decoder, scale: f64) {
    let mut values = HashMap::new();
    for (i, (name, var)) in m.lora_vars().into_iter().enumerate() {
        let t = var.as_tensor();
        let v = if name.contains("lora_B") {
            let n = t.elem_count();
            let data: Vec<f32> = (0..n)
                .map(|j| (((j * 7919 + i * 104729) % 1000) as f32 / 1000.0 - 0.5) * scale as f32)
                .collect();
            Tensor::from_vec(data, t.dims(), t.device()).unwrap()
        } else {
            t.clone()
        };
        values.insert(name, v);
    }
    m.set_lora(&values).unwrap();
}

#[test]
fn fresh_adapter_is_the_identity_and_merge_is_exact() {
    for arch in [Arch::Llama, Arch::Qwen2, Arch::Qwen3] {
        let mut m = model(arch);
        let base = logits(&m);
        m.attach_lora(&LoraConfig::default(), 5).unwrap();
        assert_eq!(m.lora_vars().len(), 2 * 7 * m.cfg.num_layers);
        assert_eq!(
            max_diff(&base, &logits(&m)),
            0.0,
            "{arch:?}: B = 0 must not change the model"
        );
        perturb(&m, 0.5);
        let adapted = logits(&m);
        assert!(
            max_diff(&base, &adapted) > 1e-3,
            "{arch:?}: the adapter has no effect"
        );
        m.merge_lora().unwrap();
        assert!(!m.has_lora());
        for (i, l) in m.layers.iter().enumerate() {
            for lin in l.linears() {
                assert!(
                    !lin.weight.track_op(),
                    "{arch:?}: layer {i}: a merged weight still records the ops it enters, \
                     so inference would keep every activation for a backward"
                );
            }
        }
        let merged = logits(&m);
        assert!(
            max_diff(&adapted, &merged) < 1e-4,
            "{arch:?}: merged differs by {}",
            max_diff(&adapted, &merged)
        );
    }
}

#[test]
fn peft_save_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoraConfig {
        rank: 4,
        alpha: 8.0,
        dropout: 0.1,
        targets: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
    };
    let mut m = model(Arch::Qwen2);
    m.attach_lora(&cfg, 1).unwrap();
    perturb(&m, 0.3);
    let want = logits(&m);
    m.save_lora(&cfg, dir.path(), "tiny").unwrap();
    assert_eq!(read_adapter_config(dir.path()).unwrap(), cfg);
    let names =
        candle_core::safetensors::load(dir.path().join("adapter_model.safetensors"), &Device::Cpu)
            .unwrap();
    assert!(names.contains_key("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"));
    assert!(names.contains_key("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
    assert_eq!(names.len(), 2 * 3 * 2);
    // The bytes candle's own writer makes (adapters saved before the whole-file
    // writer keep their fingerprints), and no partial file beside them.
    let by_candle = dir.path().join("by-candle.safetensors");
    candle_core::safetensors::save(&names, &by_candle).unwrap();
    assert_eq!(
        std::fs::read(&by_candle).unwrap(),
        std::fs::read(dir.path().join("adapter_model.safetensors")).unwrap()
    );
    std::fs::remove_file(&by_candle).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["adapter_config.json", "adapter_model.safetensors"]);

    let mut fresh = model(Arch::Qwen2);
    assert_eq!(fresh.load_lora(dir.path()).unwrap(), cfg);
    assert_eq!(max_diff(&want, &logits(&fresh)), 0.0);
}

#[test]
fn bad_adapters_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = model(Arch::Llama);
    let e = m.load_lora(dir.path()).unwrap_err().to_string();
    assert!(e.contains("adapter_config.json"), "{e}");

    std::fs::write(
        dir.path().join("adapter_config.json"),
        r#"{"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "wq"]}"#,
    )
    .unwrap();
    let e = m.load_lora(dir.path()).unwrap_err().to_string();
    assert!(e.contains("wq"), "{e}");

    // An adapter for a larger model: a tensor of layer 5 has no place here.
    let cfg = LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.0,
        targets: vec!["q_proj".into()],
    };
    let mut big_cfg = ModelConfig::tiny(Arch::Llama);
    big_cfg.num_layers = 6;
    let mut big = Decoder::random(big_cfg, 1, DType::F32, &Device::Cpu).unwrap();
    big.attach_lora(&cfg, 0).unwrap();
    big.save_lora(&cfg, dir.path(), "big").unwrap();
    let e = m.load_lora(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("adapter_model.safetensors") && e.contains("layers.2"),
        "{e}"
    );

    // Wrong rank in the config: shapes are checked.
    std::fs::write(
        dir.path().join("adapter_config.json"),
        r#"{"r": 3, "lora_alpha": 8, "target_modules": ["q_proj"]}"#,
    )
    .unwrap();
    let e = m.load_lora(dir.path()).unwrap_err().to_string();
    assert!(e.contains("shape"), "{e}");
}

#[test]
fn dropout_is_seeded() {
    let mut m = model(Arch::Llama);
    m.attach_lora(
        &LoraConfig {
            dropout: 0.5,
            ..Default::default()
        },
        2,
    )
    .unwrap();
    perturb(&m, 0.5);
    let run = |key: Option<u64>| {
        let toks: Vec<u32> = (0..12u32).collect();
        let pos: Vec<u32> = (0..12).collect();
        m.forward(&ForwardInput {
            tokens: &toks,
            positions: &pos,
            mask: &MaskLayout::causal(12),
            prefix: None,
            readout: &[11],
            keep_cache: false,
            dropout: key,
        })
        .unwrap()
        .logits
        .to_vec2::<f32>()
        .unwrap()
    };
    assert_eq!(run(Some(9)), run(Some(9)));
    assert!(max_diff(&run(Some(9)), &run(Some(10))) > 0.0);
    assert!(max_diff(&run(Some(9)), &run(None)) > 0.0);
}
