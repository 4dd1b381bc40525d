//! Manifest sources: a CSV file with a header row and the columns `path` and `label` plus optional
//! `mask`, `boxes` and `annotation` columns, in any order (header names are matched
//! case-insensitively, fields are trimmed).
//!
//! - `path`: the image, relative to the manifest's folder (absolute paths allowed); it is also the
//!   frame id, as written.
//! - `label`: a class name, alias or index in the run's label space; empty = no truth.
//! - `mask`: a foreground mask file (image or `.npy`, see [`super::mask`]), relative like `path`;
//!   empty = no mask.
//! - `boxes`: object boxes in normalised xyxy, `x0 y0 x1 y1` per box, boxes separated by `;`
//!   (e.g. `0.1 0.2 0.6 0.9;0.5 0.5 0.7 0.8`; see [`super::regions::parse_norm_boxes`]); empty = none.
//! - `annotation`: a Pascal VOC XML file with the boxes (ImageNet's bounding-box files), relative
//!   like `path`; empty = none. A row gives `boxes` or `annotation`, not both.
//!
//! Header problems fail opening the source; a bad row (malformed, empty path, unknown label) is yielded as a
//! per-item error in its place.

use std::path::{Path, PathBuf};

use super::regions::{BoxSpec, parse_norm_boxes};
use super::{Item, ItemSource, SourceError};
use crate::frame::{LabelSpace, Truth};
use crate::quote::{clip, clip_list};

/// Column names a manifest may have.
const ALLOWED: [&str; 5] = ["path", "label", "mask", "boxes", "annotation"];

/// Where each known column is in a manifest's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Columns {
    path: usize,
    label: usize,
    mask: Option<usize>,
    boxes: Option<usize>,
    annotation: Option<usize>,
}

/// Reads the manifest at `manifest` and builds the source.
pub(crate) fn open(manifest: &Path, labels: &LabelSpace) -> Result<ItemSource, SourceError> {
    let bytes = super::decode::read_file(manifest, "manifest")
        .map_err(|why| SourceError::at(manifest, why.to_string()).caused_by(why))?;
    if bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&bytes)
        .iter()
        .all(u8::is_ascii_whitespace)
    {
        return Err(SourceError::at(
            manifest,
            "manifest is empty; write the header `path,label` on its first line, then one row per \
             image",
        ));
    }
    let base = manifest.parent().unwrap_or(Path::new(""));
    let items = parse(&bytes, base, labels, &manifest.display().to_string())?;
    if items.is_empty() {
        return Err(SourceError::at(
            manifest,
            "manifest has a header but no rows; add one row per image",
        ));
    }
    let description = format!("manifest {} ({} rows)", manifest.display(), items.len());
    Ok(ItemSource::new(items, description))
}

/// Parses manifest CSV `bytes` (a UTF-8 byte-order mark is allowed). Paths are joined to `base`;
/// `name` is how the manifest is called in errors. Header errors are returned; row errors become
/// `Err` items in row order.
pub(crate) fn parse(
    bytes: &[u8],
    base: &Path,
    labels: &LabelSpace,
    name: &str,
) -> Result<Vec<Result<Item, SourceError>>, SourceError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header = reader
        .headers()
        .map_err(|e| {
            SourceError::new(
                name,
                format!("cannot read the manifest header ({e}); the first line must be `path,label` (optionally also `mask`, `boxes`, `annotation`)"),
            )
        })?
        .clone();
    let columns =
        columns(&header).map_err(|why| SourceError::new(name, why.to_string()).caused_by(why))?;

    let mut items = Vec::new();
    for record in reader.records() {
        let item = match record {
            Ok(record) => {
                let line = record.position().map_or(0, |p| p.line());
                row_item(&record, columns, base, labels, name, line)
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                let stop = e.is_io_error();
                items.push(Err(SourceError::new(
                    format!("{name} line {line}"),
                    format!(
                        "malformed CSV row ({e}); give it the header's {} fields, quoting fields \
                         that contain commas",
                        header.len()
                    ),
                )));
                if stop {
                    break;
                }
                continue;
            }
        };
        items.push(item);
    }
    Ok(items)
}

/// A manifest header that does not name the columns robustream reads. Display = the message: what
/// is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Columns other than [`ALLOWED`] (the list as messages show it, clipped).
    #[error(
        "manifest has unknown column{} {list}; the allowed columns are `path`, `label`, and \
         optionally `mask`, `boxes` and `annotation`; remove the others",
        if *count == 1 { "" } else { "s" }
    )]
    Unknown {
        /// How many unknown columns.
        count: usize,
        /// Them, quoted and clipped.
        list: String,
    },
    /// A known column named twice.
    #[error("manifest has the column `{column}` more than once; keep one")]
    Duplicate {
        /// The column (lowercase).
        column: String,
    },
    /// No `path` or no `label` column.
    #[error(
        "manifest header `{header}` lacks {lacks}; the first line must name the columns \
         `path,label` (optionally also `mask`, `boxes`, `annotation`)"
    )]
    Missing {
        /// The header as written (clipped).
        header: String,
        /// "the `path` column", "the `label` column" or both.
        lacks: &'static str,
    },
}

/// Finds the known columns in a header. Errors on unknown, duplicate or missing columns.
pub(crate) fn columns(header: &csv::StringRecord) -> Result<Columns, HeaderError> {
    let names: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let unknown: Vec<&str> = header
        .iter()
        .zip(&names)
        .filter(|(_, lower)| !ALLOWED.contains(&lower.as_str()))
        .map(|(orig, _)| orig)
        .collect();
    if !unknown.is_empty() {
        return Err(HeaderError::Unknown {
            count: unknown.len(),
            list: clip_list(&unknown),
        });
    }
    let find = |want: &str| -> Result<Option<usize>, HeaderError> {
        let mut hits = names.iter().enumerate().filter(|(_, n)| *n == want);
        match (hits.next(), hits.next()) {
            (Some((i, _)), None) => Ok(Some(i)),
            (None, _) => Ok(None),
            (Some(_), Some(_)) => Err(HeaderError::Duplicate {
                column: want.to_string(),
            }),
        }
    };
    let (path, label, mask) = (find("path")?, find("label")?, find("mask")?);
    let (boxes, annotation) = (find("boxes")?, find("annotation")?);
    match (path, label) {
        (Some(path), Some(label)) => Ok(Columns {
            path,
            label,
            mask,
            boxes,
            annotation,
        }),
        _ => Err(HeaderError::Missing {
            header: clip(&header.iter().collect::<Vec<_>>().join(",")).into_owned(),
            lacks: match (path, label) {
                (None, None) => "the `path` and `label` columns",
                (None, _) => "the `path` column",
                _ => "the `label` column",
            },
        }),
    }
}

/// Turns one row into an item; `line` is its line number in the manifest.
fn row_item(
    record: &csv::StringRecord,
    columns: Columns,
    base: &Path,
    labels: &LabelSpace,
    name: &str,
    line: u64,
) -> Result<Item, SourceError> {
    let field = |i: usize| record.get(i).unwrap_or("");
    let written = field(columns.path);
    if written.is_empty() {
        return Err(SourceError::new(
            format!("{name} line {line}"),
            "the `path` field is empty; give the image's path",
        ));
    }
    let path = base.join(written);
    let label = field(columns.label);
    let truth = if label.is_empty() {
        None
    } else {
        match labels.resolve(label) {
            Some(i) => Some(Truth(i)),
            None => {
                return Err(SourceError::at(
                    &path,
                    format!(
                        "label `{}` is not a class of the model/class map; use a class name \
                         from the labels file or an index",
                        clip(label)
                    ),
                ));
            }
        }
    };
    let mask: Option<PathBuf> = columns
        .mask
        .map(field)
        .filter(|m| !m.is_empty())
        .map(|m| base.join(m));
    let boxes_text = columns.boxes.map_or("", field);
    let annotation = columns.annotation.map_or("", field);
    let boxes = match (boxes_text.is_empty(), annotation.is_empty()) {
        (true, true) => None,
        (false, true) => Some(BoxSpec::Normalized(parse_norm_boxes(boxes_text).map_err(
            |why| SourceError::at(&path, format!("manifest `boxes` column: {why}")).caused_by(why),
        )?)),
        (true, false) => Some(BoxSpec::Voc(base.join(annotation))),
        (false, false) => {
            return Err(SourceError::at(
                &path,
                "the row has both `boxes` and `annotation`; give the boxes one way",
            ));
        }
    };
    Ok(Item {
        path,
        id: written.to_string(),
        truth,
        mask,
        boxes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::source::test_util::{labels, write_gray, write_npy, write_rgb};

    fn items(csv: &str) -> Result<Vec<Result<Item, SourceError>>, SourceError> {
        parse(csv.as_bytes(), Path::new("base"), &labels(), "m.csv")
    }

    #[test]
    fn columns_in_any_order_with_optional_mask() {
        let got = items("label,mask,path\n2,m.png,a.png\n").unwrap();
        let item = got[0].as_ref().unwrap();
        assert_eq!(item.path, Path::new("base/a.png"));
        assert_eq!(item.id, "a.png");
        assert_eq!(item.truth, Some(Truth(2)));
        assert_eq!(item.mask.as_deref(), Some(Path::new("base/m.png")));

        let got = items("PATH, Label\na.png , tabby cat\nb.png,\n").unwrap();
        assert_eq!(got[0].as_ref().unwrap().truth, Some(Truth(1)));
        assert_eq!(got[0].as_ref().unwrap().id, "a.png");
        assert_eq!(got[1].as_ref().unwrap().truth, None);
        assert_eq!(got[1].as_ref().unwrap().mask, None);
    }

    #[test]
    fn bom_and_absolute_paths() {
        let abs = if cfg!(windows) {
            "C:\\\\x\\\\a.png"
        } else {
            "/x/a.png"
        };
        let csv = format!("\u{feff}path,label\n{abs},0\n");
        let got = parse(csv.as_bytes(), Path::new("base"), &labels(), "m.csv").unwrap();
        assert_eq!(got[0].as_ref().unwrap().path, Path::new(abs));
    }

    #[test]
    fn quoted_path_with_comma() {
        let got = items("path,label\n\"a, b.png\",espresso\n").unwrap();
        let item = got[0].as_ref().unwrap();
        assert_eq!(item.id, "a, b.png");
        assert_eq!(item.path, Path::new("base/a, b.png"));
    }

    #[test]
    fn unknown_missing_and_duplicate_columns_fail_at_open() {
        let e = items("path,label,weight\na.png,0,1\n").err().unwrap();
        assert_eq!(e.item, "m.csv");
        assert!(e.message.contains("unknown column `weight`"), "{e}");
        assert!(
            e.message
                .contains("`path`, `label`, and optionally `mask`, `boxes` and `annotation`"),
            "{e}"
        );

        let e = items("path,mask\na.png,m.png\n").err().unwrap();
        assert!(e.message.contains("lacks the `label` column"), "{e}");
        let e = items("file,label\n").err().unwrap();
        assert!(e.message.contains("unknown column `file`"), "{e}");
        let e = items("label\n0\n").err().unwrap();
        assert!(e.message.contains("lacks the `path` column"), "{e}");
        let e = items("path,label,Path\n").err().unwrap();
        assert!(e.message.contains("more than once"), "{e}");
        let e = items("").err().unwrap();
        assert!(e.message.contains("`path,label`"), "{e}");
    }

    #[test]
    fn an_empty_manifest_or_one_without_rows_fails_at_open() {
        let d = tempfile::tempdir().unwrap();
        for (csv, want) in [
            ("", "manifest is empty"),
            ("\u{feff} \n\n", "manifest is empty"),
            ("path,label\n", "header but no rows"),
            ("path,label\n\n\n", "header but no rows"),
        ] {
            let p = d.path().join("m.csv");
            std::fs::write(&p, csv).unwrap();
            let e = open(&p, &labels()).err().unwrap();
            assert_eq!(e.item, p.display().to_string());
            assert!(e.message.contains(want), "{csv:?}: {e}");
        }
    }

    #[test]
    fn unknown_label_and_empty_path_are_item_errors() {
        let got = items("path,label\na.png,zebra\n,0\nb.png,99\nc.png,1\n").unwrap();
        assert_eq!(got.len(), 4);
        let e = got[0].as_ref().unwrap_err();
        assert_eq!(e.item, Path::new("base/a.png").display().to_string());
        assert_eq!(
            e.message,
            "label `zebra` is not a class of the model/class map; use a class name from the \
             labels file or an index"
        );
        assert_eq!(got[1].as_ref().unwrap_err().item, "m.csv line 3");
        assert!(got[2].as_ref().unwrap_err().message.contains("`99`"));
        assert!(got[3].is_ok());
    }

    #[test]
    fn malformed_row_names_its_line_and_parsing_goes_on() {
        let got = items("path,label\na.png,0\nb.png,0,extra\n\nc.png,1\n").unwrap();
        assert_eq!(got.len(), 3);
        let e = got[1].as_ref().unwrap_err();
        assert_eq!(e.item, "m.csv line 3");
        assert!(e.message.starts_with("malformed CSV row"), "{e}");
        assert_eq!(got[2].as_ref().unwrap().id, "c.png");

        let got = parse(
            b"path,label\n\xff\xfe.png,0\nok.png,0\n",
            Path::new(""),
            &labels(),
            "m",
        )
        .unwrap();
        assert_eq!(got[0].as_ref().unwrap_err().item, "m line 2");
        assert!(got[1].is_ok());
    }

    #[test]
    fn end_to_end_with_masks() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write_rgb(&r.join("imgs/a, b.png"), 4, 3, [1, 2, 3]);
        write_gray(&r.join("masks/a.png"), 4, 3, 255);
        write_rgb(&r.join("imgs/c.jpg"), 2, 2, [9, 9, 9]);
        write_npy(
            &r.join("masks/c.npy"),
            "|u1",
            false,
            "(2, 2)",
            &[0, 1, 1, 0],
        );
        write_rgb(&r.join("imgs/d.png"), 5, 5, [0, 0, 0]);
        write_gray(&r.join("masks/small.png"), 2, 2, 255);
        std::fs::write(r.join("imgs/e.png"), b"garbage").unwrap();
        write_rgb(&r.join("imgs/f.png"), 2, 2, [0, 0, 0]);
        std::fs::write(
            r.join("m.csv"),
            "path,label,mask\n\
             \"imgs/a, b.png\",tabby,masks/a.png\n\
             imgs/c.jpg,2,masks/c.npy\n\
             imgs/d.png,0,masks/small.png\n\
             imgs/e.png,0,\n\
             imgs/f.png,,masks/missing.png\n\
             imgs/f.png,,\n",
        )
        .unwrap();
        let mut s = open(&r.join("m.csv"), &labels()).unwrap();
        assert_eq!(s.len_hint(), Some(6));
        assert!(s.describe().starts_with("manifest "), "{}", s.describe());
        let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
        assert_eq!(got.len(), 6);

        let a = got[0].as_ref().unwrap();
        assert_eq!(
            (a.id.as_str(), a.seq, a.truth),
            ("imgs/a, b.png", 0, Some(Truth(1)))
        );
        let mask = a.regions.as_ref().unwrap().mask.as_ref().unwrap();
        assert_eq!(mask.dimensions(), (4, 3));
        assert_eq!(mask.get_pixel(3, 2).0, [255]);

        let c = got[1].as_ref().unwrap();
        assert_eq!(c.seq, 1);
        let mask = c.regions.as_ref().unwrap().mask.as_ref().unwrap();
        assert_eq!(mask.as_raw(), &vec![0, 255, 255, 0]);

        let e = got[2].as_ref().unwrap_err();
        assert!(e.message.contains("is 2x2 but image"), "{e}");
        assert!(
            e.message
                .contains("is 5x5; masks must have the image's size"),
            "{e}"
        );

        assert!(
            got[3]
                .as_ref()
                .unwrap_err()
                .message
                .starts_with("cannot decode image")
        );
        assert!(
            got[4]
                .as_ref()
                .unwrap_err()
                .message
                .contains(": cannot read mask (")
        );
        let f = got[5].as_ref().unwrap();
        assert_eq!((f.seq, f.truth), (2, None));
        assert!(f.regions.is_none());
        assert!(s.next_frame().is_none());
    }

    #[test]
    fn header_only_manifest_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.csv"), "path,label\n").unwrap();
        let e = open(&dir.path().join("m.csv"), &labels()).err().unwrap();
        assert!(e.message.contains("no rows"), "{e}");
    }
}
