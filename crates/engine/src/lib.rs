//! ocrank-engine: our own decoder on candle, with the model's tokenizer and
//! chat template, loaded from a GGUF file or a Hugging Face directory.
//!
//! The engine knows nothing of pools or grades: it turns token ids, position
//! ids and an attention layout into next-token logits at chosen positions.
//! `ocrank-score` builds prompts and reads slots on top of it.
//!
//! [`encoder`] is a separate BERT sentence encoder (all-MiniLM-L6-v2), the
//! embedding teacher for training labels.

pub mod attention;
pub mod chat;
pub mod config;
pub mod device;
pub mod encoder;
pub mod error;
mod frozen;
pub mod gguf;
pub mod lora;
pub mod model;
pub mod pack;
pub mod safetensors;
pub mod soup;
pub mod tokenizer;

use std::path::{Path, PathBuf};

pub use candle_core::{DType, Device, Tensor};
pub use chat::{ChatTemplate, Message};
pub use config::{Arch, ModelConfig};
pub use device::{default_dtype, parse_dtype, DeviceSpec};
pub use error::{Error, Result};
pub use lora::LoraConfig;
pub use model::{Decoder, ForwardInput, ForwardOutput, Kernels, KvCache, MaskLayout, Staged};
pub use pack::{pack, Packed};
pub use tokenizer::{Token, Tokenizer};

/// A loaded model: decoder, tokenizer and chat template.
pub struct Engine {
    pub decoder: Decoder,
    pub tokenizer: Tokenizer,
    pub template: ChatTemplate,
    pub path: PathBuf,
}

impl Engine {
    /// Loads a GGUF file, or a directory holding `config.json`,
    /// `tokenizer.json` (+ `tokenizer_config.json`) and `*.safetensors`.
    pub fn load(path: &Path, dtype: DType, device: &Device) -> Result<Self> {
        if !path.exists() {
            return Err(Error::model(
                path,
                "model not found (run the README's set-up command, or pass --model PATH)",
            ));
        }
        if path.is_dir() {
            Self::load_hf_dir(path, dtype, device)
        } else {
            Self::load_gguf(path, dtype, device)
        }
    }

    fn load_gguf(path: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let gguf = gguf::GgufFile::open(path)?;
        let cfg = gguf.config()?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        let source = gguf.meta_str("tokenizer.chat_template").map_err(|_| {
            gguf.err("metadata tokenizer.chat_template is missing: the model has no chat template")
        })?;
        let token_text = |key: &str| -> String {
            gguf.meta_usize(key)
                .ok()
                .and_then(|id| tokenizer.decode(&[id as u32]).ok())
                .unwrap_or_default()
        };
        let template = ChatTemplate::new(
            source,
            &token_text("tokenizer.ggml.bos_token_id"),
            &token_text("tokenizer.ggml.eos_token_id"),
        )?;
        let mut tensors = gguf.load_tensors(&cfg, dtype, device)?;
        let decoder = Decoder::from_tensors(cfg, &mut tensors, device)
            .map_err(|e| gguf.err(e.to_string()))?;
        Ok(Engine {
            decoder,
            tokenizer,
            template,
            path: path.to_path_buf(),
        })
    }

    fn load_hf_dir(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let cfg = safetensors::read_config(dir)?;
        let (tokenizer, template) = read_tokenizer_dir(dir)?;
        let mut tensors = safetensors::load_tensors(dir, dtype, device)?;
        let decoder = Decoder::from_tensors(cfg, &mut tensors, device)
            .map_err(|e| Error::model(dir, e.to_string()))?;
        Ok(Engine {
            decoder,
            tokenizer,
            template,
            path: dir.to_path_buf(),
        })
    }

    /// An engine with seeded random weights in the shapes of `cfg` and the
    /// tokenizer and chat template of `dir` (see [`Engine::save_tokenizer`]):
    /// real prompts, real token ids and real slot positions without the
    /// model's weights (checks and benchmarks on a machine the model cannot
    /// be copied to).
    pub fn random(
        dir: &Path,
        cfg: ModelConfig,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let (tokenizer, template) = read_tokenizer_dir(dir)?;
        if tokenizer.vocab_size() > cfg.vocab_size {
            return Err(Error::model(
                dir,
                format!(
                    "the tokenizer has {} tokens, more than the {} of the model shape",
                    tokenizer.vocab_size(),
                    cfg.vocab_size
                ),
            ));
        }
        Ok(Engine {
            decoder: Decoder::random(cfg, seed, dtype, device)?,
            tokenizer,
            template,
            path: dir.to_path_buf(),
        })
    }

    /// Writes the tokenizer and chat template as a Hugging Face directory
    /// (`tokenizer.json`, `tokenizer_config.json`), readable by
    /// [`Engine::random`] and, with a config and weights, by [`Engine::load`].
    pub fn save_tokenizer(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        self.tokenizer.save(&dir.join("tokenizer.json"))?;
        let tc = serde_json::json!({
            "chat_template": self.template.source,
            "bos_token": self.template.bos_token,
            "eos_token": self.template.eos_token,
        });
        let path = dir.join("tokenizer_config.json");
        std::fs::write(&path, tc.to_string()).map_err(|source| Error::Io { path, source })
    }
}

/// The tokenizer (`tokenizer.json`) and chat template (`tokenizer_config.json`
/// or `chat_template.jinja`) of a Hugging Face directory.
fn read_tokenizer_dir(dir: &Path) -> Result<(Tokenizer, ChatTemplate)> {
    let tokenizer = Tokenizer::from_file(&dir.join("tokenizer.json"))?;
    let tc_path = dir.join("tokenizer_config.json");
    let tc: serde_json::Value = match std::fs::read_to_string(&tc_path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| Error::model(&tc_path, format!("line {}: {e}", e.line())))?,
        Err(_) => serde_json::Value::Null,
    };
    let token_str = |key: &str| -> String {
        match &tc[key] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Object(o) => o
                .get("content")
                .and_then(|c| c.as_str())
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        }
    };
    let source = match &tc["chat_template"] {
        serde_json::Value::String(s) => s.clone(),
        _ => std::fs::read_to_string(dir.join("chat_template.jinja")).map_err(|_| {
            Error::model(
                dir,
                "no chat template (tokenizer_config.json chat_template or chat_template.jinja)",
            )
        })?,
    };
    let template = ChatTemplate::new(&source, &token_str("bos_token"), &token_str("eos_token"))?;
    Ok((tokenizer, template))
}
