//! A Hugging Face directory (config.json, tokenizer.json,
//! tokenizer_config.json with the chat template, *.safetensors) loads
//! through `Engine::load` with the same tokenizer and template as the GGUF
//! they came from. Uses the default model's tokenizer and template with tiny
//! random weights of its vocabulary size.

use std::path::PathBuf;

use ocrank_engine::{Arch, DType, Decoder, Device, Engine, Message, ModelConfig};

#[test]
fn hugging_face_directory_loads_through_engine_load() {
    let gguf = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        gguf.exists(),
        "{} is missing: run scripts/setup.sh",
        gguf.display()
    );
    let reference = Engine::load(&gguf, DType::F32, &Device::Cpu).unwrap();

    let cfg = ModelConfig {
        vocab_size: 49152,
        ..ModelConfig::tiny(Arch::Llama)
    };
    let tiny = Decoder::random(cfg.clone(), 11, DType::F32, &Device::Cpu).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = serde_json::json!({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": cfg.vocab_size, "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size, "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads, "num_key_value_heads": cfg.num_kv_heads,
        "rope_theta": cfg.rope_theta, "rms_norm_eps": cfg.rms_norm_eps,
        "max_position_embeddings": cfg.context_length, "tie_word_embeddings": true
    });
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.path().join("tokenizer_config.json"),
        serde_json::json!({"chat_template": reference.template.source, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}).to_string(),
    )
    .unwrap();
    reference
        .tokenizer
        .save(&dir.path().join("tokenizer.json"))
        .unwrap();
    let tensors = tiny.named_tensors();
    candle_core::safetensors::save(&tensors, dir.path().join("model.safetensors")).unwrap();

    let hf = Engine::load(dir.path(), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(hf.decoder.cfg, cfg);
    let msgs = [
        Message::new("system", "S"),
        Message::new("user", "Query: x\n[1] a"),
    ];
    let text = reference.template.render(&msgs).unwrap();
    assert_eq!(hf.template.render(&msgs).unwrap(), text);
    let text = format!("{text}Grades:\n[1] Grade: 0\n Ã‚Â naïve 12345");
    assert_eq!(
        hf.tokenizer.encode_ids(&text).unwrap(),
        reference.tokenizer.encode_ids(&text).unwrap()
    );
}
