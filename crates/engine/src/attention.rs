//! Attention over a shared prefix, chunked by query rows so that work
//! follows the mask: a chunk of queries only multiplies against the keys its
//! rows may see (the prefix plus a contiguous run of new tokens). Causal
//! windows then cost about half of a dense pass, and invariant blocks only
//! see the prefix and themselves.
//!
//! On the CPU the masked softmax is one fused pass ([`MaskedSoftmax`]),
//! with a backward for training; on a GPU it is candle's softmax (inference)
//! or built from candle ops (training).

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, DType, Device, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::error::Result;
use crate::model::MaskLayout;

/// Query rows per chunk (within one block) on the CPU, where a chunk's
/// scores should stay in cache. On a GPU a chunk is a whole block (up to
/// [`GPU_CHUNK_ROWS`] rows): fewer, larger kernels.
pub const CPU_CHUNK_ROWS: usize = 256;
pub const GPU_CHUNK_ROWS: usize = 8192;

/// One chunk of query rows and the keys they may see.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Query rows `q_start .. q_start + q_len` of the new tokens.
    pub q_start: usize,
    pub q_len: usize,
    /// New-token keys `k_start .. k_start + k_len` (after the whole prefix
    /// and the lead).
    pub k_start: usize,
    pub k_len: usize,
    /// The first `lead` new tokens (the layout's shared prefix), seen by
    /// every row of a chunk that starts after them; 0 otherwise.
    pub lead: usize,
    /// Additive mask `[q_len, prefix_len + lead + k_len]`.
    pub mask: Tensor,
}

/// Cuts the new tokens into chunks of rows that share a block, at most
/// `max_rows` long, each with the smallest key range its rows can see.
///
/// On the CPU the masks are filled on the host; elsewhere they are computed
/// on the device from the block ids and hidden flags (a mask is quadratic in
/// the chunk, the ids are linear: copying masks to a GPU would cost more than
/// the attention).
pub fn plan_chunks(
    layout: &MaskLayout,
    prefix_len: usize,
    max_rows: usize,
    dtype: DType,
    device: &Device,
) -> Result<Vec<Chunk>> {
    let n = layout.block.len();
    let max_rows = max_rows.max(1);
    let ids = if device.is_cpu() {
        None
    } else {
        Some(DeviceIds::new(layout, device)?)
    };
    let mut chunks = Vec::new();
    let mut first_of_block = std::collections::HashMap::new();
    let mut a = 0;
    while a < n {
        let block = layout.block[a];
        let mut b = a + 1;
        while b < n && b - a < max_rows && layout.block[b] == block {
            b += 1;
        }
        // Keys a row may see are in its block and not after it, plus the
        // shared prefix; a block that overlaps the shared prefix reads it as
        // part of one contiguous run from 0.
        let mut k_start = *first_of_block.entry(block).or_insert(a);
        let lead = if layout.shared == 0 {
            0
        } else if k_start < layout.shared {
            k_start = 0;
            0
        } else {
            layout.shared
        };
        // The lead's keys are all visible (they precede every row and none is
        // hidden: checked with the input's lengths), like the cached prefix's.
        let visible = prefix_len + lead;
        let mask = match &ids {
            None => host_mask(layout, a, b, k_start, visible, dtype, device)?,
            Some(ids) => ids.mask(a, b, k_start, visible, dtype)?,
        };
        chunks.push(Chunk {
            q_start: a,
            q_len: b - a,
            k_start,
            k_len: b - k_start,
            lead,
            mask,
        });
        a = b;
    }
    Ok(chunks)
}

/// The additive mask of rows `a..b` over `prefix_len` leading keys that every
/// row sees (cached prefix and shared lead) and keys `k_start..b`, filled on
/// the host.
fn host_mask(
    layout: &MaskLayout,
    a: usize,
    b: usize,
    k_start: usize,
    prefix_len: usize,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let width = prefix_len + b - k_start;
    let mut data = vec![0f32; (b - a) * width];
    for (i, q) in (a..b).enumerate() {
        let row = &mut data[i * width + prefix_len..(i + 1) * width];
        for (j, v) in row.iter_mut().enumerate() {
            if !layout.allowed(q, k_start + j) {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    Ok(Tensor::from_vec(data, (b - a, width), device)?.to_dtype(dtype)?)
}

/// Token index, block id and hidden flag of every new token, on the device,
/// from which [`MaskLayout::allowed`] is evaluated with tensor ops.
struct DeviceIds {
    index: Tensor,
    block: Tensor,
    visible: Tensor,
}

impl DeviceIds {
    fn new(layout: &MaskLayout, device: &Device) -> Result<Self> {
        let n = layout.block.len();
        let index: Vec<u32> = (0..n as u32).collect();
        let visible: Vec<u8> = layout.hidden.iter().map(|&h| u8::from(!h)).collect();
        Ok(DeviceIds {
            index: Tensor::from_vec(index, n, device)?,
            block: Tensor::from_slice(&layout.block, n, device)?,
            visible: Tensor::from_vec(visible, n, device)?,
        })
    }

    /// Rows `a..b`, keys `k_start..b`: key k is allowed for query q when
    /// k == q, or k < q in the same block and not hidden.
    fn mask(
        &self,
        a: usize,
        b: usize,
        k_start: usize,
        prefix_len: usize,
        dtype: DType,
    ) -> Result<Tensor> {
        let (rows, keys) = (b - a, b - k_start);
        let col = |t: &Tensor, start: usize, len: usize| t.narrow(0, start, len)?.reshape((len, 1));
        let row = |t: &Tensor, start: usize, len: usize| t.narrow(0, start, len)?.reshape((1, len));
        let (qi, ki) = (col(&self.index, a, rows)?, row(&self.index, k_start, keys)?);
        let same = col(&self.block, a, rows)?.broadcast_eq(&row(&self.block, k_start, keys)?)?;
        let earlier = ki.broadcast_lt(&qi)?;
        let visible = row(&self.visible, k_start, keys)?;
        let seen = same.mul(&earlier)?.broadcast_mul(&visible)?;
        let allowed = seen.maximum(&ki.broadcast_eq(&qi)?)?;
        let device = self.index.device();
        let zeros = Tensor::zeros((rows, keys), dtype, device)?;
        let blocked = Tensor::full(f32::NEG_INFINITY, (rows, keys), device)?.to_dtype(dtype)?;
        let mask = allowed.where_cond(&zeros, &blocked)?;
        Ok(if prefix_len == 0 {
            mask
        } else {
            Tensor::cat(
                &[&Tensor::zeros((rows, prefix_len), dtype, device)?, &mask],
                1,
            )?
        })
    }
}

/// softmax(scores + mask) over the last axis, where `scores` is
/// `[.., rows, keys]` and the mask `[mask_rows, keys]` repeats every
/// `mask_rows` rows. One pass on the CPU (f32 and f64). Applied with
/// [`Tensor::apply_op2`] it is differentiable in `scores` (the mask is a
/// constant): the backward is `y * (g - sum(g * y))` over each row, in
/// candle ops, so training keeps one fused forward instead of the six ops
/// (and their backward chains) of the composite softmax.
pub struct MaskedSoftmax;

/// The float types the CPU kernel runs in.
trait Real: Copy + Send + Sync + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    const NEG_INFINITY: Self;
    const ZERO: Self;
    fn exp(self) -> Self;
    fn max(self, other: Self) -> Self;
    fn recip(self) -> Self;
    fn mul(self, other: Self) -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const ZERO: Self = 0.0;
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            fn recip(self) -> Self {
                1.0 / self
            }
            fn mul(self, other: Self) -> Self {
                self * other
            }
        }
    };
}
real!(f32);
real!(f64);

fn masked_softmax_rows<T: Real>(scores: &[T], mask: &[T], keys: usize) -> Vec<T> {
    let mask_rows = mask.len() / keys;
    let mut out = vec![T::ZERO; scores.len()];
    out.par_chunks_mut(keys)
        .zip(scores.par_chunks(keys))
        .enumerate()
        .for_each(|(r, (o, s))| {
            let m = &mask[(r % mask_rows) * keys..(r % mask_rows + 1) * keys];
            let mut max = T::NEG_INFINITY;
            for (x, (&sv, &mv)) in o.iter_mut().zip(s.iter().zip(m)) {
                *x = sv + mv;
                max = max.max(*x);
            }
            let mut sum = T::ZERO;
            for x in o.iter_mut() {
                *x = (*x - max).exp();
                sum = sum + *x;
            }
            let inv = sum.recip();
            for x in o.iter_mut() {
                *x = x.mul(inv);
            }
        });
    out
}

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (Some((o1, e1)), Some((o2, e2))) = (l1.contiguous_offsets(), l2.contiguous_offsets())
        else {
            candle_core::bail!("masked-softmax needs contiguous inputs");
        };
        let keys = l1.dims()[l1.dims().len() - 1];
        let (n_scores, n_mask) = (e1 - o1, e2 - o2);
        if keys == 0 || n_mask % keys != 0 || n_mask == 0 || n_scores % n_mask != 0 {
            candle_core::bail!(
                "masked-softmax: mask {:?} does not tile scores {:?}",
                l2.dims(),
                l1.dims()
            );
        }
        let out = match (s1, s2) {
            (CpuStorage::F32(s), CpuStorage::F32(m)) => {
                CpuStorage::F32(masked_softmax_rows(&s[o1..e1], &m[o2..e2], keys))
            }
            (CpuStorage::F64(s), CpuStorage::F64(m)) => {
                CpuStorage::F64(masked_softmax_rows(&s[o1..e1], &m[o2..e2], keys))
            }
            _ => candle_core::bail!(
                "masked-softmax: scores {:?} and mask {:?} must both be f32 or both f64",
                s1.dtype(),
                s2.dtype()
            ),
        };
        Ok((out, l1.shape().clone()))
    }

    fn bwd(
        &self,
        _scores: &Tensor,
        _mask: &Tensor,
        res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let dot = (grad_res * res)?.sum_keepdim(candle_core::D::Minus1)?;
        Ok((Some((grad_res.broadcast_sub(&dot)? * res)?), None))
    }
}

/// [`MaskedSoftmax`] with its backward, where it runs (CPU, f32 or f64);
/// `None` elsewhere.
pub fn masked_softmax_differentiable(scores: &Tensor, mask: &Tensor) -> Result<Option<Tensor>> {
    if !scores.device().is_cpu() || !matches!(scores.dtype(), DType::F32 | DType::F64) {
        return Ok(None);
    }
    let mask = mask.to_dtype(scores.dtype())?.contiguous()?;
    Ok(Some(scores.contiguous()?.apply_op2(&mask, MaskedSoftmax)?))
}

/// Fused masked softmax where it exists (CPU, f32), candle ops elsewhere.
pub fn masked_softmax_fused(scores: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if scores.device().is_cpu() && scores.dtype() == DType::F32 {
        Ok(scores
            .contiguous()?
            .apply_op2_no_bwd(&mask.contiguous()?, &MaskedSoftmax)?)
    } else {
        let (rows, keys) = mask.dims2()?;
        let dims = scores.dims();
        let lead: usize =
            dims[..dims.len() - 2].iter().product::<usize>() * dims[dims.len() - 2] / rows;
        let s = scores.reshape((lead, rows, keys))?.broadcast_add(mask)?;
        let s =
            candle_nn::ops::softmax_last_dim(&s.to_dtype(DType::F32)?)?.to_dtype(scores.dtype())?;
        Ok(s.reshape(dims)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused masked softmax and its backward equal candle's ops and
    /// their autograd (f64 and f32), with a mask that tiles the rows.
    #[test]
    fn masked_softmax_backward_matches_autograd() {
        for dtype in [DType::F64, DType::F32] {
            let dev = Device::Cpu;
            let n = 2 * 3 * 5;
            let data: Vec<f64> = (0..n)
                .map(|i| ((i * 37 % 23) as f64 - 11.0) / 4.0)
                .collect();
            let scores = candle_core::Var::from_tensor(
                &Tensor::from_vec(data, (2, 3, 5), &dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap(),
            )
            .unwrap();
            let ninf = f64::NEG_INFINITY;
            let mask = Tensor::new(
                &[
                    [0.0, 0.0, ninf, 0.0, ninf],
                    [0.0, ninf, 0.0, 0.0, 0.0],
                    [ninf, 0.0, 0.0, ninf, 0.0],
                ],
                &dev,
            )
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
            let weights: Vec<f64> = (0..n).map(|i| ((i * 13 % 7) as f64) - 3.0).collect();
            let w = Tensor::from_vec(weights, (2, 3, 5), &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();

            let fused = masked_softmax_differentiable(scores.as_tensor(), &mask)
                .unwrap()
                .expect("CPU");
            let x = scores.as_tensor().broadcast_add(&mask).unwrap();
            let e = x
                .broadcast_sub(&x.max_keepdim(2).unwrap().detach())
                .unwrap()
                .exp()
                .unwrap();
            let reference = e.broadcast_div(&e.sum_keepdim(2).unwrap()).unwrap();
            let gf = (&fused * &w)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            let gr = (&reference * &w)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            let diff = |a: &Tensor, b: &Tensor| {
                (a - b)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_dtype(DType::F64)
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap()
            };
            let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
            assert!(diff(&fused, &reference) < tol, "{dtype:?} forward");
            let (a, b) = (
                gf.get(scores.as_tensor()).unwrap(),
                gr.get(scores.as_tensor()).unwrap(),
            );
            assert!(diff(a, b) < tol, "{dtype:?} backward: {a} vs {b}");
            assert!(
                a.abs()
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .to_dtype(DType::F64)
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap()
                    > 0.1
            );
        }
    }

    /// The masks computed with tensor ops (the GPU path) equal the masks
    /// filled on the host, for blocks that recur, hidden keys and a prefix.
    #[test]
    fn device_masks_equal_host_masks() {
        let block = vec![0, 0, 0, 1, 1, 2, 2, 2, 2, 0, 0, 3];
        let hidden = vec![
            false, true, false, false, true, false, true, false, false, false, true, false,
        ];
        let layout = MaskLayout {
            block,
            hidden,
            shared: 0,
        };
        let ids = DeviceIds::new(&layout, &Device::Cpu).unwrap();
        for prefix in [0, 3] {
            for rows in [1, 2, 3, 100] {
                let host = plan_chunks(&layout, prefix, rows, DType::F32, &Device::Cpu).unwrap();
                assert!(host.len() >= 5);
                for c in &host {
                    let (a, b) = (c.q_start, c.q_start + c.q_len);
                    let dev = ids.mask(a, b, c.k_start, prefix, DType::F32).unwrap();
                    let h: Vec<Vec<f32>> = c.mask.to_vec2().unwrap();
                    let d: Vec<Vec<f32>> = dev.to_vec2().unwrap();
                    assert_eq!(h, d, "rows {a}..{b}, prefix {prefix}");
                }
            }
        }
        // Every row sees itself, and a hidden key is seen by nobody else.
        let chunks = plan_chunks(&layout, 0, 100, DType::F32, &Device::Cpu).unwrap();
        let m: Vec<Vec<f32>> = chunks[0].mask.to_vec2().unwrap();
        assert_eq!(m[2], vec![0.0, f32::NEG_INFINITY, 0.0]);
    }
}
