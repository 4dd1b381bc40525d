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
//! - the group columns `[source.groups] columns` names (docs/groups.md#config): each row's value
//!   is the frame's group of that dimension; empty = a skipped row.
//!
//! Header problems fail opening the source; a bad row (malformed, empty path, unknown label) is yielded as a
//! per-item error in its place.

use std::path::{Path, PathBuf};

use super::regions::{BoxSpec, parse_norm_boxes};
use super::{Item, ItemSource, SourceError, SourceErrorKind};
use crate::frame::{LabelSpace, Truth};
use crate::quote::{clip, clip_list};

/// Column names a manifest may have (besides the group columns of `[source.groups] columns`).
pub(crate) const ALLOWED: [&str; 5] = ["path", "label", "mask", "boxes", "annotation"];

/// Where each known column is in a manifest's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Columns {
    path: usize,
    label: usize,
    mask: Option<usize>,
    boxes: Option<usize>,
    annotation: Option<usize>,
    /// The group columns (`[source.groups] columns`, docs/groups.md#config): dimension, column.
    groups: Vec<(String, usize)>,
}

/// Reads the manifest at `manifest` and builds the source.
pub(crate) fn open(manifest: &Path, labels: &LabelSpace) -> Result<ItemSource, SourceError> {
    open_with_groups(manifest, labels, &[])
}

/// [`open`], with the group columns `groups` (`[source.groups] columns`) read into each row's
/// groups.
pub(crate) fn open_with_groups(
    manifest: &Path,
    labels: &LabelSpace,
    groups: &[String],
) -> Result<ItemSource, SourceError> {
    let bytes = super::decode::read_file(manifest, "manifest").map_err(|why| {
        SourceError::at(SourceErrorKind::Open, manifest, why.to_string()).caused_by(why)
    })?;
    if bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&bytes)
        .iter()
        .all(u8::is_ascii_whitespace)
    {
        return Err(SourceError::at(
            SourceErrorKind::Layout,
            manifest,
            "manifest is empty; write the header `path,label` on its first line, then one row per \
             image",
        ));
    }
    let base = manifest.parent().unwrap_or(Path::new(""));
    let items = parse(
        &bytes,
        base,
        labels,
        &manifest.display().to_string(),
        groups,
    )?;
    if items.is_empty() {
        return Err(SourceError::at(
            SourceErrorKind::Layout,
            manifest,
            "manifest has a header but no rows; add one row per image",
        ));
    }
    let description = format!("manifest {} ({} rows)", manifest.display(), items.len());
    Ok(ItemSource::new(items, description))
}

/// Parses manifest CSV `bytes` (a UTF-8 byte-order mark is allowed). Paths are joined to `base`;
/// `name` is how the manifest is called in errors. Header errors are returned; row errors become
/// `Err` items in row order. The group columns `groups` (`[source.groups] columns`) are read into
/// each row's groups: one missing from the header fails like any header problem, an empty cell
/// makes its row a skipped item.
pub(crate) fn parse(
    bytes: &[u8],
    base: &Path,
    labels: &LabelSpace,
    name: &str,
    groups: &[String],
) -> Result<Vec<Result<Item, SourceError>>, SourceError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header = reader
        .headers()
        .map_err(|e| {
            SourceError::new(SourceErrorKind::Layout,
                name,
                format!("cannot read the manifest header ({e}); the first line must be `path,label` (optionally also `mask`, `boxes`, `annotation`)"),
            )
        })?
        .clone();
    let columns = columns(&header, groups).map_err(|why| {
        SourceError::new(SourceErrorKind::Layout, name, why.to_string()).caused_by(why)
    })?;

    let mut items = Vec::new();
    for record in reader.records() {
        let item = match record {
            Ok(record) => {
                let line = record.position().map_or(0, |p| p.line());
                row_item(&record, &columns, base, labels, name, line)
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                let stop = e.is_io_error();
                items.push(Err(SourceError::new(
                    SourceErrorKind::Layout,
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
pub(crate) enum HeaderError {
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
    /// A group column (`[source.groups] columns`) the header lacks.
    #[error(
        "manifest has no column `{column}`, which `[source.groups] columns` names as a group; add \
         the column or remove `{column}` from `columns`"
    )]
    NoGroupColumn {
        /// The dimension as configured.
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

/// Finds the known columns and the group columns `groups` in a header. Errors on unknown,
/// duplicate or missing columns.
pub(crate) fn columns(
    header: &csv::StringRecord,
    groups: &[String],
) -> Result<Columns, HeaderError> {
    let names: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let group_names: Vec<String> = groups.iter().map(|g| g.to_lowercase()).collect();
    let unknown: Vec<&str> = header
        .iter()
        .zip(&names)
        .filter(|(_, lower)| !ALLOWED.contains(&lower.as_str()) && !group_names.contains(lower))
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
    let mut group_columns = Vec::new();
    for (dim, lower) in groups.iter().zip(&group_names) {
        match find(lower)? {
            Some(i) => group_columns.push((dim.clone(), i)),
            None => {
                return Err(HeaderError::NoGroupColumn {
                    column: clip(dim).into_owned(),
                });
            }
        }
    }
    match (path, label) {
        (Some(path), Some(label)) => Ok(Columns {
            path,
            label,
            mask,
            boxes,
            annotation,
            groups: group_columns,
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
    columns: &Columns,
    base: &Path,
    labels: &LabelSpace,
    name: &str,
    line: u64,
) -> Result<Item, SourceError> {
    let field = |i: usize| record.get(i).unwrap_or("");
    let written = field(columns.path);
    if written.is_empty() {
        return Err(SourceError::new(
            SourceErrorKind::Layout,
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
                    SourceErrorKind::Label,
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
            |why| {
                SourceError::at(
                    SourceErrorKind::Annotation,
                    &path,
                    format!("manifest `boxes` column: {why}"),
                )
                .caused_by(why)
            },
        )?)),
        (true, false) => Some(BoxSpec::Voc(base.join(annotation))),
        (false, false) => {
            return Err(SourceError::at(
                SourceErrorKind::Annotation,
                &path,
                "the row has both `boxes` and `annotation`; give the boxes one way",
            ));
        }
    };
    let mut groups = crate::frame::Groups::new();
    for (dim, i) in &columns.groups {
        let value = field(*i);
        if value.is_empty() {
            return Err(SourceError::at(
                SourceErrorKind::Group,
                &path,
                format!(
                    "the group column `{dim}` is empty on line {line} of {name}; give the \
                     frame's {dim} or remove the row"
                ),
            )
            .for_frame(written));
        }
        groups.insert(dim.clone(), value.to_string());
    }
    Ok(Item {
        path,
        id: written.to_string(),
        truth,
        mask,
        boxes,
        groups,
    })
}

#[cfg(test)]
mod tests;
