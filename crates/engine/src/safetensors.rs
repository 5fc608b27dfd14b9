//! Loading a decoder from a Hugging Face directory: `config.json`,
//! `tokenizer.json` (+ `tokenizer_config.json` for the chat template) and
//! `*.safetensors`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use crate::config::{Arch, ModelConfig};
use crate::error::{Error, Result};

#[derive(Deserialize)]
struct HfConfig {
    #[serde(default)]
    model_type: Option<String>,
    #[serde(default)]
    architectures: Vec<String>,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    #[serde(default)]
    num_key_value_heads: Option<usize>,
    #[serde(default)]
    head_dim: Option<usize>,
    #[serde(default)]
    rope_theta: Option<f64>,
    rms_norm_eps: f64,
    #[serde(default)]
    max_position_embeddings: Option<usize>,
    #[serde(default)]
    tie_word_embeddings: Option<bool>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
}

pub fn read_config(dir: &Path) -> Result<ModelConfig> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let hf: HfConfig = serde_json::from_str(&text)
        .map_err(|e| Error::model(&path, format!("line {}: {e}", e.line())))?;
    let arch = hf
        .model_type
        .as_deref()
        .and_then(Arch::parse)
        .or_else(|| hf.architectures.iter().find_map(|a| Arch::parse(a)))
        .ok_or_else(|| {
            Error::model(
                &path,
                format!(
                    "model_type {:?} is not supported (llama, qwen2, qwen3)",
                    hf.model_type
                ),
            )
        })?;
    if let Some(s) = &hf.rope_scaling {
        if !s.is_null() {
            return Err(Error::model(
                &path,
                format!("rope_scaling {s} is not supported"),
            ));
        }
    }
    Ok(ModelConfig {
        arch,
        vocab_size: hf.vocab_size,
        hidden_size: hf.hidden_size,
        intermediate_size: hf.intermediate_size,
        num_layers: hf.num_hidden_layers,
        num_heads: hf.num_attention_heads,
        num_kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
        head_dim: hf
            .head_dim
            .unwrap_or(hf.hidden_size / hf.num_attention_heads),
        rope_theta: hf.rope_theta.unwrap_or(10000.0),
        rms_norm_eps: hf.rms_norm_eps,
        context_length: hf.max_position_embeddings.unwrap_or(4096),
        tie_embeddings: hf.tie_word_embeddings.unwrap_or(false),
    })
}

pub fn safetensor_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::model(dir, "no *.safetensors file in the directory"));
    }
    Ok(files)
}

pub fn load_tensors(dir: &Path, dtype: DType, device: &Device) -> Result<HashMap<String, Tensor>> {
    let mut out = HashMap::new();
    for file in safetensor_files(dir)? {
        let tensors = candle_core::safetensors::load(&file, device)
            .map_err(|e| Error::model(&file, format!("cannot read safetensors: {e}")))?;
        for (name, t) in tensors {
            out.insert(name, t.to_dtype(dtype)?);
        }
    }
    Ok(out)
}
