//! `ocrank`: a thin binary over the ocrank libraries.

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "ocrank",
    version,
    about = "Order-consistent LLM scoring: score, audit and evaluate batched pointwise scorers."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Audit a scorer: score pools under M permutations (resumable) and report
    /// ranking quality and decision stability.
    Audit(cmd::audit::Args),
    /// Answer flip, EM and F1: a frozen reader answers each question from the
    /// top passages of every permutation's ranking (multi-document QA).
    Answer(cmd::answer::Args),
    /// Compare audits side by side (paired bootstrap, Holm-adjusted).
    Compare(cmd::compare::Args),
    /// Evaluate a TREC run or a scores file against qrels (trec_eval semantics).
    Eval(cmd::eval::Args),
    /// Score pools with a local LLM (batched, pointwise or invariant).
    Score(cmd::score::Args),
    /// Benchmark the engine's scoring modes side by side on real pools.
    Bench(cmd::bench::Args),
    /// Export the permutation plan and rendered windows for an external scorer.
    Prompts(cmd::prompts::Args),
    /// Make training labels (gold, LLM teacher, embedding teacher).
    Label(cmd::label::Args),
    /// Merge labels files query by query (the first file with a query wins).
    MergeLabels(cmd::merge_labels::Args),
    /// Train the scorer with LoRA (single-order, order-averaged, perm-aug, OC-SFT).
    Train(cmd::train::Args),
    /// Choose a checkpoint on the held-out split by ranking quality.
    Select(cmd::select::Args),
    /// Benchmark a training step of each objective side by side.
    TrainBench(cmd::train_bench::Args),
    /// Check and time the engine on a device (GPU parity with the CPU,
    /// scoring and training) with random weights in real shapes.
    DeviceCheck(cmd::device_check::Args),
    /// Average LoRA adapters into one (a weight soup: the mean of their
    /// updates, scored in one forward).
    Soup(cmd::soup::Args),
    /// Serve a scorer over HTTP: POST a query and its candidates, get each
    /// candidate's grade distribution and score, the ranking and the
    /// retained set.
    Serve(cmd::serve::Args),
    /// Write a model's tokenizer and chat template as a small directory.
    ExportTokenizer(cmd::export_tokenizer::Args),
}

/// Errors print as one line: what failed, then its causes after colons.
fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Audit(args) => cmd::audit::run(args),
        Command::Answer(args) => cmd::answer::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Score(args) => cmd::score::run(args),
        Command::Prompts(args) => cmd::prompts::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Label(args) => cmd::label::run(args),
        Command::MergeLabels(args) => cmd::merge_labels::run(args),
        Command::Train(args) => cmd::train::run(args),
        Command::Select(args) => cmd::select::run(args),
        Command::TrainBench(args) => cmd::train_bench::run(args),
        Command::DeviceCheck(args) => cmd::device_check::run(args),
        Command::ExportTokenizer(args) => cmd::export_tokenizer::run(args),
        Command::Soup(args) => cmd::soup::run(args),
        Command::Serve(args) => cmd::serve::run(args),
    }
}
