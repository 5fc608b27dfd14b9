//! Several independent forwards run as one: sequences side by side in one
//! token row, each in blocks of its own, with its own position ids. The
//! attention never crosses sequences (the mask layout keeps blocks apart
//! and the chunk planner only multiplies a block against itself), while the
//! projections and MLPs run as one large matrix product: how a GPU scores
//! many windows at once without padding them to one length.

use candle_core::Tensor;

use crate::error::{Error, Result};
use crate::model::{ForwardInput, MaskLayout};

/// The concatenation of several [`ForwardInput`]s (see [`pack`]).
#[derive(Debug, Clone, Default)]
pub struct Packed {
    pub tokens: Vec<u32>,
    pub positions: Vec<u32>,
    pub mask: MaskLayout,
    pub readout: Vec<usize>,
    /// Readout rows per packed input, in order.
    pub readout_counts: Vec<usize>,
}

/// Packs forwards that have no cached prefix and keep no cache. Block ids
/// are renumbered so that no two inputs share one.
pub fn pack(inputs: &[ForwardInput]) -> Result<Packed> {
    let mut p = Packed::default();
    let mut next_block = 0u32;
    for (i, input) in inputs.iter().enumerate() {
        if input.prefix.is_some()
            || input.keep_cache
            || input.dropout.is_some()
            || input.mask.shared > 0
        {
            return Err(Error::Input(format!(
                "packed input {i}: packing takes forwards without a cached or shared prefix, kept cache or dropout"
            )));
        }
        input.check_lengths(&format!("packed input {i}"))?;
        let offset = p.tokens.len();
        let mut ids = std::collections::HashMap::new();
        for &b in &input.mask.block {
            let id = *ids.entry(b).or_insert_with(|| {
                next_block += 1;
                next_block - 1
            });
            p.mask.block.push(id);
        }
        p.tokens.extend_from_slice(input.tokens);
        p.positions.extend_from_slice(input.positions);
        p.mask.hidden.extend_from_slice(&input.mask.hidden);
        p.readout.extend(input.readout.iter().map(|r| r + offset));
        p.readout_counts.push(input.readout.len());
    }
    Ok(p)
}

impl Packed {
    pub fn input(&self) -> ForwardInput<'_> {
        ForwardInput::whole(&self.tokens, &self.positions, &self.mask, &self.readout)
    }

    /// Splits the packed readout logits `[sum of readouts, vocab]` back into
    /// one tensor per packed input.
    pub fn split(&self, logits: &Tensor) -> Result<Vec<Tensor>> {
        let mut out = Vec::with_capacity(self.readout_counts.len());
        let mut at = 0;
        for &n in &self.readout_counts {
            out.push(logits.narrow(0, at, n)?);
            at += n;
        }
        Ok(out)
    }
}
