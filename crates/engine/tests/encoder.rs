//! The sentence encoder against an independent numpy implementation
//! (`scripts/minilm_reference.py`, fixture `fixtures/minilm_golden.json`) on
//! the real all-MiniLM-L6-v2 (`scripts/setup.sh --no-build` fetches it), and
//! its errors for broken model directories.

use std::path::{Path, PathBuf};

use ocrank_engine::encoder::{cosine, SentenceEncoder};
use ocrank_engine::Device;
use serde_json::Value;

const TOL: f32 = 1e-4;

fn model_dir() -> PathBuf {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/all-MiniLM-L6-v2"
    ))
    .to_path_buf();
    assert!(
        dir.join("model.safetensors").exists(),
        "{} is missing: run scripts/setup.sh --no-build",
        dir.display()
    );
    dir
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/minilm_golden.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn matches_the_numpy_reference() {
    let enc = SentenceEncoder::load(&model_dir(), &Device::Cpu).unwrap();
    let fx = fixture();
    assert_eq!(
        enc.max_seq_length(),
        fx["max_seq_length"].as_u64().unwrap() as usize
    );
    assert_eq!(enc.dim(), 384);
    let texts: Vec<&str> = fx["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let names: Vec<&str> = fx["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();

    for (i, text) in texts.iter().enumerate() {
        let want: Vec<u32> = fx["token_ids"][i]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(
            enc.token_ids(text).unwrap(),
            want,
            "token ids of {}",
            names[i]
        );
    }

    // All texts in one batch: the short ones are padded to the long one's 256.
    let embs = enc.embed(&texts).unwrap();
    assert_eq!(embs.len(), texts.len());
    let mut max_first8 = 0f32;
    for (i, e) in embs.iter().enumerate() {
        assert_eq!(e.len(), 384);
        let norm = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{}: norm {norm}", names[i]);
        let d = max_abs_diff(&e[..8], &f32s(&fx["first8"][i]));
        assert!(d < TOL, "{}: first 8 dims differ by {d}", names[i]);
        max_first8 = max_first8.max(d);
    }
    let mut max_cos = 0f32;
    for i in 0..texts.len() {
        let want = f32s(&fx["cosine"][i]);
        for j in 0..texts.len() {
            let d = (cosine(&embs[i], &embs[j]) - want[j]).abs();
            assert!(d < TOL, "cosine({}, {}) differs by {d}", names[i], names[j]);
            max_cos = max_cos.max(d);
        }
    }
    eprintln!("max |diff| vs numpy: first 8 dims {max_first8:.3e}, cosines {max_cos:.3e}");

    // The teacher ranks the judged-relevant passage above the unrelated one.
    let at = |n: &str| names.iter().position(|&m| m == n).unwrap();
    let rel = cosine(&embs[at("query")], &embs[at("relevant")]);
    let unrel = cosine(&embs[at("query")], &embs[at("unrelated")]);
    eprintln!("cos(query, relevant) {rel:.6}, cos(query, unrelated) {unrel:.6}");
    assert!(rel > unrel + 0.5, "relevant {rel} vs unrelated {unrel}");
}

#[test]
fn batching_and_padding_do_not_change_vectors() {
    let enc = SentenceEncoder::load(&model_dir(), &Device::Cpu).unwrap();
    let fx = fixture();
    let base: Vec<&str> = fx["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    // 40 texts: two batches, lengths mixed, duplicates in both batches.
    let many: Vec<&str> = base.iter().cycle().take(40).copied().collect();
    let batched = enc.embed(&many).unwrap();
    let alone: Vec<Vec<f32>> = base
        .iter()
        .map(|t| enc.embed(&[t]).unwrap().remove(0))
        .collect();
    for (i, v) in batched.iter().enumerate() {
        let d = max_abs_diff(v, &alone[i % base.len()]);
        assert!(d < 1e-5, "text {i}: batched differs from alone by {d}");
    }
    assert!(enc.embed(&[]).unwrap().is_empty());
}

#[test]
fn bert_prefixed_names_load_and_missing_tensors_are_named() {
    let src = model_dir();
    let tensors =
        candle_core::safetensors::load(src.join("model.safetensors"), &Device::Cpu).unwrap();
    let setup = |prefix: &str, drop: Option<&str>| -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in ["config.json", "tokenizer.json", "sentence_bert_config.json"] {
            std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
        }
        let renamed: std::collections::HashMap<String, candle_core::Tensor> = tensors
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != drop)
            .map(|(k, v)| (format!("{prefix}{k}"), v.clone()))
            .collect();
        candle_core::safetensors::save(&renamed, dir.path().join("model.safetensors")).unwrap();
        dir
    };

    let text = ["how long is life cycle of flea"];
    let want = SentenceEncoder::load(&src, &Device::Cpu)
        .unwrap()
        .embed(&text)
        .unwrap();
    let prefixed = setup("bert.", None);
    let got = SentenceEncoder::load(prefixed.path(), &Device::Cpu)
        .unwrap()
        .embed(&text)
        .unwrap();
    assert_eq!(got, want, "bert.-prefixed tensors give other vectors");

    let missing = setup("", Some("encoder.layer.3.output.dense.weight"));
    let err = SentenceEncoder::load(missing.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("model.safetensors")
            && err.contains("tensor encoder.layer.3.output.dense.weight is missing"),
        "{err}"
    );
}

#[test]
fn missing_directory_and_files_are_clear_errors() {
    let nowhere = Path::new("/nonexistent/all-MiniLM-L6-v2");
    let err = SentenceEncoder::load(nowhere, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "/nonexistent/all-MiniLM-L6-v2: sentence encoder directory not found (run scripts/setup.sh --no-build)"
    );

    let src = model_dir();
    let dir = tempfile::tempdir().unwrap();
    let err = SentenceEncoder::load(dir.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("config.json") && err.contains("No such file"),
        "{err}"
    );

    std::fs::copy(src.join("config.json"), dir.path().join("config.json")).unwrap();
    let err = SentenceEncoder::load(dir.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("tokenizer.json") && err.contains("No such file"),
        "{err}"
    );

    std::fs::copy(
        src.join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let err = SentenceEncoder::load(dir.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("model.safetensors") && err.contains("No such file"),
        "{err}"
    );

    std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
    std::fs::write(
        dir.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let err = SentenceEncoder::load(dir.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("only mean pooling"), "{err}");
}

#[test]
fn cosine_is_nan_where_undefined() {
    assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-7);
    assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
    assert!((cosine(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-7);
    assert!(cosine(&[1.0], &[1.0, 0.0]).is_nan());
    assert!(cosine(&[0.0, 0.0], &[1.0, 0.0]).is_nan());
    assert!(cosine(&[], &[]).is_nan());
}
