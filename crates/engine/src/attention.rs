//! Attention over a shared prefix, chunked by query rows so that work
//! follows the mask: a chunk of queries only multiplies against the keys its
//! rows may see (the prefix plus a contiguous run of new tokens). Causal
//! windows then cost about half of a dense pass, and invariant blocks only
//! see the prefix and themselves.
//!
//! On CPU in f32 the scale-free masked softmax is one fused pass
//! ([`MaskedSoftmax`]); elsewhere, and always in the differentiable
//! (`Composite`) kernels, it is built from candle ops.

use candle_core::{CpuStorage, CustomOp2, DType, Device, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::error::Result;
use crate::model::MaskLayout;

/// Query rows per chunk (within one block).
const CHUNK_ROWS: usize = 256;

/// One chunk of query rows and the keys they may see.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Query rows `q_start .. q_start + q_len` of the new tokens.
    pub q_start: usize,
    pub q_len: usize,
    /// New-token keys `k_start .. k_start + k_len` (after the whole prefix).
    pub k_start: usize,
    pub k_len: usize,
    /// Additive mask `[q_len, prefix_len + k_len]`.
    pub mask: Tensor,
}

/// Cuts the new tokens into chunks of rows that share a block, at most
/// [`CHUNK_ROWS`] long, each with the smallest key range its rows can see.
pub fn plan_chunks(
    layout: &MaskLayout,
    prefix_len: usize,
    dtype: DType,
    device: &Device,
) -> Result<Vec<Chunk>> {
    let n = layout.block.len();
    let mut chunks = Vec::new();
    let mut a = 0;
    while a < n {
        let block = layout.block[a];
        let mut b = a + 1;
        while b < n && b - a < CHUNK_ROWS && layout.block[b] == block {
            b += 1;
        }
        // Keys a row may see are in its block and not after it.
        let k_start = layout.block[..a]
            .iter()
            .position(|&x| x == block)
            .unwrap_or(a);
        let k_len = b - k_start;
        let width = prefix_len + k_len;
        let mut data = vec![0f32; (b - a) * width];
        for (i, q) in (a..b).enumerate() {
            let row = &mut data[i * width + prefix_len..(i + 1) * width];
            for (j, v) in row.iter_mut().enumerate() {
                if !layout.allowed(q, k_start + j) {
                    *v = f32::NEG_INFINITY;
                }
            }
        }
        let mask = Tensor::from_vec(data, (b - a, width), device)?.to_dtype(dtype)?;
        chunks.push(Chunk {
            q_start: a,
            q_len: b - a,
            k_start,
            k_len,
            mask,
        });
        a = b;
    }
    Ok(chunks)
}

/// softmax(scores + mask) over the last axis, where `scores` is
/// `[.., rows, keys]` and the mask `[mask_rows, keys]` repeats every
/// `mask_rows` rows. Inference only (no backward).
pub struct MaskedSoftmax;

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
        let scores = &s1.as_slice::<f32>()?[o1..e1];
        let mask = &s2.as_slice::<f32>()?[o2..e2];
        let keys = l1.dims()[l1.dims().len() - 1];
        if mask.len() % keys != 0 || scores.len() % mask.len() != 0 {
            candle_core::bail!(
                "masked-softmax: mask {:?} does not tile scores {:?}",
                l2.dims(),
                l1.dims()
            );
        }
        let mask_rows = mask.len() / keys;
        let mut out = vec![0f32; scores.len()];
        out.par_chunks_mut(keys)
            .zip(scores.par_chunks(keys))
            .enumerate()
            .for_each(|(r, (o, s))| {
                let m = &mask[(r % mask_rows) * keys..(r % mask_rows + 1) * keys];
                let mut max = f32::NEG_INFINITY;
                for (x, (&sv, &mv)) in o.iter_mut().zip(s.iter().zip(m)) {
                    *x = sv + mv;
                    max = max.max(*x);
                }
                let mut sum = 0f32;
                for x in o.iter_mut() {
                    *x = (*x - max).exp();
                    sum += *x;
                }
                let inv = 1.0 / sum;
                for x in o.iter_mut() {
                    *x *= inv;
                }
            });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
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
