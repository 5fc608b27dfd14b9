//! A BERT sentence encoder: the embedding teacher that gives training labels
//! (query-passage cosines) from a model independent of the decoder being
//! trained.
//!
//! It is sentence-transformers' all-MiniLM-L6-v2 (the default directory is
//! `models/all-MiniLM-L6-v2`, fetched by `scripts/setup.sh`) written out on
//! candle, so the teacher runs in the same process and binary as the rest of
//! ocrank instead of needing Python:
//!
//! - embeddings: word + absolute position + token type, then LayerNorm;
//! - N post-LN encoder layers: self-attention (padding keys masked out), then
//!   a GELU (erf) feed-forward, each followed by residual + LayerNorm;
//! - mean pooling over the non-padding tokens, then L2 normalisation.
//!
//! Texts are truncated to `max_seq_length` of `sentence_bert_config.json`
//! (256 for all-MiniLM-L6-v2), as sentence-transformers does, and not to the
//! 128 tokens stored in its `tokenizer.json`. Everything runs in f32.
//! `scripts/minilm_reference.py` is an independent numpy implementation;
//! `tests/encoder.rs` checks this one against its golden fixture.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor, D};
use candle_nn::{LayerNorm, Linear, Module};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use crate::error::{Error, Result};

/// Texts per forward: enough to use the matrix kernels well, few enough that
/// one long text pads only a small batch.
const BATCH: usize = 32;
/// sentence-transformers' default when `sentence_bert_config.json` is absent.
const DEFAULT_MAX_SEQ_LENGTH: usize = 256;

/// The fields of a BERT `config.json` that the forward depends on.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_position_type")]
    pub position_embedding_type: String,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}
fn default_position_type() -> String {
    "absolute".into()
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    up: Linear,
    down: Linear,
    out_norm: LayerNorm,
}

/// A loaded sentence encoder: tokenizer and BERT weights.
pub struct SentenceEncoder {
    tokenizer: Tokenizer,
    cfg: BertConfig,
    max_seq_length: usize,
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
    device: Device,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| Error::model(path, format!("line {}: {e}", e.line())))
}

/// `max_seq_length` of `sentence_bert_config.json`, or sentence-transformers'
/// default 256 without one; it must fit the position embeddings.
fn read_max_seq_length(dir: &Path, cfg: &BertConfig) -> Result<usize> {
    let sbert_path = dir.join("sentence_bert_config.json");
    let max_seq_length = if sbert_path.exists() {
        let v: serde_json::Value = read_json(&sbert_path)?;
        match v.get("max_seq_length") {
            None | Some(serde_json::Value::Null) => DEFAULT_MAX_SEQ_LENGTH,
            Some(n) => n.as_u64().filter(|&n| n >= 2).ok_or_else(|| {
                Error::model(
                    &sbert_path,
                    format!("max_seq_length {n} is not a length >= 2"),
                )
            })? as usize,
        }
    } else {
        DEFAULT_MAX_SEQ_LENGTH
    };
    if max_seq_length > cfg.max_position_embeddings {
        let path = if sbert_path.exists() {
            sbert_path
        } else {
            dir.join("config.json")
        };
        return Err(Error::model(
            path,
            format!(
                "max_seq_length {max_seq_length} exceeds max_position_embeddings {} of config.json",
                cfg.max_position_embeddings
            ),
        ));
    }
    Ok(max_seq_length)
}

/// Refuses a `1_Pooling/config.json` that asks for anything but mean
/// pooling: CLS or max pooling would give plausible but wrong vectors.
fn check_mean_pooling(dir: &Path) -> Result<()> {
    let pooling_path = dir.join("1_Pooling").join("config.json");
    if pooling_path.exists() {
        let v: serde_json::Value = read_json(&pooling_path)?;
        let on = |k: &str| v.get(k).and_then(|b| b.as_bool()).unwrap_or(false);
        let others = [
            "pooling_mode_cls_token",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
        ];
        if !on("pooling_mode_mean_tokens") || others.iter().any(|k| on(k)) {
            return Err(Error::model(
                &pooling_path,
                "only mean pooling (pooling_mode_mean_tokens alone) is supported",
            ));
        }
    }
    Ok(())
}

/// The model's tensors by their unprefixed names (`embeddings.…`,
/// `encoder.layer.N.…`): a `BertModel` checkpoint has them bare, a
/// `BertFor…` one under `bert.`.
struct Weights {
    path: PathBuf,
    tensors: HashMap<String, Tensor>,
}

impl Weights {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let t = self.tensors.remove(name).ok_or_else(|| {
            Error::model(
                &self.path,
                format!("tensor {name} is missing (also looked for bert.{name})"),
            )
        })?;
        if t.dims() != shape {
            return Err(Error::model(
                &self.path,
                format!("tensor {name}: shape {:?}, expected {shape:?}", t.dims()),
            ));
        }
        Ok(t.to_dtype(DType::F32)?)
    }

    fn linear(&mut self, name: &str, out: usize, inp: usize) -> Result<Linear> {
        let w = self.take(&format!("{name}.weight"), &[out, inp])?;
        let b = self.take(&format!("{name}.bias"), &[out])?;
        Ok(Linear::new(w, Some(b)))
    }

    fn layer_norm(&mut self, name: &str, dim: usize, eps: f64) -> Result<LayerNorm> {
        let w = self.take(&format!("{name}.weight"), &[dim])?;
        let b = self.take(&format!("{name}.bias"), &[dim])?;
        Ok(LayerNorm::new(w, b, eps))
    }
}

impl SentenceEncoder {
    /// Loads a sentence-transformers directory: `config.json`,
    /// `tokenizer.json`, `model.safetensors`, and if present
    /// `sentence_bert_config.json` (truncation length) and
    /// `1_Pooling/config.json` (which must ask for mean pooling).
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::model(
                dir,
                "sentence encoder directory not found (run scripts/setup.sh --no-build)",
            ));
        }
        let cfg_path = dir.join("config.json");
        let cfg: BertConfig = read_json(&cfg_path)?;
        if cfg.hidden_act != "gelu" {
            return Err(Error::model(
                &cfg_path,
                format!("hidden_act {:?} is not supported (gelu)", cfg.hidden_act),
            ));
        }
        if cfg.position_embedding_type != "absolute" {
            return Err(Error::model(
                &cfg_path,
                format!(
                    "position_embedding_type {:?} is not supported (absolute)",
                    cfg.position_embedding_type
                ),
            ));
        }
        // checked_rem: None for 0 heads (and is_multiple_of is newer than our MSRV).
        if cfg.hidden_size.checked_rem(cfg.num_attention_heads) != Some(0) {
            return Err(Error::model(
                &cfg_path,
                format!(
                    "hidden_size {} is not a multiple of num_attention_heads {}",
                    cfg.hidden_size, cfg.num_attention_heads
                ),
            ));
        }

        let max_seq_length = read_max_seq_length(dir, &cfg)?;
        check_mean_pooling(dir)?;

        let tok_path = dir.join("tokenizer.json");
        std::fs::metadata(&tok_path).map_err(|source| Error::Io {
            path: tok_path.clone(),
            source,
        })?;
        let mut tokenizer = Tokenizer::from_file(&tok_path)
            .map_err(|e| Error::model(&tok_path, format!("cannot read tokenizer: {e}")))?;
        // tokenizer.json of all-MiniLM-L6-v2 pads and truncates to 128; we
        // pad per batch ourselves and truncate where sentence-transformers does.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..Default::default()
            }))
            .map_err(|e| Error::model(&tok_path, format!("cannot set truncation: {e}")))?;
        let tok_vocab = tokenizer.get_vocab_size(true);
        if tok_vocab > cfg.vocab_size {
            return Err(Error::model(
                &tok_path,
                format!(
                    "{tok_vocab} tokens, more than vocab_size {} of config.json",
                    cfg.vocab_size
                ),
            ));
        }

        let st_path = dir.join("model.safetensors");
        std::fs::metadata(&st_path).map_err(|source| Error::Io {
            path: st_path.clone(),
            source,
        })?;
        let raw = candle_core::safetensors::load(&st_path, device)
            .map_err(|e| Error::model(&st_path, format!("cannot read safetensors: {e}")))?;
        let tensors = raw
            .into_iter()
            .map(|(k, v)| match k.strip_prefix("bert.") {
                Some(bare) => (bare.to_string(), v),
                None => (k, v),
            })
            .collect();
        let mut w = Weights {
            path: st_path,
            tensors,
        };

        let (h, eps) = (cfg.hidden_size, cfg.layer_norm_eps);
        let word = w.take("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let position = w.take(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let token_type = w.take(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_norm = w.layer_norm("embeddings.LayerNorm", h, eps)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let i_size = cfg.intermediate_size;
            layers.push(Layer {
                query: w.linear(&format!("{p}.attention.self.query"), h, h)?,
                key: w.linear(&format!("{p}.attention.self.key"), h, h)?,
                value: w.linear(&format!("{p}.attention.self.value"), h, h)?,
                attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: w.layer_norm(&format!("{p}.attention.output.LayerNorm"), h, eps)?,
                up: w.linear(&format!("{p}.intermediate.dense"), i_size, h)?,
                down: w.linear(&format!("{p}.output.dense"), h, i_size)?,
                out_norm: w.layer_norm(&format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(SentenceEncoder {
            tokenizer,
            cfg,
            max_seq_length,
            word,
            position,
            token_type,
            emb_norm,
            layers,
            device: device.clone(),
        })
    }

    /// Length of the embeddings (`hidden_size`).
    pub fn dim(&self) -> usize {
        self.cfg.hidden_size
    }

    /// Tokens per text after truncation, [CLS] and [SEP] included.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// The token ids the encoder sees for `text`: special tokens added,
    /// truncated to [`max_seq_length`](Self::max_seq_length).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        if enc.get_ids().is_empty() {
            // Only a tokenizer.json without [CLS]/[SEP] can do this; mean
            // pooling over no token is undefined.
            return Err(Error::Input(
                "a text has no tokens (tokenizer.json adds no special tokens)".into(),
            ));
        }
        Ok(enc.get_ids().to_vec())
    }

    /// One unit vector per text, in input order. Texts are grouped by
    /// length into batches of 32 so that padding stays small; padding does
    /// not change a text's vector beyond float rounding.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let ids = texts
            .iter()
            .map(|t| self.token_ids(t))
            .collect::<Result<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let mut out = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
            for (&i, v) in chunk.iter().zip(self.forward(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embeds one padded batch: `[b, t]` ids -> `b` unit vectors.
    fn forward(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let (b, t) = (
            batch.len(),
            batch.iter().map(|s| s.len()).max().unwrap_or(0),
        );
        let (nh, h) = (self.cfg.num_attention_heads, self.cfg.hidden_size);
        let hd = h / nh;
        let mut ids = vec![0u32; b * t];
        let mut keep = vec![0f32; b * t];
        for (row, seq) in batch.iter().enumerate() {
            ids[row * t..row * t + seq.len()].copy_from_slice(seq);
            keep[row * t..row * t + seq.len()].fill(1.0);
        }
        let ids = Tensor::from_vec(ids, b * t, &self.device)?;
        let keep = Tensor::from_vec(keep, (b, t), &self.device)?;

        // Single-sequence inputs: every token has type 0.
        let x = self
            .word
            .index_select(&ids, 0)?
            .reshape((b, t, h))?
            .broadcast_add(&self.position.narrow(0, 0, t)?)?
            .broadcast_add(&self.token_type.narrow(0, 0, 1)?)?;
        let mut x = self.emb_norm.forward(&x)?;

        // Additive key mask [b, 1, 1, t]: 0 for tokens, -1e30 for padding,
        // whose softmax weight is then exactly 0 in f32. Finite, so even a
        // degenerate row could not turn into NaN.
        let mask = ((keep.clone() - 1.0)? * 1e30)?.reshape((b, 1, 1, t))?;
        let scale = 1.0 / (hd as f64).sqrt();
        for layer in &self.layers {
            let heads = |lin: &Linear| -> Result<Tensor> {
                Ok(lin
                    .forward(&x)?
                    .reshape((b, t, nh, hd))?
                    .transpose(1, 2)?
                    .contiguous()?)
            };
            let (q, k, v) = (
                heads(&layer.query)?,
                heads(&layer.key)?,
                heads(&layer.value)?,
            );
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&mask)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b, t, h))?;
            x = layer
                .attn_norm
                .forward(&(layer.attn_out.forward(&ctx)? + &x)?)?;
            let ff = layer.down.forward(&layer.up.forward(&x)?.gelu_erf()?)?;
            x = layer.out_norm.forward(&(ff + &x)?)?;
        }

        // Mean over real tokens, then unit length (eps as torch's normalize).
        let keep3 = keep.unsqueeze(2)?;
        let summed = x.broadcast_mul(&keep3)?.sum(1)?;
        let mean = summed.broadcast_div(&keep3.sum(1)?)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

/// Cosine similarity of two vectors, accumulated in f64. For the unit
/// vectors of [`SentenceEncoder::embed`] it is their dot product. NaN when
/// it is undefined (lengths differ, or a vector is zero), so that a bad pair
/// shows up instead of passing as "unrelated".
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::NAN;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64, y as f64);
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return f32::NAN;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}
