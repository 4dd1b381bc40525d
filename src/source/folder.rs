//! Folder sources: an ImageFolder tree `root/<class>/<image>`.
//!
//! Each sub-folder of the root is a class; the images under it (searched recursively, as torchvision
//! does) get that class as truth. Images directly in the root have no truth. Only files with an
//! image extension (see `super::decode::image_extensions`) are taken; names starting with `.` are
//! skipped. Order is deterministic: root images first, then class folders by name, each folder's
//! entries by name.
//!
//! Masks and boxes next to the images are picked up by name (no option needed): for an image
//! `<stem>.<ext>`, the mask is `<stem>.mask.png` or `<stem>.mask.npy` (see [`super::mask`]; having
//! both is an error for that image) and the boxes are a Pascal VOC annotation `<stem>.xml` (see
//! [`super::regions`]). Files named `*.mask.<ext>` are never taken as images.
//!
//! Folders are walked once each: a link to a folder is followed when it leads out of the source
//! folder (datasets assembled from links) and that folder has not been read yet; a link back into
//! the source folder (`ln -s . loop`, a second name for a class folder) or to a folder already read
//! is not followed and is a skipped item naming it, so every image is scored once. Folders more than
//! [`MAX_DEPTH`] levels down are not searched (a skipped item too).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::decode::{has_image_extension, undecodable_extension, undecodable_message};
use super::regions::BoxSpec;
use super::{ClassOrder, Item, ItemSource, SourceError, SourceErrorKind};
use crate::frame::{LabelSpace, Truth};

/// How deep class folders are searched for images.
const MAX_DEPTH: usize = 16;

/// Lists the folder at `root` and builds the source. Class folders are mapped to label indices by
/// `order`; a folder that cannot be mapped, or a tree with no images at all, is an error.
pub(crate) fn open(
    root: &Path,
    order: &ClassOrder,
    labels: &LabelSpace,
) -> Result<ItemSource, SourceError> {
    let listing = list_dir(root)?;
    let mut walk = Walk::new(root)?;
    let mut items = listing_items(
        listing.files,
        listing.undecodable,
        &listing.names,
        |name| name.to_string(),
        None,
    );
    // Links that are not followed are items of their own (skipped), not classes.
    let mut class_dirs = Vec::new();
    for (name, dir) in listing.dirs {
        match walk.enter(&dir) {
            Ok(()) => class_dirs.push((name, dir)),
            Err(e) => items.push(Err(e)),
        }
    }
    let class_names: Vec<String> = class_dirs.iter().map(|(name, _)| name.clone()).collect();
    let indices = class_indices(&class_names, order, labels, root)?;
    for ((name, dir), index) in class_dirs.into_iter().zip(indices) {
        collect_images(&dir, &name, 1, Some(Truth(index)), &mut walk, &mut items)?;
    }
    if items.is_empty() {
        return Err(SourceError::at(
            SourceErrorKind::Layout,
            root,
            format!(
                "no images ({}) in it or below it; point --source (or `[source] path`) at a \
                 folder of images, or of class folders <class>/<image>",
                super::decode::extension_list()
            ),
        ));
    }
    let description = format!(
        "folder {} ({} classes, {} images)",
        root.display(),
        class_names.len(),
        items.len()
    );
    Ok(ItemSource::new(items, description))
}

/// The folders a walk has entered (canonical paths), so that none is read twice (see the module
/// docs).
struct Walk {
    root: PathBuf,
    visited: HashSet<PathBuf>,
}

impl Walk {
    fn new(root: &Path) -> Result<Self, SourceError> {
        let root = std::fs::canonicalize(root).map_err(|e| cannot_list(root, &e))?;
        let visited = HashSet::from([root.clone()]);
        Ok(Self { root, visited })
    }

    /// Whether to enter the sub-folder `dir`: `Ok` (and it is marked read), or the skipped item
    /// for a link that is not followed.
    fn enter(&mut self, dir: &Path) -> Result<(), SourceError> {
        let real = std::fs::canonicalize(dir).map_err(|e| cannot_list(dir, &e))?;
        let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        if link && real.starts_with(&self.root) {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                dir,
                format!(
                    "is a link to {}, inside the source folder (a loop, or a second name for a \
                     folder): not followed, so its images are read once; remove the link",
                    real.display()
                ),
            ));
        }
        if !self.visited.insert(real.clone()) {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                dir,
                format!(
                    "is a link to {}, a folder already read: not followed, so its images are read \
                     once; remove the link",
                    real.display()
                ),
            ));
        }
        Ok(())
    }
}

/// The error for a folder that cannot be listed.
fn cannot_list(dir: &Path, e: &std::io::Error) -> SourceError {
    SourceError::at(
        SourceErrorKind::Open,
        dir,
        format!("cannot list folder ({e}); check that it exists and is readable"),
    )
}

/// The entries of one folder: sub-folders and image files, each as (name, path), sorted by name,
/// and the names of all its files (to find the masks and annotations next to the images).
pub(crate) struct Listing {
    pub(crate) dirs: Vec<(String, PathBuf)>,
    pub(crate) files: Vec<(String, PathBuf)>,
    /// Files of image formats this build cannot decode (`.heic`, `.avif`, …, see
    /// [`undecodable_extension`]), sorted by name: named as skipped, never read.
    pub(crate) undecodable: Vec<(String, PathBuf)>,
    pub(crate) names: HashSet<String>,
}

/// True for a mask file name (`<stem>.mask.<ext>`), which is never an image of the source.
fn is_mask_name(name: &str) -> bool {
    Path::new(name)
        .file_stem()
        .is_some_and(|s| s.to_string_lossy().ends_with(".mask"))
}

/// The item of the image `path` (frame id `id`) with the mask and annotation found next to it
/// among `names` (the file names of its folder), see the module docs.
fn image_item(
    names: &HashSet<String>,
    id: String,
    path: PathBuf,
    truth: Option<Truth>,
) -> Result<Item, SourceError> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let masks: Vec<String> = [".mask.png", ".mask.npy"]
        .iter()
        .map(|suffix| format!("{stem}{suffix}"))
        .filter(|n| names.contains(n))
        .collect();
    let mut item = Item::new(path, id, truth);
    match &masks[..] {
        [] => {}
        [one] => item.mask = Some(dir.join(one)),
        [a, b, ..] => {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                &item.path,
                format!("has two masks next to it, {a} and {b}; keep one"),
            ));
        }
    }
    let xml = format!("{stem}.xml");
    if names.contains(&xml) {
        item.boxes = Some(BoxSpec::Voc(dir.join(xml)));
    }
    Ok(item)
}

/// Lists `dir`: sub-folders (symlinks followed) and files with an image extension (except mask
/// files), skipping names that start with `.`; both sorted by name.
pub(crate) fn list_dir(dir: &Path) -> Result<Listing, SourceError> {
    let cannot = |e: std::io::Error| cannot_list(dir, &e);
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut undecodable = Vec::new();
    let mut names = HashSet::new();
    for entry in std::fs::read_dir(dir).map_err(cannot)? {
        let entry = entry.map_err(cannot)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        // `metadata` follows symlinks; a broken link counts as a file (and fails when read).
        if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            dirs.push((name, path));
        } else {
            if has_image_extension(&path) && !is_mask_name(&name) {
                files.push((name.clone(), path));
            } else if undecodable_extension(&path).is_some() && !is_mask_name(&name) {
                undecodable.push((name.clone(), path));
            }
            names.insert(name);
        }
    }
    dirs.sort();
    files.sort();
    undecodable.sort();
    Ok(Listing {
        dirs,
        files,
        undecodable,
        names,
    })
}

/// The items of a folder's image `files` and `undecodable` files, in name order, each with the
/// frame id `id(name)`: an image's item, or for a file of a format this build cannot decode the
/// skipped item naming it (the same line as for any file that does not decode, with the fix:
/// convert it).
fn listing_items(
    mut files: Vec<(String, PathBuf)>,
    undecodable: Vec<(String, PathBuf)>,
    names: &HashSet<String>,
    id: impl Fn(&str) -> String,
    truth: Option<Truth>,
) -> Vec<Result<Item, SourceError>> {
    files.extend(undecodable);
    files.sort();
    files
        .into_iter()
        .map(|(name, path)| match undecodable_extension(&path) {
            Some(ext) => Err(SourceError::at(
                SourceErrorKind::Unreadable,
                &path,
                undecodable_message(ext),
            )),
            None => image_item(names, id(&name), path, truth),
        })
        .collect()
}

/// Appends to `out` the item of every image under `dir` (with `truth`), where ids are
/// `prefix/<relative path>` with '/' separators; files of a folder come before its sub-folders.
/// Sub-folders are entered through `walk` (a link not followed, or a folder too deep, is a
/// skipped item in its place).
fn collect_images(
    dir: &Path,
    prefix: &str,
    depth: usize,
    truth: Option<Truth>,
    walk: &mut Walk,
    out: &mut Vec<Result<Item, SourceError>>,
) -> Result<(), SourceError> {
    let listing = list_dir(dir)?;
    out.extend(listing_items(
        listing.files,
        listing.undecodable,
        &listing.names,
        |name| format!("{prefix}/{name}"),
        truth,
    ));
    for (name, sub) in listing.dirs {
        if depth >= MAX_DEPTH {
            out.push(Err(SourceError::at(
                SourceErrorKind::Layout,
                &sub,
                format!(
                    "is more than {MAX_DEPTH} folders below the source folder: not searched for \
                     images; move any up"
                ),
            )));
            continue;
        }
        match walk.enter(&sub) {
            Ok(()) => {
                let id = format!("{prefix}/{name}");
                collect_images(&sub, &id, depth + 1, truth, walk, out)?;
            }
            Err(e) => out.push(Err(e)),
        }
    }
    Ok(())
}

/// Label index of each class folder (`names` sorted), by `order`. Errors name the folders that
/// cannot be mapped and what to do; `root` is the item of the error.
pub(crate) fn class_indices(
    names: &[String],
    order: &ClassOrder,
    labels: &LabelSpace,
    root: &Path,
) -> Result<Vec<usize>, SourceError> {
    match order {
        ClassOrder::Sorted => Ok((0..names.len()).collect()),
        ClassOrder::Labels => {
            // An ImageNet tree names its folders by WordNet id (`n01440764/`): in a label space of
            // the 1000 ImageNet-1k classes (index = position in the sorted wnid list, the standard
            // order) such a folder is its class.
            let imagenet = labels.len() == super::wnids::wnids().len();
            let resolve = |n: &str| {
                labels
                    .resolve(n)
                    .or_else(|| imagenet.then(|| super::wnids::wnid_index(n)).flatten())
            };
            let resolved: Vec<Option<usize>> = names.iter().map(|n| resolve(n)).collect();
            let missing: Vec<&str> = names
                .iter()
                .zip(&resolved)
                .filter(|(_, r)| r.is_none())
                .map(|(n, _)| n.as_str())
                .collect();
            if missing.is_empty() {
                return Ok(resolved.into_iter().flatten().collect());
            }
            Err(SourceError::at(
                SourceErrorKind::Label,
                root,
                format!(
                    "{} not a class of the label space ({} classes); name the folders after \
                     classes in the labels file, or set `classes = \"sorted\"` (torchvision \
                     ImageFolder order) or `classes = \"path/to/list.txt\"` (one folder name \
                     per line, line i = class i)",
                    folders_are(&missing),
                    labels.len(),
                ),
            ))
        }
        ClassOrder::List(list) => {
            let text =
                crate::fsread::read_text(list, crate::fsread::MAX_TEXT_BYTES).map_err(|e| {
                    SourceError::at(
                        SourceErrorKind::Layout,
                        list,
                        format!("cannot read class list ({e}); check `classes` in `[source]`"),
                    )
                })?;
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let mut indices = Vec::with_capacity(names.len());
            let mut missing = Vec::new();
            for name in names {
                match lines.iter().position(|l| *l == name.as_str()) {
                    Some(i) => indices.push(i),
                    None => missing.push(name.as_str()),
                }
            }
            if missing.is_empty() {
                return Ok(indices);
            }
            Err(SourceError::at(
                SourceErrorKind::Label,
                root,
                format!(
                    "{} not in the class list {}; add the missing names to the list (one per \
                     line) or remove those folders",
                    folders_are(&missing),
                    list.display(),
                ),
            ))
        }
    }
}

/// "class folder `a` is" or "class folders `a`, `b`, … (N in all) are", naming at most five.
fn folders_are(names: &[&str]) -> String {
    let shown: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    let mut s = shown.join(", ");
    if names.len() > 5 {
        s.push_str(&format!(", … ({} in all)", names.len()));
    }
    if names.len() == 1 {
        format!("class folder {s} is")
    } else {
        format!("class folders {s} are")
    }
}

#[cfg(test)]
mod tests;
