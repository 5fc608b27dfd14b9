//! A uniform "soup" of LoRA adapters: one adapter whose weight update is the
//! mean of its members' updates, so that one forward scores with the
//! averaged weights (an ensemble of scores needs one forward per member).
//!
//! Members are PEFT adapter directories of the same base model, target
//! modules, rank `r` and scale `alpha / r` (e.g. one recipe trained at
//! several seeds). For `N` members the soup has rank `N r` and
//! `lora_alpha = N alpha`, the same scale; its `lora_A` stacks the members'
//! `A` (rows) and its `lora_B` puts the members' `B` side by side (columns),
//! each divided by `N`, so that per module
//!
//! ```text
//! B_soup A_soup = (1/N) sum_i B_i A_i        (exactly)
//! ```
//!
//! The members' `A` start from different random initialisations, so the
//! factor-wise mean (mean `A` times mean `B`) is not the mean update; the
//! concatenation is. The output is an ordinary PEFT adapter that
//! [`Decoder::load_lora`](crate::Decoder::load_lora) (and PEFT) loads; every
//! module's dense update is recomputed and compared before it is written.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use crate::error::{Error, Result};
use crate::lora::{read_adapter_config, write_safetensors};

const CONFIG: &str = "adapter_config.json";
const WEIGHTS: &str = "adapter_model.safetensors";
/// The file in a soup directory that names its members.
pub const SOUP_RECORD: &str = "soup.json";

/// What [`soup_adapters`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Soup {
    pub members: usize,
    /// The members' rank and the soup's (`members * rank`).
    pub member_rank: usize,
    pub rank: usize,
    pub alpha: f64,
    /// Modules (pairs of `lora_A` / `lora_B`) in the soup.
    pub modules: usize,
    /// The largest `|B_soup A_soup - mean_i B_i A_i|` over all modules,
    /// relative to the largest entry of the mean update (checked <= 1e-5).
    pub max_relative_error: f64,
}

/// Writes the soup of `members` to `out` (created if missing):
/// `adapter_config.json`, `adapter_model.safetensors` and [`SOUP_RECORD`]
/// (the member directories and `command`, so a soup states how it was made).
pub fn soup_adapters(members: &[PathBuf], out: &Path, command: &str) -> Result<Soup> {
    if members.len() < 2 {
        return Err(Error::Input(format!(
            "a soup needs at least two adapters, got {}",
            members.len()
        )));
    }
    // Writing over a member would destroy a trained adapter.
    if let Ok(out_abs) = out.canonicalize() {
        for m in members {
            if m.canonicalize().is_ok_and(|m| m == out_abs) {
                return Err(Error::Input(format!(
                    "--out {} is one of the members; write the soup elsewhere",
                    out.display()
                )));
            }
        }
    }
    let first = &members[0];
    let cfg = read_adapter_config(first)?;
    let raw = raw_config(first)?;
    for m in &members[1..] {
        let c = read_adapter_config(m)?;
        let r = raw_config(m)?;
        let path = m.join(CONFIG);
        for field in ["base_model_name_or_path", "bias"] {
            if r.get(field) != raw.get(field) {
                return Err(differs(&path, field, r.get(field), raw.get(field), first));
            }
        }
        if c.targets != cfg.targets {
            return Err(Error::model(
                &path,
                format!(
                    "field target_modules {:?} differs from {}'s {:?}",
                    c.targets,
                    first.display(),
                    cfg.targets
                ),
            ));
        }
        if c.rank != cfg.rank || c.alpha != cfg.alpha {
            return Err(Error::model(
                &path,
                format!(
                    "r = {}, lora_alpha = {} differ from {}'s r = {}, lora_alpha = {}",
                    c.rank,
                    c.alpha,
                    first.display(),
                    cfg.rank,
                    cfg.alpha
                ),
            ));
        }
    }
    let tensors: Vec<HashMap<String, Tensor>> = members
        .iter()
        .map(|m| load_weights(m))
        .collect::<Result<_>>()?;
    let modules = pair_modules(&tensors[0], &first.join(WEIGHTS))?;
    for (m, t) in members.iter().zip(&tensors).skip(1) {
        let mut a: Vec<&String> = t.keys().collect();
        let mut b: Vec<&String> = tensors[0].keys().collect();
        a.sort();
        b.sort();
        if a != b {
            let extra: Vec<&String> = a
                .iter()
                .filter(|n| !tensors[0].contains_key(n.as_str()))
                .chain(b.iter().filter(|n| !t.contains_key(n.as_str())))
                .take(3)
                .copied()
                .collect();
            return Err(Error::model(
                m.join(WEIGHTS),
                format!(
                    "holds other tensors than {} (e.g. {extra:?})",
                    first.join(WEIGHTS).display()
                ),
            ));
        }
    }

    let n = members.len();
    let n_t = Tensor::new(n as f32, &Device::Cpu)?;
    let mut souped: HashMap<String, Tensor> = HashMap::new();
    for (a_name, b_name) in modules.values() {
        let a_shape = tensors[0][a_name].dims().to_vec();
        let b_shape = tensors[0][b_name].dims().to_vec();
        if a_shape[0] != cfg.rank || b_shape[1] != cfg.rank {
            return Err(Error::model(
                first.join(WEIGHTS),
                format!(
                    "tensors {a_name} {a_shape:?} and {b_name} {b_shape:?} do not have rank r = {} of {}",
                    cfg.rank,
                    first.join(CONFIG).display()
                ),
            ));
        }
        for (m, t) in members.iter().zip(&tensors) {
            let (ta, tb) = (&t[a_name], &t[b_name]);
            if ta.dims() != a_shape.as_slice() || tb.dims() != b_shape.as_slice() {
                return Err(Error::model(
                    m.join(WEIGHTS),
                    format!(
                        "tensors {a_name} {:?} and {b_name} {:?} differ in shape from {}'s {a_shape:?} and {b_shape:?}",
                        ta.dims(),
                        tb.dims(),
                        first.display()
                    ),
                ));
            }
        }
        let a = Tensor::cat(&tensors.iter().map(|t| &t[a_name]).collect::<Vec<_>>(), 0)?;
        // A true division in f32 (Tensor / f64 multiplies by the reciprocal).
        let b = Tensor::cat(&tensors.iter().map(|t| &t[b_name]).collect::<Vec<_>>(), 1)?
            .broadcast_div(&n_t)?;
        souped.insert(a_name.clone(), a);
        souped.insert(b_name.clone(), b);
    }

    // Check every module: the soup's update against the members' mean.
    let mut worst = 0.0f64;
    for (a_name, b_name) in modules.values() {
        let mut mean: Option<Tensor> = None;
        for t in &tensors {
            let u = t[b_name]
                .to_dtype(DType::F64)?
                .matmul(&t[a_name].to_dtype(DType::F64)?)?;
            mean = Some(match mean {
                None => u,
                Some(m) => (m + u)?,
            });
        }
        let mean = (mean.expect("two or more members") / n as f64)?;
        let got = souped[b_name]
            .to_dtype(DType::F64)?
            .matmul(&souped[a_name].to_dtype(DType::F64)?)?;
        let err = (got - &mean)?
            .abs()?
            .flatten_all()?
            .max(0)?
            .to_scalar::<f64>()?;
        let size = mean.abs()?.flatten_all()?.max(0)?.to_scalar::<f64>()?;
        if size > 0.0 {
            worst = worst.max(err / size);
        } else if err > 0.0 {
            worst = f64::INFINITY;
        }
    }
    if worst.is_nan() || worst > 1e-5 {
        return Err(Error::Input(format!(
            "the soup's update differs from the members' mean by {worst:.2e} of its largest entry (limit 1e-5)"
        )));
    }

    let mut out_cfg = raw.clone();
    out_cfg["r"] = serde_json::json!(n * cfg.rank);
    out_cfg["lora_alpha"] = serde_json::json!(n as f64 * cfg.alpha);
    write_json(&out.join(CONFIG), &out_cfg)?;
    write_safetensors(&out.join(WEIGHTS), &souped)?;
    let record = serde_json::json!({
        "members": members.iter().map(|m| m.display().to_string()).collect::<Vec<_>>(),
        "member_rank": cfg.rank,
        "member_lora_alpha": cfg.alpha,
        "max_relative_error": worst,
        "command": command,
    });
    write_json(&out.join(SOUP_RECORD), &record)?;
    Ok(Soup {
        members: n,
        member_rank: cfg.rank,
        rank: n * cfg.rank,
        alpha: n as f64 * cfg.alpha,
        modules: modules.len(),
        max_relative_error: worst,
    })
}

fn raw_config(dir: &Path) -> Result<serde_json::Value> {
    let path = dir.join(CONFIG);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::model(&path, e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| Error::model(&path, format!("line {}: {e}", e.line())))
}

fn differs(
    path: &Path,
    field: &str,
    got: Option<&serde_json::Value>,
    want: Option<&serde_json::Value>,
    first: &Path,
) -> Error {
    let show = |v: Option<&serde_json::Value>| v.map_or("(missing)".to_string(), |v| v.to_string());
    Error::model(
        path,
        format!(
            "field {field} {} differs from {}'s {}",
            show(got),
            first.display(),
            show(want)
        ),
    )
}

/// The adapter's tensors as f32 on the CPU; any other dtype or a tensor
/// that is not a matrix is an error naming it.
fn load_weights(dir: &Path) -> Result<HashMap<String, Tensor>> {
    let path = dir.join(WEIGHTS);
    if !path.exists() {
        return Err(Error::model(&path, "missing (a PEFT adapter directory holds adapter_config.json and adapter_model.safetensors)"));
    }
    let tensors = candle_core::safetensors::load(&path, &Device::Cpu)
        .map_err(|e| Error::model(&path, e.to_string()))?;
    for (name, t) in &tensors {
        if t.dtype() != DType::F32 {
            return Err(Error::model(
                &path,
                format!("tensor {name} has dtype {:?}, expected F32", t.dtype()),
            ));
        }
        if t.rank() != 2 {
            return Err(Error::model(
                &path,
                format!("tensor {name} has shape {:?}, expected a matrix", t.dims()),
            ));
        }
    }
    Ok(tensors)
}

/// Module name -> (its `lora_A` tensor name, its `lora_B` tensor name).
fn pair_modules(
    tensors: &HashMap<String, Tensor>,
    path: &Path,
) -> Result<BTreeMap<String, (String, String)>> {
    let mut a = BTreeMap::new();
    let mut b = BTreeMap::new();
    for name in tensors.keys() {
        if let Some((module, _)) = name.split_once(".lora_A.") {
            a.insert(module.to_string(), name.clone());
        } else if let Some((module, _)) = name.split_once(".lora_B.") {
            b.insert(module.to_string(), name.clone());
        } else {
            return Err(Error::model(
                path,
                format!("tensor {name} is neither lora_A nor lora_B; cannot soup it"),
            ));
        }
    }
    let mut out = BTreeMap::new();
    for (module, a_name) in a {
        let b_name = b
            .remove(&module)
            .ok_or_else(|| Error::model(path, format!("tensor {a_name} has no lora_B partner")))?;
        out.insert(module, (a_name, b_name));
    }
    if let Some(b_name) = b.values().next() {
        return Err(Error::model(
            path,
            format!("tensor {b_name} has no lora_A partner"),
        ));
    }
    if out.is_empty() {
        return Err(Error::model(path, "holds no LoRA tensors"));
    }
    Ok(out)
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).expect("json value");
    text.push('\n');
    Ok(ocrank_data::write_whole(path, text.as_bytes())?)
}
