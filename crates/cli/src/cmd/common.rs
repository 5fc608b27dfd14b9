//! Flags shared by every command that scores: the model and the scorer
//! settings of SPEC.md section 2.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ocrank_data::Pool;
use ocrank_engine::{DType, DeviceSpec, Engine};
use ocrank_plan::Partition;
use ocrank_score::{Mode, PromptConfig, Readout, ScoreConfig, Task, Template};

/// Where the README's set-up command puts the default model (SPEC.md section 7).
pub const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Model: a GGUF file (F32, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, ...) or a
    /// Hugging Face directory (config.json, tokenizer.json, *.safetensors).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MODEL)]
    pub model: PathBuf,
    /// A LoRA adapter in the PEFT layout (adapter_config.json +
    /// adapter_model.safetensors, e.g. from `ocrank train`), merged into the
    /// model's weights after loading.
    #[arg(long, value_name = "DIR")]
    pub adapter: Option<PathBuf>,
    /// Where the decoder runs: cpu, cuda or cuda:N (a GPU needs a build with
    /// `--features cuda`).
    #[arg(long, value_name = "DEVICE", default_value = "cpu")]
    pub device: DeviceSpec,
    /// Precision of the weights and activations: f32, bf16 or f16 (default:
    /// f32 on the CPU, bf16 on a GPU). Logits, the grade softmax, the loss
    /// and the optimizer stay f32.
    #[arg(long, value_name = "DTYPE", value_parser = parse_dtype_arg)]
    pub dtype: Option<DType>,
}

fn parse_dtype_arg(s: &str) -> Result<DType, String> {
    ocrank_engine::parse_dtype(s).map_err(|e| e.to_string())
}

impl ModelArgs {
    /// The precision the model runs in on the chosen device.
    pub fn dtype(&self) -> DType {
        match self.dtype {
            Some(d) => d,
            None if self.device == DeviceSpec::Cpu => DType::F32,
            None => DType::BF16,
        }
    }

    pub fn load(&self) -> anyhow::Result<Engine> {
        let device = self.device.open()?;
        let dtype = self.dtype();
        let mut engine = Engine::load(&self.model, dtype, &device)
            .with_context(|| format!("loading model {}", self.model.display()))?;
        if let Some(dir) = &self.adapter {
            engine
                .decoder
                .load_lora(dir)
                .with_context(|| format!("loading adapter {}", dir.display()))?;
            engine.decoder.merge_lora()?;
        }
        Ok(engine)
    }

    /// SHA-256 of the model file, and of the adapter's weights and config
    /// when one is given: what a stored result must match to be reused.
    pub fn fingerprint(&self, settings: &mut serde_json::Value) -> anyhow::Result<()> {
        settings["model_sha256"] = sha256_file(&self.model)?.into();
        // Precision changes the scores; f32 (the CPU default) is left out so
        // that results stored before this setting existed still match.
        let dtype = self.dtype();
        if dtype != DType::F32 {
            settings["dtype"] = dtype.as_str().into();
        }
        if let Some(dir) = &self.adapter {
            settings["adapter_sha256"] = adapter_fingerprint(dir)?.into();
        }
        Ok(())
    }
}

/// Value parser of `--permutations` (M): every command that takes it
/// needs at least one order (zero would score nothing and report success).
pub fn permutation_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (permutation 0 is the canonical order)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// An adapter's identity as audits record it (`settings.adapter_sha256`):
/// the SHA-256 of its weights, `+`, that of its config.
pub fn adapter_fingerprint(dir: &Path) -> anyhow::Result<String> {
    Ok(format!(
        "{}+{}",
        sha256_file(&dir.join("adapter_model.safetensors"))?,
        sha256_file(&dir.join("adapter_config.json"))?
    ))
}

/// The command line this process was started with, as one string a shell
/// reads back to the same arguments: an argument holding anything but
/// `[A-Za-z0-9_./:=,+@%-]` is single-quoted. Result files record it, so
/// that pasting it reruns them. An argument that is not UTF-8 (a path) is
/// recorded lossily instead of panicking as `std::env::args` would.
pub fn command_line() -> String {
    shell_join(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
}

/// Joins arguments for a POSIX shell (see [`command_line`]).
pub fn shell_join(args: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=,+@%-".contains(c);
    args.into_iter()
        .map(|a| {
            let a = a.as_ref();
            if !a.is_empty() && a.chars().all(plain) {
                a.to_string()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// SHA-256 of each file, keyed by its path as given.
pub fn sha256_files(
    paths: &[PathBuf],
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    paths
        .iter()
        .map(|p| Ok((p.display().to_string(), sha256_file(p)?)))
        .collect()
}

/// Writes a command's output file, first making its missing parent
/// directories: results computed for minutes are not lost to an `--out`
/// directory nobody created yet. Errors name the path.
pub fn write_output(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    create_parent(path)?;
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// Makes the directories above `path` that do not exist yet.
pub fn create_parent(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

/// SHA-256 of a file (hex); a directory (an HF model) is named, not hashed.
pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    if path.is_dir() {
        return Ok("directory".into());
    }
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

#[derive(clap::Args, Debug, Clone)]
pub struct ScorerArgs {
    /// Window width B: candidates scored together in one prompt.
    #[arg(long, default_value_t = 20)]
    pub width: usize,
    /// batched (one causal prompt per window), pointwise (B = 1, prefix
    /// computed once) or invariant (InvariRank blocks, one pass per window).
    #[arg(long, default_value = "batched")]
    pub mode: Mode,
    /// How a pool larger than the width is cut into windows.
    #[arg(
        long,
        default_value = "contiguous",
        value_name = "contiguous|round-robin"
    )]
    pub partition: Partition,
    /// passage (relevance), qa (supports answering), response (quality).
    #[arg(long, default_value = "passage")]
    pub task: Task,
    /// standard (rubric after the candidates) or compact (rubric first).
    #[arg(long, default_value = "standard")]
    pub template: Template,
    /// Candidate texts are cut to this many characters after collapsing whitespace.
    #[arg(long, default_value_t = ocrank_score::prompt::DEFAULT_MAX_CHARS)]
    pub max_chars: usize,
    /// System message (always given, so the chat template adds none of its own).
    #[arg(long, default_value = ocrank_score::prompt::DEFAULT_SYSTEM)]
    pub system: String,
    /// Placeholder grade written in every slot line before it is read.
    #[arg(long, default_value = "0")]
    pub placeholder: String,
    /// Hide earlier slots' placeholder grades from later tokens.
    #[arg(long)]
    pub hide_placeholders: bool,
    /// Calibrate each slot against a content-free probe (CapCal).
    #[arg(long)]
    pub capcal: bool,
    /// CapCal strength alpha.
    #[arg(long, default_value_t = 1.0)]
    pub capcal_alpha: f64,
    /// expected (E[g]/3), p-ge2 (P(g>=2)) or argmax.
    #[arg(long, default_value = "expected")]
    pub readout: Readout,
}

impl ScorerArgs {
    pub fn config(&self) -> ScoreConfig {
        ScoreConfig {
            prompt: PromptConfig {
                task: self.task,
                template: self.template,
                system: self.system.clone(),
                max_chars: self.max_chars,
                placeholder: self.placeholder.clone(),
            },
            mode: self.mode,
            width: self.width,
            partition: self.partition,
            hide_placeholders: self.hide_placeholders,
            capcal: self.capcal.then_some(self.capcal_alpha),
            readout: self.readout,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct PoolArgs {
    /// Pools: rank_llm JSON, our JSONL, HotpotQA or LLMBar (format detected).
    #[arg(long, value_name = "FILE")]
    pub pools: PathBuf,
    /// Keep the first N candidates of each pool (first-stage order).
    #[arg(long, default_value_t = 100)]
    pub depth: usize,
    /// Use only the first N queries.
    #[arg(long, value_name = "N")]
    pub queries: Option<usize>,
}

impl PoolArgs {
    pub fn load(&self) -> anyhow::Result<Vec<Pool>> {
        load_pools(&self.pools, self.depth, self.queries)
    }

    /// The whole pools of the file (every candidate, every query) and the
    /// selection `--queries` / `--depth` make of them, from one read.
    pub fn load_with_whole(&self) -> anyhow::Result<(Vec<Pool>, Vec<Pool>)> {
        let whole = ocrank_data::read_pools(&self.pools)?;
        let selected = select_pools(&whole, self.depth, self.queries)?;
        Ok((whole, selected))
    }
}

/// Reads several pool files (each with its own format) into one list; a
/// query id that appears in two files is an error.
pub fn load_pool_files(paths: &[PathBuf], depth: usize) -> anyhow::Result<Vec<Pool>> {
    let mut seen = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for path in paths {
        for pool in load_pools(path, depth, None)? {
            if let Some(other) = seen.insert(pool.qid.clone(), path.clone()) {
                anyhow::bail!(
                    "query {:?} is in both {} and {}",
                    pool.qid,
                    other.display(),
                    path.display()
                );
            }
            out.push(pool);
        }
    }
    Ok(out)
}

pub fn load_pools(path: &Path, depth: usize, queries: Option<usize>) -> anyhow::Result<Vec<Pool>> {
    select_pools(&ocrank_data::read_pools(path)?, depth, queries)
}

/// The first `queries` pools, each cut to its first `depth` candidates.
pub fn select_pools(
    pools: &[Pool],
    depth: usize,
    queries: Option<usize>,
) -> anyhow::Result<Vec<Pool>> {
    anyhow::ensure!(depth > 0, "--depth must be at least 1");
    Ok(pools
        .iter()
        .take(queries.unwrap_or(usize::MAX))
        .map(|p| p.truncated(depth))
        .collect())
}

pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {what} ({{per_sec}}, ETA {{eta}}) {{msg}}"
        ))
        .expect("valid progress template"),
    );
    bar
}

/// Scored windows read from `--scores`, with where they came from.
pub struct ScoreSource {
    pub windows: std::collections::BTreeMap<ocrank_audit::WindowKey, ocrank_audit::StoredWindow>,
    /// SHA-256 of the scores JSONL, or of an audit's `windows.jsonl`.
    pub sha256: String,
    /// The path, its hash, and for an audit its settings (the scorer's model,
    /// adapter and prompt fingerprint).
    pub provenance: serde_json::Value,
}

/// Reads `--scores PATH`: a scores JSONL (SPEC.md section 7, e.g. from
/// `ocrank score` or an external scorer) or an audit directory, whose window
/// log is read through the audit's own reader (every line's checksum
/// verified; an unfinished audit is refused).
pub fn read_score_source(path: &Path) -> anyhow::Result<ScoreSource> {
    use ocrank_audit::{AuditLog, StoredWindow, WindowKey};
    if path.is_dir() {
        let log = AuditLog::read(path)?;
        let sha256 = sha256_file(&path.join("windows.jsonl"))?;
        let provenance = serde_json::json!({
            "path": path, "kind": "audit", "windows_sha256": sha256, "settings": log.settings,
        });
        return Ok(ScoreSource {
            windows: log.windows,
            sha256,
            provenance,
        });
    }
    let mut windows = std::collections::BTreeMap::<WindowKey, StoredWindow>::new();
    for r in ocrank_data::read_scores(path)? {
        let key = WindowKey {
            qid: r.qid.clone(),
            permutation: r.permutation,
            window: r.window,
        };
        windows
            .entry(key)
            .or_insert_with(|| StoredWindow {
                records: Vec::new(),
                tokens: 0,
                forwards: 0,
                seconds: 0.0,
            })
            .records
            .push(r);
    }
    let sha256 = sha256_file(path)?;
    let provenance = serde_json::json!({"path": path, "kind": "scores", "sha256": sha256});
    Ok(ScoreSource {
        windows,
        sha256,
        provenance,
    })
}

#[cfg(test)]
mod tests {
    use super::shell_join;

    #[test]
    fn shell_join_quotes_only_what_a_shell_would_split_or_expand() {
        assert_eq!(
            shell_join([
                "ocrank",
                "compare",
                "a/b-c_1.2",
                "--measures",
                "x,y",
                "k=v:w"
            ]),
            "ocrank compare a/b-c_1.2 --measures x,y k=v:w"
        );
        assert_eq!(
            shell_join(["--out", "my dir/x.md", "", "$HOME", "it's"]),
            "--out 'my dir/x.md' '' '$HOME' 'it'\\''s'"
        );
    }
}
