//! Labels on a stream: a camera or a video carries no truth of its
//! own, so it is given one of
//!
//! - a **fixed label** (`[source] label = "…"`, `--label`): every frame shows the same class — a
//!   line camera that sees one part type;
//! - a **sidecar file** (`[source] labels = "file.csv"`, `--labels`): a CSV with a header and the
//!   columns `label` and exactly one of `frame` or `time`. Each row's label holds from its key up to
//!   the next row's key (a step function, so a file lists the changes, not every frame):
//!   - `frame`: the 0-based position of the frame in the stream as robustream reads it (unreadable
//!     items count, as in the records' order);
//!   - `time`: seconds since the start of the stream ([`Frame::timestamp`]: a video frame's
//!     presentation time, a camera's capture time), written as seconds (`12.5`) or `[h:]mm:ss[.f]`
//!     (`1:02.5`).
//!
//!   Keys must ascend; before the first row a frame has no truth; an empty label or `-` means "no
//!   truth from here on". Labels are class names, aliases or indices of the run's label space.
//!
//! Without either, frames keep the source's own truth — or none, and the run reports agreement with
//! the clean prediction and the flip probability instead of accuracy
//! (docs/imagenet-c.md#imagenet-p-flip-probability).
//!
//! Both replace whatever truth the source's frames carry.

use std::path::{Path, PathBuf};

use super::{Source, SourceError, SourceErrorKind};
use crate::frame::{Frame, LabelSpace, Truth};
use crate::quote::clip;

/// What a sidecar row is keyed by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SidecarKey {
    /// The frame's 0-based position in the stream.
    Frame,
    /// Seconds since the stream's start ([`Frame::timestamp`]).
    Time,
}

/// A parsed sidecar file: rows of (key, truth) in ascending key order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sidecar {
    /// The file, for messages.
    pub(crate) path: PathBuf,
    /// What the keys are.
    pub(crate) key: SidecarKey,
    /// `(key, truth)`: frame positions or seconds, ascending; `None` = no truth from this key on.
    pub(crate) rows: Vec<(f64, Option<Truth>)>,
}

impl Sidecar {
    /// Reads and checks a sidecar file against the run's label space. Every problem names the file
    /// and line and says what to do.
    pub(crate) fn load(path: &Path, labels: &LabelSpace) -> Result<Sidecar, SourceError> {
        let text =
            crate::fsread::read_text(path, crate::fsread::MAX_TABLE_TEXT_BYTES).map_err(|e| {
                SourceError::at(
                    SourceErrorKind::Label,
                    path,
                    format!(
                        "cannot read the labels file ({e}); check `[source] labels` or --labels"
                    ),
                )
            })?;
        Self::parse(path, &text, labels)
    }

    /// [`Sidecar::load`] on text already read.
    fn parse(path: &Path, text: &str, labels: &LabelSpace) -> Result<Sidecar, SourceError> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(text.as_bytes());
        let header = reader.headers().map_err(|e| {
            SourceError::at(SourceErrorKind::Label, path, format!("cannot read the header ({e}); the first line must be `frame,label` or `time,label`"))
        })?;
        let col = |name: &str| header.iter().position(|h| h.eq_ignore_ascii_case(name));
        let (key, key_col) = match (col("frame"), col("time")) {
            (Some(c), None) => (SidecarKey::Frame, c),
            (None, Some(c)) => (SidecarKey::Time, c),
            _ => {
                return Err(SourceError::at(
                    SourceErrorKind::Label,
                    path,
                    "the header needs exactly one of the columns `frame` and `time` (and `label`)",
                ));
            }
        };
        let label_col = col("label").ok_or_else(|| {
            SourceError::at(
                SourceErrorKind::Label,
                path,
                "the header has no `label` column; write `frame,label` or `time,label`",
            )
        })?;
        if let Some(other) = header.iter().find(|h| {
            !["frame", "time", "label"]
                .iter()
                .any(|k| h.eq_ignore_ascii_case(k))
        }) {
            return Err(SourceError::at(
                SourceErrorKind::Label,
                path,
                format!(
                    "unknown column `{}`; a labels file has `frame` or `time`, and `label`",
                    clip(other)
                ),
            ));
        }
        let mut rows: Vec<(f64, Option<Truth>)> = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| {
                SourceError::at(SourceErrorKind::Label, path, format!("{e}; fix the line"))
            })?;
            let line = record.position().map_or(0, |p| p.line());
            let at = |message: String| {
                SourceError::new(
                    SourceErrorKind::Label,
                    format!("{}:{line}", path.display()),
                    message,
                )
            };
            let key_text = record.get(key_col).unwrap_or("");
            let key_shown = clip(key_text);
            let k = match key {
                SidecarKey::Frame => key_text.parse::<u64>().map(|v| v as f64).map_err(|_| {
                    at(format!(
                        "frame `{key_shown}` is not a frame number (0, 1, 2, …)"
                    ))
                })?,
                SidecarKey::Time => parse_time(key_text).ok_or_else(|| {
                    at(format!(
                        "time `{key_shown}` is not a time; write seconds (`12.5`) or `[h:]mm:ss[.f]`"
                    ))
                })?,
            };
            if let Some(&(prev, _)) = rows.last()
                && k <= prev
            {
                return Err(at(format!(
                    "`{key_shown}` does not come after the row before; sort the rows by {}",
                    match key {
                        SidecarKey::Frame => "frame",
                        SidecarKey::Time => "time",
                    }
                )));
            }
            let label = record.get(label_col).unwrap_or("");
            let truth = match label {
                "" | "-" => None,
                l => Some(Truth(labels.resolve(l).ok_or_else(|| {
                    at(format!(
                        "label `{}` is not a class of the model; give a class name or index \
                         (`robustream labels` lists them)",
                        clip(l)
                    ))
                })?)),
            };
            rows.push((k, truth));
        }
        if rows.is_empty() {
            return Err(SourceError::at(
                SourceErrorKind::Label,
                path,
                "has no rows; add at least one `key,label` line",
            ));
        }
        Ok(Sidecar {
            path: path.to_path_buf(),
            key,
            rows,
        })
    }

    /// The truth in force at `key` (the last row whose key is ≤ `key`; `None` before the first).
    fn truth_at(&self, key: f64) -> Option<Truth> {
        let i = self.rows.partition_point(|&(k, _)| k <= key);
        i.checked_sub(1).and_then(|i| self.rows[i].1)
    }
}

/// Parses seconds (`12.5`) or `[h:]mm:ss[.f]` (`1:02.5`, `0:01:02`) into seconds; `None` when it is
/// neither or negative.
fn parse_time(text: &str) -> Option<f64> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    let mut seconds = 0.0;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let v: f64 = if last {
            part.parse().ok()?
        } else {
            part.parse::<u32>().ok()? as f64
        };
        if !v.is_finite() || v < 0.0 || (parts.len() > 1 && last && v >= 60.0) {
            return None;
        }
        seconds = seconds * 60.0 + v;
    }
    Some(seconds)
}

/// Where a stream's truth comes from ([`LabelledSource`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamLabels {
    /// Every frame has this truth.
    Fixed(Truth),
    /// A sidecar file.
    Sidecar(Sidecar),
}

impl StreamLabels {
    /// One line for the run's source description.
    fn describe(&self) -> String {
        match self {
            StreamLabels::Fixed(t) => format!("label {}", t.0),
            StreamLabels::Sidecar(s) => format!(
                "labels {} by {}",
                s.path.display(),
                match s.key {
                    SidecarKey::Frame => "frame",
                    SidecarKey::Time => "time",
                }
            ),
        }
    }
}

/// A source whose frames get their truth from [`StreamLabels`].
pub(crate) struct LabelledSource {
    inner: Box<dyn Source>,
    labels: StreamLabels,
    /// Items read so far (the next item's position).
    position: u64,
}

impl LabelledSource {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Box<dyn Source>, labels: StreamLabels) -> Self {
        Self {
            inner,
            labels,
            position: 0,
        }
    }
}

impl Source for LabelledSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let item = self.inner.next_frame()?;
        let position = self.position;
        self.position += 1;
        let mut frame = match item {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        frame.truth = match &self.labels {
            StreamLabels::Fixed(t) => Some(*t),
            StreamLabels::Sidecar(s) => match s.key {
                SidecarKey::Frame => s.truth_at(position as f64),
                SidecarKey::Time => match frame.timestamp {
                    Some(t) => s.truth_at(t),
                    None => {
                        return Some(Err(SourceError::new(
                            SourceErrorKind::Label,
                            frame.id,
                            format!(
                                "has no timestamp, but {} is keyed by `time`; key it by `frame` \
                                 for this source",
                                s.path.display()
                            ),
                        )));
                    }
                },
            },
        };
        Some(Ok(frame))
    }

    fn describe(&self) -> String {
        format!("{} ({})", self.inner.describe(), self.labels.describe())
    }

    /// Items passed over keep their place in a sidecar keyed by `frame`.
    fn pass_over(&mut self, wanted: &crate::source::ItemFilter, max: u64) -> u64 {
        let passed = self.inner.pass_over(wanted, max);
        self.position += passed;
        passed
    }

    crate::source::forward_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory::MemorySource;

    fn space() -> LabelSpace {
        LabelSpace::new(vec!["cat".into(), "dog".into(), "tabby, tabby cat".into()])
    }

    fn parse(text: &str) -> Result<Sidecar, SourceError> {
        Sidecar::parse(Path::new("l.csv"), text, &space())
    }

    #[test]
    fn times_parse_as_seconds_or_clock() {
        assert_eq!(parse_time("12.5"), Some(12.5));
        assert_eq!(parse_time("1:02.5"), Some(62.5));
        assert_eq!(parse_time("1:00:02"), Some(3602.0));
        assert_eq!(parse_time("0"), Some(0.0));
        for bad in ["", "-1", "1:60", "a", "1:2:3:4", "nan", "1.5:00"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn frame_rows_are_a_step_function() {
        let s = parse("frame,label\n2,dog\n5,-\n7, tabby cat \n").unwrap();
        assert_eq!(s.key, SidecarKey::Frame);
        let got: Vec<Option<usize>> = (0..9).map(|f| s.truth_at(f as f64).map(|t| t.0)).collect();
        assert_eq!(
            got,
            vec![
                None,
                None,
                Some(1),
                Some(1),
                Some(1),
                None,
                None,
                Some(2),
                Some(2)
            ]
        );
    }

    #[test]
    fn time_rows_with_clock_values_and_comments() {
        let s = parse("# line camera\nlabel,time\ncat,0\ndog,1:30\n").unwrap();
        assert_eq!(s.key, SidecarKey::Time);
        assert_eq!(s.truth_at(89.9).map(|t| t.0), Some(0));
        assert_eq!(s.truth_at(90.0).map(|t| t.0), Some(1));
    }

    #[test]
    fn bad_files_name_the_line_and_the_fix() {
        let cases = [
            ("label\ncat\n", "exactly one of the columns"),
            ("frame,time,label\n0,0,cat\n", "exactly one of the columns"),
            ("frame\n0\n", "no `label` column"),
            ("frame,label,x\n0,cat,1\n", "unknown column `x`"),
            ("frame,label\n0,cat\n0,dog\n", "l.csv:3"),
            ("frame,label\n3,cat\n1,dog\n", "sort the rows"),
            ("frame,label\n-1,cat\n", "not a frame number"),
            ("time,label\nsoon,cat\n", "not a time"),
            ("frame,label\n0,zebra\n", "label `zebra` is not a class"),
            ("frame,label\n", "has no rows"),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = Sidecar::load(Path::new("/no/such/labels.csv"), &space())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/no/such/labels.csv") && e.contains("--labels"),
            "{e}"
        );
    }

    fn frames(n: usize, timestamps: bool) -> Box<dyn Source> {
        let frames = (0..n)
            .map(|i| Frame {
                truth: Some(Truth(2)),
                timestamp: timestamps.then_some(i as f64 * 0.5),
                ..Frame::new(format!("f{i}"), i as u64, image::RgbImage::new(2, 2))
            })
            .collect();
        Box::new(MemorySource::new(frames))
    }

    fn truths(mut s: LabelledSource) -> Vec<Result<Option<usize>, SourceError>> {
        std::iter::from_fn(|| s.next_frame())
            .map(|r| r.map(|f| f.truth.map(|t| t.0)))
            .collect()
    }

    /// The truths of frames that all came, or the first error.
    fn oks(got: Vec<Result<Option<usize>, SourceError>>) -> Vec<Option<usize>> {
        got.into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }

    #[test]
    fn fixed_and_sidecar_labels_replace_the_truth() {
        let fixed = LabelledSource::new(frames(3, false), StreamLabels::Fixed(Truth(1)));
        assert_eq!(oks(truths(fixed)), vec![Some(1); 3]);
        let by_time = parse("time,label\n0.5,dog\n1,cat\n").unwrap();
        let s = LabelledSource::new(frames(4, true), StreamLabels::Sidecar(by_time));
        assert_eq!(oks(truths(s)), vec![None, Some(1), Some(0), Some(0)]);
    }

    #[test]
    fn time_keys_on_frames_without_timestamps_fail_per_frame() {
        let by_time = parse("time,label\n0,dog\n").unwrap();
        let got = truths(LabelledSource::new(
            frames(2, false),
            StreamLabels::Sidecar(by_time),
        ));
        assert_eq!(got.len(), 2);
        let e = got[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("f0") && e.contains("key it by `frame`"), "{e}");
    }

    #[test]
    fn a_labels_file_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
        let dir = tempfile::tempdir().unwrap();
        let limit = crate::fsread::MAX_TABLE_TEXT_BYTES;
        for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
            let e = Sidecar::load(&path, &space()).unwrap_err();
            assert_eq!(e.item, path.display().to_string());
            assert!(
                e.message
                    .starts_with(&format!("cannot read the labels file ({why}"))
                    && e.message.ends_with("check `[source] labels` or --labels"),
                "{e}"
            );
        }
        // Not UTF-8: the line is named.
        let latin1 = dir.path().join("l.csv");
        std::fs::write(&latin1, b"frame,label\n0,caf\xe9\n").unwrap();
        let e = Sidecar::load(&latin1, &space()).unwrap_err();
        assert!(
            e.message.contains("line 2 holds a byte that is not UTF-8"),
            "{e}"
        );
    }
}
