//! The Python scripts that make reported numbers (`scripts/ensemble_scores.py`,
//! which combines trained scorers' readouts, `scripts/hotpotqa_bm25.py`,
//! HotpotQA's BM25 pools, qrels and run, and `scripts/answer_flip_extras.py`,
//! the answer-flip report's extra counts) have unit tests under
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
