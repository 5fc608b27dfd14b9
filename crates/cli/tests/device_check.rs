//! `ocrank export-tokenizer` and `ocrank device-check` end to end on the CPU
//! (small windows), so that the GPU check keeps working between the
//! sessions that have a GPU: every section is written, the CPU-vs-CPU f32
//! parity is exact for the fused kernels, bf16 stays within its tolerance,
//! and a CUDA device in a CPU build is a clear error.

mod common;
use common::ocrank;

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const POOLS: &str = "../shared/data/msmarco/dl19/bm25-top100.json";

#[test]
fn device_check_runs_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("tokenizer");
    ok(&ocrank(&[
        "export-tokenizer",
        "--out",
        tok.to_str().unwrap(),
    ]));
    assert!(tok.join("tokenizer.json").exists() && tok.join("tokenizer_config.json").exists());

    let report = dir.path().join("check.json");
    let base = [
        "device-check",
        "--tokenizer",
        tok.to_str().unwrap(),
        "--pools",
        POOLS,
        "--depth",
        "4",
        "--width",
        "2",
        "--max-chars",
        "60",
        "--parity",
        "smollm2-135m",
        "--parity-windows",
        "1",
        "--bench",
        "smollm2-135m",
        "--bench-dtype",
        "f32",
        "--windows",
        "3",
        "--repeats",
        "1",
        "--train-steps",
        "1",
        "--out",
        report.to_str().unwrap(),
    ];
    let out = ocrank(&[&base[..], &["--device", "cpu"]].concat());
    ok(&out);
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(d["windows"]["count"], 3);
    let parity = d["parity"].as_array().unwrap();
    assert_eq!(parity.len(), 4, "f32 and bf16, fused and composite");
    for p in parity {
        assert!(p["pass"].as_bool().unwrap(), "{p}");
        if p["dtype"] == "f32" && p["kernels"] == "fused" {
            assert_eq!(
                p["max_abs_diff"].as_f64(),
                Some(0.0),
                "same device, same kernels"
            );
        }
        if p["dtype"] == "bf16" {
            assert!(
                p["max_abs_diff"].as_f64().unwrap() > 0.0,
                "bf16 rounds: {p}"
            );
        }
    }
    let s = &d["scoring"][0];
    assert_eq!(s["windows"], 3);
    assert!(s["packed"]["median_seconds"].as_f64().unwrap() > 0.0);
    let t = d["training"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["objective"], "oc-sft");
    assert_eq!(t[1]["views"], 2);
    assert_eq!(d["failures"]["errors"], 0);

    // No GPU in a CPU build: said at once, naming the feature.
    let out = ocrank(&[&base[..], &["--device", "cuda"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    if !cfg!(feature = "cuda") {
        assert!(
            !out.status.success() && err.contains("--features cuda"),
            "{err}"
        );
    }
}
