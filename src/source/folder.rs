//! Folder sources: an ImageFolder tree `root/<class>/<image>`.
//!
//! Each sub-folder of the root is a class; the images under it (searched recursively, as torchvision
//! does) get that class as truth. Images directly in the root have no truth. Only files with an
//! image extension (see [`super::decode::image_extensions`]) are taken; names starting with `.` are
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
use super::{ClassOrder, Item, ItemSource, SourceError};
use crate::frame::{LabelSpace, Truth};

/// How deep class folders are searched for images.
pub const MAX_DEPTH: usize = 16;

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
            Some(ext) => Err(SourceError::at(&path, undecodable_message(ext))),
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
            let resolved: Vec<Option<usize>> = names.iter().map(|n| labels.resolve(n)).collect();
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
mod tests {
    use super::*;
    use crate::frame::Frame;
    use crate::source::Source;
    use crate::source::test_util::{labels, write_rgb};

    /// root/espresso/{b.png, a.JPG, notes.txt}, root/tabby cat/c.png, root/loose.png, root/.hidden/x.png
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write_rgb(&r.join("espresso/b.png"), 3, 2, [10, 20, 30]);
        write_rgb(&r.join("espresso/a.JPG"), 3, 2, [200, 200, 200]);
        std::fs::write(r.join("espresso/notes.txt"), "not an image").unwrap();
        write_rgb(&r.join("tabby cat/c.png"), 2, 2, [0, 0, 0]);
        write_rgb(&r.join("loose.png"), 2, 2, [0, 0, 0]);
        write_rgb(&r.join(".hidden/x.png"), 2, 2, [0, 0, 0]);
        dir
    }

    fn drain(s: &mut dyn Source) -> Vec<Frame> {
        std::iter::from_fn(|| s.next_frame())
            .map(|f| f.unwrap())
            .collect()
    }

    fn ids_and_truth(frames: &[Frame]) -> Vec<(String, Option<usize>)> {
        frames
            .iter()
            .map(|f| (f.id.clone(), f.truth.map(|t| t.0)))
            .collect()
    }

    #[test]
    fn labels_order_resolves_folder_names_and_aliases() {
        let dir = tree();
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        assert_eq!(s.len_hint(), Some(4));
        let frames = drain(&mut s);
        assert_eq!(
            ids_and_truth(&frames),
            vec![
                ("loose.png".to_string(), None),
                ("espresso/a.JPG".to_string(), Some(2)),
                ("espresso/b.png".to_string(), Some(2)),
                ("tabby cat/c.png".to_string(), Some(1)),
            ]
        );
        let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3]);
        assert_eq!(frames[2].image.get_pixel(0, 0).0, [10, 20, 30]);
        assert_eq!(frames[2].image.dimensions(), (3, 2));
        assert!(
            frames
                .iter()
                .all(|f| f.regions.is_none() && f.decode_ms >= 0.0)
        );
        assert!(
            s.describe().contains("2 classes, 4 images"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn labels_order_rejects_unknown_folder_at_open() {
        let dir = tree();
        write_rgb(&dir.path().join("n01440364/z.png"), 2, 2, [0, 0, 0]);
        let e = open(dir.path(), &ClassOrder::Labels, &labels())
            .err()
            .unwrap();
        assert!(
            e.message
                .contains("class folder `n01440364` is not a class"),
            "{e}"
        );
        assert!(e.message.contains("classes = \"sorted\""), "{e}");
    }

    #[test]
    fn sorted_order_uses_position_among_sorted_folders() {
        let dir = tree();
        write_rgb(&dir.path().join("aardvark/z.png"), 2, 2, [0, 0, 0]);
        let mut s = open(dir.path(), &ClassOrder::Sorted, &LabelSpace::new(vec![])).unwrap();
        let got = ids_and_truth(&drain(&mut s));
        assert_eq!(
            got,
            vec![
                ("loose.png".to_string(), None),
                ("aardvark/z.png".to_string(), Some(0)),
                ("espresso/a.JPG".to_string(), Some(1)),
                ("espresso/b.png".to_string(), Some(1)),
                ("tabby cat/c.png".to_string(), Some(2)),
            ]
        );
    }

    #[test]
    fn list_order_uses_line_numbers() {
        let dir = tree();
        let list = dir.path().join(".classes.txt");
        std::fs::write(&list, "zebra\ntabby cat\n  espresso  \n").unwrap();
        let mut s = open(dir.path(), &ClassOrder::List(list.clone()), &labels()).unwrap();
        let got = ids_and_truth(&drain(&mut s));
        assert_eq!(got[1], ("espresso/a.JPG".to_string(), Some(2)));
        assert_eq!(got[3], ("tabby cat/c.png".to_string(), Some(1)));

        std::fs::write(&list, "espresso\n").unwrap();
        let e = open(dir.path(), &ClassOrder::List(list.clone()), &labels())
            .err()
            .unwrap();
        assert!(
            e.message
                .contains("class folder `tabby cat` is not in the class list"),
            "{e}"
        );

        let e = open(
            dir.path(),
            &ClassOrder::List(dir.path().join("nope.txt")),
            &labels(),
        )
        .err()
        .unwrap();
        assert!(e.message.starts_with("cannot read class list"), "{e}");
    }

    #[test]
    fn nested_folders_are_searched_with_slash_ids() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("tench/sub/deep.png"), 2, 2, [0, 0, 0]);
        write_rgb(&dir.path().join("tench/top.png"), 2, 2, [0, 0, 0]);
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        let got = ids_and_truth(&drain(&mut s));
        assert_eq!(
            got,
            vec![
                ("tench/top.png".to_string(), Some(0)),
                ("tench/sub/deep.png".to_string(), Some(0)),
            ]
        );
    }

    #[test]
    fn corrupt_image_is_skipped_and_iteration_continues() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("tench/a.png"), 2, 2, [0, 0, 0]);
        std::fs::write(dir.path().join("tench/b.jpg"), b"\xff\xd8garbage").unwrap();
        std::fs::write(dir.path().join("tench/c.png"), b"").unwrap();
        write_rgb(&dir.path().join("tench/d.png"), 2, 2, [0, 0, 0]);
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        let results: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
        assert_eq!(results.len(), 4);
        assert!(results[0].is_ok() && results[3].is_ok());
        let e = results[1].as_ref().unwrap_err();
        assert!(e.item.ends_with("b.jpg"), "{e}");
        assert!(e.message.starts_with("cannot decode image"), "{e}");
        assert!(results[2].is_err());
        assert_eq!(results[3].as_ref().unwrap().seq, 1);
    }

    #[test]
    fn masks_and_annotations_next_to_images_are_attached() {
        use crate::frame::BBox;
        use crate::source::test_util::{write_gray, write_npy};
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("tench");
        write_rgb(&c.join("a.png"), 4, 3, [1, 1, 1]);
        write_gray(&c.join("a.mask.png"), 4, 3, 255);
        std::fs::write(
            c.join("a.xml"),
            "<annotation><size><width>4</width><height>3</height></size><object><name>x</name>\
             <bndbox><xmin>1</xmin><ymin>0</ymin><xmax>2</xmax><ymax>1</ymax></bndbox></object>\
             </annotation>",
        )
        .unwrap();
        write_rgb(&c.join("b.jpg"), 2, 2, [1, 1, 1]);
        write_gray(&c.join("b.mask.png"), 2, 2, 255);
        write_npy(&c.join("b.mask.npy"), "|u1", false, "(2, 2)", &[1; 4]);
        write_rgb(&c.join("c.png"), 2, 2, [1, 1, 1]);
        write_npy(&c.join("c.mask.npy"), "|u1", false, "(2, 2)", &[0, 1, 0, 0]);
        write_gray(&c.join("orphan.mask.png"), 2, 2, 255);
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        // The mask files are not images: a, b, c.
        assert_eq!(s.len_hint(), Some(3));
        let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
        let a = got[0].as_ref().unwrap();
        let r = a.regions.as_ref().unwrap();
        assert_eq!(r.mask.as_ref().unwrap().dimensions(), (4, 3));
        assert_eq!(r.boxes, vec![BBox::new(1, 0, 3, 2)]);
        let e = got[1].as_ref().unwrap_err();
        assert!(e.item.ends_with("b.jpg"), "{e}");
        assert!(
            e.message
                .starts_with("has two masks next to it, b.mask.png and b.mask.npy"),
            "{e}"
        );
        let c = got[2].as_ref().unwrap();
        let r = c.regions.as_ref().unwrap();
        assert_eq!(r.mask.as_ref().unwrap().as_raw(), &vec![0, 255, 0, 0]);
        assert!(r.boxes.is_empty());
    }

    #[test]
    fn every_decodable_format_is_listed_and_other_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("tench");
        for ext in ["png", "jpg", "webp", "bmp", "gif", "tif", "tiff"] {
            write_rgb(&c.join(format!("a.{ext}")), 3, 2, [9, 9, 9]);
        }
        for other in [
            "notes.txt",
            "list.csv",
            "meta.json",
            "voc.xml",
            "z.mask.png",
            "y.mask.npy",
        ] {
            std::fs::write(c.join(other), "x").unwrap();
        }
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        let ids: Vec<String> = std::iter::from_fn(|| s.next_frame())
            .map(|f| f.unwrap().id)
            .collect();
        assert_eq!(
            ids,
            [
                "tench/a.bmp",
                "tench/a.gif",
                "tench/a.jpg",
                "tench/a.png",
                "tench/a.tif",
                "tench/a.tiff",
                "tench/a.webp"
            ]
        );
    }

    #[test]
    fn formats_this_build_cannot_decode_are_named_as_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("tench");
        write_rgb(&c.join("b.png"), 3, 2, [9, 9, 9]);
        // Named by extension, never read: the content does not matter.
        for name in ["a.heic", "c.AVIF", "d.jxl", "z.mask.avif", ".hidden.heic"] {
            std::fs::write(c.join(name), "x").unwrap();
        }
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        let got: Vec<Result<String, String>> = std::iter::from_fn(|| s.next_frame())
            .map(|f| f.map(|f| f.id).map_err(|e| e.to_string()))
            .collect();
        let list = crate::source::decode::extension_list();
        let skip = |name: &str, ext: &str| {
            Err(format!(
                "{}: cannot decode image (.{ext} files are not decoded by this robustream, which \
                 reads {list}); convert the file to PNG or JPEG",
                c.join(name).display()
            ))
        };
        assert_eq!(
            got,
            [
                skip("a.heic", "heic"),
                Ok("tench/b.png".to_string()),
                skip("c.AVIF", "AVIF"),
                skip("d.jxl", "jxl"),
            ]
        );
        // A folder holding only such files is not "no images": each is named.
        let only = tempfile::tempdir().unwrap();
        std::fs::write(only.path().join("IMG_0001.HEIC"), "x").unwrap();
        let mut s = open(only.path(), &ClassOrder::Labels, &labels()).unwrap();
        let e = s.next_frame().unwrap().unwrap_err();
        assert!(e.item.ends_with("IMG_0001.HEIC"), "{e}");
        assert!(s.next_frame().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn links_back_into_the_tree_are_named_not_followed() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().join("data");
        write_rgb(&r.join("tench/a.png"), 2, 2, [0, 0, 0]);
        write_rgb(&r.join("loose.png"), 2, 2, [0, 0, 0]);
        symlink(".", r.join("loop")).unwrap();
        symlink("..", r.join("tench/up")).unwrap();
        symlink("../tench", r.join("tench/again")).unwrap();
        // A link out of the tree is followed, once.
        write_rgb(&dir.path().join("outside/b.png"), 2, 2, [0, 0, 0]);
        symlink("../../outside", r.join("tench/ext")).unwrap();
        symlink("../../outside", r.join("tench/ext2")).unwrap();
        let mut s = open(&r, &ClassOrder::Labels, &labels()).unwrap();
        let got: Vec<Result<String, String>> = std::iter::from_fn(|| s.next_frame())
            .map(|f| f.map(|f| f.id).map_err(|e| e.to_string()))
            .collect();
        let ok: Vec<&str> = got.iter().flatten().map(String::as_str).collect();
        assert_eq!(ok, ["loose.png", "tench/a.png", "tench/ext/b.png"]);
        let errs: Vec<&String> = got.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(errs.len(), 4, "{errs:#?}");
        for (e, name) in errs.iter().zip(["loop", "again", "ext2", "up"]) {
            assert!(e.contains(&format!("{name}: is a link to ")), "{e}");
            assert!(e.ends_with("not followed, so its images are read once; remove the link"));
        }
        assert!(errs[0].contains("inside the source folder"), "{}", errs[0]);
        assert!(errs[2].contains("a folder already read"), "{}", errs[2]);
    }

    #[test]
    fn folders_too_deep_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().join("tench");
        write_rgb(&deep.join("top.png"), 2, 2, [0, 0, 0]);
        for i in 0..MAX_DEPTH {
            deep = deep.join(format!("d{i}"));
        }
        write_rgb(&deep.join("deep.png"), 2, 2, [0, 0, 0]);
        let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
        let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap().id, "tench/top.png");
        let e = got[1].as_ref().unwrap_err();
        assert!(e.item.ends_with(&format!("d{}", MAX_DEPTH - 1)), "{e}");
        assert!(
            e.message.starts_with("is more than 16 folders below"),
            "{e}"
        );
    }

    #[test]
    fn empty_folder_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("readme.txt"), "x").unwrap();
        let e = open(dir.path(), &ClassOrder::Sorted, &labels())
            .err()
            .unwrap();
        assert!(e.message.starts_with("no images (.jpg .jpeg .png"), "{e}");
    }

    #[test]
    fn many_unknown_folders_are_summarised() {
        let names: Vec<String> = (0..7).map(|i| format!("c{i}")).collect();
        let e = class_indices(&names, &ClassOrder::Labels, &labels(), Path::new("r")).unwrap_err();
        assert!(e.message.starts_with("class folders `c0`, `c1`"), "{e}");
        assert!(e.message.contains("(7 in all) are not a class"), "{e}");
    }

    #[test]
    fn a_class_list_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
        let dir = tree();
        let files = tempfile::tempdir().unwrap();
        let limit = crate::fsread::MAX_TEXT_BYTES;
        for (list, why) in crate::fsread::refused_paths(files.path(), limit) {
            let e = open(dir.path(), &ClassOrder::List(list.clone()), &labels())
                .err()
                .unwrap();
            assert_eq!(e.item, list.display().to_string());
            assert!(
                e.message
                    .starts_with(&format!("cannot read class list ({why}"))
                    && e.message.ends_with("check `classes` in `[source]`"),
                "{e}"
            );
        }
    }
}
