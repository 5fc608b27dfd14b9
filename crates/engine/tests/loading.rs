//! Model loading: tiny GGUF files of every supported tensor type, written
//! here with llama.cpp's layout (q/k rows permuted for its interleaved rope),
//! and a Hugging Face safetensors directory, must give the same model.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use ocrank_engine::gguf::GgufFile;
use ocrank_engine::{Arch, DType, Decoder, Device, ForwardInput, MaskLayout, ModelConfig, Tensor};

fn cfg() -> ModelConfig {
    // Rows of 256 so that k-quants (256-element blocks) apply.
    ModelConfig {
        arch: Arch::Llama,
        vocab_size: 64,
        hidden_size: 256,
        intermediate_size: 256,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads: 2,
        head_dim: 64,
        rope_theta: 10000.0,
        rms_norm_eps: 1.0 / 131072.0, // exact in the f32 that GGUF stores
        context_length: 512,
        tie_embeddings: true,
    }
}

fn hf_tensors(m: &Decoder) -> HashMap<String, Tensor> {
    m.named_tensors()
}

fn gguf_name(hf: &str) -> String {
    let map = [
        ("model.embed_tokens.weight", "token_embd.weight"),
        ("model.norm.weight", "output_norm.weight"),
    ];
    if let Some((_, g)) = map.iter().find(|(h, _)| *h == hf) {
        return g.to_string();
    }
    let rest = hf.strip_prefix("model.layers.").unwrap();
    let (i, tail) = rest.split_once('.').unwrap();
    let module = match tail.trim_end_matches(".weight") {
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "ffn_norm",
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        other => panic!("{other}"),
    };
    format!("blk.{i}.{module}.weight")
}

/// llama.cpp's converter: w.reshape(H, 2, hd/2, in).swapaxes(1, 2).
fn permute(w: &Tensor, heads: usize) -> Tensor {
    let (rows, cols) = w.dims2().unwrap();
    w.reshape((heads, 2, rows / heads / 2, cols))
        .unwrap()
        .transpose(1, 2)
        .unwrap()
        .contiguous()
        .unwrap()
        .reshape((rows, cols))
        .unwrap()
}

fn write_gguf(path: &Path, m: &Decoder, dtype: GgmlDType) {
    let c = cfg();
    let mut qt: Vec<(String, QTensor)> = Vec::new();
    for (hf, w) in hf_tensors(m) {
        let mut w = w;
        if hf.ends_with("q_proj.weight") {
            w = permute(&w, c.num_heads);
        } else if hf.ends_with("k_proj.weight") {
            w = permute(&w, c.num_kv_heads);
        }
        let ty = if w.rank() == 1 { GgmlDType::F32 } else { dtype };
        qt.push((gguf_name(&hf), QTensor::quantize(&w, ty).unwrap()));
    }
    let meta: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String("llama".into())),
        ("llama.embedding_length", Value::U32(c.hidden_size as u32)),
        (
            "llama.feed_forward_length",
            Value::U32(c.intermediate_size as u32),
        ),
        ("llama.block_count", Value::U32(c.num_layers as u32)),
        ("llama.attention.head_count", Value::U32(c.num_heads as u32)),
        (
            "llama.attention.head_count_kv",
            Value::U32(c.num_kv_heads as u32),
        ),
        ("llama.rope.freq_base", Value::F32(c.rope_theta as f32)),
        (
            "llama.attention.layer_norm_rms_epsilon",
            Value::F32(c.rms_norm_eps as f32),
        ),
        ("llama.context_length", Value::U32(c.context_length as u32)),
    ];
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (*k, v)).collect();
    let tensors: Vec<(&str, &QTensor)> = qt.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut f, &meta_refs, &tensors).unwrap();
}

fn logits(m: &Decoder) -> Vec<f32> {
    let toks: Vec<u32> = (0..24).map(|i| (i * 5 + 1) % 64).collect();
    let pos: Vec<u32> = (0..24).collect();
    m.forward(&ForwardInput {
        tokens: &toks,
        positions: &pos,
        mask: &MaskLayout::causal(24),
        prefix: None,
        readout: &[5, 23],
        keep_cache: false,
        dropout: None,
    })
    .unwrap()
    .logits
    .flatten_all()
    .unwrap()
    .to_vec1()
    .unwrap()
}

fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let num: f32 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let den: f32 = a.iter().map(|x| x * x).sum();
    (num / den).sqrt()
}

#[test]
fn gguf_tensor_types_load_to_the_same_model() {
    let reference = Decoder::random(cfg(), 3, DType::F32, &Device::Cpu).unwrap();
    let want = logits(&reference);
    let dir = tempfile::tempdir().unwrap();
    // Relative L2 error of the logits allowed per type (quantization noise;
    // a wrong layout or a missed q/k permutation gives errors near 1).
    for (ty, tol) in [
        (GgmlDType::F32, 1e-5),
        (GgmlDType::F16, 2e-3),
        (GgmlDType::Q8_0, 2e-2),
        (GgmlDType::Q6K, 5e-2),
        (GgmlDType::Q4K, 0.15),
        (GgmlDType::Q4_0, 0.2),
        (GgmlDType::Q4_1, 0.2),
    ] {
        let path = dir.path().join(format!("{ty:?}.gguf"));
        write_gguf(&path, &reference, ty);
        let gguf = GgufFile::open(&path).unwrap();
        let c = gguf.config().unwrap();
        assert_eq!(c, cfg());
        let mut tensors = gguf.load_tensors(&c, DType::F32, &Device::Cpu).unwrap();
        let m = Decoder::from_tensors(c, &mut tensors, &Device::Cpu).unwrap();
        let err = rel_err(&logits(&m), &want);
        println!("{ty:?}: relative logit error {err:.2e}");
        assert!(err < tol, "{ty:?}: relative logit error {err} >= {tol}");
    }
}

#[test]
fn hugging_face_directory_loads_the_same_model() {
    let reference = Decoder::random(cfg(), 5, DType::F32, &Device::Cpu).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let c = cfg();
    let config = serde_json::json!({
        "model_type": "llama", "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_layers,
        "num_attention_heads": c.num_heads, "num_key_value_heads": c.num_kv_heads,
        "rope_theta": c.rope_theta, "rms_norm_eps": c.rms_norm_eps,
        "max_position_embeddings": c.context_length, "tie_word_embeddings": true,
        "unknown_field": [1, 2, 3]
    });
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    candle_core::safetensors::save(
        &hf_tensors(&reference),
        dir.path().join("model.safetensors"),
    )
    .unwrap();
    let got = ocrank_engine::safetensors::read_config(dir.path()).unwrap();
    assert_eq!(got, c);
    let mut tensors =
        ocrank_engine::safetensors::load_tensors(dir.path(), DType::F32, &Device::Cpu).unwrap();
    let m = Decoder::from_tensors(got, &mut tensors, &Device::Cpu).unwrap();
    assert!(rel_err(&logits(&m), &logits(&reference)) < 1e-6);
}

#[test]
fn missing_corrupt_and_unsupported_model_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = ocrank_engine::Engine::load(&dir.path().join("nope.gguf"), DType::F32, &Device::Cpu)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not found"), "{err}");
    let bad = dir.path().join("bad.gguf");
    std::fs::write(&bad, b"this is not a gguf file at all").unwrap();
    let err = ocrank_engine::Engine::load(&bad, DType::F32, &Device::Cpu)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("bad.gguf") && err.to_string().contains("GGUF"),
        "{err}"
    );
    // A truncated real-shaped file.
    let reference = Decoder::random(cfg(), 3, DType::F32, &Device::Cpu).unwrap();
    let full = dir.path().join("full.gguf");
    write_gguf(&full, &reference, GgmlDType::Q8_0);
    let bytes = std::fs::read(&full).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let gguf = GgufFile::open(&cut).unwrap();
    let err = gguf
        .load_tensors(&cfg(), DType::F32, &Device::Cpu)
        .err()
        .unwrap();
    assert!(err.to_string().contains("cut.gguf"), "{err}");
    // An architecture we do not implement.
    let hf = dir.path().join("hf");
    std::fs::create_dir(&hf).unwrap();
    std::fs::write(hf.join("config.json"), r#"{"model_type": "gpt_neox", "vocab_size": 1, "hidden_size": 1, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "rms_norm_eps": 1e-5}"#).unwrap();
    let err = ocrank_engine::safetensors::read_config(&hf).err().unwrap();
    assert!(err.to_string().contains("not supported"), "{err}");
}

#[test]
fn an_unsupported_tensor_type_is_an_error_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let reference = Decoder::random(cfg(), 3, DType::F32, &Device::Cpu).unwrap();
    let path = dir.path().join("q81.gguf");
    write_gguf(&path, &reference, GgmlDType::Q8_0);
    // Patch one tensor's type field to Q8_1 (ggml type 9), a type llama.cpp
    // uses only for activations. The field follows the name, n_dims (u32)
    // and the two dims (u64 each).
    let mut bytes = std::fs::read(&path).unwrap();
    let name = b"blk.1.ffn_up.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len() + 4 + 16;
    assert_eq!(
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
        8,
        "Q8_0 expected"
    );
    bytes[at..at + 4].copy_from_slice(&9u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let gguf = GgufFile::open(&path).unwrap();
    let err = gguf
        .load_tensors(&cfg(), DType::F32, &Device::Cpu)
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("blk.1.ffn_up.weight") && msg.contains("unsupported type"),
        "{msg}"
    );
}
