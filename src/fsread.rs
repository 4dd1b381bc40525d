//! Bounded reading of user-given files: the one way robustream reads a file whose path a user gave
//! (images, masks, manifests and annotations through `source::decode::read_file`; configs, model
//! descriptions, class lists, labels sidecars, tables, class maps and summaries through
//! [`read_text`]).
//!
//! A path must name a regular file: a directory, a device (`/dev/zero` would never end), a FIFO
//! (opening one with no writer blocks for ever) or a socket is refused from its metadata, without
//! being opened. A file larger than the caller's limit is refused before it is read, and no read
//! goes past the limit (a file that grows while read included).
//!
//! This module sits at the bottom of the crate (below `frame`): it imports nothing from it.

use std::fs::Metadata;
use std::io::Read;
use std::path::Path;

/// The most bytes read of a small text file (16 MiB): a run config, a model description, a class
/// list, an ImageNet-C baseline table, a class map or XIMAGENET-12 inner results. The largest
/// legitimate ones are class lists (ImageNet-21k's 21,841 names take under 1 MiB), so 16 MiB leaves
/// room without letting a wrong path (a video, a disk image) fill memory.
pub(crate) const MAX_TEXT_BYTES: u64 = 16 << 20;

/// The most bytes read of a large text file (64 MiB): a stream's labels sidecar, which may hold a
/// row per frame (a day of 30 fps video labelled frame by frame is ~2.6 million rows, ~50 MiB),
/// and a run's `summary.json`, which robustream writes itself and must always be able to read back.
pub(crate) const MAX_TABLE_TEXT_BYTES: u64 = 64 << 20;

/// Why a bounded read failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The path could not be inspected, opened or read.
    Io(std::io::Error),
    /// The path is not a regular file ([`non_file_kind`]: "a directory", "a FIFO (named pipe)", …).
    NotAFile(&'static str),
    /// The file holds more than `limit` bytes.
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text ([`read_text`] only).
    NotUtf8 {
        /// The 1-based line holding the first byte that is not UTF-8.
        line: usize,
    },
}

impl std::fmt::Display for ReadError {
    /// The reason on one line, without the file's name (the caller's message names it) and without
    /// a fix for I/O errors (the caller knows where the path came from).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::NotAFile(kind) => write!(f, "it is {kind}, not a regular file"),
            Self::TooLarge { limit } => write!(
                f,
                "the file is larger than {} (the most robustream reads of such a file)",
                size_text(*limit)
            ),
            Self::NotUtf8 { line } => write!(
                f,
                "the file is not UTF-8 text (line {line} holds a byte that is not UTF-8; save the \
                 file as UTF-8)"
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ReadError> for std::io::Error {
    /// An I/O error of the matching kind whose text is the reason ([`ReadError`]'s `Display`), for
    /// callers whose error types hold an `std::io::Error`; an I/O error comes back as it was.
    fn from(e: ReadError) -> Self {
        use std::io::ErrorKind as K;
        let kind = match &e {
            ReadError::Io(_) => K::Other,
            ReadError::NotAFile(_) => K::InvalidInput,
            ReadError::TooLarge { .. } => K::FileTooLarge,
            ReadError::NotUtf8 { .. } => K::InvalidData,
        };
        match e {
            ReadError::Io(io) => io,
            other => std::io::Error::new(kind, other.to_string()),
        }
    }
}

/// What a path that is not a regular file is, for messages: "a directory", "a character device",
/// "a block device", "a FIFO (named pipe)", "a socket", or "not a regular file". `None` for a
/// regular file.
pub(crate) fn non_file_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// `n` bytes in MiB or GiB, for messages ("256 MiB", "10.1 GiB").
pub(crate) fn size_text(n: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    let mib = n as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else if mib >= 10.0 || mib.fract() == 0.0 {
        format!("{mib:.0} MiB")
    } else {
        format!("{mib:.1} MiB")
    }
}

/// Reads the regular file at `path`, at most `limit` bytes. A directory, device, FIFO or socket is
/// refused without being opened, a larger file before it is read.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
    if let Some(kind) = non_file_kind(&meta) {
        return Err(ReadError::NotAFile(kind));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// [`read_bounded`] for a text file: the bytes must also be UTF-8 (the error names the line of the
/// first byte that is not). A leading byte-order mark is kept, as `std::fs::read_to_string` did.
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bounded(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..good].iter().filter(|&&b| b == b'\n').count();
        ReadError::NotUtf8 { line }
    })
}

/// [`read_text`] with the failure as an `std::io::Error` (see `From<ReadError>`), for callers whose
/// error types hold one: the text names what is wrong (a device, a FIFO, a size over `limit`, bytes
/// that are not UTF-8) and the caller's message adds the file and the fix.
pub(crate) fn read_text_io(path: &Path, limit: u64) -> std::io::Result<String> {
    read_text(path, limit).map_err(Into::into)
}

/// Paths that a bounded read must refuse, for the tests of every reader: `/dev/zero` (where it
/// exists), a FIFO (where `mkfifo` runs; opening it would block) and a sparse file one byte over
/// `limit` (no disk used), each with the reason the message must give.
#[cfg(test)]
pub(crate) fn refused_paths(dir: &Path, limit: u64) -> Vec<(std::path::PathBuf, &'static str)> {
    let mut out = Vec::new();
    if Path::new("/dev/zero").exists() {
        out.push((
            "/dev/zero".into(),
            "it is a character device, not a regular file",
        ));
    }
    let fifo = dir.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        out.push((fifo, "it is a FIFO (named pipe), not a regular file"));
    }
    let big = dir.join("huge");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(limit + 1))
        .expect("a sparse file");
    out.push((big, "the file is larger than"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_read_from_regular_files_only_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.txt");
        std::fs::write(&ok, "a\nb\n").unwrap();
        assert_eq!(read_text(&ok, MAX_TEXT_BYTES).unwrap(), "a\nb\n");

        let e = read_text(dir.path(), MAX_TEXT_BYTES).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
        if Path::new("/dev/zero").exists() {
            let e = read_text_io(Path::new("/dev/zero"), MAX_TEXT_BYTES).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            assert_eq!(
                e.to_string(),
                "it is a character device, not a regular file"
            );
        }
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Refused from its metadata: opening it (no writer) would block this test for ever.
            let e = read_text(&fifo, MAX_TEXT_BYTES).unwrap_err();
            assert_eq!(
                e.to_string(),
                "it is a FIFO (named pipe), not a regular file"
            );
        }
        let big = dir.path().join("big.txt");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_TEXT_BYTES + 1)
            .unwrap();
        let e = read_text_io(&big, MAX_TEXT_BYTES).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(
            e.to_string(),
            "the file is larger than 16 MiB (the most robustream reads of such a file)"
        );
        let latin1 = dir.path().join("latin1.txt");
        std::fs::write(&latin1, b"cat\ncaf\xe9\n").unwrap();
        let e = read_text(&latin1, MAX_TEXT_BYTES).unwrap_err();
        assert!(matches!(e, ReadError::NotUtf8 { line: 2 }), "{e}");
        assert!(e.to_string().contains("save the file as UTF-8"), "{e}");

        let e = read_text_io(&dir.path().join("nope"), MAX_TEXT_BYTES).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn sizes_read_as_mib_or_gib() {
        assert_eq!(size_text(16 << 20), "16 MiB");
        assert_eq!(size_text(256 << 20), "256 MiB");
        assert_eq!(size_text(1536 << 10), "1.5 MiB");
        assert_eq!(size_text(10_800_000_000), "10.1 GiB");
    }
}
