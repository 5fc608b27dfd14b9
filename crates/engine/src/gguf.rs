//! Loading a decoder from a GGUF file: hyper-parameters from the metadata,
//! tensors dequantized to the engine's dtype, renamed to the Hugging Face
//! names the decoder uses.
//!
//! llama.cpp's converter permutes the rows of Llama's q and k projections so
//! that its "normal" (interleaved) rotary embedding applies; we undo that
//! permutation at load time so that one rotary layout (half-split, as in the
//! Hugging Face checkpoints) serves every file.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};

use crate::config::{Arch, ModelConfig};
use crate::error::{Error, Result};

/// A parsed GGUF file: its metadata and its tensors, not yet loaded.
pub struct GgufFile {
    pub content: Content,
    path: std::path::PathBuf,
}

impl GgufFile {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader)
            .map_err(|e| Error::model(path, format!("not a readable GGUF file: {e}")))?;
        Ok(GgufFile {
            content,
            path: path.to_path_buf(),
        })
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    pub fn meta_str(&self, key: &str) -> Result<&str> {
        match self.meta(key) {
            Some(v) => v
                .to_string()
                .map(|s| s.as_str())
                .map_err(|_| self.err(format!("metadata {key} is not a string"))),
            None => Err(self.err(format!("metadata {key} is missing"))),
        }
    }

    pub fn meta_usize(&self, key: &str) -> Result<usize> {
        let v = self
            .meta(key)
            .ok_or_else(|| self.err(format!("metadata {key} is missing")))?;
        let n = match v {
            Value::U8(x) => *x as u64,
            Value::U16(x) => *x as u64,
            Value::U32(x) => *x as u64,
            Value::U64(x) => *x,
            Value::I8(x) if *x >= 0 => *x as u64,
            Value::I16(x) if *x >= 0 => *x as u64,
            Value::I32(x) if *x >= 0 => *x as u64,
            Value::I64(x) if *x >= 0 => *x as u64,
            _ => return Err(self.err(format!("metadata {key} is not a count: {v:?}"))),
        };
        Ok(n as usize)
    }

    pub fn meta_f64(&self, key: &str) -> Result<f64> {
        match self.meta(key) {
            Some(Value::F32(x)) => Ok(*x as f64),
            Some(Value::F64(x)) => Ok(*x),
            Some(_) => Ok(self.meta_usize(key)? as f64),
            None => Err(self.err(format!("metadata {key} is missing"))),
        }
    }

    pub fn err(&self, message: impl Into<String>) -> Error {
        Error::model(&self.path, message)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model hyper-parameters from `{arch}.*` metadata keys.
    pub fn config(&self) -> Result<ModelConfig> {
        let arch_name = self.meta_str("general.architecture")?;
        let arch = Arch::parse(arch_name).ok_or_else(|| {
            self.err(format!(
                "architecture {arch_name:?} is not supported (llama, qwen2, qwen3)"
            ))
        })?;
        let key = |k: &str| format!("{arch_name}.{k}");
        if let Some(Value::String(kind)) = self.meta(&key("rope.scaling.type")) {
            if kind != "none" {
                return Err(self.err(format!("rope scaling {kind:?} is not supported")));
            }
        }
        let hidden_size = self.meta_usize(&key("embedding_length"))?;
        let num_heads = self.meta_usize(&key("attention.head_count"))?;
        let head_dim = match self.meta(&key("attention.key_length")) {
            Some(_) => self.meta_usize(&key("attention.key_length"))?,
            None => hidden_size / num_heads,
        };
        let embd = self
            .content
            .tensor_infos
            .get("token_embd.weight")
            .ok_or_else(|| self.err("tensor token_embd.weight is missing"))?;
        let vocab_size = embd.shape.dims()[0];
        Ok(ModelConfig {
            arch,
            vocab_size,
            hidden_size,
            intermediate_size: self.meta_usize(&key("feed_forward_length"))?,
            num_layers: self.meta_usize(&key("block_count"))?,
            num_heads,
            num_kv_heads: self.meta_usize(&key("attention.head_count_kv"))?,
            head_dim,
            rope_theta: self.meta_f64(&key("rope.freq_base")).unwrap_or(10000.0),
            rms_norm_eps: self.meta_f64(&key("attention.layer_norm_rms_epsilon"))?,
            context_length: self.meta_usize(&key("context_length"))?,
            tie_embeddings: !self.content.tensor_infos.contains_key("output.weight"),
        })
    }

    /// Reads every tensor, dequantizes it to `dtype` and renames it to the
    /// Hugging Face name the decoder expects.
    pub fn load_tensors(
        &self,
        cfg: &ModelConfig,
        dtype: DType,
        device: &Device,
    ) -> Result<HashMap<String, Tensor>> {
        let file = File::open(&self.path).map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })?;
        let mut reader = BufReader::new(file);
        let mut names: Vec<&String> = self.content.tensor_infos.keys().collect();
        names.sort();
        let mut out = HashMap::with_capacity(names.len());
        for name in names {
            let info = &self.content.tensor_infos[name];
            check_dtype(info.ggml_dtype).map_err(|dtype| Error::UnsupportedTensorType {
                path: self.path.clone(),
                tensor: name.clone(),
                dtype,
            })?;
            let Some(hf) = hf_name(name) else {
                // rope_freqs and similar tables are derived, not learned.
                continue;
            };
            let q = self
                .content
                .tensor(&mut reader, name, &Device::Cpu)
                .map_err(|e| self.err(format!("tensor {name}: {e}")))?;
            let mut t = q
                .dequantize(&Device::Cpu)
                .map_err(|e| self.err(format!("tensor {name}: {e}")))?;
            if cfg.arch == Arch::Llama {
                if hf.ends_with("q_proj.weight") {
                    t = unpermute_rows(&t, cfg.num_heads)?;
                } else if hf.ends_with("k_proj.weight") {
                    t = unpermute_rows(&t, cfg.num_kv_heads)?;
                }
            }
            // Dequantized and reordered on the host, then moved: the device
            // needs no quantized kernels.
            out.insert(hf, t.to_dtype(dtype)?.to_device(device)?);
        }
        Ok(out)
    }
}

fn check_dtype(dtype: GgmlDType) -> std::result::Result<(), String> {
    match dtype {
        GgmlDType::Q8_1 | GgmlDType::Q8K => Err(format!("{dtype:?}")),
        _ => Ok(()),
    }
}

/// Undo llama.cpp's q/k row permutation: GGUF rows are laid out as
/// (head, dim/2, 2) where Hugging Face has (head, 2, dim/2).
fn unpermute_rows(w: &Tensor, heads: usize) -> Result<Tensor> {
    let (rows, cols) = w.dims2()?;
    let hd = rows / heads;
    Ok(w.reshape((heads, hd / 2, 2, cols))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((rows, cols))?)
}

/// The Hugging Face name of a GGUF tensor; None for tensors the decoder
/// does not use.
fn hf_name(gguf: &str) -> Option<String> {
    let direct = match gguf {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(n) = direct {
        return Some(n.to_string());
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, tail) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, suffix) = tail.rsplit_once('.')?;
    let hf_module = match module {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_hugging_face() {
        assert_eq!(
            hf_name("blk.12.attn_q.weight").unwrap(),
            "model.layers.12.self_attn.q_proj.weight"
        );
        assert_eq!(
            hf_name("blk.0.attn_k.bias").unwrap(),
            "model.layers.0.self_attn.k_proj.bias"
        );
        assert_eq!(
            hf_name("token_embd.weight").unwrap(),
            "model.embed_tokens.weight"
        );
        assert!(hf_name("rope_freqs.weight").is_none());
    }

    #[test]
    fn unpermute_inverts_llama_cpp_permutation() -> Result<()> {
        // llama.cpp: w.reshape(H, 2, hd/2, in).swapaxes(1, 2)
        let (heads, hd, cols) = (3, 4, 5);
        let hf = Tensor::arange(0f32, (heads * hd * cols) as f32, &Device::Cpu)?
            .reshape((heads * hd, cols))?;
        let permuted = hf
            .reshape((heads, 2, hd / 2, cols))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((heads * hd, cols))?;
        let back = unpermute_rows(&permuted, heads)?;
        assert_eq!(back.to_vec2::<f32>()?, hf.to_vec2::<f32>()?);
        Ok(())
    }
}
