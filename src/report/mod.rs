//! Reporters: what a run leaves on disk and prints. [`jsonl`] writes and reads the per-variant
//! records (`records.jsonl`); [`summary`] builds the run summary and renders it as JSON, Markdown, CSV
//! and a terminal table, each metric family through its [`family::Family`] in [`families`]
//! (docs/ARCHITECTURE.md#adding-a-metric-family); [`compare`] sets two runs side by side and gates
//! one on the other.

pub mod compare;
pub(crate) mod families;
pub(crate) mod family;
pub(crate) mod fleet;
pub mod flips;
pub(crate) mod format;
pub(crate) mod html;
pub mod jsonl;
pub(crate) mod lines;
pub(crate) mod progress;
pub(crate) mod prometheus;
pub(crate) mod run_block;
pub mod summary;
pub(crate) mod tui;

use std::path::{Path, PathBuf};

use self::summary::Summary;

/// File name of the JSON summary in a run directory.
pub(crate) const SUMMARY_JSON: &str = "summary.json";
/// File name of the Markdown summary in a run directory.
pub(crate) const SUMMARY_MD: &str = "summary.md";
/// File name of the engine's batch log in a run directory (docs/output.md#batchescsv).
pub(crate) const BATCHES_CSV: &str = "batches.csv";

/// A failure reading or writing run outputs.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be created, read or written.
    #[error(
        "cannot {action} {}: {source}{}",
        crate::quote::clip_path(path),
        io_fix(action, path, source)
    )]
    Io {
        /// What was being done ("create", "write", "read", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing a frame's records failed (a full disk): the file, the frame, the cause, and what
    /// became of the part written.
    #[error(
        "cannot write the records of frame `{}` to {}: {source}; {}{cut}",
        crate::quote::clip(frame),
        crate::quote::clip_path(path),
        write_fix(source)
    )]
    RecordsWrite {
        /// The records file.
        path: PathBuf,
        /// The frame whose records were being written.
        frame: String,
        /// The cause.
        source: std::io::Error,
        /// What of the frame reached the file.
        cut: PartialWrite,
    },
    /// Writing a line of another run output (`resources.csv`, `challenge.jsonl`,
    /// `saliency.jsonl`) failed: the file, the line, the cause, the fix, and what became of the
    /// part written ([`lines::LineFile`]).
    #[error(
        "cannot write {what} to {}: {source}; {}{}",
        crate::quote::clip_path(path),
        write_fix(source),
        cut.lines_note()
    )]
    LineWrite {
        /// The file.
        path: PathBuf,
        /// Which line ("the header", "the line of frame `x`").
        what: String,
        /// The cause.
        source: std::io::Error,
        /// What of the line reached the file.
        cut: PartialWrite,
    },
    /// A complete line of a records file is not a valid record.
    #[error("{}:{line}: malformed record: {source}", path.display())]
    MalformedRecord {
        /// The records file.
        path: PathBuf,
        /// Line number, 1-based.
        line: u64,
        /// The cause (with the column).
        source: serde_json::Error,
    },
    /// A folder given as a run directory is not one.
    #[error(
        "{}: {why}; give `robustream report` the folder a run wrote its records to (the run's \
         --out or `out`, `runs/<config name>-<UTC time>` by default)",
        dir.display()
    )]
    NotARun {
        /// The folder.
        dir: PathBuf,
        /// What is missing.
        why: &'static str,
    },
    /// The baseline table a summary keeps (`metrics.imagenet_c.baseline_table`, written by a run
    /// with `[metrics] ce_baseline`) is not a valid table (edited by hand): the recomputed summary
    /// says so in `metrics.imagenet_c.error`, this line, rather than falling back to AlexNet's.
    #[error(
        "summary.json metrics.imagenet_c.baseline_table: {source}; fix it there or rerun with the \
         table"
    )]
    StoredBaseline {
        /// Why the table is not valid.
        source: serde_json::Error,
    },
    /// The kept frames of the HTML report (`flips.json`) do not parse (edited by hand, or cut
    /// short).
    #[error(
        "{}: not a valid flips.json: {source}; delete it to write the report without thumbnails",
        path.display()
    )]
    MalformedFlips {
        /// The file.
        path: PathBuf,
        /// The cause (with line and column).
        source: serde_json::Error,
    },
    /// A summary file is not a valid `summary.json`.
    #[error(
        "{}: not a valid summary.json: {source}; if the file is damaged, {}",
        path.display(),
        rebuild_hint(path)
    )]
    MalformedSummary {
        /// The file.
        path: PathBuf,
        /// The cause (with line and column).
        source: serde_json::Error,
    },
}

/// What of a frame's records reached the file when writing them failed.
#[derive(Debug)]
pub enum PartialWrite {
    /// Nothing: the file ends with the previous frame.
    Nothing,
    /// This many bytes, cut off again: the file ends with the previous frame.
    CutBack(usize),
    /// This many bytes, left in the file because cutting them off failed too.
    Left(usize, std::io::Error),
}

impl PartialWrite {
    /// What became of a failed line of a [`lines::LineFile`], for its message.
    fn lines_note(&self) -> String {
        match self {
            Self::Nothing => String::new(),
            Self::CutBack(_) => {
                " (the part written was cut off again: the file ends with whole lines)".into()
            }
            Self::Left(n, e) => format!(
                " ({n} bytes of it stay in the file, cutting them off failed: {e}; its last line \
                 is torn)"
            ),
        }
    }
}

impl std::fmt::Display for PartialWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => Ok(()),
            Self::CutBack(_) => write!(
                f,
                " (the part written was cut off again: the file holds every frame before it whole)"
            ),
            Self::Left(n, e) => write!(
                f,
                " ({n} bytes of it stay in the file, cutting them off failed: {e}; `robustream \
                 report` skips a torn last line but counts whole lines of this frame)"
            ),
        }
    }
}

/// `; ` and what to do, for a failed write of a run output ([`write_fix`]) or for a run output that
/// is not what robustream wrote (a device, a FIFO, a file over the read limit, bytes that are not
/// UTF-8: [`crate::fsread`]'s refusals); nothing for other failed reads.
fn io_fix(action: &str, path: &Path, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match action {
        "read" if matches!(e.kind(), K::InvalidInput | K::FileTooLarge | K::InvalidData) => {
            if path.file_name() == Some(std::ffi::OsStr::new(jsonl::RECORDS_JSONL)) {
                "; it is not the records file robustream wrote: give the right run directory".into()
            } else {
                "; it is not the file robustream wrote: move it out of the run directory \
                 (`robustream report` rebuilds the summary from records.jsonl) or give the right \
                 run directory"
                    .into()
            }
        }
        "read" => String::new(),
        _ => format!("; {}", write_fix(e)),
    }
}

/// What to do about a failed write of a run output.
pub(crate) fn write_fix(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::StorageFull => "free disk space or write the run elsewhere (--out)",
        K::QuotaExceeded => "free space within your disk quota or write the run elsewhere (--out)",
        K::FileTooLarge => {
            "the file size limit was reached (`ulimit -f`); raise it or write the run elsewhere"
        }
        K::PermissionDenied | K::ReadOnlyFilesystem => {
            "make the run directory writable or write the run elsewhere (--out)"
        }
        _ => "check the disk that holds the run directory (--out)",
    }
}

impl ReportError {
    /// An I/O error while doing `action` on `path`.
    pub(crate) fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}

/// Writes `summary.json` (pretty-printed) and `summary.md` into the run directory `dir`. Each file is
/// written to a temporary name and renamed, so a reader never sees a half-written summary.
fn write_run_summary(dir: &Path, summary: &Summary) -> Result<(), ReportError> {
    let json = summary.to_json() + "\n";
    write_atomic(&dir.join(SUMMARY_JSON), json.as_bytes())?;
    write_atomic(&dir.join(SUMMARY_MD), summary.to_markdown().as_bytes())
}

/// Writes the run's reports into `dir`: `summary.json` and `summary.md` ([`write_run_summary`]),
/// `flips.json` from `flips` (when given; else the one in `dir` is shown) and `report.html`
/// ([`html`]) with `metrics`' latency histograms and the `resources.csv` in `dir`.
pub(crate) fn write_run_report(
    dir: &Path,
    summary: &Summary,
    metrics: &crate::metrics::Metrics,
    flips: Option<&flips::FlipKeeper>,
) -> Result<(), ReportError> {
    write_run_summary(dir, summary)?;
    let kept = match flips {
        Some(keeper) => {
            keeper.write(dir)?;
            keeper.kept()
        }
        None => flips::read(dir)?,
    };
    let page = run_html(dir, summary, metrics, kept);
    write_atomic(&dir.join(html::REPORT_HTML), page.as_bytes())
}

/// The HTML report of the run in `dir` for `summary` (which `metrics` produced): the latency
/// histograms of `metrics`, `resources.csv` from `dir`, the kept frames `flips`.
pub fn run_html(
    dir: &Path,
    summary: &Summary,
    metrics: &crate::metrics::Metrics,
    flips: Vec<flips::FlipFrame>,
) -> String {
    html::HtmlReport {
        summary,
        latency: html::latency_of(metrics),
        resources: html::read_resources(&dir.join("resources.csv")),
        flips,
    }
    .render()
}

/// How a damaged summary is made again: `robustream report` rebuilds it from the records beside it.
fn rebuild_hint(summary: &Path) -> String {
    let dir = match summary.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    format!(
        "`robustream report {}` rebuilds it from the run's {}",
        crate::quote::clip_path(dir),
        jsonl::RECORDS_JSONL
    )
}

/// Rebuilds the summary of the run directory `dir` from its `records.jsonl` alone
/// ([`Summary::recompute`]), taking `run` and `frames` from its `summary.json` when there is one (a
/// run killed before writing it has none). A truncated last line of the records, as a killed run
/// leaves, is skipped with a warning on stderr.
#[cfg(test)]
fn recompute_run(dir: &Path) -> Result<Summary, ReportError> {
    recompute_run_with_metrics(dir).map(|(summary, _)| summary)
}

/// `recompute_run`, with the metrics the summary was computed from (for the HTML report's
/// latency histograms).
pub fn recompute_run_with_metrics(
    dir: &Path,
) -> Result<(Summary, crate::metrics::Metrics), ReportError> {
    let (summary, metrics, read) = read_run(dir, true)?;
    if read.truncated > 0 {
        eprintln!(
            "warning: {}: skipped a truncated last line (the run was stopped, or its disk filled, while writing it)",
            dir.join(jsonl::RECORDS_JSONL).display()
        );
    }
    Ok((summary, metrics))
}

/// The records of the run directory `dir`, the summary rebuilt from them as `recompute_run` gives
/// it and the metrics behind it (without the warning: [`jsonl::RecordsRead::truncated`] says
/// whether a truncated last line was skipped). `robustream compare` pairs the records. A
/// `summary.json` that does not parse is an error unless `rebuild_damaged` (`robustream report`,
/// which then rebuilds it from the records alone, with a warning saying what it held is lost).
fn read_run(
    dir: &Path,
    rebuild_damaged: bool,
) -> Result<(Summary, crate::metrics::Metrics, jsonl::RecordsRead), ReportError> {
    let records_path = dir.join(jsonl::RECORDS_JSONL);
    let not_a_run = |why| ReportError::NotARun {
        dir: dir.to_path_buf(),
        why,
    };
    if !dir.exists() {
        return Err(not_a_run("no such run directory"));
    }
    if !dir.is_dir() {
        return Err(not_a_run("not a directory"));
    }
    if !records_path.exists() {
        return Err(not_a_run(
            "no records.jsonl here (not a run directory, or its run stopped before its first record)",
        ));
    }
    let read = jsonl::read_records(&records_path)?;
    let summary_path = dir.join(SUMMARY_JSON);
    let previous = match Summary::read(&summary_path) {
        Ok(s) => Some(s),
        Err(ReportError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            None
        }
        Err(ReportError::MalformedSummary { path, source }) if rebuild_damaged => {
            eprintln!(
                "warning: {}: not a valid summary.json ({source}); rebuilt from {} alone: the \
                 run block (model, source, plan, times) and the frame counts it held are lost",
                path.display(),
                jsonl::RECORDS_JSONL
            );
            None
        }
        Err(e) => return Err(e),
    };
    let (summary, metrics) = Summary::recompute_with_metrics(&read.records, previous.as_ref());
    Ok((summary, metrics, read))
}

/// Writes `bytes` to `path` via a temporary file in the same directory and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    if let Err(e) = std::fs::write(&tmp, bytes) {
        // A half-written temporary is no use to anyone (and holds disk space). The error names
        // the file the user knows.
        let _ = std::fs::remove_file(&tmp);
        return Err(ReportError::io("write", path)(e));
    }
    std::fs::rename(&tmp, path).map_err(ReportError::io("replace", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::metrics::tests::{frames, rec};
    use crate::report::run_block::RunBlock;
    use summary::FrameCounts;
    use summary::tests::assert_same;

    #[test]
    fn writes_json_and_markdown() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Metrics::new(vec!["clean".into()]);
        for f in frames() {
            m.add_frame(&f);
        }
        let s = Summary::from_metrics(
            &m,
            RunBlock::from_json(serde_json::json!({"model": "r50"})),
            FrameCounts::default(),
        );
        write_run_summary(dir.path(), &s).unwrap();
        let json = std::fs::read_to_string(dir.path().join(SUMMARY_JSON)).unwrap();
        assert_eq!(json, s.to_json() + "\n");
        assert!(json.contains("\n  \"frames\""), "pretty-printed");
        assert_same(&Summary::read(&dir.path().join(SUMMARY_JSON)).unwrap(), &s);
        let md = std::fs::read_to_string(dir.path().join(SUMMARY_MD)).unwrap();
        assert_eq!(md, s.to_markdown());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
        // Overwriting works.
        let mut m2 = Metrics::new(vec![]);
        m2.add_frame(&[rec("x", "clean", Some(0), &[0])]);
        let s2 = Summary::from_metrics(
            &m2,
            RunBlock::from_json(serde_json::json!({})),
            FrameCounts::default(),
        );
        write_run_summary(dir.path(), &s2).unwrap();
        assert_same(&Summary::read(&dir.path().join(SUMMARY_JSON)).unwrap(), &s2);
    }

    #[test]
    fn recompute_run_from_directory() {
        let dir = tempfile::tempdir().unwrap();
        let fs = frames();
        let mut w = jsonl::RecordWriter::create(&dir.path().join(jsonl::RECORDS_JSONL)).unwrap();
        let mut m = Metrics::new(vec!["clean".into(), "fog".into(), "noise".into()]);
        for f in &fs {
            w.write_batch(f).unwrap();
            m.add_frame(f);
        }
        // Killed before the summary was written: frames come from the records.
        let r = recompute_run(dir.path()).unwrap();
        assert_eq!(
            r.frames,
            FrameCounts {
                read: 4,
                skipped: 0,
                dropped: 0,
                lost: 0,
                ..FrameCounts::default()
            }
        );
        let run = serde_json::json!({"model": "r50", "end": "completed"});
        let frames = FrameCounts {
            read: 6,
            skipped: 2,
            dropped: 0,
            lost: 0,
            ..FrameCounts::default()
        };
        let s = Summary::from_metrics(&m, RunBlock::from_json(run), frames);
        assert_same(
            &r,
            &Summary {
                run: RunBlock::from_json(serde_json::json!({})),
                frames: r.frames.clone(),
                ..s.clone()
            },
        );
        // With the run's summary: identical to it.
        write_run_summary(dir.path(), &s).unwrap();
        assert_same(&recompute_run(dir.path()).unwrap(), &s);
        assert_eq!(recompute_run(dir.path()).unwrap().to_json(), s.to_json());
        // A broken summary.json: `report` rebuilds it from the records alone (with a warning),
        // as it would for a run killed before writing one; elsewhere (`compare`) it is an error
        // whose line says how to rebuild it.
        std::fs::write(dir.path().join(SUMMARY_JSON), "{").unwrap();
        assert_same(&recompute_run(dir.path()).unwrap(), &r);
        let e = read_run(dir.path(), false).map(|_| ()).unwrap_err();
        assert!(matches!(e, ReportError::MalformedSummary { .. }), "{e}");
        let want = format!(
            "; if the file is damaged, `robustream report {}` rebuilds it from the run's \
             records.jsonl",
            dir.path().display()
        );
        assert!(e.to_string().ends_with(&want), "{e}");
        // No records: an error naming the file.
        let empty = tempfile::tempdir().unwrap();
        let e = recompute_run(empty.path()).unwrap_err();
        assert!(e.to_string().contains("records.jsonl"), "{e}");
    }

    #[test]
    fn missing_directory_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = Summary::from_metrics(
            &Metrics::new(vec![]),
            RunBlock::from_json(serde_json::json!({})),
            FrameCounts::default(),
        );
        let e = write_run_summary(&dir.path().join("nope"), &s).unwrap_err();
        assert!(e.to_string().contains("nope/summary.json: "), "{e}");
    }
}
