//! `records.jsonl`: one compact JSON [`Record`] per line, appended a batch at a time and handed to the
//! operating system after every batch, so a killed run loses nothing already written.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::ReportError;
use super::lines::WholeAppender;
use crate::metrics::Record;

/// File name of the records file in a run directory.
pub(crate) const RECORDS_JSONL: &str = "records.jsonl";

/// Writes records to a JSONL file.
#[derive(Debug)]
pub struct RecordWriter {
    path: PathBuf,
    out: WholeAppender,
    /// Reused serialisation buffer: one batch is written with a single `write_all`.
    buf: Vec<u8>,
    written: u64,
}

impl RecordWriter {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> Result<Self, ReportError> {
        let file = File::create(path).map_err(ReportError::io("create", path))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: WholeAppender::new(file),
            buf: Vec::new(),
            written: 0,
        })
    }

    /// Opens the records of a run killed part way (`run --resume`, docs/deploy.md#resume) to go on
    /// appending: a last line without its `\n` is dropped, and so is the last frame in the file
    /// (its records may be cut short; a frame's records are consecutive lines with the same `seq`,
    /// or the same `frame` where `seq` is absent), so every frame kept is whole — unless `ended`
    /// says the run wrote its final summary, which comes after its last record. Returns the
    /// writer, positioned after the kept records, and those records. An absent file starts empty. A
    /// complete line that is not a record is an error naming the file and line, as
    /// [`read_records`] says.
    pub(crate) fn resume(path: &Path, ended: bool) -> Result<(Self, Vec<Record>), ReportError> {
        if !path.exists() {
            return Ok((Self::create(path)?, Vec::new()));
        }
        let (records, ends) = read_with_ends(path)?;
        let keep = match records.last() {
            Some(_) if ended => records.len(),
            Some(last) => records
                .iter()
                .rposition(|r| !same_frame(r, last))
                .map_or(0, |i| i + 1),
            None => 0,
        };
        let len = match keep {
            0 => 0,
            n => ends[n - 1],
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(ReportError::io("open", path))?;
        file.set_len(len)
            .map_err(ReportError::io("truncate", path))?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(len))
            .map_err(ReportError::io("open", path))?;
        let mut records = records;
        records.truncate(keep);
        let writer = Self {
            path: path.to_path_buf(),
            out: WholeAppender::at(file, len),
            buf: Vec::new(),
            written: keep as u64,
        };
        Ok((writer, records))
    }

    /// Appends one line per record (compact JSON, `\n`-terminated) and flushes. A batch is one
    /// frame: when writing it fails (a full disk), what reached the file of it is cut off again,
    /// so the file ends with the last whole frame, and the error names the file and the frame
    /// ([`ReportError::RecordsWrite`]).
    pub fn write_batch(&mut self, records: &[Record]) -> Result<(), ReportError> {
        self.buf.clear();
        for r in records {
            // Serialising a Record into memory cannot fail: all keys are strings.
            serde_json::to_writer(&mut self.buf, r).expect("a Record serialises to JSON");
            self.buf.push(b'\n');
        }
        self.out
            .write_whole(&self.buf)
            .map_err(|(source, cut)| ReportError::RecordsWrite {
                path: self.path.clone(),
                frame: records.first().map(|r| r.frame.clone()).unwrap_or_default(),
                source,
                cut,
            })?;
        self.written += records.len() as u64;
        Ok(())
    }

    /// Number of records written so far.
    #[cfg(test)]
    fn written(&self) -> u64 {
        self.written
    }

    /// The file being written.
    #[cfg(test)]
    fn path(&self) -> &Path {
        &self.path
    }
}

/// The records of a JSONL file.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RecordsRead {
    /// Records in file order.
    pub(crate) records: Vec<Record>,
    /// Number of truncated final lines skipped (0 or 1): a last line without its `\n` that does not
    /// parse, as a run killed mid-write leaves behind. Worth a warning, not an error.
    pub(crate) truncated: usize,
}

/// Opens a records file for reading. A FIFO or device in its place is refused before it is
/// opened: opening a FIFO blocks, and /dev/zero (no newline, ever) would be read without end.
fn open_records(path: &Path) -> Result<BufReader<File>, ReportError> {
    let meta = std::fs::metadata(path).map_err(ReportError::io("read", path))?;
    if let Some(kind) = crate::fsread::non_file_kind(&meta) {
        return Err(ReportError::io("read", path)(
            crate::fsread::ReadError::NotAFile(kind).into(),
        ));
    }
    let file = File::open(path).map_err(ReportError::io("read", path))?;
    Ok(BufReader::new(file))
}

/// Whether two consecutive records belong to one frame: the same position where both have one,
/// else the same frame id.
fn same_frame(a: &Record, b: &Record) -> bool {
    match (a.seq, b.seq) {
        (Some(x), Some(y)) => x == y,
        _ => a.frame == b.frame,
    }
}

/// The whole records of a JSONL file (an unterminated last line left out) and, for each, the byte
/// offset just after its line.
fn read_with_ends(path: &Path) -> Result<(Vec<Record>, Vec<u64>), ReportError> {
    let mut reader = open_records(path)?;
    let (mut records, mut ends) = (Vec::new(), Vec::new());
    let mut line = Vec::new();
    let (mut number, mut offset) = (0u64, 0u64);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(ReportError::io("read", path))?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok((records, ends));
        }
        number += 1;
        offset += n as u64;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Record>(text) {
            Ok(r) => {
                records.push(r);
                ends.push(offset);
            }
            Err(source) => {
                return Err(ReportError::MalformedRecord {
                    path: path.to_path_buf(),
                    line: number,
                    source,
                });
            }
        }
    }
}

/// Reads all records of a JSONL file. Blank lines are skipped. A complete line that is not a valid
/// record is an error naming the file and line; an unterminated, unparsable last line is skipped and
/// counted in [`RecordsRead::truncated`].
pub(crate) fn read_records(path: &Path) -> Result<RecordsRead, ReportError> {
    let mut reader = open_records(path)?;
    let mut out = RecordsRead::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(ReportError::io("read", path))?;
        if n == 0 {
            return Ok(out);
        }
        number += 1;
        let terminated = line.last() == Some(&b'\n');
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Record>(text) {
            Ok(r) => out.records.push(r),
            Err(_) if !terminated => out.truncated += 1,
            Err(source) => {
                return Err(ReportError::MalformedRecord {
                    path: path.to_path_buf(),
                    line: number,
                    source,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::{rec, timed};
    use crate::report::PartialWrite;

    fn sample() -> Vec<Record> {
        vec![
            timed(
                rec("a.jpg", "clean", Some(1), &[1, 2, 3]),
                &[("infer", 1.25), ("total", 3.0)],
            ),
            rec("a.jpg", "corruption/fog/3", Some(1), &[2, 1]),
            rec("b\"odd\nname", "clean", None, &[]),
        ]
    }

    #[test]
    fn writes_one_line_per_record_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_JSONL);
        let mut w = RecordWriter::create(&path).unwrap();
        let recs = sample();
        w.write_batch(&recs[..2]).unwrap();
        // Flushed after each batch: readable while the writer is still open.
        assert_eq!(read_records(&path).unwrap().records, recs[..2]);
        w.write_batch(&recs[2..]).unwrap();
        w.write_batch(&[]).unwrap();
        assert_eq!(w.written(), 3);
        assert_eq!(w.path(), path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(
            text.starts_with(
                r#"{"format":3,"frame":"a.jpg","scenario":"clean","truth":1,"pred":1,"#
            )
        );
        let read = read_records(&path).unwrap();
        assert_eq!(
            read,
            RecordsRead {
                records: recs,
                truncated: 0
            }
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_device_as_records_is_refused_unopened() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join(RECORDS_JSONL);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Opening the FIFO would block for ever: the error must come from its metadata.
            let e = read_records(&fifo).unwrap_err().to_string();
            assert!(
                e.contains("it is a FIFO (named pipe), not a regular file"),
                "{e}"
            );
            assert!(e.ends_with("give the right run directory"), "{e}");
        }
        let e = read_records(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("it is a character device"), "{e}");
    }

    #[test]
    fn a_failed_write_names_the_file_the_frame_and_the_fix() {
        // /dev/full: every write fails with ENOSPC, as on a full disk.
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let mut w = RecordWriter::create(full).unwrap();
        let e = w.write_batch(&sample()).unwrap_err();
        assert!(
            matches!(
                e,
                ReportError::RecordsWrite {
                    cut: PartialWrite::Nothing,
                    ..
                }
            ),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot write the records of frame `a.jpg` to /dev/full: "),
            "{msg}"
        );
        assert!(msg.contains("free disk space"), "{msg}");
        assert_eq!(w.written(), 0);
        // A frame id is user text: bounded, and on one line.
        let mut long = sample();
        long[0].frame = format!("{}\n", "f".repeat(10_000));
        let msg = w.write_batch(&long).unwrap_err().to_string();
        assert!(msg.len() < 600 && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn create_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_JSONL);
        RecordWriter::create(&path)
            .unwrap()
            .write_batch(&sample())
            .unwrap();
        RecordWriter::create(&path).unwrap();
        assert!(read_records(&path).unwrap().records.is_empty());
    }

    #[test]
    fn truncated_last_line_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_JSONL);
        RecordWriter::create(&path)
            .unwrap()
            .write_batch(&sample())
            .unwrap();
        let full = std::fs::read(&path).unwrap();
        // Cut inside the last record.
        std::fs::write(&path, &full[..full.len() - 10]).unwrap();
        let read = read_records(&path).unwrap();
        assert_eq!(read.records, sample()[..2]);
        assert_eq!(read.truncated, 1);
        // A complete last record that only lost its newline is kept.
        std::fs::write(&path, &full[..full.len() - 1]).unwrap();
        assert_eq!(
            read_records(&path).unwrap(),
            RecordsRead {
                records: sample(),
                truncated: 0
            }
        );
    }

    #[test]
    fn malformed_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_JSONL);
        let good = serde_json::to_string(&sample()[0]).unwrap();
        std::fs::write(&path, format!("{good}\n\n{{\"frame\": 3}}\n{good}\n")).unwrap();
        let e = read_records(&path).unwrap_err();
        assert!(
            matches!(e, ReportError::MalformedRecord { line: 3, .. }),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.contains("records.jsonl:3: malformed record"), "{msg}");
        // A broken but complete (newline-terminated) last line is an error too.
        std::fs::write(&path, format!("{good}\n{{\"frame\"\n")).unwrap();
        assert!(matches!(
            read_records(&path),
            Err(ReportError::MalformedRecord { line: 2, .. })
        ));
        // Invalid UTF-8 in the middle is an error, not a panic.
        std::fs::write(&path, [b"\xff\xfe\n".as_slice(), good.as_bytes()].concat()).unwrap();
        assert!(matches!(
            read_records(&path),
            Err(ReportError::MalformedRecord { line: 1, .. })
        ));
    }

    #[test]
    fn blank_lines_and_crlf_are_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_JSONL);
        let good = serde_json::to_string(&sample()[1]).unwrap();
        std::fs::write(&path, format!("\n{good}\r\n  \n{good}\n")).unwrap();
        assert_eq!(read_records(&path).unwrap().records.len(), 2);
        std::fs::write(&path, "").unwrap();
        assert_eq!(read_records(&path).unwrap(), RecordsRead::default());
    }

    #[test]
    fn missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_records(&dir.path().join("gone.jsonl")).unwrap_err();
        assert!(
            matches!(e, ReportError::Io { .. }) && e.to_string().contains("gone.jsonl"),
            "{e}"
        );
    }
}
