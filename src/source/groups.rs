//! `[source.groups]`: the groups each frame belongs to (docs/groups.md#config) — a style, a
//! subtype, a production line, a shift, a camera — as dimension → value on the frame
//! ([`crate::frame::Frame::groups`]) and on each of its records, for the groups family
//! (docs/groups.md).
//!
//! Groups come from, in any combination (one dimension from one place):
//!
//! - **manifest columns** (`columns = ["style"]`, manifest sources): the named columns of each row;
//! - **folder levels** (`levels = ["line", "shift"]`, folder sources): the folders between an
//!   image's class folder and the image, `root/<class>/<line>/<shift>/…/<image>`;
//! - **a sidecar file** (`file = "groups.csv"`, folder and manifest sources): a CSV with a header
//!   and a key column, `frame` (the frame id, as records name it) or `path` (the image, relative to
//!   the file's folder), then one column per dimension;
//! - **file names** (`names = { style = ["apple", "google", …] }`, folder and manifest sources): a
//!   frame's value is the first listed value its path contains, the way the ICONS-50 reference
//!   selects styles and subtypes (docs/groups.md#icons-50).
//!
//! Bad input follows the house rule (docs/bad-input.md#bad-input): a frame without a value for a
//! dimension (an empty cell, no sidecar row, an image too shallow for the levels, a name with none
//! of the listed values) and a sidecar row that names no frame are one line each, naming the file,
//! row or frame and the fix, skipped and counted (`frames.skipped`; fatal with `--strict`). What
//! makes the groups unusable as configured — a dimension given twice, a reference that is no group,
//! more group values than `max_values` — fails when the source opens, before any frame is scored.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use super::{Item, ItemSource, SourceError, SourceErrorKind, SourceKind};
use crate::quote::{clip, clip_list};

/// The default of `max_values`: the most distinct group values (over all dimensions) a source may
/// have, which bounds `metrics.groups` and the Prometheus series (docs/groups.md#config).
pub(crate) const DEFAULT_MAX_VALUES: usize = 64;

/// The longest dimension name.
const MAX_NAME: usize = 64;

/// `[source.groups]` as written (docs/groups.md#config).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupsConfig {
    /// Manifest columns whose values are groups, each column a dimension of that name.
    #[serde(default)]
    pub(crate) columns: Vec<String>,
    /// Names of the folder levels between an image's class folder and the image, outermost first.
    #[serde(default)]
    pub(crate) levels: Vec<String>,
    /// A sidecar CSV: `frame` or `path`, then one column per dimension (relative to the config file).
    #[serde(default)]
    pub(crate) file: Option<PathBuf>,
    /// Per dimension, the values looked for in each frame's path (the first found is its group).
    #[serde(default)]
    pub(crate) names: BTreeMap<String, Vec<String>>,
    /// Per dimension, the reference (in-distribution) group the others are compared with; a
    /// dimension without one compares each group with the rest of its groups.
    #[serde(default)]
    pub(crate) reference: BTreeMap<String, String>,
    /// The most distinct group values, all dimensions together (default [`DEFAULT_MAX_VALUES`]).
    #[serde(default = "default_max_values")]
    pub(crate) max_values: usize,
}

fn default_max_values() -> usize {
    DEFAULT_MAX_VALUES
}

impl GroupsConfig {
    /// Checks the table for a source of `kind` (at `path`, named in errors): what the kind can
    /// take, the dimension names, the references of the dimensions known before the source is read.
    pub(crate) fn check(&self, kind: SourceKind, path: &Path) -> Result<(), SourceError> {
        let err = |m: String| SourceError::at(SourceErrorKind::Settings, path, m);
        if !matches!(kind, SourceKind::Folder | SourceKind::Manifest) {
            return Err(err(format!(
                "`[source.groups]` applies to folder and manifest sources only but this is a {} \
                 source; remove `[source.groups]` or give a manifest with group columns",
                kind.name()
            )));
        }
        if self.columns.is_empty()
            && self.levels.is_empty()
            && self.file.is_none()
            && self.names.is_empty()
        {
            return Err(err(
                "`[source.groups]` names no groups; give `columns` (manifest columns), `levels` \
                 (folder levels), `file` (a sidecar CSV) or `names`"
                    .into(),
            ));
        }
        if !self.columns.is_empty() && kind != SourceKind::Manifest {
            return Err(err(format!(
                "`[source.groups] columns` applies to manifest sources only but this is a {} \
                 source; use `levels` (the folders below the class folders) or `file`",
                kind.name()
            )));
        }
        if !self.levels.is_empty() && kind != SourceKind::Folder {
            return Err(err(format!(
                "`[source.groups] levels` applies to folder sources only but this is a {} \
                 source; use `columns` (manifest columns) or `file`",
                kind.name()
            )));
        }
        if self.max_values == 0 {
            return Err(err(
                "`[source.groups] max_values` is 0; give the most group values the source may \
                 have (default 64), or remove it"
                    .into(),
            ));
        }
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut names: Vec<&String> = Vec::new();
        let declared = self
            .columns
            .iter()
            .map(|c| ("columns", c))
            .chain(self.levels.iter().map(|l| ("levels", l)))
            .chain(self.names.keys().map(|n| ("names", n)));
        for (key, name) in declared {
            check_name(name).map_err(|why| err(format!("`[source.groups] {key}`: {why}")))?;
            if super::manifest::ALLOWED.contains(&name.to_lowercase().as_str()) {
                return Err(err(format!(
                    "`[source.groups] {key}` names `{name}`, a column robustream reads itself; \
                     name a column of group values"
                )));
            }
            if !seen.insert(name.to_lowercase()) {
                return Err(err(format!(
                    "`[source.groups]` names the dimension `{name}` twice; keep one"
                )));
            }
            names.push(name);
        }
        for (dim, values) in &self.names {
            if values.is_empty() || values.iter().any(|v| v.trim().is_empty()) {
                return Err(err(format!(
                    "`[source.groups] names.{dim}` needs values to look for in the paths (none \
                     empty); list them, or remove `{dim}`"
                )));
            }
        }
        if self.file.is_none()
            && let Some(dim) = self.reference.keys().find(|d| !names.contains(d))
        {
            return Err(unknown_reference(path, dim, names.into_iter()));
        }
        Ok(())
    }

    /// The dimension names the manifest's columns hold.
    pub(crate) fn columns(&self) -> &[String] {
        &self.columns
    }
}

/// Whether `name` can be a dimension: 1 to 64 characters of letters, digits, `_` and `-` (it is a
/// key of `metrics.groups`, part of rule keys `<dimension>=<group>` and a Prometheus label value).
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "`{}` is not a dimension name; use 1 to {MAX_NAME} letters, digits, `_` or `-`",
            clip(name)
        )),
    }
}

/// The error for a `reference` naming no dimension.
fn unknown_reference<'a>(
    path: &Path,
    dim: &str,
    dims: impl Iterator<Item = &'a String>,
) -> SourceError {
    let dims: Vec<&str> = dims.map(String::as_str).collect();
    SourceError::at(
        SourceErrorKind::Settings,
        path,
        format!(
            "`[source.groups] reference` names `{}`, which is no group dimension (the dimensions \
             are {}); fix the name or remove it",
            clip(dim),
            clip_list(&dims)
        ),
    )
}

/// The groups of a folder's or manifest's items (manifest columns were read with the rows): the
/// folder levels, file names and sidecar file of `config` applied, a frame lacking a value made
/// its skipped item, a sidecar row naming no frame a skipped item first; then the references
/// and `max_values` checked. `root` is the source's path.
pub(crate) fn apply(
    source: ItemSource,
    config: Option<&GroupsConfig>,
    root: &Path,
) -> Result<ItemSource, SourceError> {
    let Some(config) = config else {
        return Ok(source);
    };
    let description = source.description.clone();
    let mut items: Vec<Result<Item, SourceError>> = source.items.collect();
    let mut dims: Vec<String> = config
        .columns
        .iter()
        .chain(&config.levels)
        .chain(config.names.keys())
        .cloned()
        .collect();
    if !config.levels.is_empty() {
        for entry in &mut items {
            with_item(entry, |item| levels(item, &config.levels));
        }
    }
    for (dim, values) in &config.names {
        for entry in &mut items {
            with_item(entry, |item| by_name(item, dim, values));
        }
    }
    if let Some(file) = &config.file {
        let sidecar = Sidecar::load(file)?;
        if let Some(dim) = sidecar
            .dims
            .iter()
            .find(|d| dims.iter().any(|k| k.eq_ignore_ascii_case(d)))
        {
            return Err(SourceError::at(
                SourceErrorKind::Group,
                file,
                format!(
                    "the column `{dim}` is a dimension `[source.groups]` already gives \
                     (`columns`, `levels` or `names`); keep one of them"
                ),
            ));
        }
        dims.extend(sidecar.dims.iter().cloned());
        items = sidecar.apply(items);
    }
    check_groups(&items, config, &dims, root)?;
    let dims_text = dims.join(", ");
    Ok(ItemSource::new(
        items,
        format!("{description}, groups {dims_text}"),
    ))
}

/// Runs `f` on an item that is still whole; an item `f` refuses becomes its skipped item.
fn with_item(
    entry: &mut Result<Item, SourceError>,
    f: impl FnOnce(&mut Item) -> Result<(), String>,
) {
    if let Ok(item) = entry
        && let Err(why) = f(item)
    {
        let e = SourceError::at(SourceErrorKind::Group, &item.path, why).for_frame(&item.id);
        *entry = Err(e);
    }
}

/// The folder levels of an item of a folder source, from its id `class/level…/image`.
fn levels(item: &mut Item, levels: &[String]) -> Result<(), String> {
    let parts: Vec<&str> = item.id.split('/').collect();
    // parts[0] is the class folder, the last part the file.
    if parts.len() < levels.len() + 2 {
        let depth = parts.len().saturating_sub(2);
        let where_ = match parts.len() {
            1 => "lies in the source folder itself, outside any class folder".to_string(),
            _ => format!(
                "lies {depth} folder{} below its class folder",
                if depth == 1 { "" } else { "s" }
            ),
        };
        return Err(format!(
            "{where_} but `[source.groups] levels` names {} ({}); move it into \
             <class>/{}/ or remove `levels`",
            levels.len(),
            levels.join(", "),
            levels
                .iter()
                .map(|l| format!("<{l}>"))
                .collect::<Vec<_>>()
                .join("/")
        ));
    }
    for (dim, value) in levels.iter().zip(&parts[1..]) {
        item.groups.insert(dim.clone(), (*value).to_string());
    }
    Ok(())
}

/// The group of dimension `dim` an item's frame id names: the first of `values` its id (the path
/// below the source folder, or as the manifest writes it) contains, as the ICONS-50 reference
/// selects a style with `args.test_style in img_name` (docs/groups.md#icons-50).
fn by_name(item: &mut Item, dim: &str, values: &[String]) -> Result<(), String> {
    match values.iter().find(|v| item.id.contains(v.as_str())) {
        Some(v) => {
            item.groups.insert(dim.to_string(), v.clone());
            Ok(())
        }
        None => Err(format!(
            "its name contains none of the values of `[source.groups] names.{dim}` ({}); add \
             its {dim} to the list, or remove the image",
            clip_list(values)
        )),
    }
}

/// The references and `max_values` against the items' groups; `dims` are the source's
/// dimensions.
fn check_groups(
    items: &[Result<Item, SourceError>],
    config: &GroupsConfig,
    dims: &[String],
    root: &Path,
) -> Result<(), SourceError> {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for item in items.iter().flatten() {
        for (d, v) in &item.groups {
            values.entry(d).or_default().insert(v);
        }
    }
    for (dim, reference) in &config.reference {
        let Some(known) = dims.iter().find(|d| *d == dim) else {
            return Err(unknown_reference(root, dim, dims.iter()));
        };
        let groups = values.get(known.as_str());
        if !groups.is_some_and(|g| g.contains(reference.as_str())) {
            let list: Vec<&str> = groups
                .map(|g| g.iter().copied().collect())
                .unwrap_or_default();
            return Err(SourceError::at(
                SourceErrorKind::Settings,
                root,
                format!(
                    "`[source.groups] reference.{dim} = \"{}\"` is no group of `{known}` in this \
                     source (its groups: {}); fix the value or remove it",
                    clip(reference),
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        clip_list(&list)
                    }
                ),
            ));
        }
    }
    let total: usize = values.values().map(BTreeSet::len).sum();
    if total > config.max_values {
        let per: Vec<String> = values
            .iter()
            .map(|(d, v)| format!("{d} {}", v.len()))
            .collect();
        return Err(SourceError::at(
            SourceErrorKind::Settings,
            root,
            format!(
                "the source has {total} group values ({}), more than `[source.groups] \
                 max_values` = {}, which bounds the summary's groups and the Prometheus series; \
                 raise `max_values` or use coarser groups",
                per.join(", "),
                config.max_values
            ),
        ));
    }
    Ok(())
}

/// What a sidecar row is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// The frame id.
    Frame,
    /// The image path, relative to the sidecar's folder.
    Path,
}

/// A groups sidecar file, read.
#[derive(Debug)]
struct Sidecar {
    file: PathBuf,
    key: Key,
    /// The dimensions, in column order.
    dims: Vec<String>,
    /// `(line, key as written, values in `dims` order)`.
    rows: Vec<(u64, String, Vec<String>)>,
    /// Rows that are not usable (malformed), as skipped items.
    bad: Vec<SourceError>,
}

impl Sidecar {
    /// Reads and checks the header of a sidecar file; a malformed row is kept as its skipped item.
    fn load(file: &Path) -> Result<Sidecar, SourceError> {
        let err = |m: String| SourceError::at(SourceErrorKind::Group, file, m);
        let text =
            crate::fsread::read_text(file, crate::fsread::MAX_TABLE_TEXT_BYTES).map_err(|e| {
                err(format!(
                    "cannot read the groups file ({e}); check `[source.groups] file` (relative \
                     to the config file)"
                ))
            })?;
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(text.as_bytes());
        let header = reader
            .headers()
            .map_err(|e| {
                err(format!(
                    "cannot read the header ({e}); the first line must be `frame,<dimension>…` \
                     or `path,<dimension>…`"
                ))
            })?
            .clone();
        let is = |h: &str, k: &str| h.eq_ignore_ascii_case(k);
        let key_cols: Vec<usize> = (0..header.len())
            .filter(|&i| is(&header[i], "frame") || is(&header[i], "path"))
            .collect();
        let [key_col] = key_cols[..] else {
            return Err(err(
                "the header needs exactly one of the columns `frame` (frame ids) and `path` \
                 (image paths), then one column per dimension"
                    .into(),
            ));
        };
        let key = match is(&header[key_col], "frame") {
            true => Key::Frame,
            false => Key::Path,
        };
        let mut dims: Vec<String> = Vec::new();
        let mut dim_cols: Vec<usize> = Vec::new();
        for (i, h) in header.iter().enumerate() {
            if i == key_col {
                continue;
            }
            check_name(h).map_err(|why| err(format!("header: {why}")))?;
            if dims.iter().any(|d| d.eq_ignore_ascii_case(h)) {
                return Err(err(format!("the header names `{h}` twice; keep one")));
            }
            dims.push(h.to_string());
            dim_cols.push(i);
        }
        if dims.is_empty() {
            return Err(err(
                "the header has no dimension column; write `frame,<dimension>…`".into(),
            ));
        }
        let mut rows = Vec::new();
        let mut bad = Vec::new();
        for record in reader.records() {
            match record {
                Ok(r) => {
                    let line = r.position().map_or(0, |p| p.line());
                    let field = |i: usize| r.get(i).unwrap_or("").to_string();
                    rows.push((
                        line,
                        field(key_col),
                        dim_cols.iter().map(|&i| field(i)).collect(),
                    ));
                }
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line());
                    bad.push(SourceError::new(
                        SourceErrorKind::Group,
                        format!("{}:{line}", file.display()),
                        format!(
                            "malformed row ({e}); give it the header's {} fields",
                            header.len()
                        ),
                    ));
                }
            }
        }
        Ok(Sidecar {
            file: file.to_path_buf(),
            key,
            dims,
            rows,
            bad,
        })
    }

    /// The items with the sidecar's groups: an item without a row, or with an empty value, is its
    /// skipped item; the rows naming no item and the malformed rows come first, as skipped items.
    fn apply(self, mut items: Vec<Result<Item, SourceError>>) -> Vec<Result<Item, SourceError>> {
        let base = self.file.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut out: Vec<Result<Item, SourceError>> = self.bad.into_iter().map(Err).collect();
        let key_of = |item: &Item| match self.key {
            Key::Frame => item.id.clone(),
            Key::Path => normal(&item.path),
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        for (i, entry) in items.iter().enumerate() {
            if let Ok(item) = entry {
                index.entry(key_of(item)).or_insert(i);
            }
        }
        let mut found: Vec<Option<usize>> = vec![None; items.len()];
        let at = |line: u64, message: String| {
            SourceError::new(
                SourceErrorKind::Group,
                format!("{}:{line}", self.file.display()),
                message,
            )
        };
        let column = match self.key {
            Key::Frame => "frame",
            Key::Path => "path",
        };
        for (n, (line, key, _)) in self.rows.iter().enumerate() {
            let lookup = match self.key {
                Key::Frame => key.clone(),
                Key::Path => normal(&base.join(key)),
            };
            match index.get(&lookup) {
                None => out.push(Err(at(
                    *line,
                    format!(
                        "{column} `{}` is no frame of the source; fix the {column} (as the \
                         records' `frame` names it{}) or remove the row",
                        clip(key),
                        match self.key {
                            Key::Frame => "",
                            Key::Path => ", relative to the groups file's folder",
                        }
                    ),
                ))),
                Some(&i) => match found[i] {
                    Some(first) => out.push(Err(at(
                        *line,
                        format!(
                            "{column} `{}` has a row already (line {}); keep one",
                            clip(key),
                            self.rows[first].0
                        ),
                    ))),
                    None => found[i] = Some(n),
                },
            }
        }
        for (i, entry) in items.iter_mut().enumerate() {
            let row = found[i].map(|n| &self.rows[n]);
            with_item(entry, |item| match row {
                None => Err(format!(
                    "has no row in the groups file {}; add a row for its {column} `{}`, or remove \
                     the frame",
                    self.file.display(),
                    clip(&key_of(item))
                )),
                Some((line, _, values)) => {
                    for (dim, value) in self.dims.iter().zip(values) {
                        if value.is_empty() {
                            return Err(format!(
                                "its `{dim}` is empty in the groups file {}:{line}; give the \
                                 frame's {dim}",
                                self.file.display()
                            ));
                        }
                        item.groups.insert(dim.clone(), value.clone());
                    }
                    Ok(())
                }
            });
        }
        out.extend(items);
        out
    }
}

/// A path with its `.` components dropped, as text: the form two spellings of one file share.
fn normal(p: &Path) -> String {
    p.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect::<PathBuf>()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests;
