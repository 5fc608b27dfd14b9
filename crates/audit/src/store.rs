//! The durable window log of an audit: one JSON line per scored window,
//! written with a single `write` and flushed, each line carrying a checksum
//! of its records. A run killed at any instant leaves at most one partial
//! last line, which the next run drops and scores again; every complete line
//! is reused. The log sits next to `settings.json`, the fingerprint of
//! everything that determines a score: a run whose settings differ is
//! refused, so stale scores are never reused.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ocrank_data::ScoreRecord;
use serde::{Deserialize, Serialize};

/// A window's place in the plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WindowKey {
    pub qid: String,
    pub permutation: usize,
    pub window: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    #[serde(flatten)]
    key: WindowKey,
    records: Vec<ScoreRecord>,
    /// New tokens run for this window, and forward passes.
    tokens: usize,
    forwards: usize,
    seconds: f64,
    /// FNV-1a 64 of the records' JSON, hex.
    checksum: String,
}

fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A scored window as stored.
#[derive(Debug, Clone)]
pub struct StoredWindow {
    pub records: Vec<ScoreRecord>,
    pub tokens: usize,
    pub forwards: usize,
    /// Wall time of the window's forward(s).
    pub seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: this directory holds {what} with other settings ({diff}); use a new --out directory", path.display())]
    Settings {
        path: PathBuf,
        /// What the directory holds ("an audit", "answers").
        what: &'static str,
        diff: String,
    },
}

/// An append-only JSON-lines log beside a `settings.json` fingerprint: the
/// mechanism under the audit's window log and `ocrank answer`'s answer
/// store. Opening refuses a directory whose settings differ (writing them
/// when new) and cuts an incomplete last line (a killed run), so that appends
/// start on a fresh line; each record is appended with one write, then fsync.
pub struct LineLog {
    path: PathBuf,
    file: File,
}

/// A [`LineLog`] just opened: the bytes of its complete lines, and how many
/// bytes of an incomplete last line were dropped.
pub struct OpenedLog {
    pub log: LineLog,
    pub complete: Vec<u8>,
    pub dropped_partial: usize,
}

impl LineLog {
    /// Opens (or starts) `dir/name` for `settings`; `what` names the
    /// directory's contents in the error for other settings.
    pub fn open(
        dir: &Path,
        name: &str,
        settings: &serde_json::Value,
        what: &'static str,
    ) -> Result<OpenedLog, StoreError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let settings_path = dir.join("settings.json");
        match std::fs::read_to_string(&settings_path) {
            Ok(text) => {
                let old = parse_settings(&settings_path, &text)?;
                if &old != settings {
                    return Err(StoreError::Settings {
                        path: dir.to_path_buf(),
                        what,
                        diff: diff_keys(&old, settings),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = serde_json::to_string_pretty(settings).expect("settings serialize");
                std::fs::write(&settings_path, text).map_err(io(&settings_path))?;
            }
            Err(e) => return Err(io(&settings_path)(e)),
        }
        let path = dir.join(name);
        let mut complete = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&path)(e)),
        };
        let end = complete
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let dropped_partial = complete.len() - end;
        complete.truncate(end);
        if dropped_partial > 0 {
            // Cut the partial line so that appends start on a fresh line.
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io(&path))?;
            f.set_len(end as u64).map_err(io(&path))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(OpenedLog {
            log: LineLog { path, file },
            complete,
            dropped_partial,
        })
    }

    /// Appends one record as a line, durably (one write, then fsync).
    pub fn append(&mut self, record: &impl Serialize) -> Result<(), StoreError> {
        let mut buf = serde_json::to_vec(record).expect("records serialize");
        buf.push(b'\n');
        self.file.write_all(&buf).map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub struct Store {
    log: LineLog,
    windows: BTreeMap<WindowKey, StoredWindow>,
    /// Bytes of an incomplete last line dropped when opening.
    pub dropped_partial: usize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Opens (or starts) the audit in `dir` for `settings`.
    pub fn open(dir: &Path, settings: &serde_json::Value) -> Result<Store, StoreError> {
        let opened = LineLog::open(dir, "windows.jsonl", settings, "an audit")?;
        let windows = parse_log(opened.log.path(), &opened.complete)?;
        Ok(Store {
            log: opened.log,
            windows,
            dropped_partial: opened.dropped_partial,
        })
    }

    pub fn get(&self, key: &WindowKey) -> Option<&StoredWindow> {
        self.windows.get(key)
    }

    pub fn len(&self) -> usize {
        self.windows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Appends a scored window durably (one write, then fsync).
    pub fn put(&mut self, key: WindowKey, window: StoredWindow) -> Result<(), StoreError> {
        let checksum = fnv1a(&serde_json::to_vec(&window.records).expect("records serialize"));
        let line = Line {
            key: key.clone(),
            records: window.records.clone(),
            tokens: window.tokens,
            forwards: window.forwards,
            seconds: window.seconds,
            checksum,
        };
        self.log.append(&line)?;
        self.windows.insert(key, window);
        Ok(())
    }

    pub fn windows(&self) -> impl Iterator<Item = (&WindowKey, &StoredWindow)> {
        self.windows.iter()
    }
}

fn parse_settings(path: &Path, text: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })
}

/// Parses the complete lines of a window log, verifying each checksum.
fn parse_log(path: &Path, bytes: &[u8]) -> Result<BTreeMap<WindowKey, StoredWindow>, StoreError> {
    let mut windows = BTreeMap::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let l: Line = serde_json::from_slice(line).map_err(|e| corrupt(e.to_string()))?;
        let sum = fnv1a(&serde_json::to_vec(&l.records).expect("records serialize"));
        if sum != l.checksum {
            return Err(corrupt(format!("checksum {} != {sum}", l.checksum)));
        }
        if windows.contains_key(&l.key) {
            return Err(corrupt(format!(
                "window {} of permutation {} of query {:?} is logged twice",
                l.key.window, l.key.permutation, l.key.qid
            )));
        }
        windows.insert(
            l.key,
            StoredWindow {
                records: l.records,
                tokens: l.tokens,
                forwards: l.forwards,
                seconds: l.seconds,
            },
        );
    }
    Ok(windows)
}

/// An audit directory read back without touching it: its settings and
/// every window of its log, each line's checksum verified.
#[derive(Debug, Clone)]
pub struct AuditLog {
    pub settings: serde_json::Value,
    pub windows: BTreeMap<WindowKey, StoredWindow>,
}

impl AuditLog {
    /// Reads the audit in `dir` (its `settings.json` and `windows.jsonl`).
    /// Unlike [`Store::open`] it never writes, so an incomplete last line
    /// (an audit killed or still running) is an error, not dropped.
    pub fn read(dir: &Path) -> Result<AuditLog, StoreError> {
        let settings_path = dir.join("settings.json");
        let text = std::fs::read_to_string(&settings_path).map_err(io(&settings_path))?;
        let settings = parse_settings(&settings_path, &text)?;
        let path = dir.join("windows.jsonl");
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
            return Err(StoreError::Corrupt {
                path: path.clone(),
                line: bytes.iter().filter(|&&b| b == b'\n').count() + 1,
                message: "incomplete last line: the audit was interrupted or is still running; \
                          rerun `ocrank audit` with the same --out to finish it"
                    .into(),
            });
        }
        let windows = parse_log(&path, &bytes)?;
        Ok(AuditLog { settings, windows })
    }
}

fn diff_keys(old: &serde_json::Value, new: &serde_json::Value) -> String {
    match (old.as_object(), new.as_object()) {
        (Some(a), Some(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => "settings".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(qid: &str, c: &str, slot: usize) -> ScoreRecord {
        ScoreRecord {
            qid: qid.into(),
            permutation: 0,
            candidate: c.into(),
            window: 0,
            slot,
            probs: [0.25; 4],
            mass: 0.9,
            score: 0.5,
        }
    }

    fn key(qid: &str, w: usize) -> WindowKey {
        WindowKey {
            qid: qid.into(),
            permutation: 0,
            window: w,
        }
    }

    #[test]
    fn reopens_keeps_complete_lines_and_drops_a_partial_one() {
        let dir = tempfile::tempdir().unwrap();
        let s = serde_json::json!({"mode": "batched"});
        let mut st = Store::open(dir.path(), &s).unwrap();
        let w = StoredWindow {
            records: vec![rec("q", "a", 1), rec("q", "b", 2)],
            tokens: 10,
            forwards: 1,
            seconds: 0.1,
        };
        st.put(key("q", 0), w.clone()).unwrap();
        st.put(key("q", 1), w).unwrap();
        drop(st);
        // Simulate kill -9 in the middle of a write.
        let path = dir.path().join("windows.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"qid\":\"q\",\"permutation\":0,\"win")
            .unwrap();
        drop(f);
        let mut st = Store::open(dir.path(), &s).unwrap();
        assert_eq!(st.len(), 2);
        assert!(st.dropped_partial > 0);
        st.put(
            key("q", 2),
            StoredWindow {
                records: vec![rec("q", "c", 1)],
                tokens: 5,
                forwards: 1,
                seconds: 0.1,
            },
        )
        .unwrap();
        drop(st);
        assert_eq!(Store::open(dir.path(), &s).unwrap().len(), 3);
    }

    #[test]
    fn other_settings_and_corrupt_lines_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(
            dir.path(),
            &serde_json::json!({"mode": "batched", "width": 20}),
        )
        .unwrap();
        st.put(
            key("q", 0),
            StoredWindow {
                records: vec![rec("q", "a", 1)],
                tokens: 1,
                forwards: 1,
                seconds: 0.1,
            },
        )
        .unwrap();
        drop(st);
        let err = Store::open(
            dir.path(),
            &serde_json::json!({"mode": "invariant", "width": 20}),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("mode"), "{err}");
        let path = dir.path().join("windows.jsonl");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("0.9", "0.8");
        std::fs::write(&path, text).unwrap();
        let err = Store::open(
            dir.path(),
            &serde_json::json!({"mode": "batched", "width": 20}),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn audit_log_reads_back_and_refuses_an_unfinished_log() {
        let dir = tempfile::tempdir().unwrap();
        let s = serde_json::json!({"mode": "batched"});
        let mut st = Store::open(dir.path(), &s).unwrap();
        for (w, c) in [(0, "a"), (1, "b")] {
            st.put(
                key("q", w),
                StoredWindow {
                    records: vec![rec("q", c, 1)],
                    tokens: 3,
                    forwards: 1,
                    seconds: 0.1,
                },
            )
            .unwrap();
        }
        drop(st);
        let log = AuditLog::read(dir.path()).unwrap();
        assert_eq!(log.settings, s);
        let cands: Vec<&str> = log
            .windows
            .values()
            .flat_map(|w| &w.records)
            .map(|r| r.candidate.as_str())
            .collect();
        assert_eq!(cands, ["a", "b"]);
        let path = dir.path().join("windows.jsonl");
        let before = std::fs::read(&path).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"qid\":\"q\"").unwrap();
        drop(f);
        let err = AuditLog::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("windows.jsonl:3") && err.contains("incomplete"),
            "{err}"
        );
        // Reading never repairs: the partial line is still there.
        assert_eq!(std::fs::read(&path).unwrap().len(), before.len() + 10);
        // A window logged twice is refused, not silently overwritten.
        let line = before.split(|&b| b == b'\n').next().unwrap();
        let mut twice = before.clone();
        twice.extend_from_slice(line);
        twice.push(b'\n');
        std::fs::write(&path, twice).unwrap();
        let err = AuditLog::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("windows.jsonl:3") && err.contains("twice"),
            "{err}"
        );
        let missing = tempfile::tempdir().unwrap();
        let err = AuditLog::read(missing.path()).unwrap_err().to_string();
        assert!(err.contains("settings.json"), "{err}");
    }
}
