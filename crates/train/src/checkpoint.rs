//! Gradient checkpointing at layer boundaries.
//!
//! A whole-graph backward keeps every layer's activations (attention
//! probabilities above all) alive at once: about 12 GB for one ~900-token
//! view of SmolLM2-135M, so OC-SFT's two views do not fit in 24 GB. Here the
//! forward keeps only each layer's input (`n x hidden`), and the backward
//! recomputes one layer at a time: with `g` the gradient at a layer's
//! output, the gradient of `sum(layer(x) * g)` gives the layer's LoRA
//! gradients and `g` for the layer below. Same gradients (the
//! finite-difference test runs through this path), one extra forward.

use std::collections::HashMap;

use candle_core::{Tensor, TensorId, Var};
use ocrank_engine::{Decoder, Staged};

use crate::error::{Error, Result};
use crate::loss::WindowInput;

/// Gradients of the LoRA variables by tensor id.
pub type Grads = HashMap<TensorId, Tensor>;

/// A view's forward, kept at layer boundaries.
pub struct ViewRun {
    staged: Staged,
    /// `xs[i]` is layer i's input (detached); `xs[L]` the last output.
    xs: Vec<Tensor>,
    readout: Vec<usize>,
}

/// Forward without keeping a graph beyond one layer.
pub fn forward(decoder: &Decoder, input: &WindowInput, dropout: Option<u64>) -> Result<ViewRun> {
    let (x0, staged) = decoder.stage(&input.forward_input(dropout))?;
    let mut xs = Vec::with_capacity(decoder.layers.len() + 1);
    xs.push(x0.detach());
    for i in 0..decoder.layers.len() {
        let y = decoder.stage_layer(i, &xs[i], &staged)?.detach();
        xs.push(y);
    }
    Ok(ViewRun {
        staged,
        xs,
        readout: input.readout.clone(),
    })
}

impl ViewRun {
    /// The slot logits with a graph from the last hidden state, which is
    /// returned as a variable so that its gradient can be read.
    pub fn head(&self, decoder: &Decoder) -> Result<(Var, Tensor)> {
        let top = Var::from_tensor(self.xs.last().expect("layers"))?;
        let logits = decoder.stage_head(top.as_tensor(), &self.readout)?;
        Ok((top, logits))
    }

    /// Slot logits without any graph (teachers, the base model).
    pub fn logits(&self, decoder: &Decoder) -> Result<Tensor> {
        Ok(decoder
            .stage_head(self.xs.last().expect("layers"), &self.readout)?
            .detach())
    }

    /// Back-propagates `g_top` (the gradient at the last hidden state) layer
    /// by layer, adding the LoRA gradients into `grads`.
    pub fn backward(
        &self,
        decoder: &Decoder,
        vars: &[(String, Var)],
        g_top: &Tensor,
        grads: &mut Grads,
    ) -> Result<()> {
        let mut g = g_top.detach();
        for i in (0..decoder.layers.len()).rev() {
            let x = Var::from_tensor(&self.xs[i])?;
            let y = decoder.stage_layer(i, x.as_tensor(), &self.staged)?;
            let store = (y * &g)?.sum_all()?.backward()?;
            for (_, v) in vars {
                if let Some(gv) = store.get(v.as_tensor()) {
                    let e = grads.entry(v.id());
                    match e {
                        std::collections::hash_map::Entry::Occupied(mut o) => {
                            let sum = (o.get() + gv)?;
                            o.insert(sum);
                        }
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            slot.insert(gv.clone());
                        }
                    }
                }
            }
            if i > 0 {
                g = store
                    .get(x.as_tensor())
                    .ok_or_else(|| Error::Train(format!("no gradient reached layer {i}'s input")))?
                    .detach();
            }
        }
        Ok(())
    }
}
