//! `ocrank merge-labels`: one training labels file from several, query by
//! query (the first file that has a query gives all of its labels), e.g. gold
//! grades where a pool is judged and an embedding teacher's labels elsewhere.

use std::path::PathBuf;

use ocrank_data::MergeSource;
use serde_json::json;

use super::common::{command_line, sha256_file};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example (gold grades for DL21, MiniLM labels for the DL22 queries):
  ocrank label --teacher gold --pools ../shared/data/msmarco/dl21/bm25-top100.json \\
      --qrels ../shared/data/msmarco/dl21/qrels.txt --depth 20 --out runs/train/labels-gold-dl21.jsonl
  ocrank merge-labels runs/train/labels-gold-dl21.jsonl runs/train/labels-minilm.jsonl \\
      --out runs/train/labels-gold21-minilm22.jsonl")]
pub struct Args {
    /// Labels files written by `ocrank label`, in order of precedence: a
    /// query's labels all come from the first file that has the query.
    #[arg(value_name = "FILE", required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// Output labels JSONL.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sources = args
        .files
        .iter()
        .map(|f| {
            Ok(MergeSource {
                file: f.display().to_string(),
                sha256: sha256_file(f)?,
                labels: ocrank_data::read_labels(f)?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (mut merged, tallies) = ocrank_data::merge_labels(&sources);
    merged.header.provenance["command"] = json!(command_line());
    for t in &tallies {
        eprintln!(
            "{}: {} queries taken ({} labels), {} shadowed by an earlier file",
            t.file,
            t.queries_taken.len(),
            t.labels_taken,
            t.queries_shadowed,
        );
    }
    ocrank_data::write_labels(&args.out, &merged)?;
    eprintln!(
        "{} labels for {} queries -> {}",
        merged.len(),
        merged.by_query.len(),
        args.out.display()
    );
    Ok(())
}
