//! Where the decoder runs and in which precision, from the user's words
//! (`--device cpu|cuda|cuda:N`, `--dtype f32|bf16|f16`).
//!
//! CPU is the default and runs in f32 (bf16 is slower on CPUs without native
//! bf16 arithmetic). On a GPU the weights and activations may be bf16/f16;
//! what needs precision stays f32 whatever the weights: the logits and the
//! softmax over grade tokens, the attention softmax, RMS-norm statistics, the
//! LoRA adapters, the loss and the optimizer state.

use std::fmt;
use std::str::FromStr;

use candle_core::{DType, Device};

use crate::error::{Error, Result};

/// A device named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    #[default]
    Cpu,
    /// An NVIDIA GPU by ordinal (needs a build with `--features cuda`).
    Cuda(usize),
}

impl FromStr for DeviceSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" | "gpu" => Ok(DeviceSpec::Cuda(0)),
            _ => match s.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(i)) => Ok(DeviceSpec::Cuda(i)),
                _ => Err(Error::Input(format!(
                    "unknown device '{s}' (expected cpu, cuda or cuda:N)"
                ))),
            },
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl DeviceSpec {
    /// Opens the device. A CUDA device in a build without the `cuda` feature,
    /// or on a machine whose driver or GPU cannot be opened, is an error that
    /// says so.
    pub fn open(self) -> Result<Device> {
        match self {
            DeviceSpec::Cpu => Ok(Device::Cpu),
            DeviceSpec::Cuda(i) => {
                if !cuda_built() {
                    return Err(Error::Input(format!(
                        "device {self}: this ocrank was built without CUDA support \
                         (rebuild with `--features cuda`, see scripts/cuda-env.sh)"
                    )));
                }
                Device::new_cuda(i)
                    .map_err(|e| Error::Input(format!("device {self}: cannot open the GPU: {e}")))
            }
        }
    }
}

/// Whether this build has candle's CUDA backend.
pub fn cuda_built() -> bool {
    cfg!(feature = "cuda")
}

/// Parses a weight precision: `f32`, `bf16`, `f16` (and `f64` for checks).
pub fn parse_dtype(s: &str) -> Result<DType> {
    match s {
        "f32" => Ok(DType::F32),
        "bf16" => Ok(DType::BF16),
        "f16" => Ok(DType::F16),
        "f64" => Ok(DType::F64),
        _ => Err(Error::Input(format!(
            "unknown dtype '{s}' (expected f32, bf16 or f16)"
        ))),
    }
}

/// The precision used when none is named: f32 on CPU, bf16 on a GPU.
pub fn default_dtype(device: &Device) -> DType {
    if device.is_cpu() {
        DType::F32
    } else {
        DType::BF16
    }
}

/// Waits for the device's queued work (GPU kernels run asynchronously), so
/// that a timer read afterwards measures the work.
pub fn synchronize(device: &Device) -> Result<()> {
    Ok(device.synchronize()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices_and_dtypes() {
        assert_eq!("cpu".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cpu);
        assert_eq!("cuda".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(0));
        assert_eq!("cuda:3".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(3));
        assert_eq!(DeviceSpec::Cuda(3).to_string(), "cuda:3");
        let err = "tpu".parse::<DeviceSpec>().unwrap_err().to_string();
        assert!(err.contains("'tpu'"), "{err}");
        assert!("cuda:x".parse::<DeviceSpec>().is_err());
        assert_eq!(parse_dtype("bf16").unwrap(), DType::BF16);
        assert!(parse_dtype("fp8").unwrap_err().to_string().contains("fp8"));
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn cuda_without_the_feature_is_a_clear_error() {
        let err = DeviceSpec::Cuda(0).open().unwrap_err().to_string();
        assert!(err.contains("--features cuda"), "{err}");
    }
}
