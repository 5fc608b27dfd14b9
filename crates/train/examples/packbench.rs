//! Time one checkpointed forward + backward of K windows run one by one
//! against the same K windows packed into one forward (block-diagonal
//! attention, positions restarting per window), on a random decoder of
//! SmolLM2-135M's shape with LoRA r16 on every projection.
//!
//!   cargo run --release -p ocrank-train --example packbench -- [TOKENS] [K] [REPS]

use std::time::Instant;

use candle_core::{DType, Device};
use ocrank_engine::{Decoder, Kernels, LoraConfig, MaskLayout, ModelConfig};
use ocrank_train::checkpoint;
use ocrank_train::loss::WindowInput;

fn window(n: usize, seed: u32) -> WindowInput {
    let tokens = (0..n as u32)
        .map(|i| (i * 7919 + seed * 104_729) % 49_000)
        .collect();
    WindowInput {
        tokens,
        positions: (0..n as u32).collect(),
        mask: MaskLayout::causal(n),
        readout: vec![n / 2, n - 1],
    }
}

fn packed(ws: &[WindowInput]) -> WindowInput {
    let mut p = WindowInput {
        tokens: vec![],
        positions: vec![],
        mask: MaskLayout::default(),
        readout: vec![],
    };
    for (b, w) in ws.iter().enumerate() {
        let off = p.tokens.len();
        p.tokens.extend(&w.tokens);
        p.positions.extend(&w.positions);
        p.mask
            .block
            .extend(std::iter::repeat_n(b as u32, w.tokens.len()));
        p.mask.hidden.extend(&w.mask.hidden);
        p.readout.extend(w.readout.iter().map(|r| r + off));
    }
    p
}

fn step(d: &Decoder, w: &WindowInput, key: Option<u64>) -> f64 {
    let run = checkpoint::forward(d, w, key).unwrap();
    let (top, logits) = run.head(d).unwrap();
    let loss = logits.narrow(1, 0, 8).unwrap().sum_all().unwrap();
    let g = loss.backward().unwrap();
    let mut grads = Default::default();
    run.backward(
        d,
        &d.lora_vars(),
        g.get(top.as_tensor()).unwrap(),
        &mut grads,
    )
    .unwrap();
    loss.to_scalar::<f32>().unwrap() as f64
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (n, k, reps) = (
        *args.first().unwrap_or(&295),
        *args.get(1).unwrap_or(&10),
        *args.get(2).unwrap_or(&2),
    );
    let mut d = Decoder::random(ModelConfig::smollm2_135m(), 1, DType::F32, &Device::Cpu).unwrap();
    d.kernels = Kernels::Composite;
    d.attach_lora(&LoraConfig::default(), 2).unwrap();
    let ws: Vec<WindowInput> = (0..k as u32).map(|s| window(n, s)).collect();
    let p = packed(&ws);
    for r in 0..reps {
        let t = Instant::now();
        let a: f64 = ws.iter().map(|w| step(&d, w, Some(9))).sum();
        let one = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = step(&d, &p, Some(9));
        let pk = t.elapsed().as_secs_f64();
        println!("rep {r}: {k} x {n} tokens one by one {one:.2} s, packed {pk:.2} s, ratio {:.2} (losses {a:.4} {b:.4})", one / pk);
    }
}
