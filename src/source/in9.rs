//! IN-9 (Backgrounds Challenge) release layout, read so that the released test sets are scored as
//! `in9_eval.py` scores them (docs/in9.md#variations-and-release-layout,
//! docs/in9.md#evaluation-preprocessing):
//!
//! ```text
//! <root>/<variation>/val/<NN_class>/<image>      variation: original, only_fg, no_fg, only_bg_b,
//!                                                 only_bg_t, mixed_same, mixed_rand, mixed_next
//! <root>/fg_mask/val/<NN_class>/<stem>.npy       foreground masks of `original` (2-D, 0/1)
//! ```
//!
//! - **Classes** are the nine IN-9 folders; the truth is the folder's two-digit prefix (`00_dog` → 0 …
//!   `08_fish` → 8), which is also their sorted order, as `ImageFolder` numbers them
//!   (docs/in9.md#classes-and-the-imagenet-mapping). The run's label space must be IN-9's nine
//!   classes: for a 1000-class ImageNet model set `[dataset] class_map = "configs/in_to_in9.json"`
//!   (the reference's `in_to_in9.json`; unmapped ImageNet classes count as wrong), or use
//!   [`in_to_in9`].
//! - **Variations**, two ways to use them:
//!   - *stored* (any variation besides `original` is read): every image is a stored variant
//!     ([`crate::frame::Frame::variant`]) evaluated as it is, with no scenario applied — `original`
//!     under `clean`, the others under `background/<variation>`, the keys of the matching on-the-fly
//!     scenarios, which must therefore be in the plan (e.g. `scenarios = ["background/mixed_same",
//!     "background/mixed_rand"]`; `clean` always is). This scores the released test sets as
//!     `in9_eval.py` does; BG-Gap = top-1(`background/mixed_same`) − top-1(`background/mixed_rand`)
//!     (docs/in9.md#bg-gap).
//!   - *on the fly* (only `original` is read, e.g. `variations = ["original"]`): `original` images
//!     are ordinary frames with their `fg_mask` attached, and the whole plan applies to them,
//!     including the on-the-fly background scenarios built from the masks.
//! - **Frame ids** are `<NN_class>/<foreground stem>`, the same for every variation of one image:
//!   the stem of `original`'s file, which mixed images carry as `fg_<stem>_bg_<…>`
//!   (docs/in9.md#how-the-variations-are-built), so records of one image line up across variations.
//!   Frames come image by image, each image's variations together in the order of [`VARIATIONS`].
//! - **Preprocessing**: `in9_eval.py` applies no resize or crop
//!   (docs/in9.md#evaluation-preprocessing). A stored variant already at the model's input size is
//!   evaluated as it is; `original` frames get the model's view, so to score exactly as
//!   `in9_eval.py` use a model description without `resize_shorter` (a centre crop to the input
//!   size leaves the released images unchanged).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::decode::has_image_extension;
use super::{Item, Source, SourceError, SourceErrorKind, load_item};
use crate::classmap::{ClassMap, ClassMapError};
use crate::frame::{Frame, LabelSpace, Truth};

/// The IN-9 variations of the release, in the order frames of one image come out, with the scenario
/// key each is recorded under (`original` is `clean`).
pub(crate) const VARIATIONS: [(&str, &str); 8] = [
    ("original", "clean"),
    ("only_fg", "background/only_fg"),
    ("no_fg", "background/no_fg"),
    ("only_bg_b", "background/only_bg_b"),
    ("only_bg_t", "background/only_bg_t"),
    ("mixed_same", "background/mixed_same"),
    ("mixed_rand", "background/mixed_rand"),
    ("mixed_next", "background/mixed_next"),
];

/// The folder of foreground masks, next to the variations.
pub(crate) const MASK_FOLDER: &str = "fg_mask";

/// Number of IN-9 classes.
const CLASSES: usize = 9;

/// The ImageNet-1k → IN-9 class map (`configs/in_to_in9.json`, built from
/// docs/in9.md#classes-and-the-imagenet-mapping), built into the binary.
const IN_TO_IN9_JSON: &str = include_str!("../../configs/in_to_in9.json");

/// The built-in ImageNet-1k → IN-9 class map ([`IN_TO_IN9_JSON`]): 370 ImageNet classes mapped to
/// the nine IN-9 classes, the other 630 unmapped (always wrong;
/// docs/in9.md#classes-and-the-imagenet-mapping).
pub fn in_to_in9() -> Result<ClassMap, ClassMapError> {
    ClassMap::from_json(IN_TO_IN9_JSON, Path::new("configs/in_to_in9.json"))
}

/// The scenario key a variation is recorded under, `None` for an unknown variation.
#[cfg(test)]
fn variation_key(variation: &str) -> Option<&'static str> {
    VARIATIONS
        .iter()
        .find(|(v, _)| *v == variation)
        .map(|(_, k)| *k)
}

/// True when `root` looks like an IN-9 release root: it has `<variation>/val` or `fg_mask/val`
/// sub-folders. Used to detect the kind of a folder given without `kind`.
pub(crate) fn looks_like_release(root: &Path) -> bool {
    VARIATIONS
        .iter()
        .map(|(v, _)| *v)
        .chain([MASK_FOLDER])
        .any(|v| root.join(v).join("val").is_dir())
}

/// The foreground stem of an image file name: the file stem, or for mixed images named
/// `fg_<stem>_bg_<background>` (docs/in9.md#how-the-variations-are-built) the `<stem>` part.
///
/// ```
/// use robustream::source::in9::foreground_stem;
/// assert_eq!(foreground_stem("n02085620_10074.JPEG"), "n02085620_10074");
/// assert_eq!(foreground_stem("fg_n02085620_10074_bg_n01531178_1234.JPEG"), "n02085620_10074");
/// ```
pub fn foreground_stem(file_name: &str) -> &str {
    let stem = Path::new(file_name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(file_name);
    match stem
        .strip_prefix("fg_")
        .and_then(|rest| rest.split_once("_bg_"))
    {
        Some((fg, _)) if !fg.is_empty() => fg,
        _ => stem,
    }
}

/// The class index of an IN-9 class folder name: its two-digit prefix `NN_` with NN < 9.
fn class_index(name: &str) -> Option<usize> {
    let (digits, rest) = name.split_at_checked(2)?;
    let index: usize = digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())??;
    (rest.starts_with('_') && index < CLASSES).then_some(index)
}

/// An IN-9 release as a source; see the module docs.
pub(crate) struct In9Source {
    items: std::iter::Peekable<std::vec::IntoIter<In9Item>>,
    len: usize,
    next_seq: u64,
    description: String,
}

impl Source for In9Source {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let (item, key) = match self.items.next()? {
            Ok(entry) => entry,
            Err(e) => return Some(Err(e)),
        };
        let frame = load_item(item, self.next_seq).map(|mut f| {
            f.variant = key.map(str::to_string);
            f
        });
        if frame.is_ok() {
            self.next_seq += 1;
        }
        Some(frame)
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.len)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn pass_over(&mut self, wanted: &super::ItemFilter, max: u64) -> u64 {
        fn id(entry: &In9Item) -> Option<&str> {
            entry.as_ref().ok().map(|(item, _)| item.id.as_str())
        }
        super::pass_over_items(&mut self.items, id, wanted, max)
    }
}

/// The scenario keys of the variations a source over the release at `root` reads (`variations` as
/// in [`open`]; unknown or missing ones are left out), `clean` first: what a run's plan must hold.
pub(crate) fn plan_keys(root: &Path, variations: Option<&[String]>) -> Vec<&'static str> {
    VARIATIONS
        .iter()
        .filter(|(v, _)| variations.is_none_or(|names| names.iter().any(|n| n == v)))
        .filter(|(v, _)| *v == "original" || root.join(v).join("val").is_dir())
        .map(|(_, k)| *k)
        .collect()
}

/// Lists the release at `root` and builds the source. `variations` picks the variations to read
/// (names of [`VARIATIONS`]); `None` reads every one present. `labels` is the run's label space,
/// which must have the nine IN-9 classes. Layout problems (no `val/` folder, a class folder that is
/// not `NN_name`, an unknown variation) fail here; a duplicate image fails as its item.
pub(crate) fn open(
    root: &Path,
    variations: Option<&[String]>,
    labels: &LabelSpace,
) -> Result<In9Source, SourceError> {
    check_labels(root, labels)?;
    let chosen = chosen_variations(root, variations)?;
    let images = images_by_foreground(root, &chosen)?;
    // Any stored variation besides `original` makes every frame a stored variant (module docs).
    let stored_mode = chosen.iter().any(|(v, _)| *v != "original");
    let (items, with_mask) = release_items(root, &chosen, images, stored_mode);
    if items.is_empty() {
        return Err(no_images(root, &chosen));
    }
    let names: Vec<&str> = chosen.iter().map(|(v, _)| *v).collect();
    let description = match stored_mode {
        true => format!(
            "in9 {} (stored: {}; {} images)",
            root.display(),
            names.join(", "),
            items.len()
        ),
        false => format!(
            "in9 {} (original; {} images, {} with fg_mask)",
            root.display(),
            items.len(),
            with_mask
        ),
    };
    Ok(In9Source {
        len: items.len(),
        items: items.into_iter().peekable(),
        next_seq: 0,
        description,
    })
}

/// A variation to read: its name and the scenario key it is recorded under ([`VARIATIONS`]).
type Variation = (&'static str, &'static str);

/// The image files of one image: per chosen variation (in the order chosen), the files that carry
/// its foreground stem (one, when the release is sound).
type PerVariation = Vec<Vec<PathBuf>>;

/// The release's images keyed by (class, foreground stem), each with its frame id and files.
type Images = BTreeMap<(usize, String), (String, PerVariation)>;

/// One item of the source: the image to load with the key of its stored variation (`None`: not a
/// stored variant), or the error it fails as.
type In9Item = Result<(Item, Option<&'static str>), SourceError>;

/// Fails unless the run's label space has IN-9's nine classes: a truth is a class folder's index,
/// so a 1000-class label space would score every frame against the wrong classes.
fn check_labels(root: &Path, labels: &LabelSpace) -> Result<(), SourceError> {
    if labels.len() == CLASSES {
        return Ok(());
    }
    Err(SourceError::at(
        SourceErrorKind::Label,
        root,
        format!(
            "an IN-9 source needs the 9 IN-9 classes as labels but the run has {}; for an \
             ImageNet-1k model set `[dataset] class_map = \"configs/in_to_in9.json\"` (a 9-class \
             IN-9 model needs no class map)",
            labels.len()
        ),
    ))
}

/// The variations to read, in [`VARIATIONS`] order: the ones `variations` names (each must be an
/// IN-9 variation whose folder is there; a name given twice is read once), or with `None` every
/// one present. Fails when none is left, before any folder is listed.
fn chosen_variations(
    root: &Path,
    variations: Option<&[String]>,
) -> Result<Vec<Variation>, SourceError> {
    let chosen: Vec<Variation> = match variations {
        Some(names) => {
            let mut out = Vec::new();
            for name in names {
                let Some(&(v, key)) = VARIATIONS.iter().find(|(v, _)| v == name) else {
                    return Err(SourceError::at(
                        SourceErrorKind::Settings,
                        root,
                        format!(
                            "`variations` has `{name}`, not an IN-9 variation; use some of {}",
                            known_variations()
                        ),
                    ));
                };
                let dir = root.join(v).join("val");
                if !dir.is_dir() {
                    return Err(SourceError::at(
                        SourceErrorKind::Layout,
                        &dir,
                        format!(
                            "variation `{v}` was asked for but this folder is missing; the layout \
                             is <root>/<variation>/val/<NN_class>/<image> \
                             (docs/in9.md#variations-and-release-layout)"
                        ),
                    ));
                }
                if !out.iter().any(|(o, _)| *o == v) {
                    out.push((v, key));
                }
            }
            // Frames of one image come in the canonical order whatever the order asked.
            out.sort_by_key(|(v, _)| VARIATIONS.iter().position(|(w, _)| w == v));
            out
        }
        None => VARIATIONS
            .iter()
            .copied()
            .filter(|(v, _)| root.join(v).join("val").is_dir())
            .collect(),
    };
    if chosen.is_empty() {
        return Err(SourceError::at(
            SourceErrorKind::Layout,
            root,
            format!(
                "no IN-9 variation folder found; the layout is <root>/<variation>/val/<NN_class>/\
                 <image> with <variation> one of {} (docs/in9.md#variations-and-release-layout)",
                known_variations()
            ),
        ));
    }
    Ok(chosen)
}

/// Lists the class folders of every chosen variation and groups the image files by (class,
/// foreground stem), each with its frame id `<NN_class>/<stem>`: the variations of one image line
/// up under one key, whatever their file names (mixed images carry the stem inside theirs). The
/// map's order (class, then stem) is the order frames come out in.
fn images_by_foreground(root: &Path, chosen: &[Variation]) -> Result<Images, SourceError> {
    let mut images = Images::new();
    for (vi, (v, _)) in chosen.iter().enumerate() {
        let val = root.join(v).join("val");
        for (class_name, class, dir) in class_folders(&val)? {
            for (name, path) in list_files(&dir)? {
                if !has_image_extension(&path) {
                    continue;
                }
                let stem = foreground_stem(&name).to_string();
                let entry = images.entry((class, stem.clone())).or_insert_with(|| {
                    (
                        format!("{class_name}/{stem}"),
                        vec![Vec::new(); chosen.len()],
                    )
                });
                entry.1[vi].push(path);
            }
        }
    }
    Ok(images)
}

/// The source's items, image by image and within an image in the chosen order, and how many got a
/// mask: an image that is missing from a variation is skipped there, one found twice is an error
/// item (a duplicate must not be scored twice). In stored mode each item carries its variation's
/// key; otherwise (`original` only) it gets its `fg_mask` when the release has one.
fn release_items(
    root: &Path,
    chosen: &[Variation],
    images: Images,
    stored_mode: bool,
) -> (Vec<In9Item>, usize) {
    let masks = root.join(MASK_FOLDER).join("val");
    let mut items = Vec::new();
    let mut with_mask = 0usize;
    for ((class, stem), (id, per_variation)) in images {
        for ((v, key), paths) in chosen.iter().zip(per_variation) {
            let Some((first, rest)) = paths.split_first() else {
                continue;
            };
            if !rest.is_empty() {
                items.push(Err(duplicate_image(v, &id, &paths)));
                continue;
            }
            let mut item = Item::new(first.clone(), id.clone(), Some(Truth(class)));
            if !stored_mode {
                let class_dir = id.split_once('/').map_or("", |(c, _)| c);
                let mask = masks.join(class_dir).join(format!("{stem}.npy"));
                if mask.is_file() {
                    item.mask = Some(mask);
                    with_mask += 1;
                }
            }
            items.push(Ok((item, stored_mode.then_some(*key))));
        }
    }
    (items, with_mask)
}

/// The error item of image `id` found `paths.len()` times (≥ 2) in variation `v`, at the first.
fn duplicate_image(v: &str, id: &str, paths: &[PathBuf]) -> SourceError {
    SourceError::at(
        SourceErrorKind::Layout,
        &paths[0],
        format!(
            "{} images of variation `{v}` are image `{id}` ({}); keep one per image",
            paths.len(),
            paths
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// The error of a release whose chosen variations hold no image at all.
fn no_images(root: &Path, chosen: &[Variation]) -> SourceError {
    SourceError::at(
        SourceErrorKind::Layout,
        root,
        format!(
            "no images ({}) in <root>/<variation>/val/<NN_class>/ for the variations read ({}); \
             put the images in their class folders, or point --source at the root of an IN-9 \
             release",
            super::decode::extension_list(),
            chosen
                .iter()
                .map(|(v, _)| *v)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// `original, only_fg, …` for messages.
fn known_variations() -> String {
    VARIATIONS
        .iter()
        .map(|(v, _)| format!("`{v}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The class folders of a `val/` folder as (name, index, path), sorted by name; any other
/// sub-folder is an error.
fn class_folders(val: &Path) -> Result<Vec<(String, usize, PathBuf)>, SourceError> {
    let mut out = Vec::new();
    for (name, path) in list_files(val)? {
        if !path.is_dir() {
            continue;
        }
        let Some(index) = class_index(&name) else {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                &path,
                "is not an IN-9 class folder; class folders are named `NN_name` with NN = 00..08, \
                 the class index (`00_dog` … `08_fish`; \
                 docs/in9.md#classes-and-the-imagenet-mapping)",
            ));
        };
        out.push((name, index, path));
    }
    Ok(out)
}

/// The entries of a folder as (name, path), sorted by name, without names starting with `.`.
fn list_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, SourceError> {
    let cannot = |e: std::io::Error| {
        SourceError::at(
            SourceErrorKind::Open,
            dir,
            format!("cannot list folder ({e}); check that it exists and is readable"),
        )
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(cannot)? {
        let entry = entry.map_err(cannot)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            out.push((name, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests;
