//! Sources: where frames come from. A [`Source`] yields decoded RGB [`Frame`]s one at a time, in a
//! deterministic order, with ground truth and foreground masks when the input provides them.
//!
//! The kinds (see [`SourceKind`]):
//! - **folder** ([`folder`]): an ImageFolder tree `root/<class>/<image>`;
//! - **manifest** ([`manifest`]): a CSV file with `path,label[,mask]` columns;
//! - **image** ([`single`]): one image file;
//! - **in9** ([`in9`]): the IN-9 (Backgrounds Challenge) release layout, with `fg_mask` masks;
//! - **synthetic** ([`synthetic`]): a procedural moving scene with exact masks (a camera stand-in),
//!   `--source synthetic:640x480@30/300` or `kind = "synthetic"` with `[source.synthetic]`;
//! - **video** ([`video`]): a video file or a network stream (`rtsp://`, `http(s)://`, …) decoded
//!   with FFmpeg (feature `video`), `[source.video]` for loop, start/stop, real-time pacing;
//! - **camera** ([`camera`]): a V4L2 camera (feature `camera`), `--source /dev/video0` or
//!   `camera:0`, `[source.camera]` for format negotiation and reconnect back-off.
//!
//! Masks and boxes: manifests name them per row (`mask`, `boxes`, `annotation` columns), folders
//! pick up `<stem>.mask.png|npy` and `<stem>.xml` next to each image; [`regions`] parses boxes and
//! derives them from masks. On streams the masks can be made instead: from a learned background
//! plate ([`plate`], `[source.plate]`) or by a segmentation model ([`segment`], `[source.segment]`).
//!
//! Problems with one item (a corrupt image, an unknown label, a wrong-size mask) come out of
//! [`Source::next_frame`] as `Some(Err(_))` and iteration goes on; problems that make the whole source
//! unusable come out of [`open`].

pub mod camera;
pub mod decode;
pub mod folder;
pub mod imagenet_c;
pub mod in9;
pub mod labels;
pub mod manifest;
pub mod mask;
pub mod memory;
pub mod pixfmt;
pub mod plate;
pub mod regions;
pub mod segment;
pub mod single;
pub mod synthetic;
pub mod video;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::frame::{Frame, LabelSpace, Regions, Truth};

/// Where frames come from (the `[source]` table of a run config; also built from `--source PATH`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// A folder, a manifest `.csv`, or a single image file.
    pub path: PathBuf,
    /// What `path` is; detected when absent: a directory is a folder, a `*.csv` file a manifest,
    /// anything else a single image (see [`SourceKind::detect`]).
    #[serde(default)]
    pub kind: Option<SourceKind>,
    /// How class sub-folder names map to label indices; folder sources only. Default
    /// [`ClassOrder::Labels`].
    #[serde(default)]
    pub classes: Option<ClassOrder>,
    /// `imagenet-c` sources only: the clean ImageNet validation images as an ImageFolder of wnid
    /// folders, evaluated under `clean` for the clean error of relative mCE.
    #[serde(default)]
    pub clean: Option<PathBuf>,
    /// `in9` sources only: the IN-9 variations to read (`original`, `mixed_same`, …; see
    /// [`in9::VARIATIONS`]); absent = every variation present under the root.
    #[serde(default)]
    pub variations: Option<Vec<String>>,
    /// `synthetic` sources only: the scene, size, pace and length (`[source.synthetic]`; defaults
    /// when absent, see [`synthetic::SyntheticConfig`]).
    #[serde(default)]
    pub synthetic: Option<synthetic::SyntheticConfig>,
    /// `video` sources only: loop, start/stop, real-time pacing, frame step (`[source.video]`; see
    /// [`video::VideoConfig`]).
    #[serde(default)]
    pub video: Option<video::VideoConfig>,
    /// `camera` sources only: size, rate, pixel format preference, buffers, reconnect back-off
    /// (`[source.camera]`; see [`camera::CameraConfig`]).
    #[serde(default)]
    pub camera: Option<camera::CameraConfig>,
    /// Masks from a learned background plate (`[source.plate]`, for a fixed camera; see
    /// [`plate`]): replaces the source's own masks.
    #[serde(default)]
    pub plate: Option<plate::PlateConfig>,
    /// Masks from a segmentation ONNX model (`[source.segment]`, run every k frames; see
    /// [`segment`]): replaces the source's own masks. Not together with `plate`.
    #[serde(default)]
    pub segment: Option<segment::SegmentConfig>,
    /// One truth for every frame (a class name, alias or index; see [`labels`]): a line camera
    /// that sees one part type. Replaces the frames' own truth.
    #[serde(default)]
    pub label: Option<String>,
    /// A sidecar labels file keyed by frame or time ([`labels`]). Replaces the frames' own truth.
    #[serde(default)]
    pub labels: Option<PathBuf>,
}

impl SourceConfig {
    /// A config for `path` with the kind detected and default class order (what `--source PATH`
    /// means).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            kind: None,
            classes: None,
            clean: None,
            variations: None,
            synthetic: None,
            video: None,
            camera: None,
            plate: None,
            segment: None,
            label: None,
            labels: None,
        }
    }

    /// What this source is, settled: the spelling first (a synthetic camera, a camera device, a
    /// video file or stream; `kind` decides for each when given), then the configured `kind`, else
    /// the path: a folder laid out as the IN-9 release is [`SourceKind::In9`]
    /// ([`in9::looks_like_release`]), any other path is taken by [`SourceKind::detect`]. A path
    /// that cannot be read is taken for a file here; opening it says what is wrong.
    pub fn settled_kind(&self) -> SourceKind {
        let spec = self.path.to_str().unwrap_or_default();
        let synthetic = match self.kind {
            Some(kind) => kind == SourceKind::Synthetic,
            // A `[source.synthetic]` table needs `kind = "synthetic"` (refused at open otherwise).
            None => {
                self.synthetic.is_none() && synthetic::SyntheticConfig::parse_spec(spec).is_some()
            }
        };
        if synthetic {
            SourceKind::Synthetic
        } else if camera::device_path(self).is_some() {
            SourceKind::Camera
        } else if video::is_video_source(self) {
            SourceKind::Video
        } else if let Some(kind) = self.kind {
            kind
        } else {
            let is_dir = self.path.is_dir();
            match is_dir && in9::looks_like_release(&self.path) {
                true => SourceKind::In9,
                false => SourceKind::detect(&self.path, is_dir),
            }
        }
    }
}

/// What a source path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// An ImageFolder tree: `root/<class>/<image>` (images directly in `root` have no truth).
    Folder,
    /// A CSV manifest with a header and columns `path`, `label` and optionally `mask`.
    Manifest,
    /// One image file.
    Image,
    /// The released ImageNet-C layout `root/<corruption>/<severity>/<wnid>/<image>`: every image is
    /// already a stored variant (see [`imagenet_c`]). Never detected; `kind = "imagenet-c"`.
    #[serde(rename = "imagenet-c")]
    ImagenetC,
    /// The IN-9 (Backgrounds Challenge) release layout `root/<variation>/val/<NN_class>/<image>` with
    /// `root/fg_mask/val/…` masks (see [`in9`]). Detected for a folder with `<variation>/val` or
    /// `fg_mask/val` sub-folders; `kind = "in9"`.
    In9,
    /// The synthetic camera ([`synthetic`]): `path` is not read (write `path = "synthetic"`); the
    /// scene comes from `[source.synthetic]`. Detected for a path spelled `synthetic[:WxH@FPS/N]`.
    Synthetic,
    /// A video file or network stream decoded with FFmpeg ([`video`]). Detected, before the path is
    /// looked at, for a URL (`scheme://…`) or a video file extension ([`video::VIDEO_EXTENSIONS`]);
    /// `kind = "video"`.
    Video,
    /// A V4L2 camera ([`camera`]): `path` is the device. Detected, before the path is looked at,
    /// for `/dev/video*`, `/dev/v4l/…` and `camera[:N]`; `kind = "camera"` takes any device path.
    Camera,
}

impl SourceKind {
    /// The kind a path is taken for when none is given: a directory → [`SourceKind::Folder`], a file
    /// whose extension is `csv` (any case) → [`SourceKind::Manifest`], else [`SourceKind::Image`].
    /// `is_dir` says whether `path` is a directory (passed in so this stays a pure function).
    pub fn detect(path: &Path, is_dir: bool) -> SourceKind {
        if is_dir {
            SourceKind::Folder
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            SourceKind::Manifest
        } else {
            SourceKind::Image
        }
    }

    /// The lowercase name used in configs and reports (`folder`, `manifest`, `image`).
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Folder => "folder",
            SourceKind::Manifest => "manifest",
            SourceKind::Image => "image",
            SourceKind::ImagenetC => "imagenet-c",
            SourceKind::In9 => "in9",
            SourceKind::Synthetic => "synthetic",
            SourceKind::Video => "video",
            SourceKind::Camera => "camera",
        }
    }
}

/// How a folder source maps class sub-folder names to label indices.
/// In TOML: `classes = "labels"` (default), `classes = "sorted"`, or `classes = "path/to/list.txt"`
/// (write `"./labels"` for a list file literally named `labels`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(from = "String")]
pub enum ClassOrder {
    /// Resolve each sub-folder name in the run's label space (a class name, alias, or index).
    #[default]
    Labels,
    /// Index = position of the sub-folder in the sorted list of sub-folder names (torchvision
    /// `ImageFolder` order).
    Sorted,
    /// Index = 0-based line number of the sub-folder name in this list file (one name per line).
    List(PathBuf),
}

impl From<String> for ClassOrder {
    fn from(s: String) -> Self {
        match s.as_str() {
            "labels" => ClassOrder::Labels,
            "sorted" => ClassOrder::Sorted,
            _ => ClassOrder::List(PathBuf::from(s)),
        }
    }
}

impl std::str::FromStr for ClassOrder {
    type Err = std::convert::Infallible;

    /// Same rules as the TOML form: `labels`, `sorted`, or a list file path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ClassOrder::from(s.to_string()))
    }
}

/// A stream of frames.
pub trait Source: Send {
    /// The next frame; `Some(Err(_))` for one unreadable item (the caller counts it as skipped and
    /// goes on, or stops under --strict); `None` at the end.
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>>;
    /// Number of items if known in advance (for the progress bar). Counts every item, including ones
    /// that will turn out unreadable.
    fn len_hint(&self) -> Option<usize>;
    /// One line for reports: kind and path.
    fn describe(&self) -> String;
    /// Whether frames arrive on their own clock (a camera, a file paced in real time): the pipeline
    /// then never makes the source wait and drops frames by `[pipeline] drop` instead. Default
    /// false (files and folders wait for the pipeline).
    fn is_live(&self) -> bool {
        false
    }
    /// Hands the source the run's stop flag before the first [`Source::next_frame`]: a source that
    /// can block (a camera waiting to reconnect, a network stream, real-time pacing) watches it and
    /// returns `None` soon after it is raised. The flag is raised on Ctrl-C, at `--duration`, after a
    /// fatal error, and when the pipeline ends. Default: ignored (sources that never block long).
    fn set_stop(&mut self, _stop: Arc<AtomicBool>) {}
    /// The stream's nominal frame rate, frames per second (the synthetic camera's fps, a video's
    /// frame rate, a camera's negotiated rate); `None` for sources without one. A compute budget
    /// (`[pipeline] budget`) is shared over it.
    fn fps(&self) -> Option<f64> {
        None
    }
    /// Frames the source knows it lost before they reached robustream, cumulative (a camera
    /// driver's sequence gaps): counted live as `frames.lost` (by reason, next to the pipeline's own
    /// `frames.dropped`). Default 0.
    fn lost(&self) -> u64 {
        0
    }
    /// What the source has to say about itself at the end of the run (reconnects, outages, loops,
    /// timestamps…), written to `summary.json` as `run.source_report`; `None` when nothing.
    fn report(&self) -> Option<serde_json::Value> {
        None
    }
    /// Asked once when [`Source::next_frame`] returned `None` on its own (not after a stop or the
    /// limit): why this end is an error rather than the end of the input, when the source knows (a
    /// video that decoded no frame at all). The run then fails with this line. Default `None`;
    /// a source that gave no item at all fails the run in any case (`pipeline`).
    fn end_error(&self) -> Option<SourceError> {
        None
    }
}

/// The [`Source`] methods a wrapping source passes on unchanged to its `inner` source (`len_hint`,
/// `is_live`, `set_stop`, `fps`, `lost`, `end_error`, `report`), written inside its `impl Source` block so a
/// method added to the trait is forwarded by every wrapper (the plate, stream labels, the
/// challenge's frame keeper) in one place. `forward_to_inner!(except_report)` forwards all but
/// `report`, for a wrapper that adds its own (the segmentation mask source).
macro_rules! forward_to_inner {
    () => {
        crate::source::forward_to_inner!(except_report);

        fn report(&self) -> Option<serde_json::Value> {
            self.inner.report()
        }
    };
    (except_report) => {
        fn len_hint(&self) -> Option<usize> {
            self.inner.len_hint()
        }

        fn is_live(&self) -> bool {
            self.inner.is_live()
        }

        fn set_stop(&mut self, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
            self.inner.set_stop(stop);
        }

        fn fps(&self) -> Option<f64> {
            self.inner.fps()
        }

        fn lost(&self) -> u64 {
            self.inner.lost()
        }

        fn end_error(&self) -> Option<crate::source::SourceError> {
            self.inner.end_error()
        }
    };
}
pub(crate) use forward_to_inner;

/// One problem with one input item or with the source as a whole. Display = one line:
/// `<item>: <what is wrong>; <what to do>`.
#[derive(Debug, thiserror::Error)]
#[error("{item}: {message}")]
pub struct SourceError {
    /// The file, folder, or manifest line the problem is about.
    pub item: String,
    /// What is wrong and what to do about it.
    pub message: String,
    /// The typed error `message` tells of, where there is one (its kind, for callers to match on).
    #[source]
    pub cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl SourceError {
    /// An error about `item` (a path is shown with [`Path::display`]). A message that spans lines
    /// (a library's error text with a newline in it) is folded to one ([`decode::fold`]); `item` is
    /// user text (a path, a manifest line, a URL): control characters escaped, so the line stays one
    /// line, and bounded like a path ([`crate::quote::clip_path`]).
    pub fn new(item: impl Into<String>, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.contains(char::is_control) {
            message = decode::fold(&message);
        }
        let mut item: String = item.into();
        if item.contains(char::is_control) {
            // A file name with a newline in it: shown escaped.
            item = item
                .chars()
                .map(|c| match c.is_control() {
                    true => c.escape_default().to_string(),
                    false => c.to_string(),
                })
                .collect();
        }
        let item = crate::quote::clip_to(&item, crate::quote::PATH_MAX).into_owned();
        let cause = None;
        Self {
            item,
            message,
            cause,
        }
    }

    /// This error with `cause`, the typed error its message tells of, as its `source()`.
    pub fn caused_by(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// An error about the file or folder at `path`.
    pub fn at(path: &Path, message: impl Into<String>) -> Self {
        Self::new(path.display().to_string(), message)
    }
}

/// Opens the source, its kind settled here ([`SourceConfig::settled_kind`]). `labels` is the run's
/// dataset label space (class names, see [`LabelSpace::resolve`]) used to resolve labels written as
/// names or indices. Errors that make the whole source unusable (missing path, unreadable manifest
/// header, a folder class name not in the label space) are returned here.
pub fn open(config: &SourceConfig, labels: &LabelSpace) -> Result<Box<dyn Source>, SourceError> {
    open_as(config, config.settled_kind(), labels)
}

/// [`open`] for a source whose kind is already settled ([`SourceConfig::settled_kind`], or a kind
/// the caller knows, such as a run's IN-9 release).
pub fn open_as(
    config: &SourceConfig,
    kind: SourceKind,
    labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    let stream_labels = stream_labels(config, labels)?;
    if config.plate.is_some() && config.segment.is_some() {
        return Err(SourceError::new(
            "[source]",
            "`[source.plate]` and `[source.segment]` both make the frames' masks; keep one",
        ));
    }
    if let Some(s) = &config.segment {
        s.check()
            .map_err(|e| SourceError::at(&config.path, e.to_string()).caused_by(e))?;
    }
    let mut source = open_kind(config, kind, labels)?;
    if let Some(s) = &config.segment {
        source = Box::new(segment::SegmentSource::new(source, s)?);
    }
    if let Some(p) = &config.plate {
        p.check()
            .map_err(|e| SourceError::at(&config.path, e.to_string()).caused_by(e))?;
        source = Box::new(plate::PlateSource::new(source, p.clone()));
    }
    Ok(match stream_labels {
        Some(l) => Box::new(labels::LabelledSource::new(source, l)),
        None => source,
    })
}

/// After `--source` replaced the configured path: drops the kind-specific tables
/// (`[source.synthetic]`, `[source.camera]`, `[source.video]`) that do not apply to the new source's
/// kind, so that a camera config run on a clip (`--source clip.mp4`) keeps its `[source.plate]` /
/// `[source.segment]` mask source and is not refused for its `[source.camera]` table.
pub fn drop_foreign_tables(config: &mut SourceConfig) {
    // A `synthetic:…` spec describes its camera itself; the table applies with `--source-kind
    // synthetic` only (as in a config, see `SourceConfig::settled_kind`).
    if config.kind != Some(SourceKind::Synthetic) {
        config.synthetic = None;
    }
    if camera::device_path(config).is_none() {
        config.camera = None;
    }
    if !video::is_video_source(config) {
        config.video = None;
    }
}

/// The `[source] label` / `labels` settings, checked and resolved ([`labels`]).
fn stream_labels(
    config: &SourceConfig,
    space: &LabelSpace,
) -> Result<Option<labels::StreamLabels>, SourceError> {
    let synthetic_label = config.synthetic.as_ref().and_then(|s| s.label.as_ref());
    if synthetic_label.is_some() && (config.label.is_some() || config.labels.is_some()) {
        return Err(SourceError::at(
            &config.path,
            "`[source.synthetic] label` and `[source] label`/`labels` both give the truth; keep one",
        ));
    }
    match (&config.label, &config.labels) {
        (Some(_), Some(_)) => Err(SourceError::at(
            &config.path,
            "`label` (one class for every frame) and `labels` (a sidecar file) both give the \
             truth; keep one",
        )),
        (Some(l), None) => {
            let truth = space.resolve(l).ok_or_else(|| {
                SourceError::at(
                    &config.path,
                    format!(
                        "label `{}` is not a class of the model; give a class name or index \
                         (`robustream labels` lists them)",
                        crate::quote::clip(l)
                    ),
                )
            })?;
            Ok(Some(labels::StreamLabels::Fixed(Truth(truth))))
        }
        (None, Some(file)) => Ok(Some(labels::StreamLabels::Sidecar(labels::Sidecar::load(
            file, space,
        )?))),
        (None, None) => Ok(None),
    }
}

/// The stream kinds' own tables, in the order a source's spelling is tried
/// ([`SourceConfig::settled_kind`]), each with the error for a source of another kind that carries
/// it. A source is asked only about the tables of the kinds tried before its own: a file-system
/// source about all three, a camera about `[source.synthetic]` alone, a synthetic source about
/// none.
const STREAM_TABLES: [(SourceKind, &str); 3] = [
    (
        SourceKind::Synthetic,
        "`[source.synthetic]` applies to synthetic sources only; remove it or set \
         `kind = \"synthetic\"`",
    ),
    (
        SourceKind::Camera,
        "`[source.camera]` applies to camera sources only; remove it or set `kind = \"camera\"`",
    ),
    (
        SourceKind::Video,
        "`[source.video]` applies to video sources only; remove it or set `kind = \"video\"`",
    ),
];

/// [`open`] without the mask and label wrappers, for a source of the settled `kind`.
fn open_kind(
    config: &SourceConfig,
    kind: SourceKind,
    labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    for (table_kind, message) in STREAM_TABLES {
        if kind == table_kind {
            break;
        }
        let present = match table_kind {
            SourceKind::Synthetic => config.synthetic.is_some(),
            SourceKind::Camera => config.camera.is_some(),
            _ => config.video.is_some(),
        };
        if present {
            return Err(SourceError::at(&config.path, message));
        }
    }
    match kind {
        SourceKind::Synthetic => Ok(Box::new(synthetic::open(
            &synthetic_config(config)?,
            labels,
        )?)),
        SourceKind::Camera => {
            let device = camera::device_path(config).unwrap_or_else(|| config.path.clone());
            camera::open(&device, config.camera.as_ref(), labels)
        }
        SourceKind::Video => video::open(config),
        _ => open_path(config, kind, labels),
    }
}

/// A source read from the file system (folder, manifest, image, ImageNet-C or IN-9 layout): the
/// path is looked at and must fit `kind`, and the options of other kinds are refused.
fn open_path(
    config: &SourceConfig,
    kind: SourceKind,
    labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    let path = &config.path;
    let meta = std::fs::metadata(path).map_err(|e| {
        SourceError::at(
            path,
            format!("cannot open source ({e}); check `[source] path` or --source"),
        )
    })?;
    if let Some(what) = decode::non_file_kind(&meta).filter(|_| !meta.is_dir()) {
        // Read as an image, `/dev/zero` would never end; a FIFO could block the run.
        return Err(SourceError::at(
            path,
            format!(
                "is {what}, not an image file, a manifest or a folder; give one of those (a \
                 camera: `--source /dev/videoN` or `kind = \"camera\"`)"
            ),
        ));
    }
    check_path_options(config, kind, meta.is_dir())?;
    let source: ItemSource = match kind {
        SourceKind::ImagenetC => return Ok(Box::new(imagenet_c::open(config, labels)?)),
        SourceKind::In9 => {
            let variations = config.variations.as_deref();
            return Ok(Box::new(in9::open(path, variations, labels)?));
        }
        SourceKind::Folder => {
            let order = config.classes.clone().unwrap_or_default();
            folder::open(path, &order, labels)?
        }
        SourceKind::Manifest => manifest::open(path, labels)?,
        // `Image`; the stream kinds never get here (`open_kind`).
        _ => single::open(path),
    };
    Ok(Box::new(source))
}

/// The checks of a file-system source's path and options against its `kind`: a folder where a
/// folder is needed, a file where a file is, and `variations`, `classes` and `clean` only on the
/// kinds that read them.
fn check_path_options(
    config: &SourceConfig,
    kind: SourceKind,
    is_dir: bool,
) -> Result<(), SourceError> {
    let path = &config.path;
    if kind == SourceKind::In9 && !is_dir {
        return Err(SourceError::at(
            path,
            "is not a folder but the source kind is `in9`; give the root of the IN-9 release",
        ));
    }
    if kind != SourceKind::In9 && config.variations.is_some() {
        return Err(SourceError::at(
            path,
            format!(
                "`variations` applies to in9 sources only but this is a {} source; remove \
                 `variations`",
                kind.name()
            ),
        ));
    }
    match (kind, is_dir) {
        (SourceKind::Folder, false) => {
            return Err(SourceError::at(
                path,
                "is not a folder but the source kind is `folder`; give a folder or remove `kind`",
            ));
        }
        (SourceKind::Manifest | SourceKind::Image, true) => {
            return Err(SourceError::at(
                path,
                format!(
                    "is a folder but the source kind is `{}`; give a file or use `kind = \"folder\"`",
                    kind.name()
                ),
            ));
        }
        _ => {}
    }
    if kind != SourceKind::Folder && config.classes.is_some() {
        return Err(SourceError::at(
            path,
            format!(
                "`classes` applies to folder sources only but this is a {} source; remove `classes`",
                kind.name()
            ),
        ));
    }
    if kind != SourceKind::ImagenetC && config.clean.is_some() {
        return Err(SourceError::at(
            path,
            format!(
                "`clean` applies to imagenet-c sources only but this is a {} source; remove `clean`",
                kind.name()
            ),
        ));
    }
    Ok(())
}

/// The synthetic camera's settings of a synthetic source: `[source.synthetic]` (checked), else a
/// `synthetic:…` path, else defaults.
fn synthetic_config(config: &SourceConfig) -> Result<synthetic::SyntheticConfig, SourceError> {
    let spec = config.path.to_str().unwrap_or_default();
    let err = |e: synthetic::SyntheticError| SourceError::new(spec, e.to_string()).caused_by(e);
    match &config.synthetic {
        Some(c) => {
            c.check().map_err(|e| {
                SourceError::new(spec, format!("[source.synthetic]: {e}")).caused_by(e)
            })?;
            Ok(c.clone())
        }
        None => Ok(synthetic::SyntheticConfig::parse_spec(spec)
            .transpose()
            .map_err(err)?
            .unwrap_or_default()),
    }
}

/// One input item, found when the source was opened and read when its turn comes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// The image file to read.
    pub path: PathBuf,
    /// The frame id (path relative to the source root, '/'-separated).
    pub id: String,
    /// Ground truth in the dataset label space.
    pub truth: Option<Truth>,
    /// Foreground mask file, if any.
    pub mask: Option<PathBuf>,
    /// Where the object boxes come from, if anywhere ([`regions::BoxSpec`]).
    pub boxes: Option<regions::BoxSpec>,
}

impl Item {
    /// An item with no mask and no boxes.
    pub(crate) fn new(path: PathBuf, id: String, truth: Option<Truth>) -> Self {
        Self {
            path,
            id,
            truth,
            mask: None,
            boxes: None,
        }
    }
}

/// A source over a list of items known at open time (all three kinds are this, built differently).
/// Items that were already known to be bad at open (e.g. a malformed manifest row) are stored as
/// errors and yielded in their place.
pub(crate) struct ItemSource {
    items: std::vec::IntoIter<Result<Item, SourceError>>,
    len: usize,
    next_seq: u64,
    description: String,
}

impl ItemSource {
    /// A source yielding `items` in order; `description` is what [`Source::describe`] returns.
    pub(crate) fn new(items: Vec<Result<Item, SourceError>>, description: String) -> Self {
        Self {
            len: items.len(),
            items: items.into_iter(),
            next_seq: 0,
            description,
        }
    }
}

impl Source for ItemSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let item = match self.items.next()? {
            Ok(item) => item,
            Err(e) => return Some(Err(e)),
        };
        let frame = load_item(item, self.next_seq);
        if frame.is_ok() {
            // Only frames that come out take a sequence number, so `seq` has no gaps.
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
}

/// Reads and decodes one item (image and mask) into a frame with sequence number `seq`.
/// `captured` is taken before reading; `decode_ms` covers reading and decoding the image and mask.
pub(crate) fn load_item(item: Item, seq: u64) -> Result<Frame, SourceError> {
    let captured = Instant::now();
    let image = decode::read_rgb(&item.path)?;
    let mask = match &item.mask {
        Some(mask_path) => Some(mask::load(mask_path, &item.path, image.dimensions())?),
        None => None,
    };
    let boxes = match &item.boxes {
        Some(spec) => regions::resolve_boxes(spec, &item.path, image.dimensions())?,
        None => Vec::new(),
    };
    let regions = (mask.is_some() || item.boxes.is_some()).then_some(Regions { mask, boxes });
    let decode_ms = captured.elapsed().as_secs_f64() * 1000.0;
    Ok(Frame {
        truth: item.truth,
        regions,
        captured,
        decode_ms,
        ..Frame::new(item.id, seq, image)
    })
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Fixture writers shared by the source tests.

    use std::path::Path;

    use image::{GrayImage, Luma, Rgb, RgbImage};

    use crate::frame::LabelSpace;

    /// Intersection over union of two masks' foregrounds (non-zero pixels); 0 when both are empty.
    pub fn mask_iou(a: &GrayImage, b: &GrayImage) -> f64 {
        let (mut i, mut u) = (0u64, 0u64);
        for (x, y) in a.iter().zip(b.iter()) {
            let (x, y) = (*x != 0, *y != 0);
            i += u64::from(x && y);
            u += u64::from(x || y);
        }
        i as f64 / u.max(1) as f64
    }

    /// Three classes, one with an alias: tench (0), tabby / tabby cat (1), espresso (2).
    pub fn labels() -> LabelSpace {
        LabelSpace::new(vec![
            "tench".into(),
            "tabby, tabby cat".into(),
            "espresso".into(),
        ])
    }

    /// Writes a `w`×`h` RGB image filled with `color`; the format follows the extension.
    pub fn write_rgb(path: &Path, w: u32, h: u32, color: [u8; 3]) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        RgbImage::from_pixel(w, h, Rgb(color)).save(path).unwrap();
    }

    /// Writes a `w`×`h` gray PNG filled with `value`.
    pub fn write_gray(path: &Path, w: u32, h: u32, value: u8) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        GrayImage::from_pixel(w, h, Luma([value]))
            .save(path)
            .unwrap();
    }

    /// Writes an `.npy` file by hand: `descr` like `"|u1"` or `"<f4"`, `shape` like `"(2, 3)"`,
    /// `data` the raw element bytes.
    pub fn write_npy(path: &Path, descr: &str, fortran: bool, shape: &str, data: &[u8]) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        let order = if fortran { "True" } else { "False" };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
        // magic(6) + version(2) + header length(2) + header + '\n' must be a multiple of 64.
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        std::fs::write(path, bytes).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    fn labels() -> LabelSpace {
        LabelSpace::new(vec!["cat".into(), "dog".into()])
    }

    #[test]
    fn detects_kind_from_path() {
        assert_eq!(SourceKind::detect(Path::new("x"), true), SourceKind::Folder);
        assert_eq!(
            SourceKind::detect(Path::new("a/m.CSV"), false),
            SourceKind::Manifest
        );
        assert_eq!(
            SourceKind::detect(Path::new("a/m.png"), false),
            SourceKind::Image
        );
        assert_eq!(
            SourceKind::detect(Path::new("noext"), false),
            SourceKind::Image
        );
    }

    #[test]
    fn class_order_from_string() {
        assert_eq!(ClassOrder::from("labels".to_string()), ClassOrder::Labels);
        assert_eq!(ClassOrder::from("sorted".to_string()), ClassOrder::Sorted);
        assert_eq!(
            "lists/classes.txt".parse::<ClassOrder>().unwrap(),
            ClassOrder::List(PathBuf::from("lists/classes.txt"))
        );
    }

    #[test]
    fn config_deserializes_from_toml() {
        let c: SourceConfig =
            toml::from_str("path = \"data/val\"\nkind = \"folder\"\nclasses = \"sorted\"").unwrap();
        assert_eq!(c.path, PathBuf::from("data/val"));
        assert_eq!(c.kind, Some(SourceKind::Folder));
        assert_eq!(c.classes, Some(ClassOrder::Sorted));

        let c: SourceConfig = toml::from_str("path = \"m.csv\"").unwrap();
        assert_eq!(c, SourceConfig::new("m.csv"));

        let c: SourceConfig = toml::from_str("path = \"d\"\nclasses = \"my/list.txt\"").unwrap();
        assert_eq!(c.classes, Some(ClassOrder::List("my/list.txt".into())));

        assert!(toml::from_str::<SourceConfig>("path = \"d\"\nkindd = \"folder\"").is_err());
        assert!(toml::from_str::<SourceConfig>("path = \"d\"\nkind = \"movie\"").is_err());
        assert!(toml::from_str::<SourceConfig>("path = \"d\"\nclasses = 3").is_err());
    }

    #[test]
    fn missing_path_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(&SourceConfig::new(dir.path().join("nope")), &labels())
            .err()
            .unwrap();
        assert!(err.item.ends_with("nope"));
        assert!(err.message.contains("cannot open source"), "{err}");
    }

    #[test]
    fn explicit_kind_must_match_path() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("a.png");
        write_rgb(&img, 2, 2, [1, 2, 3]);
        let mut c = SourceConfig::new(&img);
        c.kind = Some(SourceKind::Folder);
        assert!(open(&c, &labels()).is_err());
        let mut c = SourceConfig::new(dir.path());
        c.kind = Some(SourceKind::Manifest);
        assert!(open(&c, &labels()).is_err());
    }

    #[test]
    fn classes_on_non_folder_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("a.png");
        write_rgb(&img, 2, 2, [1, 2, 3]);
        let mut c = SourceConfig::new(&img);
        c.classes = Some(ClassOrder::Sorted);
        let err = open(&c, &labels()).err().unwrap();
        assert!(err.message.contains("folder sources only"), "{err}");
    }

    #[test]
    fn open_auto_detects_each_kind() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("cat/a.png"), 2, 2, [1, 2, 3]);
        std::fs::write(dir.path().join("m.csv"), "path,label\ncat/a.png,dog\n").unwrap();

        let s = open(&SourceConfig::new(dir.path()), &labels()).unwrap();
        assert!(s.describe().starts_with("folder "), "{}", s.describe());
        let s = open(&SourceConfig::new(dir.path().join("m.csv")), &labels()).unwrap();
        assert!(s.describe().starts_with("manifest "), "{}", s.describe());
        let s = open(&SourceConfig::new(dir.path().join("cat/a.png")), &labels()).unwrap();
        assert!(s.describe().starts_with("image "), "{}", s.describe());
    }

    #[test]
    fn seq_has_no_gaps_over_bad_items() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("a.png"), 2, 2, [1, 2, 3]);
        std::fs::write(dir.path().join("b.png"), b"garbage").unwrap();
        write_rgb(&dir.path().join("c.png"), 2, 2, [1, 2, 3]);
        let mut s = open(&SourceConfig::new(dir.path()), &labels()).unwrap();
        assert_eq!(s.next_frame().unwrap().unwrap().seq, 0);
        assert!(s.next_frame().unwrap().is_err());
        let c = s.next_frame().unwrap().unwrap();
        assert_eq!((c.id.as_str(), c.seq), ("c.png", 1));
        assert!(s.next_frame().is_none());
        assert!(s.next_frame().is_none());
    }

    #[test]
    fn a_device_or_fifo_is_not_a_source() {
        let zero = Path::new("/dev/zero");
        if !zero.exists() {
            return;
        }
        for kind in [None, Some(SourceKind::Image), Some(SourceKind::Manifest)] {
            let mut c = SourceConfig::new(zero);
            c.kind = kind;
            let e = open(&c, &labels()).err().unwrap();
            assert_eq!(e.item, "/dev/zero");
            assert!(
                e.message.starts_with(
                    "is a character device, not an image file, a manifest or a folder"
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn error_lines_stay_one_line() {
        let e = SourceError::new("a\nb.png", "cannot decode (Not enough bytes\n); fix");
        assert_eq!(
            e.to_string(),
            "a\\nb.png: cannot decode (Not enough bytes ); fix"
        );
    }

    #[test]
    fn error_display_is_item_then_message() {
        let e = SourceError::new(
            "a/b.png",
            "cannot decode image (x); remove or replace the file",
        );
        assert_eq!(
            e.to_string(),
            "a/b.png: cannot decode image (x); remove or replace the file"
        );
    }
}
