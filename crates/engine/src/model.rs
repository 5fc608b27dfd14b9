//! Our decoder (Llama / Qwen2 / Qwen3), readable top to bottom: weights,
//! attention mask layout, forward.
//!
//! What it offers beyond a stock decoder, and why ocrank needs it:
//! - explicit position ids (invariant blocks restart their positions),
//! - an attention layout of blocks over a shared prefix, with keys that can be
//!   hidden from later tokens (placeholder hygiene),
//! - a reusable KV cache of a shared prefix,
//! - the output head computed only at the requested readout positions.
//!
//! Two kernel sets: `Fused` uses candle's fused rms-norm, softmax and rope
//! (fast, inference only: they have no backward), `Composite` builds the same
//! functions from differentiable primitives for training.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor, D};

use crate::attention::{
    masked_softmax_differentiable, masked_softmax_fused, plan_chunks, Chunk, CPU_CHUNK_ROWS,
    GPU_CHUNK_ROWS,
};
use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::lora::{module_key, Lora};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    Fused,
    Composite,
}

/// A linear projection `y = x W^T + b`, `W` stored as `[out, in]`, with an
/// optional LoRA adapter added to it.
#[derive(Debug, Clone)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
    pub lora: Option<Lora>,
}

impl Linear {
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Self {
        Linear {
            weight,
            bias,
            lora: None,
        }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, None)
    }

    /// Forward with the adapter's dropout drawn from `dropout_key` (training).
    pub fn forward_with(&self, x: &Tensor, dropout_key: Option<u64>) -> Result<Tensor> {
        let y = crate::frozen::matmul_t(x, &self.weight)?;
        let y = match &self.bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        };
        Ok(match &self.lora {
            Some(l) => {
                let d = l.delta(&x.to_dtype(l.a.dtype())?, dropout_key)?;
                (y + d.to_dtype(x.dtype())?)?
            }
            None => y,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Layer {
    pub input_norm: Tensor,
    pub q_proj: Linear,
    pub k_proj: Linear,
    pub v_proj: Linear,
    pub o_proj: Linear,
    pub q_norm: Option<Tensor>,
    pub k_norm: Option<Tensor>,
    pub post_norm: Tensor,
    pub gate_proj: Linear,
    pub up_proj: Linear,
    pub down_proj: Linear,
}

impl Layer {
    /// The seven projections, in the order of `lora::MODULES`.
    pub fn linears(&self) -> [&Linear; 7] {
        [
            &self.q_proj,
            &self.k_proj,
            &self.v_proj,
            &self.o_proj,
            &self.gate_proj,
            &self.up_proj,
            &self.down_proj,
        ]
    }
}

/// Keys and values of every layer for a run of tokens (`[1, kv_heads, len,
/// head_dim]` each), reusable as the shared prefix of later forwards.
#[derive(Debug, Clone)]
pub struct KvCache {
    pub layers: Vec<(Tensor, Tensor)>,
    pub len: usize,
}

/// Who attends to whom among the new tokens of a forward. Every new token
/// sees the whole cached prefix; among new tokens, token q sees token k when
/// k <= q, k is not hidden (a hidden key is seen by itself only), and both
/// are in the same block or k is one of the first `shared` tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MaskLayout {
    /// Block id of each new token; all zeros is plain causal attention.
    pub block: Vec<u32>,
    /// Keys hidden from every later token (e.g. placeholder grades).
    pub hidden: Vec<bool>,
    /// The first `shared` new tokens are a prefix that every later token
    /// sees, whatever its block: the query prefix of an invariant window
    /// computed in the same forward (training), instead of a cached prefix.
    pub shared: usize,
}

impl MaskLayout {
    pub fn causal(n: usize) -> Self {
        MaskLayout {
            block: vec![0; n],
            hidden: vec![false; n],
            shared: 0,
        }
    }

    pub fn allowed(&self, q: usize, k: usize) -> bool {
        k == q || (k < q && !self.hidden[k] && (k < self.shared || self.block[k] == self.block[q]))
    }
}

/// What every layer of a staged forward shares (see [`Decoder::stage`]).
pub struct Staged {
    cos: Tensor,
    sin: Tensor,
    chunks: Vec<Chunk>,
    dropout: Option<u64>,
}

/// One forward pass: new tokens after an optional cached prefix.
pub struct ForwardInput<'a> {
    pub tokens: &'a [u32],
    /// Position id of each new token.
    pub positions: &'a [u32],
    pub mask: &'a MaskLayout,
    pub prefix: Option<&'a KvCache>,
    /// Indices (into `tokens`) whose next-token logits are wanted.
    pub readout: &'a [usize],
    /// Return the KV cache of prefix + new tokens.
    pub keep_cache: bool,
    /// Training only: seed of the LoRA dropout masks of this forward (None:
    /// no dropout, as in inference).
    pub dropout: Option<u64>,
}

impl<'a> ForwardInput<'a> {
    /// A whole sequence in one forward: no cached prefix, no cache kept, no
    /// dropout.
    pub fn whole(
        tokens: &'a [u32],
        positions: &'a [u32],
        mask: &'a MaskLayout,
        readout: &'a [usize],
    ) -> Self {
        ForwardInput {
            tokens,
            positions,
            mask,
            prefix: None,
            readout,
            keep_cache: false,
            dropout: None,
        }
    }
}

impl ForwardInput<'_> {
    /// One position, block id and hidden flag per token; `what` names the
    /// input in the error.
    pub(crate) fn check_lengths(&self, what: &str) -> Result<()> {
        let n = self.tokens.len();
        if self.positions.len() != n || self.mask.block.len() != n || self.mask.hidden.len() != n {
            return Err(Error::Input(format!(
                "{what}: {n} tokens but {} positions, {} block ids, {} hidden flags",
                self.positions.len(),
                self.mask.block.len(),
                self.mask.hidden.len()
            )));
        }
        let shared = self.mask.shared;
        if shared > n || self.mask.hidden[..shared].iter().any(|&h| h) {
            return Err(Error::Input(format!(
                "{what}: a shared prefix of {shared} tokens must lie within the {n} tokens and hide none of them"
            )));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct ForwardOutput {
    /// `[readout.len(), vocab]`, f32.
    pub logits: Tensor,
    pub cache: Option<KvCache>,
}

#[derive(Debug, Clone)]
pub struct Decoder {
    pub cfg: ModelConfig,
    pub embed: Tensor,
    pub layers: Vec<Layer>,
    pub norm: Tensor,
    pub lm_head: Tensor,
    inv_freq: Tensor,
    pub kernels: Kernels,
    /// Most query rows per attention chunk (see [`plan_chunks`]).
    pub attention_rows: usize,
    device: Device,
    dtype: DType,
}

impl Decoder {
    /// Builds the decoder from Hugging Face-named tensors (taken out of the
    /// map). A missing tensor is an error naming it.
    pub fn from_tensors(
        cfg: ModelConfig,
        tensors: &mut HashMap<String, Tensor>,
        device: &Device,
    ) -> Result<Self> {
        let mut take = |name: String| -> Result<Tensor> {
            tensors
                .remove(&name)
                .ok_or_else(|| Error::Input(format!("tensor {name} is missing from the model")))
        };
        let embed = take("model.embed_tokens.weight".into())?;
        let dtype = embed.dtype();
        let mut layers = Vec::with_capacity(cfg.num_layers);
        for i in 0..cfg.num_layers {
            let p = format!("model.layers.{i}");
            let mut lin = |name: &str, bias: bool| -> Result<Linear> {
                Ok(Linear::new(
                    take(format!("{p}.{name}.weight"))?,
                    if bias {
                        Some(take(format!("{p}.{name}.bias"))?)
                    } else {
                        None
                    },
                ))
            };
            let ab = cfg.attention_bias();
            let q_proj = lin("self_attn.q_proj", ab)?;
            let k_proj = lin("self_attn.k_proj", ab)?;
            let v_proj = lin("self_attn.v_proj", ab)?;
            let o_proj = lin("self_attn.o_proj", false)?;
            let gate_proj = lin("mlp.gate_proj", false)?;
            let up_proj = lin("mlp.up_proj", false)?;
            let down_proj = lin("mlp.down_proj", false)?;
            let (q_norm, k_norm) = if cfg.qk_norm() {
                (
                    Some(take(format!("{p}.self_attn.q_norm.weight"))?),
                    Some(take(format!("{p}.self_attn.k_norm.weight"))?),
                )
            } else {
                (None, None)
            };
            layers.push(Layer {
                input_norm: take(format!("{p}.input_layernorm.weight"))?,
                q_proj,
                k_proj,
                v_proj,
                o_proj,
                q_norm,
                k_norm,
                post_norm: take(format!("{p}.post_attention_layernorm.weight"))?,
                gate_proj,
                up_proj,
                down_proj,
            });
        }
        let norm = take("model.norm.weight".into())?;
        let lm_head = if cfg.tie_embeddings {
            tensors
                .remove("lm_head.weight")
                .unwrap_or_else(|| embed.clone())
        } else {
            take("lm_head.weight".into())?
        };
        Self::assemble(cfg, embed, layers, norm, lm_head, device, dtype)
    }

    fn assemble(
        cfg: ModelConfig,
        embed: Tensor,
        layers: Vec<Layer>,
        norm: Tensor,
        lm_head: Tensor,
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        let half = cfg.head_dim / 2;
        let inv: Vec<f32> = (0..half)
            .map(|i| 1.0 / cfg.rope_theta.powf(2.0 * i as f64 / cfg.head_dim as f64) as f32)
            .collect();
        let inv_freq = Tensor::from_vec(inv, (1, half), device)?;
        Ok(Decoder {
            cfg,
            embed,
            layers,
            norm,
            lm_head,
            inv_freq,
            kernels: Kernels::Fused,
            attention_rows: if device.is_cpu() {
                CPU_CHUNK_ROWS
            } else {
                GPU_CHUNK_ROWS
            },
            device: device.clone(),
            dtype,
        })
    }

    /// A decoder with seeded random weights in the shapes of `cfg`
    /// (platform-independent: drawn on the host, then moved to `device`).
    pub fn random(cfg: ModelConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        let mut rng = SplitMix64(seed);
        Self::random_with(cfg, dtype, device, |rows, cols, scale| {
            let data: Vec<f32> = (0..rows * cols).map(|_| rng.normal() * scale).collect();
            Ok(Tensor::from_vec(data, (rows, cols), &Device::Cpu)?
                .to_dtype(dtype)?
                .to_device(device)?)
        })
    }

    /// Like [`Decoder::random`], but drawn by the device's own generator:
    /// fast for billions of weights (benchmarks in the shapes of large
    /// models), reproducible on one device, not the same numbers across
    /// devices. On the CPU this is [`Decoder::random`].
    pub fn random_on_device(
        cfg: ModelConfig,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        if device.is_cpu() {
            // The CPU's generator cannot be seeded: the host generator.
            return Self::random(cfg, seed, dtype, device);
        }
        device.set_seed(seed)?;
        Self::random_with(cfg, dtype, device, |rows, cols, scale| {
            Ok(Tensor::randn(0f32, scale, (rows, cols), device)?.to_dtype(dtype)?)
        })
    }

    /// Weights in the shapes of `cfg` from `mat(rows, cols, std)`; norms are
    /// ones.
    fn random_with(
        cfg: ModelConfig,
        dtype: DType,
        device: &Device,
        mut mat: impl FnMut(usize, usize, f32) -> Result<Tensor>,
    ) -> Result<Self> {
        let ones = |n: usize| -> Result<Tensor> { Ok(Tensor::ones(n, dtype, device)?) };
        let (h, hd) = (cfg.hidden_size, cfg.head_dim);
        let s_in = 1.0 / (h as f32).sqrt();
        let s_ff = 1.0 / (cfg.intermediate_size as f32).sqrt();
        let mut layers = Vec::new();
        for _ in 0..cfg.num_layers {
            let mut lin = |out: usize, inp: usize, scale: f32, bias: bool| -> Result<Linear> {
                Ok(Linear::new(
                    mat(out, inp, scale)?,
                    if bias {
                        Some(mat(1, out, 0.02)?.reshape(out)?)
                    } else {
                        None
                    },
                ))
            };
            let ab = cfg.attention_bias();
            layers.push(Layer {
                input_norm: ones(h)?,
                q_proj: lin(cfg.num_heads * hd, h, s_in, ab)?,
                k_proj: lin(cfg.num_kv_heads * hd, h, s_in, ab)?,
                v_proj: lin(cfg.num_kv_heads * hd, h, s_in, ab)?,
                o_proj: lin(
                    h,
                    cfg.num_heads * hd,
                    1.0 / ((cfg.num_heads * hd) as f32).sqrt(),
                    false,
                )?,
                q_norm: if cfg.qk_norm() { Some(ones(hd)?) } else { None },
                k_norm: if cfg.qk_norm() { Some(ones(hd)?) } else { None },
                post_norm: ones(h)?,
                gate_proj: lin(cfg.intermediate_size, h, s_in, false)?,
                up_proj: lin(cfg.intermediate_size, h, s_in, false)?,
                down_proj: lin(h, cfg.intermediate_size, s_ff, false)?,
            });
        }
        let embed = mat(cfg.vocab_size, h, 1.0)?;
        let lm_head = if cfg.tie_embeddings {
            embed.clone()
        } else {
            mat(cfg.vocab_size, h, s_in)?
        };
        let norm = ones(h)?;
        Self::assemble(cfg, embed, layers, norm, lm_head, device, dtype)
    }

    /// The weights under their Hugging Face names (the inverse of
    /// [`Decoder::from_tensors`]), e.g. to save a safetensors checkpoint.
    pub fn named_tensors(&self) -> HashMap<String, Tensor> {
        let mut t = HashMap::new();
        t.insert("model.embed_tokens.weight".to_string(), self.embed.clone());
        t.insert("model.norm.weight".to_string(), self.norm.clone());
        if !self.cfg.tie_embeddings {
            t.insert("lm_head.weight".to_string(), self.lm_head.clone());
        }
        for (i, l) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            t.insert(format!("{p}.input_layernorm.weight"), l.input_norm.clone());
            t.insert(
                format!("{p}.post_attention_layernorm.weight"),
                l.post_norm.clone(),
            );
            for (name, lin) in [
                ("self_attn.q_proj", &l.q_proj),
                ("self_attn.k_proj", &l.k_proj),
                ("self_attn.v_proj", &l.v_proj),
                ("self_attn.o_proj", &l.o_proj),
                ("mlp.gate_proj", &l.gate_proj),
                ("mlp.up_proj", &l.up_proj),
                ("mlp.down_proj", &l.down_proj),
            ] {
                t.insert(format!("{p}.{name}.weight"), lin.weight.clone());
                if let Some(b) = &lin.bias {
                    t.insert(format!("{p}.{name}.bias"), b.clone());
                }
            }
            if let (Some(q), Some(k)) = (&l.q_norm, &l.k_norm) {
                t.insert(format!("{p}.self_attn.q_norm.weight"), q.clone());
                t.insert(format!("{p}.self_attn.k_norm.weight"), k.clone());
            }
        }
        t
    }

    /// The same decoder with its weights in `dtype` on `device` (LoRA
    /// adapters are not carried over: attach them after moving).
    pub fn to(&self, dtype: DType, device: &Device) -> Result<Self> {
        let mut tensors = HashMap::new();
        for (name, t) in self.named_tensors() {
            tensors.insert(name, t.to_dtype(dtype)?.to_device(device)?);
        }
        let mut d = Self::from_tensors(self.cfg.clone(), &mut tensors, device)?;
        d.kernels = self.kernels;
        Ok(d)
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of parameters (tied embeddings counted once).
    pub fn num_params(&self) -> usize {
        let mut n = self.embed.elem_count() + self.norm.elem_count();
        if !self.cfg.tie_embeddings {
            n += self.lm_head.elem_count();
        }
        for l in &self.layers {
            for lin in l.linears() {
                n += lin.weight.elem_count() + lin.bias.as_ref().map_or(0, |b| b.elem_count());
            }
            n += l.input_norm.elem_count() + l.post_norm.elem_count();
        }
        n
    }

    /// Causal forward over `tokens` at positions 0.. returning the KV cache
    /// (a shared prefix).
    pub fn prefill(&self, tokens: &[u32]) -> Result<KvCache> {
        let positions: Vec<u32> = (0..tokens.len() as u32).collect();
        let mask = MaskLayout::causal(tokens.len());
        let out = self.forward(&ForwardInput {
            tokens,
            positions: &positions,
            mask: &mask,
            prefix: None,
            readout: &[],
            keep_cache: true,
            dropout: None,
        })?;
        Ok(out.cache.expect("keep_cache was requested"))
    }

    /// Greedy decoding after `prompt`: the prompt in one causal forward, then
    /// one token per forward over the growing KV cache (the cache is what
    /// makes a token's logits equal those of a whole forward over prompt +
    /// everything generated before it). Each step takes the most likely
    /// token, ties to the lower id. Stops after `max_new` tokens or as soon as
    /// `stop` says so for the tokens generated so far; the stopping token is
    /// kept. A prompt plus answer longer than the context is an error.
    pub fn greedy(
        &self,
        prompt: &[u32],
        max_new: usize,
        mut stop: impl FnMut(&[u32]) -> bool,
    ) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        if max_new == 0 {
            return Ok(out);
        }
        let n = prompt.len();
        let positions: Vec<u32> = (0..n as u32).collect();
        let mask = MaskLayout::causal(n);
        let first = self.forward(&ForwardInput {
            tokens: prompt,
            positions: &positions,
            mask: &mask,
            prefix: None,
            readout: &[n.saturating_sub(1)],
            keep_cache: true,
            dropout: None,
        })?;
        let mut cache = first.cache.expect("keep_cache was requested");
        let mut next = argmax_row(&first.logits)?;
        let one = MaskLayout::causal(1);
        loop {
            out.push(next);
            if out.len() >= max_new || stop(&out) {
                return Ok(out);
            }
            let step = self.forward(&ForwardInput {
                tokens: &[next],
                positions: &[cache.len as u32],
                mask: &one,
                prefix: Some(&cache),
                readout: &[0],
                keep_cache: true,
                dropout: None,
            })?;
            cache = step.cache.expect("keep_cache was requested");
            next = argmax_row(&step.logits)?;
        }
    }

    fn check_input(&self, input: &ForwardInput) -> Result<()> {
        let n = input.tokens.len();
        let prefix_len = input.prefix.map_or(0, |c| c.len);
        if n == 0 {
            return Err(Error::Input("forward of zero tokens".into()));
        }
        input.check_lengths("forward")?;
        let max_pos = *input.positions.iter().max().unwrap_or(&0) as usize;
        // Positions, not the token count, must fit the context: packed or
        // invariant blocks restart theirs.
        let longest = prefix_len.max(max_pos + 1);
        if max_pos >= self.cfg.context_length || longest > self.cfg.context_length {
            return Err(Error::Input(format!(
                "{} tokens (largest position {max_pos}) exceed the model's context of {} tokens",
                prefix_len + n,
                self.cfg.context_length
            )));
        }
        if let Some(&bad) = input.readout.iter().find(|&&r| r >= n) {
            return Err(Error::Input(format!(
                "readout index {bad} is outside the {n} tokens"
            )));
        }
        if let Some(&bad) = input
            .tokens
            .iter()
            .find(|&&t| t as usize >= self.cfg.vocab_size)
        {
            return Err(Error::Input(format!(
                "token id {bad} is outside the vocabulary of {}",
                self.cfg.vocab_size
            )));
        }
        Ok(())
    }

    pub fn forward(&self, input: &ForwardInput) -> Result<ForwardOutput> {
        self.check_input(input)?;
        let n = input.tokens.len();
        let prefix_len = input.prefix.map_or(0, |c| c.len);
        let ids = Tensor::from_slice(input.tokens, n, &self.device)?;
        let mut x = self.embed.index_select(&ids, 0)?;
        let (cos, sin) = self.rope_tables(input.positions)?;
        let chunks = plan_chunks(
            input.mask,
            prefix_len,
            self.attention_rows,
            self.dtype,
            &self.device,
        )?;
        let mut cache = input
            .keep_cache
            .then(|| Vec::with_capacity(self.layers.len()));
        for (i, layer) in self.layers.iter().enumerate() {
            let past = input.prefix.map(|c| &c.layers[i]);
            let drop = input.dropout.map(|seed| module_key(seed, i, 0));
            let (y, kv) =
                self.layer_forward(layer, &x, &cos, &sin, &chunks, past, input.keep_cache, drop)?;
            x = y;
            if let (Some(c), Some(kv)) = (cache.as_mut(), kv) {
                c.push(kv);
            }
        }
        let logits = if input.readout.is_empty() {
            Tensor::zeros((0, self.cfg.vocab_size), DType::F32, &self.device)?
        } else {
            let idx: Vec<u32> = input.readout.iter().map(|&r| r as u32).collect();
            let idx = Tensor::from_vec(idx, input.readout.len(), &self.device)?;
            let h = self.rms_norm(&x.index_select(&idx, 0)?, &self.norm)?;
            crate::frozen::matmul_t(&h, &self.lm_head)?.to_dtype(self.logits_dtype())?
        };
        Ok(ForwardOutput {
            logits,
            cache: cache.map(|layers| KvCache {
                layers,
                len: prefix_len + n,
            }),
        })
    }

    /// The layer-by-layer form of [`Decoder::forward`] (no cached prefix, no
    /// KV cache), for gradient checkpointing: `stage` embeds the tokens and
    /// prepares what every layer shares, `stage_layer` runs one layer,
    /// `stage_head` the final norm and output head at the readout rows.
    /// Chaining them gives exactly `forward`'s logits.
    pub fn stage(&self, input: &ForwardInput) -> Result<(Tensor, Staged)> {
        if input.prefix.is_some() || input.keep_cache {
            return Err(Error::Input(
                "the staged forward takes no cached prefix and keeps no cache".into(),
            ));
        }
        self.check_input(input)?;
        let ids = Tensor::from_slice(input.tokens, input.tokens.len(), &self.device)?;
        let x = self.embed.index_select(&ids, 0)?;
        let (cos, sin) = self.rope_tables(input.positions)?;
        let chunks = plan_chunks(input.mask, 0, self.attention_rows, self.dtype, &self.device)?;
        Ok((
            x,
            Staged {
                cos,
                sin,
                chunks,
                dropout: input.dropout,
            },
        ))
    }

    pub fn stage_layer(&self, i: usize, x: &Tensor, st: &Staged) -> Result<Tensor> {
        let drop = st.dropout.map(|seed| module_key(seed, i, 0));
        let (y, _) = self.layer_forward(
            &self.layers[i],
            x,
            &st.cos,
            &st.sin,
            &st.chunks,
            None,
            false,
            drop,
        )?;
        Ok(y)
    }

    pub fn stage_head(&self, x: &Tensor, readout: &[usize]) -> Result<Tensor> {
        let idx: Vec<u32> = readout.iter().map(|&r| r as u32).collect();
        let idx = Tensor::from_vec(idx, readout.len(), &self.device)?;
        let h = self.rms_norm(&x.index_select(&idx, 0)?, &self.norm)?;
        Ok(crate::frozen::matmul_t(&h, &self.lm_head)?.to_dtype(self.logits_dtype())?)
    }

    /// Logits are f32, or f64 for an f64 model (gradient checks).
    fn logits_dtype(&self) -> DType {
        if self.dtype == DType::F64 {
            DType::F64
        } else {
            DType::F32
        }
    }

    fn rope_tables(&self, positions: &[u32]) -> Result<(Tensor, Tensor)> {
        let pos: Vec<f32> = positions.iter().map(|&p| p as f32).collect();
        let pos = Tensor::from_vec(pos, (positions.len(), 1), &self.device)?;
        let freqs = pos.broadcast_mul(&self.inv_freq)?;
        Ok((
            freqs.cos()?.to_dtype(self.dtype)?,
            freqs.sin()?.to_dtype(self.dtype)?,
        ))
    }

    fn rms_norm(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        let eps = self.cfg.rms_norm_eps;
        Ok(match self.kernels {
            Kernels::Fused => candle_nn::ops::rms_norm(&x.contiguous()?, w, eps as f32)?,
            Kernels::Composite => {
                let x32 = x.to_dtype(self.logits_dtype())?;
                let ms = x32.sqr()?.mean_keepdim(D::Minus1)?;
                let normed = x32.broadcast_div(&(ms + eps)?.sqrt()?)?;
                normed.to_dtype(x.dtype())?.broadcast_mul(w)?
            }
        })
    }

    fn rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        Ok(match self.kernels {
            Kernels::Fused => candle_nn::rotary_emb::rope(&x.contiguous()?, cos, sin)?,
            Kernels::Composite => candle_nn::rotary_emb::rope_slow(x, cos, sin)?,
        })
    }

    /// softmax(scores + mask) over keys; `scores` is `[1, kv, rep * rows, keys]`.
    fn masked_softmax(&self, scores: &Tensor, mask: &Tensor) -> Result<Tensor> {
        match self.kernels {
            Kernels::Fused => masked_softmax_fused(scores, mask),
            Kernels::Composite => {
                // In f32 (f64 for f64 models) whatever the weights' dtype.
                let (_, nkv, rr, nk) = scores.dims4()?;
                let rows = mask.dim(0)?;
                let x32 = scores.to_dtype(self.logits_dtype())?;
                if let Some(p) = masked_softmax_differentiable(&x32, mask)? {
                    return Ok(p.to_dtype(scores.dtype())?);
                }
                let x = scores
                    .reshape((nkv, rr / rows, rows, nk))?
                    .broadcast_add(mask)?
                    .to_dtype(self.logits_dtype())?;
                let max = x.max_keepdim(D::Minus1)?.detach();
                let e = x.broadcast_sub(&max)?.exp()?;
                Ok(e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?
                    .to_dtype(scores.dtype())?
                    .reshape((1, nkv, rr, nk))?)
            }
        }
    }

    // Private hot path: the per-layer inputs are spelled out rather than boxed.
    #[allow(clippy::too_many_arguments)]
    fn layer_forward(
        &self,
        l: &Layer,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        chunks: &[Chunk],
        past: Option<&(Tensor, Tensor)>,
        keep: bool,
        dropout: Option<u64>,
    ) -> Result<(Tensor, Option<(Tensor, Tensor)>)> {
        let key = |module: usize| dropout.map(|k| module_key(k, 0, module + 1));
        let cfg = &self.cfg;
        let (n, _) = x.dims2()?;
        let (nh, nkv, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let rep = nh / nkv;

        let h = self.rms_norm(x, &l.input_norm)?;
        let heads = |t: Tensor, count: usize, norm: &Option<Tensor>| -> Result<Tensor> {
            let t = t.reshape((n, count, hd))?;
            let t = match norm {
                Some(w) => self.rms_norm(&t, w)?,
                None => t,
            };
            Ok(t.transpose(0, 1)?.contiguous()?.unsqueeze(0)?)
        };
        let q = heads(l.q_proj.forward_with(&h, key(0))?, nh, &l.q_norm)?;
        let k = heads(l.k_proj.forward_with(&h, key(1))?, nkv, &l.k_norm)?;
        let v = heads(l.v_proj.forward_with(&h, key(2))?, nkv, &None)?;
        let q = self.rope(&q, cos, sin)?;
        let k = self.rope(&k, cos, sin)?;
        let (k_new, v_new) = (k, v);
        // Grouped-query attention without copying k/v: the `rep` query heads
        // of one kv head are stacked along the row axis. The scale is folded
        // into q.
        let q = (q * (1.0 / (hd as f64).sqrt()))?;
        let mut outs = Vec::with_capacity(chunks.len());
        for c in chunks {
            let qc = q.narrow(2, c.q_start, c.q_len)?.contiguous()?.reshape((
                1,
                nkv,
                rep * c.q_len,
                hd,
            ))?;
            // Keys in the mask's column order: cached prefix, shared lead,
            // the chunk's own run.
            let keys = |new: &Tensor, past: Option<&Tensor>| -> Result<Tensor> {
                let mut parts: Vec<Tensor> = past.into_iter().cloned().collect();
                if c.lead > 0 {
                    parts.push(new.narrow(2, 0, c.lead)?);
                }
                parts.push(new.narrow(2, c.k_start, c.k_len)?);
                Ok(if parts.len() == 1 {
                    parts.pop().expect("one part")
                } else {
                    Tensor::cat(&parts, 2)?
                })
            };
            let kc = keys(&k_new, past.map(|p| &p.0))?;
            let vc = keys(&v_new, past.map(|p| &p.1))?;
            let scores = qc.matmul(&kc.t()?)?;
            let probs = self.masked_softmax(&scores, &c.mask)?;
            let o = probs.matmul(&vc.contiguous()?)?; // [1, nkv, rep*len, hd]
            outs.push(
                o.reshape((nh, c.q_len, hd))?
                    .transpose(0, 1)?
                    .reshape((c.q_len, nh * hd))?,
            );
        }
        let attn = if outs.len() == 1 {
            outs.pop().expect("one chunk")
        } else {
            Tensor::cat(&outs, 0)?
        };
        let x = (x + l.o_proj.forward_with(&attn, key(3))?)?;

        let h = self.rms_norm(&x, &l.post_norm)?;
        let gate = l.gate_proj.forward_with(&h, key(4))?;
        let act = (gate.silu()? * l.up_proj.forward_with(&h, key(5))?)?;
        let x = (&x + l.down_proj.forward_with(&act, key(6))?)?;
        let kv = match (keep, past) {
            (false, _) => None,
            (true, Some((pk, pv))) => Some((
                Tensor::cat(&[pk, &k_new], 2)?,
                Tensor::cat(&[pv, &v_new], 2)?,
            )),
            (true, None) => Some((k_new, v_new)),
        };
        Ok((x, kv))
    }
}

/// SplitMix64 with Box-Muller: a tiny, documented generator so that random
/// test weights are identical on every platform and device.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f32 {
        let (u1, u2) = (self.uniform(), self.uniform());
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// The most likely token of a `[1, vocab]` logits row, ties to the lower id.
fn argmax_row(logits: &Tensor) -> Result<u32> {
    let row: Vec<f32> = logits.flatten_all()?.to_vec1()?;
    let mut best = 0usize;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    Ok(best as u32)
}
