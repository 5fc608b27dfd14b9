//! `ocrank soup`: one LoRA adapter whose weight update is the mean of its
//! members' (e.g. one recipe at several seeds), so a single forward scores
//! with the averaged weights. See `ocrank_engine::soup` for the construction
//! and its exactness check.

use std::path::PathBuf;

use anyhow::Context;

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
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let soup = ocrank_engine::soup::soup_adapters(&args.adapters, &args.out, &command)
        .with_context(|| format!("making the soup {}", args.out.display()))?;
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
