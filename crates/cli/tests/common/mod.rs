//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code)] // each test file uses a part

use std::path::PathBuf;
use std::process::Command;

/// The repository root (where `models/` and `../shared` are found).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the real `ocrank` binary from the repository root.
pub fn ocrank(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap()
}

/// An adapter directory's fingerprint as audits record it in
/// `settings.adapter_sha256`: sha256(weights) + "+" + sha256(config),
/// computed here independently of the binary.
pub fn adapter_fingerprint(dir: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let hash = |f: &str| {
        let path = dir.join(f);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        format!("{:x}", Sha256::digest(&bytes))
    };
    format!(
        "{}+{}",
        hash("adapter_model.safetensors"),
        hash("adapter_config.json")
    )
}

/// Runs `ocrank` and asserts that it succeeded; returns its stderr (where
/// progress and notes go).
pub fn ocrank_ok(args: &[&str]) -> String {
    let out = ocrank(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ocrank {args:?} failed: {stderr}");
    stderr
}

/// A JSON file (results.json, settings.json), the path named on failure.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How far a grade probability scored now may differ from one in a committed
/// audit. The committed audits were scored on other machines, and f32 matrix
/// products block by the CPU's caches and features: on a 2-core AVX-512 Xeon
/// the same forward differs by 5.6e-6, identically on every rerun. A wrong
/// adapter, slot, window or prompt differs by far more.
#[allow(dead_code)]
pub const COMMITTED_PROB_TOL: f64 = 1e-4;
