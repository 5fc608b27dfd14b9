//! The frozen reader on the real default model (SmolLM2-135M-Instruct):
//! greedy decoding over the KV cache gives the tokens that whole forwards
//! give, and the reader answers a question its passages answer. Needs
//! `scripts/setup.sh` to have fetched the model.

use std::path::PathBuf;

use ocrank_engine::{DType, Device, Engine, ForwardInput, MaskLayout};
use ocrank_score::ReaderConfig;

fn engine() -> Engine {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup.sh",
        path.display()
    );
    Engine::load(&path, DType::F32, &Device::Cpu).unwrap()
}

const PASSAGES: [&str; 2] = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It is named after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889.",
    "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas.",
];

#[test]
fn greedy_over_the_cache_matches_whole_forwards_on_the_real_model() {
    let e = engine();
    let reader = ReaderConfig::default();
    let text = reader
        .prompt_text(&e, "Who designed the Eiffel Tower?", &PASSAGES)
        .unwrap();
    let prompt = e.tokenizer.encode_ids(&text).unwrap();
    let fast = e.decoder.greedy(&prompt, 6, |_| false).unwrap();
    let mut seq = prompt.clone();
    for _ in 0..6 {
        let n = seq.len();
        let pos: Vec<u32> = (0..n as u32).collect();
        let logits = e
            .decoder
            .forward(&ForwardInput::whole(
                &seq,
                &pos,
                &MaskLayout::causal(n),
                &[n - 1],
            ))
            .unwrap()
            .logits
            .to_vec2::<f32>()
            .unwrap();
        let row = &logits[0];
        let best = (0..row.len()).fold(0, |b, i| if row[i] > row[b] { i } else { b });
        seq.push(best as u32);
    }
    assert_eq!(fast, seq[prompt.len()..]);
}

#[test]
fn reader_answers_from_its_passages_and_stops_at_the_line_end() {
    let e = engine();
    let reader = ReaderConfig::default();
    let a = reader
        .answer(&e, "Whose company designed the Eiffel Tower?", &PASSAGES)
        .unwrap();
    assert!(a.finished, "{a:?}");
    assert!(
        !a.text.contains('\n') && !a.text.contains("<|im_end|>"),
        "{a:?}"
    );
    assert!(a.text.contains("Eiffel"), "{a:?}");
    // The same input gives the same answer (greedy; nothing sampled).
    let again = reader
        .answer(&e, "Whose company designed the Eiffel Tower?", &PASSAGES)
        .unwrap();
    assert_eq!((a.text, a.raw), (again.text, again.raw));
    // A prompt that leaves no room in the context is an error, not a panic.
    let long = "word ".repeat(9000);
    let cfg = ReaderConfig {
        max_chars: 100_000,
        ..ReaderConfig::default()
    };
    let err = cfg
        .answer(&e, "Q?", &[long.as_str()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceeds the model's context"), "{err}");
}
