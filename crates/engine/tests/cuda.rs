//! The engine on an NVIDIA GPU against the same engine on the CPU (built
//! only with `--features cuda`; needs a GPU: run by scripts/device-check.sh
//! on the device machine). Tiny random models of each family, the same
//! weights on both devices:
//! - forwards with a cached prefix, blocks, hidden keys and packing agree,
//!   in f32 closely and in bf16 within bf16's precision;
//! - the attention masks built on the GPU equal the host's (through the
//!   forwards: a wrong mask changes the logits);
//! - LoRA gradients through the composite kernels and the frozen-weight
//!   matmul agree, and every adapter tensor gets a non-zero gradient;
//! - LoRA dropout drawn on the GPU is reproducible from its key.
#![cfg(feature = "cuda")]

use std::collections::HashMap;

use ocrank_engine::{
    pack, Arch, DType, Decoder, Device, DeviceSpec, ForwardInput, Kernels, LoraConfig, MaskLayout,
    ModelConfig, Tensor,
};

const ARCHS: [Arch; 3] = [Arch::Llama, Arch::Qwen2, Arch::Qwen3];

fn gpu() -> Device {
    DeviceSpec::Cuda(0)
        .open()
        .expect("these tests need a CUDA GPU (run them on the device machine)")
}

fn tokens(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 7 + salt * 13 + 3) % 64)
        .collect()
}

fn host(t: &Tensor) -> Vec<Vec<f32>> {
    t.to_dtype(DType::F32).unwrap().to_vec2::<f32>().unwrap()
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn softmax_rows(l: &[Vec<f32>]) -> Vec<Vec<f32>> {
    l.iter()
        .map(|r| {
            let m = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = r.iter().map(|x| (x - m).exp()).collect();
            let s: f32 = e.iter().sum();
            e.iter().map(|x| x / s).collect()
        })
        .collect()
}

/// A window-like input: a cached prefix, then two blocks (the second
/// restarting its positions) with a hidden key, read at four rows.
struct Case {
    prefix: Vec<u32>,
    toks: Vec<u32>,
    pos: Vec<u32>,
    mask: MaskLayout,
    readout: Vec<usize>,
}

fn case() -> Case {
    let toks = tokens(30, 2);
    let mut pos: Vec<u32> = (8..26).collect();
    pos.extend(8..20);
    let mut block = vec![0; 18];
    block.extend(vec![1; 12]);
    let mut hidden = vec![false; 30];
    hidden[5] = true;
    hidden[21] = true;
    Case {
        prefix: tokens(8, 1),
        toks,
        pos,
        mask: MaskLayout {
            block,
            hidden,
            shared: 0,
        },
        readout: vec![4, 6, 17, 29],
    }
}

fn run(m: &Decoder, c: &Case) -> Vec<Vec<f32>> {
    let cache = m.prefill(&c.prefix).unwrap();
    let out = m
        .forward(&ForwardInput {
            tokens: &c.toks,
            positions: &c.pos,
            mask: &c.mask,
            prefix: Some(&cache),
            readout: &c.readout,
            keep_cache: false,
            dropout: None,
        })
        .unwrap();
    host(&out.logits)
}

#[test]
fn forwards_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    let c = case();
    for arch in ARCHS {
        let cpu = Decoder::random(ModelConfig::tiny(arch), 7, DType::F32, &Device::Cpu).unwrap();
        let want = run(&cpu, &c);
        for kernels in [Kernels::Fused, Kernels::Composite] {
            let mut g = cpu.to(DType::F32, &dev).unwrap();
            g.kernels = kernels;
            for rows in [4, 8192] {
                g.attention_rows = rows;
                let d = max_diff(&run(&g, &c), &want);
                assert!(
                    d < 1e-4,
                    "{arch:?} {kernels:?} rows {rows}: f32 logits differ by {d}"
                );
            }
            let mut b = cpu.to(DType::BF16, &dev).unwrap();
            b.kernels = kernels;
            let d = max_diff(&softmax_rows(&run(&b, &c)), &softmax_rows(&want));
            assert!(
                d < 2e-2,
                "{arch:?} {kernels:?}: bf16 probabilities differ by {d}"
            );
        }
    }
}

#[test]
fn packed_forwards_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    // tokens, positions, layout, readout rows
    type Seq = (Vec<u32>, Vec<u32>, MaskLayout, Vec<usize>);
    let seqs: Vec<Seq> = (0..5)
        .map(|i| {
            let n = 20 + 7 * i;
            let mut mask = MaskLayout::causal(n);
            mask.hidden[3 + i] = true;
            (
                tokens(n, i as u32),
                (0..n as u32).collect(),
                mask,
                vec![n / 2, n - 1],
            )
        })
        .collect();
    let inputs: Vec<ForwardInput> = seqs
        .iter()
        .map(|s| ForwardInput {
            tokens: &s.0,
            positions: &s.1,
            mask: &s.2,
            prefix: None,
            readout: &s.3,
            keep_cache: false,
            dropout: None,
        })
        .collect();
    let packed = pack(&inputs).unwrap();
    for arch in ARCHS {
        let cpu = Decoder::random(ModelConfig::tiny(arch), 3, DType::F32, &Device::Cpu).unwrap();
        let g = cpu.to(DType::F32, &dev).unwrap();
        let want = host(&cpu.forward(&packed.input()).unwrap().logits);
        let got = host(&g.forward(&packed.input()).unwrap().logits);
        let d = max_diff(&got, &want);
        assert!(d < 1e-4, "{arch:?}: packed logits differ by {d}");
        // And each packed window equals its own forward on the GPU.
        let separate: Vec<Vec<f32>> = inputs
            .iter()
            .flat_map(|i| host(&g.forward(i).unwrap().logits))
            .collect();
        let d = max_diff(&got, &separate);
        assert!(d < 1e-4, "{arch:?}: packed vs separate differ by {d}");
    }
}

/// Loss = sum of readout logits weighted by a fixed pattern; returns each
/// LoRA tensor's gradient (on the host) by name.
fn lora_grads(m: &Decoder, dropout: Option<u64>) -> HashMap<String, Vec<f32>> {
    let toks = tokens(24, 5);
    let pos: Vec<u32> = (0..24).collect();
    let mut mask = MaskLayout::causal(24);
    mask.hidden[10] = true;
    let out = m
        .forward(&ForwardInput {
            tokens: &toks,
            positions: &pos,
            mask: &mask,
            prefix: None,
            readout: &[11, 23],
            keep_cache: false,
            dropout,
        })
        .unwrap();
    let v = m.cfg.vocab_size;
    let w: Vec<f32> = (0..2 * v)
        .map(|i| ((i * 37 % 11) as f32 - 5.0) / 5.0)
        .collect();
    let w = Tensor::from_vec(w, (2, v), m.device()).unwrap();
    let loss = (out.logits * w).unwrap().sum_all().unwrap();
    let grads = loss.backward().unwrap();
    m.lora_vars()
        .into_iter()
        .map(|(name, var)| {
            let g = grads
                .get(var.as_tensor())
                .unwrap_or_else(|| panic!("{name}: no gradient"));
            (name, g.flatten_all().unwrap().to_vec1::<f32>().unwrap())
        })
        .collect()
}

#[test]
fn lora_gradients_on_the_gpu_match_the_cpu_and_reach_every_tensor() {
    let dev = gpu();
    for arch in ARCHS {
        let mut cpu =
            Decoder::random(ModelConfig::tiny(arch), 9, DType::F32, &Device::Cpu).unwrap();
        cpu.kernels = Kernels::Composite;
        let mut g = cpu.to(DType::F32, &dev).unwrap();
        let lora = LoraConfig::default();
        cpu.attach_lora(&lora, 1).unwrap();
        g.attach_lora(&lora, 1).unwrap();
        // Non-zero B on both, so that A gets a gradient too.
        let mut values = HashMap::new();
        for (i, (name, var)) in cpu.lora_vars().into_iter().enumerate() {
            let t = var.as_tensor();
            let n = t.elem_count();
            let data: Vec<f32> = (0..n)
                .map(|j| (((j * 7919 + i * 104729) % 1000) as f32 / 1000.0 - 0.5) * 0.1)
                .collect();
            values.insert(
                name,
                Tensor::from_vec(data, t.dims(), &Device::Cpu).unwrap(),
            );
        }
        cpu.set_lora(&values).unwrap();
        g.set_lora(&values).unwrap();
        let want = lora_grads(&cpu, None);
        let got = lora_grads(&g, None);
        assert_eq!(want.len(), 2 * 7 * cpu.cfg.num_layers);
        for (name, w) in &want {
            let h = &got[name];
            let norm = w.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!(norm > 0.0, "{arch:?} {name}: zero gradient on the CPU");
            let gn = h.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!(gn > 0.0, "{arch:?} {name}: zero gradient on the GPU");
            let diff = w
                .iter()
                .zip(h)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f32>()
                .sqrt();
            assert!(
                diff <= 1e-3 * norm,
                "{arch:?} {name}: |grad diff| {diff} vs |grad| {norm}"
            );
        }
        // Dropout on the GPU: the same key gives the same gradients, another
        // key others.
        let a = lora_grads(&g, Some(42));
        let b = lora_grads(&g, Some(42));
        let c = lora_grads(&g, Some(43));
        let name = "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight";
        assert!(
            a.contains_key(name),
            "adapter names: {:?}",
            a.keys().take(3).collect::<Vec<_>>()
        );
        // (A tolerance, not equality: GPU reductions may sum in another order.)
        let rel = |x: &[f32], y: &[f32]| {
            let d: f32 = x
                .iter()
                .zip(y)
                .map(|(p, q)| (p - q) * (p - q))
                .sum::<f32>()
                .sqrt();
            d / x.iter().map(|p| p * p).sum::<f32>().sqrt().max(1e-30)
        };
        let same = rel(&a[name], &b[name]);
        assert!(
            same < 1e-5,
            "{arch:?}: GPU dropout is not reproducible ({same})"
        );
        let other = rel(&a[name], &c[name]);
        assert!(
            other > 1e-3,
            "{arch:?}: GPU dropout ignores its key ({other})"
        );
    }
}
