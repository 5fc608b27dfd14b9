//! `x W^T` for a frozen weight, with a backward that computes only the
//! input's gradient.
//!
//! candle's matmul backward always computes (and stores) the gradient of
//! both operands, even of a weight that is not a variable: for LoRA training
//! that is one extra weight-sized matmul per projection and a weight-sized
//! buffer per projection that nobody reads (about a third of the step's
//! FLOPs and the model's size in memory). This op runs the same matmul on
//! the backend's storage (CPU or CUDA) and returns a gradient only for `x`.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, Layout, Shape, Tensor};

use crate::error::Result;

struct FrozenMatmul;

/// Batch, rows, columns and inner size of a matmul, as candle's backends take them.
type Bmnk = (usize, usize, usize, usize);

/// `(bmnk, layout of W^T, output shape)` for `x: [n, in]`, `W: [out, in]`.
fn plan(lx: &Layout, lw: &Layout) -> candle_core::Result<(Bmnk, Layout, Shape)> {
    let (n, k) = lx.shape().dims2()?;
    let (out, kw) = lw.shape().dims2()?;
    if k != kw {
        candle_core::bail!("frozen matmul: x is [{n}, {k}] but W is [{out}, {kw}]");
    }
    Ok(((1, n, out, k), lw.transpose(0, 1)?, Shape::from((n, out))))
}

impl CustomOp2 for FrozenMatmul {
    fn name(&self) -> &'static str {
        "frozen-matmul"
    }

    fn cpu_fwd(
        &self,
        sx: &CpuStorage,
        lx: &Layout,
        sw: &CpuStorage,
        lw: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (bmnk, lwt, shape) = plan(lx, lw)?;
        Ok((sx.matmul(sw, bmnk, lx, &lwt)?, shape))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        sx: &candle_core::CudaStorage,
        lx: &Layout,
        sw: &candle_core::CudaStorage,
        lw: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        let (bmnk, lwt, shape) = plan(lx, lw)?;
        Ok((sx.matmul(sw, bmnk, lx, &lwt)?, shape))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(grad_res.matmul(w)?), None))
    }
}

/// `x W^T` (`x: [n, in]`, `W: [out, in]`); when `x` carries a gradient and
/// `W` does not, the backward skips the weight's gradient.
pub fn matmul_t(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let frozen_backend = x.device().is_cpu() || x.device().is_cuda();
    if x.track_op() && !w.track_op() && x.rank() == 2 && frozen_backend {
        Ok(x.contiguous()?.apply_op2(w, FrozenMatmul)?)
    } else {
        Ok(x.matmul(&w.t()?)?)
    }
}
