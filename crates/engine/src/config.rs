//! Architecture hyper-parameters shared by the Llama, Qwen2 and Qwen3 families.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
}

impl Arch {
    pub fn parse(name: &str) -> Option<Arch> {
        match name {
            "llama" | "LlamaForCausalLM" => Some(Arch::Llama),
            "qwen2" | "Qwen2ForCausalLM" => Some(Arch::Qwen2),
            "qwen3" | "Qwen3ForCausalLM" => Some(Arch::Qwen3),
            _ => None,
        }
    }
}

/// Hyper-parameters of a decoder. `head_dim` may differ from
/// `hidden / heads` (Qwen3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub arch: Arch,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    pub context_length: usize,
    pub tie_embeddings: bool,
}

impl ModelConfig {
    /// Qwen2 has biases on the q, k and v projections.
    pub fn attention_bias(&self) -> bool {
        self.arch == Arch::Qwen2
    }

    /// Qwen3 normalises q and k per head before rotary embedding.
    pub fn qk_norm(&self) -> bool {
        self.arch == Arch::Qwen3
    }

    /// Configuration of the real SmolLM2-135M (used for random-weight tests
    /// and benchmarks in real shapes).
    pub fn smollm2_135m() -> Self {
        ModelConfig {
            arch: Arch::Llama,
            vocab_size: 49152,
            hidden_size: 576,
            intermediate_size: 1536,
            num_layers: 30,
            num_heads: 9,
            num_kv_heads: 3,
            head_dim: 64,
            rope_theta: 100000.0,
            rms_norm_eps: 1e-5,
            context_length: 8192,
            tie_embeddings: true,
        }
    }

    /// Configuration of Qwen3-0.6B.
    pub fn qwen3_0_6b() -> Self {
        ModelConfig {
            arch: Arch::Qwen3,
            vocab_size: 151936,
            hidden_size: 1024,
            intermediate_size: 3072,
            num_layers: 28,
            num_heads: 16,
            num_kv_heads: 8,
            head_dim: 128,
            rope_theta: 1_000_000.0,
            rms_norm_eps: 1e-6,
            context_length: 40960,
            tie_embeddings: true,
        }
    }

    /// Configuration of Qwen3-4B (benchmarks in real shapes).
    pub fn qwen3_4b() -> Self {
        ModelConfig {
            hidden_size: 2560,
            intermediate_size: 9728,
            num_layers: 36,
            num_heads: 32,
            num_kv_heads: 8,
            ..Self::qwen3_0_6b()
        }
    }

    /// The real shapes known by name: `smollm2-135m`, `qwen3-0.6b`,
    /// `qwen3-4b`.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "smollm2-135m" => Some(Self::smollm2_135m()),
            "qwen3-0.6b" => Some(Self::qwen3_0_6b()),
            "qwen3-4b" => Some(Self::qwen3_4b()),
            _ => None,
        }
    }

    /// A tiny configuration of the given family for fast tests.
    pub fn tiny(arch: Arch) -> Self {
        ModelConfig {
            arch,
            vocab_size: 64,
            hidden_size: 32,
            intermediate_size: 48,
            num_layers: 2,
            num_heads: 4,
            num_kv_heads: 2,
            head_dim: 8,
            rope_theta: 10000.0,
            rms_norm_eps: 1e-6,
            context_length: 2048,
            tie_embeddings: arch != Arch::Qwen2,
        }
    }
}
