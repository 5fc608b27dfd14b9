//! `x W^T` for a frozen weight, with a backward that computes only the
//! input's gradient.
//!
//! candle's matmul backward always computes (and stores) the gradient of
//! both operands, even of a weight that is not a variable: for LoRA training
//! that is one extra weight-sized matmul per projection and a weight-sized
//! buffer per projection that nobody reads (about a third of the step's
//! FLOPs and the model's size in memory). This op runs the same forward and
//! returns `grad W` only for `x`.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};

use crate::error::Result;

struct FrozenMatmul {
    /// `[out, in]`
    w: Tensor,
}

macro_rules! fwd_as {
    ($self:ident, $v:ident, $l:ident, $variant:ident, $t:ty) => {{
        let (start, end) = $l.contiguous_offsets().ok_or_else(|| {
            candle_core::Error::Msg("frozen matmul: input must be contiguous".into())
        })?;
        let x = Tensor::from_slice(&$v[start..end], $l.shape(), &candle_core::Device::Cpu)?;
        let y = x.matmul(&$self.w.t()?)?;
        let shape = y.shape().clone();
        let data = y.flatten_all()?.to_vec1::<$t>()?;
        Ok((CpuStorage::$variant(data), shape))
    }};
}

impl CustomOp1 for FrozenMatmul {
    fn name(&self) -> &'static str {
        "frozen-matmul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        match s {
            CpuStorage::F32(v) => fwd_as!(self, v, l, F32, f32),
            CpuStorage::F64(v) => fwd_as!(self, v, l, F64, f64),
            CpuStorage::BF16(v) => fwd_as!(self, v, l, BF16, half::bf16),
            CpuStorage::F16(v) => fwd_as!(self, v, l, F16, half::f16),
            _ => Err(candle_core::Error::Msg(
                "frozen matmul: unsupported dtype".into(),
            )),
        }
    }

    fn bwd(
        &self,
        _arg: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(grad_res.matmul(&self.w)?))
    }
}

/// `x W^T` (`x: [n, in]`, `W: [out, in]`); when `x` carries a gradient on
/// the CPU the backward skips the weight's gradient.
pub fn matmul_t(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    if x.track_op() && x.device().is_cpu() && !w.track_op() && x.rank() == 2 {
        Ok(x.contiguous()?.apply_op1(FrozenMatmul { w: w.clone() })?)
    } else {
        Ok(x.matmul(&w.t()?)?)
    }
}
