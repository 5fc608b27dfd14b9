//! `ocrank export-tokenizer`: a model's tokenizer and chat template as a
//! small Hugging Face directory (tokenizer.json, tokenizer_config.json).
//! A GGUF file embeds both; this writes them out so that they can travel
//! where the weights cannot (`ocrank device-check --tokenizer DIR`).

use std::path::PathBuf;

use anyhow::Context;

use super::common::ModelArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Directory to write (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let engine = args.model.load()?;
    engine
        .save_tokenizer(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "wrote the tokenizer ({} tokens) and chat template of {} to {}",
        engine.tokenizer.vocab_size(),
        args.model.model.display(),
        args.out.display()
    );
    Ok(())
}
