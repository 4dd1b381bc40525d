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
//!   `camera:0`, `[source.camera]` for format negotiation and reconnect back-off;
//! - **gstreamer** ([`gstreamer`]): any GStreamer element chain (feature `gstreamer`),
//!   `--source "gst:videotestsrc ! …"` or `[source.gstreamer] pipeline = "…"`.
//!
//! Masks and boxes: manifests name them per row (`mask`, `boxes`, `annotation` columns), folders
//! pick up `<stem>.mask.png|npy` and `<stem>.xml` next to each image; [`regions`] parses boxes and
//! derives them from masks. On streams the masks can be made instead: from a learned background
//! plate ([`plate`], `[source.plate]`) or by a segmentation model ([`segment`], `[source.segment]`).
//!
//! Groups (a style, a camera, a shift; [`groups`], `[source.groups]`, docs/groups.md): folders and
//! manifests give each frame its groups from manifest columns, folder levels, a sidecar file or the
//! file names.
//!
//! The `[source]` table as written ([`RawSourceConfig`]) is settled once, when the run config loads,
//! into a [`SourceConfig`]: the kind decided and holding only that kind's options ([`Input`]), so
//! an option of another kind is refused there with a line naming it. Problems with one item (a
//! corrupt image, an unknown label, a wrong-size mask) come out of [`Source::next_frame`] as
//! `Some(Err(_))` and iteration goes on; problems that make the whole source unusable come out of
//! [`open`].

pub mod camera;
pub(crate) mod config;
pub(crate) mod decode;
mod folder;
pub mod genicam;
pub(crate) mod groups;
pub mod gstreamer;
pub(crate) mod imagenet_c;
pub mod in9;
mod labels;
pub(crate) mod manifest;
pub mod mask;
pub mod memory;
mod pixfmt;
mod plate;
mod reconnect;
pub mod regions;
mod segment;
mod single;
mod synthetic;
pub mod video;
mod wnids;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::frame::{Frame, LabelSpace, Regions, Truth};
pub use config::{
    ClassOrder, GivenTruth, Input, MaskMaker, RawSourceConfig, SourceConfig, SourceKind,
};

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
    /// [`Source::lost`] split by cause: `(cause, cumulative count)` pairs whose counts add up to
    /// `lost()`, causes as short snake_case words ([`LOST_SEQUENCE_GAP`] for a driver's sequence
    /// gaps; a GenICam stream's own statistics give `incomplete`, `timeout`, `missing_packets`,
    /// `underrun`…). Written to the summary, the live view and Prometheus by cause. Default: all of
    /// `lost()` as [`LOST_SEQUENCE_GAP`].
    fn lost_causes(&self) -> Vec<(&'static str, u64)> {
        match self.lost() {
            0 => Vec::new(),
            n => vec![(LOST_SEQUENCE_GAP, n)],
        }
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
    /// Passes over, without reading them, the next items whose ids `wanted` refuses, at most `max`
    /// of them, and says how many it passed over; it stops before the first item it must read (one
    /// `wanted` accepts, or one whose id it cannot tell without reading). A sharded or resumed run
    /// (docs/deploy.md#how-frames-are-split) so leaves other shards' frames and finished frames
    /// undecoded. Only sources that know their items' ids before reading them (files, manifests,
    /// the benchmark layouts) pass over anything; the default passes over nothing, and the caller
    /// then reads the item and looks at its id.
    fn pass_over(&mut self, _wanted: &ItemFilter, _max: u64) -> u64 {
        0
    }
    /// The live device or stream the frames come from, as the source names it (a camera's device
    /// path, a network stream's URL): the run's `camera` label on its Prometheus endpoint and in
    /// summary.json's `run.labels` (docs/prometheus.md#fleets). Default `None` (files, folders).
    fn camera(&self) -> Option<String> {
        None
    }
}

/// A source's lost frames by cause, cumulative: `(cause, count)` pairs ([`Source::lost_causes`]).
pub type LostCauses = Vec<(&'static str, u64)>;
/// One camera buffer converted to RGB the way the V4L2 and GenICam cameras convert it
/// ([`pixfmt`]): `format` a V4L2 fourcc (`YUYV`, `GREY`, `Y12 `, `RGGB`, `RGB3`…) or a GenICam
/// PFNC name (`Mono12`, `BayerRG12p`…), `buf` packed rows. `None` for a format robustream does not
/// convert or a buffer that does not fit. For `benches/preprocess.rs`.
#[doc(hidden)]
pub fn convert_camera_buffer(
    format: &str,
    buf: &[u8],
    width: u32,
    height: u32,
) -> Option<image::RgbImage> {
    let fourcc = <[u8; 4]>::try_from(format.as_bytes()).ok();
    let format = fourcc
        .and_then(pixfmt::PixelFormat::from_fourcc)
        .or_else(|| genicam::pfnc_format(format))?;
    pixfmt::to_rgb(format, buf, width, height, 0).ok()
}

/// The cause [`Source::lost_causes`] gives by default: gaps in the driver's buffer sequence numbers
/// (frames the camera or its driver dropped before robustream dequeued them).
pub(crate) const LOST_SEQUENCE_GAP: &str = "sequence_gap";

/// Which frame ids a run reads ([`Source::pass_over`]).
pub type ItemFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// [`Source::pass_over`] over a peekable list of items: `id` gives an entry's frame id, `None` for
/// an entry that must be read (an item already known to be bad).
pub(crate) fn pass_over_items<T, I: Iterator<Item = T>>(
    items: &mut std::iter::Peekable<I>,
    id: fn(&T) -> Option<&str>,
    wanted: &ItemFilter,
    max: u64,
) -> u64 {
    let mut passed = 0;
    while passed < max
        && items
            .peek()
            .and_then(id)
            .is_some_and(|item_id| !wanted(item_id))
    {
        items.next();
        passed += 1;
    }
    passed
}

/// The [`Source`] methods a wrapping source passes on unchanged to its `inner` source (`len_hint`,
/// `is_live`, `set_stop`, `fps`, `lost`, `lost_causes`, `end_error`, `camera`, `report`), written inside its `impl Source` block so a
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

        fn lost_causes(&self) -> Vec<(&'static str, u64)> {
            self.inner.lost_causes()
        }

        fn end_error(&self) -> Option<crate::source::SourceError> {
            self.inner.end_error()
        }

        fn camera(&self) -> Option<String> {
            self.inner.camera()
        }
    };
}
pub(crate) use forward_to_inner;

/// What kind of problem a [`SourceError`] is, for callers to match on (the message says it in
/// words). New kinds may come, so a match needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum SourceErrorKind {
    /// The source's path, file, device or URL is missing, unreadable or unreachable (a folder
    /// that cannot be listed, a manifest that cannot be read, a refused connection).
    Open,
    /// The `[source]` settings do not fit: an option of another kind, two that exclude each
    /// other, a bad value, a path that is not what the kind needs, a plan the layout cannot serve.
    Settings,
    /// A folder, manifest or benchmark release is not laid out as its kind needs (a malformed
    /// manifest row, a stray folder, no images).
    Layout,
    /// One item could not be read or decoded (a damaged image, a corrupt video frame, a camera
    /// buffer that does not convert): a skipped item.
    Unreadable,
    /// A label: not a class of the label space, or a labels file that cannot be used.
    Label,
    /// A mask or boxes (annotation) that cannot be read or does not fit its image.
    Annotation,
    /// The segmentation model: cannot be loaded, does not fit, or failed on a frame.
    Model,
    /// A live source went away and does not come back (a camera with `reconnect = false`).
    // Made only by the reconnecting sources (`video/`, `camera/`).
    #[cfg_attr(not(any(feature = "camera", feature = "video")), allow(dead_code))]
    Lost,
    /// The source ended without giving a frame (an empty video, a window with no frame).
    Empty,
    /// This robustream was built without the feature the source needs (`video`, `camera`).
    // Made only where a feature is off (`camera/mod.rs`, `video/mod.rs`); the default build has both.
    #[cfg_attr(all(feature = "camera", feature = "video"), allow(dead_code))]
    Feature,
    /// A frame's groups (`[source.groups]`, docs/groups.md#config): a frame without a value, a
    /// groups file row naming no frame, a groups file that cannot be used.
    Group,
}

/// One problem with one input item or with the source as a whole. Display = one line:
/// `<item>: <what is wrong>; <what to do>`.
#[derive(Debug, thiserror::Error)]
#[error("{item}: {message}")]
pub struct SourceError {
    /// What kind of problem it is.
    pub(crate) kind: SourceErrorKind,
    /// The file, folder, or manifest line the problem is about.
    pub(crate) item: String,
    /// What is wrong and what to do about it.
    pub(crate) message: String,
    /// The typed error `message` tells of, where there is one (its kind, for callers to match on).
    #[source]
    pub(crate) cause: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// The id the item's frame would have had, where the source knew it before reading (a file
    /// that turned out unreadable): a sharded run counts the item in the shard of that id.
    pub(crate) frame: Option<String>,
}

impl SourceError {
    /// An error of `kind` about `item` (a path is shown with [`Path::display`]). A message that spans lines
    /// (a library's error text with a newline in it) is folded to one ([`decode::fold`]); `item` is
    /// user text (a path, a manifest line, a URL): control characters escaped, so the line stays one
    /// line, and bounded like a path ([`crate::quote::clip_path`]).
    pub(crate) fn new(
        kind: SourceErrorKind,
        item: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
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
        Self {
            kind,
            item,
            message,
            cause: None,
            frame: None,
        }
    }

    /// This error, about the item whose frame id is `id`.
    fn for_frame(mut self, id: &str) -> Self {
        self.frame = Some(id.to_string());
        self
    }

    /// This error with `cause`, the typed error its message tells of, as its `source()`.
    pub(crate) fn caused_by(
        mut self,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// An error of `kind` about the file or folder at `path`.
    pub(crate) fn at(kind: SourceErrorKind, path: &Path, message: impl Into<String>) -> Self {
        Self::new(kind, path.display().to_string(), message)
    }
}

/// Opens the settled source ([`RawSourceConfig::settle`]). `labels` is the run's dataset label space
/// (class names, see [`LabelSpace::resolve`]) used to resolve labels written as names or indices.
/// Errors that make the whole source unusable (missing path, a path that does not fit the kind,
/// unreadable manifest header, a folder class name not in the label space) are returned here.
pub fn open(config: &SourceConfig, labels: &LabelSpace) -> Result<Box<dyn Source>, SourceError> {
    let stream_labels = stream_labels(config, labels)?;
    let mut source = open_input(config, labels)?;
    match &config.masks {
        Some(MaskMaker::Segment(s)) => {
            source = Box::new(segment::SegmentSource::new(source, s)?);
        }
        Some(MaskMaker::Plate(p)) => {
            source = Box::new(plate::PlateSource::new(source, p.clone()));
        }
        None => {}
    }
    Ok(match stream_labels {
        Some(l) => Box::new(labels::LabelledSource::new(source, l)),
        None => source,
    })
}

/// The given truth ([`GivenTruth`]) resolved in the run's label space ([`labels`]).
fn stream_labels(
    config: &SourceConfig,
    space: &LabelSpace,
) -> Result<Option<labels::StreamLabels>, SourceError> {
    match &config.truth {
        Some(GivenTruth::Class(l)) => {
            let truth = space.resolve(l).ok_or_else(|| {
                SourceError::at(
                    SourceErrorKind::Label,
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
        Some(GivenTruth::File(file)) => Ok(Some(labels::StreamLabels::Sidecar(
            labels::Sidecar::load(file, space)?,
        ))),
        None => Ok(None),
    }
}

/// [`open`] without the mask and label wrappers.
fn open_input(config: &SourceConfig, labels: &LabelSpace) -> Result<Box<dyn Source>, SourceError> {
    match &config.input {
        Input::Synthetic(settings) => Ok(Box::new(synthetic::open(settings, labels)?)),
        Input::Camera { device, settings } => camera::open(device, settings.as_ref(), labels),
        Input::Genicam { settings } => genicam::open(&config.path, settings.as_ref(), labels),
        Input::Video(settings) => video::open(&config.path, settings),
        Input::Gstreamer { pipeline, settings } => gstreamer::open(pipeline, settings),
        input => open_path(&config.path, input, labels, config.groups.as_ref()),
    }
}

/// A source read from the file system (folder, manifest, image, ImageNet-C or IN-9 layout): the
/// path is looked at and must fit the kind.
fn open_path(
    path: &Path,
    input: &Input,
    labels: &LabelSpace,
    grouping: Option<&groups::GroupsConfig>,
) -> Result<Box<dyn Source>, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        SourceError::at(
            SourceErrorKind::Open,
            path,
            format!("cannot open source ({e}); check `[source] path` or --source"),
        )
    })?;
    if let Some(what) = decode::non_file_kind(&meta).filter(|_| !meta.is_dir()) {
        // Read as an image, `/dev/zero` would never end; a FIFO could block the run.
        return Err(SourceError::at(
            SourceErrorKind::Settings,
            path,
            format!(
                "is {what}, not an image file, a manifest or a folder; give one of those (a \
                 camera: `--source /dev/videoN` or `kind = \"camera\"`)"
            ),
        ));
    }
    check_path(path, input.kind(), meta.is_dir())?;
    let source: ItemSource = match input {
        Input::ImagenetC { clean } => {
            return Ok(Box::new(imagenet_c::open(path, clean.as_deref(), labels)?));
        }
        Input::In9 { variations } => {
            return Ok(Box::new(in9::open(path, variations.as_deref(), labels)?));
        }
        Input::Folder { classes } => folder::open(path, classes, labels)?,
        Input::Manifest => {
            let columns = grouping.map_or(&[][..], groups::GroupsConfig::columns);
            manifest::open_with_groups(path, labels, columns)?
        }
        // `Image`; the stream kinds never get here (`open_input`).
        _ => single::open(path),
    };
    Ok(Box::new(groups::apply(source, grouping, path)?))
}

/// A file-system source's path against its `kind`: a folder where a folder is needed, a file where
/// a file is.
fn check_path(path: &Path, kind: SourceKind, is_dir: bool) -> Result<(), SourceError> {
    match (kind, is_dir) {
        (SourceKind::In9, false) => Err(SourceError::at(
            SourceErrorKind::Settings,
            path,
            "is not a folder but the source kind is `in9`; give the root of the IN-9 release",
        )),
        (SourceKind::Folder, false) => Err(SourceError::at(
            SourceErrorKind::Settings,
            path,
            "is not a folder but the source kind is `folder`; give a folder or remove `kind`",
        )),
        (SourceKind::Manifest | SourceKind::Image, true) => Err(SourceError::at(
            SourceErrorKind::Settings,
            path,
            format!(
                "is a folder but the source kind is `{}`; give a file or use `kind = \"folder\"`",
                kind.name()
            ),
        )),
        _ => Ok(()),
    }
}

/// One input item, found when the source was opened and read when its turn comes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// The image file to read.
    pub(crate) path: PathBuf,
    /// The frame id (path relative to the source root, '/'-separated).
    pub(crate) id: String,
    /// Ground truth in the dataset label space.
    pub(crate) truth: Option<Truth>,
    /// Foreground mask file, if any.
    pub(crate) mask: Option<PathBuf>,
    /// Where the object boxes come from, if anywhere ([`regions::BoxSpec`]).
    pub(crate) boxes: Option<regions::BoxSpec>,
    /// The frame's groups ([`groups`]).
    pub(crate) groups: crate::frame::Groups,
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
            groups: crate::frame::Groups::new(),
        }
    }
}

/// A source over a list of items known at open time (all three kinds are this, built differently).
/// Items that were already known to be bad at open (e.g. a malformed manifest row) are stored as
/// errors and yielded in their place.
pub(crate) struct ItemSource {
    items: std::iter::Peekable<std::vec::IntoIter<Result<Item, SourceError>>>,
    len: usize,
    next_seq: u64,
    description: String,
}

impl ItemSource {
    /// A source yielding `items` in order; `description` is what [`Source::describe`] returns.
    pub(crate) fn new(items: Vec<Result<Item, SourceError>>, description: String) -> Self {
        Self {
            len: items.len(),
            items: items.into_iter().peekable(),
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

    fn pass_over(&mut self, wanted: &ItemFilter, max: u64) -> u64 {
        fn id(entry: &Result<Item, SourceError>) -> Option<&str> {
            entry.as_ref().ok().map(|i| i.id.as_str())
        }
        pass_over_items(&mut self.items, id, wanted, max)
    }
}

/// Reads and decodes one item (image and mask) into a frame with sequence number `seq`.
/// `captured` is taken before reading; `decode_ms` covers reading and decoding the image and mask.
pub(crate) fn load_item(item: Item, seq: u64) -> Result<Frame, SourceError> {
    let id = item.id.clone();
    read_item(item, seq).map_err(|e| e.for_frame(&id))
}

fn read_item(item: Item, seq: u64) -> Result<Frame, SourceError> {
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
        groups: item.groups,
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
    pub(crate) fn mask_iou(a: &GrayImage, b: &GrayImage) -> f64 {
        let (mut i, mut u) = (0u64, 0u64);
        for (x, y) in a.iter().zip(b.iter()) {
            let (x, y) = (*x != 0, *y != 0);
            i += u64::from(x && y);
            u += u64::from(x || y);
        }
        i as f64 / u.max(1) as f64
    }

    /// Three classes, one with an alias: tench (0), tabby / tabby cat (1), espresso (2).
    pub(crate) fn labels() -> LabelSpace {
        LabelSpace::new(vec![
            "tench".into(),
            "tabby, tabby cat".into(),
            "espresso".into(),
        ])
    }

    /// Writes a `w`×`h` RGB image filled with `color`; the format follows the extension.
    pub(crate) fn write_rgb(path: &Path, w: u32, h: u32, color: [u8; 3]) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        RgbImage::from_pixel(w, h, Rgb(color)).save(path).unwrap();
    }

    /// Writes a `w`×`h` gray PNG filled with `value`.
    pub(crate) fn write_gray(path: &Path, w: u32, h: u32, value: u8) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        GrayImage::from_pixel(w, h, Luma([value]))
            .save(path)
            .unwrap();
    }

    /// Writes an `.npy` file by hand: `descr` like `"|u1"` or `"<f4"`, `shape` like `"(2, 3)"`,
    /// `data` the raw element bytes.
    pub(crate) fn write_npy(path: &Path, descr: &str, fortran: bool, shape: &str, data: &[u8]) {
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

    /// `config` settled and opened.
    fn open_raw(config: &RawSourceConfig) -> Result<Box<dyn Source>, SourceError> {
        open(&config.clone().settle()?, &labels())
    }

    #[test]
    fn missing_path_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_raw(&RawSourceConfig::new(dir.path().join("nope")))
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
        let mut c = RawSourceConfig::new(&img);
        c.kind = Some(SourceKind::Folder);
        assert!(open_raw(&c).is_err());
        let mut c = RawSourceConfig::new(dir.path());
        c.kind = Some(SourceKind::Manifest);
        assert!(open_raw(&c).is_err());
    }

    #[test]
    fn classes_on_non_folder_is_refused_when_settled() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("a.png");
        write_rgb(&img, 2, 2, [1, 2, 3]);
        let mut c = RawSourceConfig::new(&img);
        c.classes = Some(ClassOrder::Sorted);
        let err = c.settle().err().unwrap();
        assert!(err.message.contains("folder sources only"), "{err}");
    }

    #[test]
    fn open_auto_detects_each_kind() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("cat/a.png"), 2, 2, [1, 2, 3]);
        std::fs::write(dir.path().join("m.csv"), "path,label\ncat/a.png,dog\n").unwrap();

        let s = open_raw(&RawSourceConfig::new(dir.path())).unwrap();
        assert!(s.describe().starts_with("folder "), "{}", s.describe());
        let s = open_raw(&RawSourceConfig::new(dir.path().join("m.csv"))).unwrap();
        assert!(s.describe().starts_with("manifest "), "{}", s.describe());
        let s = open_raw(&RawSourceConfig::new(dir.path().join("cat/a.png"))).unwrap();
        assert!(s.describe().starts_with("image "), "{}", s.describe());
    }

    #[test]
    fn seq_has_no_gaps_over_bad_items() {
        let dir = tempfile::tempdir().unwrap();
        write_rgb(&dir.path().join("a.png"), 2, 2, [1, 2, 3]);
        std::fs::write(dir.path().join("b.png"), b"garbage").unwrap();
        write_rgb(&dir.path().join("c.png"), 2, 2, [1, 2, 3]);
        let mut s = open_raw(&RawSourceConfig::new(dir.path())).unwrap();
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
            let mut c = RawSourceConfig::new(zero);
            c.kind = kind;
            let e = open_raw(&c).err().unwrap();
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
    fn errors_carry_a_kind_to_match_on() {
        let dir = tempfile::tempdir().unwrap();
        let missing = open_raw(&RawSourceConfig::new(dir.path().join("nope")))
            .err()
            .unwrap();
        assert_eq!(missing.kind, SourceErrorKind::Open);
        let img = dir.path().join("a.png");
        write_rgb(&img, 2, 2, [1, 2, 3]);
        let mut c = RawSourceConfig::new(&img);
        c.kind = Some(SourceKind::Folder);
        assert_eq!(open_raw(&c).err().unwrap().kind, SourceErrorKind::Settings);
        std::fs::write(dir.path().join("b.png"), b"garbage").unwrap();
        let mut s = open_raw(&RawSourceConfig::new(dir.path())).unwrap();
        let kinds: Vec<_> = std::iter::from_fn(|| s.next_frame())
            .map(|f| f.err().map(|e| e.kind))
            .collect();
        assert_eq!(kinds, [None, Some(SourceErrorKind::Unreadable)]);
    }

    #[test]
    fn error_lines_stay_one_line() {
        let e = SourceError::new(
            SourceErrorKind::Unreadable,
            "a\nb.png",
            "cannot decode (Not enough bytes\n); fix",
        );
        assert_eq!(
            e.to_string(),
            "a\\nb.png: cannot decode (Not enough bytes ); fix"
        );
    }

    #[test]
    fn error_display_is_item_then_message() {
        let e = SourceError::new(
            SourceErrorKind::Unreadable,
            "a/b.png",
            "cannot decode image (x); remove or replace the file",
        );
        assert_eq!(
            e.to_string(),
            "a/b.png: cannot decode image (x); remove or replace the file"
        );
    }
}
