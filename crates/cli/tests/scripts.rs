//! The Python scripts that make reported numbers (`scripts/ensemble_scores.py`,
//! which combines trained scorers' readouts, `scripts/hotpotqa_bm25.py`,
//! HotpotQA's BM25 pools, qrels and run, `scripts/answer_flip_extras.py`,
//! the answer-flip report's extra counts, and `scripts/seed_pooled.py`,
//! `scripts/retention.py`, `scripts/bsc_match.py` and
//! `scripts/paired_vs_run.py`, the training reports' pooled, decision-set,
//! BSC@K and against-BM25 differences, and `scripts/selection_margin.py`,
//! how decided a checkpoint selection is) have unit tests under
//! `scripts/tests/`; this runs them with the workspace's
//! tests, so CI covers them. Needs `python3` (standard library only), which
//! `scripts/setup.sh` needs as well.

mod common;

use std::process::Command;

use common::root;

#[test]
fn python_script_tests_pass() {
    let out = Command::new("python3")
        .current_dir(root())
        .args(["-m", "unittest", "discover", "-s", "scripts/tests", "-v"])
        .output()
        .expect("python3 must be on PATH to test scripts/ (scripts/setup.sh needs it too)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scripts/tests failed:\n{stderr}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // unittest exits 0 when it finds no tests at all; a moved directory must fail.
    assert!(
        stderr.contains("Ran ") && !stderr.contains("Ran 0 tests"),
        "no script tests were found:\n{stderr}"
    );
}

/// The device tool carries the working tree (tracked files included) next to
/// at most 64 MiB of carried files, and the model travels in halves of
/// 47 MiB (scripts/device-train.sh): with reports/ and adapters/ moved out by
/// scripts/device-lean.sh, what is left must stay well under the 17 MiB that
/// leaves. A large file committed elsewhere would block every device call.
#[test]
fn the_tree_without_reports_fits_beside_a_model_half() {
    let out = match Command::new("git")
        .current_dir(root())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
    {
        Ok(out) if out.status.success() => out,
        _ => {
            eprintln!("not a git checkout: the device tree size is not checked");
            return;
        }
    };
    let mut total = 0u64;
    let mut largest = (0u64, String::new());
    for path in out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        if path.starts_with("reports/") || path.starts_with("adapters/") {
            continue;
        }
        // A tracked file deleted in the working tree does not travel.
        let Ok(meta) = std::fs::symlink_metadata(root().join(&path)) else {
            continue;
        };
        total += meta.len();
        if meta.len() > largest.0 {
            largest = (meta.len(), path);
        }
    }
    assert!(
        total < 12 << 20,
        "the working tree without reports/ and adapters/ is {total} bytes (largest: {} bytes, {}): \
         a device call carrying a model half (47 MiB) would exceed 64 MiB",
        largest.0,
        largest.1
    );
}
