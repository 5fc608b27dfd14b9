//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code)] // each test file uses a part

use std::path::PathBuf;
use std::process::Command;

/// The repository root (where `models/` and `../shared` are found).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the real `ocrank` binary from the repository root.
pub fn ocrank(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ocrank"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap()
}
