//! `ocrank soup` end to end on tiny random adapters: it writes a loadable
//! adapter with its record, and refuses what cannot be souped with the
//! file named. (The construction itself is tested in the engine's
//! `tests/soup.rs`.)

mod common;

use common::{adapter_fingerprint, ocrank};
use ocrank_engine::lora::LoraConfig;
use ocrank_engine::{Arch, DType, Decoder, Device, ModelConfig};

fn tiny() -> Decoder {
    Decoder::random(ModelConfig::tiny(Arch::Qwen2), 3, DType::F32, &Device::Cpu).unwrap()
}

#[test]
fn soup_writes_an_adapter_that_loads_and_names_bad_members() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoraConfig::default();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let mut m = tiny();
        m.attach_lora(&cfg, i as u64).unwrap();
        m.save_lora(&cfg, &dir.path().join(name), "tiny").unwrap();
    }
    let p = |s: &str| dir.path().join(s).display().to_string();
    let out = ocrank(&["soup", &p("a"), &p("b"), "--out", &p("soup")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("soup of 2 adapters (rank 16 -> 32"),
        "{stderr}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("soup/soup.json")).unwrap())
            .unwrap();
    assert_eq!(record["members"], serde_json::json!([p("a"), p("b")]));
    assert!(record["command"].as_str().unwrap().contains(" soup "));
    // The fingerprints are those an audit records for `--adapter DIR`.
    let fp = |d: &str| adapter_fingerprint(&dir.path().join(d));
    assert_eq!(
        record["members_adapter_sha256"],
        serde_json::json!([fp("a"), fp("b")])
    );
    assert_eq!(record["adapter_sha256"], serde_json::json!(fp("soup")));
    assert_ne!(fp("a"), fp("b"));
    let mut m = tiny();
    assert_eq!(m.load_lora(&dir.path().join("soup")).unwrap().rank, 32);

    let out = ocrank(&["soup", &p("a"), &p("nope"), "--out", &p("o")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("nope/adapter_config.json"), "{stderr}");
    // clap refuses a single adapter before anything is read.
    assert!(!ocrank(&["soup", &p("a"), "--out", &p("o")])
        .status
        .success());
    assert!(!dir.path().join("o").exists());
}
