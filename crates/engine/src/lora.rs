//! LoRA adapters on the decoder's projections, in the PEFT layout.
//!
//! A LoRA projection computes `y = x W^T + b + s * (drop(x) A^T) B^T` with
//! `A: [r, in]`, `B: [out, r]`, `s = alpha / r`; the base `W` stays frozen.
//! `A` and `B` are candle `Var`s so that training reads their gradients, and
//! they are saved under PEFT's names
//! (`base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight`, ...)
//! with an `adapter_config.json`, so adapters move between ocrank and PEFT.
//!
//! Initialisation follows PEFT: `A` Kaiming-uniform (bound `1/sqrt(in)`),
//! `B` zero, so a fresh adapter leaves the model unchanged. Dropout acts on
//! the adapter's input only and is drawn from a seeded generator, so a
//! training step is reproducible.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, Var};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{Decoder, Linear};

/// The projections LoRA can target, by their Hugging Face module names.
pub const MODULES: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// The Hugging Face path of a module inside a layer.
fn module_path(module: &str) -> &'static str {
    match module {
        "q_proj" => "self_attn.q_proj",
        "k_proj" => "self_attn.k_proj",
        "v_proj" => "self_attn.v_proj",
        "o_proj" => "self_attn.o_proj",
        "gate_proj" => "mlp.gate_proj",
        "up_proj" => "mlp.up_proj",
        _ => "mlp.down_proj",
    }
}

/// Adapter hyper-parameters (SPEC.md section 5 defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraConfig {
    pub rank: usize,
    pub alpha: f64,
    pub dropout: f64,
    /// Module names from [`MODULES`].
    pub targets: Vec<String>,
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig {
            rank: 16,
            alpha: 32.0,
            dropout: 0.05,
            targets: MODULES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl LoraConfig {
    pub fn scale(&self) -> f64 {
        self.alpha / self.rank as f64
    }

    pub fn validate(&self) -> Result<()> {
        if self.rank == 0 {
            return Err(Error::Input("LoRA rank must be at least 1".into()));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::Input(format!(
                "LoRA dropout {} is not in [0, 1)",
                self.dropout
            )));
        }
        if self.targets.is_empty() {
            return Err(Error::Input("LoRA needs at least one target module".into()));
        }
        for t in &self.targets {
            if !MODULES.contains(&t.as_str()) {
                return Err(Error::Input(format!(
                    "unknown LoRA target module {t:?} (one of {})",
                    MODULES.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// One projection's adapter.
#[derive(Debug, Clone)]
pub struct Lora {
    /// `[rank, in]`
    pub a: Var,
    /// `[out, rank]`
    pub b: Var,
    pub scale: f64,
    pub dropout: f64,
}

impl Lora {
    /// The adapter's contribution `s * (drop(x) A^T) B^T`; `dropout_key`
    /// seeds the dropout mask (None: no dropout, as in inference).
    pub fn delta(&self, x: &Tensor, dropout_key: Option<u64>) -> Result<Tensor> {
        let x = match dropout_key {
            Some(key) if self.dropout > 0.0 => {
                let mask = dropout_mask(x.dims(), self.dropout, key, x.dtype(), x.device())?;
                (x * mask)?
            }
            _ => x.clone(),
        };
        let h = x.matmul(&self.a.as_tensor().t()?)?;
        Ok((h.matmul(&self.b.as_tensor().t()?)? * self.scale)?)
    }
}

/// Inverted dropout: each element kept with probability `1 - p` and scaled
/// by `1 / (1 - p)`, drawn from `key`. On the CPU the mask comes from a
/// documented host generator (identical on every platform); on a GPU from
/// the device's generator reseeded with `key` (host masks would be a copy of
/// a few hundred MB per step): reproducible on that device, and the same
/// mask again when a checkpointed backward recomputes the forward.
fn dropout_mask(dims: &[usize], p: f64, key: u64, dtype: DType, device: &Device) -> Result<Tensor> {
    let keep = (1.0 / (1.0 - p)) as f32;
    if !device.is_cpu() {
        device.set_seed(key)?;
        let u = Tensor::rand(0f32, 1f32, dims, device)?;
        return Ok((u.ge(p)?.to_dtype(DType::F32)? * f64::from(keep))?.to_dtype(dtype)?);
    }
    let n: usize = dims.iter().product();
    let mut state = key;
    let data: Vec<f32> = (0..n)
        .map(|_| {
            let u = (splitmix(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
            if u < p {
                0.0
            } else {
                keep
            }
        })
        .collect();
    Ok(Tensor::from_vec(data, dims, device)?.to_dtype(dtype)?)
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A distinct dropout key for every (step key, layer, module).
pub fn module_key(step_key: u64, layer: usize, module: usize) -> u64 {
    let mut s =
        step_key ^ ((layer as u64) << 32 | module as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    splitmix(&mut s)
}

/// PEFT's tensor name of a LoRA matrix (`which` is "lora_A" or "lora_B").
pub fn peft_name(layer: usize, module: &str, which: &str) -> String {
    format!(
        "base_model.model.model.layers.{layer}.{}.{which}.weight",
        module_path(module)
    )
}

impl Decoder {
    fn linear_mut(&mut self, layer: usize, module: &str) -> &mut Linear {
        let l = &mut self.layers[layer];
        match module {
            "q_proj" => &mut l.q_proj,
            "k_proj" => &mut l.k_proj,
            "v_proj" => &mut l.v_proj,
            "o_proj" => &mut l.o_proj,
            "gate_proj" => &mut l.gate_proj,
            "up_proj" => &mut l.up_proj,
            _ => &mut l.down_proj,
        }
    }

    fn linear(&self, layer: usize, module: &str) -> &Linear {
        let l = &self.layers[layer];
        match module {
            "q_proj" => &l.q_proj,
            "k_proj" => &l.k_proj,
            "v_proj" => &l.v_proj,
            "o_proj" => &l.o_proj,
            "gate_proj" => &l.gate_proj,
            "up_proj" => &l.up_proj,
            _ => &l.down_proj,
        }
    }

    /// Attaches fresh adapters (PEFT initialisation, seeded) to the target
    /// projections of every layer, replacing any adapter already there.
    /// Adapters are kept in f32 whatever the base dtype... unless the base
    /// is f64 (gradient checks), then f64.
    pub fn attach_lora(&mut self, cfg: &LoraConfig, seed: u64) -> Result<()> {
        cfg.validate()?;
        let dtype = self.lora_dtype();
        let device = self.device().clone();
        let mut state = seed;
        for layer in 0..self.layers.len() {
            for module in MODULES {
                let lin = self.linear_mut(layer, module);
                if !cfg.targets.iter().any(|t| t == module) {
                    lin.lora = None;
                    continue;
                }
                let (out, inp) = lin.weight.dims2()?;
                let bound = 1.0 / (inp as f64).sqrt();
                let a: Vec<f32> = (0..cfg.rank * inp)
                    .map(|_| {
                        let u = (splitmix(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
                        ((2.0 * u - 1.0) * bound) as f32
                    })
                    .collect();
                let a = Tensor::from_vec(a, (cfg.rank, inp), &Device::Cpu)?
                    .to_dtype(dtype)?
                    .to_device(&device)?;
                let b = Tensor::zeros((out, cfg.rank), dtype, &device)?;
                lin.lora = Some(Lora {
                    a: Var::from_tensor(&a)?,
                    b: Var::from_tensor(&b)?,
                    scale: cfg.scale(),
                    dropout: cfg.dropout,
                });
            }
        }
        Ok(())
    }

    fn lora_dtype(&self) -> DType {
        if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        }
    }

    /// Every adapter matrix under its PEFT name, in a stable order (layer,
    /// module, A before B).
    pub fn lora_vars(&self) -> Vec<(String, Var)> {
        let mut out = Vec::new();
        for layer in 0..self.layers.len() {
            for module in MODULES {
                if let Some(l) = &self.linear(layer, module).lora {
                    out.push((peft_name(layer, module, "lora_A"), l.a.clone()));
                    out.push((peft_name(layer, module, "lora_B"), l.b.clone()));
                }
            }
        }
        out
    }

    /// Removes every adapter (back to the base model).
    pub fn clear_lora(&mut self) {
        for layer in 0..self.layers.len() {
            for module in MODULES {
                self.linear_mut(layer, module).lora = None;
            }
        }
    }

    pub fn has_lora(&self) -> bool {
        !self.lora_vars().is_empty()
    }

    /// Folds every adapter into its base weight (`W += s * B A`) and removes
    /// the adapters: the same function, one matmul per projection less.
    pub fn merge_lora(&mut self) -> Result<()> {
        for layer in 0..self.layers.len() {
            for module in MODULES {
                let lin = self.linear_mut(layer, module);
                if let Some(l) = lin.lora.take() {
                    let delta = (l.b.as_tensor().matmul(l.a.as_tensor())? * l.scale)?;
                    let w = (lin.weight.to_dtype(delta.dtype())? + delta)?;
                    // Detached: built from the adapter's Vars, the merged
                    // weight would otherwise record every op it enters, and
                    // each forward would keep all its activations alive for
                    // a backward that never comes (measured: a B = 20
                    // forward 4.8x slower than the base model's).
                    lin.weight = w.to_dtype(lin.weight.dtype())?.detach();
                }
            }
        }
        Ok(())
    }

    /// Writes the adapters in the PEFT layout: `adapter_config.json` and
    /// `adapter_model.safetensors` (f32) in `dir` (created if missing).
    pub fn save_lora(&self, cfg: &LoraConfig, dir: &Path, base_model: &str) -> Result<()> {
        let vars = self.lora_vars();
        if vars.is_empty() {
            return Err(Error::Input(
                "the model has no LoRA adapters to save".into(),
            ));
        }
        let tensors: HashMap<String, Tensor> = vars
            .into_iter()
            .map(|(n, v)| {
                Ok((
                    n,
                    v.as_tensor()
                        .to_dtype(DType::F32)?
                        .to_device(&Device::Cpu)?,
                ))
            })
            .collect::<Result<_>>()?;
        let config = serde_json::json!({
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": base_model,
            "r": cfg.rank,
            "lora_alpha": cfg.alpha,
            "lora_dropout": cfg.dropout,
            "target_modules": cfg.targets,
            "bias": "none",
            "fan_in_fan_out": false,
            "inference_mode": true,
            "init_lora_weights": true,
            "use_rslora": false,
            "use_dora": false,
            "modules_to_save": null,
            "layers_to_transform": null,
            "revision": null,
        });
        let config = serde_json::to_string_pretty(&config).expect("json value");
        ocrank_data::write_whole(&dir.join("adapter_config.json"), config.as_bytes())?;
        write_safetensors(&dir.join("adapter_model.safetensors"), &tensors)
    }

    /// Loads a PEFT LoRA adapter directory onto this decoder (replacing any
    /// adapter). Shapes, rank and target modules are checked; a tensor the
    /// model has no place for, or one that is missing, is an error naming it.
    pub fn load_lora(&mut self, dir: &Path) -> Result<LoraConfig> {
        let cfg = read_adapter_config(dir)?;
        let st_path = dir.join("adapter_model.safetensors");
        if !st_path.exists() {
            return Err(Error::model(&st_path, "missing (a PEFT adapter directory holds adapter_config.json and adapter_model.safetensors)"));
        }
        let mut tensors = candle_core::safetensors::load(&st_path, &Device::Cpu)
            .map_err(|e| Error::model(&st_path, e.to_string()))?;
        let dtype = self.lora_dtype();
        let device = self.device().clone();
        let n_layers = self.layers.len();
        for layer in 0..n_layers {
            for module in MODULES {
                let lin = self.linear_mut(layer, module);
                if !cfg.targets.iter().any(|t| t == module) {
                    lin.lora = None;
                    continue;
                }
                let (out, inp) = lin.weight.dims2()?;
                let mut take = |which: &str, shape: (usize, usize)| -> Result<Tensor> {
                    let name = peft_name(layer, module, which);
                    // PEFT also writes names with the adapter name inserted.
                    let alt = name.replace(".weight", ".default.weight");
                    let t = tensors
                        .remove(&name)
                        .or_else(|| tensors.remove(&alt))
                        .ok_or_else(|| {
                            Error::model(&st_path, format!("tensor {name} is missing"))
                        })?;
                    if t.dims2().ok() != Some(shape) {
                        return Err(Error::model(
                            &st_path,
                            format!("tensor {name} has shape {:?}, expected {shape:?}", t.dims()),
                        ));
                    }
                    Ok(t.to_dtype(dtype)?.to_device(&device)?)
                };
                let a = take("lora_A", (cfg.rank, inp))?;
                let b = take("lora_B", (out, cfg.rank))?;
                lin.lora = Some(Lora {
                    a: Var::from_tensor(&a)?,
                    b: Var::from_tensor(&b)?,
                    scale: cfg.scale(),
                    dropout: cfg.dropout,
                });
            }
        }
        if let Some(extra) = tensors.keys().min() {
            return Err(Error::model(
                &st_path,
                format!(
                    "tensor {extra} does not fit this model ({n_layers} layers, targets {})",
                    cfg.targets.join(", ")
                ),
            ));
        }
        Ok(cfg)
    }

    /// Copies adapter values from `values` (PEFT names) into this decoder's
    /// adapters (used to restore a training checkpoint in place).
    pub fn set_lora(&self, values: &HashMap<String, Tensor>) -> Result<()> {
        for (name, var) in self.lora_vars() {
            let t = values
                .get(&name)
                .ok_or_else(|| Error::Input(format!("checkpoint lacks tensor {name}")))?;
            if t.id() == var.as_tensor().id() {
                continue;
            }
            var.set(&t.to_dtype(var.dtype())?.to_device(var.device())?)?;
        }
        Ok(())
    }
}

/// Reads and checks a PEFT `adapter_config.json`.
pub fn read_adapter_config(dir: &Path) -> Result<LoraConfig> {
    let path = dir.join("adapter_config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::model(&path, e.to_string()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::model(&path, format!("line {}: {e}", e.line())))?;
    let field = |name: &str| -> Result<&serde_json::Value> {
        v.get(name)
            .filter(|x| !x.is_null())
            .ok_or_else(|| Error::model(&path, format!("field {name} is missing")))
    };
    if let Some(t) = v.get("peft_type").and_then(|t| t.as_str()) {
        if t != "LORA" {
            return Err(Error::model(&path, format!("peft_type {t:?} is not LORA")));
        }
    }
    for (flag, bad) in [
        ("use_dora", true),
        ("use_rslora", true),
        ("fan_in_fan_out", true),
    ] {
        if v.get(flag).and_then(|x| x.as_bool()) == Some(bad) {
            return Err(Error::model(
                &path,
                format!("{flag} = true is not supported"),
            ));
        }
    }
    let rank = field("r")?
        .as_u64()
        .ok_or_else(|| Error::model(&path, "field r: not a positive integer"))?
        as usize;
    let alpha = field("lora_alpha")?
        .as_f64()
        .ok_or_else(|| Error::model(&path, "field lora_alpha: not a number"))?;
    let dropout = v
        .get("lora_dropout")
        .and_then(|x| x.as_f64())
        .unwrap_or(0.0);
    let targets: Vec<String> = match field("target_modules")? {
        serde_json::Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| {
                    Error::model(&path, "field target_modules: not a list of strings")
                })
            })
            .collect::<Result<_>>()?,
        serde_json::Value::String(s) if s == "all-linear" => {
            MODULES.iter().map(|s| s.to_string()).collect()
        }
        _ => {
            return Err(Error::model(
                &path,
                "field target_modules: not a list of module names",
            ))
        }
    };
    let cfg = LoraConfig {
        rank,
        alpha,
        dropout,
        targets,
    };
    cfg.validate()
        .map_err(|e| Error::model(&path, e.to_string()))?;
    Ok(cfg)
}

/// Writes `tensors` as one safetensors file, serialized in memory (the bytes
/// candle's `safetensors::save` writes) and replaced whole: an interrupted
/// save never leaves a truncated adapter that loads as a finished one.
pub(crate) fn write_safetensors(path: &Path, tensors: &HashMap<String, Tensor>) -> Result<()> {
    let bytes = safetensors::tensor::serialize(tensors, None)
        .map_err(|e| Error::model(path, e.to_string()))?;
    Ok(ocrank_data::write_whole(path, &bytes)?)
}
