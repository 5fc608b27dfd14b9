//! `ocrank compare DIR...`: audits side by side, each against the first, with
//! paired-bootstrap differences and Holm-adjusted significance.

use std::path::PathBuf;

use ocrank_audit::compare;
use ocrank_metrics::stats::Bootstrap;

use super::common::{command_line, write_output};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example:
  ocrank compare runs/audit-batched runs/audit-invariant runs/audit-bsc --out runs/compare.md")]
pub struct Args {
    /// Audit directories (holding results.json); the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Measures to compare (per-query keys of results.json).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ndcg_at_10_mean,ndcg_at_10_worst,order_spread,tau_psi,retained_set_overlap"
    )]
    pub measures: Vec<String>,
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Add each audit's BSC@K point (G >= 2 disjoint groups of K
    /// permutations, from `audit --bsc`) as a variant of its own.
    #[arg(long, value_name = "K")]
    pub bsc: Option<usize>,
    /// Also write the table (Markdown) to this file, under a first line
    /// (an HTML comment) holding the command that made it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut audits = Vec::new();
    for d in &args.dirs {
        audits.push(compare::load(d).map_err(anyhow::Error::msg)?);
    }
    if let Some(k) = args.bsc {
        for d in &args.dirs {
            if let Some(b) = compare::load_bsc(d, k).map_err(anyhow::Error::msg)? {
                audits.push(b);
            }
        }
        anyhow::ensure!(
            audits.len() > args.dirs.len(),
            "no audit has a BSC@{k} point with 2 or more groups (audit with --bsc {k} and at least {} permutations)",
            2 * k
        );
    }
    compare::disambiguate(&mut audits);
    let boot = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
        level: 0.95,
    };
    let rows = compare::compare(&audits, &args.measures, boot);
    anyhow::ensure!(
        !rows.is_empty(),
        "no measure of {:?} is shared by the audits",
        args.measures
    );
    let table = compare::render_markdown(&audits, &rows);
    print!("{table}");
    if let Some(out) = &args.out {
        write_output(out, format!("<!-- {} -->\n{table}", command_line()))?;
    }
    Ok(())
}
