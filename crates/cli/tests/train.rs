//! `ocrank label`, `train`, `select` and `audit --adapter` end to end on a
//! tiny random decoder saved as a Hugging Face directory with SmolLM2's real
//! tokenizer and chat template (fast, but every prompt, slot and grade token
//! is the real one), on DL21 pools: a training run killed with SIGKILL and
//! rerun ends with exactly the adapter and log of an uninterrupted run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ocrank_engine::{Arch, DType, Decoder, Device, Engine, ModelConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const DL21: &str = "../shared/data/msmarco/dl21/bm25-top100.json";
const QRELS: &str = "../shared/data/msmarco/dl21/qrels.txt";
const DL22: &str = "../shared/data/msmarco/dl22/bm25-top100.json";

/// A tiny Llama with SmolLM2's vocabulary, tokenizer and template.
fn tiny_model(dir: &Path) {
    let gguf = root().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let e = Engine::load(&gguf, DType::F32, &Device::Cpu).expect("scripts/setup.sh --no-build");
    let mut c = ModelConfig::tiny(Arch::Llama);
    c.vocab_size = e.decoder.cfg.vocab_size;
    let d = Decoder::random(c.clone(), 4, DType::F32, &Device::Cpu).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let config = serde_json::json!({
        "model_type": "llama", "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_layers,
        "num_attention_heads": c.num_heads, "num_key_value_heads": c.num_kv_heads,
        "rope_theta": c.rope_theta, "rms_norm_eps": c.rms_norm_eps,
        "max_position_embeddings": c.context_length, "tie_word_embeddings": true,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    candle_core::safetensors::save(&d.named_tensors(), dir.join("model.safetensors")).unwrap();
    e.save_tokenizer(dir).unwrap();
}

fn ocrank(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ocrank"));
    c.current_dir(root()).args(args);
    c
}

fn ok(mut c: Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Runs the command, asserts that it failed and that its stderr says `says`;
/// returns the stderr.
fn fails(mut c: Command, says: &str) -> String {
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && err.contains(says),
        "expected {says:?}: {err}"
    );
    err
}

/// Gold labels of the DL21 top `depth` (`ocrank label --teacher gold`).
fn gold_labels(depth: usize, out: &Path) {
    ok(ocrank(&[
        "label",
        "--teacher",
        "gold",
        "--pools",
        DL21,
        "--qrels",
        QRELS,
        "--depth",
        &depth.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]));
}

fn train(model: &Path, labels: &Path, out: &Path) -> Command {
    ocrank(&[
        "train",
        "--model",
        model.to_str().unwrap(),
        "--pools",
        DL21,
        "--labels",
        labels.to_str().unwrap(),
        "--depth",
        "4",
        "--width",
        "2",
        "--max-chars",
        "80",
        "--objective",
        "oc-sft",
        "--steps",
        "60",
        "--lambda-warmup",
        "10",
        "--lr",
        "1e-2",
        "--checkpoint-every",
        "5",
        "--ema-decay",
        "0.9",
        "--out",
        out.to_str().unwrap(),
    ])
}

fn losses(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("seconds");
            v.to_string()
        })
        .collect()
}

#[test]
fn label_train_kill_resume_select_and_audit_with_the_adapter() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny");
    tiny_model(&model);
    let labels = tmp.path().join("labels.jsonl");
    gold_labels(4, &labels);
    let l = ocrank_data::read_labels(&labels).unwrap();
    assert_eq!(l.header.teacher, "gold");
    assert_eq!(l.len(), 53 * 4);

    // Order-averaged training refuses single-order labels.
    fails(
        ocrank(&[
            "train",
            "--model",
            model.to_str().unwrap(),
            "--pools",
            DL21,
            "--labels",
            labels.to_str().unwrap(),
            "--objective",
            "order-averaged",
            "--out",
            tmp.path().join("x").to_str().unwrap(),
        ]),
        "order-averaged",
    );

    // --heldout-pools must name some of --pools; a run that split only some
    // files cannot be selected on another file, whose queries it trained on.
    let heldout = |pools: &[&str], split: &str, out: &Path| {
        let mut c = ocrank(&[
            "train",
            "--model",
            model.to_str().unwrap(),
            "--labels",
            labels.to_str().unwrap(),
            "--depth",
            "4",
            "--width",
            "2",
            "--max-chars",
            "80",
            "--steps",
            "1",
            "--heldout-pools",
            split,
            "--out",
            out.to_str().unwrap(),
            "--pools",
        ]);
        c.args(pools);
        c
    };
    for (split, extra, says) in [
        (DL22, &[][..], "not one of the --pools files"),
        (
            DL21,
            &["--windows-per-step", "0"][..],
            "--windows-per-step must be at least 1",
        ),
        (
            DL21,
            &["--spread-floor", "1e-4"][..],
            "--spread-floor is a setting of --consistency-scale spread",
        ),
    ] {
        let mut c = heldout(&[DL21], split, &tmp.path().join("x"));
        c.args(extra);
        fails(c, says);
    }
    // This run also accumulates two windows per update and trains on the
    // cross-entropy.
    let split = tmp.path().join("split");
    let mut c = heldout(&[DL21], DL21, &split);
    c.args([
        "--windows-per-step",
        "2",
        "--supervised-loss",
        "cross-entropy",
    ]);
    ok(c);
    let log: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(split.join("log.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(
        log["examples"].as_array().map(|a| a.len()),
        Some(2),
        "{log}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(split.join("train.json")).unwrap()).unwrap();
    assert_eq!(doc["settings"]["train"]["windows_per_step"], 2);
    assert_eq!(doc["settings"]["train"]["supervised_loss"], "cross-entropy");
    assert!(log["cross_entropy"].as_f64().unwrap() > 0.0, "{log}");
    assert!(
        log["constant_cross_entropy"].as_f64().unwrap() > 0.0,
        "{log}"
    );
    assert!(doc["cross_entropy_over_constant_last_50"].as_f64().unwrap() > 0.0);
    assert!(log["constant"].as_f64().unwrap() > 0.0, "{log}");
    assert!(doc["supervised_over_constant_last_50"].as_f64().unwrap() > 0.0);
    let copy = tmp.path().join("dl21-copy.json");
    std::fs::copy(root().join(DL21), &copy).unwrap();
    // `ocrank select` of one run on a pools file (qrels, depth 4); callers add flags.
    let select = |run: &Path, pools: &Path, out: &Path| {
        ocrank(&[
            "select",
            "--model",
            model.to_str().unwrap(),
            "--runs",
            run.to_str().unwrap(),
            "--pools",
            pools.to_str().unwrap(),
            "--qrels",
            QRELS,
            "--depth",
            "4",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    fails(
        select(&split, &copy, &tmp.path().join("sel-x.json")),
        "were all trained on",
    );

    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    ok(train(&model, &labels, &b));

    let mut child = train(&model, &labels, &a)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first = a.join("checkpoints/step-000010");
    let start = Instant::now();
    while !first.exists() && start.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !a.join("checkpoints/step-000060").exists(),
        "the run finished before it could be killed"
    );
    ok(train(&model, &labels, &a));
    let bytes = |d: &Path| std::fs::read(d.join("adapter/adapter_model.safetensors")).unwrap();
    assert_eq!(bytes(&a), bytes(&b), "resumed adapter differs");
    assert_eq!(losses(&a), losses(&b));
    let log = losses(&a);
    assert_eq!(log.len(), 60);

    // Selection on the held-out split picks one of the checkpoints.
    let sel = tmp.path().join("selection.json");
    let dl21 = root().join(DL21);
    let mut c = select(&a, &dl21, &sel);
    c.args(["--permutations", "1", "--every", "20", "--include-base"]);
    ok(c);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sel).unwrap()).unwrap();
    let cands = s["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 4, "base + steps 20, 40, 60"); // base, @20, @40, @60
    assert!(s["selected"]["ndcg_at_10_mean"].as_f64().unwrap() >= 0.0);
    assert!(sel.with_extension("md").exists());

    // A run kept without its checkpoints (train.json + the final adapter)
    // offers its final adapter: the same adapter as a's step 60, so the same
    // held-out nDCG.
    let kept = tmp.path().join("kept");
    std::fs::create_dir_all(kept.join("adapter")).unwrap();
    std::fs::copy(b.join("train.json"), kept.join("train.json")).unwrap();
    for f in std::fs::read_dir(b.join("adapter")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, kept.join("adapter").join(f.file_name().unwrap())).unwrap();
    }
    let sel_kept = tmp.path().join("selection-kept.json");
    let mut c = select(&kept, &dl21, &sel_kept);
    c.args(["--permutations", "1"]);
    ok(c);
    let k: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sel_kept).unwrap()).unwrap();
    let only = k["candidates"].as_array().unwrap();
    assert_eq!(only.len(), 1, "{k}");
    assert!(
        only[0]["candidate"].as_str().unwrap().ends_with("@final"),
        "{k}"
    );
    assert_eq!(
        only[0]["ndcg_at_10_mean"], cands[3]["ndcg_at_10_mean"],
        "{k}"
    );
    // Without checkpoints and without the final adapter there is nothing to select.
    std::fs::remove_dir_all(kept.join("adapter")).unwrap();
    fails(select(&kept, &dl21, &sel_kept), "no final adapter");

    // The adapter loads into audit, changes the scores and is fingerprinted.
    let audit = |out: &Path, adapter: Option<&Path>| {
        let mut c = ocrank(&[
            "audit",
            "--model",
            model.to_str().unwrap(),
            "--pools",
            DL21,
            "--qrels",
            QRELS,
            "--queries",
            "2",
            "--depth",
            "4",
            "--width",
            "2",
            "--max-chars",
            "80",
            "--permutations",
            "2",
            "--bootstrap",
            "100",
            "--out",
            out.to_str().unwrap(),
        ]);
        if let Some(ad) = adapter {
            c.args(["--adapter", ad.to_str().unwrap()]);
        }
        c
    };
    let (base_dir, tuned_dir) = (
        tmp.path().join("audit-base"),
        tmp.path().join("audit-tuned"),
    );
    ok(audit(&base_dir, None));
    ok(audit(&tuned_dir, Some(&a.join("adapter"))));
    let settings = |d: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap()
    };
    let tuned = settings(&tuned_dir);
    assert!(tuned["settings"]["adapter_sha256"].is_string());
    assert!(settings(&base_dir)["settings"]
        .get("adapter_sha256")
        .is_none());
    assert_ne!(
        std::fs::read_to_string(base_dir.join("windows.jsonl")).unwrap(),
        std::fs::read_to_string(tuned_dir.join("windows.jsonl")).unwrap()
    );
    // The base audit's directory refuses the adapter's scores.
    fails(
        audit(&base_dir, Some(&a.join("adapter"))),
        "holds an audit with other settings",
    );
}

/// `--mode invariant` trains (single-order) and refuses the objectives that
/// permute a window; `--mode pointwise` points to it; its adapter
/// warm-starts a batched run (`--init-adapter`); `train-bench --shapes` times
/// pointwise and invariant windows side by side, per candidate.
#[test]
fn invariant_training_and_train_bench_shapes() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny");
    tiny_model(&model);
    let labels = tmp.path().join("labels.jsonl");
    gold_labels(6, &labels);
    let run = |objective: &str, mode: &str, out: &Path| {
        ocrank(&[
            "train",
            "--model",
            model.to_str().unwrap(),
            "--pools",
            DL21,
            "--labels",
            labels.to_str().unwrap(),
            "--depth",
            "6",
            "--width",
            "3",
            "--max-chars",
            "80",
            "--mode",
            mode,
            "--objective",
            objective,
            "--steps",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let dir = tmp.path().join("invariant");
    ok(run("single-order", "invariant", &dir));
    assert!(dir.join("adapter/adapter_model.safetensors").exists());
    let train: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("train.json")).unwrap()).unwrap();
    assert_eq!(train["settings"]["scorer"]["mode"], "invariant", "{train}");
    for (objective, mode, says) in [
        ("oc-sft", "invariant", "do not depend on the order"),
        ("perm-aug", "invariant", "do not depend on the order"),
        ("single-order", "pointwise", "--mode invariant"),
    ] {
        fails(
            run(
                objective,
                mode,
                &tmp.path().join(format!("{objective}-{mode}")),
            ),
            says,
        );
    }

    // The invariant student warm-starts a batched run: with lr 0 its adapter
    // comes out unchanged; a mismatched rank is refused with both configs.
    let student = dir.join("adapter");
    let warm = |extra: &[&str], out: &Path| {
        let mut c = ocrank(&[
            "train",
            "--model",
            model.to_str().unwrap(),
            "--pools",
            DL21,
            "--labels",
            labels.to_str().unwrap(),
            "--depth",
            "6",
            "--width",
            "3",
            "--max-chars",
            "80",
            "--objective",
            "oc-sft",
            "--steps",
            "1",
            "--lr",
            "0",
            "--init-adapter",
            student.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        c.args(extra);
        c
    };
    let warm_dir = tmp.path().join("warm");
    ok(warm(&[], &warm_dir));
    let tensors = |d: &Path| {
        candle_core::safetensors::load(
            d.join("adapter_model.safetensors"),
            &candle_core::Device::Cpu,
        )
        .unwrap()
    };
    let (before, after) = (tensors(&student), tensors(&warm_dir.join("adapter")));
    assert_eq!(before.len(), after.len());
    for (name, t) in &before {
        let diff = (t - &after[name])
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert_eq!(diff, 0.0, "{name} changed at lr 0");
    }
    let train: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(warm_dir.join("train.json")).unwrap())
            .unwrap();
    assert!(
        train["settings"]["init_adapter"]["sha256"].is_string(),
        "{train}"
    );
    let err = fails(
        warm(&["--rank", "8"], &tmp.path().join("warm-r8")),
        "rank 16",
    );
    assert!(err.contains("rank 8"), "{err}");

    let bench = tmp.path().join("bench.json");
    ok(ocrank(&[
        "train-bench",
        "--model",
        model.to_str().unwrap(),
        "--pools",
        DL21,
        "--labels",
        labels.to_str().unwrap(),
        "--depth",
        "6",
        "--max-chars",
        "80",
        "--objectives",
        "single-order",
        "--shapes",
        "batched:1,invariant:3",
        "--steps",
        "1",
        "--out",
        bench.to_str().unwrap(),
    ]));
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bench).unwrap()).unwrap();
    let rows = b["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{b}");
    assert_eq!(
        (rows[0]["mode"].as_str(), rows[0]["width"].as_u64()),
        (Some("batched"), Some(1))
    );
    assert_eq!(
        (rows[1]["mode"].as_str(), rows[1]["width"].as_u64()),
        (Some("invariant"), Some(3))
    );
    // Three blocks share one prefix: more tokens than one pointwise window,
    // fewer than three.
    let tokens = |r: &serde_json::Value| r["tokens_per_view"].as_u64().unwrap();
    assert!(tokens(&rows[1]) > tokens(&rows[0]) && tokens(&rows[1]) < 3 * tokens(&rows[0]));
    for r in rows {
        assert!(r["seconds_per_candidate"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(rows[0]["candidate_ratio_to_first"].as_f64(), Some(1.0));
    // A malformed shape is refused with the reason.
    fails(
        ocrank(&[
            "train-bench",
            "--pools",
            DL21,
            "--labels",
            "x",
            "--shapes",
            "invariant",
        ]),
        "MODE:WIDTH",
    );
}
