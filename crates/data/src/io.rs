//! File access shared by the loaders: every error carries the path, and files
//! whose name ends in `.gz` are (de)compressed transparently.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::Path;

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

/// A buffered output file, gzipped when its name ends in `.gz`. Call
/// [`Writer::finish`] to flush it and see any error (dropping it flushes but
/// loses the error).
pub(crate) struct Writer {
    out: Box<dyn Finish>,
    path: std::path::PathBuf,
}

trait Finish: Write {
    fn finish(&mut self) -> std::io::Result<()>;
}

impl Finish for BufWriter<File> {
    fn finish(&mut self) -> std::io::Result<()> {
        self.flush()
    }
}

impl Finish for GzEncoder<BufWriter<File>> {
    fn finish(&mut self) -> std::io::Result<()> {
        self.try_finish()?;
        self.get_mut().flush()
    }
}

impl Writer {
    /// Creates (truncates) `path`, and its missing parent directories: a
    /// command that computed for minutes must not lose its result to an
    /// output directory nobody made yet.
    pub(crate) fn create(path: &Path) -> Result<Self> {
        create_parent(path)?;
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let out: Box<dyn Finish> = if is_gz(path) {
            Box::new(GzEncoder::new(BufWriter::new(file), Compression::default()))
        } else {
            Box::new(BufWriter::new(file))
        };
        Ok(Writer {
            out,
            path: path.to_owned(),
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

    /// Flushes everything, ending the gzip stream of a `.gz` file.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.out.finish().map_err(|e| Error::io(&self.path, e))
    }
}
