//! Run outputs appended a line at a time (`resources.csv`, `challenge.jsonl`, `saliency.jsonl`),
//! written as `records.jsonl` is ([`super::jsonl::RecordWriter`]): each line in one write loop
//! handed to the system at once; a line that cannot be written (a full disk, a file size limit) is
//! cut off again, so the file ends with whole lines, and the error names the file, the line, the
//! cause and the fix ([`ReportError::LineWrite`]).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{PartialWrite, ReportError};

/// A file appended whole units at a time (a line; a frame's batch of records): each unit goes to the
/// system in one write loop, and a unit that cannot be written completely is cut off again, so the
/// file always ends with whole units. Shared by [`LineFile`] and [`super::jsonl::RecordWriter`].
#[derive(Debug)]
pub(crate) struct WholeAppender {
    file: File,
    /// Bytes of whole units in the file: where a failed unit is cut back to.
    len: u64,
}

impl WholeAppender {
    /// Appends to `file`, which is empty (just created).
    pub(crate) fn new(file: File) -> Self {
        Self { file, len: 0 }
    }

    /// Appends to `file`, which holds `len` bytes of whole units and is positioned at their end.
    pub(crate) fn at(file: File, len: u64) -> Self {
        Self { file, len }
    }

    /// Writes `buf` whole and flushes; on failure returns the cause and what became of the part of
    /// `buf` that reached the file (cut off again, or left when cutting failed too).
    pub(crate) fn write_whole(&mut self, buf: &[u8]) -> Result<(), (std::io::Error, PartialWrite)> {
        let mut done = 0;
        let failed = loop {
            if done == buf.len() {
                break self.file.flush().err();
            }
            match self.file.write(&buf[done..]) {
                Ok(0) => break Some(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        if let Some(source) = failed {
            let cut = match done {
                0 => PartialWrite::Nothing,
                n => match self.cut_back() {
                    Ok(()) => PartialWrite::CutBack(n),
                    Err(e) => PartialWrite::Left(n, e),
                },
            };
            return Err((source, cut));
        }
        self.len += buf.len() as u64;
        Ok(())
    }

    /// Truncates the file to its whole units and writes on from there.
    fn cut_back(&mut self) -> std::io::Result<()> {
        self.file.set_len(self.len)?;
        self.file.seek(SeekFrom::Start(self.len)).map(|_| ())
    }
}

/// An output file written whole lines at a time.
#[derive(Debug)]
pub(crate) struct LineFile {
    path: PathBuf,
    out: WholeAppender,
}

impl LineFile {
    /// Creates (or truncates) the file at `path`.
    pub(crate) fn create(path: &Path) -> Result<Self, ReportError> {
        let file = File::create(path).map_err(ReportError::io("create", path))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: WholeAppender::new(file),
        })
    }

    /// Appends `line` and a newline. `what` names the line in the error ("the header", "the line
    /// of frame `x`").
    pub(crate) fn append(
        &mut self,
        line: &str,
        what: impl FnOnce() -> String,
    ) -> Result<(), ReportError> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.out
            .write_whole(&buf)
            .map_err(|(source, cut)| ReportError::LineWrite {
                path: self.path.clone(),
                what: what(),
                source,
                cut,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_whole_and_a_failed_one_names_file_line_and_fix() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.csv");
        let mut f = LineFile::create(&p).unwrap();
        f.append("t_s,rss_mib", || "the header".into()).unwrap();
        f.append("0.0,1.0", || "a row".into()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "t_s,rss_mib\n0.0,1.0\n"
        );
        if Path::new("/dev/full").exists() {
            // Every write to /dev/full fails with ENOSPC, as on a full disk.
            let full = d.path().join("full.csv");
            std::os::unix::fs::symlink("/dev/full", &full).unwrap();
            let mut f = LineFile::create(&full).unwrap();
            let e = f
                .append("x", || "the header".into())
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "cannot write the header to {}: No space left on device (os error 28); free \
                     disk space or write the run elsewhere (--out)",
                    full.display()
                )
            );
        }
    }
}
