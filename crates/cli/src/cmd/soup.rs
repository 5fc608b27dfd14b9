//! `ocrank soup`: one LoRA adapter whose weight update is the mean of its
//! members' (e.g. one recipe at several seeds), so a single forward scores
//! with the averaged weights. See `ocrank_engine::soup` for the construction
//! and its exactness check.

use std::path::PathBuf;

use anyhow::Context;

use super::common::{adapter_fingerprint, command_line};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// PEFT adapter directories (at least two) of the same base model,
    /// target modules, rank and lora_alpha.
    #[arg(value_name = "ADAPTER", required = true, num_args = 2..)]
    pub adapters: Vec<PathBuf>,
    /// Directory for the soup adapter (created if missing); use it with
    /// `--adapter DIR` like any trained adapter.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let command = command_line();
    let soup = ocrank_engine::soup::soup_adapters(&args.adapters, &args.out, &command)
        .with_context(|| format!("making the soup {}", args.out.display()))?;
    record_fingerprints(&args)?;
    eprintln!(
        "soup of {} adapters (rank {} -> {}, lora_alpha -> {}, {} modules; update checked \
         against the members' mean: max relative error {:.1e}) -> {}",
        soup.members,
        soup.member_rank,
        soup.rank,
        soup.alpha,
        soup.modules,
        soup.max_relative_error,
        args.out.display()
    );
    Ok(())
}

/// Adds to the soup's record the fingerprints an audit records for an
/// adapter (`settings.adapter_sha256`): each member's, so the soup points
/// at the exact trained adapters, and the soup's own, so an audit made
/// with `--adapter` the soup can be matched to this record.
fn record_fingerprints(args: &Args) -> anyhow::Result<()> {
    let path = args.out.join(ocrank_engine::soup::SOUP_RECORD);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut record: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    record["members_adapter_sha256"] = args
        .adapters
        .iter()
        .map(|d| adapter_fingerprint(d))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into();
    record["adapter_sha256"] = adapter_fingerprint(&args.out)?.into();
    let text = serde_json::to_string_pretty(&record)? + "\n";
    Ok(ocrank_data::write_whole(&path, text.as_bytes())?)
}
