//! Properties of the masked, position-explicit forward on tiny random models
//! of each family (fast; no model file needed).

use ocrank_engine::{Arch, DType, Decoder, Device, ForwardInput, Kernels, MaskLayout, ModelConfig};

fn model(arch: Arch) -> Decoder {
    Decoder::random(ModelConfig::tiny(arch), 7, DType::F32, &Device::Cpu).unwrap()
}

fn tokens(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 7 + salt * 13 + 3) % 64)
        .collect()
}

fn logits(m: &Decoder, input: &ForwardInput) -> Vec<Vec<f32>> {
    m.forward(input).unwrap().logits.to_vec2::<f32>().unwrap()
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn causal(m: &Decoder, toks: &[u32], readout: &[usize]) -> Vec<Vec<f32>> {
    let pos: Vec<u32> = (0..toks.len() as u32).collect();
    logits(
        m,
        &ForwardInput {
            tokens: toks,
            positions: &pos,
            mask: &MaskLayout::causal(toks.len()),
            prefix: None,
            readout,
            keep_cache: false,
            dropout: None,
        },
    )
}

const ARCHS: [Arch; 3] = [Arch::Llama, Arch::Qwen2, Arch::Qwen3];

#[test]
fn prefix_cache_equals_one_full_forward() {
    for arch in ARCHS {
        let m = model(arch);
        let all = tokens(20, 1);
        let full = causal(&m, &all, &[12, 15, 19]);
        let cache = m.prefill(&all[..10]).unwrap();
        let pos: Vec<u32> = (10..20).collect();
        let rest = logits(
            &m,
            &ForwardInput {
                tokens: &all[10..],
                positions: &pos,
                mask: &MaskLayout::causal(10),
                prefix: Some(&cache),
                readout: &[2, 5, 9],
                keep_cache: false,
                dropout: None,
            },
        );
        assert!(max_diff(&full, &rest) < 1e-4, "{arch:?}");
    }
}

#[test]
fn blocks_with_restarted_positions_equal_separate_forwards() {
    for arch in ARCHS {
        let m = model(arch);
        let prefix = tokens(8, 2);
        let cache = m.prefill(&prefix).unwrap();
        let blocks = [tokens(5, 3), tokens(7, 4), tokens(4, 5)];
        // One forward: blocks side by side, positions restart at 8.
        let mut toks = Vec::new();
        let mut pos = Vec::new();
        let mut block = Vec::new();
        let mut readout = Vec::new();
        for (b, bt) in blocks.iter().enumerate() {
            readout.push(toks.len() + bt.len() - 1);
            toks.extend(bt);
            pos.extend((0..bt.len() as u32).map(|i| 8 + i));
            block.extend(std::iter::repeat_n(b as u32, bt.len()));
        }
        let mask = MaskLayout {
            hidden: vec![false; toks.len()],
            block,
            shared: 0,
        };
        let joint = logits(
            &m,
            &ForwardInput {
                tokens: &toks,
                positions: &pos,
                mask: &mask,
                prefix: Some(&cache),
                readout: &readout,
                keep_cache: false,
                dropout: None,
            },
        );
        // Separately: prefix + block as one causal sequence.
        let separate: Vec<Vec<f32>> = blocks
            .iter()
            .map(|bt| {
                let seq: Vec<u32> = prefix.iter().chain(bt).copied().collect();
                causal(&m, &seq, &[seq.len() - 1]).remove(0)
            })
            .collect();
        assert!(max_diff(&joint, &separate) < 1e-4, "{arch:?}");
    }
}

/// Invariant blocks after a shared prefix computed in the same forward
/// (`MaskLayout::shared`, how training runs an invariant window) give the
/// logits of each block after the cached prefix, for small and large
/// attention chunks, with the prefix's block id reused by a block or not.
#[test]
fn shared_prefix_in_the_same_forward_equals_a_cached_prefix() {
    for arch in ARCHS {
        let mut m = model(arch);
        let prefix = tokens(8, 2);
        let blocks = [tokens(5, 3), tokens(7, 4), tokens(4, 5)];
        let separate: Vec<Vec<f32>> = blocks
            .iter()
            .map(|bt| {
                let seq: Vec<u32> = prefix.iter().chain(bt).copied().collect();
                causal(&m, &seq, &[seq.len() - 1]).remove(0)
            })
            .collect();
        for first_block in [0u32, 1] {
            let mut toks = prefix.clone();
            let mut pos: Vec<u32> = (0..8).collect();
            let mut block = vec![0u32; 8];
            let mut readout = Vec::new();
            for (b, bt) in blocks.iter().enumerate() {
                readout.push(toks.len() + bt.len() - 1);
                toks.extend(bt);
                pos.extend((0..bt.len() as u32).map(|i| 8 + i));
                block.extend(std::iter::repeat_n(first_block + b as u32, bt.len()));
            }
            let mask = MaskLayout {
                hidden: vec![false; toks.len()],
                block,
                shared: 8,
            };
            for rows in [3, 256] {
                m.attention_rows = rows;
                let joint = logits(&m, &ForwardInput::whole(&toks, &pos, &mask, &readout));
                assert!(
                    max_diff(&joint, &separate) < 1e-4,
                    "{arch:?}, first block {first_block}, rows {rows}"
                );
            }
        }
        // A hidden token inside the shared prefix is refused.
        let mut mask = MaskLayout::causal(9);
        mask.shared = 8;
        mask.hidden[3] = true;
        let toks = tokens(9, 6);
        let pos: Vec<u32> = (0..9).collect();
        assert!(m
            .forward(&ForwardInput::whole(&toks, &pos, &mask, &[8]))
            .is_err());
    }
}

#[test]
fn hidden_keys_do_not_reach_later_tokens() {
    let m = model(Arch::Llama);
    let mut a = tokens(12, 6);
    let mut hidden = vec![false; 12];
    hidden[4] = true;
    let pos: Vec<u32> = (0..12).collect();
    let mask = MaskLayout {
        block: vec![0; 12],
        hidden,
        shared: 0,
    };
    let read = |t: &[u32]| {
        logits(
            &m,
            &ForwardInput {
                tokens: t,
                positions: &pos,
                mask: &mask,
                prefix: None,
                readout: &[3, 8, 11],
                keep_cache: false,
                dropout: None,
            },
        )
    };
    let before = read(&a);
    a[4] = (a[4] + 1) % 64;
    let after = read(&a);
    assert!(max_diff(&before, &after) < 1e-6, "a hidden token leaked");
    // Control: without hiding, the same change is visible.
    let open = causal(&m, &a, &[8]);
    a[4] = (a[4] + 63) % 64;
    assert!(max_diff(&open, &causal(&m, &a, &[8])) > 1e-4);
}

#[test]
fn composite_kernels_match_fused() {
    for arch in ARCHS {
        let mut m = model(arch);
        let toks = tokens(16, 8);
        let fused = causal(&m, &toks, &[3, 15]);
        m.kernels = Kernels::Composite;
        let composite = causal(&m, &toks, &[3, 15]);
        assert!(max_diff(&fused, &composite) < 1e-4, "{arch:?}");
    }
}

#[test]
fn logits_only_at_readout_positions() {
    let m = model(Arch::Qwen3);
    let out = causal(&m, &tokens(9, 9), &[0, 4]);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].len(), 64);
}

#[test]
fn inputs_beyond_context_or_vocabulary_are_errors() {
    let m = model(Arch::Llama);
    let toks = tokens(4, 1);
    let pos = vec![0, 1, 2, 3000];
    let err = m
        .forward(&ForwardInput {
            tokens: &toks,
            positions: &pos,
            mask: &MaskLayout::causal(4),
            prefix: None,
            readout: &[3],
            keep_cache: false,
            dropout: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains("context"), "{err}");
    let err = m
        .forward(&ForwardInput {
            tokens: &[1, 2, 99],
            positions: &[0, 1, 2],
            mask: &MaskLayout::causal(3),
            prefix: None,
            readout: &[2],
            keep_cache: false,
            dropout: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains("vocabulary"), "{err}");
}

#[test]
fn long_sequences_agree_across_chunkings() {
    // 700 tokens are attended in row chunks; a cached prefix of 333 shifts
    // every chunk boundary. Both must give the same logits.
    for arch in ARCHS {
        let m = model(arch);
        let all: Vec<u32> = (0..700u32).map(|i| (i * 31 + 7) % 64).collect();
        let full = causal(&m, &all, &[100, 400, 699]);
        let cache = m.prefill(&all[..333]).unwrap();
        let pos: Vec<u32> = (333..700).collect();
        let rest = logits(
            &m,
            &ForwardInput {
                tokens: &all[333..],
                positions: &pos,
                mask: &MaskLayout::causal(367),
                prefix: Some(&cache),
                readout: &[400 - 333, 699 - 333],
                keep_cache: false,
                dropout: None,
            },
        );
        assert!(max_diff(&full[1..], &rest) < 1e-4, "{arch:?}");
    }
}

/// Packing several forwards into one row gives each its own logits, with
/// small and large attention chunks (the CPU and GPU plans), even when the
/// packed row is longer than the model's context.
#[test]
fn packed_forwards_equal_separate_forwards() {
    type Seq = (Vec<u32>, Vec<u32>, MaskLayout, Vec<usize>);
    let pos = |n: usize| (0..n as u32).collect::<Vec<u32>>();
    let mut hidden = MaskLayout::causal(13);
    hidden.hidden[4] = true;
    // Two blocks, the second restarting its positions.
    let blocks = MaskLayout {
        block: vec![0, 0, 0, 5, 5, 5],
        hidden: vec![false; 6],
        shared: 0,
    };
    let seqs: Vec<Seq> = vec![
        (tokens(9, 1), pos(9), MaskLayout::causal(9), vec![0, 8]),
        (tokens(13, 2), pos(13), hidden, vec![5, 12]),
        (tokens(6, 3), vec![0, 1, 2, 0, 1, 2], blocks, vec![2, 5]),
    ];
    fn input(s: &Seq) -> ForwardInput<'_> {
        ForwardInput {
            tokens: &s.0,
            positions: &s.1,
            mask: &s.2,
            prefix: None,
            readout: &s.3,
            keep_cache: false,
            dropout: None,
        }
    }
    for arch in ARCHS {
        let mut m = model(arch);
        let separate: Vec<Vec<Vec<f32>>> = seqs.iter().map(|s| logits(&m, &input(s))).collect();
        let forwards: Vec<ForwardInput> = seqs.iter().map(input).collect();
        let packed = ocrank_engine::pack(&forwards).unwrap();
        assert_eq!(packed.tokens.len(), 28);
        m.cfg.context_length = 20; // shorter than the packed row, longer than each
        for rows in [4, 256] {
            m.attention_rows = rows;
            let out = m.forward(&packed.input()).unwrap().logits;
            for (got, want) in packed.split(&out).unwrap().iter().zip(&separate) {
                let got = got.to_vec2::<f32>().unwrap();
                assert!(max_diff(&got, want) < 1e-4, "{arch:?}, rows {rows}");
            }
        }
    }
}

#[test]
fn greedy_decoding_over_the_cache_equals_whole_forwards() {
    for arch in ARCHS {
        let m = model(arch);
        let prompt = tokens(9, 6);
        let fast = m.greedy(&prompt, 12, |_| false).unwrap();
        assert_eq!(fast.len(), 12, "{arch:?}");
        // The slow way: one whole causal forward per new token.
        let mut seq = prompt.clone();
        for _ in 0..12 {
            let row = &causal(&m, &seq, &[seq.len() - 1])[0];
            let best = (0..row.len()).fold(0, |b, i| if row[i] > row[b] { i } else { b });
            seq.push(best as u32);
        }
        assert_eq!(fast, seq[9..], "{arch:?}");
        // `stop` sees what has been generated and keeps the stopping token.
        let stopped = m.greedy(&prompt, 12, |out| out.len() == 4).unwrap();
        assert_eq!(stopped, fast[..4], "{arch:?}");
        assert!(m.greedy(&prompt, 0, |_| false).unwrap().is_empty());
        assert!(
            m.greedy(&[], 3, |_| false).is_err(),
            "an empty prompt is an error"
        );
    }
}
