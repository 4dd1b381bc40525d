//! `[source]`: the table as written ([`RawSourceConfig`]) and settled ([`SourceConfig`]): the kind
//! decided once, when the run config loads, each kind holding only the options it reads ([`Input`]),
//! and an option of another kind refused with a line naming it and the fix.

use std::path::{Path, PathBuf};

use super::{
    SourceError, SourceErrorKind, camera, genicam, groups, gstreamer, imagenet_c, in9, plate,
    segment, synthetic, video,
};

/// Where frames come from, as written: the `[source]` table of a run config (also built from
/// `--source PATH`), every kind's options side by side. [`RawSourceConfig::settle`] decides the kind
/// once and keeps only what that kind reads ([`SourceConfig`]).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSourceConfig {
    /// A folder, a manifest `.csv`, or a single image file.
    pub(crate) path: PathBuf,
    /// What `path` is; detected when absent: a directory is a folder, a `*.csv` file a manifest,
    /// anything else a single image (see [`SourceKind::detect`]).
    #[serde(default)]
    pub(crate) kind: Option<SourceKind>,
    /// How class sub-folder names map to label indices; folder sources only. Default
    /// [`ClassOrder::Labels`].
    #[serde(default)]
    pub(crate) classes: Option<ClassOrder>,
    /// `imagenet-c` sources only: the clean ImageNet validation images as an ImageFolder of wnid
    /// folders, evaluated under `clean` for the clean error of relative mCE.
    #[serde(default)]
    pub(crate) clean: Option<PathBuf>,
    /// `in9` sources only: the IN-9 variations to read (`original`, `mixed_same`, …; see
    /// [`in9::VARIATIONS`]); absent = every variation present under the root.
    #[serde(default)]
    pub(crate) variations: Option<Vec<String>>,
    /// `synthetic` sources only: the scene, size, pace and length (`[source.synthetic]`; defaults
    /// when absent, see [`synthetic::SyntheticConfig`]).
    #[serde(default)]
    pub(crate) synthetic: Option<synthetic::SyntheticConfig>,
    /// `video` sources only: loop, start/stop, real-time pacing, frame step (`[source.video]`; see
    /// [`video::VideoConfig`]).
    #[serde(default)]
    pub video: Option<video::VideoConfig>,
    /// `camera` sources only: size, rate, pixel format preference, buffers, reconnect back-off
    /// (`[source.camera]`; see [`camera::CameraConfig`]).
    #[serde(default)]
    pub(crate) camera: Option<camera::CameraConfig>,
    /// `gstreamer` sources only: the pipeline and how a live one is rebuilt
    /// (`[source.gstreamer]`; see [`gstreamer::GstConfig`]).
    #[serde(default)]
    pub(crate) gstreamer: Option<gstreamer::GstConfig>,
    /// `genicam` sources only: the camera, its features, the stream's buffers, reconnect
    /// (`[source.genicam]`; see [`genicam::GenicamConfig`]).
    #[serde(default)]
    pub genicam: Option<genicam::GenicamConfig>,
    /// Masks from a learned background plate (`[source.plate]`, for a fixed camera; see
    /// [`plate`]): replaces the source's own masks.
    #[serde(default)]
    pub(crate) plate: Option<plate::PlateConfig>,
    /// Masks from a segmentation ONNX model (`[source.segment]`, run every k frames; see
    /// [`segment`]): replaces the source's own masks. Not together with `plate`.
    #[serde(default)]
    pub(crate) segment: Option<segment::SegmentConfig>,
    /// One truth for every frame (a class name, alias or index; see [`labels`](super::labels)): a line camera
    /// that sees one part type. Replaces the frames' own truth.
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// A sidecar labels file keyed by frame or time ([`labels`](super::labels)). Replaces the frames' own truth.
    #[serde(default)]
    pub(crate) labels: Option<PathBuf>,
    /// The frames' groups (`[source.groups]`, [`groups`], docs/groups.md#config); folder and
    /// manifest sources only.
    #[serde(default)]
    pub(crate) groups: Option<groups::GroupsConfig>,
}

impl RawSourceConfig {
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
            gstreamer: None,
            genicam: None,
            plate: None,
            segment: None,
            label: None,
            labels: None,
            groups: None,
        }
    }

    /// What this source is, settled: the spelling first (a synthetic camera, a camera device, a
    /// video file or stream; `kind` decides for each when given), then the configured `kind`, else
    /// the path: a folder laid out as the IN-9 release is [`SourceKind::In9`]
    /// ([`in9::looks_like_release`]), any other path is taken by [`SourceKind::detect`]. A path
    /// that cannot be read is taken for a file here; opening it says what is wrong.
    fn settled_kind(&self) -> SourceKind {
        let spec = self.path.to_str().unwrap_or_default();
        let synthetic = match self.kind {
            Some(kind) => kind == SourceKind::Synthetic,
            // A `[source.synthetic]` table needs `kind = "synthetic"` (refused when settled
            // otherwise).
            None => {
                self.synthetic.is_none() && synthetic::SyntheticConfig::parse_spec(spec).is_some()
            }
        };
        if synthetic {
            SourceKind::Synthetic
        } else if gstreamer::is_gst_source(self) {
            SourceKind::Gstreamer
        } else if camera::device_path(self).is_some() {
            SourceKind::Camera
        } else if genicam::is_genicam(self) {
            SourceKind::Genicam
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

    /// This source settled as its kind ([`RawSourceConfig::settled_kind`]): the options every
    /// kind reads checked, the options of other kinds refused with a line naming the option and
    /// the fix. What needs the path itself (a folder where a folder is needed, a readable file)
    /// is checked when the source opens ([`open`](super::open)).
    pub fn settle(self) -> Result<SourceConfig, SourceError> {
        let kind = self.settled_kind();
        if let Some(g) = &self.groups {
            g.check(kind, &self.path)?;
        }
        if kind == SourceKind::ImagenetC {
            // Stored variants are scored as they are: no wrapper applies.
            let input = imagenet_c::settle(&self)?;
            let (masks, truth) = (None, None);
            return Ok(SourceConfig {
                path: self.path,
                input,
                masks,
                truth,
                groups: None,
            });
        }
        let truth = self.given_truth()?;
        let masks = self.mask_maker()?;
        let input = self.input(kind)?;
        Ok(SourceConfig {
            path: self.path,
            input,
            masks,
            truth,
            groups: self.groups,
        })
    }

    /// The `label` / `labels` settings as one [`GivenTruth`], at most one of them (and not with
    /// `[source.synthetic] label`).
    fn given_truth(&self) -> Result<Option<GivenTruth>, SourceError> {
        let synthetic_label = self.synthetic.as_ref().and_then(|s| s.label.as_ref());
        if synthetic_label.is_some() && (self.label.is_some() || self.labels.is_some()) {
            return Err(SourceError::at(
                SourceErrorKind::Settings,
                &self.path,
                "`[source.synthetic] label` and `[source] label`/`labels` both give the truth; \
                 keep one",
            ));
        }
        match (&self.label, &self.labels) {
            (Some(_), Some(_)) => Err(SourceError::at(
                SourceErrorKind::Settings,
                &self.path,
                "`label` (one class for every frame) and `labels` (a sidecar file) both give the \
                 truth; keep one",
            )),
            (Some(l), None) => Ok(Some(GivenTruth::Class(l.clone()))),
            (None, Some(file)) => Ok(Some(GivenTruth::File(file.clone()))),
            (None, None) => Ok(None),
        }
    }

    /// `[source.plate]` or `[source.segment]`, checked; not both.
    fn mask_maker(&self) -> Result<Option<MaskMaker>, SourceError> {
        let at = |e: &dyn std::fmt::Display| {
            SourceError::at(SourceErrorKind::Settings, &self.path, e.to_string())
        };
        match (&self.plate, &self.segment) {
            (Some(_), Some(_)) => Err(SourceError::new(
                SourceErrorKind::Settings,
                "[source]",
                "`[source.plate]` and `[source.segment]` both make the frames' masks; keep one",
            )),
            (Some(p), None) => {
                p.check().map_err(|e| at(&e).caused_by(e))?;
                Ok(Some(MaskMaker::Plate(p.clone())))
            }
            (None, Some(s)) => {
                s.check().map_err(|e| at(&e).caused_by(e))?;
                Ok(Some(MaskMaker::Segment(s.clone())))
            }
            (None, None) => Ok(None),
        }
    }

    /// The options of a source of `kind`, after refusing those of other kinds: the stream tables
    /// (`[source.synthetic]`, `[source.camera]`, `[source.genicam]`, `[source.video]`,
    /// `[source.gstreamer]`: [`STREAM_TABLES`]) and
    /// `variations`, `classes`, `clean` on any kind but theirs.
    fn input(&self, kind: SourceKind) -> Result<Input, SourceError> {
        for (table_kind, message) in STREAM_TABLES {
            let present = match table_kind {
                SourceKind::Synthetic => self.synthetic.is_some(),
                SourceKind::Camera => self.camera.is_some(),
                SourceKind::Genicam => self.genicam.is_some(),
                SourceKind::Gstreamer => self.gstreamer.is_some(),
                _ => self.video.is_some(),
            };
            if present && kind != table_kind {
                return Err(SourceError::at(
                    SourceErrorKind::Settings,
                    &self.path,
                    message,
                ));
            }
        }
        let only = |set: bool, option: &str, owner: SourceKind| match set && kind != owner {
            true => Err(SourceError::at(
                SourceErrorKind::Settings,
                &self.path,
                format!(
                    "`{option}` applies to {} sources only but this is a {} source; remove \
                     `{option}`",
                    owner.name(),
                    kind.name()
                ),
            )),
            false => Ok(()),
        };
        only(self.variations.is_some(), "variations", SourceKind::In9)?;
        only(self.classes.is_some(), "classes", SourceKind::Folder)?;
        only(self.clean.is_some(), "clean", SourceKind::ImagenetC)?;
        Ok(match kind {
            SourceKind::Folder => Input::Folder {
                classes: self.classes.clone().unwrap_or_default(),
            },
            SourceKind::Manifest => Input::Manifest,
            SourceKind::Image => Input::Image,
            SourceKind::ImagenetC => Input::ImagenetC {
                clean: self.clean.clone(),
            },
            SourceKind::In9 => Input::In9 {
                variations: self.variations.clone(),
            },
            SourceKind::Synthetic => Input::Synthetic(self.synthetic_config()?),
            SourceKind::Video => Input::Video(self.video.clone().unwrap_or_default()),
            SourceKind::Camera => Input::Camera {
                device: camera::device_path(self).unwrap_or_else(|| self.path.clone()),
                settings: self.camera.clone(),
            },
            SourceKind::Gstreamer => {
                let (pipeline, settings) = gstreamer::settle(self)?;
                Input::Gstreamer { pipeline, settings }
            }
            SourceKind::Genicam => Input::Genicam {
                settings: self.genicam.clone(),
            },
        })
    }

    /// The synthetic camera's settings of a synthetic source: `[source.synthetic]` (checked), else
    /// a `synthetic:…` path, else defaults.
    fn synthetic_config(&self) -> Result<synthetic::SyntheticConfig, SourceError> {
        let spec = self.path.to_str().unwrap_or_default();
        let err = |e: synthetic::SyntheticError| {
            SourceError::new(SourceErrorKind::Settings, spec, e.to_string()).caused_by(e)
        };
        match &self.synthetic {
            Some(c) => {
                c.check().map_err(|e| {
                    SourceError::new(
                        SourceErrorKind::Settings,
                        spec,
                        format!("[source.synthetic]: {e}"),
                    )
                    .caused_by(e)
                })?;
                Ok(c.clone())
            }
            None => Ok(synthetic::SyntheticConfig::parse_spec(spec)
                .transpose()
                .map_err(err)?
                .unwrap_or_default()),
        }
    }
}

/// A source, settled ([`RawSourceConfig::settle`]): its kind with exactly the options that kind
/// reads, and the mask and truth wrappers any kind but `imagenet-c` can take.
#[derive(Clone, PartialEq)]
pub struct SourceConfig {
    /// The path as given: a folder, a file, a URL, a device, or a `synthetic:…` spec. Error lines
    /// name it.
    pub(crate) path: PathBuf,
    /// The kind and its own options.
    pub(crate) input: Input,
    /// Masks made instead of the source's own (`[source.plate]` or `[source.segment]`).
    pub(crate) masks: Option<MaskMaker>,
    /// A truth given instead of the frames' own (`label` or `labels`).
    pub(crate) truth: Option<GivenTruth>,
    /// The frames' groups (`[source.groups]`), checked for the kind; folders and manifests only.
    pub(crate) groups: Option<groups::GroupsConfig>,
}

/// Written as derived, but without `groups` when there are none: the run's fingerprint holds this
/// text (`run.fingerprint`'s `source`), so a source without groups keeps the fingerprint it had
/// before groups existed and its runs resume and merge as before.
impl std::fmt::Debug for SourceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("SourceConfig");
        d.field("path", &self.path)
            .field("input", &self.input)
            .field("masks", &self.masks)
            .field("truth", &self.truth);
        if let Some(g) = &self.groups {
            d.field("groups", g);
        }
        d.finish()
    }
}

impl SourceConfig {
    /// The kind settled.
    pub(crate) fn kind(&self) -> SourceKind {
        self.input.kind()
    }
}

/// A settled source kind with the options that kind reads (see [`SourceKind`] for each).
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// An ImageFolder tree and how its class sub-folders map to labels.
    Folder {
        /// `classes` (default [`ClassOrder::Labels`]).
        classes: ClassOrder,
    },
    /// A CSV manifest.
    Manifest,
    /// One image file.
    Image,
    /// The released ImageNet-C layout.
    ImagenetC {
        /// `clean`: the clean ImageNet validation images, scored under `clean`.
        clean: Option<PathBuf>,
    },
    /// The IN-9 release layout.
    In9 {
        /// `variations`: the variations to read; `None` = every one present.
        variations: Option<Vec<String>>,
    },
    /// The synthetic camera, its settings checked (from `[source.synthetic]`, the spec, or the
    /// defaults).
    Synthetic(synthetic::SyntheticConfig),
    /// A video file or network stream (`[source.video]`, defaults when absent).
    Video(video::VideoConfig),
    /// A GenICam camera (the path is `genicam://[device]`; `[source.genicam] device` wins).
    Genicam {
        /// `[source.genicam]`; `None` = defaults (the camera named by the path, else the first).
        settings: Option<genicam::GenicamConfig>,
    },
    /// A V4L2 camera.
    Camera {
        /// The device (`camera:N` spelled out as `/dev/videoN`).
        device: PathBuf,
        /// `[source.camera]`; `None` = the camera's defaults.
        settings: Option<camera::CameraConfig>,
    },
    /// A GStreamer pipeline (docs/sources.md#gstreamer-pipelines).
    Gstreamer {
        /// The element chain as written (without robustream's appended converter and appsink).
        pipeline: String,
        /// `[source.gstreamer]`, checked (defaults when absent).
        settings: gstreamer::GstConfig,
    },
}

impl Input {
    /// The kind this is.
    pub(crate) fn kind(&self) -> SourceKind {
        match self {
            Input::Folder { .. } => SourceKind::Folder,
            Input::Manifest => SourceKind::Manifest,
            Input::Image => SourceKind::Image,
            Input::ImagenetC { .. } => SourceKind::ImagenetC,
            Input::In9 { .. } => SourceKind::In9,
            Input::Synthetic(_) => SourceKind::Synthetic,
            Input::Video(_) => SourceKind::Video,
            Input::Camera { .. } => SourceKind::Camera,
            Input::Gstreamer { .. } => SourceKind::Gstreamer,
            Input::Genicam { .. } => SourceKind::Genicam,
        }
    }
}

/// Masks made for a stream instead of the source's own, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum MaskMaker {
    /// From a learned background plate ([`plate`]).
    Plate(plate::PlateConfig),
    /// From a segmentation model ([`segment`]).
    Segment(segment::SegmentConfig),
}

/// A truth given for the frames instead of their own, as written; resolved in the run's label
/// space when the source opens ([`labels`](super::labels)).
#[derive(Debug, Clone, PartialEq)]
pub enum GivenTruth {
    /// `label`: one class (a name, alias or index) for every frame.
    Class(String),
    /// `labels`: a sidecar file keyed by frame or time.
    File(PathBuf),
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
    /// looked at, for a URL (`scheme://…`) or a video file extension (`video::VIDEO_EXTENSIONS`);
    /// `kind = "video"`.
    Video,
    /// A V4L2 camera ([`camera`]): `path` is the device. Detected, before the path is looked at,
    /// for `/dev/video*`, `/dev/v4l/…` and `camera[:N]`; `kind = "camera"` takes any device path.
    Camera,
    /// A GStreamer pipeline ([`gstreamer`]): detected for a path spelled `gst:<pipeline>` or a
    /// `[source.gstreamer]` table with a `pipeline`; `kind = "gstreamer"` takes the path as the
    /// pipeline when the table has none.
    Gstreamer,
    /// A GenICam camera (GigE Vision / USB3 Vision, through Aravis; [`genicam`]): `path` is
    /// `genicam://<device>` (detected before the path is looked at), or any text with
    /// `kind = "genicam"` and `[source.genicam] device`.
    Genicam,
}

impl SourceKind {
    /// The kind a path is taken for when none is given: a directory → [`SourceKind::Folder`], a file
    /// whose extension is `csv` (any case) → [`SourceKind::Manifest`], else [`SourceKind::Image`].
    /// `is_dir` says whether `path` is a directory (passed in so this stays a pure function).
    fn detect(path: &Path, is_dir: bool) -> SourceKind {
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            SourceKind::Folder => "folder",
            SourceKind::Manifest => "manifest",
            SourceKind::Image => "image",
            SourceKind::ImagenetC => "imagenet-c",
            SourceKind::In9 => "in9",
            SourceKind::Synthetic => "synthetic",
            SourceKind::Video => "video",
            SourceKind::Camera => "camera",
            SourceKind::Gstreamer => "gstreamer",
            SourceKind::Genicam => "genicam",
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

/// After `--source` replaced the configured path: drops the kind-specific tables
/// (`[source.synthetic]`, `[source.camera]`, `[source.video]`) that do not apply to the new source's
/// kind, so that a camera config run on a clip (`--source clip.mp4`) keeps its `[source.plate]` /
/// `[source.segment]` mask source and is not refused for its `[source.camera]` table.
pub(crate) fn drop_foreign_tables(config: &mut RawSourceConfig) {
    // A `synthetic:…` spec describes its camera itself; the table applies with `--source-kind
    // synthetic` only (as in a config, see `RawSourceConfig::settled_kind`).
    if config.kind != Some(SourceKind::Synthetic) {
        config.synthetic = None;
    }
    if camera::device_path(config).is_none() {
        config.camera = None;
    }
    if !video::is_video_source(config) {
        config.video = None;
    }
    // `--source gst:…` gives the pipeline: the table's own `pipeline` gives way, its other keys
    // (reconnect, timeout) stay.
    let gst_path = config
        .path
        .to_str()
        .is_some_and(|p| p.starts_with(gstreamer::PREFIX));
    if gst_path && let Some(g) = config.gstreamer.as_mut() {
        g.pipeline = None;
    }
    if !gstreamer::is_gst_source(config) {
        config.gstreamer = None;
    }
    if !genicam::is_genicam(config) {
        config.genicam = None;
    }
}

/// The stream kinds' own tables, each with the error for a source of another kind that carries it
/// (a `[source.camera]` table on a synthetic source would otherwise be silently ignored).
const STREAM_TABLES: [(SourceKind, &str); 5] = [
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
        SourceKind::Genicam,
        "`[source.genicam]` applies to GenICam sources only; remove it or set \
         `kind = \"genicam\"`",
    ),
    (
        SourceKind::Video,
        "`[source.video]` applies to video sources only; remove it or set `kind = \"video\"`",
    ),
    (
        SourceKind::Gstreamer,
        "`[source.gstreamer]` applies to gstreamer sources only; remove it or set \
         `kind = \"gstreamer\"`",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

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
        let c: RawSourceConfig =
            toml::from_str("path = \"data/val\"\nkind = \"folder\"\nclasses = \"sorted\"").unwrap();
        assert_eq!(c.path, PathBuf::from("data/val"));
        assert_eq!(c.kind, Some(SourceKind::Folder));
        assert_eq!(c.classes, Some(ClassOrder::Sorted));

        let c: RawSourceConfig = toml::from_str("path = \"m.csv\"").unwrap();
        assert_eq!(c, RawSourceConfig::new("m.csv"));

        let c: RawSourceConfig = toml::from_str("path = \"d\"\nclasses = \"my/list.txt\"").unwrap();
        assert_eq!(c.classes, Some(ClassOrder::List("my/list.txt".into())));

        assert!(toml::from_str::<RawSourceConfig>("path = \"d\"\nkindd = \"folder\"").is_err());
        assert!(toml::from_str::<RawSourceConfig>("path = \"d\"\nkind = \"movie\"").is_err());
        assert!(toml::from_str::<RawSourceConfig>("path = \"d\"\nclasses = 3").is_err());
    }

    #[test]
    fn settling_keeps_the_kinds_options_and_refuses_the_others() {
        let refused = |c: RawSourceConfig| c.settle().unwrap_err().to_string();
        let mut c = RawSourceConfig::new("camera:2");
        c.camera = Some(toml::from_str("fps = 15.0").unwrap());
        let settled = c.clone().settle().unwrap();
        assert_eq!(
            settled.input,
            Input::Camera {
                device: "/dev/video2".into(),
                settings: c.camera.clone()
            }
        );
        assert_eq!((settled.masks, settled.truth), (None, None));
        // A stream table of another kind was silently ignored before it was settled; now refused.
        c.video = Some(video::VideoConfig::default());
        let e = refused(c);
        assert!(
            e.starts_with("camera:2: `[source.video]` applies to video sources only"),
            "{e}"
        );
        let mut c = RawSourceConfig::new("synthetic:64x48@10/5");
        c.camera = c.camera.or(Some(toml::from_str("fps = 15.0").unwrap()));
        let e = refused(c);
        assert!(
            e.contains("`[source.camera]` applies to camera sources only"),
            "{e}"
        );
        let mut c = RawSourceConfig::new("clip.mp4");
        c.variations = Some(vec!["original".into()]);
        let e = refused(c);
        assert!(
            e.ends_with("`variations` applies to in9 sources only but this is a video source; remove `variations`"),
            "{e}"
        );
        // The wrappers: one mask maker, one given truth.
        let mut c = RawSourceConfig::new("clip.mp4");
        c.plate = Some(plate::PlateConfig::default());
        c.label = Some("cat".into());
        let settled = c.clone().settle().unwrap();
        assert!(matches!(settled.masks, Some(MaskMaker::Plate(_))));
        assert_eq!(settled.truth, Some(GivenTruth::Class("cat".into())));
        c.labels = Some("labels.csv".into());
        assert!(refused(c.clone()).contains("both give the truth"));
        c.labels = None;
        c.segment = Some(toml::from_str("model = \"seg.onnx\"").unwrap());
        assert!(refused(c).starts_with("[source]: `[source.plate]` and `[source.segment]`"));
        // A synthetic spec is parsed when settled.
        let settled = RawSourceConfig::new("synthetic:64x48@10/5")
            .settle()
            .unwrap();
        match settled.input {
            Input::Synthetic(s) => assert_eq!((s.width, s.height, s.frames), (64, 48, Some(5))),
            other => panic!("{other:?}"),
        }
    }
}
