//! The released ImageNet-C layout (docs/imagenet-c.md#how-imagenet-c-was-made):
//! `<root>/<corruption>/<severity>/<wnid>/<file>`, every file already a corrupted image (the
//! 224×224 JPEGs of the dataset), optionally with the clean ImageNet validation set beside it as an
//! ImageFolder of wnid folders (`[source] clean`).
//!
//! Each file becomes a frame that already *is* a variant ([`Frame::variant`]): the pipeline evaluates
//! it as stored under the key `corruption/<name>/<severity>` (clean files under `clean`), with no
//! scenario applied, so a run scores the stored JPEGs the way the leaderboard did (see
//! `pipeline::stored_view` for the geometry). Truth comes from the wnid folder: index = position of
//! the wnid in the sorted list of the 1000 ImageNet-1k wnids (`configs/imagenet_wnids.txt`, built in),
//! the standard 1k class order.
//!
//! Frame ids are `<corruption>/<severity>/<wnid>/<file>` and `clean/<wnid>/<file>`: unique and stable.
//! Frames come in plan order (`clean` first), then wnid, then file name.
//!
//! Problems with the layout itself (a folder that is not a corruption name, a severity folder other
//! than 1..5) are errors at open; an image in a folder that is not a known wnid, or outside any wnid
//! folder, is one skipped item naming its path (fatal under `--strict`). Only image files directly in
//! a wnid folder are read. Folders are listed when opened (to count the images) and again when their
//! turn comes, so memory stays small for the full 3.75 million-image dataset.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::folder::list_dir;
use super::wnids::{wnid_index, wnids};
use super::{Input, Item, RawSourceConfig, Source, SourceError, SourceErrorKind};
use crate::frame::{Frame, LabelSpace, Truth};
use crate::key::{CLEAN, CORRUPTIONS, SEVERITIES, ScenarioKey};

/// An `imagenet-c` source settled ([`RawSourceConfig::settle`]): its `clean` folder; every other
/// option is refused, since stored variants are scored as they are, truth from the wnid folders —
/// `classes`, a mask source (`[source.plate]`, `[source.segment]`), a given truth (`label`,
/// `labels`), another kind's table or `variations`.
pub(crate) fn settle(config: &RawSourceConfig) -> Result<Input, SourceError> {
    let root = &config.path;
    if config.classes.is_some() {
        return Err(SourceError::at(
            SourceErrorKind::Settings,
            root,
            "`classes` does not apply to an imagenet-c source (truth comes from the wnid \
             folders); remove `classes`",
        ));
    }
    // Options that would be silently ignored here (stored variants are read as they are).
    let ignored = [
        (config.plate.is_some(), "[source.plate]"),
        (config.segment.is_some(), "[source.segment]"),
        (config.label.is_some(), "`label`"),
        (config.labels.is_some(), "`labels`"),
        (config.video.is_some(), "[source.video]"),
        (config.camera.is_some(), "[source.camera]"),
        (config.synthetic.is_some(), "[source.synthetic]"),
        (config.variations.is_some(), "`variations`"),
    ];
    if let Some((_, name)) = ignored.iter().find(|(set, _)| *set) {
        return Err(SourceError::at(
            SourceErrorKind::Settings,
            root,
            format!(
                "{name} does not apply to an imagenet-c source (stored variants are scored as \
                 they are, truth from the wnid folders); remove it"
            ),
        ));
    }
    Ok(Input::ImagenetC {
        clean: config.clean.clone(),
    })
}

/// The frame id prefix of the images stored under `key`: `<corruption>/<severity>` for a
/// corruption, the key itself for `clean`.
fn id_prefix(key: &str) -> Cow<'_, str> {
    match ScenarioKey::parse(key) {
        ScenarioKey::Corruption { name, severity } => Cow::Owned(format!("{name}/{severity}")),
        _ => Cow::Borrowed(key),
    }
}

/// The stored variants found under an ImageNet-C root (and the clean folder, if given).
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
    clean: Option<PathBuf>,
    /// (scenario key, folder of wnid folders): `clean` first when given, then the corruptions in
    /// ImageNet-C index order, severities ascending.
    variants: Vec<(String, PathBuf)>,
}

impl Layout {
    /// Lists `root` (the ImageNet-C root) and `clean` (the clean validation folder, if any). Errors:
    /// the root is not a folder, the root or clean folder cannot be listed, a sub-folder of the root
    /// is not one of the 19 corruption names, a sub-folder of a corruption is not a severity 1..5,
    /// or no `<corruption>/<severity>` folder exists. Files directly in the root or a corruption
    /// folder are ignored.
    pub(crate) fn scan(root: &Path, clean: Option<&Path>) -> Result<Self, SourceError> {
        if !root.is_dir() {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                root,
                "is not a folder; an imagenet-c source is the root of the released layout \
                 <root>/<corruption>/<severity>/<wnid>/<file>; check `[source] path`",
            ));
        }
        let names: Vec<&str> = CORRUPTIONS.iter().map(|(n, _)| *n).collect();
        let mut found: Vec<Vec<(u8, PathBuf)>> = vec![Vec::new(); CORRUPTIONS.len()];
        for (name, dir) in list_dir(root)?.dirs {
            let Some(c) = names.iter().position(|n| *n == name) else {
                return Err(SourceError::at(
                    SourceErrorKind::Layout,
                    &dir,
                    format!(
                        "is not an ImageNet-C corruption folder; an imagenet-c source is the \
                         released layout <root>/<corruption>/<severity>/<wnid>/<file> with \
                         <corruption> one of {}; move other folders out of {}",
                        names.join(", "),
                        root.display()
                    ),
                ));
            };
            for (sev, sub) in list_dir(&dir)?.dirs {
                let Some(s) = sev
                    .parse::<u8>()
                    .ok()
                    .filter(|s| SEVERITIES.contains(s) && sev == s.to_string())
                else {
                    return Err(SourceError::at(
                        SourceErrorKind::Layout,
                        &sub,
                        "is not a severity folder; the folders of a corruption are named 1 to 5 \
                         (<root>/<corruption>/<severity>/<wnid>/<file>); move it out",
                    ));
                };
                found[c].push((s, sub));
            }
        }
        let mut variants = Vec::new();
        if let Some(clean) = clean {
            list_dir(clean)?;
            variants.push((CLEAN.to_string(), clean.to_path_buf()));
        }
        for (&name, mut sevs) in names.iter().zip(found) {
            sevs.sort();
            variants.extend(sevs.into_iter().map(|(severity, dir)| {
                let key = ScenarioKey::Corruption { name, severity };
                (key.to_string(), dir)
            }));
        }
        if variants.len() == usize::from(clean.is_some()) {
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                root,
                "holds no <corruption>/<severity> folders; an imagenet-c source is the released \
                 layout <root>/<corruption>/<severity>/<wnid>/<file> (e.g. fog/3/n01440764/…); \
                 check `[source] path`",
            ));
        }
        Ok(Self {
            root: root.to_path_buf(),
            clean: clean.map(Path::to_path_buf),
            variants,
        })
    }

    /// Every scenario key the layout holds (`clean` first when a clean folder is given): the plan of
    /// a run whose config lists no `scenarios`.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.variants.iter().map(|(k, _)| k.clone()).collect()
    }

    /// The source over the variants of `plan` (scenario keys, in plan order), truths in `labels`,
    /// which must be the 1000 ImageNet-1k classes. Plan keys the layout lacks are allowed (they stay
    /// unevaluated; the ImageNet-C metrics list them as incomplete) as long as they are
    /// `corruption/…` keys and at least one corruption of the plan is present; any other kind of
    /// scenario is an error, since stored images cannot be re-made.
    pub(crate) fn open(
        self,
        plan: &[&str],
        labels: &LabelSpace,
    ) -> Result<ImagenetCSource, SourceError> {
        if labels.len() != wnids().len() {
            return Err(SourceError::at(
                SourceErrorKind::Label,
                &self.root,
                format!(
                    "an imagenet-c source labels frames with ImageNet-1k class indices (sorted \
                     wnids) but the run's label space has {} classes; use a 1000-class ImageNet \
                     model without a class map",
                    labels.len()
                ),
            ));
        }
        if let Some(other) = plan.iter().find(|k| {
            !matches!(
                ScenarioKey::parse(k),
                ScenarioKey::Clean | ScenarioKey::Corruption { .. }
            )
        }) {
            return Err(SourceError::at(
                SourceErrorKind::Settings,
                &self.root,
                format!(
                    "scenario `{other}` cannot come from an imagenet-c source, whose images are \
                     stored corruptions; plan only `corruption/…` keys (or none: every variant the \
                     layout holds)"
                ),
            ));
        }
        let present = |k: &str| self.variants.iter().any(|(v, _)| v == k);
        if !plan.iter().any(|k| *k != CLEAN && present(k)) {
            let held: Vec<&str> = self
                .variants
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| *k != CLEAN)
                .take(6)
                .collect();
            return Err(SourceError::at(
                SourceErrorKind::Settings,
                &self.root,
                format!(
                    "holds none of the plan's corruptions (it holds {}{}); check `scenarios` or \
                     --scenarios, or list none to evaluate everything the layout holds",
                    held.join(", "),
                    if self.variants.len() > held.len() + 1 {
                        ", …"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let mut units = VecDeque::new();
        let mut len = 0;
        for key in plan {
            let Some((_, dir)) = self.variants.iter().find(|(v, _)| v == key) else {
                continue;
            };
            // Ids: `clean/<wnid>/<file>`, `<corruption>/<severity>/<wnid>/<file>`.
            let prefix = id_prefix(key);
            let listing = list_dir(dir)?;
            for (_, path) in listing.files {
                len += 1;
                units.push_back(Unit::Bad(SourceError::at(
                    SourceErrorKind::Layout,
                    &path,
                    format!(
                        "is not inside a <wnid> folder ({} holds one folder per ImageNet class); \
                         skipped — move it into its class folder or remove it",
                        dir.display()
                    ),
                )));
            }
            for (wnid, path) in listing.dirs {
                let listing = list_dir(&path)?;
                len += listing.files.len() + listing.undecodable.len();
                units.push_back(Unit::Folder {
                    key: (*key).to_string(),
                    id_prefix: format!("{prefix}/{wnid}"),
                    truth: wnid_index(&wnid).map(Truth),
                    wnid,
                    dir: path,
                });
            }
        }
        if len == 0 {
            let read: Vec<String> = self
                .variants
                .iter()
                .filter(|(k, _)| plan.contains(&k.as_str()))
                .map(|(k, _)| id_prefix(k).into_owned())
                .collect();
            return Err(SourceError::at(
                SourceErrorKind::Layout,
                &self.root,
                format!(
                    "no images ({}) in the folders the plan reads ({}{}); an imagenet-c source is the \
                     released layout <root>/<corruption>/<severity>/<wnid>/<file>: put the images \
                     in their wnid folders, or point `[source] path` at the layout's root",
                    super::decode::extension_list(),
                    read.iter().take(4).cloned().collect::<Vec<_>>().join(", "),
                    if read.len() > 4 { ", …" } else { "" }
                ),
            ));
        }
        let corruptions = self
            .variants
            .iter()
            .filter(|(k, _)| plan.contains(&k.as_str()) && k != CLEAN)
            .count();
        let description = format!(
            "imagenet-c {} ({corruptions} corruption variants{}, {len} images)",
            self.root.display(),
            match &self.clean {
                Some(c) => format!(" + clean {}", c.display()),
                None => String::new(),
            }
        );
        Ok(ImagenetCSource {
            units,
            pending: VecDeque::new(),
            len,
            next_seq: 0,
            description,
        })
    }
}

/// Opens the source over everything the layout at `root` (with `clean` beside it) holds (see
/// [`Layout::scan`] and [`Layout::open`]).
pub(crate) fn open(
    root: &Path,
    clean: Option<&Path>,
    labels: &LabelSpace,
) -> Result<ImagenetCSource, SourceError> {
    let layout = Layout::scan(root, clean)?;
    let mut keys = layout.keys();
    if !keys.iter().any(|k| k == CLEAN) {
        keys.insert(0, CLEAN.to_string());
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    layout.open(&keys, labels)
}

/// A part of the source not yet listed.
enum Unit {
    /// The images of one wnid folder.
    Folder {
        /// The scenario key its images are.
        key: String,
        /// `<corruption>/<severity>/<wnid>` or `clean/<wnid>`.
        id_prefix: String,
        /// The folder name.
        wnid: String,
        /// The class index; `None` when the folder is not an ImageNet-1k wnid.
        truth: Option<Truth>,
        /// The folder.
        dir: PathBuf,
    },
    /// One item already known to be bad.
    Bad(SourceError),
}

/// Frames of an ImageNet-C layout (see the module docs).
pub(crate) struct ImagenetCSource {
    units: VecDeque<Unit>,
    /// Items of the folder being read, with their scenario key.
    pending: VecDeque<(String, Result<Item, SourceError>)>,
    len: usize,
    next_seq: u64,
    description: String,
}

impl ImagenetCSource {
    /// Lists the next unit into `pending`.
    fn expand(&mut self, unit: Unit) -> Option<Result<Frame, SourceError>> {
        let (key, id_prefix, wnid, truth, dir) = match unit {
            Unit::Bad(e) => return Some(Err(e)),
            Unit::Folder {
                key,
                id_prefix,
                wnid,
                truth,
                dir,
            } => (key, id_prefix, wnid, truth, dir),
        };
        let (mut files, undecodable) = match list_dir(&dir) {
            Ok(l) => (l.files, l.undecodable),
            Err(e) => return Some(Err(e)),
        };
        files.extend(undecodable);
        files.sort();
        for (name, path) in files {
            // A format this build cannot decode (`.heic`, `.avif`, …): named as skipped.
            if let Some(ext) = super::decode::undecodable_extension(&path) {
                let why = super::decode::undecodable_message(ext);
                self.pending.push_back((
                    key.clone(),
                    Err(SourceError::at(SourceErrorKind::Layout, &path, why)),
                ));
                continue;
            }
            let item = match truth {
                Some(t) => Ok(Item::new(path, format!("{id_prefix}/{name}"), Some(t))),
                None => Err(SourceError::at(
                    SourceErrorKind::Label,
                    &path,
                    format!(
                        "its folder `{wnid}` is not an ImageNet-1k wnid (the 1000 of \
                         configs/imagenet_wnids.txt); skipped — rename the folder to the image's \
                         wnid or remove it"
                    ),
                )),
            };
            self.pending.push_back((key.clone(), item));
        }
        None
    }
}

impl Source for ImagenetCSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        loop {
            if let Some((key, item)) = self.pending.pop_front() {
                let frame = item.and_then(|item| super::load_item(item, self.next_seq));
                return Some(frame.map(|mut f| {
                    // Only frames that come out take a sequence number, so `seq` has no gaps.
                    self.next_seq += 1;
                    f.variant = Some(key);
                    f
                }));
            }
            let unit = self.units.pop_front()?;
            if let Some(bad) = self.expand(unit) {
                return Some(bad);
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.len)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    /// Lists folders as their turn comes, as [`Source::next_frame`] does; an item known to be bad
    /// (or a folder that cannot be listed) stops the passing over, to be read.
    fn pass_over(&mut self, wanted: &super::ItemFilter, max: u64) -> u64 {
        let mut passed = 0;
        while passed < max {
            match self.pending.front() {
                Some((_, Ok(item))) if !wanted(&item.id) => {
                    self.pending.pop_front();
                    passed += 1;
                }
                Some(_) => break,
                None => {
                    let Some(unit) = self.units.pop_front() else {
                        break;
                    };
                    if let Some(Err(bad)) = self.expand(unit) {
                        // Read next, in its place.
                        self.pending.push_front((String::new(), Err(bad)));
                    }
                }
            }
        }
        passed
    }
}

#[cfg(test)]
mod tests;
