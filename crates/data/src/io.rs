//! File access shared by the loaders: every error carries the path, and files
//! whose name ends in `.gz` are (de)compressed transparently.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::{read::MultiGzDecoder, write::GzEncoder, Compression};

use crate::{Error, Result};

pub(crate) fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// The whole file as UTF-8 text (gunzipped when the name ends in `.gz`), without
/// a leading byte-order mark. Invalid UTF-8 is a parse error naming its line.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    let read = if is_gz(path) {
        MultiGzDecoder::new(file).read_to_end(&mut bytes)
    } else {
        { file }.read_to_end(&mut bytes)
    };
    read.map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
        Error::parse(path, line, "text", "invalid UTF-8")
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// Creates the directories above `path` that do not exist yet; the error
/// names the directory that could not be made.
fn create_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        _ => Ok(()),
    }
}

/// A buffered output file, gzipped when its name ends in `.gz`.
///
/// A file made by [`Writer::create`] is written beside its destination under
/// a name of its own (`.NAME.PID-N.part`) and renamed onto it by
/// [`Writer::finish`]: until then `path` keeps whatever it held, so a run
/// killed mid-write (or one that fails on a bad record) never leaves a
/// truncated file that a later run would take for a finished one, and two
/// processes writing the same output race only to the last rename. A writer
/// dropped without `finish` removes its partial file. [`Writer::append`]
/// writes in place: appending is how resumable outputs grow.
pub(crate) struct Writer {
    out: Box<dyn Finish>,
    path: PathBuf,
    /// The partial file of `create`, renamed onto `path` by `finish`.
    staging: Option<PathBuf>,
}

trait Finish: Write {
    fn finish(&mut self) -> std::io::Result<()>;
}

/// Everything written reaches the disk before `finish` returns (and so
/// before a created file is renamed into place).
impl Finish for BufWriter<File> {
    fn finish(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.get_ref().sync_all()
    }
}

impl Finish for GzEncoder<BufWriter<File>> {
    fn finish(&mut self) -> std::io::Result<()> {
        self.try_finish()?;
        self.get_mut().finish()
    }
}

/// The partial file `create` writes for `path`: hidden, in the same directory
/// (so the rename stays on one file system), unique to this process and call.
fn staging_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(Default::default, |s| s.to_string_lossy());
    path.with_file_name(format!(".{name}.{}-{n}.part", std::process::id()))
}

/// Replaces `path` with `bytes` through [`Writer::create`] (so gzipped when
/// the name ends in `.gz`, like every output of this crate): until the
/// bytes are synced and renamed into place `path` keeps what it held, a
/// failed write leaves no partial file, and two processes writing one path
/// each land a whole file. For small outputs made in memory: adapters,
/// their configs, records.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut w = Writer::create(path)?;
    w.out.write_all(bytes).map_err(|e| Error::io(path, e))?;
    w.finish()
}

impl Writer {
    /// Starts replacing `path` (the replacement lands at [`Writer::finish`]).
    /// Its missing parent directories are made now: a command that computed
    /// for minutes must not lose its result to an output directory nobody
    /// made yet. A directory in its place is refused before any work.
    pub(crate) fn create(path: &Path) -> Result<Self> {
        create_parent(path)?;
        if path.is_dir() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let staging = staging_path(path);
        let file = File::create(&staging).map_err(|e| Error::io(path, e))?;
        let out: Box<dyn Finish> = if is_gz(path) {
            Box::new(GzEncoder::new(BufWriter::new(file), Compression::default()))
        } else {
            Box::new(BufWriter::new(file))
        };
        Ok(Writer {
            out,
            path: path.to_owned(),
            staging: Some(staging),
        })
    }

    /// Opens `path` for appending, creating it (and its missing parent
    /// directories) when missing. Plain files only.
    pub(crate) fn append(path: &Path) -> Result<Self> {
        if is_gz(path) {
            return Err(Error::invalid(path, "cannot append to a gzipped file"));
        }
        create_parent(path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Writer {
            out: Box::new(BufWriter::new(file)),
            path: path.to_owned(),
            staging: None,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one line (the newline is added here).
    pub(crate) fn line(&mut self, line: &str) -> Result<()> {
        (self.out.write_all(line.as_bytes()))
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| Error::io(&self.path, e))
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// Flushes and syncs everything, ending the gzip stream of a `.gz` file;
    /// a file of [`Writer::create`] then replaces `path` in one rename.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.out.finish().map_err(|e| Error::io(&self.path, e))?;
        if let Some(staging) = self.staging.take() {
            if let Err(e) = std::fs::rename(&staging, &self.path) {
                let _ = std::fs::remove_file(&staging);
                return Err(Error::io(&self.path, e));
            }
        }
        Ok(())
    }
}

impl Drop for Writer {
    /// An unfinished `create` leaves `path` as it was.
    fn drop(&mut self) {
        if let Some(staging) = self.staging.take() {
            let _ = std::fs::remove_file(staging);
        }
    }
}
